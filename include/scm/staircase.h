/* staircase.h: plateaus of a loss curve eps(tau) and their escape times
 * (small-initialisation saddle-to-saddle dynamics; docs/staircase.md).
 *
 * A plateau is a maximal stretch of the recorded trajectory where the loss
 * changes slowly, |d eps / d tau| <= rate_tol * eps (derivative by finite
 * differences between recorded points), lasting at least min_dur in tau.
 * Its loss is the loss at its middle point and its escape time is its end:
 * where the rate crosses rate_tol * eps, interpolating log rate linearly
 * between the midpoints of the last slow and the first fast interval (the
 * last point of the stretch for a stretch that ends the curve).  Near a saddle with unstable rate
 * lambda (d delta / dtau = lambda delta), a departure of initial size
 * ~ alpha makes d eps / d tau ~ alpha^2 e^(2 lambda tau), so the end of the
 * stretch is tau_esc = log(1 / alpha) / lambda + const: the slope of the
 * escape times against log(1 / alpha) is 1 / lambda.
 *
 * Nothing here prints, exits or uses global state. */
#ifndef SCM_STAIRCASE_H
#define SCM_STAIRCASE_H

#include "scm/rule.h"
#include "scm/status.h"

typedef struct {
    double rate_tol; /* relative loss change per unit tau (1e-4) */
    double min_dur;  /* shortest plateau, in tau (5) */
} scm_stair_opts;

void scm_stair_opts_default(scm_stair_opts *o);

typedef struct {
    long i_start, i_end;     /* recorded points of the stretch */
    double t_start, t_end;   /* t_end: the escape time */
    double eps;              /* loss at the middle of the stretch */
} scm_stair_plateau;

/* Plateaus of the curve (t[i], eps[i]), i < n, t increasing, eps > 0,
 * in order, at most cap of them into pl (*np gets how many were found; a
 * plateau beyond cap is counted but not stored).  SCM_EINVAL (named) for
 * bad options, n < 2, t not increasing or a non-finite value. */
scm_status scm_stair_detect(const double *t, const double *eps, long n, const scm_stair_opts *o,
                            scm_stair_plateau *pl, int cap, int *np, scm_error *err);

/* The index of the loss in fp_eps[n_fp] nearest to eps if within rel_tol
 * (|eps - fp| <= rel_tol * fp), else -1. */
int scm_stair_match(double eps, const double *fp_eps, int n_fp, double rel_tol);

/* Least-squares line y = slope x + intercept through n >= 3 points, with
 * the standard error of the slope.  SCM_EINVAL if n < 3 or the x are all
 * equal. */
scm_status scm_stair_fit(const double *x, const double *y, int n, double *slope,
                         double *intercept, double *slope_se);

/* Newton polish of a plateau state to a fixed point of a rule (for the
 * rules and teachers the fixed-point enumerator does not cover: a trained
 * second layer, T != I, v* != 1).  y (rule->dim entries, the rule's layout,
 * as rule->pack gives) is replaced by a zero of rule->rhs.  The unknowns are
 * a factor of the Gram matrix [[T, R^T], [R, Q]] (the students' rows; the
 * teachers' rows fixed) and v if trained, so every iterate is a valid
 * state, also next to the PSD boundary where equal-student fixed points
 * lie.  Gauss-Newton steps on the central-difference Jacobian, solved by
 * SVD with singular values below 1e-8 s_max dropped (rotations of the
 * factor and continuous families make it rank deficient), halved until
 * |dy/dtau|_2 falls; at most max_iter steps, until max |dy/dtau| <= tol.
 * On success *eps gets the loss, *lam_max the largest real part of the
 * eigenvalues of the rhs's Jacobian in y (one-sided differences where a
 * step would leave the PSD cone): the escape rate.  *resid always gets the
 * final max |dy/dtau| and y the last iterate.  SCM_ENOCONV (named) when
 * the residual stays above tol, SCM_ENOMEM, or the rhs's status (named).
 * fl is a flow of the model the state belongs to. */
scm_status scm_stair_polish(const scm_rule *rule, const scm_rule_params *p, scm_flow *fl,
                            double *y, double tol, int max_iter, double *eps, double *lam_max,
                            double *resid, scm_error *err);

/* The origin (w = 0, v = 0) of two-layer training: a fixed point, the
 * first plateau of a run from a small initialisation of both layers.
 * *eps0 gets its loss, E[phi*^2] / 2, and *lam0 its escape rate: along a
 * unit direction u, |w| and v grow together at the rate h(u), and the run
 * leaves the origin along the best u, so lam0 = max over |u| = 1 of h(u):
 * - g'(0) != 0 (erf, linear): the dynamics is linear there,
 *   h(u) = g'(0) u . E[phi* x], lam0 = g'(0) |E[phi* x]|, with
 *   E[phi* x] = sum_m v*_m E[g'(nu_m)] w*_m (Stein);
 * - ReLU (g'(0) = 0, positively homogeneous): h(u) = E[phi* relu(u . x)],
 *   maximised on the unit sphere of the teachers' span by projected
 *   gradient ascent from every +-w*_m and the v*-weighted sum.
 * T may be singular (a +-ReLU pair).  SCM_EINVAL (named) for another
 * activation, SCM_ENOMEM, SCM_ENOCONV if the ascent does not settle. */
scm_status scm_stair_origin(const scm_model *m, double *eps0, double *lam0, scm_error *err);

#endif
