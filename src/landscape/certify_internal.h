/* certify_internal.h (internal): the block-level residual of blockflow.c
 * redone in ball arithmetic (Arb) with forward-mode derivatives, shared by
 * certify_ball.c, which evaluates it, and certify.c, which builds the
 * proofs on it (docs/certify.md). */
#ifndef SCM_CERTIFY_INTERNAL_H
#define SCM_CERTIFY_INTERNAL_H

#include <arb.h>
#include <arb_mat.h>

#include "scm/ansatz.h"
#include "scm/kernel.h"

/* One evaluation over a box of the ansatz scalars. */
typedef struct {
    slong n, ns;      /* scalars, student groups */
    arb_ptr F;        /* n: enclosure of the residual over the box */
    arb_mat_t J;      /* n x n: enclosure of its Jacobian over the box */
    arb_t eps;        /* enclosure of the loss over the box */
    arb_ptr deps;     /* n: enclosure of its gradient over the box */
    arb_ptr Sd, So;   /* ns x ns: the blocks (d, o) of S = A + A^T */
    double sin2_min;  /* a lower bound of (ab - c^2) / (ab) over every
                         pair kernel that is not a self term (1 if none) */
    char why[200];    /* the reason of a failure */
} scm_cert_eval;

/* Allocate and free the fields of *e for instance in. */
void scm_cert_eval_init(scm_cert_eval *e, const scm_ansatz_inst *in);
void scm_cert_eval_clear(scm_cert_eval *e);

/* Evaluate the residual, its Jacobian, the loss and S over the box X (n
 * balls, the scalars in ansatz order) at prec bits.  mutate (test only, 0
 * otherwise) multiplies the ReLU kernel's df/dc by 1 + mutate.  Returns
 * SCM_OK; SCM_EDEAD when a ReLU student's norm is not provably positive;
 * SCM_ESINGULAR when a pair of vectors is not provably away from parallel
 * or anti-parallel over the box (their kernels are not smooth there);
 * SCM_EINVAL for an activation without a ball kernel.  e->why names the
 * pair or the group. */
scm_status scm_cert_eval_box(const scm_ansatz_inst *in, const scm_activation *act, arb_srcptr X,
                             slong prec, double mutate, scm_cert_eval *e);

#endif
