/* fixedpoint_continue.c: continuation in M of one fixed point of an
 * ansatz (a real parameter of the instance): secant predictor, Newton
 * corrector on the block residual, step halved where Newton fails, the
 * PSD cone is left or the corrector jumps to another branch; see
 * fixedpoint.h (scm_fp_continue). */
#include "scm/fixedpoint.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"

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
