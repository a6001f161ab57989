/* symstab.c: the entry points of symstab.h: the symmetry-adapted spectra
 * of the weight-space Hessian and of the flow's Jacobian at a
 * block-symmetric point (derivation in docs/symmetric-stability.md).
 * Here: the checks of the input, the choice between the teacher span and
 * the ghost coordinates (students outside the span), and the counts; the
 * blocks themselves are symstab_blocks.c's. */
#include "scm/symstab.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_matrix.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/symstab_internal.h"

void scm_symstab_opts_default(scm_symstab_opts *o)
{
    o->d = 0;
    o->span_tol = 1e-8;
    o->sym_tol = 1e-9;
    o->zero_rel_tol = 1e-9;
    o->parallel_limit = 1;
}

void scm_symstab_result_free(scm_symstab_result *res)
{
    if (!res)
        return;
    free(res->eig);
    free(res->unit_name);
    res->eig = NULL;
    res->unit_name = NULL;
    res->n = 0;
}

/* ---- students outside the teacher span ---- */

/* Z = P^(1/2) per student group of the instance, from the blocks P of
 * Q - R R^T on the unrefined cells c0: the group-mean vectors (a G x G
 * matrix, symmetrised with the square roots of the sizes) and the
 * contrasts of each group (the scalar d - o) separately, put back
 * together as blocks (section 4 of the note).  *pmin: P's smallest
 * eigenvalue. */
static scm_status group_sqrt(const sym_cells *c0, const sym_units *un, const sym_blk *P,
                             int ns_in, double tol, double *zd, double *zo, double *zc,
                             double *pmin, long *rank)
{
    int g = c0->ns;
    double *T = malloc(sizeof *T * (size_t)(g * g + 1)), *V = malloc(sizeof *V * (size_t)(g * g + 1));
    double *lam = malloc(sizeof *lam * (size_t)(g + 1));
    scm_status st = SCM_OK;
    if (!T || !V || !lam) {
        st = SCM_ENOMEM;
        goto out;
    }
    for (int a = 0; a < g; a++)
        for (int b = 0; b < g; b++) {
            double na = c0->s_n[a], nb = c0->s_n[b];
            sym_blk p = P[a * g + b];
            T[a * g + b] = a == b ? p.d + (na - 1.0) * p.o : sqrt(na * nb) * p.d;
        }
    if ((st = sym_eig_sym(T, g, lam, V)))
        goto out;
    *pmin = INFINITY;
    *rank = 0;
    for (int q = 0; q < g; q++) {
        *pmin = fmin(*pmin, lam[q]);
        *rank += lam[q] > tol;
    }
    for (int a = 0; a < g; a++) {
        int ia = un->sg[c0->s_unit[a]];
        double na = c0->s_n[a], contrast = P[a * g + a].d - P[a * g + a].o;
        if (na > 1.5) {
            *pmin = fmin(*pmin, contrast);
            *rank += contrast > tol ? lround(na) - 1 : 0;
        }
        for (int b = 0; b < g; b++) {
            int ib = un->sg[c0->s_unit[b]];
            double t = 0.0;
            for (int q = 0; q < g; q++)
                t += V[a * g + q] * V[b * g + q] * sqrt(fmax(lam[q], 0.0));
            if (a != b) {
                zc[ia * ns_in + ib] = t / sqrt(na * c0->s_n[b]);
            } else if (na > 1.5) {
                double ls = sqrt(fmax(contrast, 0.0));
                zo[ia] = (t - ls) / na;
                zd[ia] = ls + zo[ia];
            } else {
                zd[ia] = t;
                zo[ia] = 0.0;
            }
        }
    }
out:
    free(T);
    free(V);
    free(lam);
    return st;
}

/* Decide between the teacher span and the ghost coordinates: *zbuf is
 * NULL in the span; else it holds Z's blocks (cx->zd, zo, zc point into
 * it) and *perp_dim is reduced by the K ghost coordinates. */
static scm_status span_setup(const sym_cells *c0, sym_ctx *cx, const scm_symstab_opts *o, long d,
                             long *perp_dim, double **zbuf, scm_symstab_result *res)
{
    const scm_ansatz_inst *in = cx->in;
    int g = c0->ns, ns_in = in->ns;
    double qmax = 1.0, pmin = 0.0;
    for (int a = 0; a < g; a++)
        qmax = fmax(qmax, c0->Q[a * g + a].d);
    sym_blk *P = malloc(sizeof *P * (size_t)(g * g + 1));
    if (!P)
        return scm_error_set(cx->err, SCM_ENOMEM, "out of memory in the symmetric Hessian");
    double dev = sym_cells_span_defect(c0, P), tol = o->span_tol * qmax;
    scm_status st = SCM_OK;
    *zbuf = NULL;
    *perp_dim = d - in->Mi;
    res->span_defect = dev;
    if (dev <= tol)
        goto out;
    res->out_of_span = 1;
    if (d < (long)in->Ki + in->Mi) {
        res->refusal = SCM_SYMSTAB_OUT_OF_SPAN;
        st = scm_error_set(cx->err, SCM_EINVAL,
                           "students outside the teacher span: max |Q - R R^T| = %.3g, which "
                           "needs d >= K + M = %d (got d = %ld)",
                           dev, in->Ki + in->Mi, d);
        goto out;
    }
    *zbuf = calloc((size_t)(2 * ns_in + ns_in * ns_in), sizeof **zbuf);
    if (!*zbuf) {
        st = scm_error_set(cx->err, SCM_ENOMEM, "out of memory in the symmetric Hessian");
        goto out;
    }
    cx->zd = *zbuf;
    cx->zo = *zbuf + ns_in;
    cx->zc = *zbuf + 2 * ns_in;
    if ((st = group_sqrt(c0, cx->units, P, ns_in, tol, *zbuf, *zbuf + ns_in, *zbuf + 2 * ns_in,
                         &pmin, &res->p_out))) {
        scm_error_set(cx->err, st, "the square root of Q - R R^T failed");
        goto out;
    }
    if (pmin < -tol) {
        res->refusal = SCM_SYMSTAB_BAD_INPUT;
        st = scm_error_set(cx->err, SCM_EINVAL,
                           "bad input: Q - R R^T is not PSD (eigenvalue %.3g): not a state", pmin);
        goto out;
    }
    *perp_dim -= in->Ki;
    /* the orbit of the rotations of R^d fixing the teachers
     * (scm_stab_predict_zero_modes) */
    res->zero_rotations = res->p_out * (d - in->Mi) - res->p_out * (res->p_out + 1) / 2;
out:
    free(P);
    return st;
}

/* ---- the entry points ---- */

static int cmp_eig(const void *a, const void *b)
{
    const scm_symstab_eig *p = a, *q = b;
    if (p->value != q->value)
        return p->value < q->value ? -1 : 1;
    return p->imag < q->imag ? -1 : p->imag > q->imag;
}

/* Counts, zeros and their causes, once every block is in. */
/* The cause of the zeros, as far as the symmetries explain them. */
static const char *zero_cause(const scm_symstab_result *res, const scm_activation *act)
{
    if (act == &scm_act_linear)
        return "linear units: the loss depends on sum_k w_k only";
    if (res->parallel_students)
        return "norm redistribution between parallel students: a continuum of fixed points";
    if (res->parallel && !res->out_of_span)
        return "a continuum of fixed points (students parallel to one teacher) or accidental";
    if (res->out_of_span && res->n_zero == res->zero_rotations)
        return "rotations outside the teacher span: all the zeros, p (d - M) - p (p + 1)/2";
    if (res->out_of_span)
        return "rotations outside the teacher span (fewer than the zeros), or a continuum";
    return "no symmetry of the loss: a continuum of critical points or an accidental zero";
}

/* |value + i imag|: hypot, which is exactly fabs for a real value (the
 * Hessian's, most of the Jacobian's) and slower. */
static double eig_abs(const scm_symstab_eig *e)
{
    return e->imag == 0.0 ? fabs(e->value) : hypot(e->value, e->imag);
}

static void finish(scm_symstab_result *res, const scm_activation *act, double zero_rel_tol)
{
    qsort(res->eig, (size_t)res->n, sizeof *res->eig, cmp_eig);
    double vmax = 0.0;
    for (int i = 0; i < res->n; i++)
        vmax = fmax(vmax, eig_abs(&res->eig[i]));
    res->zero_tol = zero_rel_tol * vmax;
    res->total = res->n_neg = res->n_zero = res->n_pos = 0;
    for (int i = 0; i < res->n; i++) {
        scm_symstab_eig *e = &res->eig[i];
        res->total += e->mult;
        e->zero = eig_abs(e) <= res->zero_tol;
        if (e->zero)
            res->n_zero += e->mult;
        else if (e->value < 0.0)
            res->n_neg += e->mult;
        else
            res->n_pos += e->mult;
    }
    for (int i = 0; i < res->n; i++)
        if (res->eig[i].zero)
            snprintf(res->eig[i].cause, sizeof res->eig[i].cause, "%s", zero_cause(res, act));
}

/* The checks of the input that need no kernel. */
static scm_status check_input(const scm_ansatz_inst *in, const scm_activation *act,
                              const double *x, long d, scm_symstab_result *res, scm_error *err)
{
    res->refusal = SCM_SYMSTAB_BAD_INPUT;
    if (!in->integral)
        return scm_error_set(err, SCM_EINVAL, "bad input: the group sizes of '%s' are not integers",
                             in->name);
    if (act != &scm_act_relu && act != &scm_act_erf && act != &scm_act_linear)
        return scm_error_set(err, SCM_EINVAL,
                             "bad input: no second derivatives for activation '%s'", act->name);
    if (d < in->Mi)
        return scm_error_set(err, SCM_EINVAL, "bad input: d = %ld is below M = %d", d, in->Mi);
    for (int i = 0; i < in->nsc; i++)
        if (!isfinite(x[i]))
            return scm_error_set(err, SCM_EINVAL, "bad input: scalar %s is not finite",
                                 in->sc[i].name);
    res->refusal = SCM_SYMSTAB_ACCEPTED;
    return SCM_OK;
}

scm_status scm_stab_symmetric(const scm_ansatz_inst *in, const scm_activation *act,
                              const double *x, const scm_symstab_opts *o,
                              scm_symstab_result *res, scm_error *err)
{
    scm_symstab_opts def;
    if (!o) {
        scm_symstab_opts_default(&def);
        o = &def;
    }
    memset(res, 0, sizeof *res);
    long d = o->d > 0 ? o->d : (long)in->Ki + in->Mi;
    res->d = d;
    scm_status st = check_input(in, act, x, d, res, err);
    if (st)
        return st;
    sym_units un;
    if ((st = sym_units_build(in, &un))) {
        sym_units_free(&un);
        return scm_error_set(err, st, "out of memory in the symmetric Hessian");
    }
    un.kc = calloc(SYM_KC_CAP, sizeof *un.kc); /* NULL: no cache, same results */
    sym_ctx cx = {in, act, x, &un, &res->refusal, err, NULL, NULL, NULL, o->parallel_limit, res};
    long perp_dim = 0;
    double *zbuf = NULL;
    int *zero = calloc((size_t)un.n + 1, sizeof *zero);
    sym_cells *c0 = zero ? sym_cells_build(&cx, zero, 0, &st) : NULL;
    if (!c0) {
        st = zero ? st : scm_error_set(err, SCM_ENOMEM, "out of memory in the symmetric Hessian");
        goto out;
    }
    if ((st = span_setup(c0, &cx, o, d, &perp_dim, &zbuf, res)))
        goto out;
    res->n_units = un.n;
    res->unit_name = malloc(sizeof *res->unit_name * (size_t)(un.n + 1));
    if (!res->unit_name) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the symmetric Hessian");
        goto out;
    }
    memcpy(res->unit_name, un.name, sizeof *un.name * (size_t)un.n);
    if ((st = sym_run_all(&cx, SYM_MODE_SPAN, d, perp_dim, res)))
        goto out;
    finish(res, act, o->zero_rel_tol);
    if (res->total != (long)in->Ki * d)
        st = scm_error_set(err, SCM_ESOLVER,
                           "internal: the multiplicities add up to %ld, not K d = %ld",
                           res->total, (long)in->Ki * d);
out:
    sym_cells_free(c0);
    free(zbuf);
    free(zero);
    sym_units_free(&un);
    return st;
}

scm_status scm_stab_symmetric_jacobian(const scm_ansatz_inst *in, const scm_activation *act,
                                       const double *x, const scm_symstab_opts *o,
                                       scm_symstab_result *res, scm_error *err)
{
    scm_symstab_opts def;
    if (!o) {
        scm_symstab_opts_default(&def);
        o = &def;
    }
    memset(res, 0, sizeof *res);
    scm_status st = check_input(in, act, x, in->Mi, res, err);
    if (st)
        return st;
    sym_units un;
    if ((st = sym_units_build(in, &un))) {
        sym_units_free(&un);
        return scm_error_set(err, st, "out of memory in the symmetric spectrum");
    }
    un.kc = calloc(SYM_KC_CAP, sizeof *un.kc); /* NULL: no cache, same results */
    /* no weight space here: no ghost coordinates, whatever the span */
    sym_ctx cx = {in, act, x, &un, &res->refusal, err, NULL, NULL, NULL, 0, res};
    res->n_units = un.n;
    res->unit_name = malloc(sizeof *res->unit_name * (size_t)(un.n + 1));
    if (!res->unit_name)
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the symmetric spectrum");
    else {
        memcpy(res->unit_name, un.name, sizeof *un.name * (size_t)un.n);
        st = sym_run_all(&cx, SYM_MODE_JAC, 1, 0, res);
    }
    if (!st) {
        finish(res, act, o->zero_rel_tol);
        long want = (long)in->Ki * (in->Ki + 1) / 2 + (long)in->Ki * in->Mi;
        if (res->total != want)
            st = scm_error_set(err, SCM_ESOLVER,
                               "internal: the multiplicities add up to %ld, not %ld", res->total,
                               want);
    }
    sym_units_free(&un);
    return st;
}

scm_status scm_stab_symmetric_full(const scm_ansatz_inst *in, const scm_activation *act,
                                   const double *Q, const double *R,
                                   const scm_symstab_opts *o, scm_symstab_result *res,
                                   scm_error *err)
{
    scm_symstab_opts def;
    if (!o) {
        scm_symstab_opts_default(&def);
        o = &def;
    }
    memset(res, 0, sizeof *res);
    res->refusal = SCM_SYMSTAB_BAD_INPUT;
    if (!in->integral)
        return scm_error_set(err, SCM_EINVAL, "bad input: the group sizes of '%s' are not integers",
                             in->name);
    double *x = malloc(sizeof *x * (size_t)(in->nsc + 1)), dev = 0.0, scale = 1.0;
    if (!x)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the symmetric Hessian");
    scm_status st = scm_ansatz_project(in, Q, R, x, &dev);
    for (long i = 0; i < (long)in->Ki * in->Ki; i++)
        scale = fmax(scale, fabs(Q[i]));
    for (long i = 0; i < (long)in->Ki * in->Mi; i++)
        scale = fmax(scale, fabs(R[i]));
    if (st)
        st = scm_error_set(err, st, "bad input: the projection onto '%s' failed", in->name);
    else if (!(dev <= o->sym_tol * scale)) {
        st = scm_error_set(err, SCM_EINVAL,
                           "not block-symmetric: (Q, R) deviates from ansatz '%s' by %.3g "
                           "(tolerance %.3g)",
                           in->name, dev, o->sym_tol * scale);
        res->refusal = SCM_SYMSTAB_NOT_BLOCK_SYMMETRIC;
    } else
        st = scm_stab_symmetric(in, act, x, o, res, err);
    free(x);
    return st;
}

const char *scm_symstab_verdict(const scm_symstab_result *res)
{
    if (res->n_neg > 0)
        return "saddle";
    return res->n_zero == res->zero_rotations ? "min_candidate" : "degenerate";
}

scm_status scm_symstab_expand(const scm_symstab_result *res, double *eval, long n)
{
    if (n != res->total)
        return SCM_EINVAL;
    long k = 0;
    for (int i = 0; i < res->n; i++)
        for (long j = 0; j < res->eig[i].mult && k < n; j++)
            eval[k++] = res->eig[i].value;
    return k == n ? SCM_OK : SCM_EINVAL;
}
