/* test_kernel.c: the Gaussian kernels of src/kernel.c against values computed
 * another way.
 *
 *   1. f, fa, fb, fc of every activation against adaptive quadrature (GSL
 *      qag), to 1e-10 relative, at many awkward points: irregular values,
 *      |rho| near and at 1, c = 0, negative c, tiny and huge a, b.  The
 *      reference never uses the closed forms: the inner Gaussian variable is
 *      integrated in closed form (a convolution identity), the outer one by
 *      quadrature; derivatives come from Price's theorem (fc = E[g'(u) g'(v)],
 *      fa = 1/2 E[g''(u) g(v)]).  Plus homogeneity / limit identities and a
 *      looser finite-difference check of the derivatives.
 *   2. Seeded Monte Carlo (10^6 samples, 5 standard errors) of f, fc (and fa
 *      for erf) and of I3 with random PSD covariances A A^T.  I3 is also
 *      checked to 1e-10 against Stein's lemma fed with the quadrature values.
 *   3. Identities: symmetry, ReLU f(a,a,a) = a/2, erf asin form, linear.
 *   4. Edge conventions of kernel.h: dead ReLU, non-PSD, clamping, NaN, and
 *      "SCM_OK implies finite outputs" over a sweep of extreme inputs.
 *   5. ReLU near rho = -1 (the series branch): relative accuracy against two
 *      independent quadratures without cancellation, continuity at the switch.
 *   6. scm_activation_find and the g / dg members.
 *
 * How the reference stays exact at |rho| -> 1: the inputs (a, b, c) are exact
 * doubles and the reference is the value at those doubles.  ab - c^2 is
 * formed with error-free products (fma), after an exact power-of-4 scaling,
 * so sqrt(1 - rho^2) keeps full relative precision however close |rho| is to 1.
 */
#include "scm/kernel.h"
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sf_erf.h>

enum { RELU, ERF, LIN, NACT };
static const scm_activation *const ACT[NACT] = {&scm_act_relu, &scm_act_erf, &scm_act_linear};

/* Tolerance of the closed forms against quadrature (the brief's target). */
#define RTOL_QUAD 1e-10
/* The quadrature itself is asked for 1e-13 and must report <= 1e-12. */
#define QUAD_EPSREL 1e-13
#define QUAD_ACCEPT 1e-12
/* Monte Carlo: samples and the number of standard errors allowed. */
#define MC_N 1000000L
#define MC_NSE 5.0

/* ------------------------------------------------------------------ */
/* Bookkeeping: worst relative error against the quadrature reference. */

/* [0]: every comparison; [1]: only those away from |rho| = 1 (g_near1 == 0),
 * where the kernel's condition number is small. */
static double worst_rel[2][NACT];
static char worst_where[2][NACT][200];
static int g_near1;

static void note_rel(int act, double got, double want, const char *what)
{
    double e = (want != 0.0) ? fabs(got - want) / fabs(want) : (got == 0.0 ? 0.0 : INFINITY);
    for (int k = 0; k < (g_near1 ? 1 : 2); k++)
        if (e > worst_rel[k][act] || (isnan(e) && !isnan(worst_rel[k][act]))) {
            worst_rel[k][act] = e;
            snprintf(worst_where[k][act], sizeof worst_where[k][act], "%s", what);
        }
}

/* Compare a kernel output with its quadrature reference. */
static void check_ref(int act, double got, double want, double rtol, const char *what)
{
    note_rel(act, got, want, what);
    CHECK_CLOSE(got, want, rtol, 0.0, what);
}

/* ------------------------------------------------------------------ */
/* Exact-ish 2x2 determinant and correlation (independent of kernel.c). */

/* ab - c^2 to nearly full relative precision: exact scaling by powers of 4,
 * error-free products by fma, and Sterbenz-exact subtraction when ab ~ c^2. */
static double det2(double a, double b, double c)
{
    int ea, eb;
    frexp(a, &ea);
    frexp(b, &eb);
    int ka = ea / 2, kb = eb / 2;
    double as = ldexp(a, -2 * ka), bs = ldexp(b, -2 * kb), cs = ldexp(c, -(ka + kb));
    double p = as * bs, ep = fma(as, bs, -p);
    double q = cs * cs, eq = fma(cs, cs, -q);
    double d = (p - q) + (ep - eq);
    return ldexp(d, 2 * (ka + kb));
}

/* rho = c / sqrt(ab) and r = sqrt(1 - rho^2), r computed from det2 (never
 * from 1 - rho^2); |rho| is set to 1 when the determinant is <= 0. */
static void corr_ref(double a, double b, double c, double *rho, double *r)
{
    int ea, eb;
    frexp(a, &ea);
    frexp(b, &eb);
    int ka = ea / 2, kb = eb / 2;
    double as = ldexp(a, -2 * ka), bs = ldexp(b, -2 * kb), cs = ldexp(c, -(ka + kb));
    double p = as * bs, ep = fma(as, bs, -p);
    double q = cs * cs, eq = fma(cs, cs, -q);
    double d = (p - q) + (ep - eq);
    if (d <= 0.0) {
        *rho = c >= 0.0 ? 1.0 : -1.0;
        *r = 0.0;
        return;
    }
    *rho = cs / (sqrt(as) * sqrt(bs));
    *r = sqrt(d / p);
}

/* ------------------------------------------------------------------ */
/* Quadrature: int_0^XMAX of a smooth integrand, split at fixed points and at
 * the integrand's own scales, each piece by 61-point Gauss-Kronrod (qag).
 * Every integrand carries the weight phi(x), which is exactly 0 in double
 * beyond x = 38.6, so [0, 40] is the whole half-line. */

#define XMAX 40.0
#define QUAD_LIMIT 4000
static gsl_integration_workspace *g_ws;
static double quad_worst;   /* worst reported relative error of a reference */
static int quad_bad;        /* references whose error estimate is too large */
static long quad_count;

typedef double (*fn1)(double x, void *par);

static int cmp_double(const void *x, const void *y)
{
    double u = *(const double *)x, v = *(const double *)y;
    return (u > v) - (u < v);
}

static double quad_interval(fn1 fn, void *par, const double *inner, int ninner, double lo,
                            double hi)
{
    double pts[160];
    int n = 0;
    pts[n++] = lo;
    pts[n++] = hi;
    for (int i = 0; i < ninner && n < 150; i++)
        if (inner[i] > lo && inner[i] < hi)
            pts[n++] = inner[i];
    qsort(pts, (size_t)n, sizeof pts[0], cmp_double);
    gsl_function F = {fn, par};
    double total = 0.0, err = 0.0;
    for (int i = 0; i + 1 < n; i++) {
        if (!(pts[i + 1] > pts[i]))
            continue;
        double res = 0.0, e = 0.0;
        /* A status of GSL_EROUND on a piece that is negligible is harmless:
         * the summed error estimate below is what is judged. */
        (void)gsl_integration_qag(&F, pts[i], pts[i + 1], 0.0, QUAD_EPSREL, QUAD_LIMIT,
                                  GSL_INTEG_GAUSS61, g_ws, &res, &e);
        total += res;
        err += e;
    }
    quad_count++;
    double rel = total != 0.0 ? err / fabs(total) : (err == 0.0 ? 0.0 : INFINITY);
    if (rel > quad_worst)
        quad_worst = rel;
    if (!(rel <= QUAD_ACCEPT)) {
        quad_bad++;
        fprintf(stderr, "quadrature: relative error estimate %.3g on [%g, %g]\n", rel, lo, hi);
    }
    return total;
}

/* Breakpoints for [0, XMAX]: powers of two, and s 2^k around each scale s. */
static double quad_halfline(fn1 fn, void *par, const double *scales, int nscales)
{
    double pts[160];
    int n = 0;
    for (double x = 0.125; x < XMAX; x *= 2.0)
        pts[n++] = x;
    pts[n++] = 3.0;
    pts[n++] = 6.0;
    for (int i = 0; i < nscales; i++) {
        double s = scales[i];
        if (!(s > 0.0) || !isfinite(s))
            continue;
        for (int k = -5; k <= 5; k++) {
            double x = ldexp(s, k);
            if (x > 1e-300 && x < XMAX && n < 150)
                pts[n++] = x;
        }
    }
    return quad_interval(fn, par, pts, n, 0.0, XMAX);
}

static double npdf(double x) { return exp(-0.5 * x * x) / sqrt(2.0 * M_PI); }
/* Phi(x) via erfc: full relative precision in the lower tail. */
static double ncdf(double x) { return 0.5 * erfc(-x / M_SQRT2); }

static double x2phi(double x, void *p)
{
    (void)p;
    return x * x * npdf(x);
}
static double xphi(double x, void *p)
{
    (void)p;
    return x * npdf(x);
}

/* ------------------------------------------------------------------ */
/* ReLU reference.  u = sqrt(a) x, v = sqrt(b) (rho x + r y).
 * E_y[relu(al + be y)] = be psi(al / be), psi(z) = phi(z) + z Phi(z). */

/* psi(z) without cancellation.  For z < -2, with t = -z and the continued
 * fraction of the Mills ratio Q(t)/phi(t) = 1/(t + K), K = 1/(t + 2/(t + 3/(t
 * + ...))): psi(-t) = phi(t) - t Q(t) = phi(t) K / (t + K), all terms positive. */
static double psi(double z)
{
    if (z >= -2.0)
        return npdf(z) + z * ncdf(z);
    double t = -z, T = t;
    for (int n = 400; n >= 2; n--)
        T = t + n / T;
    double K = 1.0 / T;
    return npdf(t) * K / (t + K);
}

static double psi_def_integrand(double w, void *vp)
{
    double z = *(const double *)vp;
    return w * npdf(w - z);
}

typedef struct {
    double rho, r;
} relu_par;

static double relu_inner(double al, double be)
{
    if (be == 0.0)
        return al > 0.0 ? al : 0.0;
    return be * psi(al / be);
}

/* f / sqrt(ab) = int_0^inf x phi(x) E_y relu(rho x + r y) dx */
static double relu_f_integrand(double x, void *vp)
{
    const relu_par *p = vp;
    return x * npdf(x) * relu_inner(p->rho * x, p->r);
}

/* fc = P(u > 0, v > 0) = int_0^inf phi(x) Phi(rho x / r) dx */
static double relu_fc_integrand(double x, void *vp)
{
    const relu_par *p = vp;
    return npdf(x) * ncdf(p->rho * x / p->r);
}

typedef struct {
    double f, fa, fb, fc;
} ref4;

static double relu_fa_ref(double a, double b, double c)
{
    /* fa = 1/2 E[delta(u) relu(v)] = 1/2 p_u(0) E[relu(v) | u = 0],
     * v | u=0 ~ N(0, b r^2): E[relu(v) | u=0] = sqrt(b) r int_0^inf y phi(y). */
    double rho, r;
    corr_ref(a, b, c, &rho, &r);
    if (r == 0.0)
        return 0.0;
    double Iy = quad_halfline(xphi, NULL, NULL, 0);
    return 0.5 / (sqrt(2.0 * M_PI) * sqrt(a)) * sqrt(b) * r * Iy;
}

static ref4 relu_ref(double a, double b, double c)
{
    ref4 R;
    relu_par p;
    corr_ref(a, b, c, &p.rho, &p.r);
    double scale = sqrt(a) * sqrt(b);
    if (p.r == 0.0) {
        double I2 = quad_halfline(x2phi, NULL, NULL, 0);
        R.f = p.rho > 0.0 ? scale * I2 : 0.0;
        R.fc = p.rho > 0.0 ? 0.5 : 0.0;
    } else {
        double sc[2] = {1.0, p.rho != 0.0 ? p.r / fabs(p.rho) : 1.0};
        R.f = scale * quad_halfline(relu_f_integrand, &p, sc, 2);
        R.fc = quad_halfline(relu_fc_integrand, &p, sc, 2);
    }
    R.fa = relu_fa_ref(a, b, c);
    R.fb = relu_fa_ref(b, a, c);
    return R;
}

/* Second, independent ReLU reference for f: polar coordinates.  With
 * (x, y) = R (cos phi, sin phi), E[R^2] = 2 and phi uniform, the positive
 * quadrant of both u and v is an arc of length L = pi - arccos(rho) and
 * f = sqrt(ab)/pi int_0^L sin(t) sin(L - t) dt, a positive integrand (no
 * cancellation at rho -> -1, where L -> 0). */
typedef struct {
    double L;
} polar_par;
static double polar_integrand(double t, void *vp)
{
    const polar_par *p = vp;
    return sin(t) * sin(p->L - t);
}
static double relu_f_polar(double a, double b, double c)
{
    double rho, r;
    corr_ref(a, b, c, &rho, &r);
    polar_par p = {atan2(r, -rho)};
    if (p.L == 0.0)
        return 0.0;
    double mid[3] = {0.25 * p.L, 0.5 * p.L, 0.75 * p.L};
    return sqrt(a) * sqrt(b) / M_PI * quad_interval(polar_integrand, &p, mid, 3, 0.0, p.L);
}

/* ------------------------------------------------------------------ */
/* erf reference, g(x) = erf(x / sqrt 2).  u = sqrt(a) x, v = kx x + beta y
 * with kx = c / sqrt(a), beta^2 = (ab - c^2)/a.  Inner expectations:
 *   E_y erf((al + be y)/sqrt 2)  = erf(al / sqrt(2 (1 + be^2)))
 *   E_y g'(al + be y)           = sqrt(2/pi) exp(-al^2 / (2 (1 + be^2))) / sqrt(1 + be^2)
 * (Gaussian convolutions).  All outer integrands are even in x. */

typedef struct {
    double a, sa, kx, bet2, kap;
} erf_par;

static erf_par erf_setup(double a, double b, double c)
{
    erf_par p;
    p.a = a;
    p.sa = sqrt(a);
    p.kx = c / p.sa;
    double D = det2(a, b, c);
    p.bet2 = D > 0.0 ? D / a : 0.0;
    p.kap = p.kx / sqrt(2.0 * (1.0 + p.bet2));
    return p;
}

static double erf_f_integrand(double x, void *vp)
{
    const erf_par *p = vp;
    return 2.0 * npdf(x) * erf(p->sa * x / M_SQRT2) * erf(p->kap * x);
}

static double erf_fc_integrand(double x, void *vp)
{
    const erf_par *p = vp;
    double w = p->kx * x;
    return 2.0 * npdf(x) * (2.0 / M_PI) * exp(-0.5 * p->a * x * x) *
           exp(-0.5 * w * w / (1.0 + p->bet2)) / sqrt(1.0 + p->bet2);
}

/* fa = 1/2 E[g''(u) g(v)], g''(u) = -u g'(u); the two halves of the even
 * integrand cancel the 1/2. */
static double erf_fa_integrand(double x, void *vp)
{
    const erf_par *p = vp;
    double u = p->sa * x;
    return npdf(x) * (-u) * sqrt(2.0 / M_PI) * exp(-0.5 * u * u) * erf(p->kap * x);
}

static double erf_fa_ref(double a, double b, double c)
{
    erf_par p = erf_setup(a, b, c);
    double sc[3] = {1.0 / p.sa, p.kap != 0.0 ? 1.0 / fabs(p.kap) : 1.0, 1.0};
    return quad_halfline(erf_fa_integrand, &p, sc, 3);
}

static ref4 erf_ref(double a, double b, double c)
{
    ref4 R;
    erf_par p = erf_setup(a, b, c);
    double sc[4] = {1.0 / p.sa, p.kap != 0.0 ? 1.0 / fabs(p.kap) : 1.0,
                    1.0 / sqrt(p.a + p.kx * p.kx / (1.0 + p.bet2)), 1.0};
    R.f = quad_halfline(erf_f_integrand, &p, sc, 4);
    R.fc = quad_halfline(erf_fc_integrand, &p, sc, 4);
    R.fa = erf_fa_ref(a, b, c);
    R.fb = erf_fa_ref(b, a, c);
    return R;
}

/* Linear: E[u v] = sqrt(a) (c / sqrt(a)) E[x^2] = c * 2 int_0^inf x^2 phi. */
static ref4 lin_ref(double a, double b, double c)
{
    (void)a;
    (void)b;
    ref4 R = {c * 2.0 * quad_halfline(x2phi, NULL, NULL, 0), 0.0, 0.0, 1.0};
    return R;
}

static ref4 ref_of(int act, double a, double b, double c)
{
    switch (act) {
    case RELU: return relu_ref(a, b, c);
    case ERF: return erf_ref(a, b, c);
    default: return lin_ref(a, b, c);
    }
}

/* ------------------------------------------------------------------ */
/* 1. Closed forms against quadrature at awkward points. */

typedef struct {
    double a, b, rho;
} pt3;

/* c is formed as rho * sqrt(a) * sqrt(b) in double; the reference is the value
 * at the resulting exact doubles (a, b, c), whatever rho they represent. */
static const pt3 POINTS[] = {
    {2.385, 0.0731, 0.4137},     {0.0731, 2.385, -0.6219},    {1.0, 1.0, 0.0},
    {3.7, 0.21, 0.0},            {0.513, 1.77, -0.2896},      {1.318, 0.947, 0.93},
    {1.318, 0.947, -0.93},       {0.66, 4.21, 0.999},         {0.66, 4.21, -0.999},
    {1.9, 0.37, 0.999999},       {1.9, 0.37, -0.999999},      {1.23, 5.67, 1.0 - 1e-9},
    {1.23, 5.67, -(1.0 - 1e-9)}, {1.0, 1.0, 1.0 - 1e-9},      {1.0, 1.0, -(1.0 - 1e-9)},
    {2.5, 2.5, 1.0},             {2.5, 2.5, -1.0},            {0.25, 4.0, 1.0},
    {0.25, 4.0, -1.0},           {1e-8, 1.7, 0.52},           {1e-8, 1.7, -0.9999},
    {1e-30, 0.83, 0.31},         {1e-30, 1e-30, -0.77},       {2.2, 1e-30, 0.999999},
    {1e8, 0.6, 0.45},            {1e8, 1e8, -0.37},           {1e30, 1.4, 0.68},
    {1e30, 1e30, 0.2},           {1e30, 1e-30, -0.55},        {1e8, 1e-8, 0.9},
    {7.3, 0.019, -0.05},         {1e-3, 1e3, 0.77},           {12.5, 0.8, -0.9999999},
    {1.1, 0.9, 1e-12},           {1.1, 0.9, -1e-7},           {0.42, 0.42, 1.0},
    {1e8, 1e8, 1.0},             {1e8, 1e8, -1.0},            {1e30, 1e30, -1.0},
    {4.0, 4.0, 1.0 - 1e-9},      {0.16, 0.64, -(1.0 - 1e-9)}, {3.3, 0.045, 0.61803},
    {0.0077, 0.93, -0.45},
};
#define NPOINTS ((int)(sizeof POINTS / sizeof POINTS[0]))

static double make_c(double a, double b, double rho)
{
    return rho * (sqrt(a) * sqrt(b));
}

/* Near |rho| = 1 the kernels are ill-conditioned in c (d log fa / d log c ~
 * 1/(1 - rho^2)), but the inputs are exact doubles: a kernel that forms
 * ab - c^2 (or (1+a)(1+b) - c^2) without cancellation meets 1e-10 there too;
 * one that goes through rho = c / (sqrt a sqrt b) and 1 - rho loses
 * eps / (1 - |rho|) and fails these checks at irregular (a, b). */
static void test_quadrature(void)
{
    for (int act = 0; act < NACT; act++) {
        for (int i = 0; i < NPOINTS; i++) {
            double a = POINTS[i].a, b = POINTS[i].b, c = make_c(a, b, POINTS[i].rho);
            g_near1 = fabs(POINTS[i].rho) > 0.999;
            scm_pair p = {NAN, NAN, NAN, NAN};
            scm_status st = ACT[act]->pair(a, b, c, &p);
            char what[200];
            snprintf(what, sizeof what, "%s pair status at (%.17g, %.17g, %.17g)",
                     ACT[act]->name, a, b, c);
            CHECK(st == SCM_OK, "%s: %d", what, (int)st);
            ref4 R = ref_of(act, a, b, c);
            const char *nm[4] = {"f", "fa", "fb", "fc"};
            double got[4] = {p.f, p.fa, p.fb, p.fc}, want[4] = {R.f, R.fa, R.fb, R.fc};
            for (int k = 0; k < 4; k++) {
                snprintf(what, sizeof what, "%s %s vs quadrature at (a=%.17g, b=%.17g, c=%.17g; rho~%.17g)",
                         ACT[act]->name, nm[k], a, b, c, POINTS[i].rho);
                check_ref(act, got[k], want[k], RTOL_QUAD, what);
            }
        }
    }
    g_near1 = 0;
}

/* The two ReLU quadratures (Gaussian with psi, and polar) must agree: this
 * validates the reference itself, in particular psi's continued fraction. */
static void test_reference_selfcheck(void)
{
    for (int i = 0; i < NPOINTS; i++) {
        double a = POINTS[i].a, b = POINTS[i].b, c = make_c(a, b, POINTS[i].rho);
        ref4 R = relu_ref(a, b, c);
        double fp = relu_f_polar(a, b, c);
        CHECK_CLOSE(R.f, fp, 1e-12, 0.0, "relu reference: Gaussian vs polar quadrature");
    }
    /* psi against its defining integral psi(z) = int_0^inf w phi(w - z) dw,
     * on both sides of the z = -2 switch and deep in the tail (the integrand
     * lives on w ~ 1/|z|). */
    const double zs[] = {-0.5, -1.5, -2.0, -2.0000001, -2.5, -3.7, -5.0, -13.0, -37.0};
    for (size_t i = 0; i < sizeof zs / sizeof zs[0]; i++) {
        double z = zs[i], s = 1.0 / fabs(z), pts[16];
        int n = 0;
        for (int k = -4; k <= 6; k++)
            pts[n++] = ldexp(s, k);
        double want = quad_interval(psi_def_integrand, &z, pts, n, 0.0, 30.0);
        char what[96];
        snprintf(what, sizeof what, "reference psi(%g) vs its integral", z);
        CHECK_CLOSE(psi(z), want, 1e-13, 0.0, what);
    }
}

/* ------------------------------------------------------------------ */
/* 1b. Second checks at huge / tiny norms: scaling identities and limits. */

static void check_pair_scaled(int act, double a, double b, double c, double sf, double sa,
                              double sb, double sc_, double rtol, const scm_pair *base,
                              const char *label)
{
    /* want: f -> sf f, fa -> sa fa, fb -> sb fb, fc -> sc fc */
    scm_pair p = {NAN, NAN, NAN, NAN};
    scm_status st = ACT[act]->pair(a, b, c, &p);
    char what[200];
    snprintf(what, sizeof what, "%s %s at (%.17g, %.17g, %.17g)", ACT[act]->name, label, a, b, c);
    CHECK(st == SCM_OK, "%s: status %d", what, (int)st);
    CHECK_CLOSE(p.f, sf * base->f, rtol, 0.0, what);
    CHECK_CLOSE(p.fa, sa * base->fa, rtol, 0.0, what);
    CHECK_CLOSE(p.fb, sb * base->fb, rtol, 0.0, what);
    CHECK_CLOSE(p.fc, sc_ * base->fc, rtol, 0.0, what);
}

static void test_scaling(void)
{
    /* ReLU is positively homogeneous: f(s a, s b, s c) = s f(a, b, c), the
     * gradient is invariant; scaling u alone, f(l^2 a, b, l c) = l f, with
     * fa -> fa / l, fb -> l fb, fc -> fc. */
    for (int i = 0; i < NPOINTS; i++) {
        double a = POINTS[i].a, b = POINTS[i].b, rho = POINTS[i].rho;
        double c = make_c(a, b, rho);
        scm_pair base;
        if (ACT[RELU]->pair(a, b, c, &base) != SCM_OK)
            continue;
        /* exact scalings (powers of 4: sqrt is exact), at every point */
        const int ks[] = {-100, -50, -25, 25, 50, 100};
        for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
            double s = ldexp(1.0, 2 * ks[k]), l = ldexp(1.0, ks[k]);
            double A = ldexp(a, 2 * ks[k]), B = ldexp(b, 2 * ks[k]), C = ldexp(c, 2 * ks[k]);
            if (!(A > DBL_MIN && B > DBL_MIN && isfinite(A) && isfinite(B)))
                continue;
            check_pair_scaled(RELU, A, B, C, s, 1.0, 1.0, 1.0, 1e-15, &base, "homogeneity 4^k");
            double Cu = ldexp(c, ks[k]);
            if (A > DBL_MIN && isfinite(A) && (Cu != 0.0) == (c != 0.0))
                check_pair_scaled(RELU, A, b, Cu, l, 1.0 / l, l, 1.0, 1e-15, &base,
                                  "u-scaling 2^k");
        }
        /* irregular scalings, where rounding of s a does not matter: away from
         * |rho| = 1 (the kernel's condition number grows like 1/(1 - rho^2)) */
        if (fabs(rho) <= 0.95) {
            const double ss[] = {1e-30, 3.7e-9, 7.77e8, 1e30};
            for (size_t k = 0; k < sizeof ss / sizeof ss[0]; k++) {
                double s = ss[k];
                check_pair_scaled(RELU, s * a, s * b, s * c, s, 1.0, 1.0, 1.0, 1e-13, &base,
                                  "homogeneity");
                double l = sqrt(s);
                check_pair_scaled(RELU, l * l * a, b, l * c, l, 1.0 / l, l, 1.0, 1e-13, &base,
                                  "u-scaling");
            }
        }
    }

    /* erf, huge norms: g -> sign, whose kernel is (2/pi) asin(rho), with
     * fc = (2/pi) / sqrt(ab - c^2), fa = -rho / (pi a sqrt(1 - rho^2));
     * corrections are O(1/a). */
    const double Ls[] = {1e16, 1e30, 1e60};
    const double rhos[] = {0.2, -0.37, 0.68, -0.93, 0.0};
    for (size_t i = 0; i < sizeof Ls / sizeof Ls[0]; i++)
        for (size_t j = 0; j < sizeof rhos / sizeof rhos[0]; j++) {
            double a = Ls[i], b = 3.1 * Ls[i], c = make_c(a, b, rhos[j]);
            double rho, r;
            corr_ref(a, b, c, &rho, &r);
            scm_pair p;
            scm_status st = ACT[ERF]->pair(a, b, c, &p);
            CHECK(st == SCM_OK, "erf at a = %g: status %d", a, (int)st);
            CHECK_CLOSE(p.f, 2.0 / M_PI * asin(rho), 1e-13, 0.0, "erf huge-norm limit f");
            CHECK_CLOSE(p.fc, 2.0 / M_PI / sqrt(det2(a, b, c)), 1e-13, 0.0,
                        "erf huge-norm limit fc");
            CHECK_CLOSE(p.fa, -rho / (M_PI * a * r), 1e-13, 0.0, "erf huge-norm limit fa");
            CHECK_CLOSE(p.fb, -rho / (M_PI * b * r), 1e-13, 0.0, "erf huge-norm limit fb");
        }
    /* erf, tiny a: g(u) = sqrt(2/pi) u + O(u^3), so by Stein's lemma
     * f = sqrt(2/pi) c E[g'(v)] = (2/pi) c / sqrt(1 + b), fc = (2/pi)/sqrt(1 + b),
     * fb = -c / (pi (1 + b)^(3/2)), up to O(a) relative. */
    const double as[] = {1e-30, 1e-22};
    const double bs[] = {0.0731, 1.0, 42.0};
    for (size_t i = 0; i < sizeof as / sizeof as[0]; i++)
        for (size_t j = 0; j < sizeof bs / sizeof bs[0]; j++) {
            double a = as[i], b = bs[j], c = make_c(a, b, -0.61);
            scm_pair p;
            scm_status st = ACT[ERF]->pair(a, b, c, &p);
            CHECK(st == SCM_OK, "erf at a = %g: status %d", a, (int)st);
            CHECK_CLOSE(p.f, 2.0 / M_PI * c / sqrt(1.0 + b), 1e-13, 0.0, "erf tiny-a limit f");
            CHECK_CLOSE(p.fc, 2.0 / M_PI / sqrt(1.0 + b), 1e-13, 0.0, "erf tiny-a limit fc");
            CHECK_CLOSE(p.fb, -c / (M_PI * pow(1.0 + b, 1.5)), 1e-13, 0.0,
                        "erf tiny-a limit fb");
        }
}

/* 1c. Derivatives against 4th-order central differences of the kernel's own
 * f (a consistency check, looser: truncation O(h^4), rounding O(eps f / h)). */
static double fd4(int act, int which, double a, double b, double c, double h)
{
    double v[4];
    const double off[4] = {-2.0, -1.0, 1.0, 2.0};
    for (int k = 0; k < 4; k++) {
        double A = a, B = b, C = c;
        if (which == 0)
            A += off[k] * h;
        else if (which == 1)
            B += off[k] * h;
        else
            C += off[k] * h;
        scm_pair p;
        ACT[act]->pair(A, B, C, &p);
        v[k] = p.f;
    }
    return (v[0] - 8.0 * v[1] + 8.0 * v[2] - v[3]) / (12.0 * h);
}

static void test_finite_differences(void)
{
    for (int act = 0; act < NACT; act++)
        for (int i = 0; i < NPOINTS; i++) {
            double a = POINTS[i].a, b = POINTS[i].b, rho = POINTS[i].rho;
            if (fabs(rho) > 0.95 || a < 1e-3 || b < 1e-3 || a > 1e3 || b > 1e3)
                continue; /* f is not smooth at |rho| = 1: stay away */
            double c = make_c(a, b, rho);
            scm_pair p;
            ACT[act]->pair(a, b, c, &p);
            double m = 1e-3 * (1.0 - fabs(rho));
            double h[3] = {m * a, m * b, m * sqrt(a) * sqrt(b)};
            double want[3] = {p.fa, p.fb, p.fc};
            const char *nm[3] = {"fa", "fb", "fc"};
            for (int k = 0; k < 3; k++) {
                double fd = fd4(act, k, a, b, c, h[k]);
                char what[160];
                snprintf(what, sizeof what, "%s %s vs finite differences at (%g, %g, %g)",
                         ACT[act]->name, nm[k], a, b, c);
                CHECK_CLOSE(want[k], fd, 1e-7, 1e-14 * (fabs(p.f) + 1e-300) / h[k], what);
            }
        }
}

/* ------------------------------------------------------------------ */
/* 2. Monte Carlo.  The test's own activations (not the library's tables). */

static double t_g(int act, double x)
{
    switch (act) {
    case RELU: return x > 0.0 ? x : 0.0;
    case ERF: return erf(x / M_SQRT2);
    default: return x;
    }
}
static double t_dg(int act, double x)
{
    switch (act) {
    case RELU: return x > 0.0 ? 1.0 : 0.0;
    case ERF: return sqrt(2.0 / M_PI) * exp(-0.5 * x * x);
    default: return 1.0;
    }
}

typedef struct {
    long n;
    double mean, m2;
} welford;
static void wf_add(welford *w, double x)
{
    w->n++;
    double d = x - w->mean;
    w->mean += d / (double)w->n;
    w->m2 += d * (x - w->mean);
}
static double wf_se(const welford *w)
{
    return sqrt(w->m2 / (double)(w->n - 1) / (double)w->n);
}

static void check_mc(const welford *w, double closed, const char *what)
{
    double se = wf_se(w);
    /* a zero-variance estimator (fc of the linear unit is E[1]) gets an
     * absolute floor of 1e-12: its mean must be exact up to round-off */
    CHECK(fabs(w->mean - closed) <= MC_NSE * se + 1e-12,
          "%s: MC %.10g +- %.3g, closed form %.10g (%.2f se)", what, w->mean, se, closed,
          se > 0.0 ? fabs(w->mean - closed) / se : 0.0);
}

static void test_mc_pair(gsl_rng *rng)
{
    const pt3 pts[] = {{2.385, 0.0731, 0.4137}, {0.9, 1.7, -0.83}, {1.3, 0.6, 0.995}};
    for (int act = 0; act < NACT; act++)
        for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
            double a = pts[i].a, b = pts[i].b, c = make_c(a, b, pts[i].rho);
            double sa = sqrt(a), kx = c / sa, be = sqrt(det2(a, b, c) / a);
            welford wf = {0, 0, 0}, wc = {0, 0, 0}, wa = {0, 0, 0};
            for (long n = 0; n < MC_N; n++) {
                double x = gsl_ran_gaussian_ziggurat(rng, 1.0);
                double y = gsl_ran_gaussian_ziggurat(rng, 1.0);
                double u = sa * x, v = kx * x + be * y;
                wf_add(&wf, t_g(act, u) * t_g(act, v));
                wf_add(&wc, t_dg(act, u) * t_dg(act, v));
                if (act == ERF) /* fa = 1/2 E[g''(u) g(v)], g'' = -u g' */
                    wf_add(&wa, -0.5 * u * t_dg(act, u) * t_g(act, v));
            }
            scm_pair p;
            ACT[act]->pair(a, b, c, &p);
            char what[160];
            snprintf(what, sizeof what, "%s f, MC at (%g, %g, %g)", ACT[act]->name, a, b, c);
            check_mc(&wf, p.f, what);
            snprintf(what, sizeof what, "%s fc = E[g'g'], MC at (%g, %g, %g)", ACT[act]->name, a,
                     b, c);
            check_mc(&wc, p.fc, what);
            if (act == ERF) {
                snprintf(what, sizeof what, "erf fa = E[g''g]/2, MC at (%g, %g, %g)", a, b, c);
                check_mc(&wa, p.fa, what);
            }
        }
}

/* Random PSD covariance C = A A^T; (u, w, z) = A (x1, x2, x3). */
static void random_cov(gsl_rng *rng, double A[3][3], scm_cov3 *C)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            A[i][j] = gsl_ran_gaussian(rng, 1.0);
    double G[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            G[i][j] = A[i][0] * A[j][0] + A[i][1] * A[j][1] + A[i][2] * A[j][2];
    /* order: u = 0, w = 1, z = 2 */
    *C = (scm_cov3){G[0][0], G[1][1], G[2][2], G[0][1], G[0][2], G[1][2]};
}

static void test_mc_i3(gsl_rng *rng)
{
    for (int act = 0; act < NACT; act++)
        for (int m = 0; m < 3; m++) {
            double A[3][3];
            scm_cov3 C;
            random_cov(rng, A, &C);
            double out = NAN;
            scm_status st = ACT[act]->i3(&C, &out);
            CHECK(st == SCM_OK, "%s i3 status %d", ACT[act]->name, (int)st);
            welford w = {0, 0, 0};
            for (long n = 0; n < MC_N; n++) {
                double x[3];
                for (int k = 0; k < 3; k++)
                    x[k] = gsl_ran_gaussian_ziggurat(rng, 1.0);
                double u = A[0][0] * x[0] + A[0][1] * x[1] + A[0][2] * x[2];
                double ww = A[1][0] * x[0] + A[1][1] * x[1] + A[1][2] * x[2];
                double z = A[2][0] * x[0] + A[2][1] * x[1] + A[2][2] * x[2];
                wf_add(&w, t_dg(act, u) * ww * t_g(act, z));
            }
            char what[200];
            snprintf(what, sizeof what,
                     "%s I3 MC, C = {uu %g, ww %g, zz %g, uw %g, uz %g, wz %g}", ACT[act]->name,
                     C.uu, C.ww, C.zz, C.uw, C.uz, C.wz);
            check_mc(&w, out, what);
        }
}

/* I3 to 1e-10 via Stein's lemma on w, fed with the quadrature values:
 * E[g'(u) w g(z)] = C_uw E[g''(u) g(z)] + C_wz E[g'(u) g'(z)]
 *                 = C_uw 2 fa(uu, zz, uz) + C_wz fc(uu, zz, uz).
 * The two terms may cancel: the tolerance is relative to their magnitudes. */
static void test_i3_stein(gsl_rng *rng)
{
    for (int act = 0; act < NACT; act++)
        for (int m = 0; m < 12; m++) {
            double A[3][3];
            scm_cov3 C;
            random_cov(rng, A, &C);
            if (m == 10) /* w = u: E[g'(u) u g(z)] */
                C = (scm_cov3){1.7, 1.7, 0.6, 1.7, -0.55, -0.55};
            if (m == 11) /* rank 2, w independent of u */
                C = (scm_cov3){0.8, 2.2, 1.3, 0.0, 0.4, 1.1};
            ref4 R = ref_of(act, C.uu, C.zz, C.uz);
            double t1 = C.uw * 2.0 * R.fa, t2 = C.wz * R.fc;
            double out = NAN;
            scm_status st = ACT[act]->i3(&C, &out);
            char what[200];
            snprintf(what, sizeof what,
                     "%s I3 vs Stein+quadrature, C = {uu %g, ww %g, zz %g, uw %g, uz %g, wz %g}",
                     ACT[act]->name, C.uu, C.ww, C.zz, C.uw, C.uz, C.wz);
            CHECK(st == SCM_OK, "%s: status %d", what, (int)st);
            note_rel(act, out, t1 + t2, what);
            CHECK_CLOSE(out, t1 + t2, 0.0, RTOL_QUAD * (fabs(t1) + fabs(t2)), what);
        }
}

/* ------------------------------------------------------------------ */
/* 3. Identities. */

static void test_identities(void)
{
    /* symmetry: f(a,b,c) = f(b,a,c), fa(a,b,c) = fb(b,a,c) */
    for (int act = 0; act < NACT; act++)
        for (int i = 0; i < NPOINTS; i++) {
            double a = POINTS[i].a, b = POINTS[i].b, c = make_c(a, b, POINTS[i].rho);
            scm_pair p, q;
            ACT[act]->pair(a, b, c, &p);
            ACT[act]->pair(b, a, c, &q);
            char what[160];
            snprintf(what, sizeof what, "%s symmetry at (%g, %g, %g)", ACT[act]->name, a, b, c);
            CHECK_CLOSE(q.f, p.f, 4e-16, 0.0, what);
            CHECK_CLOSE(q.fb, p.fa, 4e-16, 0.0, what);
            CHECK_CLOSE(q.fa, p.fb, 4e-16, 0.0, what);
            CHECK_CLOSE(q.fc, p.fc, 4e-16, 0.0, what);
        }

    /* ReLU on the diagonal: u = v, f = E[relu(u)^2] = a/2, fc = P(u > 0) = 1/2,
     * and fa = fb = 0 (sqrt(ab - c^2) = 0 exactly). */
    const double diag[] = {1e-300, 1e-30, 1e-8, 0.0731, 0.42, 0.5, 0.7, 1.0, 1.3,
                           2.385, 3.0, 7.3, 12.5, 1e8, 1e30, 1e300};
    for (size_t i = 0; i < sizeof diag / sizeof diag[0]; i++) {
        double a = diag[i];
        scm_pair p;
        scm_status st = ACT[RELU]->pair(a, a, a, &p);
        char what[96];
        snprintf(what, sizeof what, "relu f(a,a,a) = a/2 at a = %.17g", a);
        CHECK(st == SCM_OK, "%s: status %d", what, (int)st);
        CHECK_CLOSE(p.f, a / 2.0, 1e-15, 0.0, what);
        CHECK_CLOSE(p.fc, 0.5, 1e-15, 0.0, what);
        /* the true value is exactly 0; allow what an exact ab - c^2 = 0 can
         * leave after one rounding (|rho - 1| ~ 1e-16 -> sqrt ~ 1e-8) scaled
         * down to nothing: 1e-15 absolute */
        CHECK_CLOSE(p.fa, 0.0, 0.0, 1e-15, what);
        CHECK_CLOSE(p.fb, 0.0, 0.0, 1e-15, what);
    }

    /* erf: closed form vs the arcsine form of MATH.md */
    for (int i = 0; i < NPOINTS; i++) {
        double a = POINTS[i].a, b = POINTS[i].b, rho = POINTS[i].rho;
        if (fabs(rho) > 0.999 || a > 1e8 || b > 1e8)
            continue; /* asin is ill-conditioned at +-1; (1+a)(1+b) rounds at large a */
        double c = make_c(a, b, rho);
        scm_pair p;
        ACT[ERF]->pair(a, b, c, &p);
        CHECK_CLOSE(p.f, 2.0 / M_PI * asin(c / sqrt((1.0 + a) * (1.0 + b))), 1e-14, 0.0,
                    "erf f vs (2/pi) asin(c / sqrt((1+a)(1+b)))");
    }

    /* linear: f = c, fc = 1, fa = fb = 0 exactly */
    for (int i = 0; i < NPOINTS; i++) {
        double a = POINTS[i].a, b = POINTS[i].b, c = make_c(a, b, POINTS[i].rho);
        scm_pair p;
        ACT[LIN]->pair(a, b, c, &p);
        CHECK(p.f == c && p.fc == 1.0 && p.fa == 0.0 && p.fb == 0.0,
              "linear at (%g, %g, %g): f %.17g fa %g fb %g fc %.17g", a, b, c, p.f, p.fa, p.fb,
              p.fc);
    }
}

/* ------------------------------------------------------------------ */
/* 4. Edge conventions of kernel.h. */

static void test_edges(void)
{
    /* dead ReLU: a <= 0 or b <= 0 -> SCM_EDEAD, out all zeros */
    const double nonpos[] = {0.0, -0.0, -1e-300, -1.0, -INFINITY};
    for (size_t i = 0; i < sizeof nonpos / sizeof nonpos[0]; i++)
        for (int side = 0; side < 3; side++) {
            double a = side == 1 ? 2.385 : nonpos[i], b = side == 0 ? 0.0731 : nonpos[i];
            const double cs[] = {0.0, 0.3};
            for (int k = 0; k < 2; k++) {
                scm_pair p = {123.0, 123.0, 123.0, 123.0};
                scm_status st = ACT[RELU]->pair(a, b, cs[k], &p);
                CHECK(st == SCM_EDEAD && p.f == 0.0 && p.fa == 0.0 && p.fb == 0.0 && p.fc == 0.0,
                      "relu dead (%g, %g, %g): status %d, out %g %g %g %g", a, b, cs[k], (int)st,
                      p.f, p.fa, p.fb, p.fc);
            }
        }

    /* |rho| > 1 + 1e-6 -> SCM_ENOTPSD, all activations */
    const double ab[][2] = {{1.0, 1.0}, {2.385, 0.0731}, {1e8, 0.6}, {1e-8, 3.0}, {1e30, 1e-30}};
    const double bad[] = {1.0 + 2e-6, -(1.0 + 2e-6), 1.01, -1.5, 3.0, -1e3};
    for (int act = 0; act < NACT; act++)
        for (size_t i = 0; i < sizeof ab / sizeof ab[0]; i++)
            for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
                double a = ab[i][0], b = ab[i][1], c = make_c(a, b, bad[j]);
                scm_pair p;
                scm_status st = ACT[act]->pair(a, b, c, &p);
                CHECK(st == SCM_ENOTPSD, "%s (%g, %g, rho %.9g): status %d, want ENOTPSD",
                      ACT[act]->name, a, b, bad[j], (int)st);
            }
    /* a < 0 with b > 0 makes c^2 > ab for any c: not PSD (ReLU says dead) */
    for (int act = ERF; act <= LIN; act++) {
        scm_pair p;
        CHECK(ACT[act]->pair(-1.0, 1.0, 0.0, &p) == SCM_ENOTPSD, "%s a < 0", ACT[act]->name);
        CHECK(ACT[act]->pair(1.0, -0.5, 0.0, &p) == SCM_ENOTPSD, "%s b < 0", ACT[act]->name);
    }

    /* clamping: rho = +-(1 + 1e-9) is SCM_OK and gives the values at +-1 to
     * ~1e-9 relative (f of ReLU is c/2 there: exactly 1e-9 apart).  Outputs
     * that vanish at |rho| = 1 (ReLU fa, fb; fc and f at -1) have a square-root
     * singularity there, and c = +-sqrt(a) sqrt(b) in double is |rho| = 1 only
     * to one rounding, where sqrt(1 - rho^2) ~ 1.5e-8: they get an absolute
     * floor of 1e-8 times their scale. */
    const double cl[][2] = {{1.0, 1.0}, {2.385, 0.0731}, {0.6, 50.0}, {1e4, 1e4}, {1e10, 1e10}};
    for (int act = 0; act < NACT; act++)
        for (size_t i = 0; i < sizeof cl / sizeof cl[0]; i++)
            for (int sg = -1; sg <= 1; sg += 2) {
                double a = cl[i][0], b = cl[i][1], n = sqrt(a) * sqrt(b);
                scm_pair p1, p;
                scm_status st1 = ACT[act]->pair(a, b, sg * n, &p1);
                scm_status st = ACT[act]->pair(a, b, sg * (1.0 + 1e-9) * n, &p);
                char what[160];
                snprintf(what, sizeof what, "%s clamp at (%g, %g, rho = %+.0f(1 + 1e-9))",
                         ACT[act]->name, a, b, (double)sg);
                CHECK(st1 == SCM_OK && st == SCM_OK, "%s: status %d (at |rho| = 1: %d)", what,
                      (int)st, (int)st1);
                if (st1 != SCM_OK || st != SCM_OK)
                    continue;
                CHECK_CLOSE(p.f, p1.f, 3e-9, 1e-8 * n, what);
                CHECK_CLOSE(p.fa, p1.fa, 3e-9, 1e-8 * sqrt(b / a), what);
                CHECK_CLOSE(p.fb, p1.fb, 3e-9, 1e-8 * sqrt(a / b), what);
                CHECK_CLOSE(p.fc, p1.fc, 3e-9, 1e-8, what);
            }

    /* NaN anywhere -> not OK (SCM_ENAN preferred) */
    for (int act = 0; act < NACT; act++)
        for (int k = 0; k < 4; k++) {
            double a = 1.3, b = 0.7, c = 0.2;
            if (k == 0 || k == 3)
                a = NAN;
            if (k == 1 || k == 3)
                b = NAN;
            if (k == 2 || k == 3)
                c = NAN;
            scm_pair p;
            scm_status st = ACT[act]->pair(a, b, c, &p);
            CHECK(st != SCM_OK, "%s pair with NaN (case %d) returned SCM_OK", ACT[act]->name, k);
            CHECK(st == SCM_ENAN, "%s pair with NaN (case %d): status %d, want ENAN",
                  ACT[act]->name, k, (int)st);
        }
    /* I3: never OK with a NaN output; NaN in an entry the value depends on
     * (all but ww for relu and erf; wz for linear, where I3 = E[w z]) -> not OK */
    for (int act = 0; act < NACT; act++)
        for (int k = 0; k < 6; k++) {
            int depends = act == LIN ? k == 5 : k != 1;
            scm_cov3 C = {1.2, 0.9, 0.8, 0.3, -0.4, 0.25};
            double *e[6] = {&C.uu, &C.ww, &C.zz, &C.uw, &C.uz, &C.wz};
            *e[k] = NAN;
            double out = 0.0;
            scm_status st = ACT[act]->i3(&C, &out);
            CHECK(!(st == SCM_OK && !isfinite(out)),
                  "%s i3 with NaN in entry %d: SCM_OK with output %g", ACT[act]->name, k, out);
            if (depends)
                CHECK(st != SCM_OK, "%s i3 with NaN in entry %d returned SCM_OK (output %g)",
                      ACT[act]->name, k, out);
        }
    /* I3 edge conventions "same as pair" on the (u, z) pair */
    for (int act = RELU; act <= ERF; act++) {
        scm_cov3 C = {1.0, 1.0, 1.0, 0.2, 1.5, 0.3}; /* rho_uz = 1.5 */
        double out;
        CHECK(ACT[act]->i3(&C, &out) == SCM_ENOTPSD, "%s i3 with rho_uz = 1.5 not ENOTPSD",
              ACT[act]->name);
    }
    {
        scm_cov3 C = {0.0, 1.0, 1.0, 0.0, 0.0, 0.3};
        double out = 123.0;
        CHECK(ACT[RELU]->i3(&C, &out) == SCM_EDEAD && out == 0.0, "relu i3 with uu = 0");
        C = (scm_cov3){1.0, 1.0, -2.0, 0.1, 0.0, 0.0};
        out = 123.0;
        CHECK(ACT[RELU]->i3(&C, &out) == SCM_EDEAD && out == 0.0, "relu i3 with zz < 0");
    }

    /* sweep of extreme inputs: SCM_OK implies four finite outputs; and a
     * valid input (finite, a, b >= 0 (> 0 for ReLU), |rho| <= 1) is SCM_OK */
    const double V[] = {0.0,    -0.0,  DBL_TRUE_MIN, 1e-300, 1e-30,     1e-8,     0.37,
                        1.0,    2.385, 1e8,          1e30,   1e150,     1e300,    DBL_MAX,
                        INFINITY, -1.0, -1e300,       -INFINITY, NAN};
    const int NV = (int)(sizeof V / sizeof V[0]);
    const double RH[] = {1.0, -1.0, 0.999999, -0.999999, 0.3, -0.3, 1.0 + 1e-9, -1.0 - 1e-9, 0.0};
    const double CV[] = {1e-300, -0.5, 1.0, -1e30, 1e300, -DBL_MAX, INFINITY, -INFINITY, NAN};
    for (int act = 0; act < NACT; act++) {
        long nonfinite = 0, nonfinite_inf = 0, notok = 0, calls = 0;
        for (int i = 0; i < NV; i++)
            for (int j = 0; j < NV; j++) {
                double a = V[i], b = V[j];
                double cands[32];
                int nc = 0;
                for (size_t k = 0; k < sizeof RH / sizeof RH[0]; k++)
                    cands[nc++] = RH[k] * (sqrt(fabs(a)) * sqrt(fabs(b)));
                for (size_t k = 0; k < sizeof CV / sizeof CV[0]; k++)
                    cands[nc++] = CV[k];
                for (int k = 0; k < nc; k++) {
                    double c = cands[k];
                    scm_pair p;
                    scm_status st = ACT[act]->pair(a, b, c, &p);
                    calls++;
                    int fin_in = isfinite(a) && isfinite(b) && isfinite(c);
                    if (st == SCM_OK &&
                        !(isfinite(p.f) && isfinite(p.fa) && isfinite(p.fb) && isfinite(p.fc))) {
                        if ((fin_in ? nonfinite++ : nonfinite_inf++) < 4)
                            fprintf(stderr,
                                    "%s (%.17g, %.17g, %.17g): SCM_OK with f %g fa %g fb %g fc %g\n",
                                    ACT[act]->name, a, b, c, p.f, p.fa, p.fb, p.fc);
                    }
                    int valid = isfinite(a) && isfinite(b) && isfinite(c) &&
                                (act == RELU ? (a > 0.0 && b > 0.0) : (a >= 0.0 && b >= 0.0)) &&
                                fabs(c) <= sqrt(a) * sqrt(b) * (1.0 + 1e-7);
                    /* a ReLU df/da that is itself beyond DBL_MAX
                     * (sqrt(b/a) sqrt(1 - rho^2) / 4 pi) must be reported
                     * (SCM_ENAN), not returned */
                    if (valid && act == RELU && st == SCM_ENAN) {
                        double r = c / (sqrt(a) * sqrt(b)), q = 1.0 - r * r;
                        double lg = 0.5 * fabs(log(a) - log(b)) + 0.5 * log(q > 0 ? q : 1e-300) -
                                    log(4.0 * M_PI);
                        if (lg > log(DBL_MAX) - 1e-9)
                            valid = 0;
                    }
                    if (valid && st != SCM_OK) {
                        if (notok++ < 6)
                            fprintf(stderr, "%s (%.17g, %.17g, %.17g): valid input, status %d\n",
                                    ACT[act]->name, a, b, c, (int)st);
                    }
                }
            }
        CHECK(nonfinite == 0,
              "%s: %ld of %ld sweep calls with finite inputs returned SCM_OK with a non-finite "
              "output",
              ACT[act]->name, nonfinite, calls);
        CHECK(nonfinite_inf == 0,
              "%s: %ld of %ld sweep calls with an infinite input returned SCM_OK with a "
              "non-finite output",
              ACT[act]->name, nonfinite_inf, calls);
        CHECK(notok == 0, "%s: %ld of %ld sweep calls with a valid input were not SCM_OK",
              ACT[act]->name, notok, calls);
    }
}

/* ------------------------------------------------------------------ */
/* 5. ReLU near rho = -1: the series branch (s/|c| < 1/2). */

static void test_relu_series(void)
{
    /* (a, b) powers of 4 with sqrt(a) sqrt(b) a power of 2, so that c / sqrt(ab)
     * is exact and 1 + rho of the exact inputs is what the kernel sees (its accuracy at irregular a, b is
     * limited by c / sqrt(ab) rounding, tested in test_quadrature) */
    const double exact_ab[][2] = {{1.0, 1.0}, {4.0, 0.25}, {16.0, 0.25}, {0x1p-60, 0x1p-40},
                                  {0x1p100, 0x1p-80}};
    const double rhos[] = {-0.8,   -0.85,  -0.89,  -0.894, -0.8944, -0.9,   -0.95,
                           -0.99,  -0.999, -1 + 1e-4, -1 + 1e-6, -1 + 1e-8, -1 + 1e-10,
                           -1 + 1e-12, -1 + 1e-14};
    for (size_t i = 0; i < sizeof exact_ab / sizeof exact_ab[0]; i++)
        for (size_t j = 0; j < sizeof rhos / sizeof rhos[0]; j++) {
            double a = exact_ab[i][0], b = exact_ab[i][1], c = make_c(a, b, rhos[j]);
            scm_pair p;
            ACT[RELU]->pair(a, b, c, &p);
            double fq = relu_ref(a, b, c).f, fp = relu_f_polar(a, b, c);
            char what[160];
            snprintf(what, sizeof what, "relu series region f at (%g, %g, %.17g)", a, b, c);
            CHECK_CLOSE(fq, fp, 1e-12, 0.0, "relu reference near -1: Gaussian vs polar");
            g_near1 = rhos[j] < -0.999;
            check_ref(RELU, p.f, fq, RTOL_QUAD, what);
            g_near1 = 0;
        }
    /* irregular (a, b) where the conditioning allows 1e-10 */
    const double irr_rho[] = {-0.8, -0.894, -0.9, -0.95, -0.99, -0.999, -0.9999};
    for (size_t j = 0; j < sizeof irr_rho / sizeof irr_rho[0]; j++) {
        double a = 1.37, b = 0.64, c = make_c(a, b, irr_rho[j]);
        scm_pair p;
        ACT[RELU]->pair(a, b, c, &p);
        double fq = relu_ref(a, b, c).f;
        char what[160];
        snprintf(what, sizeof what, "relu series region f at (%g, %g, %.17g)", a, b, c);
        CHECK_CLOSE(fq, relu_f_polar(a, b, c), 1e-12, 0.0, "relu reference: Gaussian vs polar");
        g_near1 = irr_rho[j] < -0.999;
        check_ref(RELU, p.f, fq, RTOL_QUAD, what);
        g_near1 = 0;
    }

    /* continuity at the switch s = |c| / 2, i.e. c0 = -sqrt(ab / 1.25):
     * step c across c0 one ulp-ish at a time; each step must change f by
     * fc * dc (f is smooth there), to 1e-13 of f: a jump between the two
     * formulas would show. */
    const double sw[][2] = {{1.0, 1.0}, {1.37, 0.64}, {0.0731, 2.385}};
    for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++) {
        double a = sw[i][0], b = sw[i][1];
        double c0 = -sqrt(a * b / 1.25);
        double prev_c = 0.0, prev_f = 0.0, prev_fc = 0.0;
        int below = 0, above = 0;
        for (int k = -40; k <= 40; k++) {
            double c = c0 * (1.0 + k * 1e-15);
            scm_pair p;
            ACT[RELU]->pair(a, b, c, &p);
            double s = sqrt(det2(a, b, c));
            if (s < 0.5 * -c)
                below++;
            else
                above++;
            if (k > -40) {
                double df = p.f - prev_f, pred = 0.5 * (p.fc + prev_fc) * (c - prev_c);
                CHECK_CLOSE(df, pred, 0.0, 1e-13 * p.f, "relu f continuous at the series switch");
            }
            prev_c = c;
            prev_f = p.f;
            prev_fc = p.fc;
        }
        CHECK(below > 0 && above > 0, "switch sweep crossed s/|c| = 1/2 (%d below, %d above)",
              below, above);
        /* and a coarser sweep against the quadrature */
        for (int k = -5; k <= 5; k++) {
            double c = c0 * (1.0 + k * 1e-3);
            scm_pair p;
            ACT[RELU]->pair(a, b, c, &p);
            check_ref(RELU, p.f, relu_ref(a, b, c).f, RTOL_QUAD, "relu f near the series switch");
        }
    }
}

/* ------------------------------------------------------------------ */
/* 6. Lookup and the g / dg members. */

static void test_tables(void)
{
    CHECK(scm_activation_find("relu") == &scm_act_relu, "find relu");
    CHECK(scm_activation_find("erf") == &scm_act_erf, "find erf");
    CHECK(scm_activation_find("linear") == &scm_act_linear, "find linear");
    const char *nots[] = {"", "ReLU", "relu ", "tanh", "lin", "erff", "sigmoid"};
    for (size_t i = 0; i < sizeof nots / sizeof nots[0]; i++)
        CHECK(scm_activation_find(nots[i]) == NULL, "find(\"%s\") should be NULL", nots[i]);
    CHECK(scm_activation_find(NULL) == NULL, "find(NULL)");
    CHECK(strcmp(scm_act_relu.name, "relu") == 0 && strcmp(scm_act_erf.name, "erf") == 0 &&
              strcmp(scm_act_linear.name, "linear") == 0,
          "table names");
    for (int act = 0; act < NACT; act++)
        CHECK(ACT[act]->pair && ACT[act]->i3 && ACT[act]->g && ACT[act]->dg, "%s members set",
              ACT[act]->name);

    const double xs[] = {-1e300, -7.5, -2.385, -1.0, -1e-300, -0.0, 0.0,
                         1e-300, 0.3,   1.0,    2.385, 7.5,     40.0, 1e300};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        /* ReLU: max(x, 0), g'(0) = 0 by convention (kernel.h) */
        CHECK(scm_act_relu.g(x) == (x > 0.0 ? x : 0.0), "relu g(%g)", x);
        CHECK(scm_act_relu.dg(x) == (x > 0.0 ? 1.0 : 0.0), "relu dg(%g)", x);
        /* linear */
        CHECK(scm_act_linear.g(x) == x && scm_act_linear.dg(x) == 1.0, "linear g, dg at %g", x);
        /* erf(x / sqrt 2): GSL's own erf as the other way (it returns NaN
         * for huge arguments: there g must be exactly +-1) */
        if (fabs(x) < 40.0)
            CHECK_CLOSE(scm_act_erf.g(x), gsl_sf_erf(x / M_SQRT2), 1e-14, 1e-300,
                        "erf g vs gsl_sf_erf");
        else
            CHECK(scm_act_erf.g(x) == (x > 0.0 ? 1.0 : -1.0), "erf g(%g)", x);
        /* g' = 2 phi(x) */
        CHECK_CLOSE(scm_act_erf.dg(x), 2.0 * gsl_ran_ugaussian_pdf(x), 1e-14, 1e-300,
                    "erf dg vs 2 phi");
    }
    /* dg is the derivative of g: 4th-order central differences */
    const double xd[] = {-3.1, -1.0, -0.2, 0.45, 1.7, 2.9};
    for (size_t i = 0; i < sizeof xd / sizeof xd[0]; i++) {
        double x = xd[i], h = 1e-3;
        for (int act = 0; act < NACT; act++) {
            const scm_activation *A = ACT[act];
            double fd = (A->g(x - 2 * h) - 8 * A->g(x - h) + 8 * A->g(x + h) - A->g(x + 2 * h)) /
                        (12 * h);
            CHECK_CLOSE(A->dg(x), fd, 1e-9, 1e-12, "dg vs finite differences of g");
        }
    }
}

int main(void)
{
    gsl_set_error_handler_off();
    g_ws = gsl_integration_workspace_alloc(QUAD_LIMIT);
    clock_t t0 = clock();

    test_reference_selfcheck();
    test_quadrature();
    test_scaling();
    test_finite_differences();
    test_identities();
    test_edges();
    test_relu_series();
    test_tables();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 20240613UL);
    test_i3_stein(rng);
    test_mc_pair(rng);
    test_mc_i3(rng);
    gsl_rng_free(rng);

    printf("quadrature references: %ld, worst reported relative error %.3g, %d above %g\n",
           quad_count, quad_worst, quad_bad, QUAD_ACCEPT);
    CHECK(quad_bad == 0, "%d quadrature references not accurate to %g", quad_bad, QUAD_ACCEPT);
    for (int act = 0; act < NACT; act++) {
        printf("worst relative error vs quadrature, %s: %.3g (%s)\n", ACT[act]->name,
               worst_rel[0][act], worst_where[0][act]);
        printf("  ... at |rho| <= 0.999 only: %.3g (%s)\n", worst_rel[1][act],
               worst_where[1][act]);
    }
    printf("cpu time %.2f s\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    gsl_integration_workspace_free(g_ws);
    return TEST_SUMMARY();
}
