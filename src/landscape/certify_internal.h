/* certify_internal.h (internal): the block-level residual of blockflow.c
 * redone in ball arithmetic (Arb) with forward-mode derivatives, shared by
 * certify_ball.c, which evaluates it, and certify.c, which builds the
 * proofs on it (docs/certify.md). */
#ifndef SCM_CERTIFY_INTERNAL_H
#define SCM_CERTIFY_INTERNAL_H

#include <arb.h>
#include <arb_mat.h>

#include "scm/ansatz.h"
#include "scm/certify.h"
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

/* ---- the Hessian's kernels (certify_ball.c) and its certificate
 * (certify_hess.c) ---- */

/* 0 relu, 1 erf, 2 linear, -1 no ball kernel. */
int scm_cert_kind(const scm_activation *act);

/* A pair kernel f(a, b, c) with its first and second derivatives, balls. */
typedef struct {
    arb_t f, fa, fb, fc, aa, ab, ac, bb, bc, cc;
} scm_cert_pair2;
void scm_cert_pair2_init(scm_cert_pair2 *p);
void scm_cert_pair2_clear(scm_cert_pair2 *p);

/* The kernel of activation kind over the balls (a, b, c), from the same
 * closed forms as the residual differentiated once more in forward mode.
 * mutate as scm_cert_eval_box.  SCM_ESINGULAR if ab - c^2 (erf: with a, b
 * shifted by 1) is not provably positive, SCM_EDEAD if a or b is not;
 * *sin2_min (if not NULL) is lowered to the angle's sin^2 lower bound. */
scm_status scm_cert_kernel2(int kind, const arb_t a, const arb_t b, const arb_t c, slong prec,
                            double mutate, scm_cert_pair2 *out, double *sin2_min);

/* h'(a) and h''(a) of the self term h(a) = f(a, a, a). */
scm_status scm_cert_self2(int kind, const arb_t a, slong prec, arb_t h1, arb_t h2);

/* Rigorous enclosures lam[0..n-1] (balls, ascending) of the eigenvalues
 * of every symmetric matrix in the ball matrix A (n x n row-major, n <= 64;
 * entry (i, j) and (j, i) both hold the symmetric entry): a floating-point
 * eigenbasis V of mid A, Weyl on V^T A V - diag(mu) and Ostrowski on
 * V^T V (certify_real.c).  mutate (TEST ONLY, 0 otherwise) scales the Weyl
 * radius by 1 - mutate.  0, or -1 if the enclosure failed. */
int scm_cert_sym_eig(arb_srcptr A, int n, slong prec, double mutate, arb_ptr lam);

/* An upper bound of |v| as a double (rounded up); certify_ball.c. */
double scm_cert_ubound(const arb_t v);

/* Mark res not certified, with the reason why. */
void scm_cert_refuse(scm_certify_result *res, const char *why);

/* Realisability of the zero in the box (balls, ansatz order) from e's S:
 * fills res->realisable (and res->off_span), or refuses with the reason
 * (res->certified = 0, verdict "not certified"). */
void scm_cert_realisability(const scm_ansatz_inst *in, const scm_cert_eval *e, arb_srcptr box,
                            slong prec, scm_certify_result *res);

/* Strictness of the certified zero in the box x +- r (certify_hess.c):
 * the Hessian's pattern spaces (span and complement) in balls, each
 * proved positive definite with a shift or negative by a Rayleigh
 * quotient.  Sets res->strict, the lambda fields, hess_*, and the verdict
 * (res->verdict, and res->reason when strictness is unproved).  Only
 * SCM_ENOMEM or SCM_ESOLVER are errors. */
scm_status scm_cert_strictness(const scm_ansatz_inst *in, const scm_activation *act,
                               const double *x, double r, const scm_certify_opts *o,
                               scm_certify_result *res);

/* ---- the points of `scm certify` (certify_run.c, certify_table.c) ---- */

/* The built-in ansätze, parsed. */
#define SCM_CERT_MAX_BUILTINS 32
typedef struct {
    int n;
    scm_ansatz *a[SCM_CERT_MAX_BUILTINS];
} scm_cert_builtins;

scm_status scm_cert_builtins_load(scm_cert_builtins *b, scm_error *err);
void scm_cert_builtins_free(scm_cert_builtins *b);
/* The one named name, or NULL. */
const scm_ansatz *scm_cert_builtin_named(const scm_cert_builtins *b, const char *name);

/* The whole file (NUL-terminated, the caller frees it; at most
 * SCM_CERT_FILE_MAX bytes: the shared bounded reader), or NULL with err
 * "certify: cannot read PATH" (or too large, no memory). */
#define SCM_CERT_FILE_MAX ((size_t)1 << 30)
char *scm_cert_read_file(const char *path, scm_error *err);

/* A new zeroed entry at the end of l, or NULL (no memory). */
scm_certify_entry *scm_cert_list_add(scm_certify_list *l);

#endif
