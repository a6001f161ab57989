/* staircase.h: plateaus of a loss curve eps(tau) and their escape times
 * (small-initialisation saddle-to-saddle dynamics; docs/staircase.md).
 *
 * A plateau is a maximal stretch of the recorded trajectory where the loss
 * changes slowly, |d eps / d tau| <= rate_tol * eps (derivative by finite
 * differences between recorded points), lasting at least min_dur in tau.
 * Its loss is the loss at its middle point and its escape time is its end:
 * where the rate crosses rate_tol * eps, interpolating log rate linearly
 * between the midpoints of the last slow and the first fast interval (the
 * last point of the stretch for a stretch that ends the curve).  Near a saddle with unstable rate
 * lambda (d delta / dtau = lambda delta), a departure of initial size
 * ~ alpha makes d eps / d tau ~ alpha^2 e^(2 lambda tau), so the end of the
 * stretch is tau_esc = log(1 / alpha) / lambda + const: the slope of the
 * escape times against log(1 / alpha) is 1 / lambda.
 *
 * Nothing here prints, exits or uses global state. */
#ifndef SCM_STAIRCASE_H
#define SCM_STAIRCASE_H

#include <cjson/cJSON.h>

#include "scm/fplist.h"
#include "scm/rule.h"
#include "scm/status.h"
#include "scm/traj.h"

typedef struct {
    double rate_tol; /* relative loss change per unit tau (1e-4) */
    double min_dur;  /* shortest plateau, in tau (5) */
} scm_stair_opts;

void scm_stair_opts_default(scm_stair_opts *o);

typedef struct {
    long i_start, i_end;     /* recorded points of the stretch */
    double t_start, t_end;   /* t_end: the escape time */
    double eps;              /* loss at the middle of the stretch */
} scm_stair_plateau;

/* Plateaus of the curve (t[i], eps[i]), i < n, t increasing, eps > 0,
 * in order, at most cap of them into pl (*np gets how many were found; a
 * plateau beyond cap is counted but not stored).  SCM_EINVAL (named) for
 * bad options, n < 2, t not increasing or a non-finite value. */
scm_status scm_stair_detect(const double *t, const double *eps, long n, const scm_stair_opts *o,
                            scm_stair_plateau *pl, int cap, int *np, scm_error *err);

/* The index of the loss in fp_eps[n_fp] nearest to eps if within rel_tol
 * (|eps - fp| <= rel_tol * fp), else -1. */
int scm_stair_match(double eps, const double *fp_eps, int n_fp, double rel_tol);

/* Least-squares line y = slope x + intercept through n >= 3 points, with
 * the standard error of the slope.  SCM_EINVAL if n < 3 or the x are all
 * equal. */
scm_status scm_stair_fit(const double *x, const double *y, int n, double *slope,
                         double *intercept, double *slope_se);

/* Newton polish of a plateau state to a fixed point of a rule (for the
 * rules and teachers the fixed-point enumerator does not cover: a trained
 * second layer, T != I, v* != 1).  y (rule->dim entries, the rule's layout,
 * as rule->pack gives) is replaced by a zero of rule->rhs.  The unknowns are
 * a factor of the Gram matrix [[T, R^T], [R, Q]] (the students' rows; the
 * teachers' rows fixed) and v if trained, so every iterate is a valid
 * state, also next to the PSD boundary where equal-student fixed points
 * lie.  Gauss-Newton steps on the central-difference Jacobian, solved by
 * SVD with singular values below 1e-8 s_max dropped (rotations of the
 * factor and continuous families make it rank deficient), halved until
 * |dy/dtau|_2 falls; at most max_iter steps, until max |dy/dtau| <= tol.
 * On success *eps gets the loss, *lam_max the largest real part of the
 * eigenvalues of the rhs's Jacobian in y (one-sided differences where a
 * step would leave the PSD cone): the escape rate.  *resid always gets the
 * final max |dy/dtau| and y the last iterate.  SCM_ENOCONV (named) when
 * the residual stays above tol, SCM_ENOMEM, or the rhs's status (named).
 * fl is a flow of the model the state belongs to. */
scm_status scm_stair_polish(const scm_rule *rule, const scm_rule_params *p, scm_flow *fl,
                            double *y, double tol, int max_iter, double *eps, double *lam_max,
                            double *resid, scm_error *err);

/* The origin (w = 0, v = 0) of two-layer training: a fixed point, the
 * first plateau of a run from a small initialisation of both layers.
 * *eps0 gets its loss, E[phi*^2] / 2, and *lam0 its escape rate: along a
 * unit direction u, |w| and v grow together at the rate h(u), and the run
 * leaves the origin along the best u, so lam0 = max over |u| = 1 of h(u):
 * - g'(0) != 0 (erf, linear): the dynamics is linear there,
 *   h(u) = g'(0) u . E[phi* x], lam0 = g'(0) |E[phi* x]|, with
 *   E[phi* x] = sum_m v*_m E[g'(nu_m)] w*_m (Stein);
 * - ReLU (g'(0) = 0, positively homogeneous): h(u) = E[phi* relu(u . x)],
 *   maximised on the unit sphere of the teachers' span by projected
 *   gradient ascent from every +-w*_m and the v*-weighted sum.
 * T may be singular (a +-ReLU pair).  SCM_EINVAL (named) for another
 * activation, SCM_ENOMEM, SCM_ENOCONV if the ascent does not settle. */
scm_status scm_stair_origin(const scm_model *m, double *eps0, double *lam0, scm_error *err);

/* ---- the study of `scm staircase` (staircase_study.c) ----
 *
 * One run per alpha of rule (gd, or two_layer from v(0) = alpha v) from
 * scm_init_random(alpha, seed) (the same directions, scaled), T = diag(T_diag),
 * v = 1, v* = vstar; tolerances atol <= atol_rel alpha^2 / d, rtol, dead_tol
 * <= 1e-4 alpha^2; recorded at n_out log-spaced times from 1e-2 to t_max,
 * stopping at eps < 1e-10.  Each loss curve (up to its first loss <= 1e-12)
 * is cut into plateaus (scm_stair_detect, at most SCM_STAIR_STUDY_MAX_PLATEAUS
 * kept), each matched to a fixed point: for gd with T = I and v* = 1 to the
 * list of scm_fplist_find (loss within match_tol, lambda from
 * scm_fp_full_stability), else by scm_stair_polish of its middle state
 * (tol 1e-9, 50 steps; losses within 1e-8 are one point; with two_layer a
 * plateau near w = v = 0 at the origin's loss is the origin,
 * scm_stair_origin).  For each fixed point whose escape (the first visit of
 * a run, not the end of its curve) is seen from >= 3 alphas:
 * scm_stair_fit of the escape times against log(1/alpha). */
/* The ranges the study accepts (docs/staircase.md, "Ranges"; anything
 * else is SCM_EINVAL, named): alpha in [SCM_STAIR_ALPHA_MIN,
 * SCM_STAIR_ALPHA_MAX] (the state starts at alpha^2 and the tolerances
 * scale as alpha^2 / d; measured: below 1e-20 the runs fail at the PSD
 * boundary (1e-30, 1e-50) or at t = 0 (1e-150), above 1e3 nothing is a
 * small initialisation and alpha^2 overflows at 1e155); T_diag in
 * [SCM_STAIR_T_MIN, SCM_STAIR_T_MAX], |vstar| <= SCM_STAIR_VSTAR_MAX and,
 * with two_layer, lr_v_ratio in [SCM_STAIR_LR_MIN, SCM_STAIR_LR_MAX] (the
 * flow's time scales stay within what the record from t = 1e-2 resolves);
 * t_max in (SCM_STAIR_T_FIRST, SCM_STAIR_T_MAX_MAX]; rate_tol, min_dur and
 * match_tol > 0 and finite. */
#define SCM_STAIR_ALPHA_MIN 1e-20
#define SCM_STAIR_ALPHA_MAX 1e3
#define SCM_STAIR_T_MIN 1e-6
#define SCM_STAIR_T_MAX 1e6
#define SCM_STAIR_VSTAR_MAX 1e3
#define SCM_STAIR_LR_MIN 1e-6
#define SCM_STAIR_LR_MAX 1e6
#define SCM_STAIR_T_FIRST 1e-2
#define SCM_STAIR_T_MAX_MAX 1e20
#define SCM_STAIR_STUDY_MAX_ALPHA 32
#define SCM_STAIR_STUDY_MAX_PLATEAUS 16
#define SCM_STAIR_STUDY_MAX_FP 64
#define SCM_STAIR_STUDY_MAX_M 200

typedef struct {
    long K, M;                  /* 1 .. SCM_STAIR_STUDY_MAX_M (required: -1 by default) */
    const scm_activation *act;  /* (erf) */
    const scm_rule *rule;       /* &scm_rule_gd (default) or &scm_rule_two_layer */
    scm_rule_params rp;         /* the rule's parameters (lr_v_ratio) */
    double T_diag[SCM_STAIR_STUDY_MAX_M], vstar[SCM_STAIR_STUDY_MAX_M]; /* M used (1) */
    long d, seed;               /* of the initialisation (1000, 1); d >= M */
    long n_out;                 /* recorded points per run (3000) */
    long starts;                /* Newton starts of the enumeration (50) */
    double t_max;               /* run length (1e4) */
    double match_tol;           /* relative loss tolerance of the matching (1e-4) */
    double atol_rel, rtol;      /* the runs' tolerances, above (1e-2, 1e-10) */
    scm_stair_opts so;          /* plateau detection (scm_stair_opts_default) */
    int n_alpha;                /* 1 .. SCM_STAIR_STUDY_MAX_ALPHA */
    double alpha[SCM_STAIR_STUDY_MAX_ALPHA];
    int threads;                /* of the enumeration, 1 .. 64 (1; the list does not depend on it) */
    /* Called with each problem that does not stop the study (a plateau
     * whose polish fails, the origin not computed), in order; NULL: none. */
    void (*note)(void *user, const char *msg);
    void *note_user;
} scm_stair_study_opts;

/* The defaults above; K, M and the alphas must still be set. */
void scm_stair_study_opts_default(scm_stair_study_opts *o);

/* What the command line (and the Python call) names, into o
 * (staircase_args.c): K, M and at least one alpha given, d >= M, the
 * activation actname, the rule rulename (gd or two_layer), nT and nvs
 * (the entries of T_diag and vstar given) 0 or M, the others 1; threads,
 * or the processors online when threads <= 0.  SCM_EINVAL naming the
 * rule broken in the words of `scm staircase` ("--d 2 is below M = 3";
 * the caller adds its prefix). */
scm_status scm_stair_study_opts_named(scm_stair_study_opts *o, const char *actname,
                                      const char *rulename, int nT, int nvs, int threads,
                                      scm_error *err);

/* One alpha: its run, plateaus and their matches. */
typedef struct {
    double alpha;
    scm_traj_result tr;   /* the run (owned by the study) */
    int np;               /* plateaus kept */
    scm_stair_plateau pl[SCM_STAIR_STUDY_MAX_PLATEAUS];
    int match[SCM_STAIR_STUDY_MAX_PLATEAUS];    /* fixed-point index or -1 */
    double resid[SCM_STAIR_STUDY_MAX_PLATEAUS]; /* polish: final max |dy/dtau| (NaN: none) */
    long n_curve;         /* recorded points before a round-off loss (<= tr.n_out) */
} scm_stair_study_row;

/* The escape times of one fixed point against log(1/alpha). */
typedef struct {
    int fp, n; /* the fixed point, the alphas fitted */
    double slope, intercept, se, lambda;
} scm_stair_study_fit;

typedef struct {
    int polish; /* 1: matched by Newton polish (two_layer, T != I or v* != 1) */
    int n_fp;   /* the fixed points matched against (at most SCM_STAIR_STUDY_MAX_FP) */
    double fp_eps[SCM_STAIR_STUDY_MAX_FP], fp_lam[SCM_STAIR_STUDY_MAX_FP];
    const char *fp_name[SCM_STAIR_STUDY_MAX_FP]; /* the ansatz, "origin" or "newton polish" */
    int n_rows; /* n_alpha once the model is set up */
    scm_stair_study_row *rows;
    int n_fits;
    scm_stair_study_fit fits[SCM_STAIR_STUDY_MAX_FP];
    int refused; /* on error: bad input (options, model, initialisation) */
    scm_fplist_point *list; /* the enumerated fixed points (owned) */
    int n_list;
} scm_stair_study;

/* Run the study o into s (zeroed first; free it with scm_stair_study_free,
 * also after an error).  GSL's error handler must be off.  Errors, err
 * saying which alpha: SCM_EINVAL for bad options, a model or an
 * initialisation that cannot be made (refused = 1); a run that fails
 * numerically or whose curve cannot be cut (SCM_ESOLVER, or the status of
 * scm_stair_detect); SCM_ENOMEM. */
scm_status scm_stair_study_run(const scm_stair_study_opts *o, scm_stair_study *s,
                               scm_error *err);

/* The JSON document of `scm staircase -o`: the settings, the fixed points
 * (loss, ansatz, lambda), each run's loss curve and plateaus, the fits.
 * The caller owns it; NULL when out of memory. */
cJSON *scm_stair_study_json(const scm_stair_study_opts *o, const scm_stair_study *s);

/* The table `scm staircase` prints: the settings, per run its plateaus with
 * their matches and its end, the escape-time fits (staircase_text.c).
 * NUL-terminated, malloc'ed (the caller frees); NULL if out of memory. */
char *scm_stair_study_text(const scm_stair_study_opts *o, const scm_stair_study *s);

void scm_stair_study_free(scm_stair_study *s);

#endif
