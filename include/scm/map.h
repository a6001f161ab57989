/* map.h: the map of global convergence over width M and over-parameterisation
 * K - M (`scm map`; docs/map.md).
 *
 * One sweep per cell (M, K = M + dK), run as `scm compare` runs them: for
 * each M one scm_compare_run over K = M + dK (every dK), with the prefix
 * PREFIX.M<M>, so that each cell has its config, its families (enumerated
 * once per cell and shared by its runs), its runs file (resumed after a
 * kill, byte-identical whatever the threads or MPI ranks of the executor)
 * and its summary, exactly the files of `scm compare --M M --K ...
 * -o PREFIX.M<M>`.  Then per cell: the fraction reaching the global minimum,
 * the fraction per family reached (k1, plateau loss, stability verdict),
 * the runs not converged, each with a 95% Wilson interval, the median time
 * to convergence; as the cJSON object of PREFIX.json and the text of
 * PREFIX.csv.  The initialisation law (init.h) is one of the options and is
 * recorded in every cell's config and in the map.
 *
 * Nothing here prints: progress reaches the caller through compare's event
 * callback. */
#ifndef SCM_MAP_H
#define SCM_MAP_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "scm/compare.h"
#include "scm/init.h"
#include "scm/status.h"

#define SCM_MAP_MAX_M 256
#define SCM_MAP_MAX_DK 32 /* <= SCM_COMPARE_MAX_K */

typedef struct {
    int nM;
    long M[SCM_MAP_MAX_M]; /* distinct, >= 1 */
    int ndK;
    long dK[SCM_MAP_MAX_DK]; /* distinct, >= 0 */
    long runs;               /* per cell, >= 1 */
    scm_init_law law;        /* sets init.law, and init.d = M for the xavier laws */
    int law_given;           /* 0: the law is config_text's init.law if it has one
                                (else gaussian); 1: law, and a config's other
                                init.law is refused */
    const char *config_text; /* NULL: compare's built-in config */
    const char *config_name;
    const char *const *sets; /* --set overrides; init.law is --law's, and init.d
                                under a xavier law is M: both refused here */
    int nsets;
    const char *const *ansatz_files; /* n_ansatz ansatz files every cell's enumeration takes
                                        besides the built-in ones, where they apply
                                        (scm_compare_opts.ansatz_files) */
    int n_ansatz;
    const char *prefix; /* required */
    int have_seed;
    uint64_t seed;
    int threads;        /* 1 */
    int ahead;          /* 1 (and threads >= 2): while a row's sweeps run, one more
                           thread enumerates the next row's families (the same
                           bytes: compare.h, jobs); after a failure the map returns
                           when the enumeration running then ends.  0: each row
                           enumerates its own */
    int no_stability;
    int certify;
    scm_sweep_exec_fn exec;     /* NULL: scm_sweep_exec */
    scm_compare_jobs_fn jobs;   /* NULL: each row's enumerations and verdicts in turn
                                   (compare.h) */
    scm_compare_event_fn event; /* NULL: none; K of each event is the cell's */
    void *event_user;
} scm_map_opts;

/* nM = ndK = 0, runs = -1, gaussian, threads 1, the rest 0 / NULL. */
void scm_map_opts_default(scm_map_opts *o);

/* Parse a list "a,b,c" whose items are integers or ranges lo:hi[:step]
 * (hi included, step >= 1, default 1) into out[0 .. *n - 1], every value in
 * [lo_ok, hi_ok], no value twice, at most max values.  what names the
 * option in the error (e.g. "--M"). */
scm_status scm_map_parse_list(const char *text, const char *what, long lo_ok, long hi_ok,
                              long *out, int max, int *n, scm_error *err);

typedef struct {
    cJSON *map; /* PREFIX.json's object: command, law, M, dK, runs, cells,
                   smallest_dK_99 */
    char *csv;  /* PREFIX.csv: one row per cell and class */
    long failed_M; /* the M being done after a failure, else -1 */
    int failed_input; /* 1: bad input (nothing written when it is found before
                         the first row; docs/map.md) */
} scm_map_result;

/* Check every cell's configuration, then run the rows.  Free res with
 * scm_map_result_free in either case. */
scm_status scm_map_run(const scm_map_opts *o, scm_map_result *res, scm_error *err);
void scm_map_result_free(scm_map_result *res);

/* The CSV of a map object (res->map): header, then per cell the rows
 * global_minimum, each family reached, not_converged; NULL on no memory,
 * else the caller frees it. */
char *scm_map_csv(const cJSON *map);

/* The median of the final time t of the converged runs of a runs file
 * (sweepfile.h format), and of those that reached the global minimum:
 * NAN when there is none.  SCM_EIO when it cannot be read. */
scm_status scm_map_median_times(const char *runs_path, double *t_conv, double *t_global,
                                scm_error *err);

#endif
