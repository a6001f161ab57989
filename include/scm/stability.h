/* stability.h: stability of fixed points of the flow (MATH.md section 6),
 * by two complementary tests (derivations in docs/stability.md):
 *
 *  - spectral: the weight-space Hessian of the population loss at a
 *    realisation W of (Q, R) in dimension d, in closed form (second
 *    derivatives of the pair kernels through the chain rule of the
 *    quadratic forms a = |w_k|^2/d, b, c = w_k.w_l/d) and by central
 *    differences of the closed-form gradient scm_weights_grad; its
 *    eigenvalues (GSL) with counts of negative, zero and positive ones,
 *    and the number of zero modes the symmetries of the loss predict; plus
 *    the largest real part of the eigenvalues of the Jacobian of
 *    (F_Q, F_R) (scm_fp_full_stability);
 *  - perturbation (the literature's protocol): add xi ~ N(0, sigma^2 I) to
 *    W, run N steps of gradient descent W <- W - eta d grad eps(W) (the
 *    time-discretised flow dW/dtau = -d grad eps of weights.h, so N steps
 *    of eta cover tau = N eta), map back to (Q, R) and measure the
 *    distance to the fixed point; then integrate the (Q, R) flow with
 *    CVODE from the perturbed overlaps for a long time and classify where
 *    it ends by its loss.
 *
 * Smoothness (ReLU).  The loss is not differentiable where a student has
 * zero norm (dead).  Where two students are parallel or antiparallel, or a
 * student is (anti)parallel to a teacher, the loss is C^2 in weight space
 * but not C^3 (the kernel's angular part has a |angle|^3 term), so the
 * Hessian exists, but the closed form, whose (a, b, c) second derivatives
 * diverge like 1/sqrt(ab - c^2), cannot be evaluated there: the central
 * differences of the gradient are used instead (the global minimum Q = R
 * = I is such a point).  A dead student leaves the Hessian undefined and
 * the perturbation test decides alone.
 *
 * Nothing here prints, exits or uses global state; GSL's error handler
 * must be switched off (or replaced) by the program. */
#ifndef SCM_STABILITY_H
#define SCM_STABILITY_H

#include "scm/flow.h"
#include "scm/hessian.h"

/* ---- the perturbation test and the whole analysis ---- */

#define SCM_STAB_MAX_SIGMA 8
#define SCM_STAB_N_SMALL 8 /* smallest Hessian eigenvalues reported */

typedef struct {
    long d;              /* dimension of the realisation; <= 0: K + M */
    int n_steps;         /* GD steps (1000) */
    double eta;          /* GD step, in flow time tau (0.01) */
    int n_sigma;         /* number of sigma values */
    double sigma[SCM_STAB_MAX_SIGMA]; /* 1e-4, 1e-3, 1e-2, 1e-1 */
    int n_trials;        /* trials per sigma (10) */
    unsigned long seed;  /* of the perturbations (1) */
    int run_flow;        /* also run the CVODE flow from each perturbed point (1) */
    double t_max;        /* of those runs (1e5) */
    double same_tol;     /* "same point": |eps_end - eps_fp| <= same_tol (1e-8) */
    double global_tol;   /* "global minimum": eps_end < global_tol (1e-10) */
    double near_tol;     /* a flow run that did not settle (t_max, max_steps) with
                            |eps_end - eps_fp| <= near_tol (1e-6) neither returned
                            nor escaped: it makes the row undecided */
    double verdict_sigma_max; /* sigmas above this do not enter the verdict (1e-2) */
    double zero_rel_tol; /* Hessian zero threshold, relative (1e-6) */
    double smooth_tol;   /* parallelism / death threshold, relative (1e-9) */
    int hessian;         /* compute the Hessian (1) */
    int jacobian;        /* compute the (F_Q, F_R) Jacobian's eigenvalues (1) */
    /* progress of the perturbation test (NULL, the default: none): called
     * after each trial, done of total = n_sigma n_trials, in order, from
     * the calling thread */
    void (*progress)(void *ctx, int done, int total);
    void *progress_ctx;
} scm_stab_opts;

void scm_stab_opts_default(scm_stab_opts *o);
/* The defaults but 3 trials at sigma 1e-4, 1e-3, 1e-2 (all in the verdict):
 * the protocol of scm fixed-points --stability, scm compare and
 * data/plateau_stability.csv. */
void scm_stab_opts_three_sigma(scm_stab_opts *o);
scm_status scm_stab_opts_check(const scm_stab_opts *o, scm_error *err);

typedef enum {
    SCM_DEST_SAME,       /* the flow ends at the fixed point's loss (to same_tol) */
    SCM_DEST_GLOBAL,     /* eps < global_tol (and the point is not the global minimum) */
    SCM_DEST_OTHER,      /* another loss */
    SCM_DEST_FAILED      /* the integration failed */
} scm_stab_dest;
const char *scm_stab_dest_str(scm_stab_dest d); /* "same", "global_min", "other", "failed" */

/* DIVERGED: a trial's perturbed state, its GD steps or their loss left the
 * finite numbers (inf or NaN, e.g. a GD step eta far beyond 2 / (d
 * lambda_max)): no verdict is drawn from such a row, and a diverged row in
 * the verdict makes the whole test diverged (never stable or unstable). */
typedef enum {
    SCM_VERDICT_STABLE,
    SCM_VERDICT_UNSTABLE,
    SCM_VERDICT_UNDECIDED,
    SCM_VERDICT_DIVERGED
} scm_verdict;
/* "stable", "unstable", "undecided", "diverged" */
const char *scm_verdict_str(scm_verdict v);

typedef enum {
    SCM_HVERDICT_MIN,          /* no negative eigenvalue, zeros = predicted symmetry modes */
    SCM_HVERDICT_SADDLE,       /* a negative eigenvalue */
    SCM_HVERDICT_DEGENERATE,   /* no negative one, more zeros than symmetries explain */
    SCM_HVERDICT_INCONSISTENT, /* fewer zeros than predicted (not a critical point?) */
    SCM_HVERDICT_NONE,         /* no Hessian (non-smooth point, or not computed) */
    SCM_HVERDICT_NONFINITE     /* the Hessian or its spectrum has inf or NaN: no verdict */
} scm_hverdict;
/* "min", "saddle", "degenerate", "inconsistent", "none", "not_finite" */
const char *scm_hverdict_str(scm_hverdict v);

/* Whether the Hessian's verdict hv agrees with the perturbation test's v:
 * 1 or 0 when hv is min or saddle and v stable or unstable, else -1 (not
 * comparable: undecided, diverged, degenerate, no or a non-finite
 * Hessian). */
int scm_stab_agree(scm_hverdict hv, scm_verdict v);

/* One sigma: the trials' results. */
typedef struct {
    double sigma;
    int n;                   /* trials */
    double dist0_med, dist0_max;    /* max |dQ|, |dR| right after the perturbation */
    double dist_med, dist_max;      /* ... after the GD steps */
    double deps_med, deps_max;      /* eps after GD - eps at the fixed point */
    int n_grew;              /* trials whose distance grew during GD */
    int n_same, n_global, n_other, n_failed; /* flow destinations */
    int n_unsettled;         /* flow runs that ended at t_max or max_steps */
    double other_eps_min, other_eps_max; /* losses of the "other" destinations */
    double flow_eps_med;     /* median final loss of the flow runs */
    scm_verdict verdict;     /* this sigma alone */
} scm_stab_row;

typedef struct {
    double eps;              /* loss of the fixed point */
    double residual;         /* max |F_Q|, |F_R| there */
    long d;
    scm_stab_smooth smooth;
    scm_stab_zero_modes zm;
    int hessian_done;        /* 1 if the Hessian was computed */
    int hessian_closed;      /* 1 if by the closed form (else central differences) */
    double hessian_fd_diff;  /* max |closed - FD| / max |H|, when both were computed */
    scm_stab_counts counts;
    double eval_small[SCM_STAB_N_SMALL]; /* smallest eigenvalues (n_small of them) */
    int n_small;
    double eval_max;
    scm_hverdict hverdict;
    int jacobian_done;
    double jac_re_max, jac_re_min;
    int n_rows;
    scm_stab_row rows[SCM_STAB_MAX_SIGMA];
    scm_verdict verdict;     /* the perturbation test's verdict */
    int agree;               /* 1 if the Hessian verdict (min/saddle) agrees with it,
                                0 if they disagree, -1 if not comparable */
} scm_stab_result;

/* The perturbation test's verdict from res's rows (res->n_rows of them):
 * diverged if a row in the verdict (sigma <= o->verdict_sigma_max)
 * diverged, else unstable if one escaped, stable if all returned, else
 * undecided; and res->agree (scm_stab_agree). */
void scm_stab_verdict_of_rows(const scm_stab_opts *o, scm_stab_result *res);

/* Analyse the fixed point (Q, R) of model m.  Returns SCM_OK when res is
 * meaningful; an error (err filled) for bad options, a state that cannot
 * be realised (not PSD), or no memory. */
scm_status scm_stab_analyse(const scm_model *m, const double *Q, const double *R,
                            const scm_stab_opts *o, scm_stab_result *res, scm_error *err);

#endif
