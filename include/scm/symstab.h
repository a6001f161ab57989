/* symstab.h: the exact spectra of the weight-space Hessian and of the
 * (Q, R) flow's Jacobian at a block-symmetric point, from its symmetry,
 * at a cost independent of K.
 *
 * A point of a block-symmetric ansatz (ansatz.h) is fixed by a product of
 * symmetric groups: the permutations inside each student group, acting
 * together on its paired teacher group ("units": a paired group, an
 * unpaired student group, a teacher group without students).  The
 * Hessian of the population loss commutes with that action and with the
 * rotations of the complement of the teacher span, so it splits into
 * isotypic components, each a small matrix whose size does not depend on
 * the group sizes; every eigenvalue of a component comes with the
 * dimension of its irreducible representation as multiplicity.  The
 * derivation, and which components appear for which shape, are in
 * docs/symmetric-stability.md.
 *
 * Setting: T = I_M, v = v* = 1 (that of blockflow.h and fixedpoint.h),
 * weights realised in dimension d >= M.  Students in the teacher span
 * (Q = R R^T) need only d >= M; students with components outside it (the
 * K = M + 2 fixed points of k1_extra) are handled with K extra "ghost"
 * coordinates and need d >= K + M (the default d).  The eigenvalues are
 * those of scm_stab_hessian (hessian.h) at the same point and d, one for
 * one: sorted and expanded by multiplicity they are its spectrum, K d
 * numbers.
 *
 * Nothing here prints, exits or uses global state; GSL's error handler
 * must be switched off (or replaced) by the program. */
#ifndef SCM_SYMSTAB_H
#define SCM_SYMSTAB_H

#include "scm/ansatz.h"
#include "scm/kernel.h"

/* Why a point was refused (scm_symstab_result.refusal); the scm_error
 * message starts with the same name. */
typedef enum {
    SCM_SYMSTAB_ACCEPTED = 0,
    SCM_SYMSTAB_NOT_BLOCK_SYMMETRIC, /* full (Q, R) off the ansatz beyond sym_tol */
    SCM_SYMSTAB_OUT_OF_SPAN,         /* Q != R R^T beyond span_tol and d < K + M */
    SCM_SYMSTAB_PARALLEL,            /* ReLU: two neurons (anti)parallel, the closed-form
                                        second derivatives diverge (e.g. Q = R = I),
                                        and no limit is taken (opts, or the Jacobian) */
    SCM_SYMSTAB_DEAD,                /* ReLU: a student of zero norm */
    SCM_SYMSTAB_BAD_INPUT            /* non-integral sizes, d < M, an activation without
                                        second derivatives, non-finite scalars */
} scm_symstab_refusal;

/* Name of a refusal ("not block-symmetric", ...). */
const char *scm_symstab_refusal_str(scm_symstab_refusal r);

/* The irreducible representation of one isotypic component. */
typedef enum {
    SCM_SYMSTAB_TRIV = 0, /* [n] of every unit: the ansatz directions */
    SCM_SYMSTAB_STD,      /* [n-1,1] of one unit, dimension n - 1 */
    SCM_SYMSTAB_TWO_ROW,  /* [n-2,2] of one paired unit, dimension n (n - 3) / 2 */
    SCM_SYMSTAB_HOOK,     /* [n-2,1,1] of one paired unit, dimension (n - 1)(n - 2) / 2 */
    SCM_SYMSTAB_STD_STD   /* [n-1,1] x [n'-1,1] of two units, dimension (n - 1)(n' - 1) */
} scm_symstab_irrep;

/* Hessian: teacher span (K M coordinates) or its complement (K (d - M));
 * or the flow's Jacobian in (Q, R) (scm_stab_symmetric_jacobian). */
enum { SCM_SYMSTAB_SPAN = 0, SCM_SYMSTAB_PERP = 1, SCM_SYMSTAB_FLOW = 2 };

typedef struct {
    double value;    /* eigenvalue, in the normalisation of scm_stab_hessian at d
                        (the Jacobian: its real part) */
    double imag;     /* the Jacobian's imaginary part; 0 for the Hessian */
    long mult;       /* its multiplicity: irrep dimension (times d - M in the complement) */
    int part;        /* SCM_SYMSTAB_SPAN, _PERP or _FLOW */
    int irrep;       /* scm_symstab_irrep */
    int unit, unit2; /* the unit(s) the irrep belongs to (-1 if none), see unit_name */
    int zero;        /* 1 if |value| <= zero_tol */
    char cause[96];  /* for a zero: its cause, as far as it is known; else "" */
} scm_symstab_eig;

typedef struct {
    long d;              /* the dimension of the weights; 0: d = K + M (what
                            scm_weights_realise always accepts) */
    double span_tol;     /* in the span if max |Q - R R^T| <= span_tol max(1, max Q_kk) */
    double sym_tol;      /* scm_stab_symmetric_full: refuse if the projection's dev
                            > sym_tol max(1, max |Q|, max |R|) */
    double zero_rel_tol; /* zero: |value| <= zero_rel_tol max |value| */
    int parallel_limit;  /* ReLU, Hessian: 1 evaluates a pair of (anti)parallel neurons
                            (sqrt(ab - c^2) < SCM_STAB_SREL_MIN sqrt(ab)) in its limit,
                            exact at parallel, off by O(sqrt(1 - rho^2)) nearby (see
                            parallel_srel); 0 refuses them (PARALLEL) */
} scm_symstab_opts;

/* Defaults: d = 0 (K + M), span_tol 1e-8, sym_tol 1e-9, zero_rel_tol 1e-9,
 * parallel_limit 1. */
void scm_symstab_opts_default(scm_symstab_opts *o);

typedef struct {
    int n;                /* entries of eig, ascending by value */
    scm_symstab_eig *eig; /* one per eigenvalue of each isotypic block */
    long d;               /* the dimension used */
    long total;           /* sum of mult: K d (the Jacobian: K (K + 1)/2 + K M) */
    long n_neg, n_zero, n_pos; /* with multiplicity (the Jacobian: by real part) */
    double zero_tol;
    int n_units;          /* units of the instance */
    char (*unit_name)[72];/* [n_units]: "anti/tanti (n = 3)", "extra (n = 2)", ... */
    int n_blocks;         /* isotypic blocks solved (non-empty ones) */
    int max_block;        /* the largest block's size: bounded by the number of groups */
    int out_of_span;      /* 1 if Q != R R^T: the ghost coordinates were used */
    long p_out;           /* rank of Q - R R^T (0 in the span) */
    long zero_rotations;  /* zeros the rotations fixing the teachers force:
                             p_out (d - M) - p_out (p_out + 1)/2 */
    int parallel;         /* 1 if some pair was evaluated in the parallel limit */
    int parallel_students;/* 1 if two students were parallel (ReLU homogeneity) */
    double parallel_srel; /* the largest sqrt(1 - rho^2) of those pairs: the size of
                             the relative error of the limit (0: exact) */
    double span_defect;   /* max |Q - R R^T| over the entry classes */
    scm_symstab_refusal refusal; /* set also when the call fails */
} scm_symstab_result;

/* The spectrum of the weight-space Hessian at the ansatz point x of
 * instance in (scalars in the order of scm_ansatz_inst_scalar_name) for
 * activation act (relu, erf or linear), T = I, v = v* = 1, in dimension
 * o->d (NULL: defaults).  res is filled (the caller frees it with
 * scm_symstab_result_free, also after a failure).  Cost: a few small
 * dense eigenproblems per unit and per pair of units, independent of the
 * group sizes; memory likewise.
 *
 * Errors (res->refusal names the reason, err the details):
 *   SCM_EINVAL    non-integral sizes, d < M, an unsupported activation,
 *                 a non-finite scalar, Q - R R^T not PSD (BAD_INPUT);
 *                 Q != R R^T beyond o->span_tol with d < K + M
 *                 (OUT_OF_SPAN);
 *   SCM_ESINGULAR ReLU with two parallel or antiparallel neurons, where
 *                 the closed-form second derivatives of the kernel
 *                 diverge, and o->parallel_limit is 0 (PARALLEL; the
 *                 Hessian exists: with parallel_limit, the default, it is
 *                 evaluated as the limit, e.g. at the global minimum
 *                 Q = R = I);
 *   SCM_EDEAD     a ReLU student of zero norm (DEAD);
 *   SCM_ENOMEM, SCM_ESOLVER (an eigensolver failed, or the multiplicities
 *                 did not add up to K d: an internal inconsistency). */
scm_status scm_stab_symmetric(const scm_ansatz_inst *in, const scm_activation *act,
                              const double *x, const scm_symstab_opts *o,
                              scm_symstab_result *res, scm_error *err);

/* The same from a full state Q (K x K) and R (K x M): projected onto the
 * ansatz (scm_ansatz_project); a point whose deviation from its
 * projection exceeds o->sym_tol (relative) is refused with SCM_EINVAL and
 * refusal NOT_BLOCK_SYMMETRIC.  Cost O(K (K + M)) for the projection. */
scm_status scm_stab_symmetric_full(const scm_ansatz_inst *in, const scm_activation *act,
                                   const double *Q, const double *R,
                                   const scm_symstab_opts *o, scm_symstab_result *res,
                                   scm_error *err);

/* The eigenvalues of the Jacobian of the flow (F_Q, F_R) of flow.h at the
 * same kind of point (T = I, v = v* = 1; no d, and no condition on the
 * span), on symmetric dQ and any dR: K (K + 1)/2 + K M of them, the
 * spectrum of scm_flow_jacobian's matrix.  The blocks are not symmetric:
 * eig[i].value and .imag are the real and imaginary parts (a complex pair
 * is two entries), sorted by real part, then imaginary part; n_pos counts
 * the unstable directions (real part > zero_tol).  Errors as
 * scm_stab_symmetric without OUT_OF_SPAN (SCM_ESINGULAR at parallel ReLU
 * neurons: the dense Jacobian is singular there too). */
scm_status scm_stab_symmetric_jacobian(const scm_ansatz_inst *in, const scm_activation *act,
                                       const double *x, const scm_symstab_opts *o,
                                       scm_symstab_result *res, scm_error *err);

/* The verdict of a Hessian spectrum (scm_stab_symmetric), as the plateau
 * tables name it: "saddle" (a negative eigenvalue: the loss is C^2 at
 * every point accepted, parallel ReLU neurons included, so this is
 * proved), "min_candidate" (none negative, and every zero a rotation
 * outside the teacher span: a strict minimum up to that symmetry, to
 * second order), "degenerate" (none negative, but zeros no symmetry
 * forces, e.g. a continuum of fixed points by norm redistribution between
 * parallel students: at best a non-strict minimum; the cubic terms of
 * the ReLU kernel at parallel neurons decide).  A static string. */
const char *scm_symstab_verdict(const scm_symstab_result *res);

/* The eigenvalues expanded by multiplicity, ascending, into eval[0 ..
 * n-1]; n must be res->total (SCM_EINVAL otherwise).  For comparisons
 * with a dense spectrum. */
scm_status scm_symstab_expand(const scm_symstab_result *res, double *eval, long n);

void scm_symstab_result_free(scm_symstab_result *res);

#endif
