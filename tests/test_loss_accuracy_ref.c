/* test_loss_accuracy_ref.c: the extended-precision reference of a
 * trajectory's loss (test_loss_accuracy_ref.h), shared by
 * test_loss_accuracy.c and test_compare_trace.c. */
#include "test_loss_accuracy_ref.h"

#include <math.h>
#include <quadmath.h>
#include <string.h>

__extension__ typedef __float128 qd;

/* f, df/da, df/dc of the pair kernel in long double (MATH.md section 2). */
static void ref_pair(const scm_activation *act, ld a, ld b, ld c, ld *f, ld *fa, ld *fc)
{
    const ld pi = 3.141592653589793238462643383279502884L;
    if (act == &scm_act_linear) {
        *f = c, *fa = 0, *fc = 1;
    } else if (act == &scm_act_relu) {
        ld s2 = a * b - c * c, s = s2 > 0 ? sqrtl(s2) : 0, th = atan2l(s, -c);
        *f = (s + c * th) / (2 * pi), *fc = th / (2 * pi), *fa = s / (4 * pi * a);
    } else {
        ld D = (1 + a) * (1 + b) - c * c, sD = sqrtl(D);
        *f = (2 / pi) * asinl(c / sqrtl((1 + a) * (1 + b)));
        *fc = (2 / pi) / sD, *fa = -(c / sD) / (pi * (1 + a));
    }
}

/* f in binary128 (the loss of the reference: its O(1) terms cancel to eps). */
static qd ref_pair_q(const scm_activation *act, qd a, qd b, qd c)
{
    if (act == &scm_act_linear)
        return c;
    if (act == &scm_act_relu) {
        qd s2 = a * b - c * c, s = s2 > 0 ? sqrtq(s2) : 0;
        return (s + c * atan2q(s, -c)) / (2 * (__extension__ M_PIq));
    }
    return (2 / (__extension__ M_PIq)) * asinq(c / sqrtq((1 + a) * (1 + b)));
}

/* The loss and the flow (F_Q, F_R, and S = A + A^T when S is not NULL) at
 * (Q, R), T = I, v = v* = 1, in long double: the bookkeeping of flow.c
 * written out again. */
ld ref_flow(const scm_activation *act, int K, int M, const ld *Q, const ld *R, ld *FQ,
                   ld *FR, ld *Sout)
{
    ld A[64], B[64], S[64], e = 0, f, fa, fb, fc;
    for (int i = 0; i < K * K; i++)
        A[i] = 0;
    for (int n = 0; n < M; n++) /* teacher term: T = I */
        for (int p = 0; p < M; p++) {
            ref_pair(act, 1, 1, n == p, &f, &fa, &fc);
            e += f / 2;
        }
    for (int k = 0; k < K; k++) {
        for (int l = k; l < K; l++) {
            ref_pair(act, Q[k * K + k], Q[l * K + l], Q[k * K + l], &f, &fa, &fc);
            ref_pair(act, Q[l * K + l], Q[k * K + k], Q[k * K + l], &f, &fb, &fc);
            if (k == l) {
                e += f / 2;
                A[k * K + k] += fa + fc / 2;
            } else {
                e += f;
                A[k * K + k] += fa;
                A[l * K + l] += fb;
                A[k * K + l] = A[l * K + k] = fc / 2;
            }
        }
        for (int n = 0; n < M; n++) {
            ref_pair(act, Q[k * K + k], 1, R[k * M + n], &f, &fa, &fc);
            e -= f;
            A[k * K + k] -= fa;
            B[k * M + n] = -fc;
        }
    }
    if (!FQ)
        return e;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            S[k * K + l] = A[k * K + l] + A[l * K + k];
    if (Sout)
        memcpy(Sout, S, sizeof(ld) * (size_t)(K * K));
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            ld p = 0;
            for (int j = 0; j < K; j++)
                p += S[k * K + j] * Q[j * K + l] + Q[k * K + j] * S[j * K + l];
            for (int n = 0; n < M; n++)
                p += B[k * M + n] * R[l * M + n] + R[k * M + n] * B[l * M + n];
            FQ[k * K + l] = -p;
        }
    for (int k = 0; k < K; k++)
        for (int n = 0; n < M; n++) {
            ld p = B[k * M + n];
            for (int j = 0; j < K; j++)
                p += S[k * K + j] * R[j * M + n];
            FR[k * M + n] = -p;
        }
    return e;
}

/* The loss at C + R R^T, R (T = I, v = v* = 1) in binary128. */
static double ref_loss_cr(const scm_activation *act, int K, int M, const ld *C, const ld *R)
{
    qd Q[64], e = 0;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            qd s = C[k * K + l];
            for (int n = 0; n < M; n++)
                s += (qd)R[k * M + n] * (qd)R[l * M + n];
            Q[k * K + l] = s;
        }
    for (int n = 0; n < M; n++)
        for (int p = 0; p < M; p++)
            e += ref_pair_q(act, 1, 1, n == p) / 2;
    for (int k = 0; k < K; k++) {
        for (int l = 0; l < K; l++)
            e += ref_pair_q(act, Q[k * K + k], Q[l * K + l], Q[k * K + l]) / 2;
        for (int n = 0; n < M; n++)
            e -= ref_pair_q(act, Q[k * K + k], 1, R[k * M + n]);
    }
    return (double)e;
}

/* The right-hand side in (C, R), C = Q - R R^T (T = I):
 * dC = -(S C + C S) (flow_ext.h derives it), dR = F_R; C stays known to
 * its relative precision, which a (Q, R) state in long double would not
 * give at eps ~ 1e-12 (Q's round-off is 1e-19, C's 1e-18 is needed). */
static void ref_rhs_cr(const scm_activation *act, int K, int M, const ld *C, const ld *R, ld *dC,
                       ld *dR)
{
    ld Q[64], FQ[64], S[64];
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            ld s = C[k * K + l];
            for (int n = 0; n < M; n++)
                s += R[k * M + n] * R[l * M + n];
            Q[k * K + l] = s;
        }
    ref_flow(act, K, M, Q, R, FQ, dR, S);
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            ld p = 0;
            for (int j = 0; j < K; j++)
                p += S[k * K + j] * C[j * K + l] + C[k * K + j] * S[j * K + l];
            dC[k * K + l] = -p;
        }
}

/* RK4 in (C, R) from (Q0, R0) with step h, the loss at each time of ts
 * (increasing), summed in binary128. */
void ref_run(const scm_activation *act, int K, int M, const double *Q0, const double *R0,
                    const double *ts, long nt, ld h, double *eps)
{
    const int nq = K * K, n = nq + K * M;
    ld y[128], k1[128], k2[128], k3[128], k4[128], yt[128], t = 0;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            ld s = Q0[k * K + l];
            for (int p = 0; p < M; p++)
                s -= (ld)R0[k * M + p] * R0[l * M + p];
            y[k * K + l] = s;
        }
    for (int i = 0; i < K * M; i++)
        y[nq + i] = R0[i];
    for (long j = 0; j < nt; j++) {
        while (t < (ld)ts[j]) {
            ld hs = (ld)ts[j] - t < h ? (ld)ts[j] - t : h;
            ld *ks[4] = {k1, k2, k3, k4};
            const ld c[4] = {0, 0.5L, 0.5L, 1};
            for (int s = 0; s < 4; s++) {
                for (int i = 0; i < n; i++)
                    yt[i] = y[i] + (s ? c[s] * hs * ks[s - 1][i] : 0);
                ref_rhs_cr(act, K, M, yt, yt + nq, ks[s], ks[s] + nq);
            }
            for (int i = 0; i < n; i++)
                y[i] += hs / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
            t += hs;
        }
        eps[j] = ref_loss_cr(act, K, M, y, y + nq);
    }
}
