/* fptable_text.c: the table `scm fixed-points` prints, built as a string
 * (scm_fp_table_text) so that the library does not print: one line per
 * listed point by loss, with its warnings and continuation, and the
 * counts; with grow_from one line per (ansatz, k1) that has points. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/fptable_internal.h"

typedef struct {
    char *s;
    size_t n, cap;
    int failed;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_printf(strbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0) {
        b->failed = 1;
        return;
    }
    if (b->n + (size_t)len + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + (size_t)len + 1)
            nc *= 2;
        char *ns = realloc(b->s, nc);
        if (!ns) {
            b->failed = 1;
            return;
        }
        b->s = ns;
        b->cap = nc;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)len + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)len;
}

/* The line of listed solution s, and its warning and continuation. */
static void point_line(strbuf *b, const scm_fp_table *t, int s)
{
    const fpt_solution *so = &t->sol[s];
    const scm_fp_point *p = so->pt;
    sb_printf(b, "%-12s %4g %5g %5g %5g  %-18.12g %-9.2e %-9.2e %-9.2e %-9.2e ",
              scm_ansatz_name(t->ans[so->ansatz]), p->k1, so->st.n_anti, so->st.n_aligned,
              so->st.n_other, p->eps, p->res_block, p->res_full, p->res_polish, p->gram_min);
    if (t->stability)
        sb_printf(b, " %-10s", so->stab_done > 0 ? scm_verdict_str(so->stab.verdict)
                               : so->stab_done < 0 ? "error"
                                                   : "-");
    for (int c = 0; c < p->nsc; c++)
        sb_printf(b, " %s=%.6g", scm_ansatz_inst_scalar_name(so->in, c), p->x[c]);
    sb_printf(b, "\n");
    if (p->full && p->inv_dev > 1e-12)
        sb_printf(b, "  warning: the ansatz is not invariant under the flow here (defect %.3g)\n",
                  p->inv_dev);
    if (so->has_branch && so->br.ended_early)
        sb_printf(b, "  continuation: ends at M = %.6g: %s\n", so->br.M_last, so->br.why);
    else if (so->has_branch)
        sb_printf(b, "  continuation: reached M = %ld, loss there %.12g\n", t->continue_to,
                  so->br.eps[so->br.n - 1]);
}

static void table_text(strbuf *b, const scm_fp_table *t)
{
    sb_printf(b, "scm fixed-points: K = %ld, M = %ld, %s, T = I, v = v* = 1\n", t->K, t->M,
              t->act->name);
    sb_printf(b, "%-12s %4s %5s %5s %5s  %-18s %-9s %-9s %-9s %-9s  %s%s\n", "ansatz", "k1",
              "anti", "align", "other", "loss", "res_blk", "res_full", "res_pol", "gram_min",
              t->stability ? "verdict    " : "", "scalars");
    int shown = 0;
    for (int si = 0; si < t->nview; si++) {
        int s = t->order[si];
        if (t->sol[s].merged_into >= 0)
            continue;
        shown++;
        point_line(b, t, s);
    }
    sb_printf(b, "%d distinct fixed points (%d solutions before merging)\n", shown, t->nview);
    if (t->stability)
        sb_printf(b, "verdict: scm_stab_analyse, %d trials per sigma 1e-4, 1e-3, 1e-2, d = K + M "
                     "(docs/stability.md)%s\n",
                  t->so.n_trials, t->K > FPT_STAB_MAX_K ? "; not run: K > 20" : "");
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
                sb_printf(b, "%-12s k1 %-6d %4d points, lowest positive loss %.12g\n", name,
                          sw->k1_min + i, set->n, best);
        }
        total += t->grow[g].points;
    }
    if (t->grow_done)
        sb_printf(b, "%d fixed points at K = %ld, M = %ld, block level (continuation in M from "
                     "M0 = %ld; not classified, not polished, no full-space check)\n",
                  total, t->K, t->M, t->grow_from);
}

char *scm_fp_table_text(const scm_fp_table *t)
{
    strbuf b = {0};
    sb_printf(&b, "%s", "");
    if (t->grow_from > 0)
        grow_text(&b, t);
    else
        table_text(&b, t);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
