/* exec_threads.c (CLI): the `scm` program: its main() and the threaded
 * sweep executor (sweep_exec.h), scm_sweep_exec itself. */
#include "commands.h"
#include "sweep_exec.h"

static int threads_check(int nthreads, char *msg, size_t len)
{
    (void)nthreads;
    (void)msg;
    (void)len;
    return 0;
}

static int threads_width(int nthreads)
{
    return nthreads;
}

int main(int argc, char **argv)
{
    const cli_executor threads = {scm_sweep_exec, threads_check, threads_width, "thread", 0,
                                 scm_compare_jobs_exec};
    return scm_main(argc, argv, &threads);
}
