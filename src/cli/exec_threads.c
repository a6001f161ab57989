/* exec_threads.c (CLI): the `scm` program: its main() and the threaded
 * sweep executor (sweep_exec.h), scm_sweep_exec itself. */
#include "commands.h"
#include "sweep_exec.h"

scm_status cli_sweep_exec(const scm_config *c, uint64_t base, const long *indices, long n,
                          int nthreads, const scm_sweep_families *fams, const scm_sweep_opts *o,
                          scm_sweep_emit_fn emit, void *user, scm_error *err)
{
    return scm_sweep_exec(c, base, indices, n, nthreads, fams, o, emit, user, err);
}

int cli_sweep_exec_check(int nthreads, char *msg, size_t len)
{
    (void)nthreads;
    (void)msg;
    (void)len;
    return 0;
}

int cli_sweep_exec_width(int nthreads)
{
    return nthreads;
}

const char *cli_sweep_exec_unit(void)
{
    return "thread";
}

int main(int argc, char **argv)
{
    return scm_main(argc, argv);
}
