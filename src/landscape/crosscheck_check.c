/* crosscheck_check.c: the whole cross-check of `scm crosscheck` as a
 * library object (crosscheck.h, scm_xc_check_*): the ansätze, the
 * enumeration at K and, on first need, at K_live < K, the runs of each
 * method on threads and their classification in index order, with the
 * counts, and all of it in one call with its notes (scm_xc_check_compute).
 * The summary and the result object are in crosscheck_report.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/parallel.h"
#include "landscape/crosscheck_internal.h"

void scm_xc_check_opts_default(scm_xc_check_opts *o)
{
    memset(o, 0, sizeof *o);
    o->K = o->M = -1;
    o->runs = 200;
    o->seed = 1;
    o->ode = o->gd = 1;
    o->starts = 200;
    o->fp_seed = 1;
    o->deflate = 2;
    o->sweep_passes = 8;
    scm_xc_opts_default(&o->run);
}

scm_status scm_xc_check_opts_named(scm_xc_check_opts *o, long K, long M, const char *actname,
                                   int method, scm_error *err)
{
    if (K < 0 || M < 0)
        return scm_error_set(err, SCM_EINVAL, "--K and --M are required");
    if (!(o->act = scm_activation_find(actname)))
        return scm_error_set(err, SCM_EINVAL, "unknown activation '%s' (relu, erf, linear)",
                             actname);
    o->K = (int)K;
    o->M = (int)M;
    o->ode = method != 1;
    o->gd = method != 0;
    return SCM_OK;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void scm_xc_check_free(scm_xc_check *c)
{
    if (!c)
        return;
    for (long j = 0; c->run && j < c->nrun; j++)
        scm_xc_run_free(&c->run[j]);
    free(c->run);
    free(c->um);
    free(c->counts);
    for (long k = 0; c->lists && k <= c->K; k++)
        scm_xc_list_free(&c->lists[k]);
    free(c->lists);
    free(c->done);
    for (int i = 0; i < c->n_ans; i++)
        scm_ansatz_free(c->ans[i]);
    free(c);
}

/* The ansätze: the files, or the built-in ones. */
static scm_status load_ansatze(scm_xc_check *c, const scm_xc_check_opts *o, scm_error *err)
{
    int na = o->n_ansatz;
    for (int i = 0; i < (na > 0 ? na : scm_ansatz_builtin_count()) && c->n_ans < SCM_XC_MAX_ANSATZ;
         i++) {
        if (na > 0)
            c->ans[c->n_ans] = scm_ansatz_load(o->ansatz_files[i], err);
        else {
            const char *file, *text = scm_ansatz_builtin_text(i, &file);
            c->ans[c->n_ans] = scm_ansatz_parse(text, strlen(text), file, err);
        }
        if (!c->ans[c->n_ans])
            return err ? err->code : SCM_EINVAL;
        c->n_ans++;
    }
    return SCM_OK;
}

scm_status scm_xc_check_new(const scm_xc_check_opts *o, scm_xc_check **out, scm_error *err)
{
    *out = NULL;
    if (o->K < 1 || o->M < 1 || o->runs < 1 || o->seed < 0 || o->first < 0 || o->starts < 0 ||
        o->fp_seed < 0 || o->deflate < 0 || o->sweep_passes < 0 || (!o->ode && !o->gd) ||
        o->threads < 0 || o->threads > 64 || o->n_ansatz < 0 ||
        o->n_ansatz > SCM_XC_MAX_ANSATZ || (o->n_ansatz > 0 && !o->ansatz_files))
        return scm_error_set(err, SCM_EINVAL, "crosscheck options out of range");
    scm_xc_check *c = calloc(1, sizeof *c);
    if (!c)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    c->K = o->K;
    c->M = o->M;
    c->act = o->act ? o->act : &scm_act_relu;
    c->runs = o->runs;
    c->seed = o->seed;
    c->first = o->first;
    c->starts = o->starts;
    c->fp_seed = o->fp_seed;
    c->deflate = o->deflate;
    c->sweep_passes = o->sweep_passes;
    c->threads = o->threads > 0 ? o->threads : scm_threads_online();
    c->meth_lo = o->ode ? SCM_XC_ODE : SCM_XC_GD;
    c->meth_hi = o->gd ? SCM_XC_GD : SCM_XC_ODE;
    c->xo = o->run;
    scm_fp_opts_default(&c->fo);
    c->fo.n_random = (int)o->starts;
    c->fo.threads = c->threads; /* the lists do not depend on it */
    c->fo.seed = (unsigned long)o->fp_seed;
    c->fo.polish_defer = 1; /* as scm fixed-points: polish the listed points */
    c->fo.deflate = (int)o->deflate;
    scm_status st = load_ansatze(c, o, err);
    if (st) {
        scm_xc_check_free(c);
        return st;
    }
    *out = c;
    return SCM_OK;
}

/* The list at K' <= K into *l, enumerated on first use. */
static scm_status get_list(scm_xc_check *c, int K, const scm_xc_list **l, scm_error *err)
{
    *l = NULL;
    if (!c->done[K]) {
        scm_status st = scm_xc_enumerate(K, c->M, c->ans, c->n_ans, c->act, &c->fo,
                                         (int)c->sweep_passes, &c->lists[K], err);
        if (st)
            return st;
        c->done[K] = 1;
    }
    *l = &c->lists[K];
    return SCM_OK;
}

scm_status scm_xc_check_enumerate(scm_xc_check *c, scm_error *err)
{
    int nmeth = c->meth_hi - c->meth_lo + 1;
    c->lists = calloc((size_t)c->K + 1, sizeof *c->lists);
    c->done = calloc((size_t)c->K + 1, sizeof *c->done);
    c->run = calloc((size_t)(c->runs * nmeth) + 1, sizeof *c->run);
    c->um = calloc((size_t)(c->runs * nmeth) + 1, sizeof *c->um);
    if (!c->lists || !c->done || !c->run || !c->um)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    double t0 = now();
    scm_error e;
    scm_error_clear(&e);
    scm_status st = get_list(c, c->K, &c->main_list, &e);
    if (st)
        return scm_error_set(err, st, "enumeration: %s", e.msg);
    c->t_enum = now() - t0;
    c->counts = calloc((size_t)c->main_list->n * 2 + 1, sizeof *c->counts);
    if (!c->counts)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    return SCM_OK;
}

const scm_xc_list *scm_xc_check_list(const scm_xc_check *c) { return c->main_list; }

double scm_xc_check_enum_seconds(const scm_xc_check *c) { return c->t_enum; }

/* Count an unmatched end point under its distinct loss. */
static void add_unmatched(scm_xc_check *c, const scm_xc_run *r, int me, long i)
{
    int u = -1;
    for (int k = 0; k < c->num && u < 0; k++)
        if (fabs(c->um[k].eps - r->eps) <=
            c->xo.match_rtol * fabs(c->um[k].eps) + c->xo.match_atol)
            u = k;
    if (u < 0) {
        u = c->num++;
        c->um[u].eps = r->eps;
        c->um[u].first_index[0] = c->um[u].first_index[1] = -1;
    }
    if (c->um[u].first_index[me] < 0)
        c->um[u].first_index[me] = i;
    c->um[u].count[me]++;
}

/* Classify run r (index i of method me) and count it. */
static scm_status classify(scm_xc_check *c, scm_xc_run *r, int me, long i, scm_error *err)
{
    scm_xc_tally *t = &c->tally[me];
    t->work += r->work;
    t->with_dead += r->n_dead > 0;
    t->with_small += r->n_small > 0;
    if (!r->converged) {
        t->not_converged++;
        return SCM_OK;
    }
    t->converged++;
    const scm_xc_list *l = NULL;
    if (r->K_live == c->K)
        l = c->main_list;
    else if (r->K_live > 0) {
        scm_error e;
        scm_error_clear(&e);
        scm_status st = get_list(c, r->K_live, &l, &e);
        if (st)
            return scm_error_set(err, st, "enumeration at K = %d: %s", r->K_live, e.msg);
    }
    if (l)
        scm_xc_match(r, l, &c->xo);
    if (r->global)
        t->global++;
    if (r->match >= 0 || r->global) {
        t->matched++;
        t->inv_differ += r->match >= 0 && !r->global && !r->inv_agree;
        t->matched_below_K += l != c->main_list;
        if (l == c->main_list && r->match >= 0)
            c->counts[r->match * 2 + me]++;
        return SCM_OK;
    }
    t->unmatched++;
    add_unmatched(c, r, me, i);
    return SCM_OK;
}

scm_status scm_xc_check_run(scm_xc_check *c, scm_xc_method m, scm_error *err)
{
    int me = m == SCM_XC_GD;
    if (!c->main_list || me < c->meth_lo || me > c->meth_hi || c->tally[me].runs)
        return scm_error_set(err, SCM_EINVAL, "crosscheck: method %s not due",
                             scm_xc_method_str(m));
    double tm = now();
    /* the runs in parallel (each a pure function of its index), then
     * classified in index order */
    long bad_run;
    scm_error e;
    scm_error_clear(&e);
    scm_status st = scm_xc_run_many(c->K, c->M, c->act, m, (uint64_t)c->seed, c->first,
                                    (int)c->runs, &c->xo, c->threads, &c->run[c->nrun],
                                    &bad_run, &e);
    long nrun0 = c->nrun;
    c->nrun += c->runs; /* filled either way: scm_xc_check_free frees them */
    c->tally[me].runs = c->runs;
    if (st)
        return scm_error_set(err, st, "run %ld (%s): %s", bad_run, scm_xc_method_str(m), e.msg);
    for (long i = c->first; i < c->first + c->runs && !st; i++)
        st = classify(c, &c->run[nrun0 + (i - c->first)], me, i, err);
    c->tally[me].seconds = now() - tm;
    return st;
}

const scm_xc_tally *scm_xc_check_tally(const scm_xc_check *c, scm_xc_method m)
{
    return &c->tally[m == SCM_XC_GD];
}

const scm_xc_run *scm_xc_check_runs(const scm_xc_check *c, long *n)
{
    *n = c->nrun;
    return c->run;
}

long scm_xc_check_unmatched(const scm_xc_check *c)
{
    return c->tally[0].unmatched + c->tally[1].unmatched;
}

scm_status scm_xc_check_compute(scm_xc_check *c, void (*note)(void *ctx, const char *line),
                                void *ctx, scm_error *err)
{
    char line[256];
    scm_status st = scm_xc_check_enumerate(c, err);
    if (st)
        return st;
    const scm_xc_list *l = scm_xc_check_list(c);
    snprintf(line, sizeof line, "K = %d, M = %d: %d fixed points enumerated (%d instances) in %.1f s",
             c->K, c->M, l->n, l->n_instances, scm_xc_check_enum_seconds(c));
    if (note)
        note(ctx, line);
    for (int me = c->meth_lo; me <= c->meth_hi; me++) {
        if ((st = scm_xc_check_run(c, (scm_xc_method)me, err)))
            return st;
        snprintf(line, sizeof line, "%s: %ld runs in %.1f s", scm_xc_method_str((scm_xc_method)me),
                 c->runs, scm_xc_check_tally(c, (scm_xc_method)me)->seconds);
        if (note)
            note(ctx, line);
    }
    return SCM_OK;
}
