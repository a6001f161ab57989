/* stability_sym.c: the analysis of `scm stability` (scm_stabpoint_analyse,
 * stabpoint.h): the symmetric spectra of symstab.h where the point's ansatz
 * is known, the dense scm_stab_analyse otherwise or on request, and the
 * perturbation test in weight space or in (Q, R). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/stabpoint.h"

/* The ansatz named name: from file, or among the built-in ones.  NULL with
 * err set when there is none. */
static scm_ansatz *find_ansatz(const char *name, const char *file, scm_error *err)
{
    if (file) {
        scm_ansatz *a = scm_ansatz_load(file, err);
        if (a && strcmp(scm_ansatz_name(a), name)) {
            scm_error_set(err, SCM_EINVAL, "the point's ansatz '%s' is not that of '%s' (%s)",
                          name, file, scm_ansatz_name(a));
            scm_ansatz_free(a);
            return NULL;
        }
        return a;
    }
    for (int i = 0; i < scm_ansatz_builtin_count(); i++) {
        const char *fname, *text = scm_ansatz_builtin_text(i, &fname);
        scm_error e;
        scm_ansatz *a = scm_ansatz_parse(text, strlen(text), fname, &e);
        if (a && !strcmp(scm_ansatz_name(a), name))
            return a;
        scm_ansatz_free(a);
    }
    scm_error_set(err, SCM_EINVAL, "the point's ansatz '%s' is not a built-in one (give it "
                                   "with --ansatz FILE, or use --dense)", name);
    return NULL;
}

/* The smallest and largest Hessian eigenvalues into r, by multiplicity. */
static void fill_hessian(const scm_symstab_result *h, long predicted, scm_stab_result *r)
{
    r->hessian_done = 1;
    r->hessian_closed = 1;
    r->hessian_fd_diff = NAN;
    r->counts.n = (int)h->total;
    r->counts.n_neg = (int)h->n_neg;
    r->counts.n_zero = (int)h->n_zero;
    r->counts.n_pos = (int)h->n_pos;
    r->counts.zero_tol = h->zero_tol;
    r->counts.asym = 0.0;
    r->n_small = 0;
    for (int i = 0; i < h->n && r->n_small < SCM_STAB_N_SMALL; i++)
        for (long k = 0; k < h->eig[i].mult && r->n_small < SCM_STAB_N_SMALL; k++)
            r->eval_small[r->n_small++] = h->eig[i].value;
    r->eval_max = h->n ? h->eig[h->n - 1].value : NAN;
    int finite = isfinite(r->eval_max) != 0;
    for (int i = 0; i < h->n; i++)
        finite &= isfinite(h->eig[i].value) != 0;
    r->hverdict = !finite                 ? SCM_HVERDICT_NONFINITE
                  : h->n_neg > 0            ? SCM_HVERDICT_SADDLE
                  : h->n_zero == predicted ? SCM_HVERDICT_MIN
                  : h->n_zero > predicted  ? SCM_HVERDICT_DEGENERATE
                                           : SCM_HVERDICT_INCONSISTENT;
}

/* The symmetric spectra of sp at instance in, into sp->sym and r.  A
 * refusal of the Hessian returns its status (the caller goes dense). */
static scm_status sym_spectra(scm_stabpoint *sp, const scm_model *m, const scm_ansatz_inst *in,
                              const scm_stab_opts *o, scm_stab_result *r, scm_error *err)
{
    scm_stabpoint_sym *s = &sp->sym;
    scm_symstab_opts so;
    scm_symstab_opts_default(&so);
    so.d = r->d;
    scm_status st = scm_stab_symmetric_full(in, m->act, sp->Q, sp->R, &so, &s->hess, err);
    if (st)
        return st;
    scm_stab_smoothness(m, sp->Q, sp->R, o->smooth_tol, &r->smooth);
    if ((st = scm_stab_predict_zero_modes(m, sp->Q, sp->R, r->d, o->smooth_tol, &r->zm)))
        return scm_error_set(err, st, "zero modes: the dimension d = %ld is below the rank",
                             r->d);
    s->predicted_zeros = r->zm.total;
    fill_hessian(&s->hess, s->predicted_zeros, r);
    int nsc = scm_ansatz_inst_nscalars(in);
    double *x = malloc(sizeof *x * (size_t)(nsc ? nsc : 1));
    if (!x)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    scm_ansatz_project(in, sp->Q, sp->R, x, NULL);
    scm_error je;
    if (scm_stab_symmetric_jacobian(in, m->act, x, &so, &s->jac, &je) == SCM_OK && s->jac.n &&
        isfinite(s->jac.eig[0].value) && isfinite(s->jac.eig[s->jac.n - 1].value)) {
        r->jacobian_done = 1;
        r->jac_re_min = s->jac.eig[0].value;
        r->jac_re_max = s->jac.eig[s->jac.n - 1].value;
    }
    free(x);
    s->done = 1;
    return SCM_OK;
}

/* The loss and residual of the point into r. */
static scm_status point_values(const scm_model *m, const scm_stabpoint *sp, scm_stab_result *r,
                               scm_error *err)
{
    const long K = sp->K, M = sp->M;
    scm_flow *fl = scm_flow_alloc(m);
    double *FQ = malloc(sizeof *FQ * (size_t)(K * K)), *FR = malloc(sizeof *FR * (size_t)(K * M));
    scm_status st = fl && FQ && FR ? scm_flow_rhs(fl, sp->Q, sp->R, FQ, FR, &r->eps) : SCM_ENOMEM;
    if (st)
        scm_error_set(err, st, "the flow cannot be evaluated at the point (%s)",
                      scm_status_str(st));
    double res = 0.0;
    for (long i = 0; !st && i < K * K; i++)
        res = fmax(res, fabs(FQ[i]));
    for (long i = 0; !st && i < K * M; i++)
        res = fmax(res, fabs(FR[i]));
    r->residual = res;
    free(FQ);
    free(FR);
    scm_flow_free(fl);
    return st;
}

/* The perturbation test of the symmetric path, as perturb says. */
static scm_status perturbation(const scm_model *m, const scm_stabpoint *sp,
                               const scm_stab_opts *o, int perturb, scm_stab_result *r,
                               scm_error *err)
{
    if (perturb == SCM_STABPOINT_PERTURB_NONE) {
        r->n_rows = 0;
        r->verdict = SCM_VERDICT_UNDECIDED;
        r->agree = -1;
        return SCM_OK;
    }
    if (perturb == SCM_STABPOINT_PERTURB_QR)
        return scm_stab_perturb_qr(m, sp->Q, sp->R, o, r, err);
    scm_stab_opts ow = *o;
    ow.hessian = 0;
    ow.jacobian = 0;
    scm_stab_result *t = malloc(sizeof *t);
    if (!t)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    scm_status st = scm_stab_analyse(m, sp->Q, sp->R, &ow, t, err);
    if (!st) {
        r->n_rows = t->n_rows;
        memcpy(r->rows, t->rows, sizeof r->rows);
        r->verdict = t->verdict;
        r->agree = scm_stab_agree(r->hverdict, r->verdict);
    }
    free(t);
    return st;
}

/* The symmetric analysis: SCM_OK, or a status with sp->sym.why_dense set
 * when the dense path should run instead (*fatal = 0), or a real error
 * (*fatal = 1). */
static scm_status try_symmetric(scm_stabpoint *sp, const scm_model *m, const scm_stab_opts *o,
                                int perturb, const char *ansatz_file, scm_stab_result *r,
                                int *fatal, scm_error *err)
{
    *fatal = 1;
    scm_ansatz *a = find_ansatz(sp->ansatz, ansatz_file, err);
    if (!a)
        return SCM_EINVAL;
    scm_ansatz_inst *in =
        scm_ansatz_instantiate(a, (double)sp->K, (double)sp->M, (double)sp->instance, err);
    scm_status st = in ? SCM_OK : SCM_EINVAL;
    if (!st)
        st = point_values(m, sp, r, err);
    if (!st) {
        st = sym_spectra(sp, m, in, o, r, err);
        if (st && st != SCM_ENOMEM) {
            *fatal = 0;
            snprintf(sp->sym.why_dense, sizeof sp->sym.why_dense, "symmetric spectrum refused: %.200s",
                     err->msg);
        }
    }
    if (!st) {
        if (perturb == SCM_STABPOINT_PERTURB_AUTO)
            perturb = sp->K * r->d <= SCM_STABPOINT_WEIGHTS_MAX ? SCM_STABPOINT_PERTURB_WEIGHTS
                      : sp->K <= SCM_STABPOINT_QR_AUTO_MAX_K    ? SCM_STABPOINT_PERTURB_QR
                                                                : SCM_STABPOINT_PERTURB_NONE;
        sp->sym.perturb = perturb;
        st = perturbation(m, sp, o, perturb, r, err);
    }
    scm_ansatz_inst_free(in);
    scm_ansatz_free(a);
    return st;
}

scm_status scm_stabpoint_analyse(scm_stabpoint *sp, const scm_activation *act,
                                 const scm_stab_opts *o, int dense, int perturb,
                                 const char *ansatz_file, scm_stab_result *r, scm_error *err)
{
    memset(r, 0, sizeof *r);
    r->hverdict = SCM_HVERDICT_NONE;
    r->verdict = SCM_VERDICT_UNDECIDED;
    r->agree = -1;
    scm_symstab_result_free(&sp->sym.hess);
    scm_symstab_result_free(&sp->sym.jac);
    memset(&sp->sym, 0, sizeof sp->sym);
    scm_status st = scm_stab_opts_check(o, err);
    if (st)
        return st;
    scm_model *m = scm_model_alloc((int)sp->K, (int)sp->M, act, NULL, NULL, NULL, err);
    if (!m)
        return err->code ? err->code : SCM_EINVAL;
    r->d = o->d > 0 ? o->d : sp->K + sp->M;
    int fatal = 0;
    if (dense)
        snprintf(sp->sym.why_dense, sizeof sp->sym.why_dense, "--dense");
    else if (!sp->ansatz[0])
        snprintf(sp->sym.why_dense, sizeof sp->sym.why_dense, "the point names no ansatz");
    else if (!(st = try_symmetric(sp, m, o, perturb, ansatz_file, r, &fatal, err)))
        goto out;
    if (fatal)
        goto out;
    scm_symstab_result_free(&sp->sym.hess);
    scm_symstab_result_free(&sp->sym.jac);
    sp->sym.done = 0;
    /* the dense path honours perturb too; auto is the weight-space test here */
    sp->sym.perturb = perturb == SCM_STABPOINT_PERTURB_AUTO ? SCM_STABPOINT_PERTURB_WEIGHTS : perturb;
    if (sp->sym.perturb == SCM_STABPOINT_PERTURB_WEIGHTS) {
        st = scm_stab_analyse(m, sp->Q, sp->R, o, r, err);
    } else {
        scm_stab_opts spectra_only = *o;
        spectra_only.n_sigma = 0;
        st = scm_stab_analyse(m, sp->Q, sp->R, &spectra_only, r, err);
        if (!st)
            st = perturbation(m, sp, o, sp->sym.perturb, r, err);
    }
out:
    scm_model_free(m);
    return st;
}
