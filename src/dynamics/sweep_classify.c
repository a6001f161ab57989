/* sweep_classify.c: where a sweep's run ended: the options of the
 * classification and the class of an end state (the listed family it
 * matches, or its anti-aligned count); see sweep.h and docs/sweeps.md. */
#include "scm/sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/flow.h"

/* ---- classification ---------------------------------------------------- */

void scm_sweep_opts_default(scm_sweep_opts *o)
{
    o->match_rtol = 1e-8;
    o->match_atol = 1e-10;
    o->dead_q = 1e-3;
    o->loose_grad_stop = 0.0;
    o->certify = 0;
    o->certify_grad = 1e-3;
    o->certify_global = 1e-3;
    o->certify_rmax = 0.05;
}

scm_status scm_sweep_opts_check(const scm_sweep_opts *o, scm_error *err)
{
    if (!(o->match_rtol >= 0.0 && o->match_rtol < 1.0))
        return scm_error_set(err, SCM_EINVAL, "match_rtol must be in [0, 1), got %g",
                             o->match_rtol);
    if (!(o->match_atol >= 0.0 && isfinite(o->match_atol)))
        return scm_error_set(err, SCM_EINVAL, "match_atol must be >= 0, got %g", o->match_atol);
    if (!(o->dead_q >= 0.0 && isfinite(o->dead_q)))
        return scm_error_set(err, SCM_EINVAL, "dead_q must be >= 0, got %g", o->dead_q);
    if (!(o->loose_grad_stop >= 0.0 && isfinite(o->loose_grad_stop)))
        return scm_error_set(err, SCM_EINVAL, "loose_grad_stop must be >= 0, got %g",
                             o->loose_grad_stop);
    if (o->certify < 0 || o->certify > 2)
        return scm_error_set(err, SCM_EINVAL, "certify must be 0, 1 or 2, got %d", o->certify);
    if (!(o->certify_grad > 0.0 && isfinite(o->certify_grad)))
        return scm_error_set(err, SCM_EINVAL, "certify_grad must be > 0, got %g", o->certify_grad);
    if (!(o->certify_global >= 0.0 && o->certify_global < 1.0))
        return scm_error_set(err, SCM_EINVAL, "certify_global must be in [0, 1), got %g",
                             o->certify_global);
    if (!(o->certify_rmax > 0.0 && o->certify_rmax <= 10.0))
        return scm_error_set(err, SCM_EINVAL, "certify_rmax must be in (0, 10], got %g",
                             o->certify_rmax);
    return SCM_OK;
}

void scm_sweep_classify(const scm_model *m, const double *Q, const double *R, double eps,
                        const scm_sweep_families *fams, const scm_sweep_opts *o,
                        scm_sweep_record *rec)
{
    const int K = m->K, M = m->M;
    rec->n_anti = rec->n_dead = rec->n_shared = 0;
    int live = 0, distinct = 0;
    /* M is small (a model size): a byte per teacher, on the stack in chunks
     * would be overkill; count distinct picks by a quadratic scan. */
    int picks_cap = K;
    int picks_buf[64];
    int *picks = picks_cap <= 64 ? picks_buf : malloc(sizeof(int) * (size_t)picks_cap);
    for (int k = 0; k < K; k++) {
        if (!(Q[k * K + k] >= o->dead_q)) {
            rec->n_dead++;
            continue;
        }
        int best = 0;
        for (int n = 1; n < M; n++)
            if (fabs(R[k * M + n]) > fabs(R[k * M + best]))
                best = n;
        int seen = 0;
        if (picks)
            for (int j = 0; j < live; j++)
                seen |= picks[j] == best;
        if (picks)
            picks[live] = best;
        live++;
        distinct += !seen;
    }
    rec->n_shared = picks ? live - distinct : 0;
    if (picks != picks_buf)
        free(picks);
    /* the anti-aligned count of every tool (model.h); -1 without memory */
    if (scm_model_count_anti(m, Q, R, o->dead_q, &rec->n_anti) != SCM_OK)
        rec->n_anti = -1;

    /* A reported loss of exactly 0 is one traj.h zeroed (the state's own
     * was negative): say so, and how far the state is from realisable. */
    rec->eps_zeroed = rec->eps == 0.0;
    rec->psd_gap = 0.0;
    if (rec->eps_zeroed) {
        double *Qp = malloc(sizeof(double) * (size_t)m->K * (size_t)m->K);
        if (!Qp || scm_flow_realisable(m, Q, R, Qp, &rec->psd_gap) != SCM_OK)
            rec->psd_gap = NAN;
        free(Qp);
    }
    rec->matched = 0;
    rec->family[0] = '\0';
    rec->k1 = -1;
    if (!rec->converged) {
        snprintf(rec->cls, sizeof rec->cls, "not_converged");
        return;
    }
    int best = -1;
    double best_d = 0.0;
    int best_struct = 0;
    for (int i = 0; fams && i < fams->n; i++) {
        const scm_sweep_family *f = &fams->f[i];
        const int zero = fabs(f->eps) <= o->match_atol; /* a global minimum */
        /* below eps_stop a run is at a global minimum up to integration
         * error, which may exceed match_atol: any zero-loss family is it */
        double d = rec->stop == SCM_STOP_EPS && zero ? 0.0 : fabs(eps - f->eps);
        if (!(d <= o->match_rtol * fabs(f->eps) + o->match_atol))
            continue;
        int s = f->k1 == rec->n_anti && rec->n_dead == 0 && rec->n_shared == 0;
        if (best < 0 || s > best_struct || (s == best_struct && d < best_d)) {
            best = i;
            best_d = d;
            best_struct = s;
        }
    }
    if (best >= 0 && fabs(fams->f[best].eps) <= o->match_atol) {
        /* one class for the global minimum, whichever ansatz lists it */
        rec->matched = 1;
        snprintf(rec->family, sizeof rec->family, "global_minimum");
        rec->k1 = 0;
    } else if (best >= 0) {
        rec->matched = 1;
        snprintf(rec->family, sizeof rec->family, "%s", fams->f[best].name);
        rec->k1 = fams->f[best].k1;
    } else if (rec->stop == SCM_STOP_EPS) {
        /* eps below eps_stop: the global minimum whether or not listed. */
        rec->matched = 1;
        snprintf(rec->family, sizeof rec->family, "global_minimum");
        rec->k1 = 0;
    }
    if (rec->matched && best >= 0 && strcmp(rec->family, "global_minimum") != 0) {
        /* Several families of one name and k1 (distinct losses): number
         * them by loss, #0 the lowest, so that the classes stay apart. */
        const scm_sweep_family *b = &fams->f[best];
        int same = 0, below = 0;
        for (int i = 0; i < fams->n; i++) {
            const scm_sweep_family *f = &fams->f[i];
            if (strcmp(f->name, b->name) != 0 || f->k1 != b->k1)
                continue;
            int dup = 0;
            for (int j = 0; j < i && !dup; j++)
                dup = strcmp(fams->f[j].name, f->name) == 0 && fams->f[j].k1 == f->k1 &&
                      fabs(fams->f[j].eps - f->eps) <= o->match_rtol * fabs(f->eps) + o->match_atol;
            if (dup)
                continue;
            same++;
            below += f->eps < b->eps - (o->match_rtol * fabs(b->eps) + o->match_atol);
        }
        if (same > 1)
            snprintf(rec->cls, sizeof rec->cls, "%.60s/k1=%d#%d", rec->family, rec->k1, below);
        else
            snprintf(rec->cls, sizeof rec->cls, "%.60s/k1=%d", rec->family, rec->k1);
    } else if (rec->matched)
        snprintf(rec->cls, sizeof rec->cls, "%s/k1=%d", rec->family, rec->k1);
    else
        snprintf(rec->cls, sizeof rec->cls, "unmatched");
}

