/* fpsweep_path.c: the steps of the paths that scm_fp_sweep_grow follows,
 * in M and in k1: the chord-Newton corrector (the Jacobian kept along a
 * path, GSL's hybrids where it fails), the secant predictor and the test
 * that the corrector stayed on its branch, and the bookkeeping of a
 * block-level solution (PSD test, membership, append); see
 * fpsweep_internal.h. */
#include "scm/fpsweep.h"

#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/fpsweep_internal.h"

void scm_fp_chord_free(scm_fp_chord *c)
{
    if (c->J)
        gsl_matrix_free(c->J);
    if (c->perm)
        gsl_permutation_free(c->perm);
    if (c->F)
        gsl_vector_free(c->F);
    if (c->dx)
        gsl_vector_free(c->dx);
    free(c->xt);
    c->J = NULL;
    c->perm = NULL;
    c->F = c->dx = NULL;
    c->xt = NULL;
    c->n = c->valid = 0;
}

static int chord_size(scm_fp_chord *c, int n)
{
    if (c->n == n)
        return 0;
    long ev = c->evals, hy = c->hybrids;
    scm_fp_chord_free(c);
    c->evals = ev;
    c->hybrids = hy;
    c->J = gsl_matrix_alloc((size_t)n, (size_t)n);
    c->perm = gsl_permutation_alloc((size_t)n);
    c->F = gsl_vector_alloc((size_t)n);
    c->dx = gsl_vector_alloc((size_t)n);
    c->xt = malloc(sizeof(double) * (size_t)n * 2);
    if (!c->J || !c->perm || !c->F || !c->dx || !c->xt) {
        scm_fp_chord_free(c);
        return -1;
    }
    c->Ft = c->xt + n;
    c->n = n;
    return 0;
}

/* Forward-difference Jacobian at x (F = F(x)) and its LU factors. */
static int chord_refresh(scm_fp_chord *c, scm_blockflow *bf, const double *x, const double *F)
{
    int n = c->n, sg;
    for (int j = 0; j < n; j++) {
        memcpy(c->xt, x, sizeof(double) * (size_t)n);
        double h = 1e-7 * fmax(1.0, fabs(x[j]));
        c->xt[j] += h;
        c->evals++;
        if (scm_blockflow_residual(bf, c->xt, c->Ft, NULL))
            return -1;
        for (int i = 0; i < n; i++)
            gsl_matrix_set(c->J, (size_t)i, (size_t)j, (c->Ft[i] - F[i]) / h);
    }
    if (gsl_linalg_LU_decomp(c->J, c->perm, &sg) != GSL_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++)
        if (!(fabs(gsl_matrix_get(c->J, (size_t)i, (size_t)i)) > 1e-300))
            return -1;
    c->valid = c->fresh = 1;
    return 0;
}

/* Correct x (overwritten) to a solution of the block residual: 0 and *res,
 * *eps on success (max |F| < o->accept, iterated down to o->tol or until
 * no decrease), -1 on failure. */
static int chord_solve(scm_fp_chord *c, scm_blockflow *bf, double *x, const scm_fp_opts *o,
                       double *res, double *eps)
{
    int n = scm_ansatz_inst_nscalars(scm_blockflow_inst(bf));
    if (chord_size(c, n))
        return -1;
    c->fresh = 0;
    double *F = c->F->data;
    c->evals++;
    if (scm_blockflow_residual(bf, x, F, eps))
        return -1;
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r = fmax(r, fabs(F[i]));
    for (int it = 0; it < 30 && r >= o->tol; it++) {
        if (!c->valid && chord_refresh(c, bf, x, F)) {
            c->valid = 0;
            break;
        }
        if (gsl_linalg_LU_solve(c->J, c->perm, c->F, c->dx) != GSL_SUCCESS)
            break;
        for (int i = 0; i < n; i++)
            c->xt[i] = x[i] - c->dx->data[i];
        double e1, r1 = INFINITY;
        c->evals++;
        if (scm_blockflow_residual(bf, c->xt, c->Ft, &e1) == SCM_OK) {
            r1 = 0.0;
            for (int i = 0; i < n; i++)
                r1 = fmax(r1, fabs(c->Ft[i]));
        }
        if (!(r1 < 0.5 * r) && !c->fresh) {
            /* the kept Jacobian no longer contracts: refresh it here */
            if (chord_refresh(c, bf, x, F)) {
                c->valid = 0;
                break;
            }
            if (!(r1 < r))
                continue;
        }
        if (!(r1 < r))
            break;
        memcpy(x, c->xt, sizeof(double) * (size_t)n);
        memcpy(F, c->Ft, sizeof(double) * (size_t)n);
        *eps = e1;
        r = r1;
        c->fresh = 0;
    }
    *res = r;
    return r < o->accept ? 0 : -1;
}

/* chord_solve, and where it fails GSL's hybrids (scm_fp_solve: a trust
 * region, which also converges on a singular Jacobian, e.g. on a
 * continuum of fixed points) from the same start. */
int scm_fp_chord_correct(scm_fp_chord *c, scm_blockflow *bf, double *x, const scm_fp_opts *o,
                         double *res, double *eps)
{
    int n = scm_ansatz_inst_nscalars(scm_blockflow_inst(bf));
    double x0[256];
    memcpy(x0, x, sizeof(double) * (size_t)n);
    if (chord_solve(c, bf, x, o, res, eps) == 0)
        return 0;
    memcpy(x, x0, sizeof(double) * (size_t)n);
    scm_fp_opts oo = *o;
    oo.max_iter = 30;
    c->hybrids++;
    if (scm_fp_solve(bf, x, &oo, res) != SCM_OK)
        return -1;
    c->valid = 0;
    return scm_blockflow_residual(bf, x, NULL, eps) == SCM_OK ? 0 : -1;
}

int scm_fp_set_has(const scm_fp_set *s, const double *x, int n, double eps, double tol)
{
    for (int r = 0; r < s->n; r++) {
        double d = 0.0;
        for (int c = 0; c < n && d < tol; c++)
            d = fmax(d, fabs(s->pt[r].x[c] - x[c]));
        double e = s->pt[r].eps;
        if (d < tol || fabs(eps - e) <= 1e-10 * fmax(1e-3, fabs(e)))
            return 1;
    }
    return 0;
}

int scm_fp_set_add_block(scm_fp_set *s, const scm_ansatz_inst *in, const double *x, double eps,
                         double res, double gmin)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        scm_fp_point *np = realloc(s->pt, sizeof *np * (size_t)cap);
        if (!np)
            return -1;
        s->pt = np;
        s->cap = cap;
    }
    int n = scm_ansatz_inst_nscalars(in);
    scm_fp_point *p = &s->pt[s->n];
    memset(p, 0, sizeof *p);
    if (!(p->x = malloc(sizeof(double) * (size_t)n)))
        return -1;
    memcpy(p->x, x, sizeof(double) * (size_t)n);
    snprintf(p->ansatz, sizeof p->ansatz, "%s", scm_ansatz_inst_name(in));
    p->K = in->K;
    p->M = in->M;
    p->k1 = in->k1;
    p->nsc = n;
    p->eps = eps;
    p->res_block = res;
    p->gram_min = gmin;
    p->hits = 1;
    p->jac_smin = p->jac_smax = p->res_full = p->inv_dev = p->block_vs_full = NAN;
    p->eps_full = p->res_polish = p->eps_polish = p->polish_shift = NAN;
    s->n++;
    return 0;
}

int scm_fp_psd_ok(scm_blockflow *bf, const double *x, const scm_fp_opts *o, double *gmin)
{
    return scm_blockflow_gram_min_eig(bf, x, gmin) == SCM_OK && *gmin >= -o->psd_tol;
}

void scm_fp_path_predict(const double *xc, const double *xp, double pc, double pp,
                         double p_next, int n, double *out)
{
    for (int c = 0; c < n; c++)
        out[c] = isnan(pp) ? xc[c] : xc[c] + (xc[c] - xp[c]) * (p_next - pc) / (pc - pp);
}

int scm_fp_path_no_jump(const double *xc, const double *xp, double pc, double pp,
                        double p_next, int n, const double *xt)
{
    double corr = 0.0, last = 0.0, pred[256];
    scm_fp_path_predict(xc, xp, pc, pp, p_next, n, pred);
    for (int c = 0; c < n; c++) {
        corr = fmax(corr, fabs(xt[c] - pred[c]));
        last = fmax(last, isnan(pp) ? 0.0 : fabs(xc[c] - xp[c]));
    }
    return corr <= 0.05 + 2.0 * last;
}
