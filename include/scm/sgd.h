/* sgd.h: the finite-learning-rate term of one-pass online SGD (MATH.md
 * section 8; derivation in docs/sgd.md).
 *
 * One fresh sample x ~ N(0, I_d) per step, noisy label y = phi*(x) + xi with
 * xi ~ N(0, sigma2), update w_k <- w_k - (eta / sqrt d) delta_k x with
 *
 *   delta_k = v_k g'(lambda_k) (phi - y) = v_k g'(lambda_k) (phi - phi* - xi).
 *
 * In tau = eta t / d and d -> infinity at fixed eta,
 *
 *   dQ/dtau = F_Q + eta G,   dR/dtau = F_R,   G_kl = E[delta_k delta_l],
 *
 * and G is a sum of four-point expectations
 *
 *   G_kl = v_k v_l ( sum_{i,j} u_i u_j I4(lambda_k, lambda_l, z_i, z_j)
 *                    + sigma2 E[g'(lambda_k) g'(lambda_l)] ),
 *   I4(a, b, c, e) = E[g'(a) g'(b) g(c) g(e)],
 *
 * z = (lambda_1..lambda_K, nu_1..nu_M), u = (v_1..v_K, -v*_1..-v*_M).
 *
 * I4 per activation: erf and linear in closed form; ReLU by an exact
 * reduction (Gaussian integration by parts) to orthant probabilities, of
 * which only the four-variate one needs a 1-D quadrature (docs/sgd.md). */
#ifndef SCM_SGD_H
#define SCM_SGD_H

#include "scm/model.h"

/* Scratch space of the SGD term (the joint covariance, the ReLU quadrature
 * workspace and, allocated on the first ReLU scm_sgd_term, its cache of
 * orthant probabilities: C(K + M, 4) doubles, none above K + M = 72); one
 * per thread. */
typedef struct scm_sgd_work scm_sgd_work;

/* Work for K students and M teachers; NULL on allocation failure. */
scm_sgd_work *scm_sgd_work_alloc(int K, int M);
void scm_sgd_work_free(scm_sgd_work *w);

/* I4 = E[g'(x0) g'(x1) g(x2) g(x3)] for a zero-mean Gaussian x with 4 x 4
 * covariance C (row-major, symmetric, PSD, possibly singular: repeated and
 * parallel arguments are allowed).  w is needed for ReLU (may be NULL for
 * erf and linear).  ReLU: a variable with zero variance gives I4 = 0 (g'(0)
 * = 0, g(0) = 0).  Returns SCM_OK, SCM_EINVAL (non-finite entry, negative
 * variance, ReLU without work), SCM_ENOTPSD (a correlation beyond +-1 by more
 * than 1e-6), SCM_ENAN (the result is not finite) or SCM_ENOCONV (the ReLU
 * quadrature missed 1e-10 relative accuracy).  The ReLU quadrature is GSL's
 * cquad: the program must turn GSL's aborting error handler off (the CLI
 * does), the library does not touch that process-wide state. */
scm_status scm_sgd_i4(const scm_activation *act, const double C[16], double *out,
                      scm_sgd_work *w);

/* The four-variate orthant probability P(x0 > 0, .., x3 > 0) for a zero-mean
 * Gaussian with covariance C (exposed for tests; w is required).  Same
 * statuses as scm_sgd_i4. */
scm_status scm_sgd_orthant4(const double C[16], double *out, scm_sgd_work *w);

/* G (K x K, symmetric) = E[delta_k delta_l] at (Q, R) with student second
 * layer v (K entries, explicit: a rule may train it) and the model's T, v*
 * and activation; sigma2 >= 0 is the label-noise variance.  A dead ReLU
 * student (Q_kk = 0) has a zero row and column.  err (may be NULL) names the
 * problem: SCM_EINVAL (sigma2 negative or not finite, v not finite, w made
 * for other sizes), SCM_ENAN, SCM_ENOTPSD (the Gram matrix of (Q, R, T) is
 * not PSD to 1e-6), SCM_ENOCONV; on failure G is unspecified. */
scm_status scm_sgd_term(const scm_model *m, const double *Q, const double *R, const double *v,
                        double sigma2, double *G, scm_sgd_work *w, scm_error *err);

#endif
