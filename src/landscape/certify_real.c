/* certify_real.c: realisability of a certified block zero (docs/certify.md
 * section 4): the zero of the flow in (Q, R) is a state of weights.  At
 * the zero F_R = 0 and F_Q = 0 give S X + X S = 0 for X = Q - R R^T
 * (T = I); where that Sylvester operator is nonsingular on the
 * block-symmetric matrices, X = 0 and W = R W* realises the point.  Its
 * eigenvalues there are 2 (d - o) on each group's contrasts and
 * mu_k + mu_l (k <= l) for the eigenvalues mu of S's group-mean matrix,
 * enclosed rigorously below (Weyl and Ostrowski on a floating-point
 * eigenbasis).  Where only a contrast value d - o may vanish, X lives on
 * that group's contrasts, and a positive X there is a PSD Gram matrix:
 * students partly outside the teacher span. */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/certify_internal.h"

/* An upper bound of the Frobenius norm of the ball matrix A (n x n). */
static double frob_ubound(const arb_mat_t A, int n, slong prec)
{
    arb_t s, t;
    arb_init(s);
    arb_init(t);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            arb_set_d(t, scm_cert_ubound(arb_mat_entry(A, i, j)));
            arb_addmul(s, t, t, prec);
        }
    arb_sqrt(s, s, prec);
    double u = scm_cert_ubound(s);
    arb_clear(s);
    arb_clear(t);
    return u;
}

/* The floating-point eigenvectors of the midpoint of A, ascending
 * eigenvalues, into V (columns) and lam.  0, or -1 if GSL fails. */
static int float_eig(arb_srcptr A, int n, arb_mat_t V, double *lam)
{
    gsl_matrix *m = gsl_matrix_alloc((size_t)n, (size_t)n), *v = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *ev = gsl_vector_alloc((size_t)n);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)n);
    int ok = m && v && ev && w;
    for (int i = 0; ok && i < n; i++)
        for (int j = 0; j <= i; j++) {
            double x = arf_get_d(arb_midref(A + i * n + j), ARF_RND_NEAR);
            ok = ok && isfinite(x);
            gsl_matrix_set(m, (size_t)i, (size_t)j, x);
            gsl_matrix_set(m, (size_t)j, (size_t)i, x);
        }
    ok = ok && gsl_eigen_symmv(m, ev, v, w) == GSL_SUCCESS &&
         gsl_eigen_symmv_sort(ev, v, GSL_EIGEN_SORT_VAL_ASC) == GSL_SUCCESS;
    for (int i = 0; ok && i < n; i++) {
        lam[i] = gsl_vector_get(ev, (size_t)i);
        for (int j = 0; j < n; j++)
            arb_set_d(arb_mat_entry(V, i, j), gsl_matrix_get(v, (size_t)i, (size_t)j));
    }
    if (w)
        gsl_eigen_symmv_free(w);
    if (ev)
        gsl_vector_free(ev);
    if (v)
        gsl_matrix_free(v);
    if (m)
        gsl_matrix_free(m);
    return ok ? 0 : -1;
}

int scm_cert_sym_eig(arb_srcptr A, int n, slong prec, double mutate, arb_ptr lam)
{
    double mu[SCM_ANSATZ_MAX_GROUPS];
    if (n < 1 || n > SCM_ANSATZ_MAX_GROUPS)
        return -1;
    arb_mat_t V, As, B, C;
    arb_mat_init(V, n, n);
    arb_mat_init(As, n, n);
    arb_mat_init(B, n, n);
    arb_mat_init(C, n, n);
    int ok = float_eig(A, n, V, mu) == 0;
    /* the symmetric matrices of A: both triangles hold the entry */
    for (int i = 0; ok && i < n; i++)
        for (int j = 0; j <= i; j++) {
            arb_ptr s = arb_mat_entry(As, i, j);
            if (!arb_intersection(s, A + i * n + j, A + j * n + i, prec))
                arb_set(s, A + i * n + j);
            arb_set(arb_mat_entry(As, j, i), s);
        }
    if (ok) {
        /* E = V^T mid(A) V - diag(mu): by Weyl |lambda_k(V^T A' V) - mu_k| <=
         * |E|_F + |V|_2^2 |A' - mid A|_2 for A' in A, the last norm at most
         * the largest row sum of the radii; C = V^T V - I: V^T V has its
         * eigenvalues in 1 +- |C|_F */
        arb_mat_t Vt, Am;
        arb_mat_init(Vt, n, n);
        arb_mat_init(Am, n, n);
        arb_mat_transpose(Vt, V);
        arb_mat_get_mid(Am, As);
        arb_mat_mul(B, Vt, Am, prec);
        arb_mat_mul(B, B, V, prec);
        arb_mat_mul(C, Vt, V, prec);
        arb_t th, row, rmax;
        arb_init(th);
        arb_init(row);
        arb_init(rmax);
        for (int k = 0; k < n; k++) {
            arb_set_d(th, mu[k]);
            arb_sub(arb_mat_entry(B, k, k), arb_mat_entry(B, k, k), th, prec);
            arb_sub_si(arb_mat_entry(C, k, k), arb_mat_entry(C, k, k), 1, prec);
            arb_zero(row);
            for (int j = 0; j < n; j++) {
                arb_set_d(th, mag_get_d(arb_radref(arb_mat_entry(As, k, j))));
                arb_add(row, row, th, prec);
            }
            arb_max(rmax, rmax, row, prec);
        }
        arb_mat_clear(Vt);
        arb_mat_clear(Am);
        double d = frob_ubound(C, n, prec);
        arb_set_d(th, 1.0 + d);
        arb_mul(rmax, rmax, th, prec);
        arb_set(row, rmax);
        arb_set_d(th, frob_ubound(B, n, prec));
        arb_add(row, row, th, prec);
        double e = scm_cert_ubound(row) * (1.0 - mutate);
        arb_clear(row);
        arb_clear(rmax);
        ok = isfinite(e) && d < 0.5;
        /* Ostrowski: lambda_k(V^T A V) = theta_k lambda_k(A), theta_k in the
         * spectrum's hull of V^T V, within [1 - d, 1 + d] */
        arb_one(th);
        mag_set_d(arb_radref(th), d);
        for (int k = 0; ok && k < n; k++) {
            arb_set_d(lam + k, mu[k]);
            mag_set_d(arb_radref(lam + k), e);
            arb_div(lam + k, lam + k, th, prec);
            ok = arb_is_finite(lam + k);
        }
        arb_clear(th);
    }
    arb_mat_clear(V);
    arb_mat_clear(As);
    arb_mat_clear(B);
    arb_mat_clear(C);
    return ok ? 0 : -1;
}

/* Is the symmetric ball matrix A (n x n, row-major) positive definite?  A
 * Cholesky in balls: every pivot provably positive. */
static int ball_pd(arb_ptr A, int n, slong prec)
{
    arb_t t;
    arb_init(t);
    int ok = 1;
    for (int k = 0; k < n && ok; k++) {
        if (!arb_is_positive(A + k * n + k)) {
            ok = 0;
            break;
        }
        arb_sqrt(A + k * n + k, A + k * n + k, prec);
        for (int i = k + 1; i < n; i++)
            arb_div(A + i * n + k, A + i * n + k, A + k * n + k, prec);
        for (int i = k + 1; i < n; i++)
            for (int j = k + 1; j <= i; j++) {
                arb_mul(t, A + i * n + k, A + j * n + k, prec);
                arb_sub(A + i * n + j, A + i * n + j, t, prec);
                arb_set(A + j * n + i, A + i * n + j);
            }
    }
    arb_clear(t);
    return ok;
}

/* S's group-mean matrix times s (G x G over the live groups live[]): its
 * spectrum with the contrast values d - o is that of S.  Row-major into A. */
static void mean_matrix(const scm_ansatz_inst *in, const scm_cert_eval *e, const int *live, int G,
                        int s, slong prec, arb_ptr A)
{
    int ns = in->ns;
    arb_t t;
    arb_init(t);
    for (int a = 0; a < G; a++)
        for (int b = 0; b < G; b++) {
            int i = live[a], j = live[b < a ? a : b], i2 = live[b < a ? b : a];
            if (a == b) {
                arb_mul_si(t, e->So + i * ns + i, (slong)(in->ssize[i] - 1.0), prec);
                arb_add(A + a * G + b, e->Sd + i * ns + i, t, prec);
            } else {
                arb_set_d(t, in->ssize[i2] * in->ssize[j]);
                arb_sqrt(t, t, prec);
                arb_mul(A + a * G + b, e->Sd + i2 * ns + j, t, prec);
            }
            arb_mul_si(A + a * G + b, A + a * G + b, s, prec);
        }
    arb_clear(t);
}

static int live_groups(const scm_ansatz_inst *in, int *live)
{
    int G = 0;
    for (int i = 0; i < in->ns; i++)
        if (!scm_size_zero(in->ssize[i]))
            live[G++] = i;
    return G;
}

/* Is s S (s = +-1) positive definite over the box? */
static int s_definite(const scm_ansatz_inst *in, const scm_cert_eval *e, int s, slong prec)
{
    int ns = in->ns, live[SCM_ANSATZ_MAX_GROUPS], G = live_groups(in, live), ok = 1;
    arb_t t;
    arb_init(t);
    for (int a = 0; a < G; a++) {
        int i = live[a];
        if (scm_size_has_off(in->ssize[i])) {
            arb_sub(t, e->Sd + i * ns + i, e->So + i * ns + i, prec);
            arb_mul_si(t, t, s, prec);
            ok = ok && arb_is_positive(t);
        }
    }
    arb_ptr A = _arb_vec_init(G * G);
    mean_matrix(in, e, live, G, s, prec, A);
    ok = ok && ball_pd(A, G, prec);
    _arb_vec_clear(A, G * G);
    arb_clear(t);
    return ok;
}

/* xi = the contrast value of X = Q - R R^T on student group i over the box
 * X: (Q_d - Q_o) - (R_d - R_o)^2 with its paired teacher group (a block
 * c J adds nothing to contrasts). */
static void x_contrast(const scm_ansatz_inst *in, arb_srcptr box, int i, slong prec, arb_t xi)
{
    arb_t t;
    arb_init(t);
    arb_sub(xi, box + in->qd[i], box + in->qo[i], prec);
    int u = in->spair[i], k = i * in->nt + u;
    if (u >= 0 && in->rd[k] >= 0 && in->ro[k] >= 0) {
        arb_sub(t, box + in->rd[k], box + in->ro[k], prec);
        arb_submul(xi, t, t, prec);
    }
    arb_clear(t);
}

/* The Sylvester route when S is indefinite: every pair sum of the
 * block-symmetric spectrum provably nonzero, or only contrast values open
 * with X provably positive there. */
static void sylvester(const scm_ansatz_inst *in, const scm_cert_eval *e, arb_srcptr box,
                      slong prec, scm_certify_result *res)
{
    int ns = in->ns, live[SCM_ANSATZ_MAX_GROUPS] = {0}, G = live_groups(in, live);
    char why[240];
    arb_ptr A = _arb_vec_init(G * G), mu = _arb_vec_init(G);
    arb_t t;
    arb_init(t);
    mean_matrix(in, e, live, G, 1, prec, A);
    int ok = scm_cert_sym_eig(A, G, prec, 0.0, mu) == 0;
    if (!ok)
        scm_cert_refuse(res, "realisability unproved: no eigenvalue enclosure of S's group-mean matrix");
    for (int k = 0; ok && k < G; k++)
        for (int l = k; ok && l < G; l++) {
            arb_add(t, mu + k, mu + l, prec);
            if (arb_contains_zero(t)) {
                snprintf(why, sizeof why,
                         "realisability unproved: eigenvalues %d and %d of S's group-mean "
                         "matrix (%.3g +- %.2g, %.3g +- %.2g) may sum to 0, so S X + X S = 0 "
                         "need not force Q = R R^T",
                         k + 1, l + 1, arf_get_d(arb_midref(mu + k), ARF_RND_NEAR),
                         mag_get_d(arb_radref(mu + k)), arf_get_d(arb_midref(mu + l), ARF_RND_NEAR),
                         mag_get_d(arb_radref(mu + l)));
                scm_cert_refuse(res, why);
                ok = 0;
            }
        }
    int off = -1;
    for (int a = 0; ok && a < G; a++) {
        int i = live[a];
        if (!scm_size_has_off(in->ssize[i]))
            continue;
        arb_sub(t, e->Sd + i * ns + i, e->So + i * ns + i, prec);
        if (!arb_contains_zero(t))
            continue;
        /* S's contrast value of group i may vanish: X = xi P_i there */
        arb_t xi;
        arb_init(xi);
        x_contrast(in, box, i, prec, xi);
        double xm = arf_get_d(arb_midref(xi), ARF_RND_NEAR), xr = mag_get_d(arb_radref(xi));
        if (arb_is_positive(xi)) {
            off = off < 0 ? i : off;
        } else {
            snprintf(why, sizeof why,
                     "%s: S's contrast eigenvalue d - o of group %s is not provably nonzero, "
                     "and Q - R R^T there (%.3g +- %.2g) is %s",
                     arb_is_negative(xi) ? "not realisable" : "realisability unproved",
                     in->sname[i], xm, xr,
                     arb_is_negative(xi) ? "negative: the Gram matrix is not PSD"
                                         : "not provably positive");
            scm_cert_refuse(res, why);
            ok = 0;
        }
        arb_clear(xi);
    }
    if (ok && off < 0)
        snprintf(res->realisable, sizeof res->realisable,
                 "S indefinite, S X + X S nonsingular on block-symmetric X: Q = R R^T");
    else if (ok) {
        res->off_span = 1;
        snprintf(res->realisable, sizeof res->realisable,
                 "Q - R R^T > 0 on group %s's contrasts only: Gram PSD, off the span",
                 in->sname[off]);
    }
    arb_clear(t);
    _arb_vec_clear(A, G * G);
    _arb_vec_clear(mu, G);
}

void scm_cert_realisability(const scm_ansatz_inst *in, const scm_cert_eval *e, arb_srcptr box,
                            slong prec, scm_certify_result *res)
{
    if (s_definite(in, e, 1, prec))
        snprintf(res->realisable, sizeof res->realisable,
                 "S positive definite over the box, so Q = R R^T");
    else if (s_definite(in, e, -1, prec))
        snprintf(res->realisable, sizeof res->realisable,
                 "S negative definite over the box, so Q = R R^T");
    else
        sylvester(in, e, box, prec, res);
}
