/* kernel.c: the closed forms of MATH.md section 2, written so that they keep
 * full relative precision at the edges: correlation near +-1 (atan2 instead
 * of arccos, a series for the cancellation at rho -> -1), tiny and huge
 * norms (sqrt a * sqrt b instead of sqrt(ab)). */
#include "scm/kernel.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* |rho| up to 1 + RHO_SLACK is clamped to 1: integration error of a state
 * whose neurons are aligned (a global minimum) lands there. */
#define RHO_SLACK 1e-6

/* t - atan(t) for t >= 0 without cancellation at small t. */
static double t_minus_atan(double t)
{
    if (t >= 0.5)
        return t - atan(t);
    double t2 = t * t, term = t * t2, sum = 0.0;
    for (int n = 1; n < 60; n++) {
        double add = term / (2.0 * n + 1.0);
        sum += (n % 2) ? add : -add;
        if (add < 1e-18 * sum)
            break;
        term *= t2;
    }
    return sum;
}

/* Correlation rho = c / sqrt(ab) and s = sqrt(ab - c^2), both robust.
 * Returns SCM_ENOTPSD if |rho| exceeds 1 by more than round-off. */
static scm_status corr(double a, double b, double c, double *rho, double *s)
{
    double n = sqrt(a) * sqrt(b);
    double r = c / n;
    if (!(fabs(r) <= 1.0 + RHO_SLACK))
        return isnan(r) ? SCM_ENAN : SCM_ENOTPSD;
    if (r > 1.0)
        r = 1.0;
    if (r < -1.0)
        r = -1.0;
    *rho = r;
    *s = n * sqrt((1.0 - r) * (1.0 + r));
    return SCM_OK;
}

static scm_status relu_pair(double a, double b, double c, scm_pair *out)
{
    if (!(a > 0.0) || !(b > 0.0)) {
        *out = (scm_pair){0.0, 0.0, 0.0, 0.0};
        return (isnan(a) || isnan(b) || isnan(c)) ? SCM_ENAN : SCM_EDEAD;
    }
    double rho, s;
    scm_status st = corr(a, b, c, &rho, &s);
    if (st)
        return st;
    double theta = atan2(s, -c); /* = pi - arccos(rho) */
    double f;
    if (c >= 0.0 || s >= 0.5 * -c)
        f = (s + c * theta) / (2.0 * M_PI);
    else /* c < 0, s / |c| < 1/2: s - |c| atan(s/|c|) cancels */
        f = -c * t_minus_atan(s / -c) / (2.0 * M_PI);
    double q = sqrt((1.0 - rho) * (1.0 + rho));
    out->f = f;
    out->fc = theta / (2.0 * M_PI);
    out->fa = sqrt(b) / sqrt(a) * q / (4.0 * M_PI);
    out->fb = sqrt(a) / sqrt(b) * q / (4.0 * M_PI);
    return SCM_OK;
}

/* E[Theta(u) w relu(z)] by Stein's lemma on w:
 * cov(u,w) E[delta(u) relu(z)] + cov(w,z) E[Theta(u) Theta(z)]. */
static scm_status relu_i3(const scm_cov3 *C, double *out)
{
    scm_pair p;
    scm_status st = relu_pair(C->uu, C->zz, C->uz, &p);
    *out = st ? 0.0 : C->uw * 2.0 * p.fa + C->wz * p.fc;
    return st;
}

static scm_status erf_pair(double a, double b, double c, scm_pair *out)
{
    double pa = 1.0 + a, pb = 1.0 + b;
    double D = pa * pb - c * c;
    if (isnan(D)) {
        *out = (scm_pair){0.0, 0.0, 0.0, 0.0};
        return SCM_ENAN;
    }
    if (!(a >= 0.0) || !(b >= 0.0) || !(D > 0.0) || fabs(c) > sqrt(a) * sqrt(b) * (1.0 + RHO_SLACK)) {
        *out = (scm_pair){0.0, 0.0, 0.0, 0.0};
        return SCM_ENOTPSD;
    }
    double sD = sqrt(D);
    out->f = (2.0 / M_PI) * atan2(c, sD); /* = (2/pi) asin(c / sqrt(pa pb)) */
    out->fc = (2.0 / M_PI) / sD;
    out->fa = -c / (M_PI * pa * sD);
    out->fb = -c / (M_PI * pb * sD);
    return SCM_OK;
}

/* Saad & Solla (1995), eq. for I3 with g = erf(x / sqrt 2):
 * (2/pi) (C_wz (1 + C_uu) - C_uw C_uz) / ((1 + C_uu) sqrt(L3)),
 * L3 = (1 + C_uu)(1 + C_zz) - C_uz^2. */
static scm_status erf_i3(const scm_cov3 *C, double *out)
{
    double pu = 1.0 + C->uu;
    double L3 = pu * (1.0 + C->zz) - C->uz * C->uz;
    if (!(L3 > 0.0)) {
        *out = 0.0;
        return isnan(L3) ? SCM_ENAN : SCM_ENOTPSD;
    }
    *out = (2.0 / M_PI) * (C->wz * pu - C->uw * C->uz) / (pu * sqrt(L3));
    return SCM_OK;
}

static scm_status linear_pair(double a, double b, double c, scm_pair *out)
{
    *out = (scm_pair){c, 0.0, 0.0, 1.0};
    if (isnan(a) || isnan(b) || isnan(c))
        return SCM_ENAN;
    if (!(a >= 0.0) || !(b >= 0.0) || fabs(c) > sqrt(a) * sqrt(b) * (1.0 + RHO_SLACK))
        return SCM_ENOTPSD;
    return SCM_OK;
}

static scm_status linear_i3(const scm_cov3 *C, double *out)
{
    *out = C->wz; /* E[1 * w * z] */
    return isnan(C->wz) ? SCM_ENAN : SCM_OK;
}

static double relu_g(double x) { return x > 0.0 ? x : 0.0; }
static double relu_dg(double x) { return x > 0.0 ? 1.0 : 0.0; }
static double erf_g(double x) { return erf(x / M_SQRT2); }
static double erf_dg(double x) { return sqrt(2.0 / M_PI) * exp(-0.5 * x * x); }
static double linear_g(double x) { return x; }
static double linear_dg(double x) { (void)x; return 1.0; }

const scm_activation scm_act_relu = {"relu", relu_pair, relu_i3, relu_g, relu_dg};
const scm_activation scm_act_erf = {"erf", erf_pair, erf_i3, erf_g, erf_dg};
const scm_activation scm_act_linear = {"linear", linear_pair, linear_i3, linear_g, linear_dg};

const scm_activation *scm_activation_find(const char *name)
{
    static const scm_activation *const all[] = {&scm_act_relu, &scm_act_erf, &scm_act_linear};
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}
