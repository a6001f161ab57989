/* fixedpoint.h: fixed points of the flow inside a block-symmetric ansatz
 * (MATH.md section 5).
 *
 * Enumeration: Newton's method (GSL's hybrids, a Powell hybrid with a
 * finite-difference Jacobian) on the block-level residual of blockflow.h
 * from many starting points (the ansatz file's guess, random draws, and
 * any caller-supplied starts such as the solutions at a neighbouring M);
 * converged solutions are deduplicated, those whose Gram matrix
 * [[T, R^T], [R, Q]] is not PSD are rejected, and each is checked in the
 * full (Q, R) space: the full flow's residual and its distance from the
 * ansatz (invariance), and optionally a Newton polish on F_Q = F_R = 0
 * with the closed-form Jacobian and a minimum-norm least-squares step
 * (LSQR on the sparse Jacobian; a complete orthogonal decomposition where
 * LSQR does not converge), so that a degenerate solution manifold still
 * converges.
 *
 * Continuation: natural-parameter continuation in M with the group sizes
 * as real numbers (K - M fixed), with step halving; a branch that cannot
 * be continued below the minimal step ends at a fold (or leaves the PSD
 * cone), and the M where that happens is reported.
 *
 * Setting: T = I, v = v* = 1, as blockflow.h.  Nothing here prints, exits
 * or relies on GSL's error handler (every GSL status is checked; callers
 * should install their own handler, e.g. gsl_set_error_handler_off()). */
#ifndef SCM_FIXEDPOINT_H
#define SCM_FIXEDPOINT_H

#include "scm/ansatz.h"
#include "scm/blockflow.h"
#include "scm/flow.h"

/* The default full_max_K: above it a point is checked at block level only,
 * so it has no full state and no counted structure (k1 is unknown). */
#define SCM_FP_FULL_MAX_K 400

typedef struct {
    int n_random;        /* random starts per (ansatz, k1) */
    unsigned long seed;  /* of the random starts */
    int max_iter;        /* solver iterations per start */
    double tol;          /* stop when max |F| < tol (block level) */
    double accept;       /* a start converged if max |F| < accept */
    double dedup_tol;    /* solutions closer than this (max norm) are one */
    double psd_tol;      /* reject if the Gram matrix has an eigenvalue < -psd_tol */
    int polish_max_K;    /* full-space polish when K <= this (0: never) */
    int full_max_K;      /* full residual and invariance check when K <= this
                            (default SCM_FP_FULL_MAX_K) */
    int polish_defer;    /* 1: scm_fp_enumerate does not polish; the caller polishes
                            the points it lists with scm_fp_point_polish (e.g. one
                            representative per family of permuted copies) */
    double polish_tol;   /* polish target (<= 0: the roundoff floor of F,
                            max(1e-14, 5e-16 (K + M))); a point already below it
                            is left as it is */
    int deflate;         /* deflated Newton (0: off): a start whose plain solve
                            fails or lands on a known root is solved again, up to
                            this many times, on the deflated residual
                            F(x) prod_r (1 / ||x - r||^2 + 1) over the roots r
                            found so far in the instance (Farrell, Birkisson and
                            Funke 2015, p = 2, shift 1), each result refined on F
                            itself; the plain solves are unchanged, so deflation
                            only adds roots */
    int threads;         /* threads for the independent parts (the plain solve
                            of each start, the checks of each solution, the
                            polish of each point); the results do not depend
                            on it: each part is a pure function of its input,
                            and the parts that depend on each other (the
                            deflated solves, the bookkeeping) run in order */
} scm_fp_opts;

/* Defaults: 200 random starts, seed 1, 300 iterations, tol 1e-14, accept
 * 1e-10, dedup 1e-6, psd_tol 1e-9, polish up to K = 24 (not deferred, to
 * the roundoff floor), full check up to K = 400, no deflation, 1 thread. */
void scm_fp_opts_default(scm_fp_opts *o);
scm_status scm_fp_opts_check(const scm_fp_opts *o, scm_error *err);

typedef struct {
    char ansatz[64];
    double K, M, k1;
    int nsc;
    double *x;           /* the ansatz scalars */
    double eps;          /* loss (block level) */
    double res_block;    /* max |F| of the block residual */
    double jac_smin;     /* smallest singular value of the block Jacobian */
    double jac_smax;     /* largest one */
    double gram_min;     /* smallest eigenvalue of [[T, R^T], [R, Q]] */
    int full;            /* 1 if the full-space checks ran (K <= full_max_K) */
    double res_full;     /* max |F_Q|, |F_R| of the full flow at the ansatz point */
    double inv_dev;      /* max deviation of the full F from its projection */
    double block_vs_full;/* max |projected full F - block F| */
    double eps_full;     /* loss of the full flow at the ansatz point */
    int polished;        /* 1 if the full-space polish ran */
    int polish_status;   /* its scm_status */
    double res_polish;   /* max |F| after the polish */
    double eps_polish;   /* loss after the polish */
    double polish_shift; /* max |change| of a Q or R entry in the polish */
    double *Q, *R;       /* full state (polished if polished), or NULL */
    int hits;            /* starts that converged to this point */
} scm_fp_point;

typedef struct {
    int n, cap;
    scm_fp_point *pt;
    /* what happened to the starts */
    int n_starts, n_converged, n_noprog, n_maxiter, n_domain, n_notpsd;
    int n_deflated;      /* deflated solves run (opts.deflate) */
    int n_deflated_new;  /* distinct solutions they added */
} scm_fp_set;

void scm_fp_set_init(scm_fp_set *s);
void scm_fp_set_free(scm_fp_set *s);

/* Solve F(x) = 0 at block level from x (overwritten with the last
 * iterate).  *res gets max |F| there.  SCM_OK if *res < o->accept; else
 * SCM_ENOCONV (budget spent), SCM_ESINGULAR (no progress: a singular or
 * ill-conditioned Jacobian) or the residual's failure status (the iterate
 * left the domain, e.g. a correlation beyond 1). */
scm_status scm_fp_solve(scm_blockflow *bf, double *x, const scm_fp_opts *o, double *res);

/* Enumerate the fixed points of one instance; solutions are appended to
 * out (so that several instances can share a set).  starts (n_starts
 * vectors of the instance's length) are tried first.  Returns an error
 * only for bad options or no memory; failed starts are counted in out. */
scm_status scm_fp_enumerate(const scm_ansatz *a, const scm_ansatz_inst *in,
                            const scm_activation *act, const scm_fp_opts *o,
                            const double *starts, int n_starts, scm_fp_set *out,
                            scm_error *err);

/* scm_fp_enumerate in two steps: the solves alone (the points appended
 * to out carry x, eps, res_block, gram_min and hits), then the checks of
 * points pt[0 .. np-1] of instance in (block Jacobian conditioning,
 * full-space checks, polish), which are what scm_fp_enumerate adds.  The
 * k1 sweep checks only the points that survive its merging. */
scm_status scm_fp_enumerate_solves(const scm_ansatz *a, const scm_ansatz_inst *in,
                                   const scm_activation *act, const scm_fp_opts *o,
                                   const double *starts, int n_starts, scm_fp_set *out,
                                   scm_error *err);
scm_status scm_fp_check_points(const scm_ansatz_inst *in, const scm_activation *act,
                               const scm_fp_opts *o, scm_fp_point *pt, int np, scm_error *err);

/* The full-space polish of a point that went through the full checks
 * (p->full) but was not polished (polish_defer): runs scm_fp_polish on
 * p->Q, p->R and fills the polish fields, as scm_fp_enumerate would have.
 * A no-op for a point without a full state, already polished, or with
 * K > o->polish_max_K.  Returns
 * an error only for no memory; a polish that does not converge is
 * recorded in p->polish_status. */
scm_status scm_fp_point_polish(scm_fp_point *p, const scm_activation *act,
                               const scm_fp_opts *o, scm_error *err);

/* scm_fp_point_polish of pts[0 .. n-1] on o->threads threads (the same
 * results as one after another). */
scm_status scm_fp_points_polish(scm_fp_point **pts, int n, const scm_activation *act,
                                const scm_fp_opts *o, scm_error *err);

/* Newton on the full F_Q = F_R = 0 from (Q, R) (overwritten), at most
 * max_iter steps; *res gets max |F| at the result.  SCM_OK when the
 * residual fell below tol; SCM_ENOCONV otherwise (Q, R then hold the best
 * iterate); a flow failure status if the start itself is invalid.  The
 * Jacobian of each step is the closed form scm_flow_jacobian (flow.h);
 * where that is not resolved (near-parallel ReLU neurons, a second layer
 * set with scm_flow_set_v) it is central differences of the flow, n = K (K
 * + 1) / 2 + K M pairs of evaluations. */
scm_status scm_fp_polish(scm_flow *fl, double *Q, double *R, int max_iter, double tol,
                         double *res, scm_error *err);

/* The same with central-difference Jacobians and the dense complete
 * orthogonal decomposition only (the method before the closed form and
 * LSQR; kept as the reference of test_fixedpoint and of
 * bench/bench_fixedpoint --only=polish). */
scm_status scm_fp_polish_fd(scm_flow *fl, double *Q, double *R, int max_iter, double tol,
                            double *res, scm_error *err);

/* Linear stability, as the largest real part of the eigenvalues of a
 * central-difference Jacobian (GSL's nonsymmetric eigensolver).
 * Block level: the Jacobian of the block flow dx/dtau = F(x) in the
 * ansatz scalars, which is the full flow's Jacobian restricted to the
 * ansatz (an invariant subspace), so a positive eigenvalue proves a
 * saddle while non-positive ones are only necessary for a minimum.  Full:
 * the Jacobian of (F_Q, F_R) in the upper triangle of Q and all of R
 * (n = K (K + 1) / 2 + K M unknowns; cost O(n) flow evaluations plus an
 * O(n^3) eigensolve).  *re_max gets the largest real part and, if not
 * NULL, *re_min the smallest. */
scm_status scm_fp_block_stability(scm_blockflow *bf, const double *x, double *re_max,
                                  double *re_min);
scm_status scm_fp_full_stability(scm_flow *fl, const double *Q, const double *R,
                                 double *re_max, double *re_min);

/* What the students of a solution do: "anti" students are the
 * anti-aligned ones of scm_model_align (model.h: students paired one to one
 * with teachers by decreasing |cosine|, a tolerance relative to the overlap
 * scale; the one definition every tool uses), "aligned" ones are
 * aligned there, all others are "other": unpaired students (K > M), dead
 * ones, ones with no overlap beyond round-off, and every student of an
 * unspecialised paired group (own and other overlaps equal to
 * SCM_ALIGN_COS_TOL relative).  A point is specialised, every teacher
 * paired with a clearly anti-aligned or aligned student, when
 * n_other == K - M.  At
 * non-integral group sizes (continuation) the counts are NaN.  Also two
 * permutation invariants of the state, tr Q and ||R||_F^2, which with the
 * loss identify a solution found in several ansätze.  SCM_ENOMEM (counts
 * NaN) is the only failure. */
typedef struct {
    double n_anti, n_aligned, n_other;
    double trQ, normR2;
} scm_fp_structure;

scm_status scm_fp_classify(const scm_ansatz_inst *in, const double *x, scm_fp_structure *s);

/* One continued branch: points at increasing M. */
typedef struct {
    int n, cap;
    double *M, *eps, *res, *gram_min;
    double *x;           /* n x nsc scalars */
    int nsc;
    int ended_early;     /* 1 if the branch could not be continued to M_end */
    double M_last;       /* the last M reached */
    char why[600];       /* why it ended early */
} scm_fp_branch;

void scm_fp_branch_free(scm_fp_branch *b);

/* Continue the solution x0 of ansatz a at (K0 = M0 + dK, M0, k1) up to
 * M_end (> M0) with steps of at most h_max (h_max <= 0: max(1, M / 20)),
 * recording every accepted point.  Returns an error only for bad arguments
 * or no memory; a branch that ends early says so in b. */
scm_status scm_fp_continue(const scm_ansatz *a, double dK, double k1, double M0,
                           const double *x0, double M_end, double h_max,
                           const scm_activation *act, const scm_fp_opts *o, scm_fp_branch *b,
                           scm_error *err);

#endif
