/* kernel.h: closed-form Gaussian expectations of an activation g.
 *
 * For (u, v) ~ N(0, [[a, c], [c, b]]) the pair kernel is f(a, b, c) =
 * E[g(u) g(v)]; its partial derivatives df/da, df/db, df/dc drive the flow
 * (MATH.md sections 1-3).  For a zero-mean Gaussian triple (u, w, z) the
 * three-point kernel is I3 = E[g'(u) w g(z)], the building block of the
 * textbook form of the flow.
 *
 * Activations plug in through a const table (scm_activation); the tables are
 * read-only, so the kernels are thread-safe. */
#ifndef SCM_KERNEL_H
#define SCM_KERNEL_H

#include "scm/status.h"

/* Values of the pair kernel and its gradient at one point. */
typedef struct {
    double f, fa, fb, fc;
} scm_pair;

/* Covariance of a Gaussian triple (u, w, z) for I3. */
typedef struct {
    double uu, ww, zz, uw, uz, wz;
} scm_cov3;

typedef struct scm_activation {
    const char *name; /* "relu", "erf", "linear" */
    /* Fill *out at (a, b, c).  Returns SCM_OK; SCM_ENOTPSD when
     * c^2 > ab beyond round-off (|rho| > 1 + 1e-6; smaller excesses, from
     * round-off and integration error, are clamped); SCM_EDEAD (ReLU) when a <= 0 or b <= 0, with out holding the
     * subgradient convention g'(0) = 0: f = fc = 0, fa = fb = 0 (the true
     * df/da diverges like a^(-1/2) there, so the caller must not use it). */
    scm_status (*pair)(double a, double b, double c, scm_pair *out);
    /* I3 = E[g'(u) w g(z)]; same edge conventions as pair. */
    scm_status (*i3)(const scm_cov3 *C, double *out);
    double (*g)(double x);  /* the activation itself */
    double (*dg)(double x); /* its derivative; g'(0) = 0 for ReLU */
} scm_activation;

extern const scm_activation scm_act_relu;   /* g(x) = max(x, 0) */
extern const scm_activation scm_act_erf;    /* g(x) = erf(x / sqrt 2) */
extern const scm_activation scm_act_linear; /* g(x) = x */

/* The table named name, or NULL. */
const scm_activation *scm_activation_find(const char *name);

/* Second derivatives of the pair kernel f(a, b, c) (relu, erf, linear;
 * SCM_EINVAL for another table).  ReLU: SCM_EDEAD when a <= 0 or b <= 0,
 * SCM_ESINGULAR when sqrt(ab - c^2) < srel_min sqrt(ab) (they diverge like
 * 1 / sqrt(ab - c^2), and their closed form loses all accuracy); erf:
 * SCM_ENOTPSD outside the domain.  o is zero on any failure. */
typedef struct {
    double aa, ab, ac, bb, bc, cc;
} scm_pair2;
scm_status scm_kernel_pair2(const scm_activation *act, double srel_min, double a, double b, double c,
                            scm_pair2 *o);

#endif
