/* flow_i3.c: the right-hand side of the flow in its textbook form, one
 * triple expectation I3 per term (MATH.md section 3), K^2 (K + M) of them:
 * the reference that the matrix form of flow.c is tested against
 * (tests/test_flow.c, bench/bench_rhs.c). */
#include <math.h>
#include <stdlib.h>

#include "core/flow_internal.h"
#include "core/linalg.h"
#include "scm/flow.h"
#include "scm/kernel.h"

/* I3 with a possibly zero-norm teacher unit as the third argument. */
static scm_status i3_term(const scm_activation *act, const scm_cov3 *Cin, int z_is_teacher,
                          double tol, double *out)
{
    scm_cov3 c = *Cin, *C = &c;
    c.uz = scm_flow_clamp_cs(c.uu, c.zz, c.uz, tol);
    scm_status st = act->i3(C, out);
    if (st && z_is_teacher && st == SCM_EDEAD && C->uu > 0.0) {
        *out = 0.0;
        return SCM_OK;
    }
    return st;
}

/* G (K x K) and F_R, row i of each from the triple expectations of
 * student i. */
static scm_status i3_rows(const scm_model *m, const double *v, double tol, const double *Q,
                          const double *R, double *G, double *FR)
{
    const int K = m->K, M = m->M;
    const double *vs = m->vs, *T = m->T;
    const scm_activation *act = m->act;
    scm_status st;
    for (int i = 0; i < K; i++) {
        int di = scm_flow_student_dead(m, Q, R, i);
        if (di < 0)
            return SCM_ENOTPSD;
        if (di) { /* g'(lambda_i) = 0 */
            for (int k = 0; k < K; k++)
                G[i * K + k] = 0.0;
            for (int n = 0; n < M; n++)
                FR[i * M + n] = 0.0;
            continue;
        }
        for (int k = 0; k < K; k++) {
            double s = 0.0, t;
            for (int n = 0; n < M; n++) {
                scm_cov3 C = {Q[i * K + i], Q[k * K + k], T[n * M + n],
                              Q[i * K + k], R[i * M + n], R[k * M + n]};
                if ((st = i3_term(act, &C, 1, tol, &t)))
                    return st;
                s += vs[n] * t;
            }
            for (int j = 0; j < K; j++) {
                if (scm_flow_student_dead(m, Q, R, j)) /* g(lambda_j) = 0 */
                    continue;
                scm_cov3 C = {Q[i * K + i], Q[k * K + k], Q[j * K + j],
                              Q[i * K + k], Q[i * K + j], Q[k * K + j]};
                if ((st = i3_term(act, &C, 0, tol, &t)))
                    return st;
                s -= v[j] * t;
            }
            G[i * K + k] = v[i] * s;
        }
        for (int n = 0; n < M; n++) {
            double s = 0.0, t;
            for (int p = 0; p < M; p++) {
                scm_cov3 C = {Q[i * K + i], T[n * M + n], T[p * M + p],
                              R[i * M + n], R[i * M + p], T[n * M + p]};
                if ((st = i3_term(act, &C, 1, tol, &t)))
                    return st;
                s += vs[p] * t;
            }
            for (int j = 0; j < K; j++) {
                if (scm_flow_student_dead(m, Q, R, j))
                    continue;
                scm_cov3 C = {Q[i * K + i], T[n * M + n], Q[j * K + j],
                              R[i * M + n], Q[i * K + j], R[j * M + n]};
                if ((st = i3_term(act, &C, 0, tol, &t)))
                    return st;
                s -= v[j] * t;
            }
            FR[i * M + n] = v[i] * s;
        }
    }
    return SCM_OK;
}

scm_status scm_flow_rhs_i3(scm_flow *fl, const double *Q, const double *R, double *FQ,
                           double *FR)
{
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K, M = m->M;
    /* G_ik = v_i E[(phi* - phi) g'(lambda_i) lambda_k] */
    double *G = malloc(sizeof(double) * (size_t)K * (size_t)K);
    if (!G)
        return SCM_ENOMEM;
    scm_status st = i3_rows(m, scm_flow_v(fl), scm_flow_cs_slack(m, Q), Q, R, G, FR);
    if (st) {
        free(G);
        return st;
    }
    for (int i = 0; i < K; i++)
        for (int k = i; k < K; k++)
            FQ[i * K + k] = FQ[k * K + i] = G[i * K + k] + G[k * K + i];
    free(G);
    if (!isfinite(scm_linalg_max_abs(FQ, (long)K * K)) ||
        !isfinite(scm_linalg_max_abs(FR, (long)K * M)))
        return SCM_ENAN;
    return SCM_OK;
}
