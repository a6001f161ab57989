/* flow_ext.c: the loss and the gradient flow in binary128 at a state given
 * as (C, R), C = Q - R T^-1 R^T (flow_ext.h says why).  The bookkeeping is
 * the matrix form of MATH.md section 3 (as flow.c): A = d eps / dQ with all
 * K^2 entries independent, B = d eps / dR, S = A + A^T. */
#include "scm/flow_ext.h"

#include <math.h>
#include <quadmath.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef __float128 xr;
/* pi in binary128 (quadmath.h's constant has the GNU suffix Q) */
#define XPI (__extension__ M_PIq)

struct scm_flow_ext {
    const scm_model *m;
    xr *Ti;          /* T^-1, M x M */
    xr *Q, *C, *R;   /* the state, K x K, K x K, K x M */
    xr *RTi;         /* R T^-1, K x M */
    xr *A, *S, *B;   /* K x K, K x K, K x M */
};

void scm_flow_ext_free(scm_flow_ext *x)
{
    if (!x)
        return;
    free(x->Ti);
    free(x->Q);
    free(x->C);
    free(x->R);
    free(x->RTi);
    free(x->A);
    free(x->S);
    free(x->B);
    free(x);
}

/* T^-1 by Gauss-Jordan with partial pivoting, in binary128. */
static scm_status invert_T(const scm_model *m, xr *Ti, scm_error *err)
{
    const int M = m->M;
    xr *W = malloc(sizeof(xr) * (size_t)M * (size_t)M);
    if (!W)
        return scm_error_set(err, SCM_ENOMEM, "out of memory inverting T");
    double tmax = 0.0;
    for (int i = 0; i < M * M; i++) {
        W[i] = m->T[i];
        Ti[i] = (i / M == i % M) ? 1 : 0;
        tmax = fmax(tmax, fabs(m->T[i]));
    }
    for (int c = 0; c < M; c++) {
        int p = c;
        for (int r = c + 1; r < M; r++)
            if (fabsq(W[r * M + c]) > fabsq(W[p * M + c]))
                p = r;
        if (!(fabsq(W[p * M + c]) > (xr)1e-14 * tmax)) {
            free(W);
            return scm_error_set(err, SCM_ESINGULAR,
                                 "T is singular (pivot %d): no extended-precision flow in (C, R)", c);
        }
        for (int j = 0; j < M; j++) {
            xr a = W[c * M + j], b = Ti[c * M + j];
            W[c * M + j] = W[p * M + j], Ti[c * M + j] = Ti[p * M + j];
            W[p * M + j] = a, Ti[p * M + j] = b;
        }
        const xr piv = W[c * M + c];
        for (int j = 0; j < M; j++)
            W[c * M + j] /= piv, Ti[c * M + j] /= piv;
        for (int r = 0; r < M; r++) {
            const xr f = W[r * M + c];
            if (r == c || f == 0)
                continue;
            for (int j = 0; j < M; j++)
                W[r * M + j] -= f * W[c * M + j], Ti[r * M + j] -= f * Ti[c * M + j];
        }
    }
    free(W);
    return SCM_OK;
}

scm_flow_ext *scm_flow_ext_alloc(const scm_model *m, scm_error *err)
{
    const size_t K = (size_t)m->K, M = (size_t)m->M;
    scm_flow_ext *x = calloc(1, sizeof *x);
    if (x) {
        x->m = m;
        x->Ti = malloc(sizeof(xr) * M * M);
        x->Q = malloc(sizeof(xr) * K * K);
        x->C = malloc(sizeof(xr) * K * K);
        x->R = malloc(sizeof(xr) * K * M);
        x->RTi = malloc(sizeof(xr) * K * M);
        x->A = malloc(sizeof(xr) * K * K);
        x->S = malloc(sizeof(xr) * K * K);
        x->B = malloc(sizeof(xr) * K * M);
    }
    if (!x || !x->Ti || !x->Q || !x->C || !x->R || !x->RTi || !x->A || !x->S || !x->B) {
        scm_flow_ext_free(x);
        scm_error_set(err, SCM_ENOMEM, "out of memory allocating the extended-precision flow");
        return NULL;
    }
    if (invert_T(m, x->Ti, err)) {
        scm_flow_ext_free(x);
        return NULL;
    }
    return x;
}

/* x->R = R, x->RTi = R T^-1, and P = R T^-1 R^T (K x K) into P. */
static void load_r(scm_flow_ext *x, const double *R, xr *P)
{
    const int K = x->m->K, M = x->m->M;
    for (int i = 0; i < K * M; i++)
        x->R[i] = R[i];
    for (int k = 0; k < K; k++)
        for (int n = 0; n < M; n++) {
            xr s = 0;
            for (int p = 0; p < M; p++)
                s += x->R[k * M + p] * x->Ti[p * M + n];
            x->RTi[k * M + n] = s;
        }
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++) {
            xr s = 0;
            for (int n = 0; n < M; n++)
                s += x->RTi[k * M + n] * x->R[l * M + n];
            P[k * K + l] = P[l * K + k] = s;
        }
}

void scm_flow_ext_schur(scm_flow_ext *x, const double *Q, const double *R, double *C)
{
    const int K = x->m->K;
    load_r(x, R, x->C);
    for (int i = 0; i < K * K; i++)
        C[i] = (double)((xr)Q[i] - x->C[i]);
}

/* x->C = C, x->Q = C + R T^-1 R^T. */
static void load_state(scm_flow_ext *x, const double *C, const double *R)
{
    const int K = x->m->K;
    load_r(x, R, x->Q);
    for (int i = 0; i < K * K; i++) {
        x->C[i] = C[i];
        x->Q[i] += x->C[i];
    }
}

void scm_flow_ext_q(scm_flow_ext *x, const double *C, const double *R, double *Q)
{
    const int K = x->m->K;
    load_state(x, C, R);
    for (int i = 0; i < K * K; i++)
        Q[i] = (double)x->Q[i];
}

/* f(a, b, c) = E[g(u) g(v)], (u, v) ~ N(0, [[a, c], [c, b]]), and its
 * derivatives in a and c (MATH.md section 2; as tests/test_loss_accuracy.c's
 * reference, in binary128).  ReLU: the arc-cosine kernel with
 * s = sqrt(a b - c^2) (0 where round-off makes it negative). */
static void pair(const scm_activation *act, xr a, xr b, xr c, xr *f, xr *fa, xr *fc)
{
    if (act == &scm_act_linear) {
        *f = c, *fa = 0, *fc = 1;
    } else if (act == &scm_act_relu) {
        const xr s2 = a * b - c * c, s = s2 > 0 ? sqrtq(s2) : 0, th = atan2q(s, -c);
        *f = (s + c * th) / (2 * XPI), *fc = th / (2 * XPI), *fa = s / (4 * XPI * a);
    } else {
        const xr D = (1 + a) * (1 + b) - c * c, sD = sqrtq(D);
        *f = (2 / XPI) * asinq(c / sqrtq((1 + a) * (1 + b)));
        *fc = (2 / XPI) / sD, *fa = -(c / sD) / (XPI * (1 + a));
    }
}

/* The loss at x's state, and A, B (MATH.md section 3) when grad. */
static scm_status assemble(scm_flow_ext *x, int grad, xr *eps)
{
    const scm_model *m = x->m;
    const int K = m->K, M = m->M;
    const double *v = m->v, *vs = m->vs;
    if (m->act == &scm_act_relu)
        for (int k = 0; k < K; k++)
            if (!(x->Q[k * K + k] > 0))
                return SCM_EDEAD;
    xr e = 0, f, fa, fb, fc;
    for (int i = 0; grad && i < K * K; i++)
        x->A[i] = 0;
    for (int p = 0; p < M; p++)
        for (int n = 0; n < M; n++) {
            pair(m->act, m->T[p * M + p], m->T[n * M + n], m->T[p * M + n], &f, &fa, &fc);
            e += (xr)vs[p] * vs[n] * f / 2;
        }
    for (int k = 0; k < K; k++) {
        const xr qk = x->Q[k * K + k];
        for (int l = k; l < K; l++) {
            const xr w = (xr)v[k] * v[l], ql = x->Q[l * K + l];
            pair(m->act, qk, ql, x->Q[k * K + l], &f, &fa, &fc);
            if (k == l) {
                e += w * f / 2;
                if (grad)
                    x->A[k * K + k] += w * (fa + fc / 2);
                continue;
            }
            e += w * f;
            if (grad) {
                pair(m->act, ql, qk, x->Q[k * K + l], &f, &fb, &fc);
                x->A[k * K + k] += w * fa;
                x->A[l * K + l] += w * fb;
                x->A[k * K + l] = x->A[l * K + k] = w * fc / 2;
            }
        }
        for (int n = 0; n < M; n++) {
            const xr w = (xr)v[k] * vs[n];
            pair(m->act, qk, m->T[n * M + n], x->R[k * M + n], &f, &fa, &fc);
            e -= w * f;
            if (grad) {
                x->A[k * K + k] -= w * fa;
                x->B[k * M + n] = -w * fc;
            }
        }
    }
    *eps = e;
    return isfinite((double)e) ? SCM_OK : SCM_ENAN;
}

scm_status scm_flow_ext_loss(scm_flow_ext *x, const double *C, const double *R, double *eps)
{
    xr e = 0;
    load_state(x, C, R);
    scm_status st = assemble(x, 0, &e);
    *eps = (double)e;
    return st;
}

scm_status scm_flow_ext_rhs(scm_flow_ext *x, const double *C, const double *R, double *dC,
                            double *dR, double *dQ, double *eps)
{
    const int K = x->m->K, M = x->m->M;
    const double *T = x->m->T;
    xr e;
    load_state(x, C, R);
    scm_status st = assemble(x, 1, &e);
    if (st)
        return st;
    if (eps)
        *eps = (double)e;
    xr *S = x->S;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            S[k * K + l] = x->A[k * K + l] + x->A[l * K + k];
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++) {
            /* (S C + C S)_kl = (S C)_kl + (S C)_lk (S, C symmetric) */
            xr sc = 0, q = 0;
            for (int j = 0; j < K; j++) {
                sc += S[k * K + j] * x->C[j * K + l] + S[l * K + j] * x->C[j * K + k];
                q += S[k * K + j] * x->Q[j * K + l] + S[l * K + j] * x->Q[j * K + k];
            }
            for (int n = 0; dQ && n < M; n++)
                q += x->B[k * M + n] * x->R[l * M + n] + x->R[k * M + n] * x->B[l * M + n];
            dC[k * K + l] = dC[l * K + k] = (double)-sc;
            if (dQ)
                dQ[k * K + l] = dQ[l * K + k] = (double)-q;
        }
    for (int k = 0; k < K; k++)
        for (int n = 0; n < M; n++) {
            xr p = 0;
            for (int j = 0; j < K; j++)
                p += S[k * K + j] * x->R[j * M + n];
            for (int j = 0; j < M; j++)
                p += x->B[k * M + j] * (xr)T[j * M + n];
            dR[k * M + n] = (double)-p;
        }
    return SCM_OK;
}
