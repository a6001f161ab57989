/* flow_ext.h: the loss and the gradient flow in extended precision
 * (IEEE binary128, __float128), in the variables (C, R) of a state near a
 * zero-loss minimum, for the tail stage of a trajectory (traj.h, tail_eps;
 * docs/sweeps.md, "Reported losses").
 *
 * Why.  Near the global minimum the loss is a sum of O(1) kernel terms
 * that cancel to eps, and it depends to first order on the Schur
 * complement C = Q - R T^-1 R^T (the part of the students outside the
 * teachers' span), which is of the order of eps itself: in (Q, R) doubles
 * C carries an absolute error of 1e-16, so eps = 1e-12 cannot be known to
 * better than 1e-4.  Held as its own variable, C is known to its relative
 * precision, and with T invertible it obeys (MATH.md section 3, gd rule)
 *
 *     dC/dtau = dQ - dR T^-1 R^T - R T^-1 dR^T = -(S C + C S),
 *
 * exactly: the terms in B and T cancel.  Its rate of change is therefore
 * small with C, and so is its error.  The loss and S, B are evaluated here
 * at Q = C + R T^-1 R^T formed in binary128, so that the kernels' arguments
 * (a b - c^2 ~ eps for a student aligned with a teacher) and the cancelling
 * sum keep ~1e-34 relative precision.
 *
 * Model: any activation of kernel.h, T invertible, the model's fixed v, v*
 * (the gd rule); no dead ReLU student (Q_kk > 0).  Matrices row-major as
 * model.h; C is K x K symmetric. */
#ifndef SCM_FLOW_EXT_H
#define SCM_FLOW_EXT_H

#include "scm/model.h"

typedef struct scm_flow_ext scm_flow_ext;

/* T^-1 in binary128 (Gauss-Jordan with partial pivoting).  NULL with err
 * filled: SCM_ESINGULAR for a singular T (a pivot below 1e-14 max|T|),
 * SCM_ENOMEM.  The model is kept by pointer. */
scm_flow_ext *scm_flow_ext_alloc(const scm_model *m, scm_error *err);
void scm_flow_ext_free(scm_flow_ext *x);

/* C = Q - R T^-1 R^T, formed in binary128 and rounded. */
void scm_flow_ext_schur(scm_flow_ext *x, const double *Q, const double *R, double *C);

/* Q = C + R T^-1 R^T, formed in binary128 and rounded (for output). */
void scm_flow_ext_q(scm_flow_ext *x, const double *C, const double *R, double *Q);

/* The loss eps at Q = C + R T^-1 R^T, R, summed in binary128.  SCM_EDEAD
 * for a ReLU student with Q_kk <= 0, SCM_ENAN for a non-finite result. */
scm_status scm_flow_ext_loss(scm_flow_ext *x, const double *C, const double *R, double *eps);

/* The flow at the same state: dC = -(S C + C S), dR = -(S R + B T), and
 * (dQ may be NULL) dQ = -(S Q + Q S + B R^T + R B^T), each formed in
 * binary128 and rounded; eps (may be NULL) the loss.  Status as
 * scm_flow_ext_loss. */
scm_status scm_flow_ext_rhs(scm_flow_ext *x, const double *C, const double *R, double *dC,
                            double *dR, double *dQ, double *eps);

#endif
