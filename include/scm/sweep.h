/* sweep.h: random-initialisation sweeps (issue 5; MATH.md section 7).
 *
 * A sweep is N runs of one configuration (model, rule, integrator) from
 * random initial conditions.  Run i draws its initial (Q, R) with the seed
 * scm_sweep_seed(S, i), a function of the base seed S and the index i only,
 * so run i is the same whatever else runs, in which order and on how many
 * threads.  Each run is integrated to its end (CVODE, traj.h) and its final
 * state classified (scm_sweep_classify): converged or not and why, the
 * enumerated family whose loss it matches, dead neurons, students sharing a
 * teacher, anti-aligned students.  A run becomes one JSON line
 * (scm_sweep_record_json); a file of runs starts with a header line
 * (scm_sweep_header_json) that pins the configuration, base seed, number of
 * runs and shard, so that resuming and merging can check they belong
 * together.  scm_sweep_summary_* turns records into counts per class with
 * 95% Wilson intervals and a histogram of final losses.
 *
 * Nothing here prints, exits or keeps global state; scm_sweep_exec runs on
 * pthreads and calls the caller's callback in index order. */
#ifndef SCM_SWEEP_H
#define SCM_SWEEP_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "scm/config.h"

/* ---- seeds ------------------------------------------------------------- */

/* The init seed of run index of a sweep with base seed base.  GSL's
 * mt19937 (init.c) uses only the low 32 bits of a seed, so seeds are
 * 32-bit: fmix32(lo32(splitmix64(base)) + index), a bijection of index on
 * [0, 2^32), so the runs of one sweep never share a seed. */
unsigned long scm_sweep_seed(uint64_t base, long index);

/* ---- families ---------------------------------------------------------- */

/* One enumerated fixed-point family: its ansatz name, k1 and loss; the
 * point itself when the list gives it (the output of `scm fixed-points`),
 * for the early stop and the tagging of unconverged runs; and its
 * stability verdict when the list carries one. */
typedef struct {
    char name[64];
    int k1;
    double eps;
    int K, M;          /* shape of Q and R; 0 when the list gives no point */
    double *Q, *R;     /* K x K, K x M, owned (NULL: no point) */
    char stability[64];/* "VERDICT/HESSIAN_VERDICT" from its "stability" object, else "unknown" */
} scm_sweep_family;

/* The per-point data the early stop computes once and shares between the
 * threads of a sweep (canonical forms, certificates; sweep.c). */
typedef struct scm_sweep_cache scm_sweep_cache;

typedef struct {
    int n;
    scm_sweep_family *f; /* n entries, owned */
    scm_sweep_cache *cache; /* owned; NULL until needed (made by scm_sweep_families_prepare) */
} scm_sweep_families;

/* Parse a list of families from JSON text: a top-level array, or an
 * object holding one under "fixed_points" (the output of `scm
 * fixed-points`, read before its "families" table), "families" or
 * "points", of objects with a loss ("loss" or
 * "eps", a number; an entry whose loss is null is skipped), "k1" (an
 * integer; structure.anti, the anti-aligned count `scm fixed-points` writes,
 * takes precedence) and a name ("family" or "ansatz", a string; default "family").
 * Other keys are ignored.  source
 * names the input in messages.  Free with scm_sweep_families_free. */
scm_status scm_sweep_families_parse(const char *text, const char *source,
                                    scm_sweep_families *out, scm_error *err);
void scm_sweep_families_free(scm_sweep_families *f);

/* The list as JSON text that scm_sweep_families_parse reads back to the same
 * list (names, k1, losses, stability, points: doubles printed exactly), for
 * another process of the sweep (scm-mpi's workers); NULL on no memory,
 * else the caller frees with free(). */
char *scm_sweep_families_json(const scm_sweep_families *f);

/* Make the shared cache of the early stop and the tagging for model m
 * (canonical forms of the points, basin.h); scm_sweep_exec calls it.  Not
 * thread-safe itself; SCM_ENOMEM. */
scm_status scm_sweep_families_prepare(scm_sweep_families *f, const scm_model *m, scm_error *err);

/* ---- classification ---------------------------------------------------- */

typedef struct {
    double match_rtol; /* loss matches a family when |eps - L| <= rtol |L| + atol */
    double match_atol;
    double dead_q;     /* a student with Q_kk < dead_q counts as dead */
    /* Two-stage stopping (0: off): first integrate with grad_stop =
     * loose_grad_stop; if the end state then matches a family whose k1 equals
     * its anti-aligned count, with no dead or shared students, stop there;
     * otherwise continue from that state with the configured grad_stop. */
    double loose_grad_stop;
    /* Early stop (docs/sweeps.md, "Early stop"; 0: off).  A run stops as
     * "certified" (a) when eps < certify_global times the lowest positive
     * family loss (the loss decreases along the flow, so no listed family
     * but a zero-loss one can be its end: the global minimum); (b) when,
     * with max |dy/dtau| < certify_grad, its state is within the certified
     * basin radius of a listed point (scm_basin_certify_point) and the exact
     * checks at the state hold.  Its class is the one a run converged onto
     * that point (or the global minimum) gets.  1: both rules; 2: (a)
     * only, which rests on nothing the classification does not already
     * rest on (the list's lowest losses, as eps_stop); (b) rests on the
     * proved radius of basin.h (ReLU; no basin certificate otherwise). */
    int certify;
    double certify_grad;   /* 1e-3 */
    double certify_global; /* 1e-3 */
    double certify_rmax;   /* the largest basin radius tried, times 2 (0.05; basin.h r_max) */
} scm_sweep_opts;

/* match_rtol 1e-8, match_atol 1e-10, dead_q 1e-3, loose_grad_stop 0,
 * certify 0, certify_grad 1e-3, certify_global 1e-3, certify_rmax 0.05. */
void scm_sweep_opts_default(scm_sweep_opts *o);
scm_status scm_sweep_opts_check(const scm_sweep_opts *o, scm_error *err);

#define SCM_SWEEP_WHY_LEN 512

/* One run: what the JSON line holds. */
typedef struct {
    long index;
    unsigned long seed;
    scm_stop_reason stop;
    int converged;              /* stop is fixed_point or eps_threshold */
    char why[SCM_SWEEP_WHY_LEN]; /* not converged: the stop reason or the failure */
    double t, eps, max_F;
    /* eps reported as 0 although the final state's own loss was negative
     * (traj.h: integration error near the global minimum; the JSON line's
     * "eps_of": "global_minimum"), and how far that state is from
     * realisable (flow.h scm_flow_realisable; "psd_gap"); in the JSON line
     * only when eps_zeroed */
    int eps_zeroed;
    double psd_gap;
    long steps, rhs;
    int loose_retries;          /* 1: the run failed in a loose stage looser than the
                                   default (traj.h loose_failed) and was redone from
                                   the start with the default one (steps and rhs count
                                   both); in the JSON line only when not 0 */
    int matched;                /* 1 if a family matched (converged runs only) */
    char family[64];            /* the matched family's name, else "" */
    int k1;                     /* the matched family's k1, else -1 */
    int n_anti;                 /* anti-aligned students (scm_model_align), -1 when
                                   out of memory */
    int n_dead;                 /* students with Q_kk < dead_q */
    int n_shared;               /* live students minus distinct teachers they pick */
    char cls[80];               /* "NAME/k1=N" (with "#j", j-th lowest loss, when the
                                   list has several of that name and k1) |
                                   "unmatched" | "not_converged" */
    /* stop == SCM_STOP_CERTIFIED: the point of the family list (-1: the
     * global-minimum rule), the distance and the certified radius */
    int cert_point;
    double cert_dist, cert_radius;
    double cert_loss;  /* the loss of the point it converges to (0 by the global rule):
                          the summary's class ranges and histogram use it */
    /* Not converged: the listed point it sits nearest (-1: no list), by the
     * weight-space distance after alignment (basin.h; near_dist NaN when the
     * list gives losses only: then the nearest loss), with its family, k1,
     * loss and stability verdict ("unknown" when the list has none). */
    int near;
    double near_dist, near_loss;
    char near_family[64];
    int near_k1;
    char near_stability[64];
} scm_sweep_record;

/* Classify a final state: n_anti, n_dead, n_shared from (Q, R); if
 * converged, the family match (the loss within tolerance; among several,
 * one whose k1 equals n_anti is preferred, then the closest loss) and cls;
 * eps_zeroed and psd_gap from rec->eps (a reported loss of exactly 0: traj
 * zeroed a negative one) and (Q, R).  rec->converged and rec->eps must be
 * set; fams may be NULL. */
void scm_sweep_classify(const scm_model *m, const double *Q, const double *R, double eps,
                        const scm_sweep_families *fams, const scm_sweep_opts *o,
                        scm_sweep_record *rec);

/* Run index of the sweep: init seed scm_sweep_seed(base, index), the
 * configuration's random init (d, sigma, scale) and integrator (trajectory
 * not recorded), then classification.  c->init must be random.  Errors only
 * for bad input or no memory; a run that fails numerically is a record
 * with converged = 0. */
scm_status scm_sweep_run_one(const scm_config *c, const scm_model *m, uint64_t base,
                             long index, const scm_sweep_families *fams,
                             const scm_sweep_opts *o, scm_sweep_record *rec, scm_error *err);

/* ---- JSON lines -------------------------------------------------------- */

/* The record as one compact JSON object without newline (caller frees);
 * NULL on no memory. */
char *scm_sweep_record_json(const scm_sweep_record *r);

/* Parse one line (as written by scm_sweep_record_json). */
scm_status scm_sweep_record_parse(const char *line, scm_sweep_record *r, scm_error *err);

/* The header line of a runs file: {"scm_sweep": 1, "config": c->used,
 * "seed", "runs", "shard": [i, n], "families": [...]} (caller frees). */
char *scm_sweep_header_json(const scm_config *c, uint64_t base, long runs, int shard_i,
                            int shard_n, const scm_sweep_families *fams);
/* The same with the sweep options that change what a run records:
 * "classify": {"match_rtol", "match_atol", "dead_q", "loose_grad_stop"}
 * and, with o->certify, "certify": {"grad": certify_grad, "global": certify_global,
 * "rmax": certify_rmax}
 * (so that a resume or a merge cannot mix early-stopped runs with others). */
char *scm_sweep_header_json_opts(const scm_config *c, uint64_t base, long runs, int shard_i,
                                 int shard_n, const scm_sweep_families *fams,
                                 const scm_sweep_opts *o);

/* ---- parallel execution ------------------------------------------------ */

/* Called once per run, in increasing index order, serialised (never two at
 * once); a nonzero return stops the sweep (runs in flight finish).  */
typedef int (*scm_sweep_emit_fn)(const scm_sweep_record *r, void *user);

/* Run indices[0..n-1] (increasing) on nthreads threads (>= 1), calling emit
 * for each in that order.  SCM_EINVAL if emit stopped the sweep (its own
 * reason is the caller's), else the first run error. */
scm_status scm_sweep_exec(const scm_config *c, uint64_t base, const long *indices, long n,
                          int nthreads, const scm_sweep_families *fams,
                          const scm_sweep_opts *o, scm_sweep_emit_fn emit, void *user,
                          scm_error *err);

/* ---- summary ----------------------------------------------------------- */

/* 95% Wilson score interval for k successes in n trials (n > 0):
 * the p with |k/n - p| = z sqrt(p (1 - p) / n), z = 1.959963984540054. */
void scm_sweep_wilson(long k, long n, double *lo, double *hi);

#define SCM_SWEEP_HIST_LO (-12)   /* log10 of the lowest bin edge */
#define SCM_SWEEP_HIST_HI 1       /* log10 of the highest bin edge */
#define SCM_SWEEP_HIST_PER_DECADE 4
#define SCM_SWEEP_HIST_NBINS ((SCM_SWEEP_HIST_HI - SCM_SWEEP_HIST_LO) * SCM_SWEEP_HIST_PER_DECADE)

typedef struct scm_sweep_summary scm_sweep_summary;

/* An empty summary of a sweep of runs runs (the expected count). */
scm_sweep_summary *scm_sweep_summary_alloc(long runs);
void scm_sweep_summary_free(scm_sweep_summary *s);
/* Count one record (no memory: SCM_ENOMEM). */
scm_status scm_sweep_summary_add(scm_sweep_summary *s, const scm_sweep_record *r);
/* Counts so far of the classes, for progress lines: writes at most len
 * bytes "k1:0 12, k1:1 30, ..." into buf. */
void scm_sweep_summary_brief(const scm_sweep_summary *s, char *buf, size_t len);
/* The summary as JSON (caller frees): runs, done, converged, not_converged
 * (by reason), classes [{class, family, k1, count, fraction, wilson95}]
 * (fractions of all runs done), by_anti (converged runs by anti-aligned
 * count), the loss histogram of converged runs, solver work (steps, rhs,
 * tau: mean, max).  missing (indices expected but absent) is added by
 * the caller. */
cJSON *scm_sweep_summary_json(const scm_sweep_summary *s);

#endif
