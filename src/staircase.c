/* staircase.c: plateau detection and escape-time fits; see staircase.h and
 * docs/staircase.md. */
#include "scm/staircase.h"

#include <math.h>

void scm_stair_opts_default(scm_stair_opts *o)
{
    o->rate_tol = 1e-4;
    o->min_dur = 5.0;
}

/* The time where the rate crosses rate_tol * eps, between the midpoints of
 * the intervals (i - 1, i) (slow) and (i, i + 1) (fast), interpolating log
 * rate linearly: near a saddle the rate grows exponentially in tau. */
static double crossing(const double *t, const double *eps, long i, double rate_tol)
{
    double r1 = fabs(eps[i] - eps[i - 1]) / (t[i] - t[i - 1]);
    double r2 = fabs(eps[i + 1] - eps[i]) / (t[i + 1] - t[i]);
    double m1 = 0.5 * (t[i - 1] + t[i]), m2 = 0.5 * (t[i] + t[i + 1]);
    double thr = rate_tol * eps[i];
    if (!(r1 > 0.0) || !(r2 > r1))
        return t[i];
    double f = (log(thr) - log(r1)) / (log(r2) - log(r1));
    return m1 + fmin(fmax(f, 0.0), 1.0) * (m2 - m1);
}

scm_status scm_stair_detect(const double *t, const double *eps, long n, const scm_stair_opts *o,
                            scm_stair_plateau *pl, int cap, int *np, scm_error *err)
{
    *np = 0;
    if (!(o->rate_tol > 0.0) || !(o->min_dur > 0.0))
        return scm_error_set(err, SCM_EINVAL, "rate_tol and min_dur must be > 0 (got %g, %g)",
                             o->rate_tol, o->min_dur);
    if (n < 2)
        return scm_error_set(err, SCM_EINVAL, "a loss curve needs 2 points, got %ld", n);
    for (long i = 0; i < n; i++) {
        if (!isfinite(t[i]) || !isfinite(eps[i]) || !(eps[i] > 0.0))
            return scm_error_set(err, SCM_EINVAL,
                                 "point %ld: t = %g, eps = %g (need finite, eps > 0)", i, t[i],
                                 eps[i]);
        if (i && !(t[i] > t[i - 1]))
            return scm_error_set(err, SCM_EINVAL, "times not increasing at point %ld", i);
    }
    /* slow[i]: the interval (i, i + 1) changes slowly */
    long start = -1;
    for (long i = 0; i < n; i++) {
        int slow = 0;
        if (i + 1 < n) {
            double rate = fabs(eps[i + 1] - eps[i]) / (t[i + 1] - t[i]);
            slow = rate <= o->rate_tol * fmin(eps[i], eps[i + 1]);
        }
        if (slow && start < 0)
            start = i;
        if (!slow && start >= 0) { /* the stretch is points start .. i */
            if (t[i] - t[start] >= o->min_dur) {
                if (*np < cap) {
                    scm_stair_plateau *p = &pl[*np];
                    p->i_start = start;
                    p->i_end = i;
                    p->t_start = t[start];
                    p->t_end = t[i];
                    p->eps = eps[(start + i) / 2];
                    if (i + 1 < n && i > start)
                        p->t_end = crossing(t, eps, i, o->rate_tol);
                }
                (*np)++;
            }
            start = -1;
        }
    }
    return SCM_OK;
}

int scm_stair_match(double eps, const double *fp_eps, int n_fp, double rel_tol)
{
    int best = -1;
    for (int i = 0; i < n_fp; i++) {
        double dist = fabs(eps - fp_eps[i]);
        if (dist <= rel_tol * fabs(fp_eps[i]) && (best < 0 || dist < fabs(eps - fp_eps[best])))
            best = i;
    }
    return best;
}

scm_status scm_stair_fit(const double *x, const double *y, int n, double *slope,
                         double *intercept, double *slope_se)
{
    if (n < 3)
        return scm_error_set(NULL, SCM_EINVAL, "fit needs 3 points");
    double mx = 0.0, my = 0.0;
    for (int i = 0; i < n; i++) {
        mx += x[i] / n;
        my += y[i] / n;
    }
    double sxx = 0.0, sxy = 0.0;
    for (int i = 0; i < n; i++) {
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
    }
    if (!(sxx > 0.0))
        return SCM_EINVAL;
    *slope = sxy / sxx;
    *intercept = my - *slope * mx;
    double ss = 0.0;
    for (int i = 0; i < n; i++) {
        double r = y[i] - (*slope * x[i] + *intercept);
        ss += r * r;
    }
    *slope_se = sqrt(ss / (n - 2) / sxx);
    return SCM_OK;
}
