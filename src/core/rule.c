/* rule.c: the training-rule tables (rule.h; derivations in docs/rules.md).
 * Every rule evaluates the plain flow (F_Q, F_R) of flow.c and adds its
 * projection terms, so the rules share one kernel loop.  Q is packed row
 * by row from its upper triangle (so it stays exactly symmetric), R
 * row-major, v last. */
#include "scm/rule.h"

#include <gsl/gsl_eigen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scm/sgd.h"

void scm_rule_params_default(scm_rule_params *p)
{
    p->lr_v_ratio = 1.0;
    p->eta = 0.0;
    p->noise = 0.0;
}

static long tri(int K, int diag) { return diag ? (long)K * (K + 1) / 2 : (long)K * (K - 1) / 2; }

/* Pack/unpack the upper triangle of Q (with or without its diagonal). */
static long pack_q(int K, const double *Q, int diag, double *y)
{
    long i = 0;
    for (int k = 0; k < K; k++)
        for (int l = diag ? k : k + 1; l < K; l++)
            y[i++] = Q[k * K + l];
    return i;
}

static long unpack_q(int K, const double *y, int diag, double *Q)
{
    long i = 0;
    for (int k = 0; k < K; k++) {
        if (!diag)
            Q[k * K + k] = 1.0;
        for (int l = diag ? k : k + 1; l < K; l++, i++)
            Q[k * K + l] = Q[l * K + k] = y[i];
    }
    return i;
}

/* Scratch of every rule: Q, R, FQ, FR, then G (sgd) and v. */
static long scratch_len(const scm_model *m)
{
    return 3L * m->K * m->K + 2L * m->K * m->M + m->K;
}

/* ---- gd ---------------------------------------------------------------- */

static long gd_dim(const scm_model *m) { return tri(m->K, 1) + (long)m->K * m->M; }

static void gd_pack(const scm_model *m, const double *Q, const double *R, const double *v,
                    double *y)
{
    (void)v;
    long i = pack_q(m->K, Q, 1, y);
    memcpy(y + i, R, sizeof(double) * (size_t)m->K * (size_t)m->M);
}

static void gd_unpack(const scm_model *m, const double *y, double *Q, double *R, double *v)
{
    (void)v;
    long i = unpack_q(m->K, y, 1, Q);
    memcpy(R, y + i, sizeof(double) * (size_t)m->K * (size_t)m->M);
}

static scm_status gd_rhs(const scm_rule_params *p, scm_flow *fl, const double *y, double *ydot,
                         double *eps, double *scratch)
{
    (void)p;
    const scm_model *m = scm_flow_model(fl);
    const long KK = (long)m->K * m->K, KM = (long)m->K * m->M;
    double *Q = scratch, *R = Q + KK, *FQ = R + KM, *FR = FQ + KK;
    gd_unpack(m, y, Q, R, NULL);
    scm_status st = scm_flow_rhs(fl, Q, R, FQ, FR, eps);
    if (st)
        return st;
    gd_pack(m, FQ, FR, NULL, ydot);
    return SCM_OK;
}

/* Jv of the gd flow: the analytic linearisation of flow.h (scm_flow_jvp). */
static scm_status gd_jtimes(const scm_rule_params *p, scm_flow *fl, const double *y,
                            const double *v, double *Jv, double *scratch)
{
    (void)p;
    const scm_model *m = scm_flow_model(fl);
    const long KK = (long)m->K * m->K, KM = (long)m->K * m->M;
    double *Q = scratch, *R = Q + KK, *dQ = R + KM, *dR = dQ + KK, *JQ = dR + KM, *JR = JQ + KK;
    gd_unpack(m, y, Q, R, NULL);
    gd_unpack(m, v, dQ, dR, NULL);
    scm_status st = scm_flow_jvp(fl, Q, R, dQ, dR, JQ, JR);
    if (st)
        return st;
    gd_pack(m, JQ, JR, NULL, Jv);
    return SCM_OK;
}

/* The gd flow's preconditioner: S frozen (scm_flow_precond_setup). */
static scm_status gd_psetup(const scm_rule_params *p, scm_flow *fl, const double *y,
                            double *scratch)
{
    (void)p;
    const scm_model *m = scm_flow_model(fl);
    double *Q = scratch, *R = Q + (long)m->K * m->K;
    gd_unpack(m, y, Q, R, NULL);
    return scm_flow_precond_setup(fl, Q, R);
}

static scm_status gd_psolve(const scm_rule_params *p, scm_flow *fl, double gamma,
                            const double *r, double *z, double *scratch)
{
    (void)p;
    const scm_model *m = scm_flow_model(fl);
    double *Q = scratch, *R = Q + (long)m->K * m->K;
    gd_unpack(m, r, Q, R, NULL);
    scm_status st = scm_flow_precond_solve(fl, gamma, Q, R, Q, R);
    if (st)
        return st;
    gd_pack(m, Q, R, NULL, z);
    return SCM_OK;
}

/* ---- normalised -------------------------------------------------------- */

static long nm_dim(const scm_model *m) { return tri(m->K, 0) + (long)m->K * m->M; }

static void nm_pack(const scm_model *m, const double *Q, const double *R, const double *v,
                    double *y)
{
    (void)v;
    long i = pack_q(m->K, Q, 0, y);
    memcpy(y + i, R, sizeof(double) * (size_t)m->K * (size_t)m->M);
}

static void nm_unpack(const scm_model *m, const double *y, double *Q, double *R, double *v)
{
    (void)v;
    long i = unpack_q(m->K, y, 0, Q);
    memcpy(R, y + i, sizeof(double) * (size_t)m->K * (size_t)m->M);
}

static scm_status nm_rhs(const scm_rule_params *p, scm_flow *fl, const double *y, double *ydot,
                         double *eps, double *scratch)
{
    (void)p;
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K, M = m->M;
    double *Q = scratch, *R = Q + (long)K * K, *FQ = R + (long)K * M, *FR = FQ + (long)K * K;
    double *lam = FR + (long)K * M;
    nm_unpack(m, y, Q, R, NULL);
    scm_status st = scm_flow_rhs(fl, Q, R, FQ, FR, eps);
    if (st)
        return st;
    /* l_k = P_kk / Q_kk, P_kk = -F_Q,kk / 2 (Q_kk = 1 here) */
    for (int k = 0; k < K; k++)
        lam[k] = -0.5 * FQ[k * K + k] / Q[k * K + k];
    for (int k = 0; k < K; k++) {
        for (int l = 0; l < K; l++)
            FQ[k * K + l] += (lam[k] + lam[l]) * Q[k * K + l];
        for (int n = 0; n < M; n++)
            FR[k * M + n] += lam[k] * R[k * M + n];
    }
    nm_pack(m, FQ, FR, NULL, ydot);
    return SCM_OK;
}

static scm_status nm_retract(const scm_model *m, double *Q, double *R, scm_error *err)
{
    const int K = m->K, M = m->M;
    double *s = malloc(sizeof *s * (size_t)K);
    if (!s)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    for (int k = 0; k < K; k++) {
        if (!(Q[k * K + k] > 0.0)) {
            free(s);
            return scm_error_set(err, SCM_ESINGULAR,
                                 "rule normalised: student %d has zero norm (Q_kk = %g), no "
                                 "direction to put on the sphere",
                                 k, Q[k * K + k]);
        }
        s[k] = 1.0 / sqrt(Q[k * K + k]);
    }
    for (int k = 0; k < K; k++) {
        for (int l = 0; l < K; l++)
            Q[k * K + l] *= s[k] * s[l];
        Q[k * K + k] = 1.0;
        for (int n = 0; n < M; n++)
            R[k * M + n] *= s[k];
    }
    free(s);
    return SCM_OK;
}

/* ---- stiefel ----------------------------------------------------------- */

static long st_dim(const scm_model *m) { return (long)m->K * m->M; }

static void st_pack(const scm_model *m, const double *Q, const double *R, const double *v,
                    double *y)
{
    (void)Q;
    (void)v;
    memcpy(y, R, sizeof(double) * (size_t)m->K * (size_t)m->M);
}

static void st_unpack(const scm_model *m, const double *y, double *Q, double *R, double *v)
{
    (void)v;
    const int K = m->K;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            Q[k * K + l] = k == l;
    memcpy(R, y, sizeof(double) * (size_t)K * (size_t)m->M);
}

static scm_status st_rhs(const scm_rule_params *p, scm_flow *fl, const double *y, double *ydot,
                         double *eps, double *scratch)
{
    (void)p;
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K, M = m->M;
    double *Q = scratch, *R = Q + (long)K * K, *FQ = R + (long)K * M, *FR = FQ + (long)K * K;
    st_unpack(m, y, Q, R, NULL);
    scm_status st = scm_flow_rhs(fl, Q, R, FQ, FR, eps);
    if (st)
        return st;
    /* dR = F_R + sym(P) R, sym(P) = -F_Q / 2 */
    for (int k = 0; k < K; k++)
        for (int n = 0; n < M; n++) {
            double s = 0.0;
            for (int l = 0; l < K; l++)
                s += FQ[k * K + l] * R[l * M + n];
            ydot[k * M + n] = FR[k * M + n] - 0.5 * s;
        }
    return SCM_OK;
}

/* Q -> I, R -> Q^(-1/2) R: the overlaps of the polar retraction. */
static scm_status st_retract(const scm_model *m, double *Q, double *R, scm_error *err)
{
    const int K = m->K, M = m->M;
    scm_status st = SCM_OK;
    gsl_matrix *A = gsl_matrix_alloc((size_t)K, (size_t)K), *V = gsl_matrix_alloc((size_t)K, (size_t)K);
    gsl_vector *L = gsl_vector_alloc((size_t)K);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)K);
    double *X = malloc(sizeof *X * ((size_t)K * K + (size_t)K * M));
    if (!A || !V || !L || !w || !X) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
        goto out;
    }
    double qmax = 0.0;
    for (int k = 0; k < K; k++)
        qmax = fmax(qmax, Q[k * K + k]);
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            gsl_matrix_set(A, (size_t)k, (size_t)l, Q[k * K + l]);
    if (gsl_eigen_symmv(A, L, V, w) != 0) {
        st = scm_error_set(err, SCM_ESOLVER, "rule stiefel: the eigensolver failed on Q(0)");
        goto out;
    }
    for (int i = 0; i < K; i++)
        if (!(gsl_vector_get(L, (size_t)i) > 1e-12 * qmax && qmax > 0.0)) {
            st = scm_error_set(err, SCM_ESINGULAR,
                               "rule stiefel: the students span fewer than K = %d dimensions "
                               "(Q(0) has eigenvalue %g), no orthonormal frame to retract onto",
                               K, gsl_vector_get(L, (size_t)i));
            goto out;
        }
    /* X = Q^(-1/2) = V diag(l^-1/2) V^T */
    double *Qi = X, *Rn = X + (long)K * K;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            double s = 0.0;
            for (int i = 0; i < K; i++)
                s += gsl_matrix_get(V, (size_t)k, (size_t)i) * gsl_matrix_get(V, (size_t)l, (size_t)i) /
                     sqrt(gsl_vector_get(L, (size_t)i));
            Qi[k * K + l] = s;
        }
    for (int k = 0; k < K; k++)
        for (int n = 0; n < M; n++) {
            double s = 0.0;
            for (int l = 0; l < K; l++)
                s += Qi[k * K + l] * R[l * M + n];
            Rn[k * M + n] = s;
        }
    memcpy(R, Rn, sizeof *R * (size_t)K * (size_t)M);
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++)
            Q[k * K + l] = k == l;
out:
    gsl_eigen_symmv_free(w);
    gsl_vector_free(L);
    gsl_matrix_free(A);
    gsl_matrix_free(V);
    free(X);
    return st;
}

/* ---- two_layer --------------------------------------------------------- */

static long tl_dim(const scm_model *m) { return gd_dim(m) + m->K; }

static void tl_pack(const scm_model *m, const double *Q, const double *R, const double *v,
                    double *y)
{
    gd_pack(m, Q, R, NULL, y);
    memcpy(y + gd_dim(m), v ? v : m->v, sizeof(double) * (size_t)m->K);
}

static void tl_unpack(const scm_model *m, const double *y, double *Q, double *R, double *v)
{
    gd_unpack(m, y, Q, R, NULL);
    if (v)
        memcpy(v, y + gd_dim(m), sizeof(double) * (size_t)m->K);
}

static scm_status tl_rhs(const scm_rule_params *p, scm_flow *fl, const double *y, double *ydot,
                         double *eps, double *scratch)
{
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K, M = m->M;
    double *Q = scratch, *R = Q + (long)K * K, *FQ = R + (long)K * M, *FR = FQ + (long)K * K;
    const double *v = y + gd_dim(m);
    gd_unpack(m, y, Q, R, NULL);
    scm_flow_set_v(fl, v);
    double *dv = ydot + gd_dim(m);
    /* the flow and d eps / dv from one set of pair kernels */
    scm_status st = scm_flow_rhs_gv(fl, Q, R, FQ, FR, eps, dv);
    scm_flow_set_v(fl, NULL);
    if (st)
        return st;
    gd_pack(m, FQ, FR, NULL, ydot);
    for (int k = 0; k < K; k++)
        dv[k] *= -p->lr_v_ratio;
    return SCM_OK;
}

/* ---- sgd --------------------------------------------------------------- */

/* two_layer's flow (with lr_v_ratio 0, v stays put: gd), then eta G added to
 * the Q part of ydot, which is gd's layout.  G needs the SGD work (a
 * quadrature workspace for ReLU): allocated per call, as rhs has no other
 * place to keep it without global state. */
static scm_status sgd_rhs(const scm_rule_params *p, scm_flow *fl, const double *y, double *ydot,
                          double *eps, double *scratch)
{
    scm_status st = tl_rhs(p, fl, y, ydot, eps, scratch);
    if (st || p->eta == 0.0)
        return st;
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K, M = m->M;
    /* tl_rhs left Q and R at the start of scratch */
    const double *Q = scratch, *R = Q + (long)K * K;
    double *G = scratch + 2L * K * K + 2L * K * M;
    scm_sgd_work *w = scm_sgd_work_alloc(K, M);
    if (!w)
        return SCM_ENOMEM;
    st = scm_sgd_term(m, Q, R, y + gd_dim(m), p->noise, G, w, NULL);
    scm_sgd_work_free(w);
    if (st)
        return st;
    long i = 0;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            ydot[i++] += p->eta * G[k * K + l];
    return SCM_OK;
}

/* ---- the tables -------------------------------------------------------- */

const scm_rule scm_rule_gd = {.name = "gd", .dim = gd_dim, .scratch = scratch_len,
                              .pack = gd_pack, .unpack = gd_unpack, .rhs = gd_rhs,
                              .jtimes = gd_jtimes, .psetup = gd_psetup,
                              .psolve = gd_psolve};
const scm_rule scm_rule_normalised = {.name = "normalised", .dim = nm_dim,
                                      .scratch = scratch_len, .pack = nm_pack,
                                      .unpack = nm_unpack, .rhs = nm_rhs,
                                      .retract = nm_retract};
const scm_rule scm_rule_stiefel = {.name = "stiefel", .dim = st_dim, .scratch = scratch_len,
                                   .pack = st_pack, .unpack = st_unpack, .rhs = st_rhs,
                                   .retract = st_retract};
const scm_rule scm_rule_two_layer = {.name = "two_layer", .dim = tl_dim,
                                     .scratch = scratch_len, .pack = tl_pack,
                                     .unpack = tl_unpack, .rhs = tl_rhs, .trains_v = 1};
const scm_rule scm_rule_sgd = {.name = "sgd", .dim = tl_dim, .scratch = scratch_len,
                               .pack = tl_pack, .unpack = tl_unpack, .rhs = sgd_rhs,
                               .trains_v = 1};

static const scm_rule *const all_rules[] = {&scm_rule_gd, &scm_rule_normalised, &scm_rule_stiefel,
                                            &scm_rule_two_layer, &scm_rule_sgd};

const scm_rule *scm_rule_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof all_rules / sizeof all_rules[0]; i++)
        if (strcmp(all_rules[i]->name, name) == 0)
            return all_rules[i];
    return NULL;
}

const char *scm_rule_names(void) { return "gd, normalised, stiefel, two_layer, sgd"; }

scm_status scm_rule_params_check(const scm_rule *r, const scm_rule_params *p, scm_error *err)
{
    if (r == &scm_rule_sgd) {
        if (!(p->lr_v_ratio >= 0.0 && isfinite(p->lr_v_ratio)))
            return scm_error_set(err, SCM_EINVAL,
                                 "rule_params.lr_v_ratio must be >= 0 for rule sgd (0: v fixed), "
                                 "got %g",
                                 p->lr_v_ratio);
        if (!(p->eta >= 0.0 && isfinite(p->eta)))
            return scm_error_set(err, SCM_EINVAL, "rule_params.eta must be >= 0, got %g", p->eta);
        if (!(p->noise >= 0.0 && isfinite(p->noise)))
            return scm_error_set(err, SCM_EINVAL, "rule_params.noise must be >= 0, got %g",
                                 p->noise);
        return SCM_OK;
    }
    if (p->eta != 0.0 || p->noise != 0.0)
        return scm_error_set(err, SCM_EINVAL,
                             "rule_params.eta and rule_params.noise apply to rule sgd only "
                             "(rule is %s)",
                             r->name);
    if (r->trains_v && !(p->lr_v_ratio > 0.0 && isfinite(p->lr_v_ratio)))
        return scm_error_set(err, SCM_EINVAL, "rule_params.lr_v_ratio must be > 0, got %g",
                             p->lr_v_ratio);
    return SCM_OK;
}
