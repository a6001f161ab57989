/* blockflow.h: the flow (F_Q, F_R) of MATH.md section 3 restricted to a
 * block-symmetric ansatz and computed at block level, with the group sizes
 * as (real) multiplicities, so that its cost depends on the number of
 * groups only, not on K or M.
 *
 * Every block is stored as (d, o): the block d I + o (J - I) of a square
 * structured block, or the constant block c J with d = o = c.  With n the
 * size of the summed-over group, the product of two such blocks is
 *
 *   (d1, o1)(d2, o2) = (d1 d2 + (n - 1) o1 o2,  d1 o2 + o1 d2 + (n - 2) o1 o2),
 *
 * one formula for all cases: for n x n structured blocks it is the algebra
 * of x I + y (J - I); when either factor is constant (d = o = c) both
 * components equal c times the other factor's row sum (d + (n - 1) o), and
 * for two constants c1 c2 n, i.e. the products c J (p x n) . d J (n x q) =
 * c d n J.  The kernel values (entries of A = d eps / d Q, B = d eps / d R)
 * depend only on an entry's class and the diagonals of its groups.
 *
 * Scope: T = I_M and v = v* = 1 (the setting of the k1 families); any
 * activation of kernel.h.  The result is the class value of F at the
 * ansatz point, i.e. what scm_ansatz_project gives for the full flow. */
#ifndef SCM_BLOCKFLOW_H
#define SCM_BLOCKFLOW_H

#include "scm/ansatz.h"
#include "scm/kernel.h"

typedef struct scm_blockflow scm_blockflow;

/* The block flow of an instance (which must outlive it).  NULL if out of
 * memory. */
scm_blockflow *scm_blockflow_alloc(const scm_ansatz_inst *in, const scm_activation *act);
void scm_blockflow_free(scm_blockflow *bf);
const scm_ansatz_inst *scm_blockflow_inst(const scm_blockflow *bf);

/* F (one value per ansatz scalar, in scalar order) and the loss at scalars
 * x; F or eps may be NULL.  Status as scm_flow_rhs (SCM_ENOTPSD when a
 * correlation exceeds 1, SCM_EDEAD for a zero-norm ReLU student, SCM_ENAN). */
scm_status scm_blockflow_residual(scm_blockflow *bf, const double *x, double *F, double *eps);

/* The smallest eigenvalue of the joint Gram matrix [[T, R^T], [R, Q]] at x,
 * from its block decomposition: within a group the contrast vectors (sum
 * zero) are eigenvectors of every block (2 x 2 per paired group, 1 x 1
 * otherwise), and on the group-mean vectors the matrix reduces to a G x G
 * matrix (G groups).  Cost independent of K and M. */
scm_status scm_blockflow_gram_min_eig(scm_blockflow *bf, const double *x, double *lam_min);

/* Replace the Q scalars of x by those of R R^T + q0 I (a PSD Q with the
 * students in the teacher span, plus q0 outside), keeping the R scalars. */
void scm_blockflow_set_q_from_r(scm_blockflow *bf, double *x, double q0);

#endif
