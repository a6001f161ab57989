/* saad_solla.h: the Saad-Solla order-parameter equations of one-pass SGD for
 * erf units, g(x) = erf(x / sqrt 2), with both layers trained and a finite
 * learning rate, written the way the field's own integrators write them
 * (sums of the closed-form integrals I2, I3, I4 over index tuples), and
 * independently of libscm.  Used by bench/euler_baseline.c (fixed-step
 * explicit Euler, the field's usual integrator) and by tests that compare
 * it with libscm.
 *
 * Conventions are those of MATH.md: time tau = eta t / d, delta_k =
 * (phi - phi*) v_k g'(lambda_k), and
 *   dR_km/dtau = -E[delta_k nu_m]
 *   dQ_kl/dtau = -E[delta_k lambda_l] - E[delta_l lambda_k] + eta E[delta_k delta_l]
 *   dv_k/dtau  = -(eta_v / eta) E[(phi - phi*) g(lambda_k)]
 * (Saad and Solla, Phys. Rev. E 52, 4225 (1995), with their alpha = t / d
 * and tau = eta alpha).  Units are numbered students 0..K-1, teachers
 * K..K+M-1; C is the (K+M) x (K+M) covariance [[Q, R], [R^T, T]].
 *
 * Closed forms (Saad and Solla 1995, appendix; for g(x) = erf(x / sqrt 2)):
 *   I2(a,b)     = E[g(a) g(b)] = (2/pi) asin(C_ab / sqrt((1 + C_aa)(1 + C_bb)))
 *   I3(a,b,c)   = E[g'(a) b g(c)]
 *               = (2/pi) (C_bc (1 + C_aa) - C_ab C_ac) / ((1 + C_aa) sqrt(L3)),
 *                 L3 = (1 + C_aa)(1 + C_cc) - C_ac^2
 *   I4(a,b,c,e) = E[g'(a) g'(b) g(c) g(e)]
 *               = (4/pi^2) asin(L0 / sqrt(L1 L2)) / sqrt(L4),
 *     L4 = (1 + C_aa)(1 + C_bb) - C_ab^2,
 *     L0 = L4 C_ce - C_bc C_be (1 + C_aa) - C_ac C_ae (1 + C_bb) + C_ab C_ac C_be + C_ab C_ae C_bc,
 *     L1 = L4 (1 + C_cc) - C_bc^2 (1 + C_aa) - C_ac^2 (1 + C_bb) + 2 C_ab C_ac C_bc,
 *     L2 = L4 (1 + C_ee) - C_be^2 (1 + C_aa) - C_ae^2 (1 + C_bb) + 2 C_ab C_ae C_be. */
#ifndef SCM_BENCH_SAAD_SOLLA_H
#define SCM_BENCH_SAAD_SOLLA_H

#include <math.h>
#include <stdlib.h>

#define SS_MAXU 16 /* K + M at most */

typedef struct {
    int K, M;
    double eta, eta_v_ratio; /* eta_v_ratio = 0: v fixed */
    const double *vs;        /* M teacher second-layer weights */
} ss_params;

/* State: Q (K x K, full, symmetric), R (K x M), v (K), in that order. */
static inline long ss_dim(const ss_params *p) { return (long)p->K * p->K + (long)p->K * p->M + p->K; }

static inline double ss_i2(const double *C, int n, int a, int b)
{
    return (2.0 / M_PI) * asin(C[a * n + b] / sqrt((1.0 + C[a * n + a]) * (1.0 + C[b * n + b])));
}

static inline double ss_i3(const double *C, int n, int a, int b, int c)
{
    const double caa = 1.0 + C[a * n + a], L3 = caa * (1.0 + C[c * n + c]) - C[a * n + c] * C[a * n + c];
    return (2.0 / M_PI) * (C[b * n + c] * caa - C[a * n + b] * C[a * n + c]) / (caa * sqrt(L3));
}

static inline double ss_i4(const double *C, int n, int a, int b, int c, int e)
{
    const double caa = 1.0 + C[a * n + a], cbb = 1.0 + C[b * n + b];
    const double ab = C[a * n + b], ac = C[a * n + c], ae = C[a * n + e];
    const double bc = C[b * n + c], be = C[b * n + e], ce = C[c * n + e];
    const double L4 = caa * cbb - ab * ab;
    const double L0 = L4 * ce - bc * be * caa - ac * ae * cbb + ab * ac * be + ab * ae * bc;
    const double L1 = L4 * (1.0 + C[c * n + c]) - bc * bc * caa - ac * ac * cbb + 2.0 * ab * ac * bc;
    const double L2 = L4 * (1.0 + C[e * n + e]) - be * be * caa - ae * ae * cbb + 2.0 * ab * ae * be;
    return (4.0 / (M_PI * M_PI)) * asin(L0 / sqrt(L1 * L2)) / sqrt(L4);
}

/* C = [[Q, R], [R^T, I]], (K + M) x (K + M). */
static inline void ss_cov(int K, int M, const double *Q, const double *R, double *C)
{
    const int n = K + M;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            C[a * n + b] = a < K && b < K ? Q[a * K + b]
                           : a < K        ? R[a * M + b - K]
                           : b < K        ? R[b * M + a - K]
                                          : (a == b ? 1.0 : 0.0);
}

/* dy/dtau at y (T = I); also the loss eps = 1/2 E[(phi - phi*)^2] if eps. */
static inline void ss_rhs(const ss_params *p, const double *y, double *ydot, double *eps)
{
    const int K = p->K, M = p->M, n = K + M;
    const double *Q = y, *R = y + K * K, *v = R + K * M;
    double C[SS_MAXU * SS_MAXU], w[SS_MAXU]; /* covariance; output weights (teachers negated) */
    ss_cov(K, M, Q, R, C);
    for (int a = 0; a < n; a++)
        w[a] = a < K ? v[a] : -p->vs[a - K];
    double *dQ = ydot, *dR = ydot + K * K, *dv = dR + K * M;
    /* E[(phi - phi*) x] for x = lambda_l / nu_m: sum_c w_c I3(k, x, c), times v_k. */
    for (int k = 0; k < K; k++)
        for (int b = 0; b < n; b++) {
            double s = 0.0;
            for (int c = 0; c < n; c++)
                s += w[c] * ss_i3(C, n, k, b, c);
            const double g = -v[k] * s; /* -E[delta_k x_b] */
            if (b < K)
                dQ[k * K + b] = g;
            else
                dR[k * M + b - K] = g;
        }
    /* Pair (k, l) reads and then overwrites only its own two entries. */
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++) {
            double s4 = 0.0;
            for (int c = 0; c < n; c++)
                for (int e = 0; e < n; e++)
                    s4 += w[c] * w[e] * ss_i4(C, n, k, l, c, e);
            const double q = dQ[k * K + l] + dQ[l * K + k] + p->eta * v[k] * v[l] * s4;
            dQ[k * K + l] = q;
            if (l != k)
                dQ[l * K + k] = q;
        }
    for (int k = 0; k < K; k++) {
        double s = 0.0;
        for (int c = 0; c < n; c++)
            s += w[c] * ss_i2(C, n, k, c);
        dv[k] = -p->eta_v_ratio * s;
    }
    if (eps) {
        double e2 = 0.0;
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                e2 += w[a] * w[b] * ss_i2(C, n, a, b);
        *eps = 0.5 * e2;
    }
}

#endif
