/* certify.c: the existence proof of certify.h (Krawczyk on the ball
 * residual of certify_ball.c), the result's JSON; realisability is
 * certify_real.c's.  The derivations are in docs/certify.md. */
#include "scm/certify.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/certify_internal.h"

#define VERDICT_OK "certified critical point, strictness unproved"

void scm_certify_opts_default(scm_certify_opts *o)
{
    o->prec = 128;
    o->max_radius = 1e-8;
    o->mutate_dc = 0.0;
    o->mutate_d2 = 0.0;
}

static scm_status opts_check(const scm_certify_opts *o, scm_error *err)
{
    if (o->prec < 53 || o->prec > 4096)
        return scm_error_set(err, SCM_EINVAL, "certify: prec = %ld bits, must be in 53 .. 4096",
                             o->prec);
    if (!(o->max_radius > 0.0 && o->max_radius < 1.0))
        return scm_error_set(err, SCM_EINVAL, "certify: max_radius = %g, must be in (0, 1)",
                             o->max_radius);
    if (!isfinite(o->mutate_dc) || !isfinite(o->mutate_d2))
        return scm_error_set(err, SCM_EINVAL, "certify: mutate_dc and mutate_d2 must be finite");
    return SCM_OK;
}

/* X = x +- r, the box as balls (the centres are exact doubles). */
static void set_box(arb_ptr X, const double *x, int n, double r)
{
    for (int i = 0; i < n; i++) {
        arb_set_d(X + i, x[i]);
        if (r > 0.0)
            mag_set_d(arb_radref(X + i), r);
    }
}

scm_status scm_certify_residual(const scm_ansatz_inst *in, const scm_activation *act,
                                const double *x, double r, const scm_certify_opts *o,
                                double *Fmid, double *Frad, double *eps_mid, double *eps_rad,
                                scm_error *err)
{
    scm_status st = opts_check(o, err);
    if (st)
        return st;
    int n = in->nsc;
    arb_ptr X = _arb_vec_init(n);
    set_box(X, x, n, r);
    scm_cert_eval e;
    scm_cert_eval_init(&e, in);
    st = scm_cert_eval_box(in, act, X, o->prec, o->mutate_dc, &e);
    if (st)
        scm_error_set(err, st, "certify: %s", e.why);
    else {
        for (int i = 0; i < n; i++) {
            Fmid[i] = arf_get_d(arb_midref(e.F + i), ARF_RND_NEAR);
            Frad[i] = mag_get_d(arb_radref(e.F + i));
        }
        if (eps_mid)
            *eps_mid = arf_get_d(arb_midref(e.eps), ARF_RND_NEAR);
        if (eps_rad)
            *eps_rad = mag_get_d(arb_radref(e.eps));
    }
    scm_cert_eval_clear(&e);
    _arb_vec_clear(X, n);
    return st;
}

/* Y = inverse of the midpoint of J (row-major n x n); -1 if singular. */
static int approx_inverse(const arb_mat_t J, int n, double *Y)
{
    gsl_matrix *A = gsl_matrix_alloc((size_t)n, (size_t)n), *I = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_permutation *p = gsl_permutation_alloc((size_t)n);
    int ok = A && I && p, sgn;
    if (ok) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                gsl_matrix_set(A, (size_t)i, (size_t)j,
                               arf_get_d(arb_midref(arb_mat_entry(J, i, j)), ARF_RND_NEAR));
        ok = gsl_linalg_LU_decomp(A, p, &sgn) == GSL_SUCCESS &&
             gsl_linalg_LU_invert(A, p, I) == GSL_SUCCESS;
        for (int i = 0; ok && i < n * n; i++) {
            Y[i] = gsl_matrix_get(I, (size_t)(i / n), (size_t)(i % n));
            ok = isfinite(Y[i]);
        }
    }
    if (A)
        gsl_matrix_free(A);
    if (I)
        gsl_matrix_free(I);
    if (p)
        gsl_permutation_free(p);
    return ok ? 0 : -1;
}

/* The Krawczyk test over X = x +- r: K(X) - x = -Y F(x) + (I - Y J(X)) [-r, r]
 * strictly inside (-r, r) in every component.  Returns 1 if so; *ratio gets
 * max_i |K(X)_i - x_i| / r. */
static int krawczyk(const double *Y, arb_srcptr F0, const arb_mat_t JX, int n, double r,
                    slong prec, double *ratio)
{
    arb_t acc, m, t, box;
    arb_init(acc);
    arb_init(m);
    arb_init(t);
    arb_init(box);
    arb_zero(box);
    mag_set_d(arb_radref(box), r);
    int ok = 1;
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        arb_zero(acc);
        for (int j = 0; j < n; j++) {
            arb_set_d(t, Y[i * n + j]);
            arb_submul(acc, t, F0 + j, prec);
        }
        for (int j = 0; j < n; j++) {
            arb_set_si(m, i == j);
            for (int k = 0; k < n; k++) {
                arb_set_d(t, Y[i * n + k]);
                arb_submul(m, t, arb_mat_entry(JX, k, j), prec);
            }
            arb_addmul(acc, m, box, prec);
        }
        double u = scm_cert_ubound(acc);
        if (!(u < r))
            ok = 0;
        worst = fmax(worst, isfinite(u) ? u / r : INFINITY);
    }
    *ratio = worst;
    arb_clear(acc);
    arb_clear(m);
    arb_clear(t);
    arb_clear(box);
    return ok;
}

/* The Krawczyk loop over growing radii; on success fills the box's loss,
 * angles and realisability, then proves strictness (certify_hess.c). */
static scm_status prove_box(const scm_ansatz_inst *in, const scm_activation *act, const double *x,
                      const scm_certify_opts *o, const double *Y, arb_srcptr F0, const arb_t eps0,
                      double r0, scm_certify_result *res)
{
    int n = in->nsc;
    arb_ptr X = _arb_vec_init(n);
    scm_cert_eval e;
    scm_cert_eval_init(&e, in);
    int proved = 0;
    char why[240] = "";
    for (double r = r0; r <= o->max_radius && !proved; r *= 8.0) {
        set_box(X, x, n, r);
        scm_status st = scm_cert_eval_box(in, act, X, o->prec, o->mutate_dc, &e);
        if (st) {
            snprintf(why, sizeof why, "at box radius %.3g: %s", r, e.why);
            break;
        }
        res->radius = r;
        proved = krawczyk(Y, F0, e.J, n, r, o->prec, &res->contraction);
    }
    if (!proved) {
        if (!why[0])
            snprintf(why, sizeof why,
                     "Krawczyk: K(X) not inside X for any box radius up to %.3g (Newton step "
                     "%.3g, contraction %.3g)",
                     o->max_radius, res->newton_step, res->contraction);
        scm_cert_refuse(res, why);
    } else {
        res->certified = 1;
        snprintf(res->verdict, sizeof res->verdict, "%s", VERDICT_OK);
        /* the mean-value form eps(x) + grad eps(X) . (X - x), intersected
         * with the direct enclosure eps(X) */
        arb_t mv, t, box;
        arb_init(mv);
        arb_init(t);
        arb_init(box);
        arb_zero(box);
        mag_set_d(arb_radref(box), res->radius);
        arb_set(mv, eps0);
        for (int j = 0; j < n; j++)
            arb_addmul(mv, e.deps + j, box, o->prec);
        if (!arb_intersection(t, mv, e.eps, o->prec))
            arb_set(t, e.eps);
        arb_set(e.eps, t);
        arb_clear(mv);
        arb_clear(t);
        arb_clear(box);
        arf_t lo;
        arf_init(lo);
        arb_get_lbound_arf(lo, e.eps, 64);
        res->loss_lo = arf_get_d(lo, ARF_RND_DOWN);
        arb_get_ubound_arf(lo, e.eps, 64);
        res->loss_hi = arf_get_d(lo, ARF_RND_UP);
        arf_clear(lo);
        res->sin2_min = e.sin2_min;
        scm_cert_realisability(in, &e, X, o->prec, res);
    }
    scm_cert_eval_clear(&e);
    _arb_vec_clear(X, n);
    if (res->certified && res->off_span) {
        /* the Hessian of certify_hess.c assumes Q = R R^T; off the span the
         * rotations mixing the ghost directions are zero modes */
        snprintf(res->reason, sizeof res->reason,
                 "strictness unproved: students lie partly outside the teacher span (Q - R R^T != "
                 "0), and the rotation zero modes there are not quotiented out");
        return SCM_OK;
    }
    return res->certified ? scm_cert_strictness(in, act, x, res->radius, o, res) : SCM_OK;
}

scm_status scm_certify_point(const scm_ansatz_inst *in, const scm_activation *act,
                             const double *x, const scm_certify_opts *o,
                             scm_certify_result *res, scm_error *err)
{
    memset(res, 0, sizeof *res);
    res->loss_lo = res->loss_hi = NAN;
    res->contraction = NAN;
    res->lambda_lo = res->lambda_span_lo = res->lambda_perp_lo = NAN;
    res->lambda_float = res->lambda_neg_hi = NAN;
    scm_status st = opts_check(o, err);
    if (st)
        return st;
    if (!in->integral) {
        scm_cert_refuse(res, "the group sizes are not integers");
        return SCM_OK;
    }
    int n = in->nsc;
    double *Y = malloc(sizeof(double) * (size_t)(n * n) + 1);
    arb_ptr X = _arb_vec_init(n);
    if (!Y) {
        _arb_vec_clear(X, n);
        return scm_error_set(err, SCM_ENOMEM, "certify: out of memory");
    }
    scm_cert_eval e;
    scm_cert_eval_init(&e, in);
    set_box(X, x, n, 0.0);
    st = scm_cert_eval_box(in, act, X, o->prec, o->mutate_dc, &e);
    if (st == SCM_EINVAL || st == SCM_ENOMEM) {
        scm_error_set(err, st, "certify: %s", e.why);
        goto out;
    }
    if (st) {
        scm_cert_refuse(res, e.why[0] ? e.why : scm_status_str(st));
        st = SCM_OK;
        goto out;
    }
    for (int i = 0; i < n; i++)
        res->res_hi = fmax(res->res_hi, scm_cert_ubound(e.F + i));
    if (approx_inverse(e.J, n, Y)) {
        scm_cert_refuse(res, "the block Jacobian at the point is singular");
        goto out;
    }
    double xmax = 1.0;
    for (int i = 0; i < n; i++) {
        double s = 0.0;
        for (int j = 0; j < n; j++)
            s += Y[i * n + j] * arf_get_d(arb_midref(e.F + j), ARF_RND_NEAR);
        res->newton_step = fmax(res->newton_step, fabs(s));
        xmax = fmax(xmax, fabs(x[i]));
    }
    double r0 = fmax(2.0 * res->newton_step, 1e-15 * xmax);
    if (r0 > o->max_radius) {
        char why[240];
        snprintf(why, sizeof why,
                 "the Newton step %.3g exceeds the largest box radius %.3g: no zero is provably "
                 "that close",
                 res->newton_step, o->max_radius);
        scm_cert_refuse(res, why);
        goto out;
    }
    if ((st = prove_box(in, act, x, o, Y, e.F, e.eps, r0, res)))
        scm_error_set(err, st, "certify: the strictness proof failed (%s)", scm_status_str(st));
out:
    scm_cert_eval_clear(&e);
    _arb_vec_clear(X, n);
    free(Y);
    return st;
}

cJSON *scm_certify_result_json(const scm_certify_result *res)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    cJSON_AddBoolToObject(j, "certified", res->certified);
    cJSON_AddStringToObject(j, "verdict", res->verdict);
    cJSON_AddStringToObject(j, "reason", res->reason);
    cJSON_AddStringToObject(j, "realisable", res->realisable);
    cJSON_AddNumberToObject(j, "radius", res->radius);
    cJSON_AddNumberToObject(j, "newton_step", res->newton_step);
    cJSON_AddNumberToObject(j, "contraction", res->contraction);
    cJSON *l = cJSON_AddArrayToObject(j, "loss_enclosure");
    if (l) {
        cJSON_AddItemToArray(l, cJSON_CreateNumber(res->loss_lo));
        cJSON_AddItemToArray(l, cJSON_CreateNumber(res->loss_hi));
    }
    cJSON_AddNumberToObject(j, "residual_upper", res->res_hi);
    cJSON_AddNumberToObject(j, "sin2_angle_min", res->sin2_min);
    if (!res->certified)
        return j;
    /* strictness: eigenvalues of d H (NaN prints as null) */
    cJSON *h = cJSON_AddObjectToObject(j, "hessian");
    if (h) {
        cJSON_AddStringToObject(h, "normalisation", "d H (independent of d)");
        cJSON_AddNumberToObject(h, "lambda_min_lower", res->lambda_lo);
        cJSON_AddNumberToObject(h, "span_lower", res->lambda_span_lo);
        cJSON_AddNumberToObject(h, "complement_lower", res->lambda_perp_lo);
        cJSON_AddNumberToObject(h, "lambda_min_float", res->lambda_float);
        cJSON_AddNumberToObject(h, "negative_upper", res->lambda_neg_hi);
        cJSON_AddStringToObject(h, "negative_in", res->hess_where);
        cJSON_AddNumberToObject(h, "pattern_spaces", res->hess_spaces);
        cJSON_AddNumberToObject(h, "open_spaces", res->hess_open);
    }
    return j;
}
