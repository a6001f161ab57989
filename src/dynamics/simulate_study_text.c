/* simulate_study_text.c: the summary `scm simulate` prints (simulate_text.h),
 * built as a string so that the library does not print: the model, the
 * simulation's set-up, per seed the final losses of the network and the ODE,
 * their mean difference with its standard error, and the times. */
#include <math.h>
#include <stdlib.h>

#include "core/strbuf.h"
#include "scm/simulate_text.h"

char *scm_simulate_study_text(const scm_simulate_study *st, const scm_simulate_result *res)
{
    strbuf sb = {NULL, 0, 0, 0};
    strbuf *b = &sb;
    const scm_config *c = st->config;
    const scm_simulate_study_opts *p = &st->opts;
    const int S = p->seeds;
    const scm_simulate_seed *runs = res->runs;
    sb_printf(b, "model      K = %d, M = %d, %s, rule %s\n", c->K, c->M, c->act->name,
              c->rule->name);
    sb_printf(b, "simulate   %s, d = %ld, eta = %g, %d seed%s from %lu, t_max = %g\n",
              p->sim.mode == SCM_SIM_BATCH ? "full-batch GD" : "online SGD", p->sim.d, p->sim.eta,
              S, S > 1 ? "s" : "", runs[0].init_seed, p->t_max);
    if (p->sim.mode == SCM_SIM_BATCH)
        sb_printf(b, "batch      n = %ld samples\n", p->sim.n);
    for (int s = 0; s < S; s++) {
        const scm_simulate_seed *r = runs + s;
        if (r->n > 0)
            sb_printf(b, "seed %-5lu eps sim %.6g  ode %.6g  at t = %.4g%s%s\n", r->init_seed,
                      r->eps_sim[r->n - 1], r->eps_ode[r->n - 1], r->t[r->n - 1],
                      r->error[0] ? "  FAILED: " : "", r->error);
    }
    const long last = runs[0].n - 1;
    if (last >= 0 && res->stats[last].seeds) {
        const scm_simulate_stat *f = res->stats + last;
        sb_printf(b, "final      eps_sim - eps_ode = %.3g", f->eps_diff_mean);
        if (isfinite(f->eps_diff_se))
            sb_printf(b, " +- %.2g (s.e.)", f->eps_diff_se);
        sb_printf(b, ", rms max|dQ, dR, dv| = %.3g\n", f->state_dev_rms);
    }
    sb_printf(b, "time       simulation %.2f s, ODE %.3f s\n", res->secs_sim, res->secs_ode);
    if (sb.failed) {
        free(sb.s);
        return NULL;
    }
    return sb.s;
}
