/* stabpoint_text.c: the report `scm stability` prints, built as a string
 * (scm_stabpoint_text) so that the library does not print: the point (and
 * its family), the loss, smoothness, the spectra (symmetric or dense), the
 * perturbation test's rows and the verdicts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "scm/stabpoint_text.h"

static void text_family(strbuf *b, const scm_family_pick *fp)
{
    const scm_family *f = &fp->fam;
    sb_printf(b,
              "family     k1 = %d at K = %d, M = %d: %d specialised point%s with %d anti-aligned "
              "student%s (%d ansatz instance%s)\n",
              f->k1, f->K, f->M, f->n, f->n == 1 ? "" : "s", f->k1, f->k1 == 1 ? "" : "s",
              f->n_instances, f->n_instances == 1 ? "" : "s");
    for (int i = 0; i < f->n; i++) {
        const scm_fam_point *p = &f->pt[i];
        sb_printf(b, "  %s[%d] loss %-18.12g %-32s ansatz %s instance %d\n",
                  i == fp->index ? "*" : " ", i, p->eps, scm_fam_class_str(p->cls), p->ansatz,
                  p->instance);
    }
    const scm_fam_point *p = &f->pt[fp->index];
    sb_printf(b, "point      [%d] (%s): ansatz %s instance %d, %d anti-aligned, loss %.12g, %s\n",
              fp->index, fp->how, p->ansatz, p->instance, p->n_anti, p->eps,
              scm_fam_class_str(p->cls));
    sb_printf(b, "scalars   ");
    for (int c = 0; c < p->nsc; c++)
        sb_printf(b, " %s=%.10g", p->names[c], p->x[c]);
    sb_printf(b, "\n");
}

static void text_hessian(strbuf *b, const scm_stab_result *r)
{
    sb_printf(b,
              "Hessian    %s, n = %d: %d negative, %d zero (|l| <= %.2e), %d positive; "
              "max %.4g\n",
              r->hessian_closed ? "closed form" : "central differences", r->counts.n,
              r->counts.n_neg, r->counts.n_zero, r->counts.zero_tol, r->counts.n_pos, r->eval_max);
    if (r->hessian_closed)
        sb_printf(b, "           closed form vs central differences: %.2e (relative)\n",
                  r->hessian_fd_diff);
    sb_printf(b, "           smallest:");
    for (int i = 0; i < r->n_small; i++)
        sb_printf(b, " %.4g", r->eval_small[i]);
    sb_printf(b, "\n");
    sb_printf(b,
              "zero modes predicted %ld: rotations of the %ld-dim complement of the "
              "teacher span %ld (p = %d students' directions outside it)",
              r->zm.total, r->d - r->zm.rank_T, r->zm.rotation, r->zm.p);
    if (r->zm.homogeneity)
        sb_printf(b, ", ReLU homogeneity of parallel students %ld", r->zm.homogeneity);
    if (r->zm.linear)
        sb_printf(b, ", linear: same v^T W %ld", r->zm.linear);
    sb_printf(b, "\n");
}

static const char *irrep_str(int i)
{
    static const char *const s[] = {"[n]", "[n-1,1]", "[n-2,2]", "[n-2,1,1]", "[n-1,1]x[n'-1,1]"};
    return i >= 0 && i < 5 ? s[i] : "?";
}

/* One distinct eigenvalue of a symmetric spectrum. */
static void text_eig(strbuf *b, const scm_symstab_result *h, const scm_symstab_eig *e)
{
    char unit[160] = "";
    if (e->unit >= 0 && e->unit < h->n_units)
        snprintf(unit, sizeof unit, "%s", h->unit_name[e->unit]);
    if (e->unit2 >= 0 && e->unit2 < h->n_units)
        snprintf(unit + strlen(unit), sizeof unit - strlen(unit), " x %s", h->unit_name[e->unit2]);
    if (e->part == SCM_SYMSTAB_FLOW && e->imag != 0.0)
        sb_printf(b, "    %+.10e %+.4ei x %-8ld", e->value, e->imag, e->mult);
    else
        sb_printf(b, "    %+.10e x %-8ld", e->value, e->mult);
    sb_printf(b, " %-4s %-16s %s%s%s\n",
              e->part == SCM_SYMSTAB_SPAN   ? "span"
              : e->part == SCM_SYMSTAB_PERP ? "perp"
                                            : "flow",
              irrep_str(e->irrep), unit, e->zero ? "  zero: " : "", e->zero ? e->cause : "");
}

/* The symmetric spectra (sp->sym.done). */
static void text_sym(strbuf *b, const scm_stabpoint_sym *s, const scm_stab_result *r)
{
    const scm_symstab_result *h = &s->hess;
    sb_printf(b,
              "Hessian    symmetric spectrum (%d isotypic blocks, largest %d), n = K d = %ld: "
              "%ld negative, %ld zero (|l| <= %.2e), %ld positive; max %.4g\n",
              h->n_blocks, h->max_block, h->total, h->n_neg, h->n_zero, h->zero_tol, h->n_pos,
              r->eval_max);
    sb_printf(b,
              "           zeros predicted %ld (rotations %ld, ReLU homogeneity %ld, linear %ld); "
              "%d distinct eigenvalues:\n",
              s->predicted_zeros, r->zm.rotation, r->zm.homogeneity, r->zm.linear, h->n);
    for (int i = 0; i < h->n; i++)
        text_eig(b, h, &h->eig[i]);
    if (!r->jacobian_done) {
        sb_printf(b, "Jacobian   (F_Q, F_R): not computed (%s)\n",
                  scm_symstab_refusal_str(s->jac.refusal));
        return;
    }
    const scm_symstab_result *j = &s->jac;
    sb_printf(b,
              "Jacobian   (F_Q, F_R) symmetric spectrum, n = %ld: largest real part %.4g, smallest "
              "%.4g; %ld unstable, %ld zero; %d distinct eigenvalues:\n",
              j->total, r->jac_re_max, r->jac_re_min, j->n_pos, j->n_zero, j->n);
    for (int i = 0; i < j->n; i++)
        text_eig(b, j, &j->eig[i]);
}

static void text_rows(strbuf *b, const scm_stab_result *r, const scm_stab_opts *o, int perturb)
{
    if (perturb == SCM_STABPOINT_PERTURB_NONE) {
        sb_printf(b,
                  "perturbation: not run (--perturb none, or auto at K > %d: --perturb qr runs "
                  "it)\n",
                  SCM_STABPOINT_QR_AUTO_MAX_K);
        return;
    }
    if (perturb == SCM_STABPOINT_PERTURB_QR)
        sb_printf(b,
                  "perturbation: in (Q, R): weight-space noise mapped to the overlaps, then CVODE "
                  "to t = %g%s\n",
                  o->t_max, o->run_flow ? "" : " (off)");
    else
        sb_printf(b, "perturbation: %d GD steps of eta = %g (tau = %g), then CVODE to t = %g%s\n",
                  o->n_steps, o->eta, o->n_steps * o->eta, o->t_max, o->run_flow ? "" : " (off)");
    sb_printf(b, "%-8s %6s %-10s %-10s %-10s %-10s %-10s  %-28s %s\n", "sigma", "trials",
              "dist0_med", "dist_med", "dist_max", "deps_med", "deps_max", "destination",
              "verdict");
    for (int i = 0; i < r->n_rows; i++) {
        const scm_stab_row *w = &r->rows[i];
        char dest[128];
        int n = snprintf(dest, sizeof dest, "same %d", w->n_same);
        if (w->n_global)
            n += snprintf(dest + n, sizeof dest - (size_t)n, ", global %d", w->n_global);
        if (w->n_other)
            n += snprintf(dest + n, sizeof dest - (size_t)n, ", eps %.6g..%.6g %d",
                          w->other_eps_min, w->other_eps_max, w->n_other);
        if (w->n_failed)
            snprintf(dest + n, sizeof dest - (size_t)n, ", failed %d", w->n_failed);
        sb_printf(b, "%-8.0e %6d %-10.3e %-10.3e %-10.3e %-10.3e %-10.3e  %-28s %s%s\n", w->sigma,
                  w->n, w->dist0_med, w->dist_med, w->dist_max, w->deps_med, w->deps_max, dest,
                  scm_verdict_str(w->verdict),
                  w->sigma > o->verdict_sigma_max ? " (not in verdict)" : "");
    }
}

static void text_result(strbuf *b, const scm_stabpoint *sp, const scm_activation *act,
                        const scm_stab_opts *o, const scm_stab_result *r)
{
    sb_printf(b, "scm stability: K = %ld, M = %ld, %s, T = I, v = v* = 1, d = %ld\n", sp->K, sp->M,
              act->name, r->d);
    if (sp->from_family && sp->pick.fam.n)
        text_family(b, &sp->pick);
    else
        sb_printf(b, "point      %s\n", sp->desc);
    sb_printf(b, "loss       %.12g   residual %.3g\n", r->eps, r->residual);
    if (!r->smooth.smooth)
        sb_printf(b,
                  "smoothness not differentiable here: %s (no Hessian; the perturbation test "
                  "decides)\n",
                  r->smooth.what);
    else if (!r->smooth.closed_form)
        sb_printf(b,
                  "smoothness kernel-singular (Hessian exists, C^2): %s; finite-difference "
                  "Hessian\n",
                  r->smooth.what);
    if (sp->sym.done) {
        text_sym(b, &sp->sym, r);
    } else {
        if (sp->sym.why_dense[0])
            sb_printf(b, "spectra    dense (%s)\n", sp->sym.why_dense);
        if (r->hessian_done)
            text_hessian(b, r);
        if (r->jacobian_done)
            sb_printf(b, "Jacobian   (F_Q, F_R): largest real part %.4g, smallest %.4g\n",
                      r->jac_re_max, r->jac_re_min);
    }
    text_rows(b, r, o, sp->sym.perturb);
    sb_printf(b, "verdict    %s (perturbation test); Hessian: %s; %s\n",
              scm_verdict_str(r->verdict), scm_hverdict_str(r->hverdict),
              r->agree == 1   ? "the two tests agree"
              : r->agree == 0 ? "THE TWO TESTS DISAGREE"
                              : "not comparable");
}

char *scm_stabpoint_text(const scm_stabpoint *sp, const scm_activation *act, const scm_stab_opts *o,
                         const scm_stab_result *r)
{
    strbuf b = {NULL, 0, 0, 0};
    text_result(&b, sp, act, o, r);
    if (b.failed || !b.s) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
