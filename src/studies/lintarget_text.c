/* lintarget_text.c: the tables `scm lintarget` prints (lintarget_text.h),
 * built as a string so that the library does not print: one row per
 * initialisation alpha with its phase times, rate and drift, then the
 * saddle manifold's rows. */
#include <stdlib.h>

#include "core/strbuf.h"
#include "scm/lintarget_text.h"

static void text_runs(strbuf *b, const scm_lintarget_study *s)
{
    sb_printf(b, "%-8s %-8s %-9s %-9s %-9s %-9s %-8s %-9s %s\n", "alpha", "log1/a", "t_align",
              "t_grow0", "t_grow1", "t_conv", "rate", "b_drift", "stop");
    for (int i = 0; i < s->n_rows; i++) {
        const scm_lintarget_study_row *w = &s->rows[i];
        sb_printf(b, "%-8.1e %-8.4g %-9.5g %-9.5g %-9.5g %-9.5g %-8.4g %-9.2e %s\n", w->alpha,
                  w->log_inv_alpha, w->ph.t_align, w->ph.t_grow_start, w->ph.t_grow_end,
                  w->ph.t_conv, w->ph.rate, w->ph.imbalance_drift, scm_stop_reason_str(w->stop));
    }
}

static void text_saddle(strbuf *b, const scm_lintarget_study *s)
{
    sb_printf(b,
              "\nsaddle manifold v1 w1 = (c+1) a, v2 w2 = -c a (d = 3, beta = 0.8, 1.3):\n"
              "%-8s %-12s %-9s %-5s %-5s %-5s %-12s %-7s %s\n",
              "c", "eps", "grad", "neg", "zero", "pos", "change(s)", "ratio", "verdict");
    for (int i = 0; i < s->n_saddle; i++) {
        const scm_lintarget_saddle_row *w = &s->saddle[i];
        const scm_lintarget_saddle_report *a = &w->at_s;
        sb_printf(b, "%-8.4g %-12.10g %-9.2e %-5d %-5d %-5d %-12.4e %-7.3g %s\n", w->c, a->eps,
                  a->grad_max, a->n_neg, a->n_zero, a->n_pos, a->descent_min, w->ratio,
                  w->verdict);
    }
}

char *scm_lintarget_study_text(const scm_lintarget_study *s, int saddle)
{
    strbuf b = {NULL, 0, 0, 0};
    text_runs(&b, s);
    if (saddle)
        text_saddle(&b, s);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
