/* flow.h: the population loss eps(Q, R) and the gradient flow of the first
 * layer in order-parameter space (MATH.md section 3):
 *
 *   A = d eps / d Q (all K^2 entries independent),  B = d eps / d R,
 *   S = A + A^T,
 *   F_Q = -(S Q + Q S + B R^T + R B^T),  F_R = -(S R + B T).
 *
 * The matrix form costs O(K (K + M)) kernel evaluations per call; the
 * textbook form (sums of I3 over index triples, O(K^2 (K + M)) of them) is
 * provided too, as an independent check and a benchmark baseline.
 *
 * An scm_flow holds the scratch space of these evaluations; one flow per
 * thread.  All functions return SCM_OK, or SCM_ENOTPSD (|Q_kl| or |R_km|
 * beyond the Cauchy-Schwarz bound) or
 * SCM_ENAN; on failure the outputs are unspecified.
 *
 * A ReLU student with Q_kk = 0 exactly (and all its overlaps 0) is dead:
 * with the subgradient g'(0) = 0 it contributes nothing and its rows of
 * A, B, F_Q and F_R are zero, so it stays dead.  Q_kk = 0 with a non-zero
 * overlap is SCM_ENOTPSD.
 *
 * An overlap beyond the Cauchy-Schwarz bound |c| <= sqrt(ab) by at most
 * SCM_FLOW_CS_SLACK times the largest squared norm of the state (Q_kk,
 * T_mm) is clamped onto the bound: integration error of a small student
 * parallel to another (or to a teacher) lands there.
 *
 * Q must be symmetric: only its upper triangle is read (A is still the
 * derivative with respect to all K^2 entries, as in MATH.md). */
#ifndef SCM_FLOW_H
#define SCM_FLOW_H

#include "scm/model.h"

#define SCM_FLOW_CS_SLACK 1e-6

typedef struct scm_flow scm_flow;

/* The flow keeps a pointer to model, which must outlive it. */
scm_flow *scm_flow_alloc(const scm_model *model);
void scm_flow_free(scm_flow *fl);
const scm_model *scm_flow_model(const scm_flow *fl);

/* Evaluate with second layer v (K entries, kept by pointer, not copied)
 * instead of the model's, until the next call; NULL restores the model's.
 * The rules that train v set it before every evaluation. */
void scm_flow_set_v(scm_flow *fl, const double *v);

/* The population loss eps(Q, R). */
scm_status scm_flow_loss(scm_flow *fl, const double *Q, const double *R, double *eps);

/* eps and its partial derivatives A (K x K) and B (K x M); eps, A or B may
 * be NULL when not wanted. */
scm_status scm_flow_grad(scm_flow *fl, const double *Q, const double *R, double *eps,
                         double *A, double *B);

/* The right-hand side (F_Q, F_R), matrix form; FQ is K x K (symmetric), FR
 * is K x M.  If eps is not NULL the loss is returned too (it comes for
 * free). */
scm_status scm_flow_rhs(scm_flow *fl, const double *Q, const double *R, double *FQ,
                        double *FR, double *eps);

/* scm_flow_rhs and, from the same pair-kernel evaluations, the gradient of
 * the loss in the second layer (the v of scm_flow_set_v), gv_k = d eps /
 * d v_k = sum_l v_l f(Q_kk, Q_ll, Q_kl) - sum_n v*_n f(Q_kk, T_nn, R_kn)
 * (K entries): scm_twolayer_grad_v without evaluating the kernels twice
 * (equal to it up to the Cauchy-Schwarz clamp of scm_flow_grad and the
 * order of a, b in the kernel: round-off).  A dead ReLU student has gv_k = 0. */
scm_status scm_flow_rhs_gv(scm_flow *fl, const double *Q, const double *R, double *FQ,
                           double *FR, double *eps, double *gv);

/* The same right-hand side from the textbook I3 sums. */
scm_status scm_flow_rhs_i3(scm_flow *fl, const double *Q, const double *R, double *FQ,
                           double *FR);

/* The Jacobian-vector product of the flow: (J_Q, J_R), the derivative of
 * (F_Q, F_R) at (Q, R) in the direction (dQ, dR) (dQ symmetric; JQ K x K
 * symmetric, JR K x M), from the closed-form second derivatives of the
 * pair kernels (scm_kernel_pair2).  The linearisation at (Q, R) is cached
 * in the flow: further products at the same point cost O(K^2 (K + M))
 * flops and no kernel evaluation.  Dead students stay dead: their entries
 * of (dQ, dR) are ignored and their rows of (J_Q, J_R) are zero.  Returns
 * SCM_ESINGULAR where the derivative is not resolved in closed form (two
 * live students or a student and a teacher parallel to sqrt(1 - rho^2) <
 * 1e-6, or beyond Cauchy-Schwarz), the status of scm_flow_grad or
 * of the kernels otherwise. */
scm_status scm_flow_jvp(scm_flow *fl, const double *Q, const double *R, const double *dQ,
                        const double *dR, double *JQ, double *JR);

/* A preconditioner for the Newton matrix I - gamma J of an implicit
 * integrator: J with S = A + A^T frozen, so that (dQ, dR) -> -(S dQ + dQ S,
 * S dR), solved in the eigenbasis of S (S = U diag(lam) U^T).  The
 * eigenvalues of the frozen operator (lam_i + lam_j for Q, lam_i for R) are
 * clamped at zero: the preconditioner only damps and its inverse has norm
 * at most 1, also where S has large negative eigenvalues (a dying ReLU
 * student's S_kk grows like Q_kk^(-1/2), of either sign) or J and the
 * frozen operator disagree in sign.  A dead student's rows and columns of
 * S are zero: the identity there.
 *
 * scm_flow_precond_setup: the eigendecomposition of S at (Q, R), kept in
 * the flow (O(K^2 (K + M)) kernel work as scm_flow_grad, plus an O(K^3)
 * symmetric eigensolver); status of scm_flow_grad, SCM_ESOLVER when the
 * eigensolver fails, SCM_EINVAL while scm_flow_set_v is in force.
 * scm_flow_precond_solve: (zQ, zR) solving (1 + gamma (S (+) S)_+) zQ = rQ
 * and (1 + gamma S_+) zR = rR (rQ, zQ K x K symmetric, rR, zR K x M; z may
 * alias r), 6 K x K x max(K, M) products; SCM_EINVAL without a set-up or
 * for gamma < 0. */
scm_status scm_flow_precond_setup(scm_flow *fl, const double *Q, const double *R);
scm_status scm_flow_precond_solve(scm_flow *fl, double gamma, const double *rQ,
                                  const double *rR, double *zQ, double *zR);

/* The Jacobian of (F_Q, F_R) at (Q, R) in closed form: the products of
 * scm_flow_jvp with every unit direction, assembled with the directions'
 * sparsity (a unit direction changes O(K + M) entries of A and B), so a
 * column costs O(K (K + M)) flops after one linearisation (O(K (K + M))
 * second derivatives of the kernels) and the whole matrix O(n K (K + M)).
 * Unknowns and residual are packed alike: the upper triangle of Q row by
 * row (an off-diagonal unknown moves Q_kl and Q_lk together), then R row
 * by row; n = K (K + 1) / 2 + K M, and J (n x n, row-major) gets
 * J[i n + j] = d(F packed)_i / du_j.  A dead student's columns and rows
 * are zero (as in scm_flow_jvp).  Status as scm_flow_jvp (SCM_ESINGULAR
 * near parallel neurons: use difference quotients there), and SCM_EINVAL
 * while scm_flow_set_v is in force (the linearisation uses the model's v). */
scm_status scm_flow_jacobian(scm_flow *fl, const double *Q, const double *R, double *J);

/* Realisable states.  An integrated state is PSD only to the integrator's
 * error, and the loss is a first-order function of that error (its
 * gradient in (Q, R) does not vanish at a minimum: the Gram matrix is on
 * the boundary of the PSD cone there), so the loss of an integrated state
 * near a minimum can be below 0 (docs/sweeps.md, "Reported losses").
 *
 * scm_flow_realisable: Qp = the state with R and T kept and Q raised by the
 * negative part of the Schur complement C = Q - R T^+ R^T (T^+ the
 * pseudo-inverse, eigenvalues below 1e-12 of T's largest dropped): with
 * C = U diag(lam) U^T, Qp = Q - sum_{lam_i < 0} lam_i u_i u_i^T, so that
 * [[T, R^T], [R, Qp]] is PSD (for T positive definite; for a singular T
 * the part of R outside T's range is not checked).  *proj = max(0,
 * -min lam), the size of the projection; with proj = 0 Qp is Q bit for bit.
 * A dead ReLU student (flow.h) is left out of C: its rows stay exactly 0.
 * Qp may be Q.  SCM_ENAN for a non-finite entry, SCM_ENOMEM, SCM_ESOLVER
 * (GSL's eigensolver); O(K^3 + K^2 M^2) flops.
 *
 * scm_flow_loss_realisable: the loss at (Qp, R) (with the second layer of
 * scm_flow_set_v), >= 0: a value below zero by at most
 * SCM_FLOW_LOSS_ROUNDOFF (K + M)^2 max(1, Q_kk, T_mm) is the round-off of
 * the cancelling sum and reported as 0; beyond that SCM_ENOTPSD (only
 * reachable with a singular T).  This is the loss traj.h reports. */
#define SCM_FLOW_LOSS_ROUNDOFF 1e-15
scm_status scm_flow_realisable(const scm_model *m, const double *Q, const double *R, double *Qp,
                               double *proj);
scm_status scm_flow_loss_realisable(scm_flow *fl, const double *Q, const double *R, double *eps,
                                    double *proj);

/* The squared norm of the weight-space gradient in flow units,
 * sum_k |dw_k/dtau|^2 / d = tr(S Q S + 2 S R B^T + B T B^T); along the flow
 * d eps / dtau equals minus this.  It is a sum of cancelling traces, so at
 * a fixed point it is zero only to round-off (it may be ~ -1e-15). */
scm_status scm_flow_grad_norm2(scm_flow *fl, const double *Q, const double *R, double *g2);

#endif
