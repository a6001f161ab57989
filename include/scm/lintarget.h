/* lintarget.h: the linear target a^T x written as a +-ReLU pair (issue 10,
 * docs/lintarget.md): ReLU teacher units w*_1 = a, w*_2 = -a with output
 * weights v* = (1, -1), since ReLU(u) - ReLU(-u) = u.  M = 2 and
 * T = t [[1, -1], [-1, 1]] with t = |a|^2 / d: a singular PSD teacher
 * overlap (rank 1), which the model accepts.
 *
 * With K = 2 students and both layers trained, the manifold
 *     v1 w1 = (c + 1) a,   v2 w2 = -c a   (both students along +a)
 * is stationary for every real c: the student is ReLU(u), the part of the
 * target on u < 0 is not learnt, and the loss is t / 4 (half of
 * E[ReLU(-u)^2] = t / 2).  (The issue writes the second relation as
 * v2 w2 = c a; stationarity in v requires the two output coefficients to
 * sum to 1, which fixes the sign: (c + 1) + (-c) = 1.)  The Hessian in
 * (W, v) is E[(delta phi)^2] there (the residual vanishes where phi has
 * curvature), a Gram matrix of relu(z) and 1(z > 0) x_perp: rank d, so in
 * a realisation of dimension d it has d positive and d + 2 zero
 * eigenvalues: the line c, the two rescalings (w_i, v_i) -> (s w_i, v_i / s)
 * and the d - 1 directions v1 dw1 + v2 dw2 = 0 orthogonal to a. */
#ifndef SCM_LINTARGET_H
#define SCM_LINTARGET_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "scm/model.h"
#include "scm/traj.h"

/* The ReLU model with K students, M = 2 teachers as above (t > 0), second
 * layer v (NULL: all ones; it is a starting value when v is trained). */
scm_model *scm_lintarget_model(int K, double t, const double *v, scm_error *err);

/* The point of the saddle manifold at c with student norms beta (w_i =
 * beta_i a / |a| in overlap units, beta_i > 0): Q (2 x 2), R (2 x 2),
 * v (2).  SCM_EINVAL unless t > 0 and beta_i > 0. */
scm_status scm_lintarget_saddle(double t, double c, const double *beta, double *Q, double *R,
                                double *v, scm_error *err);

typedef struct {
    double eps;          /* the loss there (t / 4) */
    double grad_max;     /* max |d eps / d (W, v)| */
    int n;               /* unknowns: 2 d + 2 */
    int n_neg, n_zero, n_pos; /* Hessian eigenvalue counts */
    double zero_tol;     /* |lambda| below this counts as zero */
    double eval_min, eval_max;
    int predicted_zero;  /* d + 2 */
    /* The cubic test: along each flat direction u (an orthonormal basis
     * of the Hessian's null space), eps(x + s u) - eps(x) at s = +-s0;
     * descent_min is the most negative change found (>= 0: no
     * third-order descent along the null space). */
    double s0, descent_min;
} scm_lintarget_saddle_report;

/* Realise the saddle point (t, c, beta) in dimension d (>= 2) and report
 * stationarity, the Hessian spectrum (central differences of the analytic
 * gradient, zero threshold 1e-6 max |lambda|) and the cubic test with step
 * s0 (> 0). */
scm_status scm_lintarget_saddle_check(double t, double c, const double *beta, long d, double s0,
                                      scm_lintarget_saddle_report *rep, scm_error *err);

/* ---- the trajectory from a small initialisation (two_layer) ---- */

/* The ranges the runs accept (docs/lintarget.md, "Ranges"):
 * - alpha >= SCM_LINTARGET_ALPHA_MIN: the run's tolerances scale as alpha^2
 *   (atol 1e-4 alpha^2, dead_tol 1e-6 alpha^2) and must stay normal doubles;
 *   the growth time's slope 2 against log(1/alpha) was measured down to it;
 * - t_max in (SCM_LINTARGET_T_FIRST, SCM_LINTARGET_T_MAX_MAX]: the record
 *   starts at t = 1e-3; CVODE's first step fails beyond 1e20;
 * - the study's t in [SCM_LINTARGET_T_MIN, SCM_LINTARGET_T_MAXT]: t only
 *   sets units (the dynamics at t is the one at t = 1 with alpha scaled by
 *   t^(-1/4) and time by t^(-1/2)), and above 1e4 it runs faster than the
 *   first recorded time resolves; alpha < t^(1/4) (the initial output
 *   coefficients alpha^2 below the target's sqrt t: a small initialisation);
 * - the study's |c| <= SCM_LINTARGET_C_MAX: the loss at the saddle is a
 *   difference of terms of size c^2 and loses 2 log10 |c| digits. */
#define SCM_LINTARGET_ALPHA_MIN 1e-100
#define SCM_LINTARGET_T_FIRST 1e-3
#define SCM_LINTARGET_T_MAX_MAX 1e20
#define SCM_LINTARGET_T_MIN 1e-100
#define SCM_LINTARGET_T_MAXT 1e4
#define SCM_LINTARGET_C_MAX 1e4

/* One run: K = 2 students, both layers trained (rule two_layer, eta_v =
 * eta), the target of squared norm t, students w_k ~ N(0, I_d) scaled by
 * alpha (init.scale) and v(0) = alpha (1, -1); recorded at n_out
 * log-spaced times from 1e-3 to t_max, stopping when eps < 1e-10 eps(0).
 * res is an scm_traj_result (free it).  SCM_EINVAL (named) for alpha or
 * t_max out of the ranges above, a bad t, d or seed. */
scm_status scm_lintarget_run(double t, double alpha, long d, unsigned long seed, double t_max,
                             int n_out, scm_traj_result *res, scm_error *err);

/* The three phases of a recorded two_layer run of the linear target,
 * detected on the record (times interpolated linearly between points):
 *   alignment   from 0 to t_align, the first time both students point along
 *               +-a to |cos| >= 1 - align_tol (cos_k = R_k1 / sqrt(Q_kk T_11));
 *   growth      from t_grow_start, the first time max_k (Q_kk + v_k^2)
 *               exceeds grow_factor times its value at t = 0, to
 *               t_grow_end, the first time every output coefficient
 *               |v_k| sqrt(Q_kk) reaches (1 - coef_tol) sqrt(T_11);
 *   convergence from t_grow_end to t_conv, the first time
 *               eps <= conv_tol eps(0), with the fitted exponential rate of
 *               eps over its second half (eps ~ exp(-rate t)).
 * A phase whose end is not reached has NaN times.  Also the largest drift
 * of the imbalance b_k = Q_kk - v_k^2 over the record, relative to
 * max_k (Q_kk + v_k^2) at that time (conserved by the flow). */
typedef struct {
    double align_tol, grow_factor, coef_tol, conv_tol;
} scm_lintarget_phase_opts;

/* align_tol 1e-2, grow_factor 10, coef_tol 0.1, conv_tol 1e-8. */
void scm_lintarget_phase_opts_default(scm_lintarget_phase_opts *o);

typedef struct {
    double t_align, t_grow_start, t_grow_end, t_conv, rate;
    double imbalance_drift;
} scm_lintarget_phases;

scm_status scm_lintarget_phases_detect(const scm_model *m, const scm_traj_result *r,
                                       const scm_lintarget_phase_opts *o,
                                       scm_lintarget_phases *ph, scm_error *err);

/* ---- the study of `scm lintarget` (lintarget_study.c) ----
 *
 * For each alpha: one scm_lintarget_run (t, alpha, d, seed, t_max, n_out)
 * and its phases (scm_lintarget_phases_detect on the model of
 * scm_lintarget_model(2, t, v(0) = alpha (1, -1)), the default thresholds);
 * the least-squares lines of the phase times against log(1/alpha); and at
 * each c the saddle check (beta = 0.8, 1.3, d = 3) with the cubic test at
 * s0 = 0.01 and 2 s0: a change that grows about 8-fold is third-order
 * descent. */
#define SCM_LINTARGET_STUDY_MAX 32

typedef struct {
    double t;           /* |a|^2 / d (1) */
    long d;             /* dimension of the random start (1000) */
    unsigned long seed; /* of the random start (1) */
    double t_max;       /* end of each run (200) */
    int n_out;          /* recorded points per run (600) */
    int n_alpha;        /* 0 .. SCM_LINTARGET_STUDY_MAX initial scales in (0, 1) */
    double alpha[SCM_LINTARGET_STUDY_MAX]; /* (1e-1, 1e-2, ..., 1e-6) */
    int n_c;            /* 0 .. SCM_LINTARGET_STUDY_MAX points of the saddle manifold */
    double c[SCM_LINTARGET_STUDY_MAX];     /* (-2.5, -0.4, 0.385, 1.7) */
} scm_lintarget_study_opts;

/* The defaults above (those of `scm lintarget`). */
void scm_lintarget_study_opts_default(scm_lintarget_study_opts *o);

/* The rule the command line adds (lintarget_study.c): every alpha below 1
 * (a small initialisation).  SCM_EINVAL in the words of `scm lintarget`
 * ("--alpha values must be in (0, 1) ..."; the caller adds its prefix). */
scm_status scm_lintarget_study_opts_check(const scm_lintarget_study_opts *o, scm_error *err);

/* One alpha of the study. */
typedef struct {
    double alpha, log_inv_alpha;
    scm_lintarget_phases ph;
    scm_stop_reason stop; /* of the run */
    scm_error run_err;    /* why, when stop == SCM_STOP_FAILED */
    long n_steps;
    double final_eps, final_v[2];
} scm_lintarget_study_row;

/* One c of the saddle manifold. */
typedef struct {
    double c;
    scm_lintarget_saddle_report at_s, at_2s; /* the checks with s0 and 2 s0 */
    double ratio;        /* at_2s.descent_min / at_s.descent_min */
    const char *verdict; /* "strict saddle", "non-strict saddle (cubic descent)", "flat to
                            third order (no descent found)" or "undecided" (static) */
} scm_lintarget_saddle_row;

typedef struct {
    int n_rows; /* alphas done: n_alpha unless an error stopped the study there */
    scm_lintarget_study_row rows[SCM_LINTARGET_STUDY_MAX];
    int n_saddle; /* cs done */
    scm_lintarget_saddle_row saddle[SCM_LINTARGET_STUDY_MAX];
    int n_failed; /* rows whose run failed (stop == SCM_STOP_FAILED): the study goes on */
    int refused;  /* on error: a run was refused (its inputs are invalid) */
    cJSON *json;  /* the document `scm lintarget` writes as PREFIX.json */
    char *phases_csv, *traces_csv; /* PREFIX.phases.csv, PREFIX.traces.csv */
    size_t phases_len, traces_len;
} scm_lintarget_study;

/* Run the study o into s (zeroed first; free it with
 * scm_lintarget_study_free, also after an error).  A run that fails
 * numerically is a row with stop == SCM_STOP_FAILED (counted in n_failed),
 * not an error.  Errors, err saying which alpha or c: SCM_EINVAL for bad
 * options or a refused run (refused = 1), the status of a phase detection
 * or a saddle check, SCM_ENOMEM; s then holds the rows done before (no
 * json or csv). */
scm_status scm_lintarget_study_run(const scm_lintarget_study_opts *o, scm_lintarget_study *s,
                                   scm_error *err);

void scm_lintarget_study_free(scm_lintarget_study *s);

#endif
