/* split_text.c: the table `scm split` prints (scm_split_study_text,
 * split.h), built as a string so that the library does not print: the
 * parent and its inner Hessian with the class of the split line, then one
 * row per split point (residual, inertia measured and predicted, verdicts). */
#include <stdio.h>
#include <stdlib.h>

#include "core/strbuf.h"
#include "scm/split.h"

/* What the class of the inner Hessian says about the split line. */
static const char *class_meaning(scm_split_class c)
{
    return c == SCM_SPLIT_PD           ? "minima for lambda in (0, 1), saddles outside"
           : c == SCM_SPLIT_ND         ? "saddles for lambda in (0, 1), minima outside"
           : c == SCM_SPLIT_INDEFINITE ? "saddles for every lambda"
                                       : "degenerate (a zero eigenvalue on the span)";
}

static void text_parent(strbuf *b, const scm_split_study *st)
{
    const scm_split_parent *p = st->parent;
    const scm_split_inner *h = &st->inner;
    const scm_stab_counts *pc = &st->parent_counts;
    sb_printf(b, "scm split: K = %ld -> %ld, M = %ld, %s, d = %ld, neuron %d (v_r = %g)\n", p->K,
              p->K + st->samples[0].n - 1, p->M, st->model->act->name, st->d, h->r,
              st->model->v[h->r]);
    sb_printf(b, "parent     %s\n", p->desc);
    sb_printf(b, "           Hessian (K d = %ld): %d negative, %d zero, %d positive; symmetry "
                 "zero modes %ld\n",
              p->K * st->d, pc->n_neg, pc->n_zero, pc->n_pos, st->parent_zero.total);
    sb_printf(b, "inner Hessian d H_r: on the %d-dim span of students and teachers:", h->rank);
    for (int i = 0; i < h->rank; i++)
        sb_printf(b, " %.6g", h->eval[i]);
    sb_printf(b, "\n           on the complement (multiplicity d - %d): %.6g%s\n", h->rank,
              h->h_perp, h->perp_flat ? " (flat: explained zero modes of the split point)" : "");
    sb_printf(b, "           class %s: %s\n", scm_split_class_str(h->cls),
              class_meaning(h->cls));
    if (pc->n_neg > 0)
        sb_printf(b, "           (the parent is itself a saddle: every split point is a "
                     "saddle)\n");
}

static void text_samples(strbuf *b, const scm_split_study *st)
{
    const scm_split_sample *s = st->samples;
    sb_printf(b, "%-24s %-10s %-14s %-14s %-9s %-9s %-10s %-12s %s\n", "mu", "residual",
              "neg/zero/pos", "predicted", "expl.zero", "d*minev", "verdict", "predicted",
              "perturb");
    for (int i = 0; i < st->n_samples; i++) {
        const scm_split_point *q = &s[i].pt;
        char mu[64] = "", a[32], c[32];
        int k = 0;
        for (int j = 0; j < s[i].n && k < (int)sizeof mu - 12; j++)
            k += snprintf(mu + k, sizeof mu - (size_t)k, j ? ",%.4g" : "%.4g", s[i].mu[j]);
        snprintf(a, sizeof a, "%d/%d/%d", q->counts.n_neg, q->counts.n_zero, q->counts.n_pos);
        snprintf(c, sizeof c, "%ld/%ld/%ld", q->pred.n_neg, q->pred.n_zero, q->pred.n_pos);
        sb_printf(b, "%-24s %-10.2e %-14s %-14s %-9ld %-9.3g %-10s %-12s %s\n", mu, q->residual,
                  a, c, q->explained_zero, q->eval_min * (double)st->d,
                  scm_hverdict_str(q->verdict), scm_hverdict_str(q->pred_verdict),
                  s[i].perturbed ? scm_verdict_str(s[i].pverdict) : "-");
    }
}

char *scm_split_study_text(const scm_split_study *st)
{
    strbuf b = {NULL, 0, 0, 0};
    text_parent(&b, st);
    text_samples(&b, st);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
