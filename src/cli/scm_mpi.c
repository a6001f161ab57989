/* scm_mpi.c (CLI): the `scm-mpi` program: `scm sweep`, `scm compare`,
 * `scm merge` and `scm map` with the runs computed by the ranks of an MPI
 * job (include/scm/exec_mpi.h, src/exec/; docs/sweeps.md, "MPI and
 * clusters").  Rank 0 runs the command through scm_main with the MPI
 * executor; the other ranks compute what it hands out.  This file owns
 * what is the program's: MPI's start and end, messages and exit codes. */
#include <gsl/gsl_errno.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "scm/exec_mpi.h"
#include "scm_version.h"
#include "sweep_exec.h"

static int mpi_check(int nthreads, char *msg, size_t len)
{
    if (nthreads == 1)
        return 0;
    snprintf(msg, len, "--threads %d: scm-mpi computes one run per rank; start more ranks "
                       "(mpirun -np N) instead",
             nthreads);
    return -1;
}

static int mpi_width(int nthreads)
{
    (void)nthreads;
    int nranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    return nranks;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np N scm-mpi sweep|compare|merge|map [options]\n"
               "\n"
               "scm's sweep, compare, merge and map with the runs computed by the N ranks of an\n"
               "MPI job: rank 0 reads and writes every file and computes too, the others\n"
               "compute the runs it hands out.  The options and the output are those of\n"
               "scm (`scm sweep --help`); the files are byte-identical to scm's with\n"
               "--threads.  --threads is refused: one run per rank.\n"
               "See docs/sweeps.md, \"MPI and clusters\".\n");
}

/* Rank 0: the command; its exit status. */
static int rank0(int argc, char **argv, int provided)
{
    const char *cmd = argc >= 2 ? argv[1] : "";
    if (provided < MPI_THREAD_FUNNELED) {
        fprintf(stderr, "scm-mpi: the MPI library does not support threads "
                        "(MPI_THREAD_FUNNELED); rank 0 needs one compute thread\n");
        return 1;
    }
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("scm-mpi (scmode) %s\n", SCM_VERSION);
        return 0;
    }
    if (strcmp(cmd, "sweep") == 0 || strcmp(cmd, "compare") == 0 || strcmp(cmd, "merge") == 0 ||
        strcmp(cmd, "map") == 0) {
        const cli_executor mpi = {scm_exec_mpi_sweep, mpi_check, mpi_width, "MPI rank", 1,
                                  scm_exec_mpi_jobs};
        return scm_main(argc, argv, &mpi);
    }
    if (argc >= 2)
        fprintf(stderr, "scm-mpi: '%s' is not a command of scm-mpi (sweep, compare, "
                        "merge, map; the others are scm's)\n", cmd);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    int provided = 0, rank = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "scm-mpi: MPI_Init_thread failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    gsl_set_error_handler_off();
    int rc = 0;
    if (rank != 0) {
        scm_error err;
        scm_error_clear(&err);
        if (scm_exec_mpi_worker(rank, &err)) { /* rank 0 would wait for it for ever */
            fprintf(stderr, "scm-mpi: %s\n", err.msg);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } else {
        rc = rank0(argc, argv, provided);
        scm_exec_mpi_quit();
    }
    MPI_Finalize();
    return rc;
}
