/* weights.h: the weight-space side of the model.
 *
 * Realises student weights W (K x d) and teacher weights W* (M x d) with
 * W W^T / d = Q, W W*^T / d = R, W* W*^T / d = T, maps weights back to
 * overlaps, and evaluates the population loss and its gradient with respect
 * to W in closed form.  Used to check the (Q, R) flow against weight-space
 * gradient flow, and by the stability module. */
#ifndef SCM_WEIGHTS_H
#define SCM_WEIGHTS_H

#include "scm/flow.h"

/* Fill W (K x d, row-major) and Ws (M x d) from (Q, R, T).  d must be at
 * least the rank of the joint Gram matrix G = [[T, R^T], [R, Q]] (teachers
 * first, so that W* spans the first coordinates); d >= K + M always works.
 * A G that is not PSD beyond round-off gives SCM_ENOTPSD; a d below the
 * rank gives SCM_EINVAL. */
scm_status scm_weights_realise(const scm_model *m, const double *Q, const double *R, long d,
                               double *W, double *Ws, scm_error *err);

/* Q = W W^T / d, R = W Ws^T / d. */
void scm_weights_overlaps(const scm_model *m, long d, const double *W, const double *Ws,
                          double *Q, double *R);

/* The population loss at W and its gradient G = d eps / d W (K x d):
 * G_k = (1/d) (sum_l S_kl w_l + sum_m B_km w*_m).  eps or G may be NULL. */
scm_status scm_weights_grad(scm_flow *fl, long d, const double *W, const double *Ws,
                            double *eps, double *G);

#endif
