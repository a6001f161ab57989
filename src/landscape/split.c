/* split.c: splitting a neuron of a fixed point; see split.h and
 * docs/split.md (the derivation of the inner Hessian and of the inertia
 * prediction). */
#include "scm/split.h"

#include <gsl/gsl_eigen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scm/weights.h"

static double *dalloc(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

const char *scm_split_class_str(scm_split_class c)
{
    switch (c) {
    case SCM_SPLIT_PD: return "PD";
    case SCM_SPLIT_ND: return "ND";
    case SCM_SPLIT_INDEFINITE: return "indefinite";
    default: return "semidefinite";
    }
}

void scm_split_inner_free(scm_split_inner *h)
{
    if (!h)
        return;
    free(h->C);
    free(h->eval);
    h->C = h->eval = NULL;
}

/* Add to C, c0 the term alpha * Hess_w f(|w|^2/d, b, w.u/d) at w = w_r,
 * u = vector j (the chain rule in docs/split.md). */
static scm_status add_term(const scm_activation *act, double alpha, double a, double b, double c,
                           int r, int j, int n, double *C, double *c0)
{
    scm_pair p;
    scm_pair2 q;
    scm_status st = act->pair(a, b, c, &p);
    if (!st)
        st = scm_kernel_pair2(act, SCM_STAB_SREL_MIN, a, b, c, &q);
    if (st)
        return st;
    C[r * n + r] += 4.0 * alpha * q.aa;
    C[r * n + j] += 2.0 * alpha * q.ac;
    C[j * n + r] += 2.0 * alpha * q.ac;
    C[j * n + j] += alpha * q.cc;
    *c0 += alpha * p.fa;
    return SCM_OK;
}

/* C and c0 of neuron r: the residual phi - phi* of the parent, frozen,
 * against a copy of neuron r's feature g(w . x / sqrt d). */
static scm_status inner_coeffs(const scm_model *m, const double *Q, const double *R, int r,
                               scm_split_inner *h, scm_error *err)
{
    const int K = m->K, M = m->M, n = K + M;
    const double a = Q[r * K + r];
    scm_status st = SCM_OK;
    for (int k = 0; k < K && !st; k++) {
        /* ReLU: E[g(lambda_r) delta(lambda_r) ...] = 0, the own term vanishes */
        if (k == r && m->act == &scm_act_relu)
            continue;
        st = add_term(m->act, m->v[r] * m->v[k], a, Q[k * K + k], Q[r * K + k], r, k, n, h->C,
                      &h->c0);
        if (st)
            scm_error_set(err, st,
                          "inner Hessian of student %d: the kernel with student %d fails (%s) "
                          "at (a, b, c) = (%.17g, %.17g, %.17g)%s",
                          r, k, scm_status_str(st), a, Q[k * K + k], Q[r * K + k],
                          st == SCM_ESINGULAR ? ": parallel ReLU neurons" : "");
    }
    for (int t = 0; t < M && !st; t++) {
        if (m->act == &scm_act_relu && !(m->T[t * M + t] > 0.0))
            continue; /* a zero teacher unit contributes nothing */
        st = add_term(m->act, -m->v[r] * m->vs[t], a, m->T[t * M + t], R[r * M + t], r, K + t, n,
                      h->C, &h->c0);
        if (st)
            scm_error_set(err, st,
                          "inner Hessian of student %d: the kernel with teacher %d fails (%s) "
                          "at (a, b, c) = (%.17g, %.17g, %.17g)%s",
                          r, t, scm_status_str(st), a, m->T[t * M + t], R[r * M + t],
                          st == SCM_ESINGULAR ? ": a ReLU student parallel to a teacher" : "");
    }
    return st;
}

/* Eigen-decompose G = [[Q, R], [R^T, T]] and put the span's eigenvalues of
 * d H_r, 2 c0 + eig(L^T C L) with L = V_+ Lambda_+^(1/2), into h->eval. */
static scm_status span_eigs(const scm_model *m, const double *Q, const double *R,
                            scm_split_inner *h)
{
    const int K = m->K, M = m->M, n = K + M;
    double *G = dalloc((size_t)n * n), *V = dalloc((size_t)n * n), *lam = dalloc((size_t)n);
    double *L = dalloc((size_t)n * n), *S = dalloc((size_t)n * n);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)n);
    gsl_eigen_symm_workspace *w2 = NULL;
    scm_status st = SCM_OK;
    if (!G || !V || !lam || !L || !S || !w) {
        st = SCM_ENOMEM;
        goto out;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double g;
            if (i < K && j < K)
                g = Q[i * K + j];
            else if (i < K)
                g = R[i * M + (j - K)];
            else if (j < K)
                g = R[j * M + (i - K)];
            else
                g = m->T[(i - K) * M + (j - K)];
            G[i * n + j] = g;
        }
    gsl_matrix_view Gv = gsl_matrix_view_array(G, (size_t)n, (size_t)n);
    gsl_matrix_view Vv = gsl_matrix_view_array(V, (size_t)n, (size_t)n);
    gsl_vector_view lv = gsl_vector_view_array(lam, (size_t)n);
    if (gsl_eigen_symmv(&Gv.matrix, &lv.vector, &Vv.matrix, w)) {
        st = SCM_ESOLVER;
        goto out;
    }
    double lmax = 0.0;
    for (int i = 0; i < n; i++)
        lmax = fmax(lmax, fabs(lam[i]));
    /* the same rank threshold as scm_weights_realise's pivots */
    const double tau = 2e-9 * fmax(lmax, 1e-300);
    int rank = 0;
    for (int c = 0; c < n; c++) {
        if (!(lam[c] > tau))
            continue;
        double s = sqrt(lam[c]);
        for (int i = 0; i < n; i++)
            L[i * n + rank] = V[i * n + c] * s;
        rank++;
    }
    h->rank = rank;
    /* S = L^T C L (rank x rank) */
    for (int p = 0; p < rank; p++)
        for (int q = 0; q < rank; q++) {
            double s = 0.0;
            for (int i = 0; i < n; i++) {
                double ci = 0.0;
                for (int j = 0; j < n; j++)
                    ci += h->C[i * n + j] * L[j * n + q];
                s += L[i * n + p] * ci;
            }
            S[p * rank + q] = s;
        }
    if (rank > 0) {
        gsl_matrix_view Sv = gsl_matrix_view_array(S, (size_t)rank, (size_t)rank);
        gsl_vector_view ev = gsl_vector_view_array(h->eval, (size_t)rank);
        if (!(w2 = gsl_eigen_symm_alloc((size_t)rank))) {
            st = SCM_ENOMEM;
            goto out;
        }
        if (gsl_eigen_symm(&Sv.matrix, &ev.vector, w2)) {
            st = SCM_ESOLVER;
            goto out;
        }
        for (int i = 0; i < rank; i++)
            h->eval[i] += 2.0 * h->c0;
        qsort(h->eval, (size_t)rank, sizeof *h->eval, cmp_double);
    }
out:
    free(G);
    free(V);
    free(lam);
    free(L);
    free(S);
    if (w)
        gsl_eigen_symmv_free(w);
    if (w2)
        gsl_eigen_symm_free(w2);
    return st;
}

scm_status scm_split_inner_hessian(const scm_model *m, const double *Q, const double *R, int r,
                                   double rel_tol, scm_split_inner *h, scm_error *err)
{
    memset(h, 0, sizeof *h);
    const int K = m->K, M = m->M, n = K + M;
    if (r < 0 || r >= K)
        return scm_error_set(err, SCM_EINVAL, "neuron %d out of range (K = %d)", r, K);
    if (!(rel_tol >= 0.0))
        return scm_error_set(err, SCM_EINVAL, "zero threshold must be >= 0, got %g", rel_tol);
    if (m->act == &scm_act_relu && !(Q[r * K + r] > 0.0))
        return scm_error_set(err, SCM_EDEAD, "student %d is dead (Q_rr = %g): no inner Hessian",
                             r, Q[r * K + r]);
    h->K = K;
    h->M = M;
    h->r = r;
    h->n = n;
    h->C = dalloc((size_t)n * n);
    h->eval = dalloc((size_t)n);
    if (!h->C || !h->eval) {
        scm_split_inner_free(h);
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the inner Hessian");
    }
    scm_status st = inner_coeffs(m, Q, R, r, h, err);
    if (!st && (st = span_eigs(m, Q, R, h)))
        scm_error_set(err, st, "inner Hessian of student %d: eigenvalues failed (%s)", r,
                      scm_status_str(st));
    if (st) {
        scm_split_inner_free(h);
        return st;
    }
    h->h_perp = 2.0 * h->c0;
    double hmax = fabs(h->h_perp);
    for (int i = 0; i < h->rank; i++)
        hmax = fmax(hmax, fabs(h->eval[i]));
    h->zero_tol = fmax(rel_tol * hmax, 1e-12); /* an absolute floor: H_r = 0 at zero loss */
    for (int i = 0; i < h->rank; i++) {
        if (fabs(h->eval[i]) <= h->zero_tol)
            h->n_zero++;
        else if (h->eval[i] < 0.0)
            h->n_neg++;
        else
            h->n_pos++;
    }
    /* The complement (it exists in high dimension) counts unless it is flat:
     * for erf, h_perp = -v_r E[res lambda_r g'(lambda_r)] = 0 at any fixed
     * point (g'' = -x g', and w_r . grad_r eps = 0; docs/split.md). */
    h->perp_flat = fabs(h->h_perp) <= h->zero_tol;
    /* ReLU: H_r w_r = v_r E[res delta(lambda_r) lambda_r x] / sqrt d = 0, the
     * daughters' homogeneity (scaling one up and the other down) */
    h->homog_zero = m->act == &scm_act_relu && h->n_zero > 0;
    int pos = h->n_pos + (h->h_perp > h->zero_tol), neg = h->n_neg + (h->h_perp < -h->zero_tol);
    h->cls = pos && neg                  ? SCM_SPLIT_INDEFINITE
             : h->n_zero > h->homog_zero ? SCM_SPLIT_SEMIDEF
             : pos       ? SCM_SPLIT_PD
             : neg       ? SCM_SPLIT_ND
                         : SCM_SPLIT_SEMIDEF;
    return SCM_OK;
}

void scm_split_inner_weights(const scm_split_inner *h, long d, const double *W, const double *Ws,
                             double *Hr)
{
    const int K = h->K, n = h->n;
    const double id = 1.0 / (double)d;
    for (long i = 0; i < d * d; i++)
        Hr[i] = 0.0;
    for (int p = 0; p < n; p++) {
        const double *up = p < K ? W + (long)p * d : Ws + (long)(p - K) * d;
        for (int q = 0; q < n; q++) {
            double c = h->C[p * n + q];
            if (c == 0.0)
                continue;
            const double *uq = q < K ? W + (long)q * d : Ws + (long)(q - K) * d;
            for (long i = 0; i < d; i++)
                for (long j = 0; j < d; j++)
                    Hr[i * d + j] += c * up[i] * uq[j] * id * id;
        }
    }
    for (long i = 0; i < d; i++)
        Hr[i * d + i] += 2.0 * h->c0 * id;
}

scm_status scm_split_embed(const scm_model *m, const double *Q, const double *R, int r, int n,
                           const double *mu, double *vc, double *Qc, double *Rc, scm_error *err)
{
    const int K = m->K, M = m->M, Kc = K + n - 1;
    if (n < 2)
        return scm_error_set(err, SCM_EINVAL, "a split needs at least 2 daughters, got %d", n);
    if (r < 0 || r >= K)
        return scm_error_set(err, SCM_EINVAL, "neuron %d out of range (K = %d)", r, K);
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        if (!isfinite(mu[j]))
            return scm_error_set(err, SCM_EINVAL, "split weight %d is not finite", j);
        if (!(fabs(mu[j]) <= SCM_SPLIT_MU_MAX))
            return scm_error_set(err, SCM_EINVAL,
                                 "split weight %d = %g is out of range: |mu| must be <= %g", j,
                                 mu[j], SCM_SPLIT_MU_MAX);
        sum += mu[j];
    }
    if (!(fabs(sum - 1.0) <= 1e-12))
        return scm_error_set(err, SCM_EINVAL,
                             "split weights must sum to 1, they sum to %.17g", sum);
    /* parent index of each child */
    for (int k = 0; k < Kc; k++) {
        int pk = k < K ? k : r;
        vc[k] = m->v[pk] * (k == r ? mu[0] : k >= K ? mu[k - K + 1] : 1.0);
        for (int l = 0; l < Kc; l++) {
            int pl = l < K ? l : r;
            Qc[k * Kc + l] = Q[pk * K + pl];
        }
        for (int t = 0; t < M; t++)
            Rc[k * M + t] = R[pk * M + t];
    }
    return SCM_OK;
}

void scm_split_predict(const scm_stab_counts *parent, const scm_split_inner *h, long d, int n,
                       const double *mu, scm_split_inertia *out)
{
    long np = 0, nn = 0, nz = 0;
    for (int j = 0; j < n; j++) {
        if (mu[j] > 0.0)
            np++;
        else if (mu[j] < 0.0)
            nn++;
        else
            nz++;
    }
    /* diag(mu) on mu^T y = 0: (np - 1, nn, nz), since 1^T diag(mu) 1 = 1 > 0 */
    long ap = np - 1, an = nn, az = nz;
    long comp = d - h->rank;
    long p = h->n_pos + (h->h_perp > h->zero_tol ? comp : 0);
    long q = h->n_neg + (h->h_perp < -h->zero_tol ? comp : 0);
    out->diff_pos = ap * p + an * q;
    out->diff_neg = ap * q + an * p;
    out->diff_zero = (ap + an + az) * d - out->diff_pos - out->diff_neg;
    out->diff_zero_explained =
        az * d + (ap + an) * ((h->perp_flat ? comp : 0) + h->homog_zero);
    out->n_pos = parent->n_pos + out->diff_pos;
    out->n_neg = parent->n_neg + out->diff_neg;
    out->n_zero = parent->n_zero + out->diff_zero;
}

scm_hverdict scm_split_verdict(const scm_split_inertia *p, long n_explained)
{
    if (p->n_neg > 0)
        return SCM_HVERDICT_SADDLE;
    if (p->n_zero == n_explained)
        return SCM_HVERDICT_MIN;
    return p->n_zero > n_explained ? SCM_HVERDICT_DEGENERATE : SCM_HVERDICT_INCONSISTENT;
}

scm_status scm_split_hessian(const scm_model *m, const double *Q, const double *R, long d,
                             double rel_tol, double *eval, scm_stab_counts *c,
                             scm_stab_zero_modes *zm, int *closed, scm_error *err)
{
    const long Kd = (long)m->K * d;
    double *W = dalloc((size_t)Kd), *Ws = dalloc((size_t)m->M * d);
    double *H = dalloc((size_t)Kd * (size_t)Kd);
    scm_flow *fl = scm_flow_alloc(m);
    scm_status st = SCM_OK;
    if (!W || !Ws || !H || !fl) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory for the Hessian");
        goto out;
    }
    if ((st = scm_weights_realise(m, Q, R, d, W, Ws, err)))
        goto out;
    if ((st = scm_stab_predict_zero_modes(m, Q, R, d, 1e-9, zm))) {
        scm_error_set(err, st, "zero modes: the dimension d = %ld is below the rank", d);
        goto out;
    }
    scm_error e2;
    *closed = 1;
    st = scm_stab_hessian(fl, d, W, Ws, H, &e2);
    if (st == SCM_ESINGULAR) { /* ReLU, parallel neurons: C^2 but no closed form */
        *closed = 0;
        st = scm_stab_hessian_fd(fl, d, W, Ws, 0.0, H, &e2);
    }
    if (st) {
        scm_error_set(err, st, "the Hessian failed: %s", e2.msg);
        goto out;
    }
    if ((st = scm_stab_spectrum(H, (int)Kd, rel_tol, eval, c)))
        scm_error_set(err, st, "the Hessian's eigenvalues failed (%s)", scm_status_str(st));
out:
    free(W);
    free(Ws);
    free(H);
    scm_flow_free(fl);
    return st;
}

scm_model *scm_split_model(const scm_model *m, int n, const double *vc, scm_error *err)
{
    return scm_model_alloc(m->K + n - 1, m->M, m->act, m->T, vc, m->vs, err);
}

/* Residual and loss of the K + n - 1 flow at the split point. */
static scm_status child_residual(const scm_model *mc, const double *Qc, const double *Rc,
                                 scm_split_point *out, scm_error *err)
{
    const int Kc = mc->K, M = mc->M;
    double *FQ = dalloc((size_t)Kc * Kc), *FR = dalloc((size_t)Kc * M);
    scm_flow *fl = scm_flow_alloc(mc);
    scm_status st = SCM_OK;
    if (!FQ || !FR || !fl)
        st = scm_error_set(err, SCM_ENOMEM, "out of memory for the residual");
    else if ((st = scm_flow_rhs(fl, Qc, Rc, FQ, FR, &out->eps)))
        scm_error_set(err, st, "the flow fails at the split point (%s)", scm_status_str(st));
    else {
        double r = 0.0;
        for (int i = 0; i < Kc * Kc; i++)
            r = fmax(r, fabs(FQ[i]));
        for (int i = 0; i < Kc * M; i++)
            r = fmax(r, fabs(FR[i]));
        out->residual = r;
    }
    free(FQ);
    free(FR);
    scm_flow_free(fl);
    return st;
}

/* The smallest eigenvalue once the nz eigenvalues nearest zero are dropped. */
static double min_without_zeros(const double *eval, long n, long nz)
{
    double *a = dalloc((size_t)n);
    if (!a)
        return NAN;
    for (long i = 0; i < n; i++)
        a[i] = fabs(eval[i]);
    qsort(a, (size_t)n, sizeof *a, cmp_double);
    double cut = nz > 0 && nz <= n ? a[nz - 1] : -1.0;
    free(a);
    long dropped = 0;
    double mn = NAN;
    for (long i = 0; i < n; i++) { /* ascending: skip the first nz with |l| <= cut */
        if (dropped < nz && fabs(eval[i]) <= cut) {
            dropped++;
            continue;
        }
        if (isnan(mn))
            mn = eval[i];
    }
    return mn;
}

scm_status scm_split_check(const scm_model *m, const double *Q, const double *R,
                           const scm_split_inner *h, int n, const double *mu, long d,
                           double rel_tol, const scm_stab_counts *parent, long parent_zero_sym,
                           scm_split_point *out, scm_error *err)
{
    memset(out, 0, sizeof *out);
    out->eval_min = NAN;
    const int Kc = m->K + n - 1, M = m->M;
    const long Kd = (long)Kc * d;
    double *vc = dalloc((size_t)Kc), *Qc = dalloc((size_t)Kc * Kc), *Rc = dalloc((size_t)Kc * M);
    double *ev = dalloc((size_t)Kd);
    scm_model *mc = NULL;
    scm_status st = SCM_OK;
    if (!vc || !Qc || !Rc || !ev) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the split check");
        goto out;
    }
    if ((st = scm_split_embed(m, Q, R, h->r, n, mu, vc, Qc, Rc, err)))
        goto out;
    if (!(mc = scm_split_model(m, n, vc, err))) {
        st = err ? err->code : SCM_EINVAL;
        goto out;
    }
    if ((st = child_residual(mc, Qc, Rc, out, err)))
        goto out;
    scm_stab_zero_modes zm;
    if ((st = scm_split_hessian(mc, Qc, Rc, d, rel_tol, ev, &out->counts, &zm, &out->closed,
                                err)))
        goto out;
    scm_split_predict(parent, h, d, n, mu, &out->pred);
    out->explained_zero = parent_zero_sym + out->pred.diff_zero_explained;
    out->eval_min = min_without_zeros(ev, Kd, out->explained_zero);
    out->match = out->counts.n_neg == out->pred.n_neg && out->counts.n_zero == out->pred.n_zero &&
                 out->counts.n_pos == out->pred.n_pos;
    scm_split_inertia meas = {out->counts.n_neg, out->counts.n_zero, out->counts.n_pos, 0, 0, 0, 0};
    out->verdict = scm_split_verdict(&meas, out->explained_zero);
    out->pred_verdict = scm_split_verdict(&out->pred, out->explained_zero);
out:
    scm_model_free(mc);
    free(vc);
    free(Qc);
    free(Rc);
    free(ev);
    return st;
}
