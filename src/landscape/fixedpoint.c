/* fixedpoint.c: Newton enumeration of the fixed points inside an ansatz,
 * full-space checks and polish, and continuation in M; see fixedpoint.h. */
#include "scm/fixedpoint.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multiroots.h>
#include <gsl/gsl_permutation.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "core/linalg.h"
#include "core/parallel.h"
#include "scm/model.h"

void scm_fp_opts_default(scm_fp_opts *o)
{
    o->n_random = 200;
    o->seed = 1;
    o->max_iter = 300;
    o->tol = 1e-14;
    o->accept = 1e-10;
    o->dedup_tol = 1e-6;
    o->psd_tol = 1e-9;
    o->polish_max_K = 24;
    o->full_max_K = 400;
    o->polish_defer = 0;
    o->polish_tol = 0.0;
    o->deflate = 0;
    o->threads = 1;
}

scm_status scm_fp_opts_check(const scm_fp_opts *o, scm_error *err)
{
    if (o->n_random < 0)
        return scm_error_set(err, SCM_EINVAL, "n_random must be >= 0, got %d", o->n_random);
    if (o->max_iter < 1)
        return scm_error_set(err, SCM_EINVAL, "max_iter must be >= 1, got %d", o->max_iter);
    if (!(o->tol > 0.0) || !(o->accept >= o->tol))
        return scm_error_set(err, SCM_EINVAL, "need 0 < tol <= accept (got %g, %g)", o->tol,
                             o->accept);
    if (o->threads < 1 || o->threads > 64)
        return scm_error_set(err, SCM_EINVAL, "threads must be in [1, 64], got %d", o->threads);
    if (o->deflate < 0)
        return scm_error_set(err, SCM_EINVAL, "deflate must be >= 0, got %d", o->deflate);
    if (!(o->dedup_tol > 0.0) || !(o->psd_tol >= 0.0))
        return scm_error_set(err, SCM_EINVAL, "dedup_tol must be > 0 and psd_tol >= 0");
    return SCM_OK;
}

void scm_fp_set_init(scm_fp_set *s) { memset(s, 0, sizeof *s); }

void scm_fp_set_free(scm_fp_set *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->pt[i].x);
        free(s->pt[i].Q);
        free(s->pt[i].R);
    }
    free(s->pt);
    memset(s, 0, sizeof *s);
}

static double max_abs(const double *x, long n)
{
    double m = 0.0;
    for (long i = 0; i < n; i++) {
        if (isnan(x[i]))
            return NAN;
        m = fmax(m, fabs(x[i]));
    }
    return m;
}

/* ---- block-level Newton ---- */

/* The residual Newton sees: F at block level, or, with roots, the deflated
 * F(x) prod_r (1 / ||x - r||_2^2 + 1) (Farrell, Birkisson and Funke,
 * SIAM J. Sci. Comput. 37 (2015) A2026, with power 2 and shift 1): it
 * vanishes where F does except at the roots r, next to which it grows like
 * 1 / ||x - r||, so a solve cannot converge to a root already found. */
typedef struct {
    scm_blockflow *bf;
    const scm_fp_set *roots; /* NULL: plain F */
    int first, n;            /* the roots are roots->pt[first .. roots->n) */
} resid_params;

static double deflation_factor(const resid_params *p, const double *x)
{
    double f = 1.0;
    for (int r = p->first; p->roots && r < p->roots->n; r++) {
        const double *y = p->roots->pt[r].x;
        double d2 = 0.0;
        for (int c = 0; c < p->n; c++)
            d2 += (x[c] - y[c]) * (x[c] - y[c]);
        f *= 1.0 / d2 + 1.0;
    }
    return f;
}

static int gsl_resid(const gsl_vector *x, void *params, gsl_vector *f)
{
    const resid_params *p = params;
    scm_status st = scm_blockflow_residual(p->bf, x->data, f->data, NULL);
    if (st == SCM_ENOTPSD || st == SCM_EDEAD) {
        /* Outside the domain (a correlation beyond 1, a dead neuron): a
         * large residual makes the trust-region solver reject the step and
         * shrink its region instead of giving up. */
        for (size_t i = 0; i < f->size; i++)
            f->data[i] = 1e3;
        return GSL_SUCCESS;
    }
    if (st == SCM_OK && p->roots) {
        double m = deflation_factor(p, x->data);
        for (size_t i = 0; i < f->size; i++)
            f->data[i] *= m;
        if (!isfinite(m))
            return GSL_EDOM; /* exactly at a known root */
    }
    return st == SCM_OK ? GSL_SUCCESS : GSL_EDOM;
}

/* scm_fp_solve on the residual of p (plain or deflated). */
static scm_status solve_resid(resid_params *p, double *x, const scm_fp_opts *o, double *res)
{
    int n = p->n;
    *res = NAN;
    gsl_vector *F = gsl_vector_alloc((size_t)n);
    if (!F)
        return SCM_ENOMEM;
    gsl_vector_view xv = gsl_vector_view_array(x, (size_t)n);
    scm_status st = scm_blockflow_residual(p->bf, x, NULL, NULL);
    if (!st && gsl_resid(&xv.vector, p, F) != GSL_SUCCESS)
        st = SCM_ENOTPSD; /* exactly at a known root */
    if (st) {
        gsl_vector_free(F);
        return st;
    }
    *res = max_abs(F->data, n);
    if (*res < o->tol) {
        gsl_vector_free(F);
        return SCM_OK;
    }
    gsl_multiroot_fsolver *s = gsl_multiroot_fsolver_alloc(gsl_multiroot_fsolver_hybrids,
                                                           (size_t)n);
    if (!s) {
        gsl_vector_free(F);
        return SCM_ENOMEM;
    }
    gsl_multiroot_function fn = {gsl_resid, (size_t)n, p};
    int gst = gsl_multiroot_fsolver_set(s, &fn, &xv.vector);
    int it = 0;
    scm_status out = SCM_ENOCONV;
    if (gst != GSL_SUCCESS)
        out = SCM_ENOTPSD;
    while (gst == GSL_SUCCESS && it++ < o->max_iter) {
        gst = gsl_multiroot_fsolver_iterate(s);
        double r = max_abs(s->f->data, n);
        if (r < *res || isnan(*res)) {
            *res = r;
            memcpy(x, s->x->data, sizeof(double) * (size_t)n);
        }
        if (*res < o->tol)
            break;
        if (gst == GSL_ENOPROG || gst == GSL_ENOPROGJ) {
            out = SCM_ESINGULAR;
            break;
        }
        if (gst != GSL_SUCCESS) {
            out = SCM_ENOTPSD; /* the residual failed: the iterate left the domain */
            break;
        }
    }
    gsl_multiroot_fsolver_free(s);
    gsl_vector_free(F);
    if (*res < o->accept)
        return SCM_OK;
    return out;
}

scm_status scm_fp_solve(scm_blockflow *bf, double *x, const scm_fp_opts *o, double *res)
{
    resid_params p = {bf, NULL, 0, scm_ansatz_inst_nscalars(scm_blockflow_inst(bf))};
    return solve_resid(&p, x, o, res);
}

/* Singular values of the central-difference block Jacobian at x. */
static scm_status block_jacobian_sv(scm_blockflow *bf, const double *x, double *smin,
                                    double *smax)
{
    int n = scm_ansatz_inst_nscalars(scm_blockflow_inst(bf));
    gsl_matrix *J = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_matrix *V = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *S = gsl_vector_alloc((size_t)n), *w = gsl_vector_alloc((size_t)n);
    double *xp = malloc(sizeof(double) * (size_t)n * 3);
    scm_status st = SCM_OK;
    if (!J || !V || !S || !w || !xp) {
        st = SCM_ENOMEM;
        goto done;
    }
    double *fp = xp + n, *fm = xp + 2 * n;
    for (int j = 0; j < n && !st; j++) {
        memcpy(xp, x, sizeof(double) * (size_t)n);
        double h = 1e-6 * fmax(1.0, fabs(x[j]));
        xp[j] = x[j] + h;
        st = scm_blockflow_residual(bf, xp, fp, NULL);
        xp[j] = x[j] - h;
        if (!st)
            st = scm_blockflow_residual(bf, xp, fm, NULL);
        for (int i = 0; i < n && !st; i++)
            gsl_matrix_set(J, (size_t)i, (size_t)j, (fp[i] - fm[i]) / (2.0 * h));
    }
    if (!st && gsl_linalg_SV_decomp(J, V, S, w) != GSL_SUCCESS)
        st = SCM_ESOLVER;
    if (!st) {
        *smax = gsl_vector_get(S, 0);
        *smin = gsl_vector_get(S, (size_t)n - 1);
    }
done:
    if (J)
        gsl_matrix_free(J);
    if (V)
        gsl_matrix_free(V);
    if (S)
        gsl_vector_free(S);
    if (w)
        gsl_vector_free(w);
    free(xp);
    return st;
}

/* ---- full-space polish ---- */

/* Unknowns: the upper triangle of Q (row by row), then R. */
static void full_pack(int K, int M, const double *Q, const double *R, double *u)
{
    long p = 0;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            u[p++] = Q[k * K + l];
    memcpy(u + p, R, sizeof(double) * (size_t)K * (size_t)M);
}

static void full_unpack(int K, int M, const double *u, double *Q, double *R)
{
    long p = 0;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            Q[k * K + l] = Q[l * K + k] = u[p++];
    memcpy(R, u + p, sizeof(double) * (size_t)K * (size_t)M);
}

static scm_status polish(scm_flow *fl, double *Q, double *R, int max_iter, double tol,
                         int fd_only, int dense_step, double *res, scm_error *err)
{
    const scm_model *m = scm_flow_model(fl);
    int K = m->K, M = m->M;
    long n = (long)K * (K + 1) / 2 + (long)K * M;
    size_t KK = (size_t)K * (size_t)K, KM = (size_t)K * (size_t)M;
    double *u = malloc(sizeof(double) * (size_t)n * 4);
    double *Qw = malloc(sizeof(double) * (KK * 2 + KM * 2));
    gsl_matrix *J = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_matrix *T = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *tq = gsl_vector_alloc((size_t)n), *tz = gsl_vector_alloc((size_t)n);
    gsl_vector *work = gsl_vector_alloc((size_t)n), *rhs = gsl_vector_alloc((size_t)n);
    gsl_vector *du = gsl_vector_alloc((size_t)n), *resid = gsl_vector_alloc((size_t)n);
    gsl_permutation *perm = gsl_permutation_alloc((size_t)n);
    scm_status st = SCM_OK;
    scm_csr Js = {0, 0, 0, NULL, NULL, NULL};
    *res = NAN;
    if (!u || !Qw || !J || !T || !tq || !tz || !work || !rhs || !du || !resid || !perm) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the full-space polish (n = %ld)",
                           n);
        goto done;
    }
    double *f0 = u + n, *fp = u + 2 * n, *fm = u + 3 * n;
    double *FQ = Qw, *FR = Qw + KK, *Qt = Qw + KK + KM, *Rt = Qt + KK;
    full_pack(K, M, Q, R, u);
    /* residual at u, packed like the unknowns */
#define EVAL(vec, out)                                                   \
    do {                                                                 \
        full_unpack(K, M, (vec), Qt, Rt);                                \
        st = scm_flow_rhs(fl, Qt, Rt, FQ, FR, NULL);                     \
        if (!st)                                                         \
            full_pack(K, M, FQ, FR, (out));                              \
    } while (0)
    EVAL(u, f0);
    if (st) {
        scm_error_set(err, st, "polish: the flow fails at the start (%s)", scm_status_str(st));
        goto done;
    }
    double r0 = max_abs(f0, n), last_move = INFINITY;
    *res = r0;
    for (int it = 0; it < max_iter && r0 >= tol; it++) {
        double *up = malloc(sizeof(double) * (size_t)n);
        if (!up) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory in the polish");
            goto done;
        }
        /* the closed-form Jacobian (flow.h); central differences where it
         * is not resolved (near-parallel ReLU neurons).  Kept (a chord
         * step) while the iterate moves by less than 1e-8: it then changes
         * by less than that, which leaves the convergence to the round-off
         * floor as it was, and it is most of a step's cost (34 ms of 50 at
         * K = M = 20) */
        if (it > 0 && last_move < 1e-8)
            goto solve;
        full_unpack(K, M, u, Qt, Rt);
        scm_status jst = fd_only ? SCM_EINVAL : scm_flow_jacobian(fl, Qt, Rt, J->data);
        if (jst == SCM_ENOMEM) {
            free(up);
            st = scm_error_set(err, SCM_ENOMEM, "out of memory in the polish's Jacobian");
            goto done;
        }
        for (long j = 0; j < n && !st && jst; j++) {
            memcpy(up, u, sizeof(double) * (size_t)n);
            double h = 1e-6 * fmax(1.0, fabs(u[j]));
            up[j] = u[j] + h;
            EVAL(up, fp);
            up[j] = u[j] - h;
            if (!st)
                EVAL(up, fm);
            for (long i = 0; i < n && !st; i++)
                gsl_matrix_set(J, (size_t)i, (size_t)j, (fp[i] - fm[i]) / (2.0 * h));
        }
        if (st) {
            free(up);
            scm_error_set(err, st, "polish: the flow fails next to the iterate (%s)",
                          scm_status_str(st));
            goto done;
        }
        scm_csr_free(&Js);
        if (!dense_step && scm_csr_from_dense(J->data, n, n, &Js)) {
            free(up);
            st = scm_error_set(err, SCM_ENOMEM, "out of memory in the polish's sparse Jacobian");
            goto done;
        }
    solve:
        /* minimum-norm least-squares Newton step J du = -f0: LSQR on the
         * sparse J (each row has O(K + M) entries), and where it does not
         * converge a dense complete orthogonal decomposition */
        for (long i = 0; i < n; i++)
            gsl_vector_set(rhs, (size_t)i, -f0[i]);
        scm_status lst = SCM_ENOCONV;
        if (!dense_step) {
            long iters = 0;
            lst = scm_linalg_lsqr(&Js, rhs->data, du->data, 1e-12, 4 * n, &iters);
            if (lst == SCM_ENOMEM) {
                free(up);
                st = scm_error_set(err, SCM_ENOMEM, "out of memory in the polish's LSQR");
                goto done;
            }
        }
        if (lst) {
            size_t rank = 0;
            gsl_matrix_memcpy(T, J);
            double rtol = 1e-10 * fmax(1.0, gsl_matrix_max(J) - gsl_matrix_min(J));
            if (gsl_linalg_COD_decomp_e(T, tq, tz, perm, rtol, &rank, work) != GSL_SUCCESS ||
                gsl_linalg_COD_lssolve(T, tq, tz, perm, rank, rhs, du, resid) != GSL_SUCCESS) {
                free(up);
                st = scm_error_set(err, SCM_ESINGULAR, "polish: the least-squares solve failed");
                goto done;
            }
        }
        /* damped: halve the step until the residual decreases */
        double lam = 1.0, r1 = INFINITY;
        for (int ls = 0; ls < 20; ls++) {
            for (long i = 0; i < n; i++)
                up[i] = u[i] + lam * du->data[i];
            EVAL(up, fp);
            if (!st) {
                r1 = max_abs(fp, n);
                if (r1 < r0)
                    break;
            }
            st = SCM_OK;
            lam *= 0.5;
        }
        if (!(r1 < r0)) {
            free(up);
            break;
        }
        last_move = lam * scm_linalg_max_abs(du->data, n);
        memcpy(u, up, sizeof(double) * (size_t)n);
        memcpy(f0, fp, sizeof(double) * (size_t)n);
        free(up);
        r0 = r1;
    }
#undef EVAL
    full_unpack(K, M, u, Q, R);
    *res = r0;
    st = r0 < tol ? SCM_OK : SCM_ENOCONV;
    if (st)
        scm_error_set(err, st, "polish: residual %.3g did not fall below %.3g", r0, tol);
done:
    scm_csr_free(&Js);
    free(u);
    free(Qw);
    if (J)
        gsl_matrix_free(J);
    if (T)
        gsl_matrix_free(T);
    if (tq)
        gsl_vector_free(tq);
    if (tz)
        gsl_vector_free(tz);
    if (work)
        gsl_vector_free(work);
    if (rhs)
        gsl_vector_free(rhs);
    if (du)
        gsl_vector_free(du);
    if (resid)
        gsl_vector_free(resid);
    if (perm)
        gsl_permutation_free(perm);
    return st;
}

scm_status scm_fp_polish(scm_flow *fl, double *Q, double *R, int max_iter, double tol,
                         double *res, scm_error *err)
{
    return polish(fl, Q, R, max_iter, tol, 0, 0, res, err);
}

scm_status scm_fp_polish_fd(scm_flow *fl, double *Q, double *R, int max_iter, double tol,
                            double *res, scm_error *err)
{
    return polish(fl, Q, R, max_iter, tol, 1, 1, res, err);
}

/* ---- linear stability ---- */


scm_status scm_fp_block_stability(scm_blockflow *bf, const double *x, double *re_max,
                                  double *re_min)
{
    int n = scm_ansatz_inst_nscalars(scm_blockflow_inst(bf));
    gsl_matrix *J = gsl_matrix_alloc((size_t)n, (size_t)n);
    double *xp = malloc(sizeof(double) * (size_t)n * 3);
    scm_status st = SCM_OK;
    if (!J || !xp) {
        st = SCM_ENOMEM;
        goto done;
    }
    double *fp = xp + n, *fm = xp + 2 * n;
    for (int j = 0; j < n && !st; j++) {
        memcpy(xp, x, sizeof(double) * (size_t)n);
        double h = 1e-6 * fmax(1.0, fabs(x[j]));
        xp[j] = x[j] + h;
        st = scm_blockflow_residual(bf, xp, fp, NULL);
        xp[j] = x[j] - h;
        if (!st)
            st = scm_blockflow_residual(bf, xp, fm, NULL);
        for (int i = 0; i < n && !st; i++)
            gsl_matrix_set(J, (size_t)i, (size_t)j, (fp[i] - fm[i]) / (2.0 * h));
    }
    if (!st)
        st = scm_linalg_re_range(J, re_max, re_min);
done:
    if (J)
        gsl_matrix_free(J);
    free(xp);
    return st;
}

scm_status scm_fp_full_stability(scm_flow *fl, const double *Q, const double *R,
                                 double *re_max, double *re_min)
{
    const scm_model *m = scm_flow_model(fl);
    int K = m->K, M = m->M;
    long n = (long)K * (K + 1) / 2 + (long)K * M;
    size_t KK = (size_t)K * (size_t)K, KM = (size_t)K * (size_t)M;
    double *u = malloc(sizeof(double) * (size_t)n * 4);
    double *W = malloc(sizeof(double) * (KK + KM) * 2);
    gsl_matrix *J = gsl_matrix_alloc((size_t)n, (size_t)n);
    scm_status st = SCM_OK;
    if (!u || !W || !J) {
        st = SCM_ENOMEM;
        goto done;
    }
    double *up = u + n, *fp = u + 2 * n, *fm = u + 3 * n;
    double *Qt = W, *Rt = W + KK, *FQ = W + KK + KM, *FR = FQ + KK;
    full_pack(K, M, Q, R, u);
    for (long j = 0; j < n && !st; j++) {
        memcpy(up, u, sizeof(double) * (size_t)n);
        double h = 1e-6 * fmax(1.0, fabs(u[j]));
        for (int side = 0; side < 2 && !st; side++) {
            up[j] = u[j] + (side ? -h : h);
            full_unpack(K, M, up, Qt, Rt);
            st = scm_flow_rhs(fl, Qt, Rt, FQ, FR, NULL);
            if (!st)
                full_pack(K, M, FQ, FR, side ? fm : fp);
        }
        for (long i = 0; i < n && !st; i++)
            gsl_matrix_set(J, (size_t)i, (size_t)j, (fp[i] - fm[i]) / (2.0 * h));
    }
    if (!st)
        st = scm_linalg_re_range(J, re_max, re_min);
done:
    free(u);
    free(W);
    if (J)
        gsl_matrix_free(J);
    return st;
}

/* ---- enumeration ---- */

/* A random start: R scalars drawn on a scale that keeps the student norms
 * O(1) whatever the group sizes, Q = R R^T + q0 I. */
static void random_start(scm_blockflow *bf, gsl_rng *rng, double *x)
{
    const scm_ansatz_inst *in = scm_blockflow_inst(bf);
    for (int c = 0; c < in->nsc; c++) {
        const scm_scalar_info *s = &in->sc[c];
        x[c] = 0.0;
        if (s->mat != 'R')
            continue;
        double nt = in->tsize[s->j], u = gsl_rng_uniform(rng);
        if (s->cls == SCM_CLS_DIAG)
            x[c] = -1.0 + 2.2 * u;
        else {
            double scale = gsl_rng_uniform(rng) < 0.5 ? 1.0 / fmax(1.0, nt)
                                                      : 1.0 / sqrt(fmax(1.0, nt));
            x[c] = 0.6 * (u - 0.3) * scale;
        }
    }
    scm_blockflow_set_q_from_r(bf, x, 0.01 + 0.5 * gsl_rng_uniform(rng));
}

/* The file's guess completed by the canonical choice (paired R diagonal 1,
 * everything else 0 in R, Q = R R^T where not guessed: for k1 = 0 this is
 * the global minimum Q = R = I exactly, which Newton could not reach from
 * nearby, ReLU being non-smooth where neurons align). */
static void guess_start(const scm_ansatz *a, scm_blockflow *bf, double *x)
{
    const scm_ansatz_inst *in = scm_blockflow_inst(bf);
    for (int c = 0; c < in->nsc; c++) {
        double g;
        x[c] = in->sc[c].mat == 'R' && in->sc[c].cls == SCM_CLS_DIAG ? 1.0 : 0.0;
        if (in->sc[c].mat == 'R' && scm_ansatz_guess(a, in, c, &g))
            x[c] = g;
    }
    scm_blockflow_set_q_from_r(bf, x, 0.0);
    for (int c = 0; c < in->nsc; c++) {
        double g;
        if (in->sc[c].mat == 'Q' && scm_ansatz_guess(a, in, c, &g))
            x[c] = g;
    }
}

static scm_status add_point(scm_fp_set *out, const scm_ansatz_inst *in, const double *x,
                            double eps, double res)
{
    if (out->n == out->cap) {
        int cap = out->cap ? 2 * out->cap : 16;
        scm_fp_point *p = realloc(out->pt, sizeof *p * (size_t)cap);
        if (!p)
            return SCM_ENOMEM;
        out->pt = p;
        out->cap = cap;
    }
    scm_fp_point *p = &out->pt[out->n];
    memset(p, 0, sizeof *p);
    p->x = malloc(sizeof(double) * (size_t)in->nsc);
    if (!p->x)
        return SCM_ENOMEM;
    memcpy(p->x, x, sizeof(double) * (size_t)in->nsc);
    snprintf(p->ansatz, sizeof p->ansatz, "%s", in->name);
    p->K = in->K;
    p->M = in->M;
    p->k1 = in->k1;
    p->nsc = in->nsc;
    p->eps = eps;
    p->res_block = res;
    p->hits = 1;
    p->res_full = p->inv_dev = p->block_vs_full = p->eps_full = NAN;
    p->res_polish = p->eps_polish = p->polish_shift = NAN;
    p->jac_smin = p->jac_smax = NAN;
    out->n++;
    return SCM_OK;
}

/* The polish's target.  Each entry of F_Q, F_R sums O(K + M) kernel terms
 * of order one, so its roundoff floor is ~(K + M) 1e-16: Newton steps
 * below that cannot lower the residual and only cost Jacobians (at
 * K = M = 12 with target 1e-15, 184 of 278 polishes ended without any
 * decrease, all starting below 1e-14). */
static double polish_tol(const scm_model *m, const scm_fp_opts *o)
{
    return o->polish_tol > 0.0 ? o->polish_tol : fmax(1e-14, 5e-16 * (m->K + m->M));
}

/* The full-space polish of point p (p->Q, p->R hold its full state). */
static scm_status polish_point(scm_fp_point *p, scm_flow *fl, const scm_fp_opts *o,
                               scm_error *err)
{
    const scm_model *m = scm_flow_model(fl);
    size_t KK = (size_t)m->K * (size_t)m->K, KM = (size_t)m->K * (size_t)m->M;
    double *Q0 = malloc(sizeof(double) * (KK + KM));
    if (!Q0)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the polish");
    memcpy(Q0, p->Q, sizeof(double) * KK);
    memcpy(Q0 + KK, p->R, sizeof(double) * KM);
    scm_error perr;
    p->polished = 1;
    p->polish_status = scm_fp_polish(fl, p->Q, p->R, 6, polish_tol(m, o), &p->res_polish, &perr);
    if (p->polish_status == SCM_ENOMEM) {
        free(Q0);
        return scm_error_set(err, SCM_ENOMEM, "%s", perr.msg);
    }
    double sh = 0.0;
    for (size_t i = 0; i < KK; i++)
        sh = fmax(sh, fabs(p->Q[i] - Q0[i]));
    for (size_t i = 0; i < KM; i++)
        sh = fmax(sh, fabs(p->R[i] - Q0[KK + i]));
    p->polish_shift = sh;
    if (scm_flow_loss(fl, p->Q, p->R, &p->eps_polish))
        p->eps_polish = NAN;
    free(Q0);
    return SCM_OK;
}

scm_status scm_fp_point_polish(scm_fp_point *p, const scm_activation *act,
                               const scm_fp_opts *o, scm_error *err)
{
    if (!p->full || !p->Q || !p->R || p->polished || p->K > o->polish_max_K)
        return SCM_OK;
    scm_model *m = scm_model_alloc((int)p->K, (int)p->M, act, NULL, NULL, NULL, err);
    if (!m)
        return err ? err->code : SCM_ENOMEM;
    scm_flow *fl = scm_flow_alloc(m);
    scm_status st = fl ? polish_point(p, fl, o, err)
                       : scm_error_set(err, SCM_ENOMEM, "out of memory in the polish");
    scm_flow_free(fl);
    scm_model_free(m);
    return st;
}

/* Full-space checks (and polish) of point p on fl, a flow of the
 * instance's (K, M). */
static scm_status full_checks(scm_fp_point *p, const scm_ansatz_inst *in, scm_flow *fl,
                              const scm_fp_opts *o, const double *Fblock, scm_error *err)
{
    int K = in->Ki, M = in->Mi;
    size_t KK = (size_t)K * (size_t)K, KM = (size_t)K * (size_t)M;
    double *FQ = malloc(sizeof(double) * (KK + KM));
    double *y = malloc(sizeof(double) * (size_t)in->nsc);
    p->Q = malloc(sizeof(double) * KK);
    p->R = malloc(sizeof(double) * KM);
    scm_status st = SCM_OK;
    if (!FQ || !y || !p->Q || !p->R) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the full-space check");
        goto done;
    }
    double *FR = FQ + KK;
    scm_ansatz_to_full(in, p->x, p->Q, p->R);
    st = scm_flow_rhs(fl, p->Q, p->R, FQ, FR, &p->eps_full);
    if (st == SCM_OK) {
        p->full = 1;
        p->res_full = fmax(max_abs(FQ, (long)KK), max_abs(FR, (long)KM));
        scm_ansatz_project(in, FQ, FR, y, &p->inv_dev);
        double d = 0.0;
        for (int c = 0; c < in->nsc; c++)
            d = fmax(d, fabs(y[c] - Fblock[c]));
        p->block_vs_full = d;
    }
    st = SCM_OK;
    if (p->full && K <= o->polish_max_K && !o->polish_defer)
        st = polish_point(p, fl, o, err);
done:
    free(FQ);
    free(y);
    return st;
}

/* The full (K, M) space's model and flow, for the checks and the polish;
 * one per thread. */
typedef struct {
    scm_model *m;
    scm_flow *fl;
} full_space;

static scm_status full_space_alloc(full_space *f, int K, int M, const scm_activation *act,
                                   scm_error *err)
{
    f->fl = NULL;
    if (!(f->m = scm_model_alloc(K, M, act, NULL, NULL, NULL, err)))
        return err ? err->code : SCM_ENOMEM;
    if (!(f->fl = scm_flow_alloc(f->m))) {
        scm_model_free(f->m);
        f->m = NULL;
        return scm_error_set(err, SCM_ENOMEM, "out of memory allocating the full flow");
    }
    return SCM_OK;
}

static void full_space_free(full_space *f)
{
    scm_flow_free(f->fl);
    scm_model_free(f->m);
    f->m = NULL;
    f->fl = NULL;
}

/* The polish of many points, one per item, each thread with a full
 * space of the point's (K, M). */
typedef struct {
    scm_fp_point **pt;
    const scm_activation *act;
    const scm_fp_opts *o;
    full_space *fs; /* per thread, allocated on first use */
    scm_status *st; /* per point */
} polish_job;

static void polish_item(void *ctx, int tid, int i)
{
    polish_job *j = ctx;
    scm_fp_point *p = j->pt[i];
    full_space *f = &j->fs[tid];
    j->st[i] = SCM_OK;
    if (!p->full || !p->Q || !p->R || p->polished || p->K > j->o->polish_max_K)
        return;
    if (f->m && (f->m->K != (int)p->K || f->m->M != (int)p->M))
        full_space_free(f);
    if (!f->m && (j->st[i] = full_space_alloc(f, (int)p->K, (int)p->M, j->act, NULL)))
        return;
    j->st[i] = polish_point(p, f->fl, j->o, NULL);
}

scm_status scm_fp_points_polish(scm_fp_point **pts, int n, const scm_activation *act,
                                const scm_fp_opts *o, scm_error *err)
{
    scm_status st = scm_fp_opts_check(o, err);
    if (st || n <= 0)
        return st;
    full_space *fs = calloc((size_t)o->threads, sizeof *fs);
    scm_status *pst = malloc(sizeof *pst * (size_t)n);
    if (!fs || !pst) {
        free(fs);
        free(pst);
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the polish");
    }
    polish_job j = {pts, act, o, fs, pst};
    scm_parallel_for(o->threads, n, polish_item, &j);
    for (int i = 0; i < n && !st; i++)
        if (pst[i])
            st = scm_error_set(err, pst[i], "out of memory in the polish of point %d", i);
    for (int t = 0; t < o->threads; t++)
        full_space_free(&fs[t]);
    free(fs);
    free(pst);
    return st;
}

/* Book-keeping of one solve: failures counted, a converged PSD solution
 * merged with a known one (dedup_tol) or appended (*is_new = 1).  Errors
 * only for no memory. */
static scm_status take_result(scm_fp_set *out, int first, const scm_ansatz_inst *in,
                              scm_blockflow *bf, const scm_fp_opts *o, scm_status ss,
                              const double *x, double res, double *F, int *is_new,
                              scm_error *err)
{
    int n = in->nsc;
    *is_new = 0;
    if (ss == SCM_ENOMEM)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the solver");
    if (ss == SCM_ESINGULAR) {
        out->n_noprog++;
        return SCM_OK;
    }
    if (ss == SCM_ENOCONV) {
        out->n_maxiter++;
        return SCM_OK;
    }
    if (ss) {
        out->n_domain++;
        return SCM_OK;
    }
    double gmin;
    if (scm_blockflow_gram_min_eig(bf, x, &gmin) || gmin < -o->psd_tol) {
        out->n_notpsd++;
        return SCM_OK;
    }
    out->n_converged++;
    for (int p = first; p < out->n; p++) {
        double d = 0.0;
        for (int c = 0; c < n; c++)
            d = fmax(d, fabs(out->pt[p].x[c] - x[c]));
        if (d < o->dedup_tol) {
            out->pt[p].hits++;
            if (res < out->pt[p].res_block) {
                memcpy(out->pt[p].x, x, sizeof(double) * (size_t)n);
                out->pt[p].res_block = res;
                out->pt[p].gram_min = gmin;
            }
            return SCM_OK;
        }
    }
    double eps;
    if (scm_blockflow_residual(bf, x, F, &eps))
        return SCM_OK;
    if (add_point(out, in, x, eps, res))
        return scm_error_set(err, SCM_ENOMEM, "out of memory storing a fixed point");
    out->pt[out->n - 1].gram_min = gmin;
    *is_new = 1;
    return SCM_OK;
}

/* The plain solves of an instance's starts: each a pure function of its
 * start, so they run in parallel (one blockflow workspace per thread) and
 * are then taken in start order as if run one after another. */
typedef struct {
    scm_blockflow **bf; /* per thread */
    const scm_fp_opts *o;
    int n;
    double *x;          /* start s at x + s n, overwritten with its result */
    double *res;
    scm_status *ss;
} plain_solves;

static void plain_solve(void *ctx, int tid, int s)
{
    plain_solves *p = ctx;
    p->ss[s] = scm_fp_solve(p->bf[tid], p->x + (size_t)s * (size_t)p->n, p->o, &p->res[s]);
}

/* The per-solution checks (block Jacobian conditioning, full-space checks
 * and polish), one solution per item; each thread has its own workspaces. */
typedef struct {
    scm_fp_point *pt;
    const scm_ansatz_inst *in;
    const scm_fp_opts *o;
    scm_blockflow **bf;
    full_space *fs;     /* per thread, NULL: no full-space checks */
    double *F;          /* per thread, n each */
    scm_status *st;     /* per solution */
} point_checks;

static void check_point(void *ctx, int tid, int i)
{
    point_checks *c = ctx;
    scm_fp_point *pt = &c->pt[i];
    int n = c->in->nsc;
    double *F = c->F + (size_t)tid * (size_t)n;
    c->st[i] = SCM_OK;
    if (scm_blockflow_residual(c->bf[tid], pt->x, F, &pt->eps))
        return;
    pt->res_block = max_abs(F, n);
    double smin = NAN, smax = NAN;
    if (block_jacobian_sv(c->bf[tid], pt->x, &smin, &smax) == SCM_OK) {
        pt->jac_smin = smin;
        pt->jac_smax = smax;
    }
    if (c->fs)
        c->st[i] = full_checks(pt, c->in, c->fs[tid].fl, c->o, F, NULL);
}

scm_status scm_fp_enumerate(const scm_ansatz *a, const scm_ansatz_inst *in,
                            const scm_activation *act, const scm_fp_opts *o,
                            const double *starts, int n_starts, scm_fp_set *out,
                            scm_error *err)
{
    int first = out->n;
    scm_status st = scm_fp_enumerate_solves(a, in, act, o, starts, n_starts, out, err);
    if (st)
        return st;
    return scm_fp_check_points(in, act, o, out->pt + first, out->n - first, err);
}

scm_status scm_fp_enumerate_solves(const scm_ansatz *a, const scm_ansatz_inst *in,
                                   const scm_activation *act, const scm_fp_opts *o,
                                   const double *starts, int n_starts, scm_fp_set *out,
                                   scm_error *err)
{
    scm_status st = scm_fp_opts_check(o, err);
    if (st)
        return st;
    int n = in->nsc, first = out->n, nth = o->threads;
    int total = n_starts + 1 + o->n_random;
    size_t tn = (size_t)total * (size_t)n;
    scm_blockflow **bf = calloc((size_t)nth, sizeof *bf);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    double *x = malloc(sizeof(double) * (2 * tn + 2 * (size_t)n + (size_t)total));
    scm_status *ss = malloc(sizeof *ss * (size_t)total);
    if (!bf || !rng || !x || !ss) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory enumerating '%s'", in->name);
        goto done;
    }
    for (int t = 0; t < nth; t++)
        if (!(bf[t] = scm_blockflow_alloc(in, act))) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory enumerating '%s'", in->name);
            goto done;
        }
    double *x0 = x + tn, *F = x0 + tn, *xd = F + n, *res = xd + n;
    /* the starts, in order: the caller's, the file's guess, random draws */
    gsl_rng_set(rng, o->seed);
    for (int s = 0; s < total; s++) {
        double *xs = x0 + (size_t)s * (size_t)n;
        if (s < n_starts)
            memcpy(xs, starts + (size_t)s * (size_t)n, sizeof(double) * (size_t)n);
        else if (s == n_starts)
            guess_start(a, bf[0], xs);
        else
            random_start(bf[0], rng, xs);
    }
    memcpy(x, x0, sizeof(double) * tn);
    plain_solves ps = {bf, o, n, x, res, ss};
    scm_parallel_for(nth, total, plain_solve, &ps);
    /* in start order: take each result, then the deflated solves from its
     * start, which depend on the roots found before it */
    for (int s = 0; s < total; s++) {
        const double *xs = x + (size_t)s * (size_t)n;
        out->n_starts++;
        int is_new = 0;
        if ((st = take_result(out, first, in, bf[0], o, ss[s], xs, res[s], F, &is_new, err)))
            break;
        int more = !is_new;
        for (int round = 0; more && round < o->deflate && out->n > first; round++) {
            resid_params p = {bf[0], out, first, n};
            double r;
            memcpy(xd, x0 + (size_t)s * (size_t)n, sizeof(double) * (size_t)n);
            out->n_deflated++;
            scm_status ds = solve_resid(&p, xd, o, &r);
            if (ds == SCM_ENOMEM) {
                st = scm_error_set(err, SCM_ENOMEM, "out of memory in the solver");
                break;
            }
            if (ds)
                break; /* no further root from this start */
            /* refine on F itself: the deflated residual is small, F too */
            ds = scm_fp_solve(bf[0], xd, o, &r);
            int before = out->n;
            if ((st = take_result(out, first, in, bf[0], o, ds, xd, r, F, &is_new, err)))
                break;
            out->n_deflated_new += out->n - before;
            more = is_new; /* go on only after a new root */
        }
        if (st)
            goto done;
    }
done:
    for (int t = 0; bf && t < nth; t++)
        scm_blockflow_free(bf[t]);
    free(bf);
    if (rng)
        gsl_rng_free(rng);
    free(x);
    free(ss);
    return st;
}

scm_status scm_fp_check_points(const scm_ansatz_inst *in, const scm_activation *act,
                               const scm_fp_opts *o, scm_fp_point *pt, int np, scm_error *err)
{
    if (np <= 0)
        return SCM_OK;
    int n = in->nsc, nth = o->threads < np ? o->threads : np;
    int do_full = in->integral && in->Ki <= o->full_max_K;
    scm_status st = SCM_OK;
    scm_blockflow **bf = calloc((size_t)nth, sizeof *bf);
    full_space *fs = do_full ? calloc((size_t)nth, sizeof *fs) : NULL;
    double *F = malloc(sizeof(double) * (size_t)nth * (size_t)n);
    scm_status *pst = malloc(sizeof *pst * (size_t)np);
    if (!bf || (do_full && !fs) || !F || !pst) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory checking the solutions of '%s'",
                           in->name);
        goto done;
    }
    for (int t = 0; t < nth; t++) {
        if (!(bf[t] = scm_blockflow_alloc(in, act))) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory checking the solutions of '%s'",
                               in->name);
            goto done;
        }
        if (do_full && (st = full_space_alloc(&fs[t], in->Ki, in->Mi, act, err)))
            goto done;
    }
    point_checks pc = {pt, in, o, bf, fs, F, pst};
    scm_parallel_for(nth, np, check_point, &pc);
    for (int i = 0; i < np; i++)
        if (pst[i]) {
            st = scm_error_set(err, pst[i], "out of memory in the full-space check of '%s'",
                               in->name);
            break;
        }
done:
    for (int t = 0; bf && t < nth; t++)
        scm_blockflow_free(bf[t]);
    for (int t = 0; fs && t < nth; t++)
        full_space_free(&fs[t]);
    free(bf);
    free(fs);
    free(F);
    free(pst);
    return st;
}

/* ---- continuation in M ---- */

void scm_fp_branch_free(scm_fp_branch *b)
{
    free(b->M);
    free(b->eps);
    free(b->res);
    free(b->gram_min);
    free(b->x);
    memset(b, 0, sizeof *b);
}

static scm_status branch_add(scm_fp_branch *b, double M, double eps, double res, double gmin,
                             const double *x)
{
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 64;
        double *nM = realloc(b->M, sizeof(double) * (size_t)cap);
        if (!nM)
            return SCM_ENOMEM;
        b->M = nM;
        double *ne = realloc(b->eps, sizeof(double) * (size_t)cap);
        if (!ne)
            return SCM_ENOMEM;
        b->eps = ne;
        double *nr = realloc(b->res, sizeof(double) * (size_t)cap);
        if (!nr)
            return SCM_ENOMEM;
        b->res = nr;
        double *ng = realloc(b->gram_min, sizeof(double) * (size_t)cap);
        if (!ng)
            return SCM_ENOMEM;
        b->gram_min = ng;
        double *nx = realloc(b->x, sizeof(double) * (size_t)cap * (size_t)b->nsc);
        if (!nx)
            return SCM_ENOMEM;
        b->x = nx;
        b->cap = cap;
    }
    b->M[b->n] = M;
    b->eps[b->n] = eps;
    b->res[b->n] = res;
    b->gram_min[b->n] = gmin;
    memcpy(b->x + (size_t)b->n * (size_t)b->nsc, x, sizeof(double) * (size_t)b->nsc);
    b->n++;
    return SCM_OK;
}

/* Solve at M from the predictor x (overwritten).  0 on success. */
static int corrector(const scm_ansatz *a, double dK, double k1, double M,
                     const scm_activation *act, const scm_fp_opts *o, int nsc, double *x,
                     double *eps, double *res, double *gmin, char *why, size_t whylen)
{
    scm_error e;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, M + dK, M, k1, &e);
    if (!in) {
        snprintf(why, whylen, "%s", e.msg);
        return -1;
    }
    if (in->nsc != nsc) {
        snprintf(why, whylen, "the number of scalars changes at M = %g", M);
        scm_ansatz_inst_free(in);
        return -1;
    }
    scm_blockflow *bf = scm_blockflow_alloc(in, act);
    int rc = -1;
    if (!bf) {
        snprintf(why, whylen, "out of memory");
        scm_ansatz_inst_free(in);
        return -2;
    }
    scm_fp_opts oo = *o;
    oo.accept = fmax(o->accept, 1e-11);
    scm_status st = scm_fp_solve(bf, x, &oo, res);
    if (st)
        snprintf(why, whylen, "Newton failed at M = %.6g (%s, residual %.3g)", M,
                 scm_status_str(st), *res);
    else if (scm_blockflow_gram_min_eig(bf, x, gmin) || *gmin < -o->psd_tol)
        snprintf(why, whylen, "the solution leaves the PSD cone at M = %.6g", M);
    else if (scm_blockflow_residual(bf, x, NULL, eps))
        snprintf(why, whylen, "the loss cannot be evaluated at M = %.6g", M);
    else
        rc = 0;
    scm_blockflow_free(bf);
    scm_ansatz_inst_free(in);
    return rc;
}

scm_status scm_fp_continue(const scm_ansatz *a, double dK, double k1, double M0,
                           const double *x0, double M_end, double h_max,
                           const scm_activation *act, const scm_fp_opts *o, scm_fp_branch *b,
                           scm_error *err)
{
    memset(b, 0, sizeof *b);
    if (!(M_end > M0))
        return scm_error_set(err, SCM_EINVAL, "continuation: need M_end > M0 (got %g, %g)",
                             M_end, M0);
    scm_ansatz_inst *in0 = scm_ansatz_instantiate(a, M0 + dK, M0, k1, err);
    if (!in0)
        return err ? err->code : SCM_EINVAL;
    int n = in0->nsc;
    scm_ansatz_inst_free(in0);
    b->nsc = n;
    double *xc = malloc(sizeof(double) * (size_t)n * 3);
    if (!xc)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    double *xp = xc + n, *xt = xc + 2 * n;
    memcpy(xc, x0, sizeof(double) * (size_t)n);
    double eps, res, gmin;
    char why[512] = "";
    if (corrector(a, dK, k1, M0, act, o, n, xc, &eps, &res, &gmin, why, sizeof why)) {
        free(xc);
        b->ended_early = 1;
        b->M_last = M0;
        snprintf(b->why, sizeof b->why, "the start is not a solution: %s", why);
        return SCM_OK;
    }
    scm_status st = branch_add(b, M0, eps, res, gmin, xc);
    double Mc = M0, Mp = NAN, h = 1.0;
    const double h_min = 1e-6;
    while (!st && Mc < M_end) {
        double hm = h_max > 0.0 ? h_max : fmax(1.0, Mc / 20.0);
        if (h > hm)
            h = hm;
        double Mn = fmin(Mc + h, M_end);
        /* secant predictor (constant for the first step) */
        for (int c = 0; c < n; c++)
            xt[c] = isnan(Mp) ? xc[c] : xc[c] + (xc[c] - xp[c]) * (Mn - Mc) / (Mc - Mp);
        int rc = corrector(a, dK, k1, Mn, act, o, n, xt, &eps, &res, &gmin, why, sizeof why);
        if (rc == -2) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation");
            break;
        }
        /* a jump to another branch shows as a correction much larger than
         * the last step's change */
        double corr = 0.0, last = 0.0;
        for (int c = 0; c < n && rc == 0; c++) {
            double pred = isnan(Mp) ? xc[c] : xc[c] + (xc[c] - xp[c]) * (Mn - Mc) / (Mc - Mp);
            corr = fmax(corr, fabs(xt[c] - pred));
            last = fmax(last, fabs(xc[c] - (isnan(Mp) ? xc[c] : xp[c])));
        }
        if (rc == 0 && corr > 0.05 + 2.0 * last) {
            rc = -1;
            snprintf(why, sizeof why, "the corrector jumped (by %.3g) at M = %.6g", corr, Mn);
        }
        if (rc) {
            h *= 0.5;
            if (h < h_min) {
                b->ended_early = 1;
                snprintf(b->why, sizeof b->why, "%s", why);
                break;
            }
            continue;
        }
        memcpy(xp, xc, sizeof(double) * (size_t)n);
        memcpy(xc, xt, sizeof(double) * (size_t)n);
        Mp = Mc;
        Mc = Mn;
        st = branch_add(b, Mc, eps, res, gmin, xc);
        if (st)
            scm_error_set(err, st, "out of memory in the continuation");
        h *= 2.0;
    }
    b->M_last = Mc;
    free(xc);
    return st;
}

scm_status scm_fp_classify(const scm_ansatz_inst *in, const double *x, scm_fp_structure *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < in->ns; i++) {
        double n = in->ssize[i];
        if (scm_size_zero(n))
            continue;
        s->trQ += n * x[in->qd[i]];
        for (int u = 0; u < in->nt; u++) {
            int c = i * in->nt + u;
            double m = in->tsize[u];
            if (scm_size_zero(m))
                continue;
            if (in->rd[c] >= 0) {
                double dd = x[in->rd[c]], oo = in->ro[c] >= 0 ? x[in->ro[c]] : 0.0;
                s->normR2 += n * (dd * dd + (m - 1.0) * oo * oo);
            } else if (in->rc[c] >= 0) {
                s->normR2 += n * m * x[in->rc[c]] * x[in->rc[c]];
            }
        }
    }
    if (!in->integral) {
        s->n_anti = s->n_aligned = s->n_other = NAN;
        return SCM_OK;
    }
    /* the anti-aligned count is scm_model_align's, on the full state */
    const int K = in->Ki, M = in->Mi;
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_linear, NULL, NULL, NULL, &e);
    double *Q = malloc(sizeof(double) * ((size_t)K * K + (size_t)K * M));
    scm_alignment *kind = malloc(sizeof *kind * (size_t)K);
    int *partner = malloc(sizeof *partner * (size_t)K);
    scm_status st = m && Q && kind && partner ? SCM_OK : SCM_ENOMEM;
    if (!st)
        st = scm_ansatz_to_full(in, x, Q, Q + (size_t)K * K);
    if (!st)
        st = scm_model_align(m, Q, Q + (size_t)K * K, 0.0, kind, partner, NULL);
    for (int i = 0; !st && i < in->ns; i++) {
        int unspec = scm_group_unspecialised(in, x, i);
        for (int k = in->soff[i]; k < in->soff[i] + (int)lround(in->ssize[i]); k++) {
            if (kind[k] == SCM_ALIGN_ANTI && !unspec)
                s->n_anti += 1.0;
            else if (kind[k] == SCM_ALIGN_ALIGNED && !unspec)
                s->n_aligned += 1.0;
            else
                s->n_other += 1.0;
        }
    }
    if (st)
        s->n_anti = s->n_aligned = s->n_other = NAN;
    scm_model_free(m);
    free(Q);
    free(kind);
    free(partner);
    return st;
}
