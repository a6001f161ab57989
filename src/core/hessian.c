/* hessian.c: the weight-space Hessian of the population loss, its spectrum,
 * the smoothness of a point and the zero modes its symmetries predict; see
 * stability.h (these are its "smoothness", "zero modes" and "Hessian"
 * parts) and docs/stability.md (the derivations of the second derivatives
 * of the pair kernels and of the orbit dimension live there). */
#include "scm/hessian.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scm/weights.h"

/* ---- small helpers ---- */

static double *dalloc(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Eigenvalues (ascending) of the symmetric n x n matrix A (destroyed). */
static scm_status sym_eigs(double *A, int n, double *eval)
{
    gsl_matrix_view Av = gsl_matrix_view_array(A, (size_t)n, (size_t)n);
    gsl_vector_view ev = gsl_vector_view_array(eval, (size_t)n);
    gsl_eigen_symm_workspace *w = gsl_eigen_symm_alloc((size_t)n);
    if (!w)
        return SCM_ENOMEM;
    int g = gsl_eigen_symm(&Av.matrix, &ev.vector, w);
    gsl_eigen_symm_free(w);
    if (g)
        return SCM_ESOLVER;
    qsort(eval, (size_t)n, sizeof *eval, cmp_double);
    return SCM_OK;
}

/* ---- smoothness ---- */

void scm_stab_smoothness(const scm_model *m, const double *Q, const double *R, double tol,
                         scm_stab_smooth *s)
{
    const int K = m->K, M = m->M;
    memset(s, 0, sizeof *s);
    s->smooth = s->closed_form = 1;
    if (m->act != &scm_act_relu)
        return;
    double qmax = 1.0;
    for (int k = 0; k < K; k++)
        qmax = fmax(qmax, Q[k * K + k]);
    char *w = s->what;
    size_t left = sizeof s->what;
    for (int k = 0; k < K; k++)
        if (!(Q[k * K + k] > tol * qmax)) {
            if (!s->n_dead++ && left > 1)
                snprintf(w, left, "student %d is dead (Q_kk = %.3g)", k, Q[k * K + k]);
        }
    for (int k = 0; k < K; k++) {
        if (!(Q[k * K + k] > tol * qmax))
            continue;
        for (int l = k + 1; l < K; l++) {
            if (!(Q[l * K + l] > tol * qmax))
                continue;
            double rho = Q[k * K + l] / sqrt(Q[k * K + k] * Q[l * K + l]);
            if (fabs(rho) >= 1.0 - tol && !s->n_par_ss++ && !s->n_dead)
                snprintf(w, left, "students %d and %d are %s (rho = %.15g)", k, l,
                         rho > 0 ? "parallel" : "antiparallel", rho);
        }
        for (int n = 0; n < M; n++) {
            double tn = m->T[n * M + n];
            if (!(tn > 0.0))
                continue;
            double rho = R[k * M + n] / sqrt(Q[k * K + k] * tn);
            if (fabs(rho) >= 1.0 - tol && !s->n_par_st++ && !s->n_dead && !s->n_par_ss)
                snprintf(w, left, "student %d is %s to teacher %d (rho = %.15g)", k,
                         rho > 0 ? "parallel" : "antiparallel", n, rho);
        }
    }
    s->smooth = s->n_dead == 0;
    s->closed_form = s->smooth && s->n_par_ss == 0 && s->n_par_st == 0;
}

/* ---- zero modes ---- */

scm_status scm_stab_predict_zero_modes(const scm_model *m, const double *Q, const double *R,
                                       long d, double tol, scm_stab_zero_modes *z)
{
    const int K = m->K, M = m->M;
    memset(z, 0, sizeof *z);
    double *T = dalloc((size_t)M * M), *U = dalloc((size_t)M * M), *lt = dalloc((size_t)M);
    double *P = dalloc((size_t)K * K), *lp = dalloc((size_t)K), *RU = dalloc((size_t)K * M);
    scm_status st = SCM_OK;
    if (!T || !U || !lt || !P || !lp || !RU) {
        st = SCM_ENOMEM;
        goto out;
    }
    /* T = U diag(lt) U^T; the out-of-span Gram P = Q - R T^+ R^T. */
    memcpy(T, m->T, sizeof *T * (size_t)M * M);
    {
        gsl_matrix_view Tv = gsl_matrix_view_array(T, (size_t)M, (size_t)M);
        gsl_matrix_view Uv = gsl_matrix_view_array(U, (size_t)M, (size_t)M);
        gsl_vector_view lv = gsl_vector_view_array(lt, (size_t)M);
        gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)M);
        if (!w) {
            st = SCM_ENOMEM;
            goto out;
        }
        int g = gsl_eigen_symmv(&Tv.matrix, &lv.vector, &Uv.matrix, w);
        gsl_eigen_symmv_free(w);
        if (g) {
            st = SCM_ESOLVER;
            goto out;
        }
    }
    double tmax = 0.0;
    for (int i = 0; i < M; i++)
        tmax = fmax(tmax, fabs(lt[i]));
    for (int i = 0; i < M; i++)
        z->rank_T += lt[i] > tol * tmax;
    for (int k = 0; k < K; k++)
        for (int j = 0; j < M; j++) {
            double s = 0.0;
            for (int i = 0; i < M; i++)
                s += R[k * M + i] * U[i * M + j];
            RU[k * M + j] = s;
        }
    double qmax = 0.0;
    for (int k = 0; k < K; k++)
        qmax = fmax(qmax, Q[k * K + k]);
    for (int k = 0; k < K; k++)
        for (int l = 0; l < K; l++) {
            double s = Q[k * K + l];
            for (int j = 0; j < M; j++)
                if (lt[j] > tol * tmax)
                    s -= RU[k * M + j] * RU[l * M + j] / lt[j];
            P[k * K + l] = s;
        }
    if ((st = sym_eigs(P, K, lp)))
        goto out;
    /* P is a difference of O(1) numbers: its round-off floor is ~1e-15 qmax. */
    double ptol = fmax(tol, 1e-12) * fmax(qmax, 1e-300);
    for (int k = 0; k < K; k++)
        z->p += lp[k] > ptol;
    if (d < z->rank_T + z->p) {
        st = SCM_EINVAL;
        goto out;
    }
    long n = d - z->rank_T, p = z->p;
    z->rotation = p * n - p * (p + 1) / 2;
    if (m->act == &scm_act_relu) {
        /* groups of positively parallel live students: union by first member */
        int *grp = malloc(sizeof *grp * (size_t)(K ? K : 1));
        if (!grp) {
            st = SCM_ENOMEM;
            goto out;
        }
        for (int k = 0; k < K; k++)
            grp[k] = k;
        for (int k = 0; k < K; k++) {
            if (!(Q[k * K + k] > tol * fmax(qmax, 1.0)))
                continue;
            for (int l = k + 1; l < K; l++)
                if (Q[l * K + l] > tol * fmax(qmax, 1.0) && grp[l] == l &&
                    Q[k * K + l] / sqrt(Q[k * K + k] * Q[l * K + l]) >= 1.0 - tol)
                    grp[l] = grp[k];
        }
        for (int k = 0; k < K; k++)
            z->homogeneity += grp[k] != k;
        free(grp);
    }
    if (m->act == &scm_act_linear) {
        int any = 0;
        for (int k = 0; k < K; k++)
            any |= m->v[k] != 0.0;
        z->linear = any ? (long)(K - 1) * d : (long)K * d;
    }
    /* For linear units the rotations and the homogeneity lie inside the
     * (K - 1) d-dimensional set of W with the same v^T W. */
    z->total = z->linear ? z->linear : z->rotation + z->homogeneity;
out:
    free(T);
    free(U);
    free(lt);
    free(P);
    free(lp);
    free(RU);
    return st;
}

/* ---- Hessian, closed form ---- */

/* h''(a) for h(a) = f(a, a, a) (the diagonal term: all three slots move). */
static double diag2(const scm_activation *act, double a)
{
    if (act == &scm_act_erf)
        return -(2.0 / M_PI) * (2.0 + 3.0 * a) / ((1.0 + a) * (1.0 + a) * pow(1.0 + 2.0 * a, 1.5));
    return 0.0; /* ReLU: f(a, a, a) = a / 2; linear: a */
}

/* H[block (k, l)] += alpha x y^T */
static void add_outer(double *H, long Kd, long d, int k, int l, double alpha, const double *x,
                      const double *y)
{
    if (alpha == 0.0)
        return;
    for (long i = 0; i < d; i++) {
        double ax = alpha * x[i];
        double *row = H + (k * d + i) * Kd + l * d;
        for (long j = 0; j < d; j++)
            row[j] += ax * y[j];
    }
}

/* H[block (k, l)] += alpha I */
static void add_eye(double *H, long Kd, long d, int k, int l, double alpha)
{
    for (long i = 0; i < d; i++)
        H[(k * d + i) * Kd + l * d + i] += alpha;
}

scm_status scm_stab_hessian(scm_flow *fl, long d, const double *W, const double *Ws, double *H,
                            scm_error *err)
{
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K, M = m->M;
    const scm_activation *act = m->act;
    if (d < 1)
        return scm_error_set(err, SCM_EINVAL, "the dimension d must be >= 1, got %ld", d);
    if (act != &scm_act_relu && act != &scm_act_erf && act != &scm_act_linear)
        return scm_error_set(err, SCM_EINVAL, "no second derivatives for activation '%s'",
                             act->name);
    const long Kd = (long)K * d;
    double *Q = dalloc((size_t)K * K), *R = dalloc((size_t)K * M);
    if (!Q || !R) {
        free(Q);
        free(R);
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the Hessian");
    }
    scm_weights_overlaps(m, d, W, Ws, Q, R);
    memset(H, 0, sizeof *H * (size_t)Kd * (size_t)Kd);
    const double id = 1.0 / (double)d;
    scm_status st = SCM_OK;
    for (int k = 0; k < K && !st; k++) {
        const double *wk = W + (long)k * d;
        /* diagonal term 1/2 v_k^2 h(a), a = |w_k|^2 / d */
        {
            scm_pair p;
            if ((st = act->pair(Q[k * K + k], Q[k * K + k], Q[k * K + k], &p))) {
                scm_error_set(err, st, "student %d: pair kernel at (%g, %g, %g) failed", k,
                              Q[k * K + k], Q[k * K + k], Q[k * K + k]);
                break;
            }
            double C = 0.5 * m->v[k] * m->v[k];
            double h1 = p.fa + p.fb + p.fc, h2 = diag2(act, Q[k * K + k]);
            add_outer(H, Kd, d, k, k, C * h2 * 4.0 * id * id, wk, wk);
            add_eye(H, Kd, d, k, k, C * h1 * 2.0 * id);
        }
        for (int l = k + 1; l < K && !st; l++) {
            const double *wl = W + (long)l * d;
            double a = Q[k * K + k], b = Q[l * K + l], c = Q[k * K + l];
            scm_pair p;
            scm_pair2 q;
            if ((st = act->pair(a, b, c, &p)) || (st = scm_kernel_pair2(act, SCM_STAB_SREL_MIN, a, b, c, &q))) {
                scm_error_set(err, st,
                              "students %d and %d: %s at (a, b, c) = (%.17g, %.17g, %.17g)%s", k,
                              l, st == SCM_ESINGULAR ? "the kernel's second derivatives diverge"
                                                     : "kernel failed",
                              a, b, c,
                              st == SCM_ESINGULAR ? " (parallel neurons: use the finite-"
                                                    "difference Hessian)"
                                                  : "");
                break;
            }
            double C = m->v[k] * m->v[l];
            /* grad a = (2 w_k / d in block k), grad b = (2 w_l / d in block l),
             * grad c = (w_l / d in block k, w_k / d in block l) */
            const double c2 = C * id * id;
            add_outer(H, Kd, d, k, k, 4.0 * c2 * q.aa, wk, wk);
            add_outer(H, Kd, d, k, k, 2.0 * c2 * q.ac, wk, wl);
            add_outer(H, Kd, d, k, k, 2.0 * c2 * q.ac, wl, wk);
            add_outer(H, Kd, d, k, k, c2 * q.cc, wl, wl);
            add_outer(H, Kd, d, l, l, 4.0 * c2 * q.bb, wl, wl);
            add_outer(H, Kd, d, l, l, 2.0 * c2 * q.bc, wl, wk);
            add_outer(H, Kd, d, l, l, 2.0 * c2 * q.bc, wk, wl);
            add_outer(H, Kd, d, l, l, c2 * q.cc, wk, wk);
            add_outer(H, Kd, d, k, l, 4.0 * c2 * q.ab, wk, wl);
            add_outer(H, Kd, d, k, l, 2.0 * c2 * q.ac, wk, wk);
            add_outer(H, Kd, d, k, l, 2.0 * c2 * q.bc, wl, wl);
            add_outer(H, Kd, d, k, l, c2 * q.cc, wl, wk);
            add_outer(H, Kd, d, l, k, 4.0 * c2 * q.ab, wl, wk);
            add_outer(H, Kd, d, l, k, 2.0 * c2 * q.ac, wk, wk);
            add_outer(H, Kd, d, l, k, 2.0 * c2 * q.bc, wl, wl);
            add_outer(H, Kd, d, l, k, c2 * q.cc, wk, wl);
            add_eye(H, Kd, d, k, k, C * p.fa * 2.0 * id);
            add_eye(H, Kd, d, l, l, C * p.fb * 2.0 * id);
            add_eye(H, Kd, d, k, l, C * p.fc * id);
            add_eye(H, Kd, d, l, k, C * p.fc * id);
        }
        for (int n = 0; n < M && !st; n++) {
            double a = Q[k * K + k], b = m->T[n * M + n], c = R[k * M + n];
            if (act == &scm_act_relu && !(b > 0.0))
                continue; /* a zero teacher unit contributes nothing */
            scm_pair p;
            scm_pair2 q;
            if ((st = act->pair(a, b, c, &p)) || (st = scm_kernel_pair2(act, SCM_STAB_SREL_MIN, a, b, c, &q))) {
                scm_error_set(err, st,
                              "student %d and teacher %d: %s at (a, b, c) = (%.17g, %.17g, "
                              "%.17g)%s",
                              k, n, st == SCM_ESINGULAR ? "the kernel's second derivatives diverge"
                                                        : "kernel failed",
                              a, b, c,
                              st == SCM_ESINGULAR ? " (aligned neurons: use the finite-"
                                                    "difference Hessian)"
                                                  : "");
                break;
            }
            double C = -m->v[k] * m->vs[n];
            /* grad a = 2 w_k / d, grad c = w*_n / d, both in block k */
            const double *ws = Ws + (long)n * d, c2 = C * id * id;
            add_outer(H, Kd, d, k, k, 4.0 * c2 * q.aa, wk, wk);
            add_outer(H, Kd, d, k, k, 2.0 * c2 * q.ac, wk, ws);
            add_outer(H, Kd, d, k, k, 2.0 * c2 * q.ac, ws, wk);
            add_outer(H, Kd, d, k, k, c2 * q.cc, ws, ws);
            add_eye(H, Kd, d, k, k, C * p.fa * 2.0 * id);
        }
    }
    if (!st)
        for (long i = 0; i < Kd * Kd; i++)
            if (!isfinite(H[i])) {
                st = scm_error_set(err, SCM_ENAN, "the Hessian has a non-finite entry");
                break;
            }
    free(Q);
    free(R);
    return st;
}

scm_status scm_stab_hessian_fd(scm_flow *fl, long d, const double *W, const double *Ws, double h,
                               double *H, scm_error *err)
{
    const scm_model *m = scm_flow_model(fl);
    const long Kd = (long)m->K * d;
    if (d < 1)
        return scm_error_set(err, SCM_EINVAL, "the dimension d must be >= 1, got %ld", d);
    if (!(h > 0.0)) {
        double wmax = 1.0;
        for (long i = 0; i < Kd; i++)
            wmax = fmax(wmax, fabs(W[i]));
        h = 1e-5 * wmax;
    }
    double *Wp = dalloc((size_t)Kd), *gp = dalloc((size_t)Kd), *gm = dalloc((size_t)Kd);
    scm_status st = SCM_OK;
    if (!Wp || !gp || !gm) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the Hessian");
        goto out;
    }
    memcpy(Wp, W, sizeof *W * (size_t)Kd);
    for (long j = 0; j < Kd; j++) {
        Wp[j] = W[j] + h;
        if ((st = scm_weights_grad(fl, d, Wp, Ws, NULL, gp)))
            break;
        Wp[j] = W[j] - h;
        if ((st = scm_weights_grad(fl, d, Wp, Ws, NULL, gm)))
            break;
        Wp[j] = W[j];
        for (long i = 0; i < Kd; i++)
            H[i * Kd + j] = (gp[i] - gm[i]) / (2.0 * h);
    }
    if (st)
        scm_error_set(err, st, "the gradient failed (%s) at a probe of the finite-difference "
                               "Hessian (a dead student?)",
                      scm_status_str(st));
out:
    free(Wp);
    free(gp);
    free(gm);
    return st;
}

scm_status scm_stab_spectrum(const double *H, int n, double rel_tol, double *eval,
                             scm_stab_counts *c)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    double *A = dalloc((size_t)n * (size_t)n);
    if (!A)
        return SCM_ENOMEM;
    double hmax = 0.0, amax = 0.0;
    for (long i = 0; i < (long)n * n; i++) {
        if (!isfinite(H[i])) {
            free(A);
            return SCM_ENAN;
        }
        hmax = fmax(hmax, fabs(H[i]));
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            A[i * n + j] = 0.5 * (H[i * n + j] + H[j * n + i]);
            amax = fmax(amax, fabs(H[i * n + j] - H[j * n + i]));
        }
    c->asym = hmax > 0.0 ? amax / hmax : 0.0;
    scm_status st = sym_eigs(A, n, eval);
    free(A);
    if (st)
        return st;
    double lmax = 0.0;
    for (int i = 0; i < n; i++)
        lmax = fmax(lmax, fabs(eval[i]));
    c->zero_tol = rel_tol * lmax;
    for (int i = 0; i < n; i++) {
        if (fabs(eval[i]) <= c->zero_tol)
            c->n_zero++;
        else if (eval[i] < 0.0)
            c->n_neg++;
        else
            c->n_pos++;
    }
    return SCM_OK;
}
