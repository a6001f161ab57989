/* hessian.h: the weight-space Hessian of the population loss at a
 * realisation W of (Q, R) in dimension d (MATH.md section 6), in closed
 * form (second derivatives of the pair kernels through the chain rule of
 * the quadratic forms a = |w_k|^2/d, b, c = w_k.w_l/d) and by central
 * differences of the closed-form gradient scm_weights_grad; its
 * eigenvalues (GSL) with counts of negative, zero and positive ones; the
 * smoothness of a point; and the number of zero modes the symmetries of
 * the loss predict.  Derivations in docs/stability.md; the tests that use
 * them (perturbation, the whole analysis) are in stability.h.
 *
 * Nothing here prints, exits or uses global state; GSL's error handler
 * must be switched off (or replaced) by the program. */
#ifndef SCM_HESSIAN_H
#define SCM_HESSIAN_H

#include "scm/flow.h"

/* ---- smoothness ---- */

typedef struct {
    int n_dead;        /* students with Q_kk <= tol * max(1, max diag) */
    int n_par_ss;      /* student pairs with |rho_kl| >= 1 - tol */
    int n_par_st;      /* student-teacher pairs with |R_km| / sqrt(Q_kk T_mm) >= 1 - tol */
    int smooth;        /* 1 if the Hessian exists (no dead student; ReLU only) */
    int closed_form;   /* 1 if the closed-form Hessian can be evaluated */
    char what[256];    /* the first offending neuron(s), for messages */
} scm_stab_smooth;

/* Classify (Q, R) for activation m->act (only ReLU has non-smooth points;
 * erf and linear are always smooth).  tol: e.g. 1e-9 (relative). */
void scm_stab_smoothness(const scm_model *m, const double *Q, const double *R, double tol,
                         scm_stab_smooth *s);

/* ---- zero modes from symmetries ---- */

typedef struct {
    int rank_T;      /* numerical rank of T: the teacher span */
    int p;           /* rank of the students' components outside the teacher span */
    long rotation;   /* orbit of O(d - rank_T): p (d - rank_T) - p (p + 1) / 2 */
    long homogeneity;/* ReLU: sum over groups of n positively parallel students of n - 1 */
    long linear;     /* linear: (K - 1) d (eps depends on sum_k v_k w_k only), else 0 */
    long total;      /* the predicted number of zero eigenvalues of the Hessian */
} scm_stab_zero_modes;

/* The zero modes the symmetries of the loss predict at a critical point
 * (Q, R) realised in dimension d (docs/stability.md): rotations of the
 * complement of the teacher span fixing the teachers, positive
 * homogeneity of ReLU within a group of parallel students, and for linear
 * units every W with the same v^T W.  tol (relative) decides ranks and
 * parallelism.  SCM_EINVAL if d < rank_T + p; SCM_ENOMEM. */
scm_status scm_stab_predict_zero_modes(const scm_model *m, const double *Q, const double *R,
                                       long d, double tol, scm_stab_zero_modes *z);

/* ---- Hessian ---- */

/* The closed-form Hessian evaluates the kernels' second derivatives
 * (scm_kernel_pair2, kernel.h) down to sqrt(ab - c^2) = SCM_STAB_SREL_MIN
 * sqrt(ab); closer to parallel they are reported singular. */
#define SCM_STAB_SREL_MIN 1e-6

/* The Hessian H ((K d) x (K d), row-major, index k d + i) of eps at W
 * (K x d) with teachers Ws (M x d, realising m->T), in closed form.
 * SCM_ESINGULAR (err names the pair) where a ReLU kernel is evaluated at
 * a correlation |rho| > 1 - 1e-12 in sqrt(1 - rho^2) terms, i.e.
 * sqrt(1 - rho^2) < 1e-6 (parallel neurons: the Hessian exists but the
 * closed form does not evaluate; use scm_stab_hessian_fd); SCM_EDEAD at a
 * dead ReLU student; SCM_EINVAL for an activation without second
 * derivatives here; SCM_ENOMEM. */
scm_status scm_stab_hessian(scm_flow *fl, long d, const double *W, const double *Ws, double *H,
                            scm_error *err);

/* The same by central differences of scm_weights_grad with step h (in
 * units of the weight entries; h <= 0: 1e-5 max(1, max |W|)).  Not
 * symmetrised.  Status of scm_weights_grad at the first failing probe. */
scm_status scm_stab_hessian_fd(scm_flow *fl, long d, const double *W, const double *Ws, double h,
                               double *H, scm_error *err);

typedef struct {
    int n, n_neg, n_zero, n_pos;
    double zero_tol;   /* |lambda| <= zero_tol counts as zero: rel_tol * max |lambda| */
    double asym;       /* max |H_ij - H_ji| / max |H_ij| of the input */
} scm_stab_counts;

/* Eigenvalues (ascending, into eval[n]) of the symmetric part of H (n x n)
 * by gsl_eigen_symm, and their counts with zero threshold
 * rel_tol * max |lambda|.  SCM_ENOMEM, SCM_ENAN (non-finite H), SCM_ESOLVER. */
scm_status scm_stab_spectrum(const double *H, int n, double rel_tol, double *eval,
                             scm_stab_counts *c);

#endif
