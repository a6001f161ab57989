/* staircase.c: plateau detection and escape-time fits; see staircase.h and
 * docs/staircase.md. */
#include "scm/staircase.h"

#include "core/linalg.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* |f|^2 of the rule's rhs at y (f filled; *fmax its max |f_i|); NaN on a
 * failed evaluation.  The 2-norm decides the line search (the Newton
 * direction descends it), the max norm the convergence. */
static double residual(const scm_rule *rule, const scm_rule_params *p, scm_flow *fl,
                       const double *y, double *f, double *eps, double *scratch, double *fmx,
                       scm_status *st)
{
    long n = rule->dim(scm_flow_model(fl));
    *st = rule->rhs(p, fl, y, f, eps, scratch);
    *fmx = NAN;
    if (*st)
        return NAN;
    double r = 0.0, mx = 0.0;
    for (long i = 0; i < n; i++) {
        r += f[i] * f[i];
        mx = fmax(mx, fabs(f[i]));
    }
    if (isfinite(r))
        *fmx = mx;
    return isfinite(r) ? r : NAN;
}

/* Central-difference Jacobian J (n x n) of the rhs at y (y restored).  A
 * fixed point with two equal students lies on the boundary of the PSD
 * cone, where a step of one sign leaves it (the flow refuses the state):
 * there the difference is one-sided, from the side that stays inside. */
static scm_status jacobian(const scm_rule *rule, const scm_rule_params *p, scm_flow *fl,
                           double *y, gsl_matrix *J, double *f0, double *fp, double *fm,
                           double *scratch)
{
    long n = (long)J->size1;
    for (long j = 0; j < n; j++) {
        double y0 = y[j], h = 1e-6 * fmax(1.0, fabs(y0));
        y[j] = y0 + h;
        scm_status sp = rule->rhs(p, fl, y, fp, NULL, scratch);
        y[j] = y0 - h;
        scm_status sm = rule->rhs(p, fl, y, fm, NULL, scratch);
        y[j] = y0;
        if (sp && sm)
            return sp;
        double *a = sp ? f0 : fp, *b = sm ? f0 : fm, w = sp || sm ? h : 2.0 * h;
        for (long i = 0; i < n; i++)
            gsl_matrix_set(J, (size_t)i, (size_t)j, (a[i] - b[i]) / w);
    }
    return SCM_OK;
}

/* The polish works on a factor of the Gram matrix [[T, R^T], [R, Q]] =
 * L L^T (teachers' rows C, students' rows Z, L = M + K columns) and on v:
 * every such state is a valid (PSD) one, while a fixed point with equal
 * students lies on the boundary of the PSD cone in (Q, R), where a Newton
 * step in (Q, R) leaves the cone and the flow refuses it. */
typedef struct {
    const scm_rule *rule;
    const scm_rule_params *p;
    scm_flow *fl;
    const scm_model *m;
    long K, M, L, n, nx;
    double *C, *Q, *R, *v, *y, *scr;
} pol_t;

static void x_to_y(pol_t *s, const double *x, double *y)
{
    long K = s->K, M = s->M, L = s->L;
    for (long k = 0; k < K; k++) {
        for (long l = 0; l < K; l++) {
            double c = 0.0;
            for (long j = 0; j < L; j++)
                c += x[k * L + j] * x[l * L + j];
            s->Q[k * K + l] = c;
        }
        for (long mm = 0; mm < M; mm++) {
            double c = 0.0;
            for (long j = 0; j < L; j++)
                c += x[k * L + j] * s->C[mm * L + j];
            s->R[k * M + mm] = c;
        }
    }
    s->rule->pack(s->m, s->Q, s->R, s->rule->trains_v ? x + K * L : NULL, y);
}

static double xres(pol_t *s, const double *x, double *f, double *eps, double *fmx,
                   scm_status *st)
{
    x_to_y(s, x, s->y);
    return residual(s->rule, s->p, s->fl, s->y, f, eps, s->scr, fmx, st);
}

/* The factor of the state y: x (students' rows, then v) and s->C, from the
 * eigendecomposition of the Gram matrix (negative round-off eigenvalues
 * dropped). */
static scm_status factor(pol_t *s, const double *y, double *x)
{
    long K = s->K, M = s->M, L = s->L;
    s->rule->unpack(s->m, y, s->Q, s->R, s->v);
    gsl_matrix *G = gsl_matrix_alloc((size_t)L, (size_t)L);
    gsl_matrix *U = gsl_matrix_alloc((size_t)L, (size_t)L);
    gsl_vector *e = gsl_vector_alloc((size_t)L);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)L);
    scm_status st = G && U && e && w ? SCM_OK : SCM_ENOMEM;
    for (long i = 0; !st && i < L; i++)
        for (long j = 0; j < L; j++) {
            double g = i < M && j < M   ? s->m->T[i * M + j]
                       : i < M          ? s->R[(j - M) * M + i]
                       : j < M          ? s->R[(i - M) * M + j]
                                        : s->Q[(i - M) * K + (j - M)];
            gsl_matrix_set(G, (size_t)i, (size_t)j, g);
        }
    if (!st && gsl_eigen_symmv(G, e, U, w))
        st = SCM_ENOCONV;
    for (long i = 0; !st && i < L; i++)
        for (long j = 0; j < L; j++) {
            double f = gsl_matrix_get(U, (size_t)i, (size_t)j) *
                       sqrt(fmax(gsl_vector_get(e, (size_t)j), 0.0));
            if (i < M)
                s->C[i * L + j] = f;
            else
                x[(i - M) * L + j] = f;
        }
    if (!st && s->rule->trains_v)
        memcpy(x + K * L, s->v, sizeof(double) * (size_t)K);
    gsl_matrix_free(G);
    gsl_matrix_free(U);
    gsl_vector_free(e);
    gsl_eigen_symmv_free(w);
    return st;
}

/* The Gauss-Newton direction dx = -J^+ f, J (n x nx, nx >= n) the central
 * difference Jacobian in x, by the SVD of J^T = U S V^T (singular values
 * below 1e-8 s_max dropped: the continuous symmetries, the rotations of
 * the factor among them, make J rank deficient). */
static scm_status newton_dir(pol_t *s, double *x, const double *f, double *fp, double *fm,
                             gsl_matrix *Jt, gsl_matrix *V, gsl_vector *S, gsl_vector *work,
                             double *dx)
{
    long n = s->n, nx = s->nx;
    for (long j = 0; j < nx; j++) {
        double x0 = x[j], h = 1e-7 * fmax(1.0, fabs(x0)), e, mx;
        scm_status sp, sm;
        x[j] = x0 + h;
        xres(s, x, fp, &e, &mx, &sp);
        x[j] = x0 - h;
        xres(s, x, fm, &e, &mx, &sm);
        x[j] = x0;
        if (sp || sm)
            return sp ? sp : sm;
        for (long i = 0; i < n; i++)
            gsl_matrix_set(Jt, (size_t)j, (size_t)i, (fp[i] - fm[i]) / (2.0 * h));
    }
    gsl_linalg_SV_decomp(Jt, V, S, work); /* Jt <- U */
    double smax = gsl_vector_get(S, 0);
    for (long k = 0; k < n; k++) {
        double sk = gsl_vector_get(S, (size_t)k), c = 0.0;
        for (long i = 0; i < n; i++)
            c += gsl_matrix_get(V, (size_t)i, (size_t)k) * f[i];
        gsl_vector_set(work, (size_t)k, sk > 1e-8 * smax ? c / sk : 0.0);
    }
    for (long j = 0; j < nx; j++) {
        double c = 0.0;
        for (long k = 0; k < n; k++)
            c += gsl_matrix_get(Jt, (size_t)j, (size_t)k) * gsl_vector_get(work, (size_t)k);
        dx[j] = -c;
    }
    return SCM_OK;
}

scm_status scm_stair_polish(const scm_rule *rule, const scm_rule_params *p, scm_flow *fl,
                            double *y, double tol, int max_iter, double *eps, double *lam_max,
                            double *resid, scm_error *err)
{
    const scm_model *m = scm_flow_model(fl);
    pol_t s = {.rule = rule, .p = p, .fl = fl, .m = m, .K = m->K, .M = m->M};
    s.L = s.K + s.M;
    s.n = rule->dim(m);
    s.nx = s.K * s.L + (rule->trains_v ? s.K : 0);
    long n = s.n, nx = s.nx;
    size_t len = (size_t)(4 * n + 3 * nx + s.M * s.L + s.K * s.K + s.K * s.M + s.K +
                          rule->scratch(m) + 1);
    double *buf = malloc(sizeof(double) * len);
    gsl_matrix *Jt = gsl_matrix_alloc((size_t)nx, (size_t)n);
    gsl_matrix *V = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *S = gsl_vector_alloc((size_t)n), *work = gsl_vector_alloc((size_t)n);
    scm_status st = SCM_OK;
    *resid = NAN;
    if (!buf || !Jt || !V || !S || !work) {
        st = scm_error_set(err, SCM_ENOMEM, "polish: out of memory (n = %ld)", n);
        goto done;
    }
    double *f = buf, *fp = f + n, *fm = fp + n, *x = fm + n, *dx = x + nx, *xt = dx + nx;
    s.y = xt + nx;
    s.C = s.y + n;
    s.Q = s.C + s.M * s.L;
    s.R = s.Q + s.K * s.K;
    s.v = s.R + s.K * s.M;
    s.scr = s.v + s.K;
    if ((st = factor(&s, y, x))) {
        scm_error_set(err, st, "polish: the Gram matrix of the start has no eigendecomposition");
        goto done;
    }
    double fmx, fmt;
    double r = xres(&s, x, f, eps, &fmx, &st);
    for (int it = 0; it < max_iter && !st && fmx > tol; it++) {
        if ((st = newton_dir(&s, x, f, fp, fm, Jt, V, S, work, dx)))
            break;
        double step = 1.0, rt = NAN;
        for (int h = 0; h < 30; h++, step *= 0.5) {
            for (long i = 0; i < nx; i++)
                xt[i] = x[i] + step * dx[i];
            scm_status s2;
            rt = xres(&s, xt, fp, eps, &fmt, &s2);
            if (!s2 && rt < r)
                break;
            rt = NAN;
        }
        if (!(rt < r))
            break; /* no step lowers the residual */
        memcpy(x, xt, sizeof(double) * (size_t)nx);
        r = xres(&s, x, f, eps, &fmx, &st);
    }
    if (!st && !(fmx <= tol))
        st = scm_error_set(err, SCM_ENOCONV,
                           "polish: residual max |dy/dtau| = %g above tol %g (at most %d "
                           "Newton steps)",
                           fmx, tol, max_iter);
    else if (st)
        scm_error_set(err, st, "polish: the rule's right-hand side failed");
    *resid = fmx;
    x_to_y(&s, x, y);
    if (!st) { /* the escape rate: the Jacobian in the rule's own coordinates */
        gsl_matrix *J = gsl_matrix_alloc((size_t)n, (size_t)n);
        st = J ? jacobian(rule, p, fl, y, J, f, fp, fm, s.scr) : SCM_ENOMEM;
        if (!st)
            st = scm_linalg_re_range(J, lam_max, NULL);
        if (st)
            scm_error_set(err, st, "polish: the Jacobian at the fixed point failed");
        gsl_matrix_free(J);
    }
done:
    free(buf);
    gsl_matrix_free(Jt);
    gsl_matrix_free(V);
    gsl_vector_free(S);
    gsl_vector_free(work);
    return st;
}

/* ---- the origin of two-layer training ----------------------------------- */

/* h(s) = sum_m v*_m E[g(u . x) g(nu_m)] for the unit u = s in the
 * coordinates where the teachers are the columns a_m of a (r x M), and its
 * gradient in s (kernel derivative fc times a_m). */
static scm_status origin_gain(const scm_model *m, const double *a, int r, const double *s,
                              double *h, double *grad)
{
    *h = 0.0;
    for (int j = 0; j < r; j++)
        grad[j] = 0.0;
    for (int n = 0; n < m->M; n++) {
        double c = 0.0;
        for (int j = 0; j < r; j++)
            c += s[j] * a[j * m->M + n];
        scm_pair p;
        scm_status st = m->act->pair(1.0, m->T[n * m->M + n], c, &p);
        if (st != SCM_OK && st != SCM_EDEAD)
            return st;
        *h += m->vs[n] * p.f;
        for (int j = 0; j < r; j++)
            grad[j] += m->vs[n] * p.fc * a[j * m->M + n];
    }
    return SCM_OK;
}

/* Projected gradient ascent of origin_gain on the unit sphere from s (unit),
 * step halved until h rises; *h the value reached. */
static scm_status origin_ascent(const scm_model *m, const double *a, int r, double *s, double *h,
                                double *g, double *trial, double *gt)
{
    scm_status st = origin_gain(m, a, r, s, h, g);
    double step = 1.0;
    for (int it = 0; it < 10000 && st == SCM_OK; it++) {
        double gs = 0.0, pn = 0.0;
        for (int j = 0; j < r; j++)
            gs += g[j] * s[j];
        for (int j = 0; j < r; j++)
            pn += (g[j] - gs * s[j]) * (g[j] - gs * s[j]);
        if (sqrt(pn) <= 1e-13 * (1.0 + fabs(*h)))
            return SCM_OK;
        double ht = -INFINITY;
        for (; step > 1e-16; step *= 0.5) {
            double nrm = 0.0;
            for (int j = 0; j < r; j++) {
                trial[j] = s[j] + step * (g[j] - gs * s[j]);
                nrm += trial[j] * trial[j];
            }
            for (int j = 0; j < r; j++)
                trial[j] /= sqrt(nrm);
            if ((st = origin_gain(m, a, r, trial, &ht, gt)) != SCM_OK)
                return st;
            if (ht > *h)
                break;
        }
        if (!(ht > *h))
            return SCM_OK; /* no rise at any step: at the maximum to round-off */
        memcpy(s, trial, sizeof(double) * (size_t)r);
        memcpy(g, gt, sizeof(double) * (size_t)r);
        *h = ht;
        step = fmin(1.0, 4.0 * step);
    }
    return st == SCM_OK ? SCM_ENOCONV : st;
}

scm_status scm_stair_origin(const scm_model *m, double *eps0, double *lam0, scm_error *err)
{
    if (!m || !eps0 || !lam0)
        return scm_error_set(err, SCM_EINVAL, "scm_stair_origin: NULL argument");
    const int M = m->M;
    const scm_activation *act = m->act;
    int smooth = act->dg(0.0) != 0.0;
    if (!smooth && strcmp(act->name, "relu") != 0)
        return scm_error_set(err, SCM_EINVAL,
                             "scm_stair_origin: no escape rate of the origin for activation "
                             "'%s' (g'(0) = 0 and not ReLU)", act->name);
    double e = 0.0;
    for (int n = 0; n < M; n++)
        for (int l = 0; l < M; l++) {
            scm_pair p;
            scm_status st = act->pair(m->T[n * M + n], m->T[l * M + l], m->T[n * M + l], &p);
            if (st != SCM_OK && st != SCM_EDEAD)
                return scm_error_set(err, st, "scm_stair_origin: teacher kernel (%d, %d): %s",
                                     n, l, scm_status_str(st));
            e += m->vs[n] * m->vs[l] * p.f;
        }
    *eps0 = 0.5 * e;
    if (smooth) {
        /* E[g'(nu)] = fc(1, T_nn, 0) / E[g'(x)], E[g'(x)]^2 = fc(1, 1, 0)
         * (Price's theorem at zero correlation: fc = E[g'] E[g']). */
        scm_pair p1;
        act->pair(1.0, 1.0, 0.0, &p1);
        double q = 0.0;
        for (int n = 0; n < M; n++)
            for (int l = 0; l < M; l++) {
                scm_pair pn, pl;
                act->pair(1.0, m->T[n * M + n], 0.0, &pn);
                act->pair(1.0, m->T[l * M + l], 0.0, &pl);
                q += m->vs[n] * m->vs[l] * pn.fc * pl.fc / p1.fc * m->T[n * M + l];
            }
        *lam0 = fabs(act->dg(0.0)) * sqrt(fmax(q, 0.0));
        return SCM_OK;
    }
    /* ReLU: the teachers as columns a_m of a (r x M), T = a^T a. */
    double *a = malloc(sizeof(double) * (size_t)(M * M));
    double *work = malloc(sizeof(double) * (size_t)(4 * M));
    gsl_matrix *Tm = gsl_matrix_alloc((size_t)M, (size_t)M), *U = gsl_matrix_alloc((size_t)M, (size_t)M);
    gsl_vector *ev = gsl_vector_alloc((size_t)M);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)M);
    scm_status st = SCM_OK;
    if (!a || !work || !Tm || !U || !ev || !w) {
        st = scm_error_set(err, SCM_ENOMEM, "scm_stair_origin: out of memory");
        goto out;
    }
    for (int i = 0; i < M * M; i++)
        Tm->data[(i / M) * Tm->tda + i % M] = m->T[i];
    if (gsl_eigen_symmv(Tm, ev, U, w)) {
        st = scm_error_set(err, SCM_ESINGULAR, "scm_stair_origin: eigensolver failed on T");
        goto out;
    }
    double emax = 0.0;
    for (int j = 0; j < M; j++)
        emax = fmax(emax, gsl_vector_get(ev, (size_t)j));
    int r = 0;
    for (int j = 0; j < M; j++) {
        double lj = gsl_vector_get(ev, (size_t)j);
        if (lj <= 1e-12 * emax)
            continue;
        for (int n = 0; n < M; n++)
            a[r * M + n] = sqrt(lj) * gsl_matrix_get(U, (size_t)n, (size_t)j);
        r++;
    }
    double *s = work, *g = work + M, *trial = work + 2 * M, *gt = work + 3 * M;
    double hbest = -INFINITY;
    for (int start = 0; start <= 2 * M && r > 0; start++) {
        double nrm = 0.0;
        for (int j = 0; j < r; j++) {
            /* +-a_n for start < 2 M, then sum_n v*_n a_n / sqrt(T_nn) */
            if (start < 2 * M)
                s[j] = (start % 2 ? -1.0 : 1.0) * a[j * M + start / 2];
            else {
                s[j] = 0.0;
                for (int n = 0; n < M; n++)
                    if (m->T[n * M + n] > 0)
                        s[j] += m->vs[n] * a[j * M + n] / sqrt(m->T[n * M + n]);
            }
            nrm += s[j] * s[j];
        }
        if (!(nrm > 0))
            continue;
        for (int j = 0; j < r; j++)
            s[j] /= sqrt(nrm);
        double h;
        if ((st = origin_ascent(m, a, r, s, &h, g, trial, gt)) != SCM_OK) {
            scm_error_set(err, st, "scm_stair_origin: the ascent of the ReLU gain %s",
                          st == SCM_ENOCONV ? "did not settle in 10000 steps"
                                            : scm_status_str(st));
            goto out;
        }
        hbest = fmax(hbest, h);
    }
    *lam0 = r > 0 ? fmax(hbest, 0.0) : 0.0;
out:
    free(a);
    free(work);
    gsl_matrix_free(Tm);
    gsl_matrix_free(U);
    gsl_vector_free(ev);
    gsl_eigen_symmv_free(w);
    return st;
}
