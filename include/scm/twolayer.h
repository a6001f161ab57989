/* twolayer.h: the population loss of a two-layer network as a function of
 * both layers, W (K x d) and v (K), in weight space: the gradient in v and
 * the Hessian in (W, v).  The loss is scm_flow_loss with the model's
 * second layer replaced by v, so the formulas of MATH.md section 1 hold.
 *
 *   d eps / d v_k = sum_l v_l f(Q_kk, Q_ll, Q_kl) - sum_m v*_m f(Q_kk, T_mm, R_km)
 *
 * Used by the stability of two-layer points (linear target, issue 10).  No
 * global state: the model is copied, never modified. */
#ifndef SCM_TWOLAYER_H
#define SCM_TWOLAYER_H

#include "scm/weights.h"

/* d eps / d v (K entries) at (Q, R) with second layer v (the model's v* and
 * T).  Status as the kernels (SCM_ENOTPSD, SCM_ENAN); a dead ReLU student
 * (Q_kk = 0) has derivative 0. */
scm_status scm_twolayer_grad_v(const scm_model *m, const double *Q, const double *R,
                               const double *v, double *gv);

/* The loss at (W, v), and its gradient: GW (K x d, d eps / d W) and gv
 * (K); any output may be NULL.  Ws realises the model's T. */
scm_status scm_twolayer_grad(const scm_model *m, long d, const double *W, const double *Ws,
                             const double *v, double *eps, double *GW, double *gv);

/* The Hessian of eps in x = (W row-major, then v), n = K d + K unknowns,
 * by central differences of the analytic gradient with step h (relative to
 * the largest |x| entry), symmetrised.  H is n x n row-major. */
scm_status scm_twolayer_hessian(const scm_model *m, long d, const double *W, const double *Ws,
                                const double *v, double h, double *H, scm_error *err);

#endif
