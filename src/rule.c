/* rule.c: the training-rule tables (derivations in docs/rules.md).
 *
 * State layouts (row by row, upper triangles so that Q stays exactly
 * symmetric):
 *   gd          Q upper triangle with diagonal, then R
 *   normalised  Q strict upper triangle (Q_kk = 1 is not a state), then R
 *   stiefel     R only (Q = I)
 *   two_layer   gd's layout, then v (K entries) */
#include "scm/rule.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_matrix.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linalg.h"

static long gd_dim(const scm_model *m)
{
    return (long)m->K * (m->K + 1) / 2 + (long)m->K * m->M;
}

static long gd_scratch(const scm_model *m)
{
    return 2L * m->K * m->K + 2L * m->K * m->M;
}

/* Upper triangle of Q, with the diagonal or without, then R. */
static long pack_qr(const scm_model *m, const double *Q, const double *R, double *y, int diag)
{
    const int K = m->K;
    long i = 0;
    for (int k = 0; k < K; k++)
        for (int l = diag ? k : k + 1; l < K; l++)
            y[i++] = Q[k * K + l];
    memcpy(y + i, R, sizeof(double) * (size_t)K * (size_t)m->M);
    return i + (long)K * m->M;
}

/* The inverse of pack_qr; without the diagonal, Q_kk is set to qdiag. */
static void unpack_qr(const scm_model *m, const double *y, double *Q, double *R, int diag,
                      double qdiag)
{
    const int K = m->K;
    long i = 0;
    for (int k = 0; k < K; k++) {
        if (!diag)
            Q[k * K + k] = qdiag;
        for (int l = diag ? k : k + 1; l < K; l++, i++)
            Q[k * K + l] = Q[l * K + k] = y[i];
    }
    memcpy(R, y + i, sizeof(double) * (size_t)K * (size_t)m->M);
}

static void gd_pack(const scm_model *m, const double *Q, const double *R, double *y)
{
    pack_qr(m, Q, R, y, 1);
}

static void gd_unpack(const scm_model *m, const double *y, double *Q, double *R)
{
    unpack_qr(m, y, Q, R, 1, 0.0);
}

static scm_status gd_rhs(scm_flow *fl, const double *y, double *ydot, double *eps,
                         double *scratch)
{
    const scm_model *m = scm_flow_model(fl);
    const long KK = (long)m->K * m->K, KM = (long)m->K * m->M;
    double *Q = scratch, *R = Q + KK, *FQ = R + KM, *FR = FQ + KK;
    gd_unpack(m, y, Q, R);
    scm_status st = scm_flow_rhs(fl, Q, R, FQ, FR, eps);
    if (st)
        return st;
    gd_pack(m, FQ, FR, ydot);
    return SCM_OK;
}

const scm_rule scm_rule_gd = {
    .name = "gd",
    .dim = gd_dim,
    .scratch = gd_scratch,
    .pack = gd_pack,
    .unpack = gd_unpack,
    .rhs = gd_rhs,
};

/* ---- normalised GD: dw_k = -h_k + c_k w_k, c_k = P_kk / Q_kk ---- */

static long norm_dim(const scm_model *m)
{
    return (long)m->K * (m->K - 1) / 2 + (long)m->K * m->M;
}

/* Q, R, FQ, FR, P */
static long proj_scratch(const scm_model *m)
{
    return 3L * m->K * m->K + 2L * m->K * m->M;
}

static void norm_pack(const scm_model *m, const double *Q, const double *R, double *y)
{
    pack_qr(m, Q, R, y, 0);
}

static void norm_unpack(const scm_model *m, const double *y, double *Q, double *R)
{
    unpack_qr(m, y, Q, R, 0, 1.0);
}

/* The unprojected flow of a projected rule at the state y: scratch is
 * laid out as Q, R, FQ, FR, P (proj_scratch). */
static scm_status proj_flow(scm_flow *fl, const double *y,
                            void (*unpack)(const scm_model *, const double *, double *, double *),
                            double *eps, double *scratch)
{
    const scm_model *m = scm_flow_model(fl);
    const long KK = (long)m->K * m->K, KM = (long)m->K * m->M;
    double *Q = scratch, *R = Q + KK, *FQ = R + KM, *FR = FQ + KK, *P = FR + KM;
    unpack(m, y, Q, R);
    return scm_flow_rhs_v(fl, Q, R, NULL, FQ, FR, eps, P, NULL);
}

static scm_status norm_rhs(scm_flow *fl, const double *y, double *ydot, double *eps,
                           double *scratch)
{
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K, M = m->M;
    const long KK = (long)K * K, KM = (long)K * M;
    double *Q = scratch, *R = Q + KK, *FQ = R + KM, *FR = FQ + KK, *P = FR + KM;
    scm_status st = proj_flow(fl, y, norm_unpack, eps, scratch);
    if (st)
        return st;
    /* The radial part of dw_k removed: c_k = h_k . w_k / |w_k|^2 = P_kk
     * (Q_kk = 1), dQ_kl += (c_k + c_l) Q_kl, dR_km += c_k R_km. */
    for (int k = 0; k < K; k++) {
        for (int l = k + 1; l < K; l++)
            FQ[k * K + l] += (P[k * K + k] + P[l * K + l]) * Q[k * K + l];
        for (int n = 0; n < M; n++)
            FR[k * M + n] += P[k * K + k] * R[k * M + n];
    }
    norm_pack(m, FQ, FR, ydot);
    return SCM_OK;
}

/* Each w_k scaled to norm sqrt(d): Q_kl / sqrt(Q_kk Q_ll), R_km / sqrt(Q_kk). */
static scm_status norm_project(const scm_model *m, double *Q, double *R, scm_error *err)
{
    const int K = m->K, M = m->M;
    for (int k = 0; k < K; k++)
        if (!(Q[k * K + k] > 0.0))
            return scm_error_set(err, SCM_EINVAL,
                                 "student %d has Q_kk = %g: it cannot be normalised", k,
                                 Q[k * K + k]);
    for (int k = 0; k < K; k++) {
        double sk = 1.0 / sqrt(Q[k * K + k]);
        for (int n = 0; n < M; n++)
            R[k * M + n] *= sk;
        for (int l = 0; l < K; l++)
            if (l != k)
                Q[k * K + l] *= sk / sqrt(Q[l * K + l]);
    }
    for (int k = 0; k < K; k++)
        Q[k * K + k] = 1.0;
    return SCM_OK;
}

static scm_status norm_on_manifold(const scm_model *m, const double *Q, double tol,
                                   scm_error *err)
{
    for (int k = 0; k < m->K; k++)
        if (!(fabs(Q[k * m->K + k] - 1.0) <= tol))
            return scm_error_set(err, SCM_EINVAL,
                                 "Q[%d][%d] = %.17g, but this rule needs Q_kk = 1", k, k,
                                 Q[k * m->K + k]);
    return SCM_OK;
}

const scm_rule scm_rule_normalised = {
    .name = "normalised",
    .dim = norm_dim,
    .scratch = proj_scratch,
    .pack = norm_pack,
    .unpack = norm_unpack,
    .rhs = norm_rhs,
    .project = norm_project,
    .on_manifold = norm_on_manifold,
};

/* ---- Stiefel GD: dw_k = -h_k + sum_l sym(P)_kl w_l; with Q = I,
 *      dR = -B T + sym(B R^T) R ---- */

static long stiefel_dim(const scm_model *m) { return (long)m->K * m->M; }

static void stiefel_pack(const scm_model *m, const double *Q, const double *R, double *y)
{
    (void)Q;
    memcpy(y, R, sizeof(double) * (size_t)m->K * (size_t)m->M);
}

static void stiefel_unpack(const scm_model *m, const double *y, double *Q, double *R)
{
    const int K = m->K;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            Q[k * K + l] = k == l ? 1.0 : 0.0;
    memcpy(R, y, sizeof(double) * (size_t)K * (size_t)m->M);
}

static scm_status stiefel_rhs(scm_flow *fl, const double *y, double *ydot, double *eps,
                              double *scratch)
{
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K, M = m->M;
    const long KK = (long)K * K, KM = (long)K * M;
    double *R = scratch + KK, *FQ = R + KM, *FR = FQ + KK, *P = FR + KM;
    scm_status st = proj_flow(fl, y, stiefel_unpack, eps, scratch);
    if (st)
        return st;
    /* dR = F_R + sym(P) R (Q = I, so sym(P) Q = sym(P)); FQ is reused for sym(P). */
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            FQ[k * K + l] = 0.5 * (P[k * K + l] + P[l * K + k]);
    scm_linalg_gemm(K, M, K, FQ, R, 0, ydot);
    for (long i = 0; i < KM; i++)
        ydot[i] += FR[i];
    return SCM_OK;
}

/* The polar factor: W <- (W W^T / d)^(-1/2) W, so Q <- I, R <- Q^(-1/2) R
 * (symmetric in the students, unlike Gram-Schmidt). */
static scm_status stiefel_project(const scm_model *m, double *Q, double *R, scm_error *err)
{
    const int K = m->K, M = m->M;
    gsl_matrix *A = gsl_matrix_alloc((size_t)K, (size_t)K);
    gsl_matrix *U = gsl_matrix_alloc((size_t)K, (size_t)K);
    gsl_vector *ev = gsl_vector_alloc((size_t)K);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)K);
    double *Rn = malloc(sizeof(double) * (size_t)K * (size_t)M);
    scm_status st = SCM_OK;
    if (!A || !U || !ev || !w || !Rn) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory orthonormalising the students");
        goto out;
    }
    double qmax = 0.0;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            gsl_matrix_set(A, (size_t)k, (size_t)l, Q[k * K + l]);
            qmax = fmax(qmax, fabs(Q[k * K + l]));
        }
    if (gsl_eigen_symmv(A, ev, U, w)) {
        st = scm_error_set(err, SCM_ESOLVER, "eigendecomposition of Q failed");
        goto out;
    }
    for (int i = 0; i < K; i++)
        if (!(gsl_vector_get(ev, (size_t)i) > 1e-12 * qmax)) {
            st = scm_error_set(err, SCM_EINVAL,
                               "Q is singular (eigenvalue %g): the students cannot be "
                               "orthonormalised (K > d?)",
                               gsl_vector_get(ev, (size_t)i));
            goto out;
        }
    /* Qinv = U diag(1 / sqrt(lambda)) U^T, stored in Q's place after use. */
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            double s = 0.0;
            for (int i = 0; i < K; i++)
                s += gsl_matrix_get(U, (size_t)k, (size_t)i) *
                     gsl_matrix_get(U, (size_t)l, (size_t)i) / sqrt(gsl_vector_get(ev, (size_t)i));
            Q[k * K + l] = s;
        }
    scm_linalg_gemm(K, M, K, Q, R, 0, Rn);
    memcpy(R, Rn, sizeof(double) * (size_t)K * (size_t)M);
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            Q[k * K + l] = k == l ? 1.0 : 0.0;
out:
    gsl_matrix_free(A);
    gsl_matrix_free(U);
    gsl_vector_free(ev);
    if (w)
        gsl_eigen_symmv_free(w);
    free(Rn);
    return st;
}

static scm_status stiefel_on_manifold(const scm_model *m, const double *Q, double tol,
                                      scm_error *err)
{
    for (int k = 0; k < m->K; k++)
        for (int l = 0; l < m->K; l++)
            if (!(fabs(Q[k * m->K + l] - (k == l)) <= tol))
                return scm_error_set(err, SCM_EINVAL,
                                     "Q[%d][%d] = %.17g, but this rule needs Q = I", k, l,
                                     Q[k * m->K + l]);
    return SCM_OK;
}

const scm_rule scm_rule_stiefel = {
    .name = "stiefel",
    .dim = stiefel_dim,
    .scratch = proj_scratch,
    .pack = stiefel_pack,
    .unpack = stiefel_unpack,
    .rhs = stiefel_rhs,
    .project = stiefel_project,
    .on_manifold = stiefel_on_manifold,
};

/* ---- two-layer GD: gd's flow at the current v, dv = -ratio d eps / dv ---- */

static long two_dim(const scm_model *m) { return gd_dim(m) + m->K; }

static long two_scratch(const scm_model *m) { return gd_scratch(m) + m->K; }

static scm_status two_rhs_p(const scm_rule *r, scm_flow *fl, const double *y, double *ydot,
                            double *eps, double *scratch)
{
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K;
    const long KK = (long)K * K, KM = (long)K * m->M, n = gd_dim(m);
    double *Q = scratch, *R = Q + KK, *FQ = R + KM, *FR = FQ + KK, *dv = FR + KM;
    gd_unpack(m, y, Q, R);
    scm_status st = scm_flow_rhs_v(fl, Q, R, y + n, FQ, FR, eps, NULL, dv);
    if (st)
        return st;
    gd_pack(m, FQ, FR, ydot);
    for (int k = 0; k < K; k++)
        ydot[n + k] = -r->params.lr_v_ratio * dv[k];
    return SCM_OK;
}

static scm_status two_rhs(scm_flow *fl, const double *y, double *ydot, double *eps,
                          double *scratch);

const scm_rule scm_rule_two_layer = {
    .name = "two_layer",
    .dim = two_dim,
    .scratch = two_scratch,
    .pack = gd_pack,
    .unpack = gd_unpack,
    .rhs = two_rhs,
    .has_v = 1,
    .rhs_p = two_rhs_p,
    .params = {.lr_v_ratio = 1.0},
};

static scm_status two_rhs(scm_flow *fl, const double *y, double *ydot, double *eps,
                          double *scratch)
{
    return two_rhs_p(&scm_rule_two_layer, fl, y, ydot, eps, scratch);
}

/* ---- lookup and dispatch ---- */

static const scm_rule *const all_rules[] = {&scm_rule_gd, &scm_rule_normalised,
                                            &scm_rule_stiefel, &scm_rule_two_layer};

const scm_rule *scm_rule_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof all_rules / sizeof all_rules[0]; i++)
        if (strcmp(all_rules[i]->name, name) == 0)
            return all_rules[i];
    return NULL;
}

const char *scm_rule_names(void) { return "\"gd\", \"normalised\", \"stiefel\", \"two_layer\""; }

scm_status scm_rule_rhs(const scm_rule *r, scm_flow *fl, const double *y, double *ydot,
                        double *eps, double *scratch)
{
    return r->rhs_p ? r->rhs_p(r, fl, y, ydot, eps, scratch) : r->rhs(fl, y, ydot, eps, scratch);
}

const double *scm_rule_v(const scm_rule *r, const scm_model *m, const double *y)
{
    return r->has_v ? y + r->dim(m) - m->K : m->v;
}

scm_status scm_rule_project(const scm_rule *r, const scm_model *m, double *Q, double *R,
                            scm_error *err)
{
    return r->project ? r->project(m, Q, R, err) : SCM_OK;
}
