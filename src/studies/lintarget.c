/* lintarget.c: the linear target as a +-ReLU pair, its saddle manifold and
 * the checks of lintarget.h. */
#include "scm/lintarget.h"

#include <gsl/gsl_eigen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scm/init.h"
#include "scm/stability.h"
#include "scm/twolayer.h"

scm_model *scm_lintarget_model(int K, double t, const double *v, scm_error *err)
{
    if (!(t > 0.0 && isfinite(t))) {
        scm_error_set(err, SCM_EINVAL, "the target's squared norm t must be > 0, got %g", t);
        return NULL;
    }
    const double T[4] = {t, -t, -t, t}, vs[2] = {1.0, -1.0};
    return scm_model_alloc(K, 2, &scm_act_relu, T, v, vs, err);
}

scm_status scm_lintarget_saddle(double t, double c, const double *beta, double *Q, double *R,
                                double *v, scm_error *err)
{
    if (!(t > 0.0) || !(beta[0] > 0.0) || !(beta[1] > 0.0) || !isfinite(c))
        return scm_error_set(err, SCM_EINVAL,
                             "saddle point needs t > 0, beta > 0 and a finite c (t = %g, beta = "
                             "%g, %g, c = %g)",
                             t, beta[0], beta[1], c);
    const double st = sqrt(t), coef[2] = {c + 1.0, -c};
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++)
            Q[i * 2 + j] = beta[i] * beta[j];
        R[i * 2 + 0] = beta[i] * st;
        R[i * 2 + 1] = -beta[i] * st;
        /* v_i w_i = coef_i a: v_i beta_i = coef_i sqrt(t) */
        v[i] = coef[i] * st / beta[i];
    }
    return SCM_OK;
}

/* eps at x = (W, v) of the realisation. */
static scm_status loss_at(const scm_model *m, long d, const double *x, const double *Ws,
                          double *eps)
{
    return scm_twolayer_grad(m, d, x, Ws, x + 2 * d, eps, NULL, NULL);
}

scm_status scm_lintarget_saddle_check(double t, double c, const double *beta, long d, double s0,
                                      scm_lintarget_saddle_report *rep, scm_error *err)
{
    memset(rep, 0, sizeof *rep);
    if (d < 2)
        return scm_error_set(err, SCM_EINVAL, "the dimension must be >= 2, got %ld", d);
    if (!(s0 > 0.0 && isfinite(s0)))
        return scm_error_set(err, SCM_EINVAL, "the cubic-test step must be > 0, got %g", s0);
    double Q[4], R[4], v[2];
    scm_status st = scm_lintarget_saddle(t, c, beta, Q, R, v, err);
    if (st)
        return st;
    scm_model *m = scm_lintarget_model(2, t, v, err);
    if (!m)
        return err ? err->code : SCM_EINVAL;
    const long n = 2 * d + 2;
    double *x = malloc(sizeof *x * (size_t)n), *Ws = malloc(sizeof *Ws * (size_t)(2 * d)),
           *g = malloc(sizeof *g * (size_t)n), *H = malloc(sizeof *H * (size_t)(n * n)),
           *ev = malloc(sizeof *ev * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    gsl_matrix *A = gsl_matrix_alloc((size_t)n, (size_t)n), *V = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *L = gsl_vector_alloc((size_t)n);
    gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc((size_t)n);
    if (!x || !Ws || !g || !H || !ev || !y || !A || !V || !L || !ws) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the saddle check");
        goto out;
    }
    if ((st = scm_weights_realise(m, Q, R, d, x, Ws, err)))
        goto out;
    memcpy(x + 2 * d, v, sizeof v);
    if ((st = scm_twolayer_grad(m, d, x, Ws, v, &rep->eps, g, g + 2 * d))) {
        scm_error_set(err, st, "two-layer gradient: %s", scm_status_str(st));
        goto out;
    }
    for (long i = 0; i < n; i++)
        rep->grad_max = fmax(rep->grad_max, fabs(g[i]));
    if ((st = scm_twolayer_hessian(m, d, x, Ws, v, 1e-5, H, err)))
        goto out;
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            gsl_matrix_set(A, (size_t)i, (size_t)j, H[i * n + j]);
    if (gsl_eigen_symmv(A, L, V, ws) != 0) {
        st = scm_error_set(err, SCM_ESOLVER, "eigensolver failed on the two-layer Hessian");
        goto out;
    }
    gsl_eigen_symmv_sort(L, V, GSL_EIGEN_SORT_VAL_ASC);
    rep->n = (int)n;
    rep->predicted_zero = (int)(d + 2);
    rep->eval_min = gsl_vector_get(L, 0);
    rep->eval_max = gsl_vector_get(L, (size_t)n - 1);
    rep->zero_tol = 1e-6 * fmax(fabs(rep->eval_min), fabs(rep->eval_max));
    for (long i = 0; i < n; i++) {
        double l = gsl_vector_get(L, (size_t)i);
        rep->n_neg += l < -rep->zero_tol;
        rep->n_pos += l > rep->zero_tol;
        rep->n_zero += fabs(l) <= rep->zero_tol;
    }
    /* the cubic test along the null space */
    rep->s0 = s0;
    rep->descent_min = INFINITY;
    for (long k = 0; k < n; k++) {
        if (fabs(gsl_vector_get(L, (size_t)k)) > rep->zero_tol)
            continue;
        for (int sg = -1; sg <= 1; sg += 2) {
            for (long i = 0; i < n; i++)
                y[i] = x[i] + sg * rep->s0 * gsl_matrix_get(V, (size_t)i, (size_t)k);
            double e;
            if ((st = loss_at(m, d, y, Ws, &e))) {
                scm_error_set(err, st, "loss along a flat direction: %s", scm_status_str(st));
                goto out;
            }
            rep->descent_min = fmin(rep->descent_min, e - rep->eps);
        }
    }
out:
    gsl_eigen_symmv_free(ws);
    gsl_vector_free(L);
    gsl_matrix_free(A);
    gsl_matrix_free(V);
    free(x);
    free(Ws);
    free(g);
    free(H);
    free(ev);
    free(y);
    scm_model_free(m);
    return st;
}

scm_status scm_lintarget_run(double t, double alpha, long d, unsigned long seed, double t_max,
                             int n_out, scm_traj_result *res, scm_error *err)
{
    memset(res, 0, sizeof *res);
    if (!(alpha >= SCM_LINTARGET_ALPHA_MIN && alpha < 1e100))
        return scm_error_set(err, SCM_EINVAL,
                             "alpha = %.15g is out of range: the run's tolerances scale as alpha^2 "
                             "(atol 1e-4 alpha^2, dead_tol 1e-6 alpha^2) and must stay normal "
                             "doubles, so alpha must be >= %g",
                             alpha, SCM_LINTARGET_ALPHA_MIN);
    if (!(t_max > SCM_LINTARGET_T_FIRST && t_max <= SCM_LINTARGET_T_MAX_MAX))
        return scm_error_set(err, SCM_EINVAL,
                             "t_max = %.15g is out of range: it must exceed the first recorded time "
                             "%g and be <= %g",
                             t_max, SCM_LINTARGET_T_FIRST, SCM_LINTARGET_T_MAX_MAX);
    const double v0[2] = {alpha, -alpha};
    scm_model *m = scm_lintarget_model(2, t, v0, err);
    if (!m)
        return err ? err->code : SCM_EINVAL;
    double Q[4], R[4];
    scm_status st = scm_init_random(m, d, 1.0, seed, Q, R, err);
    if (!st) {
        scm_init_scale(m, alpha, Q, R);
        scm_traj_opts o;
        scm_traj_opts_default(&o);
        o.t_max = t_max;
        o.t_first = SCM_LINTARGET_T_FIRST;
        o.n_out = n_out;
        o.grad_stop = 0.0; /* the start is near a fixed point (all zero) */
        o.dead_tol = 1e-6 * alpha * alpha; /* the start has Q_kk ~ alpha^2 */
        double eps0;
        scm_flow *fl = scm_flow_alloc(m);
        st = fl ? scm_flow_loss(fl, Q, R, &eps0) : SCM_ENOMEM;
        scm_flow_free(fl);
        if (st)
            scm_error_set(err, st, "the loss at the initial state: %s", scm_status_str(st));
        o.eps_stop = st ? 0.0 : 1e-10 * eps0;
        /* tolerances relative to the start's tiny scale */
        o.atol = fmin(o.atol, 1e-4 * alpha * alpha);
        if (!st)
            st = scm_traj_run(m, &scm_rule_two_layer, Q, R, &o, res, err);
    }
    scm_model_free(m);
    return st;
}

void scm_lintarget_phase_opts_default(scm_lintarget_phase_opts *o)
{
    o->align_tol = 1e-2;
    o->grow_factor = 10.0;
    o->coef_tol = 0.1;
    o->conv_tol = 1e-8;
}

/* The time where f crosses level between points i - 1 and i (linear). */
static double crossing(const double *t, double f0, double f1, int i, double level)
{
    if (i == 0 || f1 == f0)
        return t[i];
    double s = (level - f0) / (f1 - f0);
    return t[i - 1] + s * (t[i] - t[i - 1]);
}

scm_status scm_lintarget_phases_detect(const scm_model *m, const scm_traj_result *r,
                                       const scm_lintarget_phase_opts *o,
                                       scm_lintarget_phases *ph, scm_error *err)
{
    if (m->K != 2 || m->M != 2 || !(m->T[0] > 0.0))
        return scm_error_set(err, SCM_EINVAL,
                             "phases need the linear-target model (K = M = 2, T_11 > 0)");
    if (r->n_out < 3)
        return scm_error_set(err, SCM_EINVAL, "the record has %ld points, need >= 3", r->n_out);
    const double t11 = m->T[0];
    ph->t_align = ph->t_grow_start = ph->t_grow_end = ph->t_conv = ph->rate = NAN;
    ph->imbalance_drift = 0.0;
    double prev_a = 0.0, prev_g = 0.0, prev_c = 0.0, prev_e = 0.0, size0 = 0.0, b0[2];
    const double eps0 = r->out_eps[0];
    for (long i = 0; i < r->n_out; i++) {
        const double *Q = r->out_Q + i * 4, *R = r->out_R + i * 4, *v = r->out_v + i * 2;
        double amin = INFINITY, size = 0.0, cmin = INFINITY;
        for (int k = 0; k < 2; k++) {
            double q = Q[k * 2 + k];
            amin = fmin(amin, q > 0.0 ? fabs(R[k * 2]) / sqrt(q * t11) : 0.0);
            size = fmax(size, q + v[k] * v[k]);
            cmin = fmin(cmin, fabs(v[k]) * sqrt(fmax(q, 0.0)) / sqrt(t11));
            double b = q - v[k] * v[k];
            if (i == 0)
                b0[k] = b;
            else
                ph->imbalance_drift = fmax(ph->imbalance_drift, fabs(b - b0[k]) / size);
        }
        const double eps = r->out_eps[i];
        if (i == 0)
            size0 = size;
        int j = (int)i;
        if (isnan(ph->t_align) && amin >= 1.0 - o->align_tol)
            ph->t_align = crossing(r->out_t, prev_a, amin, j, 1.0 - o->align_tol);
        if (isnan(ph->t_grow_start) && size >= o->grow_factor * size0)
            ph->t_grow_start = crossing(r->out_t, prev_g, size, j, o->grow_factor * size0);
        if (isnan(ph->t_grow_end) && cmin >= 1.0 - o->coef_tol)
            ph->t_grow_end = crossing(r->out_t, prev_c, cmin, j, 1.0 - o->coef_tol);
        if (isnan(ph->t_conv) && isfinite(eps) && eps <= o->conv_tol * eps0)
            ph->t_conv = crossing(r->out_t, log(prev_e), log(eps), j, log(o->conv_tol * eps0));
        prev_a = amin;
        prev_g = size;
        prev_c = cmin;
        prev_e = eps;
    }
    /* the decay rate over the second half of the convergence phase: a
     * least-squares line through log eps */
    if (isfinite(ph->t_grow_end) && isfinite(ph->t_conv)) {
        double ta = 0.5 * (ph->t_grow_end + ph->t_conv), sx = 0, sy = 0, sxx = 0, sxy = 0;
        int n = 0;
        for (long i = 0; i < r->n_out; i++)
            if (r->out_t[i] >= ta && r->out_t[i] <= ph->t_conv && r->out_eps[i] > 0.0) {
                double x = r->out_t[i], y = log(r->out_eps[i]);
                sx += x;
                sy += y;
                sxx += x * x;
                sxy += x * y;
                n++;
            }
        if (n >= 3)
            ph->rate = -(n * sxy - sx * sy) / (n * sxx - sx * sx);
    }
    return SCM_OK;
}
