/* fixedpoint.c: the fixed points inside an ansatz, found by Newton on the
 * block residual (plain and deflated, from the caller's starts, the
 * ansatz file's guess and random draws), their bookkeeping (dedup, PSD
 * check), block-level conditioning and stability, and the drivers that
 * check and polish many points on threads; see fixedpoint.h.  The
 * full-space work on one point is fixedpoint_full.c, the continuation in
 * M fixedpoint_continue.c. */
#include "scm/fixedpoint.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multiroots.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/fixedpoint_internal.h"
#include "landscape/fpclassify_internal.h"
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
    o->full_max_K = SCM_FP_FULL_MAX_K;
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
    *res = scm_fp_max_abs(F->data, n);
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
        double r = scm_fp_max_abs(s->f->data, n);
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
    scm_fp_full_space *fs;     /* per thread, NULL: no full-space checks */
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
    pt->res_block = scm_fp_max_abs(F, n);
    double smin = NAN, smax = NAN;
    if (block_jacobian_sv(c->bf[tid], pt->x, &smin, &smax) == SCM_OK) {
        pt->jac_smin = smin;
        pt->jac_smax = smax;
    }
    if (c->fs)
        c->st[i] = scm_fp_full_checks(pt, c->in, c->fs[tid].fl, c->o, F, NULL);
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
    scm_fp_full_space *fs = do_full ? calloc((size_t)nth, sizeof *fs) : NULL;
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
        if (do_full && (st = scm_fp_full_space_alloc(&fs[t], in->Ki, in->Mi, act, err)))
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
        scm_fp_full_space_free(&fs[t]);
    free(bf);
    free(fs);
    free(F);
    free(pst);
    return st;
}

/* ---- the polish of many points, on threads ---- */

/* The polish of many points, one per item, each thread with a full
 * space of the point's (K, M). */
typedef struct {
    scm_fp_point **pt;
    const scm_activation *act;
    const scm_fp_opts *o;
    scm_fp_full_space *fs; /* per thread, allocated on first use */
    scm_status *st; /* per point */
} polish_job;

static void polish_item(void *ctx, int tid, int i)
{
    polish_job *j = ctx;
    scm_fp_point *p = j->pt[i];
    scm_fp_full_space *f = &j->fs[tid];
    j->st[i] = SCM_OK;
    if (!p->full || !p->Q || !p->R || p->polished || p->K > j->o->polish_max_K)
        return;
    if (f->m && (f->m->K != (int)p->K || f->m->M != (int)p->M))
        scm_fp_full_space_free(f);
    if (!f->m && (j->st[i] = scm_fp_full_space_alloc(f, (int)p->K, (int)p->M, j->act, NULL)))
        return;
    j->st[i] = scm_fp_full_polish_point(p, f->fl, j->o, NULL);
}

scm_status scm_fp_points_polish(scm_fp_point **pts, int n, const scm_activation *act,
                                const scm_fp_opts *o, scm_error *err)
{
    scm_status st = scm_fp_opts_check(o, err);
    if (st || n <= 0)
        return st;
    scm_fp_full_space *fs = calloc((size_t)o->threads, sizeof *fs);
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
        scm_fp_full_space_free(&fs[t]);
    free(fs);
    free(pst);
    return st;
}

/* ---- structure ---- */

scm_status scm_fp_classify(const scm_ansatz_inst *in, const double *x, scm_fp_structure *s)
{
    scm_fp_structure_norms(in, x, s);
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
    if (!st)
        scm_fp_structure_count(in, x, kind, s);
    else
        s->n_anti = s->n_aligned = s->n_other = NAN;
    scm_model_free(m);
    free(Q);
    free(kind);
    free(partner);
    return st;
}
