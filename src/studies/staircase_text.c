/* staircase_text.c: the table `scm staircase` prints
 * (scm_stair_study_text, staircase.h), built as a string so that the
 * library does not print: the settings, one row per plateau of each run
 * with its match, each run's end, then the escape-time fits. */
#include <math.h>
#include <stdlib.h>

#include "core/strbuf.h"
#include "scm/staircase.h"

static void text_head(strbuf *b, const scm_stair_study_opts *o, const scm_stair_study *s)
{
    sb_printf(b, "scm staircase: K = %ld, M = %ld, %s, rule %s, T = diag(", o->K, o->M,
              o->act->name, o->rule->name);
    for (long m = 0; m < o->M; m++)
        sb_printf(b, "%s%g", m ? ", " : "", o->T_diag[m]);
    sb_printf(b, "), v* = (");
    for (long m = 0; m < o->M; m++)
        sb_printf(b, "%s%g", m ? ", " : "", o->vstar[m]);
    sb_printf(b, "), d = %ld, seed %ld; fixed points from %s\n", o->d, o->seed,
              s->polish ? "Newton polish of the plateaus" : "the enumerator");
}

static void text_rows(strbuf *b, const scm_stair_study *s)
{
    sb_printf(b, "%-10s %-8s %-9s %-16s %-16s %-10s %s\n", "alpha", "plateau", "tau_start",
              "tau_escape", "loss", "matched", "fixed point");
    for (int a = 0; a < s->n_rows; a++) {
        const scm_stair_study_row *r = &s->rows[a];
        for (int k = 0; k < r->np; k++) {
            int f = r->match[k];
            int last = r->pl[k].i_end == r->n_curve - 1;
            sb_printf(b, "%-10.3g %-8d %-9.4g %-16.6g %-16.10g %-10s %s\n", r->alpha, k,
                      r->pl[k].t_start, last ? NAN : r->pl[k].t_end, r->pl[k].eps,
                      f >= 0 ? "yes" : "no",
                      f >= 0 ? s->fp_name[f] : (last ? "(end of run)" : "-"));
        }
        sb_printf(b, "%-10.3g end: %s at tau = %.6g, loss %.4g\n", r->alpha,
                  scm_stop_reason_str(r->tr.stop), r->tr.t, r->tr.eps);
    }
    for (int i = 0; i < s->n_fits; i++) {
        const scm_stair_study_fit *t = &s->fits[i];
        sb_printf(b, "fixed point loss %.10g (%s): escape time = %.5g log(1/alpha) + %.5g "
                     "(slope +- %.2g, %d alphas); 1/lambda = %.5g\n",
                  s->fp_eps[t->fp], s->fp_name[t->fp], t->slope, t->intercept, t->se, t->n,
                  1.0 / t->lambda);
    }
}

char *scm_stair_study_text(const scm_stair_study_opts *o, const scm_stair_study *s)
{
    strbuf b = {NULL, 0, 0, 0};
    text_head(&b, o, s);
    text_rows(&b, s);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
