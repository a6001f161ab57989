/* flow.c: eps(Q, R), its partial derivatives and the flow (F_Q, F_R) of
 * MATH.md section 3, in the matrix form and in the textbook I3 form.
 *
 * Derivative bookkeeping (all K^2 entries of Q independent):
 *   A_kl = 1/2 v_k v_l fc(Q_kk, Q_ll, Q_kl)                        (k != l)
 *   A_kk = 1/2 v_k^2 fc(k,k) + sum_l v_k v_l fa(Q_kk, Q_ll, Q_kl)
 *          - sum_m v_k v*_m fa(Q_kk, T_mm, R_km)
 *   B_km = -v_k v*_m fc(Q_kk, T_mm, R_km)
 * using fb(b, a, c) = fa(a, b, c) for the symmetric terms. */
#include "scm/flow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_eigen.h>

#include "core/flow_internal.h"
#include "core/kernel_batch.h"
#include "core/linalg.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define SCM_FLOW_AVX2 1 /* lin_dgrad also in AVX2 and AVX-512 registers */
#endif

struct scm_flow {
    const scm_model *m;
    double eps_tt;  /* the constant teacher-teacher term of eps */
    int T_identity; /* T = I: B T is B itself */
    const double *v; /* second layer in use: the model's, or scm_flow_set_v's */
    double *A, *B, *S, *P;
    double *RT, *C; /* scratch: R^T (M x K), a K x K product */
    double *F; /* K x (K + M) pair values f of scm_flow_rhs_gv */
    /* A and B hold flow_grad's values at (gQ, gR) with the second layer gv
     * when g_valid: a linearisation at the point of the last right-hand
     * side (CVODE's set-up at its predictor) copies them */
    double *gQ, *gR, *gv;
    int g_valid;
    double *sq; /* sqrt of the diagonal: K students (per call), M teachers */
    /* one row of pairs of flow_grad (K + M): arguments, values, statuses */
    double *rb, *rc;
    scm_pair *rp;
    scm_status *rst;
    struct flow_lin *lin; /* the linearisation of scm_flow_jvp, lazily */
    struct flow_pc *pc;   /* the preconditioner of scm_flow_precond_*, lazily */
    scm_linalg_isa isa;   /* the copy of the jvp and lin_dgrad (linalg.h): the widest */
};

/* The teacher's self-overlap term 1/2 sum v*_m v*_n f(T_mm, T_nn, T_mn);
 * a zero-norm teacher unit contributes nothing. */
static double teacher_term(const scm_model *m)
{
    double e = 0.0;
    for (int a = 0; a < m->M; a++)
        for (int b = 0; b < m->M; b++) {
            scm_pair p;
            if (m->act->pair(m->T[a * m->M + a], m->T[b * m->M + b], m->T[a * m->M + b], &p) ==
                SCM_OK)
                e += 0.5 * m->vs[a] * m->vs[b] * p.f;
        }
    return e;
}

/* The cache of scm_flow_jvp: the point (Q, R), its A, B, S, the second
 * derivatives of every student-student (k < l) and student-teacher pair,
 * the derivative h_k of the self term of A_kk along Q_kk, and room for the
 * product. */
struct flow_lin {
    int valid;
    int any_dead; /* a dead student at the point (its direction entries are zeroed) */
    double *Q, *R, *A, *B, *S, *h, *dQ, *dR, *dA, *dB, *P;
    double *RT, *BT, *C; /* R^T, B^T (M x K) at the point; a K x K product */
    /* the second derivatives, one K x K array per component (aa, ab, ac,
     * bb, bc, cc) for the student pairs (k < l), one K x M array (aa, ac,
     * cc) for the student-teacher pairs: lin_dgrad runs along a row of
     * each, in vector registers; dg, tk: K and max(K, M) scratch */
    double *ss[6], *st[3], *dg, *tk;
};

static void lin_free(struct flow_lin *L)
{
    if (!L)
        return;
    free(L->Q); /* one block holds all the doubles */
    free(L->ss[0]);
    free(L);
}

scm_flow *scm_flow_alloc(const scm_model *model)
{
    scm_flow *fl = calloc(1, sizeof *fl);
    if (!fl)
        return NULL;
    size_t K = (size_t)model->K, M = (size_t)model->M;
    fl->m = model;
    fl->v = model->v;
    fl->isa = scm_linalg_widest();
    fl->A = malloc(sizeof(double) * K * K);
    fl->B = malloc(sizeof(double) * K * M);
    fl->S = malloc(sizeof(double) * K * K);
    fl->P = malloc(sizeof(double) * K * (K > M ? K : M));
    fl->F = malloc(sizeof(double) * K * (K + M));
    fl->RT = malloc(sizeof(double) * K * M);
    fl->C = malloc(sizeof(double) * K * K);
    fl->gQ = malloc(sizeof(double) * (K * K + K * M + 4 * K + 3 * M));
    fl->rp = malloc(sizeof(scm_pair) * (K + M));
    fl->rst = malloc(sizeof(scm_status) * (K + M));
    if (!fl->A || !fl->B || !fl->S || !fl->P || !fl->F || !fl->RT || !fl->C || !fl->gQ ||
        !fl->rp || !fl->rst) {
        scm_flow_free(fl);
        return NULL;
    }
    fl->gR = fl->gQ + K * K;
    fl->gv = fl->gR + K * M;
    fl->sq = fl->gv + K;
    fl->rb = fl->sq + K + M;
    fl->rc = fl->rb + K + M;
    for (size_t n = 0; n < M; n++)
        fl->sq[K + n] = sqrt(model->T[n * M + n]);
    fl->eps_tt = teacher_term(model);
    fl->T_identity = 1;
    for (size_t i = 0; i < M * M; i++)
        fl->T_identity &= model->T[i] == (i % (M + 1) == 0 ? 1.0 : 0.0);
    return fl;
}

static void pc_free(struct flow_pc *pc);

void scm_flow_free(scm_flow *fl)
{
    if (!fl)
        return;
    free(fl->A);
    free(fl->B);
    free(fl->S);
    free(fl->P);
    free(fl->F);
    free(fl->RT);
    free(fl->C);
    free(fl->gQ);
    free(fl->rp);
    free(fl->rst);
    lin_free(fl->lin);
    pc_free(fl->pc);
    free(fl);
}

const scm_model *scm_flow_model(const scm_flow *fl) { return fl->m; }

const double *scm_flow_v(const scm_flow *fl) { return fl->v; }

void scm_flow_set_v(scm_flow *fl, const double *v) { fl->v = v ? v : fl->m->v; }

/* A kernel failure on the teacher side of a pair means a zero-norm teacher
 * unit (ReLU), whose terms vanish; on the student side it is an error. */
static int teacher_dead(scm_status st) { return st == SCM_EDEAD; }

/* A ReLU student with Q_kk = 0 exactly is dead: with the subgradient
 * g'(0) = 0 it contributes nothing to eps and receives no gradient, so it
 * stays at zero.  Returns 1 for a dead student, 0 for a live one, and -1
 * for Q_kk = 0 with a non-zero overlap (not a Gram matrix). */
static int student_dead(const scm_model *m, const double *Q, const double *R, int k)
{
    const int K = m->K, M = m->M;
    if (m->act != &scm_act_relu || Q[k * K + k] != 0.0)
        return 0;
    for (int l = 0; l < K; l++)
        if (Q[k * K + l] != 0.0 || Q[l * K + k] != 0.0)
            return -1;
    for (int n = 0; n < M; n++)
        if (R[k * M + n] != 0.0)
            return -1;
    return 1;
}

int scm_flow_student_dead(const scm_model *m, const double *Q, const double *R, int k)
{
    return student_dead(m, Q, R, k);
}

/* The absolute slack of the Cauchy-Schwarz bound: SCM_FLOW_CS_SLACK times
 * the largest squared norm of the state, the scale of the integration error
 * (and of traj's PSD check).  The kernels allow a relative excess only,
 * which a small student parallel to another exceeds by integration error
 * alone. */
double scm_flow_cs_slack(const scm_model *m, const double *Q)
{
    double s = 0.0;
    for (int k = 0; k < m->K; k++)
        s = fmax(s, Q[k * m->K + k]);
    for (int n = 0; n < m->M; n++)
        s = fmax(s, m->T[n * m->M + n]);
    return SCM_FLOW_CS_SLACK * s;
}

/* c clamped onto +-n, n = sqrt(ab), when it exceeds it by at most tol. */
static double clamp_cs_n(double n, double c, double tol)
{
    return fabs(c) > n && fabs(c) - n <= tol ? copysign(n, c) : c;
}

double scm_flow_clamp_cs(double a, double b, double c, double tol)
{
    return clamp_cs_n(sqrt(a) * sqrt(b), c, tol);
}

/* The pairs of student k with the students l = k .. K - 1, then with the
 * teachers, into rp and rst (as the activation's pair() gives them; ReLU's
 * side by side, scm_kernel_relu_pairs), arguments clamped by clamp_cs_n.
 * The pairs of dead students are formed too, and ignored by the caller. */
static void row_pairs(scm_flow *fl, const double *Q, const double *R, int k, double tol)
{
    const scm_model *m = fl->m;
    const int K = m->K, M = m->M, n = K - k + M;
    const double *sq = fl->sq, a = Q[k * K + k];
    for (int l = k; l < K; l++) {
        fl->rb[l - k] = Q[l * K + l];
        fl->rc[l - k] = clamp_cs_n(sq[k] * sq[l], Q[k * K + l], tol);
    }
    for (int p = 0; p < M; p++) {
        fl->rb[K - k + p] = m->T[p * M + p];
        fl->rc[K - k + p] = clamp_cs_n(sq[k] * sq[K + p], R[k * M + p], tol);
    }
    if (m->act == &scm_act_relu) {
        scm_kernel_relu_pairs(a, n, fl->rb, fl->rc, fl->rp, fl->rst);
        return;
    }
    for (int i = 0; i < n; i++)
        fl->rst[i] = m->act->pair(a, fl->rb[i], fl->rc[i], &fl->rp[i]);
}

/* scm_flow_grad, and when F is not NULL the pair values f in F (K x (K + M),
 * row k: f(k, l) for the students l, then f(k, n) for the teachers n; zero
 * for a dead student). */
static scm_status flow_grad(scm_flow *fl, const double *Q, const double *R, double *eps,
                            double *A, double *B, double *F)
{
    const scm_model *m = fl->m;
    const int K = m->K, M = m->M;
    const double *v = fl->v, *vs = m->vs;
    const double tol = scm_flow_cs_slack(m, Q);
    double e = fl->eps_tt;
    if (A)
        memset(A, 0, sizeof(double) * (size_t)K * (size_t)K);
    if (B)
        memset(B, 0, sizeof(double) * (size_t)K * (size_t)M);
    if (F)
        memset(F, 0, sizeof(double) * (size_t)K * (size_t)(K + M));
    for (int k = 0; k < K; k++) /* sqrt(Q_kk), then sqrt(T_nn): scm_flow_clamp_cs's, once */
        fl->sq[k] = sqrt(Q[k * K + k]);
    for (int k = 0; k < K; k++) {
        int dk = student_dead(m, Q, R, k);
        if (dk < 0)
            return SCM_ENOTPSD;
        if (dk)
            continue;
        row_pairs(fl, Q, R, k, tol);
        for (int l = k; l < K; l++) {
            if (l > k && student_dead(m, Q, R, l))
                continue;
            const scm_pair p = fl->rp[l - k];
            const scm_status st = fl->rst[l - k];
            if (st)
                return st;
            if (F)
                F[k * (K + M) + l] = F[l * (K + M) + k] = p.f;
            double w = v[k] * v[l];
            if (k == l) {
                e += 0.5 * w * p.f;
                if (A)
                    A[k * K + k] += w * p.fa + 0.5 * w * p.fc;
            } else {
                e += w * p.f;
                if (A) {
                    A[k * K + k] += w * p.fa;
                    A[l * K + l] += w * p.fb;
                    A[k * K + l] = A[l * K + k] = 0.5 * w * p.fc;
                }
            }
        }
        for (int n = 0; n < M; n++) {
            const scm_pair p = fl->rp[K - k + n];
            const scm_status st = fl->rst[K - k + n];
            if (st && !(teacher_dead(st) && Q[k * K + k] > 0.0))
                return st;
            if (F)
                F[k * (K + M) + K + n] = p.f;
            double w = v[k] * vs[n];
            e -= w * p.f;
            if (A)
                A[k * K + k] -= w * p.fa;
            if (B)
                B[k * M + n] = -w * p.fc;
        }
    }
    if (!isfinite(e))
        return SCM_ENAN;
    if (eps)
        *eps = e;
    return SCM_OK;
}

scm_status scm_flow_grad(scm_flow *fl, const double *Q, const double *R, double *eps,
                         double *A, double *B)
{
    return flow_grad(fl, Q, R, eps, A, B, NULL);
}

/* flow_grad into fl->A and fl->B, remembering the point (see g_valid). */
static scm_status grad_own(scm_flow *fl, const double *Q, const double *R, double *eps,
                           double *F)
{
    const size_t K = (size_t)fl->m->K, M = (size_t)fl->m->M;
    scm_status st = flow_grad(fl, Q, R, eps, fl->A, fl->B, F);
    fl->g_valid = st == SCM_OK;
    if (fl->g_valid) {
        memcpy(fl->gQ, Q, sizeof(double) * K * K);
        memcpy(fl->gR, R, sizeof(double) * K * M);
        memcpy(fl->gv, fl->v, sizeof(double) * K);
    }
    return st;
}

/* A and B at (Q, R) into A and B: fl's, when they were taken there (with
 * the same second layer), else flow_grad's.  The same bits either way. */
static scm_status grad_at(scm_flow *fl, const double *Q, const double *R, double *A, double *B)
{
    const size_t K = (size_t)fl->m->K, M = (size_t)fl->m->M;
    if (fl->g_valid && memcmp(fl->gQ, Q, sizeof(double) * K * K) == 0 &&
        memcmp(fl->gR, R, sizeof(double) * K * M) == 0 &&
        memcmp(fl->gv, fl->v, sizeof(double) * K) == 0) {
        memcpy(A, fl->A, sizeof(double) * K * K);
        memcpy(B, fl->B, sizeof(double) * K * M);
        return SCM_OK;
    }
    return flow_grad(fl, Q, R, NULL, A, B, NULL);
}

scm_status scm_flow_loss(scm_flow *fl, const double *Q, const double *R, double *eps)
{
    return scm_flow_grad(fl, Q, R, eps, NULL, NULL);
}

/* S = A + A^T from the scratch A. */
static void symmetrise(int K, const double *A, double *S)
{
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            S[k * K + l] = A[k * K + l] + A[l * K + k];
}

/* scm_flow_rhs, the pair values in F as flow_grad's (F may be NULL). */
static scm_status flow_rhs(scm_flow *fl, const double *Q, const double *R, double *FQ,
                           double *FR, double *eps, double *F)
{
    const scm_model *m = fl->m;
    const int K = m->K, M = m->M;
    scm_status st = grad_own(fl, Q, R, eps, F);
    if (st)
        return st;
    symmetrise(K, fl->A, fl->S);
    /* P = S Q + B R^T;  F_Q = -(P + P^T) */
    double *P = fl->P;
    scm_linalg_gemm(K, K, K, fl->S, Q, 0, P);
    scm_linalg_transpose(K, M, R, fl->RT); /* B R^T as a plain product: blocked */
    scm_linalg_gemm(K, K, M, fl->B, fl->RT, 0, fl->C);
    for (long i = 0; i < (long)K * K; i++)
        P[i] += fl->C[i];
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            FQ[k * K + l] = FQ[l * K + k] = -(P[k * K + l] + P[l * K + k]);
    /* F_R = -(S R + B T) */
    scm_linalg_gemm(K, M, K, fl->S, R, 0, FR);
    const double *BT = fl->B;
    if (!fl->T_identity) {
        scm_linalg_gemm(K, M, M, fl->B, m->T, 0, P);
        BT = P;
    }
    for (long i = 0; i < (long)K * M; i++)
        FR[i] = -(FR[i] + BT[i]);
    if (!isfinite(scm_linalg_max_abs(FQ, (long)K * K)) ||
        !isfinite(scm_linalg_max_abs(FR, (long)K * M)))
        return SCM_ENAN;
    return SCM_OK;
}

scm_status scm_flow_rhs(scm_flow *fl, const double *Q, const double *R, double *FQ,
                        double *FR, double *eps)
{
    return flow_rhs(fl, Q, R, FQ, FR, eps, NULL);
}

/* gv from the pair values, summed in scm_twolayer_grad_v's order. */
scm_status scm_flow_rhs_gv(scm_flow *fl, const double *Q, const double *R, double *FQ,
                           double *FR, double *eps, double *gv)
{
    const scm_model *m = fl->m;
    const int K = m->K, M = m->M;
    scm_status st = flow_rhs(fl, Q, R, FQ, FR, eps, fl->F);
    if (st)
        return st;
    for (int k = 0; k < K; k++) {
        const double *f = fl->F + (long)k * (K + M);
        double g = 0.0;
        for (int l = 0; l < K; l++)
            g += fl->v[l] * f[l];
        for (int n = 0; n < M; n++)
            g -= m->vs[n] * f[K + n];
        if (!isfinite(g))
            return SCM_ENAN;
        gv[k] = g;
    }
    return SCM_OK;
}

scm_status scm_flow_grad_norm2(scm_flow *fl, const double *Q, const double *R, double *g2)
{
    const scm_model *m = fl->m;
    const int K = m->K, M = m->M;
    scm_status st = grad_own(fl, Q, R, NULL, NULL);
    if (st)
        return st;
    symmetrise(K, fl->A, fl->S);
    const double *S = fl->S, *B = fl->B;
    double *P = fl->P, s = 0.0;
    scm_linalg_gemm(K, K, K, S, Q, 0, P); /* tr(S Q S) */
    for (long i = 0; i < (long)K * K; i++)
        s += P[i] * S[i];
    scm_linalg_gemm(K, M, K, S, R, 0, P); /* 2 tr(S R B^T) */
    for (long i = 0; i < (long)K * M; i++)
        s += 2.0 * P[i] * B[i];
    scm_linalg_gemm(K, M, M, B, m->T, 0, P); /* tr(B T B^T) */
    for (long i = 0; i < (long)K * M; i++)
        s += P[i] * B[i];
    *g2 = s;
    return isfinite(s) ? SCM_OK : SCM_ENAN;
}

/* ---- Jacobian-vector product (docs/sweeps.md, "Analytic Jv") ---- */

static struct flow_lin *lin_alloc(int K, int M)
{
    struct flow_lin *L = calloc(1, sizeof *L);
    if (!L)
        return NULL;
    size_t KK = (size_t)K * K, KM = (size_t)K * M, KP = (size_t)K * (size_t)(K > M ? K : M);
    L->Q = malloc(sizeof(double) * (6 * KK + 6 * KM + (size_t)K + KP));
    L->ss[0] = malloc(sizeof(double) * (6 * KK + 3 * KM + (size_t)K + KP));
    if (!L->Q || !L->ss[0]) {
        lin_free(L);
        return NULL;
    }
    L->R = L->Q + KK;
    L->A = L->R + KM;
    L->B = L->A + KK;
    L->S = L->B + KM;
    L->h = L->S + KK;
    L->dQ = L->h + K;
    L->dR = L->dQ + KK;
    L->dA = L->dR + KM;
    L->dB = L->dA + KK;
    L->P = L->dB + KM;
    L->RT = L->P + KP;
    L->BT = L->RT + KM;
    L->C = L->BT + KM;
    for (int i = 1; i < 6; i++)
        L->ss[i] = L->ss[i - 1] + KK;
    L->st[0] = L->ss[5] + KK;
    for (int i = 1; i < 3; i++)
        L->st[i] = L->st[i - 1] + KM;
    L->dg = L->st[2] + KM;
    L->tk = L->dg + K;
    return L;
}

/* Second derivatives below this sqrt(1 - rho^2) are refused (as in the
 * Hessian of stability.c): the caller falls back to difference quotients. */
#define FLOW_JVP_SREL_MIN 1e-6

/* Linearise at (Q, R): A, B, S and every pair's second derivatives. */
static scm_status lin_setup(scm_flow *fl, struct flow_lin *L, const double *Q, const double *R)
{
    const scm_model *m = fl->m;
    const int K = m->K, M = m->M;
    const scm_activation *act = m->act;
    L->valid = 0;
    scm_status st = grad_at(fl, Q, R, L->A, L->B);
    if (st)
        return st;
    symmetrise(K, L->A, L->S);
    L->any_dead = 0;
    for (int k = 0; k < K; k++) {
        L->h[k] = 0.0;
        if (student_dead(m, Q, R, k)) {
            L->any_dead = 1;
            continue;
        }
        double a = Q[k * K + k];
        scm_pair2 q;
        /* the self term w (fa + fc / 2) at (a, a, a): constant for ReLU
         * (fa = 0, fc = 1/2 there, where the second derivatives diverge) */
        if (act != &scm_act_relu) {
            if ((st = scm_kernel_pair2(act, FLOW_JVP_SREL_MIN, a, a, a, &q)))
                return st;
            L->h[k] = m->v[k] * m->v[k] * (q.aa + q.ab + q.ac + 0.5 * (q.ac + q.bc + q.cc));
        }
        for (int l = k + 1; l < K; l++) {
            q = (scm_pair2){0, 0, 0, 0, 0, 0};
            if (!student_dead(m, Q, R, l) &&
                (st = scm_kernel_pair2(act, FLOW_JVP_SREL_MIN, a, Q[l * K + l], Q[k * K + l], &q)))
                return st;
            const double c[6] = {q.aa, q.ab, q.ac, q.bb, q.bc, q.cc};
            for (int i = 0; i < 6; i++)
                L->ss[i][k * K + l] = c[i];
        }
        for (int n = 0; n < M; n++) {
            st = scm_kernel_pair2(act, FLOW_JVP_SREL_MIN, a, m->T[n * M + n], R[k * M + n], &q);
            if (st == SCM_EDEAD) /* a zero-norm teacher unit: no terms */
                st = SCM_OK;
            if (st)
                return st;
            L->st[0][k * M + n] = q.aa;
            L->st[1][k * M + n] = q.ac;
            L->st[2][k * M + n] = q.cc;
        }
    }
    memcpy(L->Q, Q, sizeof(double) * (size_t)K * (size_t)K);
    memcpy(L->R, R, sizeof(double) * (size_t)K * (size_t)M);
    scm_linalg_transpose(K, M, R, L->RT);
    scm_linalg_transpose(K, M, L->B, L->BT);
    L->valid = 1;
    return SCM_OK;
}

/* *L: the linearisation at (Q, R), allocated and set up unless the last
 * one was at that point. */
static scm_status lin_at(scm_flow *fl, const double *Q, const double *R, struct flow_lin **L)
{
    const size_t KK = (size_t)fl->m->K * (size_t)fl->m->K, KM = (size_t)fl->m->K * (size_t)fl->m->M;
    if (!fl->lin && !(fl->lin = lin_alloc(fl->m->K, fl->m->M)))
        return SCM_ENOMEM;
    *L = fl->lin;
    if ((*L)->valid && memcmp((*L)->Q, Q, sizeof(double) * KK) == 0 &&
        memcmp((*L)->R, R, sizeof(double) * KM) == 0)
        return SCM_OK;
    return lin_setup(fl, *L, Q, R);
}

/* dA and dB in the direction (dQ, dR) from the cached second derivatives
 * (the derivative of the bookkeeping in scm_flow_grad).  Every entry
 * receives the terms of the textbook double loop over the pairs (k < l,
 * then the teachers n), each formed by the same expression, in the same
 * order: the terms of a row are formed side by side (the compiler
 * vectorises the loops over l and n), the sums into A_kk then taken in
 * turn, and the diagonal of dA is kept in dg (contiguous) meanwhile. */
static inline __attribute__((always_inline)) void lin_dgrad_body(
    const scm_model *m, struct flow_lin *restrict L, const double *restrict dQ,
    const double *restrict dR)
{
    const int K = m->K, M = m->M;
    const double *restrict v = m->v, *restrict vs = m->vs;
    double *restrict dA = L->dA, *restrict dB = L->dB, *restrict dg = L->dg, *restrict t = L->tk;
    memset(dA, 0, sizeof(double) * (size_t)K * (size_t)K);
    memset(dB, 0, sizeof(double) * (size_t)K * (size_t)M);
    memset(dg, 0, sizeof(double) * (size_t)K);
    double *restrict dd = L->P; /* the diagonal of dQ, contiguous (P is free here) */
    for (int k = 0; k < K; k++)
        dd[k] = dQ[k * K + k];
    for (int k = 0; k < K; k++) {
        if (student_dead(m, L->Q, L->R, k))
            continue;
        const double da = dd[k], vk = v[k];
        const long o = (long)k * K;
        const double *restrict aa = L->ss[0] + o, *restrict ab = L->ss[1] + o,
                               *restrict ac = L->ss[2] + o, *restrict bb = L->ss[3] + o,
                               *restrict bc = L->ss[4] + o, *restrict cc = L->ss[5] + o;
        const double *restrict dc = dQ + o;
        dg[k] += L->h[k] * da;
        for (int l = k + 1; l < K; l++) {
            const double w = vk * v[l], db = dd[l];
            t[l] = w * (aa[l] * da + ab[l] * db + ac[l] * dc[l]);
            dg[l] += w * (ab[l] * da + bb[l] * db + bc[l] * dc[l]);
            dA[o + l] = 0.5 * w * (ac[l] * da + bc[l] * db + cc[l] * dc[l]);
        }
        double s = dg[k];
        for (int l = k + 1; l < K; l++)
            s += t[l];
        const long p = (long)k * M;
        const double *restrict ta = L->st[0] + p, *restrict tc = L->st[1] + p,
                               *restrict tcc = L->st[2] + p, *restrict dr = dR + p;
        for (int n = 0; n < M; n++) {
            const double w = vk * vs[n];
            t[n] = w * (ta[n] * da + tc[n] * dr[n]);
            dB[p + n] = -w * (tc[n] * da + tcc[n] * dr[n]);
        }
        for (int n = 0; n < M; n++)
            s -= t[n];
        dg[k] = s;
    }
    for (int k = 0; k < K; k++) {
        dA[(long)k * K + k] = dg[k];
        for (int l = k + 1; l < K; l++)
            dA[(long)l * K + k] = dA[(long)k * K + l];
    }
}

#ifdef SCM_FLOW_AVX2
__attribute__((target("avx2"))) static void lin_dgrad_avx2(const scm_model *m, struct flow_lin *L,
                                                          const double *dQ, const double *dR)
{
    lin_dgrad_body(m, L, dQ, dR);
}

__attribute__((target("avx512f,prefer-vector-width=512"))) static void lin_dgrad_avx512(
    const scm_model *m, struct flow_lin *L, const double *dQ, const double *dR)
{
    lin_dgrad_body(m, L, dQ, dR);
}
#endif

static void lin_dgrad(const scm_flow *fl, struct flow_lin *L, const double *dQ, const double *dR)
{
    switch (fl->isa) {
#ifdef SCM_FLOW_AVX2
    case SCM_LINALG_AVX2:
        lin_dgrad_avx2(fl->m, L, dQ, dR);
        return;
    case SCM_LINALG_AVX512:
        lin_dgrad_avx512(fl->m, L, dQ, dR);
        return;
#endif
    default:
        lin_dgrad_body(fl->m, L, dQ, dR);
    }
}

int scm_flow_set_isa(scm_flow *fl, scm_linalg_isa isa)
{
    if (!scm_linalg_has(isa))
        return -1;
    fl->isa = isa;
    return 0;
}

/* scm_flow_jvp at the point of the linearisation L, inlined into one copy
 * per instruction set (fl->isa): the loops are the same C in each. */
static inline __attribute__((always_inline)) scm_status flow_jvp_body(
    scm_flow *fl, struct flow_lin *L, const double *Q, const double *R, const double *dQ,
    const double *dR, double *JQ, double *JR)
{
    const scm_model *m = fl->m;
    const int K = m->K, M = m->M;
    const long KK = (long)K * K, KM = (long)K * M;
    if (L->any_dead) { /* the direction with the dead students' rows and columns zeroed */
        memcpy(L->dQ, dQ, sizeof(double) * (size_t)KK);
        memcpy(L->dR, dR, sizeof(double) * (size_t)KM);
        for (int k = 0; k < K; k++)
            if (student_dead(m, Q, R, k)) {
                for (int l = 0; l < K; l++)
                    L->dQ[k * K + l] = L->dQ[l * K + k] = 0.0;
                for (int n = 0; n < M; n++)
                    L->dR[k * M + n] = 0.0;
            }
        dQ = L->dQ;
        dR = L->dR;
    }
    lin_dgrad(fl, L, dQ, dR);
    double *dS = fl->S, *P = L->P; /* fl->S is scratch here */
    symmetrise(K, L->dA, dS);
    /* P = dS Q + S dQ + dB R^T + B dR^T;  J_Q = -(P + P^T) */
    scm_linalg_gemm(K, K, K, dS, Q, 0, P);
    scm_linalg_gemm(K, K, K, L->S, dQ, 0, L->dA); /* dA is spent: scratch */
    /* B dR^T enters J_Q only through P + P^T, so its transpose dR B^T
     * serves: both as plain (blocked) products with the cached transposes */
    for (long i = 0; i < KK; i++)
        P[i] += L->dA[i];
    scm_linalg_gemm(K, K, M, L->dB, L->RT, 0, L->C);
    for (long i = 0; i < KK; i++)
        P[i] += L->C[i];
    scm_linalg_gemm(K, K, M, dR, L->BT, 0, L->C);
    for (long i = 0; i < KK; i++)
        P[i] += L->C[i];
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            JQ[k * K + l] = JQ[l * K + k] = -(P[k * K + l] + P[l * K + k]);
    /* J_R = -(dS R + S dR + dB T) */
    scm_linalg_gemm(K, M, K, dS, R, 0, JR);
    scm_linalg_gemm(K, M, K, L->S, dR, 0, P);
    for (long i = 0; i < KM; i++)
        JR[i] += P[i];
    const double *dBT = L->dB;
    if (!fl->T_identity) {
        scm_linalg_gemm(K, M, M, L->dB, m->T, 0, P);
        dBT = P;
    }
    for (long i = 0; i < KM; i++)
        JR[i] = -(JR[i] + dBT[i]);
    if (!isfinite(scm_linalg_max_abs(JQ, KK)) || !isfinite(scm_linalg_max_abs(JR, KM)))
        return SCM_ENAN;
    return SCM_OK;
}

#ifdef SCM_FLOW_AVX2
__attribute__((target("avx2"))) static scm_status flow_jvp_avx2(
    scm_flow *fl, struct flow_lin *L, const double *Q, const double *R, const double *dQ,
    const double *dR, double *JQ, double *JR)
{
    return flow_jvp_body(fl, L, Q, R, dQ, dR, JQ, JR);
}

__attribute__((target("avx512f,prefer-vector-width=512"))) static scm_status flow_jvp_avx512(
    scm_flow *fl, struct flow_lin *L, const double *Q, const double *R, const double *dQ,
    const double *dR, double *JQ, double *JR)
{
    return flow_jvp_body(fl, L, Q, R, dQ, dR, JQ, JR);
}
#endif

scm_status scm_flow_jvp(scm_flow *fl, const double *Q, const double *R, const double *dQ,
                        const double *dR, double *JQ, double *JR)
{
    struct flow_lin *L;
    scm_status st = lin_at(fl, Q, R, &L);
    if (st)
        return st;
    switch (fl->isa) {
#ifdef SCM_FLOW_AVX2
    case SCM_LINALG_AVX2:
        return flow_jvp_avx2(fl, L, Q, R, dQ, dR, JQ, JR);
    case SCM_LINALG_AVX512:
        return flow_jvp_avx512(fl, L, Q, R, dQ, dR, JQ, JR);
#endif
    default:
        return flow_jvp_body(fl, L, Q, R, dQ, dR, JQ, JR);
    }
}

/* ---- the Jacobian of (F_Q, F_R) (docs/fixed-points.md, "Analytic Jacobian") ---- */

/* C += X Y for K x K X with many zeros (a unit direction's dS or dQ):
 * rows of Y are added where X has a non-zero, so the cost is nnz(X) ncol. */
static void add_sparse_prod(int rows, int inner, int ncol, const double *X, const double *Y,
                            int transy, double *C)
{
    for (int k = 0; k < rows; k++)
        for (int j = 0; j < inner; j++) {
            const double x = X[k * inner + j];
            if (x == 0.0)
                continue;
            if (transy)
                for (int l = 0; l < ncol; l++)
                    C[k * ncol + l] += x * Y[l * inner + j];
            else
                for (int l = 0; l < ncol; l++)
                    C[k * ncol + l] += x * Y[j * ncol + l];
        }
}

scm_status scm_flow_jacobian(scm_flow *fl, const double *Q, const double *R, double *J)
{
    const scm_model *m = fl->m;
    const int K = m->K, M = m->M;
    const long KK = (long)K * K, KM = (long)K * M, n = (long)K * (K + 1) / 2 + KM;
    if (fl->v != m->v)
        return SCM_EINVAL; /* the cached second derivatives carry the model's v */
    struct flow_lin *L;
    scm_status st = lin_at(fl, Q, R, &L);
    if (st)
        return st;
    double *dQ = L->dQ, *dR = L->dR, *dS = fl->S, *P = L->P;
    memset(dQ, 0, sizeof(double) * (size_t)KK);
    memset(dR, 0, sizeof(double) * (size_t)KM);
    long col = 0;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: the Q unknowns (k <= l); pass 1: the R unknowns (k, l = n) */
        for (int k = 0; k < K; k++)
            for (int l = pass ? 0 : k; l < (pass ? M : K); l++, col++) {
                double *unit = pass ? &dR[k * M + l] : &dQ[k * K + l];
                double *unit2 = pass ? unit : &dQ[l * K + k];
                if (student_dead(m, Q, R, k) || (!pass && student_dead(m, Q, R, l))) {
                    for (long i = 0; i < n; i++)
                        J[i * n + col] = 0.0;
                    continue;
                }
                *unit = *unit2 = 1.0;
                lin_dgrad(fl, L, dQ, dR);
                symmetrise(K, L->dA, dS);
                /* P = dS Q + S dQ + dB R^T + B dR^T;  J_Q = -(P + P^T) */
                memset(P, 0, sizeof(double) * (size_t)KK);
                add_sparse_prod(K, K, K, dS, Q, 0, P);
                if (!pass) {
                    for (int i = 0; i < K; i++) { /* S dQ: columns l and k */
                        P[i * K + l] += L->S[i * K + k];
                        if (l != k)
                            P[i * K + k] += L->S[i * K + l];
                    }
                }
                add_sparse_prod(K, M, K, L->dB, R, 1, P);
                if (pass)
                    for (int i = 0; i < K; i++) /* B dR^T: column k */
                        P[i * K + k] += L->B[i * M + l];
                long row = 0;
                for (int a = 0; a < K; a++)
                    for (int b = a; b < K; b++, row++)
                        J[row * n + col] = -(P[a * K + b] + P[b * K + a]);
                /* J_R = -(dS R + S dR + dB T) */
                memset(P, 0, sizeof(double) * (size_t)KM);
                add_sparse_prod(K, K, M, dS, R, 0, P);
                if (pass)
                    for (int i = 0; i < K; i++) /* S dR: column l */
                        P[i * M + l] += L->S[i * K + k];
                if (fl->T_identity)
                    for (long i = 0; i < KM; i++)
                        P[i] += L->dB[i];
                else
                    add_sparse_prod(K, M, M, L->dB, m->T, 0, P);
                for (long i = 0; i < KM; i++)
                    J[(row + i) * n + col] = -P[i];
                *unit = *unit2 = 0.0;
            }
    }
    for (long i = 0; i < n * n; i++)
        if (!isfinite(J[i]))
            return SCM_ENAN;
    return SCM_OK;
}

/* ---- the preconditioner: the Newton matrix with S frozen ---- */

/* S = U diag(lam) U^T at the set-up point (Ut = U^T), room for the solve,
 * and GSL's eigensolver with its K x K input. */
struct flow_pc {
    int valid;
    double *U, *Ut, *lam, *Y, *Z;
    gsl_matrix *S;
    gsl_vector *ev;
    gsl_matrix *evec;
    gsl_eigen_symmv_workspace *w;
};

static void pc_free(struct flow_pc *pc)
{
    if (!pc)
        return;
    free(pc->U); /* one block holds all the doubles */
    gsl_matrix_free(pc->S);
    gsl_vector_free(pc->ev);
    gsl_matrix_free(pc->evec);
    if (pc->w)
        gsl_eigen_symmv_free(pc->w);
    free(pc);
}

static struct flow_pc *pc_alloc(int K, int M)
{
    struct flow_pc *pc = calloc(1, sizeof *pc);
    if (!pc)
        return NULL;
    size_t KK = (size_t)K * K, KP = (size_t)K * (size_t)(K > M ? K : M);
    pc->U = malloc(sizeof(double) * (2 * KK + (size_t)K + 2 * KP));
    pc->S = gsl_matrix_alloc((size_t)K, (size_t)K);
    pc->ev = gsl_vector_alloc((size_t)K);
    pc->evec = gsl_matrix_alloc((size_t)K, (size_t)K);
    pc->w = gsl_eigen_symmv_alloc((size_t)K);
    if (!pc->U || !pc->S || !pc->ev || !pc->evec || !pc->w) {
        pc_free(pc);
        return NULL;
    }
    pc->Ut = pc->U + KK;
    pc->lam = pc->Ut + KK;
    pc->Y = pc->lam + K;
    pc->Z = pc->Y + KP;
    return pc;
}

scm_status scm_flow_precond_setup(scm_flow *fl, const double *Q, const double *R)
{
    const int K = fl->m->K, M = fl->m->M;
    if (fl->v != fl->m->v)
        return SCM_EINVAL; /* S of the model's v, as the jvp */
    if (!fl->pc && !(fl->pc = pc_alloc(K, M)))
        return SCM_ENOMEM;
    struct flow_pc *pc = fl->pc;
    pc->valid = 0;
    scm_status st = grad_own(fl, Q, R, NULL, NULL);
    if (st)
        return st;
    symmetrise(K, fl->A, pc->S->data); /* a fresh K x K gsl_matrix is contiguous */
    if (!isfinite(scm_linalg_max_abs(pc->S->data, (long)K * K)))
        return SCM_ENAN;
    if (gsl_eigen_symmv(pc->S, pc->ev, pc->evec, pc->w) != GSL_SUCCESS)
        return SCM_ESOLVER;
    for (int k = 0; k < K; k++) {
        pc->lam[k] = gsl_vector_get(pc->ev, (size_t)k);
        for (int l = 0; l < K; l++)
            pc->U[k * K + l] = pc->Ut[l * K + k] = gsl_matrix_get(pc->evec, (size_t)k, (size_t)l);
    }
    pc->valid = 1;
    return SCM_OK;
}

/* An eigenvalue of the frozen operator, clamped at zero (see flow.h). */
static double pc_den(double gamma, double mu) { return 1.0 + gamma * (mu > 0.0 ? mu : 0.0); }

scm_status scm_flow_precond_solve(scm_flow *fl, double gamma, const double *rQ,
                                  const double *rR, double *zQ, double *zR)
{
    const int K = fl->m->K, M = fl->m->M;
    struct flow_pc *pc = fl->pc;
    if (!pc || !pc->valid)
        return SCM_EINVAL;
    if (!(gamma >= 0.0))
        return SCM_EINVAL;
    double *Y = pc->Y, *Z = pc->Z;
    /* Q: Y = U^T rQ U, divided entry-wise, back with U . U^T */
    scm_linalg_gemm(K, K, K, pc->Ut, rQ, 0, Z);
    scm_linalg_gemm(K, K, K, Z, pc->U, 0, Y);
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++)
            Y[i * K + j] /= pc_den(gamma, pc->lam[i] + pc->lam[j]);
    scm_linalg_gemm(K, K, K, pc->U, Y, 0, Z);
    scm_linalg_gemm(K, K, K, Z, pc->Ut, 0, Y);
    for (int k = 0; k < K; k++) /* symmetric up to rounding: mean of both */
        for (int l = k; l < K; l++)
            zQ[k * K + l] = zQ[l * K + k] = 0.5 * (Y[k * K + l] + Y[l * K + k]);
    /* R: U (I + gamma lam)^-1 U^T rR */
    scm_linalg_gemm(K, M, K, pc->Ut, rR, 0, Y);
    for (int i = 0; i < K; i++) {
        const double d = pc_den(gamma, pc->lam[i]);
        for (int n = 0; n < M; n++)
            Y[i * M + n] /= d;
    }
    scm_linalg_gemm(K, M, K, pc->U, Y, 0, zR);
    if (!isfinite(scm_linalg_max_abs(zQ, (long)K * K)) ||
        !isfinite(scm_linalg_max_abs(zR, (long)K * M)))
        return SCM_ENAN;
    return SCM_OK;
}
