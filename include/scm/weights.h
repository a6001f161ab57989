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
 *
 * G is factorised by a pivoted Cholesky (teacher pivots before student
 * pivots, largest remaining diagonal first); pivots at or below
 * tau = 2e-9 * max diag G count as zero, so a PSD-singular G (students in
 * the teacher span, a singular T, ...) is fine and the round trip
 * scm_weights_overlaps reproduces G to within tau (to round-off when G is
 * exactly singular).  The vectors occupy the first rank(G) coordinates, the
 * others are zero.  When every teacher pivot is above tau, W* spans exactly the
 * first M coordinates and depends on T alone (the same W* for every state).
 *
 * Q must be symmetric (to 1e-12 max diag G); a non-finite entry gives
 * SCM_ENAN.  A G that is not PSD beyond tau gives SCM_ENOTPSD, the message
 * naming the teacher or student row where the factorisation fails; d < 1
 * or a d below the numerical rank gives SCM_EINVAL. */
scm_status scm_weights_realise(const scm_model *m, const double *Q, const double *R, long d,
                               double *W, double *Ws, scm_error *err);

/* Q = W W^T / d, R = W Ws^T / d. */
void scm_weights_overlaps(const scm_model *m, long d, const double *W, const double *Ws,
                          double *Q, double *R);

/* The population loss at W and its gradient G = d eps / d W (K x d):
 * G_k = (1/d) (sum_l S_kl w_l + sum_m B_km w*_m).  eps or G may be NULL.
 * eps is scm_flow_loss at the overlaps of (W, Ws); G is the chain rule of
 * the kernels in weight space, computed without going through A and B.
 * Ws must realise the model's T (e.g. from scm_weights_realise): the
 * teacher norms T_mm are taken from the model, Ws enters through R and the
 * gradient.  So dW/dtau = -d * G is the flow of MATH.md section 3.
 * Status as scm_flow_grad (SCM_EDEAD, SCM_ENOTPSD, SCM_ENAN), SCM_EINVAL
 * for d < 1, SCM_ENOMEM; on failure the outputs are unspecified. */
scm_status scm_weights_grad(scm_flow *fl, long d, const double *W, const double *Ws,
                            double *eps, double *G);

#endif
