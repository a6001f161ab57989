/* fptable_text.c: the table `scm fixed-points` prints, built as a string
 * (scm_fp_table_text) so that the library does not print: one line per
 * family first (fptable_fam.c), then with all one line per listed point
 * by loss, with its warnings and continuation, and the counts; with
 * grow_from one line per (ansatz, instance) that has points. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/fptable_internal.h"
#include "core/strbuf.h"

/* The line of listed solution s, and its warning and continuation. */
static void point_line(strbuf *b, const scm_fp_table *t, int s)
{
    const fpt_solution *so = &t->sol[s];
    const scm_fp_point *p = so->pt;
    char k1[16];
    snprintf(k1, sizeof k1, so->family >= 0 ? "%d" : "-", so->family);
    sb_printf(b, "%-12s %4g %4s %5g %5g  %-18.12g %-9.2e %-9.2e %-9.2e %-9.2e %-8s",
              scm_ansatz_name(t->ans[so->ansatz]), p->k1, k1, so->st.n_aligned, so->st.n_other,
              p->eps, p->res_block, p->res_full, p->res_polish, p->gram_min,
              scm_fp_class_str((scm_fp_class)so->cls));
    for (int c = 0; c < p->nsc; c++)
        sb_printf(b, " %s=%.6g", scm_ansatz_inst_scalar_name(so->in, c), p->x[c]);
    sb_printf(b, "\n");
    if (!so->res_ok)
        sb_printf(b, "  residual above %g: not in the families table\n", t->max_residual);
    if (p->full && p->inv_dev > 1e-12)
        sb_printf(b, "  warning: the ansatz is not invariant under the flow here (defect %.3g)\n",
                  p->inv_dev);
    if (so->has_branch && so->br.ended_early)
        sb_printf(b, "  continuation: ends at M = %.6g: %s\n", so->br.M_last, so->br.why);
    else if (so->has_branch)
        sb_printf(b, "  continuation: reached M = %ld, loss there %.12g\n", t->continue_to,
                  so->br.eps[so->br.n - 1]);
}

/* The families table: one line per family, its lowest-loss minimum. */
static void families_text(strbuf *b, const scm_fp_table *t)
{
    int extra = t->K > t->M;
    sb_printf(b, "families: k1 anti-aligned students%s; strict minima by the symmetric Hessian "
                 "spectrum (d = K + M)\n",
              extra ? ", pattern of the extra students" : "");
    sb_printf(b, "%4s %-*s %-18s %-10s %6s %7s  %s\n", "k1", extra ? 24 : 0, extra ? "extra" : "",
              "lowest minimum", "hess_min", "minima", "saddles", "point");
    for (int f = 0; f < t->nfam; f++) {
        const fpt_family *F = &t->fam[f];
        const fpt_solution *m = F->best >= 0 ? &t->sol[F->best] : NULL;
        sb_printf(b, "%4d %-*s ", F->k1, extra ? 24 : 0, extra ? F->pattern : "");
        if (m)
            sb_printf(b, "%-18.12g %-10.3e ", m->pt->eps, m->hmin);
        else
            sb_printf(b, "%-18s %-10s ", "none", "-");
        sb_printf(b, "%6d %7d", F->n_minima, F->n_saddles);
        if (F->n_refused)
            sb_printf(b, " (%d refused)", F->n_refused);
        if (m)
            sb_printf(b, "  [%d] %s instance %g", F->best_row, scm_ansatz_name(t->ans[m->ansatz]),
                      m->pt->k1);
        sb_printf(b, "\n");
    }
    if (t->nfam == 0)
        sb_printf(b, "  (no specialised point)\n");
}

static void table_text(strbuf *b, const scm_fp_table *t, int all)
{
    sb_printf(b, "scm fixed-points: K = %ld, M = %ld, %s, T = I, v = v* = 1", t->K, t->M,
              t->act->name);
    if (t->k1 >= 0)
        sb_printf(b, ", family k1 = %ld", t->k1);
    sb_printf(b, "\n");
    families_text(b, t);
    if (all) {
        sb_printf(b, "%-12s %4s %4s %5s %5s  %-18s %-9s %-9s %-9s %-9s %-8s %s\n", "ansatz",
                  "inst", "k1", "align", "other", "loss", "res_blk", "res_full", "res_pol",
                  "gram_min", "class", "scalars");
    }
    int shown = 0, spec = 0;
    for (int si = 0; si < t->nview; si++) {
        int s = t->order[si];
        if (t->sol[s].merged_into >= 0)
            continue;
        shown++;
        spec += t->sol[s].specialised;
        if (all)
            point_line(b, t, s);
    }
    sb_printf(b, "%d distinct fixed points (%d solutions before merging)\n", shown, t->nview);
    sb_printf(b, "%d specialised in %d %s; %d with a residual above %g%s\n", spec, t->nfam,
              t->nfam == 1 ? "family" : "families", t->n_above, t->max_residual,
              all ? "" : "; every point: --all, or \"fixed_points\" in the JSON");
}

static void grow_text(strbuf *b, const scm_fp_table *t)
{
    int total = 0;
    for (int g = 0; g < t->ngrow; g++) {
        const scm_fp_sweep *sw = &t->grow[g].sw;
        const char *name = scm_ansatz_name(t->ans[t->grow[g].ansatz]);
        for (int i = 0; i < sw->n; i++) {
            const scm_fp_set *set = &sw->set[i];
            double best = INFINITY;
            for (int p = 0; p < set->n; p++)
                if (set->pt[p].eps > 1e-9 && set->pt[p].eps < best)
                    best = set->pt[p].eps;
            if (set->n)
                sb_printf(b, "%-12s instance %-6d %4d points, lowest positive loss %.12g\n", name,
                          sw->k1_min + i, set->n, best);
        }
        total += t->grow[g].points;
    }
    if (t->grow_done)
        sb_printf(b, "%d fixed points at K = %ld, M = %ld, block level (continuation in M from "
                     "M0 = %ld; not classified, not polished, no full-space check)\n",
                  total, t->K, t->M, t->grow_from);
}

static char *text_of(const scm_fp_table *t, int all)
{
    strbuf b = {0};
    sb_printf(&b, "%s", "");
    if (t->grow_from > 0)
        grow_text(&b, t);
    else
        table_text(&b, t, all);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

char *scm_fp_table_text(const scm_fp_table *t)
{
    return text_of(t, 0);
}

char *scm_fp_table_text_all(const scm_fp_table *t)
{
    return text_of(t, 1);
}
