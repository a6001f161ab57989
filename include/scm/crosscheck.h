/* crosscheck.h: is the fixed-point enumeration complete?  (issue 11)
 *
 * The enumeration (fixedpoint.h) finds the fixed points inside the
 * block-symmetric ansätze it is given, from a finite number of Newton
 * starts.  A cross-check trains from random initial conditions in two
 * independent ways and classifies every end point against the enumerated
 * list:
 *   - ODE: the (Q, R) flow of MATH.md section 3 integrated by CVODE
 *     (traj.h) from scm_init_random at dimension d, run i seeded with
 *     scm_sweep_seed(base, i), as a sweep run is;
 *   - GD: gradient descent in weight space, d = M (the teacher rows
 *     sqrt(M) e_m, so T = I), the students' entries drawn i.i.d.
 *     N(0, gd_sigma^2) with a mt19937 seeded by scm_sweep_seed(base, i),
 *     the closed-form population gradient of weights.h, steps chosen by
 *     Barzilai-Borwein with an Armijo backtracking safeguard (the loss
 *     never increases), until the flow residual max |F_Q|, |F_R| at the
 *     overlaps falls below gd_tol.
 * A student with traj.dead_tol < Q_kk <= dead_q is small: its rows of F
 * scale with its norm, so an absolute stopping test passes while it may
 * still be vanishing.  A run that stops with a small student goes on with
 * the test scaled by that Q_kk (ODE: up to SCM_XC_SMALL_STAGES more
 * integrations with grad_stop * Q_kk; GD: its test is gd_tol * Q_kk from
 * the start), until the student dies (zeroed, below traj.dead_tol) or is
 * stationary at its own scale; a run that runs out of stages, time or
 * steps first is not converged.  Each end point is then
 *   - stripped of its dead students (zero rows): the live part is a state
 *     with K_live students, classified against the enumeration at
 *     (K_live, M);
 *   - polished by Newton on the full F_Q = F_R = 0 (scm_fp_polish; K_live
 *     <= polish_max_K, loss above global_eps);
 *   - matched: to the enumerated point whose loss is within
 *     match_rtol |L| + match_atol (the sweeps' rule, sweep.h); an end point
 *     with loss below global_eps matches the global minimum;
 *     the invariants tr Q and ||R||_F^2 are compared too and reported
 *     (they differ legitimately on the continua of ReLU fixed points,
 *     e.g. two parallel students sharing one teacher);
 *   - described: its alignment (scm_model_align) and its groups of
 *     students with equal overlaps (scm_xc_groups), the shape an ansatz
 *     needs to hold it.
 * A run that does not converge (ODE: not stopped at a fixed point or the
 * global minimum; GD: the iteration budget spent) is reported as such and
 * never matched.  Setting: T = I, v = v* = 1, as fixedpoint.h.  Nothing
 * here prints, exits or keeps global state. */
#ifndef SCM_CROSSCHECK_H
#define SCM_CROSSCHECK_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "scm/fixedpoint.h"
#include "scm/traj.h"

/* ---- the enumerated list --------------------------------------------- */

typedef struct {
    double eps, trQ, normR2;  /* loss (polished if polished) and invariants */
    double res;               /* residual (polished, full or block) */
    double n_anti, n_aligned, n_other; /* scm_fp_classify */
    char ansatz[64];          /* where first found */
    int k1;
    int copies;               /* solutions merged into this one */
} scm_xc_point;

typedef struct {
    int K, M;
    int n;
    scm_xc_point *pt;         /* sorted by loss */
    int n_instances;          /* (ansatz, k1) instances enumerated */
} scm_xc_list;

/* Enumerate every instance of every applicable ansatz of ans[0..n_ans) at
 * (K, M) with options o, as `scm fixed-points` does: with sweep_passes >= 2
 * the k1 instances of an ansatz (more than one) seed each other
 * (scm_fp_sweep_k1, at most sweep_passes passes), else each instance runs
 * on its own starts (scm_fp_enumerate); solutions with the same loss, tr Q
 * and ||R||_F^2 (1e-9 relative) are merged, and the list sorted by loss.
 * No ansatz applying gives an empty list, not an error.  Errors: bad
 * options, no memory. */
scm_status scm_xc_enumerate(int K, int M, scm_ansatz *const *ans, int n_ans,
                            const scm_activation *act, const scm_fp_opts *o, int sweep_passes,
                            scm_xc_list *l, scm_error *err);
void scm_xc_list_free(scm_xc_list *l);

/* ---- runs ------------------------------------------------------------- */

typedef enum { SCM_XC_ODE, SCM_XC_GD } scm_xc_method;
#define SCM_XC_SMALL_STAGES 4
const char *scm_xc_method_str(scm_xc_method m); /* "ode", "gd" */

typedef struct {
    /* ODE */
    long d;               /* dimension of the random init (default 1000) */
    double sigma;         /* student weight scale (default 1) */
    scm_traj_opts traj;   /* integrator (default scm_traj_opts_default, no record) */
    /* GD */
    double gd_sigma;      /* student entries N(0, gd_sigma^2) (default 1) */
    double gd_tol;        /* stop at max |F| below this (default 1e-10, the
                             ODE's grad_stop) */
    long gd_max_iter;     /* iteration budget (default 200000) */
    /* classification */
    double dead_q;        /* a live student with Q_kk <= dead_q is small (default
                             1e-3, the sweeps' dead threshold) */
    int polish_max_K;     /* polish when K_live <= this (default 32) */
    double global_eps;    /* loss below this: the global minimum (default 1e-10) */
    double match_rtol, match_atol; /* loss match (default 1e-8, 1e-10) */
    double inv_rtol;      /* invariants agree (default 1e-6 relative) */
    double group_tol;     /* overlaps equal in scm_xc_groups (default 1e-6,
                             relative to the overlap scale) */
} scm_xc_opts;

void scm_xc_opts_default(scm_xc_opts *o);
scm_status scm_xc_opts_check(const scm_xc_opts *o, scm_error *err);

/* One run's end point. */
typedef struct {
    scm_xc_method method;
    long index;
    unsigned long seed;
    int converged;          /* 1 if it reached a fixed point (or the global minimum) */
    char why[256];          /* not converged: why */
    double eps;             /* loss at the end (after the polish when polished) */
    double res;             /* max |F_Q|, |F_R| there (live students) */
    long work;              /* CVODE steps or GD iterations */
    int polished;           /* the polish ran */
    int polish_ok;          /* and reached its target */
    int K_live;             /* students alive at the end */
    int n_dead;
    int n_small;            /* live students with Q_kk <= dead_q */
    int stages;             /* ODE continuations for a small student */
    double trQ, normR2;     /* invariants of the live state */
    int n_anti, n_aligned, n_unpaired, n_none; /* scm_model_align of the live state */
    double *Q, *R;          /* live end state, K_live x K_live and K_live x M (owned) */
    /* classification (scm_xc_match) */
    int match;              /* index in the list, -1: unmatched or not converged */
    int global;             /* matched as the global minimum (loss < global_eps) */
    int inv_agree;          /* the matched point's invariants agree too */
} scm_xc_run;

void scm_xc_run_free(scm_xc_run *r);

/* Run index of method meth for (K, M) (activation act) from base seed
 * base.  Fills r up to the classification (r->match = -1).  Errors: bad
 * options, no memory; a run that fails numerically is a run with
 * converged = 0 and why filled. */
scm_status scm_xc_run_one(int K, int M, const scm_activation *act, scm_xc_method meth,
                          uint64_t base, long index, const scm_xc_opts *o, scm_xc_run *r,
                          scm_error *err);

/* scm_xc_run_one for the n runs first .. first + n - 1 into r[0 .. n-1],
 * on threads threads (1 .. 64): the same runs whatever the number.  On an
 * error, *failed is the lowest failing index and err its message (the
 * runs are all filled; the caller frees them); else *failed = -1. */
scm_status scm_xc_run_many(int K, int M, const scm_activation *act, scm_xc_method meth,
                           uint64_t base, long first, int n, const scm_xc_opts *o, int threads,
                           scm_xc_run *r, long *failed, scm_error *err);

/* Match a converged run against l (which must be the list at
 * (r->K_live, M)): sets r->match, r->global, r->inv_agree. */
void scm_xc_match(scm_xc_run *r, const scm_xc_list *l, const scm_xc_opts *o);

/* ---- block structure of a state ---------------------------------------- */

/* Students with equal overlaps: two students are in one group when their
 * alignment kinds agree and Q_kk, their overlap with their partner
 * teacher and the sorted list of their other overlaps with the teachers
 * agree to tol relative to the overlap scale.  Per group: its size, kind,
 * Q_kk, own overlap (NaN when unpaired) and the distinct values of its
 * other R entries with how often each occurs in one student's row. */
#define SCM_XC_MAX_VALUES 8
typedef struct {
    int size;
    int kind;               /* scm_alignment */
    double q, own;
    int n_values;           /* distinct other overlaps (capped at SCM_XC_MAX_VALUES;
                               more_values counts the rest) */
    double value[SCM_XC_MAX_VALUES];
    int count[SCM_XC_MAX_VALUES];
    int more_values;
    int first;              /* the lowest student index of the group */
} scm_xc_group;

typedef struct {
    int n;
    scm_xc_group *g;        /* by decreasing size, then first student */
} scm_xc_groups;

scm_status scm_xc_group_students(int K, int M, const double *Q, const double *R, double tol,
                                 scm_xc_groups *g);
void scm_xc_groups_free(scm_xc_groups *g);

/* ---- the whole cross-check, as `scm crosscheck` runs it ----------------
 *
 * The enumeration at (K, M) with the options of `scm fixed-points` (and
 * at K_live < K on first need, for runs that end with dead students),
 * then for each method in turn its runs on threads (scm_xc_run_many) and
 * their classification in index order (scm_xc_match), with the counts of
 * scm_xc_tally, the matched fixed points and the distinct unmatched
 * losses.  scm_xc_check_text gives exactly the summary the command prints
 * and scm_xc_check_json exactly the object it writes.  The steps are
 * separate calls so that a program can report progress between them. */

#define SCM_XC_MAX_ANSATZ 64

typedef struct {
    int K, M;                   /* students, teachers (no default: -1) */
    const scm_activation *act;  /* NULL: relu */
    long runs;                  /* runs per method (>= 1; 200) */
    long seed;                  /* base seed: run i uses scm_sweep_seed(seed, i) (1) */
    long first;                 /* first run index (0) */
    int ode, gd;                /* which methods run, ODE first (both 1) */
    long starts;                /* random Newton starts per (ansatz, k1) (200) */
    long fp_seed;               /* seed of those starts (1) */
    long deflate;               /* deflated Newton rounds (2, as scm fixed-points) */
    long sweep_passes;          /* k1 sweep passes (8, as scm fixed-points) */
    int threads;                /* runs and enumeration, 1 .. 64 (0: the processors
                                   online, at most 16); nothing depends on it */
    const char *const *ansatz_files; /* n_ansatz files (NULL, 0: the built-in ansätze) */
    int n_ansatz;               /* at most SCM_XC_MAX_ANSATZ */
    scm_xc_opts run;            /* runs and classification (scm_xc_opts_default) */
} scm_xc_check_opts;

void scm_xc_check_opts_default(scm_xc_check_opts *o);

/* What the command line (and the Python call) names, into o: K and M
 * given ("--K and --M are required"), the activation actname, method 0
 * (ODE only), 1 (GD only) or 2 (both).  SCM_EINVAL in the words of `scm
 * crosscheck` (the caller adds its prefix). */
scm_status scm_xc_check_opts_named(scm_xc_check_opts *o, long K, long M, const char *actname,
                                   int method, scm_error *err);

/* The counts of one method's runs. */
typedef struct {
    long runs;                  /* runs made */
    long converged, not_converged;
    long global;                /* converged to the global minimum */
    long matched;               /* matched a listed point or the global minimum */
    long unmatched;             /* converged and matched nothing */
    long inv_differ;            /* matched a listed point by loss, invariants differ */
    long with_dead, with_small; /* runs ending with a dead / a small student */
    long matched_below_K;       /* matched in the list at K_live < K */
    long work;                  /* CVODE steps or GD iterations, summed */
    double seconds;             /* wall-clock time of the runs and their classification */
} scm_xc_tally;

typedef struct scm_xc_check scm_xc_check;

/* A new cross-check of o: its ansätze read (files) or parsed (built-in),
 * nothing computed yet.  Errors (the check is not made, *out NULL):
 * SCM_EINVAL for bad options, an ansatz file's error (SCM_EIO, SCM_EINVAL)
 * with its message, SCM_ENOMEM. */
scm_status scm_xc_check_new(const scm_xc_check_opts *o, scm_xc_check **out, scm_error *err);

/* The enumeration at (K, M) (scm_xc_enumerate).  Errors, with the
 * command's message ("enumeration: ...", "out of memory"): any status. */
scm_status scm_xc_check_enumerate(scm_xc_check *c, scm_error *err);

/* After scm_xc_check_enumerate: the list at (K, M), and the seconds it
 * took. */
const scm_xc_list *scm_xc_check_list(const scm_xc_check *c);
double scm_xc_check_enum_seconds(const scm_xc_check *c);

/* After scm_xc_check_enumerate: the runs of method m (one of o->ode,
 * o->gd, each once, in the order ODE, GD) and their classification,
 * enumerating at K_live < K where a run needs it.  Errors, with the
 * command's message: "run I (ode|gd): ..." when a run failed (not a run
 * that did not converge: that is a result), "enumeration at K = k: ...". */
scm_status scm_xc_check_run(scm_xc_check *c, scm_xc_method m, scm_error *err);

/* The whole computation: scm_xc_check_enumerate, then scm_xc_check_run of
 * each method asked for (ODE first), with note (may be NULL) called after
 * each step with a line saying what it did ("K = 3, M = 3: 12 fixed points
 * enumerated (4 instances) in 0.1 s", "ode: 200 runs in 1.5 s").  Their
 * errors. */
scm_status scm_xc_check_compute(scm_xc_check *c, void (*note)(void *ctx, const char *line),
                                void *ctx, scm_error *err);

/* The counts of method m (zero until it has run). */
const scm_xc_tally *scm_xc_check_tally(const scm_xc_check *c, scm_xc_method m);

/* Every run made so far, method by method in index order (*n of them;
 * owned by the check). */
const scm_xc_run *scm_xc_check_runs(const scm_xc_check *c, long *n);

/* Converged end points that matched nothing, both methods. */
long scm_xc_check_unmatched(const scm_xc_check *c);

/* After the runs: the summary `scm crosscheck` prints (quiet: the counts
 * only), as a string the caller frees; NULL on no memory. */
char *scm_xc_check_text(const scm_xc_check *c, int quiet);

/* After the runs: the result object of `scm crosscheck -o` (the caller
 * frees it with cJSON_Delete; NULL on no memory). */
cJSON *scm_xc_check_json(const scm_xc_check *c);

void scm_xc_check_free(scm_xc_check *c);

#endif
