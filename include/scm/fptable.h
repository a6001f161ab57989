/* fptable.h: the families table of `scm fixed-points` as one library call
 * (issue 24).
 *
 * At given (K, M) (T = I, v = v* = 1) the fixed points of the flow inside
 * block-symmetric ansätze (the built-in ones, or ansatz files): for every
 * ansatz and k1 instance, the k1 sweep of fpsweep.h (or one enumeration per
 * instance with a single k1), seeds from other results and from every
 * smaller M (--seed-from, --chain-from), deflation; then the solutions
 * found in several ansätze are merged (a more symmetric point is also a
 * point of a less symmetric ansatz: it is listed once, under the ansatz
 * with the fewest scalars), one representative per family is polished in
 * the full space, classified, and optionally continued in M and analysed
 * for stability.  With grow_from > 0 instead: every k1 at block level by
 * continuation in M (scm_fp_sweep_grow), for large K.
 *
 * The result is an opaque table; scm_fp_table_json gives exactly the
 * object `scm fixed-points -o FILE` writes, scm_fp_table_text exactly the
 * table it prints.  Nothing here prints or exits; GSL's error handler must
 * be set by the program (gsl_set_error_handler_off()). */
#ifndef SCM_FPTABLE_H
#define SCM_FPTABLE_H

#include <cjson/cJSON.h>

#include "scm/fixedpoint.h"
#include "scm/kernel.h"
#include "scm/status.h"

/* Seeds from earlier results (`--seed-from FILE`): the listed points of
 * other `scm fixed-points` results, each with its ansatz name, instance
 * ("instance", or "k1" in files before issue 25) and scalars by name, used
 * as Newton starts of the instance with that ansatz and instance
 * parameter (scm_fp_seed).  An object so that files can be read (and
 * rejected) one by one as they are named, before the run. */
typedef struct scm_fp_table_seeds scm_fp_table_seeds;

/* A new empty seed list (NULL on no memory). */
scm_fp_table_seeds *scm_fp_table_seeds_alloc(void);

/* Read the result file at path and add its points.  SCM_EIO when it cannot
 * be read; SCM_EINVAL when it is not a fixed-points result or a point lacks
 * a string "ansatz", an integral "instance" (or "k1") or an object "scalars" of finite
 * numbers, or after SCM_FP_TABLE_MAX_FILES files; SCM_ENOMEM.  err names
 * the file (as "--seed-from '<path>': ..." where the command names it so).
 * After an error the list keeps what it held before the call, except that
 * the points read from this file before the bad one may be in it (the
 * command stops at the first error). */
scm_status scm_fp_table_seeds_read(scm_fp_table_seeds *s, const char *path, scm_error *err);

/* Points in the list (0 for NULL). */
int scm_fp_table_seeds_count(const scm_fp_table_seeds *s);

void scm_fp_table_seeds_free(scm_fp_table_seeds *s);

/* At most this many ansatz files and this many seed files. */
#define SCM_FP_TABLE_MAX_FILES 64

/* Which points carry Q and R in the JSON: none, the strict minima (the
 * families' minima and every listed point classed a minimum) and the
 * points of loss below SCM_FP_STATES_ZERO_LOSS (the global minimum up to
 * round-off), or all; AUTO is ALL for K <= SCM_FP_STATES_ALL_MAX_K and
 * MINIMA above (so that K = M = 200 writes a few MB, not 124 MB). */
enum { SCM_FP_STATES_AUTO = 0, SCM_FP_STATES_NONE, SCM_FP_STATES_MINIMA, SCM_FP_STATES_ALL };
#define SCM_FP_STATES_ALL_MAX_K 24
#define SCM_FP_STATES_ZERO_LOSS 1e-6

#define SCM_FP_TABLE_K1_ALL_MAX_K 24

/* The command's defaults of deflate and sweep_passes (also those of `scm
 * crosscheck`). */
#define SCM_FP_TABLE_DEFLATE 2
#define SCM_FP_TABLE_SWEEP_PASSES 8

typedef struct {
    long K, M;                  /* students, teachers (>= 1; no default) */
    const scm_activation *act;  /* NULL: relu */
    long k1;                    /* only the family of this k1: the points with k1
                                   anti-aligned students (-1: every family); for
                                   K <= SCM_FP_TABLE_K1_ALL_MAX_K from the whole
                                   enumeration (a family's points lie in many
                                   instances: at K = M = 6 the lowest k1 = 1 point
                                   is in instance 3 of k1), above from the
                                   instances k1, K - k1, M - k1 only */
    long starts;                /* random Newton starts per (ansatz, k1): 200 */
    long seed;                  /* of the random starts: 1 */
    long sweep_passes;          /* passes of the k1 sweep without k1 (0 or 1: each k1
                                   alone): SCM_FP_TABLE_SWEEP_PASSES */
    long deflate;               /* deflated solves per start (0: off):
                                   SCM_FP_TABLE_DEFLATE */
    long polish_max_K;          /* full-space polish when K <= this: 24 */
    long chain_from;            /* > 0: seeds from every M0 = chain_from .. M - 1
                                   (scm_fp_sweep_k1_chain); 0: off */
    long continue_to;           /* > M: follow each point in M up to it; -1: off */
    long grow_from;             /* > 0: block level by continuation in M from this M0
                                   (scm_fp_sweep_grow); 0: off */
    long probes;                /* with grow_from: random-start instances at M (-1:
                                   M / 100 + 1) */
    long fixed_k1;              /* with grow_from: paths with k1 fixed for k1 <= this: 1 */
    int all;                    /* 1: no merging across ansätze (the command's
                                   --unmerged; Python's all=True) */
    int stability;              /* 1: the symmetric Hessian spectrum of every distinct
                                   point (not only the specialised ones), with the
                                   Jacobian's, in its entry of the JSON */
    int states;                 /* Q and R in the JSON: SCM_FP_STATES_* (default
                                   SCM_FP_STATES_AUTO) */
    /* progress (may be NULL): called with done = 0 when the stability
     * classification starts, then after each point's, with the points done
     * and their total; from the calling thread */
    void (*progress)(void *ctx, int done, int total);
    void *progress_ctx;
    double max_residual;        /* a listed point's residual must be below this: 1e-12 */
    int threads;                /* 0: the processors online, at most 16 (the command's
                                   default); the result does not depend on it */
    const char *const *ansatz_files; /* n_ansatz files (NULL, 0: the built-in ansätze);
                                        a named ansatz that does not apply is an error */
    int n_ansatz;
    int with_builtin;           /* 1: the built-in ansätze too, after the files, and
                                   a file that does not apply at (K, M) is skipped
                                   (scm compare --ansatz); a file named like a built-in
                                   ansatz, or like another file, is an error */
    const scm_fp_table_seeds *seeds; /* NULL: none; read only during the run */
} scm_fp_table_opts;

/* The command's defaults, as listed above (K = M = -1: the caller sets
 * them). */
void scm_fp_table_opts_default(scm_fp_table_opts *o);

/* What the command line (and the Python call) names, into o: K and M
 * given, the activation actname into o->act.  SCM_EINVAL in the words of
 * the command ("--K and --M are required", "unknown activation 'tanh'
 * (relu, erf, linear)"), which it reports as usage errors. */
scm_status scm_fp_table_opts_named(scm_fp_table_opts *o, const char *actname, scm_error *err);

/* The checks of the options among themselves (the messages of the
 * command: e.g. "--chain-from must be below M = 4, got 5").  SCM_EINVAL or
 * SCM_OK. */
scm_status scm_fp_table_opts_check(const scm_fp_table_opts *o, scm_error *err);

typedef struct scm_fp_table scm_fp_table;

/* Run the enumeration that o describes (o->seeds and the ansatz files are
 * only read during the call).  On SCM_OK *out is the table (free with
 * scm_fp_table_free).  Errors: SCM_EINVAL for bad input (the options, an
 * ansatz file that cannot be read or parsed or does not apply, no ansatz
 * that applies: the command's exit status 2), any other status for a
 * failed computation (exit 1; a lower function's SCM_EINVAL there comes
 * back as SCM_ESOLVER, so that the status alone gives the exit status;
 * but scm_fp_sweep_grow's SCM_EINVAL, such as a base M0 with too few k1,
 * stays SCM_EINVAL; err has the message).  On failure *out is NULL, except with grow_from,
 * where a failure at a later ansatz leaves in *out the ansätze done before
 * it (scm_fp_table_text gives what the command printed before it
 * stopped); the caller frees *out in every case.  A table can carry a
 * deferred failure that did not stop the run (scm_fp_table_status). */
scm_status scm_fp_table_run(const scm_fp_table_opts *o, scm_fp_table **out, scm_error *err);

/* A failure met after the points were found that left the table complete
 * but the command's exit status 1 (out of memory in the polish or for the
 * stability model): its status and message, or SCM_OK. */
scm_status scm_fp_table_status(const scm_fp_table *t, scm_error *err);

/* Exactly the object `scm fixed-points -o` writes (the caller frees it
 * with cJSON_Delete; NULL on no memory). */
cJSON *scm_fp_table_json(const scm_fp_table *t);

/* Before scm_fp_table_json: SCM_ENOMEM, with the command's message naming
 * path, when the JSON tree of Q and R of every listed point (about 300
 * bytes per number) would take more than 80% of the free memory; SCM_OK
 * otherwise (also when the free memory cannot be measured). */
scm_status scm_fp_table_json_fits(const scm_fp_table *t, const char *path, scm_error *err);

/* The table `scm fixed-points` prints without -q: the families table, then
 * (scm_fp_table_text_all, --all) every listed point, then the counts (NUL-terminated;
 * the caller frees it; NULL on no memory). */
char *scm_fp_table_text(const scm_fp_table *t);
char *scm_fp_table_text_all(const scm_fp_table *t);

/* 1 when every listed point's residual (polished, else full, else block)
 * is below max_residual; always 1 with grow_from.  A point above it is
 * flagged in its entry ("residual_ok": false), counted, and kept out of
 * the families table; the command still exits 0. */
int scm_fp_table_residual_ok(const scm_fp_table *t);

/* The listed points whose residual is not below max_residual. */
int scm_fp_table_n_above(const scm_fp_table *t);

/* One listed point, in the order of the table (by loss). */
typedef struct {
    const char *ansatz;           /* its ansatz's name */
    int k1;                       /* its family: the number of anti-aligned students
                                     (structure.anti; -1 when not a whole number) */
    int instance;                 /* the ansatz instance's k1 parameter (the size of
                                     its first group, which may be the aligned one) */
    const scm_fp_point *pt;       /* scalars, loss, residuals; Q and R or NULL (block
                                     level); owned by the table */
    const scm_ansatz_inst *inst;  /* its instance (scalar names); owned by the table */
    scm_fp_structure st;          /* counts NaN with grow_from (not classified) */
    double residual;              /* polished, else full, else block */
    int also_found;               /* solutions merged into it from other ansätze */
} scm_fp_table_row;

/* Listed points (0 for NULL). */
int scm_fp_table_count(const scm_fp_table *t);

/* Row i (0 <= i < count) into *row; SCM_EINVAL for i out of range. */
scm_status scm_fp_table_row_get(const scm_fp_table *t, int i, scm_fp_table_row *row);

/* The symmetric stability class of a point (scm_stab_symmetric, the
 * exact weight-space Hessian spectrum at d = K + M): */
typedef enum {
    SCM_FP_CLASS_NONE = 0,  /* not computed (not specialised without --stability, or
                               block level) */
    SCM_FP_CLASS_MINIMUM,   /* no negative eigenvalue beyond the zero tolerance */
    SCM_FP_CLASS_SADDLE,    /* a negative eigenvalue */
    SCM_FP_CLASS_REFUSED    /* scm_stab_symmetric refused the point (e.g. a dead ReLU
                               student): the reason is in the JSON */
} scm_fp_class;

/* "-", "minimum", "saddle", "refused". */
const char *scm_fp_class_str(scm_fp_class c);

/* The class of row i and its smallest Hessian eigenvalue that is not a
 * zero (the zeros are modes of the symmetries; NaN if none). */
scm_fp_class scm_fp_table_row_class(const scm_fp_table *t, int i, double *hmin);

/* One family of the families table: the specialised points (every
 * teacher paired with an anti-aligned or aligned student, K - M extra
 * students) with k1 anti-aligned students and the same pattern of extra
 * students, whose residual is below max_residual. */
typedef struct {
    int k1;
    const char *pattern;      /* the extra students ("" when K = M), e.g. "1 aligned",
                                 "1 dead", "2 anti" (by their best teacher's cosine) */
    int n_points, n_minima, n_saddles, n_refused;
    int best_row;             /* row of the lowest-loss minimum, or -1 (no minimum) */
    double loss, hess_min;    /* its loss and smallest non-zero Hessian eigenvalue
                                 (NaN: no minimum) */
} scm_fp_table_family;

/* Families (0 for NULL or with grow_from), ordered by k1 then pattern. */
int scm_fp_table_family_count(const scm_fp_table *t);
scm_status scm_fp_table_family_get(const scm_fp_table *t, int i, scm_fp_table_family *f);

/* Solutions before merging (the "(N solutions before merging)" of the
 * table; the count of rows with grow_from). */
int scm_fp_table_n_solutions(const scm_fp_table *t);

void scm_fp_table_free(scm_fp_table *t);

#endif
