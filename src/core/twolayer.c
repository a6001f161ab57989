/* twolayer.c: loss, gradient and Hessian of the population loss in both
 * layers (twolayer.h).  The W gradient is scm_weights_grad on a copy of the
 * model whose v is the given one; the v gradient is the derivative of the
 * loss formula of MATH.md section 1 term by term. */
#include "scm/twolayer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

scm_status scm_twolayer_grad_v(const scm_model *m, const double *Q, const double *R,
                               const double *v, double *gv)
{
    const int K = m->K, M = m->M;
    for (int k = 0; k < K; k++) {
        double g = 0.0;
        for (int l = 0; l < K; l++) {
            scm_pair p;
            const int kl = k < l ? k * K + l : l * K + k; /* the upper triangle */
            scm_status st = m->act->pair(Q[k * K + k], Q[l * K + l], Q[kl], &p);
            if (st && st != SCM_EDEAD)
                return st;
            g += v[l] * p.f;
        }
        for (int n = 0; n < M; n++) {
            scm_pair p;
            scm_status st = m->act->pair(Q[k * K + k], m->T[n * M + n], R[k * M + n], &p);
            if (st && st != SCM_EDEAD)
                return st;
            g -= m->vs[n] * p.f;
        }
        if (!isfinite(g))
            return SCM_ENAN;
        gv[k] = g;
    }
    return SCM_OK;
}

scm_status scm_twolayer_grad(const scm_model *m, long d, const double *W, const double *Ws,
                             const double *v, double *eps, double *GW, double *gv)
{
    const int K = m->K, M = m->M;
    scm_model *mv = scm_model_alloc(K, M, m->act, m->T, v, m->vs, NULL);
    scm_flow *fl = mv ? scm_flow_alloc(mv) : NULL;
    double *Q = malloc(sizeof *Q * ((size_t)K * K + (size_t)K * M));
    scm_status st = fl && Q ? SCM_OK : SCM_ENOMEM;
    if (!st && (eps || GW))
        st = scm_weights_grad(fl, d, W, Ws, eps, GW);
    if (!st && gv) {
        scm_weights_overlaps(mv, d, W, Ws, Q, Q + (size_t)K * K);
        st = scm_twolayer_grad_v(mv, Q, Q + (size_t)K * K, v, gv);
    }
    free(Q);
    scm_flow_free(fl);
    scm_model_free(mv);
    return st;
}

scm_status scm_twolayer_hessian(const scm_model *m, long d, const double *W, const double *Ws,
                                const double *v, double h, double *H, scm_error *err)
{
    const int K = m->K;
    const long nW = (long)K * d, n = nW + K;
    if (!(h > 0.0))
        return scm_error_set(err, SCM_EINVAL, "the difference step must be > 0, got %g", h);
    double *x = malloc(sizeof *x * (size_t)n), *gp = malloc(sizeof *gp * (size_t)n),
           *gm = malloc(sizeof *gm * (size_t)n);
    if (!x || !gp || !gm) {
        free(x);
        free(gp);
        free(gm);
        return scm_error_set(err, SCM_ENOMEM, "out of memory for the two-layer Hessian");
    }
    memcpy(x, W, sizeof *x * (size_t)nW);
    memcpy(x + nW, v, sizeof *x * (size_t)K);
    double scale = 0.0;
    for (long i = 0; i < n; i++)
        scale = fmax(scale, fabs(x[i]));
    const double step = h * fmax(scale, 1.0);
    scm_status st = SCM_OK;
    for (long j = 0; j < n && !st; j++) {
        const double xj = x[j];
        x[j] = xj + step;
        st = scm_twolayer_grad(m, d, x, Ws, x + nW, NULL, gp, gp + nW);
        x[j] = xj - step;
        if (!st)
            st = scm_twolayer_grad(m, d, x, Ws, x + nW, NULL, gm, gm + nW);
        x[j] = xj;
        for (long i = 0; i < n && !st; i++)
            H[i * n + j] = (gp[i] - gm[i]) / (2.0 * step);
    }
    if (st)
        scm_error_set(err, st, "two-layer gradient failed in the Hessian: %s", scm_status_str(st));
    for (long i = 0; i < n && !st; i++)
        for (long j = 0; j < i; j++) {
            const double s = 0.5 * (H[i * n + j] + H[j * n + i]);
            H[i * n + j] = H[j * n + i] = s;
        }
    free(x);
    free(gp);
    free(gm);
    return st;
}
