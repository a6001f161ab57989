/* basin.h: where a run is going (issue 12): a certificate that a state
 * lies in the basin of attraction of a strict local minimum of the
 * population loss, so that the slow last approach need not be integrated,
 * and the permutation alignment and weight-space distance that the
 * certificate and the tagging of unconverged runs share (docs/sweeps.md,
 * "Early stop").  Setting: T = I (the teacher of scm compare).
 *
 * The argument (docs/sweeps.md).  The (Q, R) flow is the image of the
 * gradient flow du/dtau = -grad f(u) of f(u) = eps(W) on the weights
 * u = W / sqrt(d) = (R, X), R the components in the teacher span, X the
 * rest (Q = R R^T + X X^T).  A fixed point (Q*, R*) with the students in
 * the teacher span (X* = 0) is one point u* of weight space, fixed by the
 * rotations of the complement; the weight-space distance of a state to it
 * is, exactly,
 *
 *     dist^2 = |R - R*|_F^2 + tr(Q - R R^T)                     (T = I).
 *
 * Along a ray u* + s U (|U| = 1) write phi(s) = f(u* + s U).  If
 * phi''(s) >= c > 0 for all s <= r and every U, then phi'(s) >= c s > 0, so
 * d/dtau |u - u*|^2 = -2 (u - u*) . grad f(u) < 0 in the ball |u - u*| <= r
 * minus its centre: the ball is forward invariant and contains no other
 * critical point, and the flow from any state in it converges to u*
 * (LaSalle).  The radius (ReLU, proved, the default): the Hessian H(u) of
 * f moves on the ball |u - u*| <= r by at most scm_basin_hessian_shift(r),
 * a bound from the closed-form pair Hessians' Lipschitz constants (below);
 * the radius is the largest r at which that is at most (1 - curv_frac) mu
 * (mu the smallest eigenvalue of H(u*), in closed form), so that phi'' >=
 * curv_frac mu on the whole ball.  The listed point is a fixed point only
 * to its residual g = grad f(u*): the distance still decreases wherever it
 * exceeds |g| / (curv_frac mu), so the radius must exceed twice that.  The
 * radius sampled (proved = 0, any activation): phi'' >= curv_frac mu
 * checked at s = r/4, r/2, r along the eigenvectors of the smallest
 * eigenvalues (both signs), random combinations of them and random
 * directions, the radius found divided by safety: a sampled check of the
 * bound, not a proof over every direction.  The run-time test adds the
 * exact condition it can afford at the state itself (the distance
 * decreases there) and the state's own ray.  A saddle (mu <= 0), a point
 * with a dead or a parallel student (no closed-form Hessian, as the global
 * minimum of K > M) or a point outside the teacher span is never
 * certified.
 *
 * Nothing here prints, exits or keeps global state. */
#ifndef SCM_BASIN_H
#define SCM_BASIN_H

#include "scm/flow.h"

/* ---- alignment and distance ---- */

/* The canonical order of a state's students and teachers: students paired
 * one to one with teachers (scm_model_align with dead_q 1e-6), paired
 * students first by increasing cosine with their teacher, then unpaired
 * students by decreasing Q_kk, dead ones last (ties: lower index); teachers
 * in the order of their students, unpaired ones after by index.  Near a
 * specialised fixed point of the block ansatz this lines the groups up
 * (within a group the point is invariant under a joint permutation).
 * Qc, Rc receive the permuted state; sperm (K) and tperm (M), may be NULL,
 * the original indices.  SCM_ENOMEM is the only failure. */
scm_status scm_basin_canonical(const scm_model *m, const double *Q, const double *R, double *Qc,
                               double *Rc, int *sperm, int *tperm);

/* The squared weight-space distance of two canonical states (T = I):
 * |R1 - R2|_F^2 + tr(Q1 - R1 R1^T) + tr(Q2 - R2 R2^T), exact when one of
 * them lies in the teacher span, an upper bound otherwise. */
double scm_basin_dist2(const scm_model *m, const double *Qc1, const double *Rc1,
                       const double *Qc2, const double *Rc2);

/* ---- the certificate of a point ---- */

typedef struct {
    int n_random;      /* random directions (24) */
    int n_eig;         /* eigenvectors of the smallest eigenvalues, both signs (6) */
    unsigned long seed;/* of the random directions (1) */
    double r_max;      /* the largest radius tried (0.05) */
    double r_min;      /* the smallest (1e-6): below it, no certificate */
    double shrink;     /* factor between radii tried (0.5) */
    double curv_frac;  /* phi'' >= curv_frac mu along every sampled ray (0.5) */
    double safety;     /* certified radius = radius found / safety (2) */
    double mu_rel_min; /* mu <= mu_rel_min lambda_max: not a strict minimum (1e-7) */
    int proved;        /* 1 (default): the radius from scm_basin_hessian_shift (ReLU
                          only); 0: from the sampled rays (r_max ... safety above) */
} scm_basin_opts;

void scm_basin_opts_default(scm_basin_opts *o);

typedef struct {
    int ok;            /* 1: certified (radius > 0) */
    double mu, lam_max;/* extreme Hessian eigenvalues in flow units (NaN if not computed) */
    double radius;     /* the certified radius (0 when not ok) */
    double span_defect;/* tr(Q* - R* R*^T) */
    double grad;       /* |grad f(u*)|, flow units (proved radius; NaN otherwise) */
    char why[200];     /* why not ok */
} scm_basin_cert;

/* Certify the fixed point (Q*, R*) of m (T = I): cert->ok and the radius,
 * or why not.  Errors (err filled) only for no memory or T not the
 * identity; a point that cannot be certified is SCM_OK with ok = 0. */
scm_status scm_basin_certify_point(const scm_model *m, const double *Qs, const double *Rs,
                                   const scm_basin_opts *o, scm_basin_cert *cert,
                                   scm_error *err);

/* A bound on max ||H(u) - H(u*)||_2 over |u - u*| <= r for ReLU (T
 * diagonal), H the Hessian of f in flow units and u* the point of (Q*, R*)
 * (only the norms sqrt(Q*_kk) enter): the block row sums (the Schur test)
 * of Lipschitz bounds of the pair Hessians, each pair's vectors moving by
 * at most r.  With a = w_k, b the other vector (a student or a teacher),
 * P = I - a a^T / |a|^2, c = P b: the aa block of the pair is
 * (|c| P + c c^T / |c|) / (2 pi |a|), the ab block of two students
 * E[1{a.x > 0} 1{b.x > 0} x x^T]; docs/sweeps.md ("How rigorous") derives
 * their constants.  INFINITY once r reaches a student's norm. */
double scm_basin_hessian_shift(const scm_model *m, const double *Qs, double r);

/* The exact rate d/dtau of dist^2 to the canonical point (Qc*, Rc*) at a
 * state whose canonical form is (Qc, Rc), given the flow there in the same
 * order (FQc, FRc): tr F_Q - 2 <R*, F_R>. */
double scm_basin_dist2_rate(const scm_model *m, const double *Rcs, const double *FQc,
                            const double *FRc);

/* The run-time test of a state near a certified point (both canonical,
 * the point (Qcs, Rcs) in the teacher span with certificate cert): *ok = 1
 * when the distance is below cert->radius, the distance decreases at the
 * state (scm_basin_dist2_rate < 0, from the flow at the state) and the
 * curvature phi'' along the state's own ray from the point stays above
 * curv_frac mu at s = dist/2, dist, 2 dist (to 0.9 radius): the ray that
 * matters for this run, checked rather than sampled.  *dist gets the
 * distance.  Errors only for no memory. */
scm_status scm_basin_check_state(const scm_model *m, const double *Qcs, const double *Rcs,
                                 const scm_basin_cert *cert, const double *Qc, const double *Rc,
                                 double curv_frac, int *ok, double *dist, scm_error *err);

#endif
