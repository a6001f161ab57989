/* fptable_enum.c: the enumeration of scm_fp_table_run over every ansatz
 * that applies at (K, M) and each of its k1 instances: the k1 sweeps
 * (fpsweep.h; with chain_from the chain in M) of all ansätze run
 * concurrently, one thread per ansatz, and are then taken in ansatz order
 * as if run one after another; an instance outside a sweep (a single k1,
 * or --k1) is enumerated on its own with its --seed-from seeds.  Every
 * solution's point goes into one set, its instance into the table's list
 * of instances, and what its starts did into a "searches" record. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/fptable_internal.h"

/* One ansatz's k1 sweep, run on its own thread: the ansätze are
 * independent, so while one waits in its sequential parts (the deflated
 * solves) another's parallel parts use the processors. */
typedef struct {
    const scm_ansatz *a;
    int K, M, passes, nmine;
    const scm_activation *act;
    const scm_fp_opts *o;
    scm_fp_seed *mine;
    scm_fp_sweep sw;
    int *tried;
    int chain_from, chain_links; /* chain_from 0: no chain in M */
    scm_status st;
    scm_error err;
    int started;
} sweep_task;

static void *sweep_task_run(void *arg)
{
    sweep_task *t = arg;
    if (t->chain_from > 0)
        t->st = scm_fp_sweep_k1_chain(t->a, t->K - t->M, t->chain_from, t->M, t->act, t->o,
                                      t->passes, t->mine, t->nmine, &t->sw, &t->tried,
                                      &t->chain_links, &t->err);
    else
        t->st = scm_fp_sweep_k1_seeded(t->a, t->K, t->M, t->act, t->o, t->passes, t->mine,
                                       t->nmine, &t->sw, &t->tried, &t->err);
    return NULL;
}

/* Start the sweeps of the ansätze that have several k1 (without --k1) and
 * wait for them all. */
static void sweeps_run(const scm_fp_table *t, long sweep_passes, const scm_fp_table_seeds *seeds,
                       const scm_fp_opts *o, sweep_task *task)
{
    pthread_t task_th[SCM_FP_TABLE_MAX_FILES];
    for (int a = 0; a < t->nans; a++) {
        int lo, hi;
        if (fpt_instances_restricted(t) || sweep_passes < 2 ||
            scm_ansatz_applies(t->ans[a], (int)t->K, (int)t->M, &lo, &hi) != 1 || hi <= lo)
            continue;
        task[a].a = t->ans[a];
        task[a].K = (int)t->K;
        task[a].M = (int)t->M;
        task[a].passes = (int)sweep_passes;
        task[a].act = t->act;
        task[a].o = o;
        task[a].chain_from = (int)t->chain_from;
        if (!(task[a].mine = fpt_seeds_of(seeds, scm_ansatz_name(t->ans[a]), &task[a].nmine))) {
            task[a].st = scm_error_set(&task[a].err, SCM_ENOMEM, "out of memory");
            continue;
        }
        task[a].started = 1;
        if (pthread_create(&task_th[a], NULL, sweep_task_run, &task[a]) != 0) {
            task[a].started = 0;
            sweep_task_run(&task[a]);
        }
    }
    for (int a = 0; a < t->nans; a++)
        if (task[a].started)
            pthread_join(task_th[a], NULL);
}

/* The instance and solutions of one (ansatz, k1). */
typedef struct {
    scm_ansatz_inst *in;
    scm_fp_set one;
    int seeds, nothing_new, cseeds;
} instance_run;

/* Instance kk of ansatz a on its own: its --seed-from seeds (mine), the
 * random starts, deflation. */
static scm_status instance_enumerate(const scm_fp_table *t, int a, int kk,
                                     const scm_fp_seed *mine, int nmine, const scm_fp_opts *o,
                                     instance_run *r, scm_error *err)
{
    scm_error e;
    r->in = scm_ansatz_instantiate(t->ans[a], (double)t->K, (double)t->M, kk, &e);
    if (!r->in)
        return scm_error_set(err, SCM_EINVAL, "%s", e.msg);
    scm_fp_set_init(&r->one);
    double *ext = NULL;
    if (scm_fp_seed_starts(mine, nmine, r->in, kk, &ext, &r->cseeds)) {
        scm_ansatz_inst_free(r->in);
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    }
    scm_status est = scm_fp_enumerate(t->ans[a], r->in, t->act, o, ext, r->cseeds, &r->one, &e);
    free(ext);
    if (est) {
        scm_fp_set_free(&r->one);
        scm_ansatz_inst_free(r->in);
        return scm_error_set(err, fpt_failed(est), "%s", e.msg);
    }
    r->nothing_new = r->one.n_starts - r->one.n;
    return SCM_OK;
}

/* The "searches" record of instance kk of ansatz a. */
static scm_status search_add(scm_fp_table *t, int a, int kk, const instance_run *r,
                             int chain_links)
{
    if (t->nsearch == t->search_cap) {
        int nc = t->search_cap ? 2 * t->search_cap : 64;
        fpt_search *ns = realloc(t->search, sizeof *ns * (size_t)nc);
        if (!ns)
            return SCM_ENOMEM;
        t->search = ns;
        t->search_cap = nc;
    }
    const scm_fp_set *one = &r->one;
    t->search[t->nsearch++] = (fpt_search){
        .ansatz = a, .k1 = kk, .starts = one->n_starts, .converged = one->n_converged,
        .noprog = one->n_noprog, .maxiter = one->n_maxiter, .domain = one->n_domain,
        .notpsd = one->n_notpsd, .distinct = one->n, .seeds = r->seeds, .cseeds = r->cseeds,
        .chain_links = chain_links, .nothing_new = r->nothing_new,
        .deflated = one->n_deflated, .deflated_new = one->n_deflated_new};
    return SCM_OK;
}

/* Move the points of r into the common set and add a solution for each,
 * all sharing r's instance, which the table then owns (or which is freed
 * when it has no solution).  On failure r's instance and set are freed. */
static scm_status solutions_add(scm_fp_table *t, int a, instance_run *r)
{
    int first = t->set.n;
    scm_fp_set *set = &t->set;
    for (int p = 0; p < r->one.n; p++) {
        if (set->n == set->cap) {
            int nc = set->cap ? 2 * set->cap : 64;
            scm_fp_point *np = realloc(set->pt, sizeof *np * (size_t)nc);
            if (!np) {
                /* the points already moved belong to the set now */
                memmove(r->one.pt, r->one.pt + p, sizeof *np * (size_t)(r->one.n - p));
                r->one.n -= p;
                scm_fp_set_free(&r->one);
                r->one.pt = NULL;
                scm_ansatz_inst_free(r->in);
                return SCM_ENOMEM;
            }
            set->pt = np;
            set->cap = nc;
        }
        set->pt[set->n++] = r->one.pt[p];
    }
    free(r->one.pt);
    r->one.pt = NULL;
    if (set->n == first) {
        scm_ansatz_inst_free(r->in);
        return SCM_OK;
    }
    if (t->ninst == t->inst_cap) {
        int nc = t->inst_cap ? 2 * t->inst_cap : 64;
        scm_ansatz_inst **ni = realloc(t->insts, sizeof *ni * (size_t)nc);
        if (!ni) {
            scm_ansatz_inst_free(r->in);
            return SCM_ENOMEM;
        }
        t->insts = ni;
        t->inst_cap = nc;
    }
    t->insts[t->ninst++] = r->in;
    for (int p = first; p < set->n; p++) {
        if (t->nsol == t->cap) {
            int nc = t->cap ? 2 * t->cap : 64;
            fpt_solution *ns = realloc(t->sol, sizeof *ns * (size_t)nc);
            if (!ns)
                return SCM_ENOMEM;
            t->sol = ns;
            t->cap = nc;
        }
        memset(&t->sol[t->nsol], 0, sizeof t->sol[t->nsol]);
        t->sol[t->nsol].ansatz = a;
        t->sol[t->nsol].in = r->in;
        t->sol[t->nsol].merged_into = -1;
        t->nsol++;
    }
    return SCM_OK;
}

/* Every k1 instance of ansatz a (instances lo .. hi): from its sweep sw
 * (NULL: each enumerated on its own). */
static scm_status ansatz_collect(scm_fp_table *t, int a, int lo, int hi, scm_fp_sweep *sw,
                                 const int *tried, int chain_links, const scm_fp_seed *mine,
                                 int nmine, const scm_fp_opts *o, int *applied, scm_error *err)
{
    for (int kk = lo; kk <= hi; kk++) {
        /* --k1 N above SCM_FP_TABLE_K1_ALL_MAX_K: the instances N and its
         * mirrors K - N, M - N (those of `scm stability --k1`); fptable.c
         * keeps the points of family N */
        if (fpt_instances_restricted(t) && kk != t->k1 && kk != t->K - t->k1 &&
            kk != t->M - t->k1)
            continue;
        instance_run r = {0};
        if (sw) {
            /* take the instance and its solutions out of the sweep */
            r.in = sw->inst[kk - lo];
            sw->inst[kk - lo] = NULL;
            r.one = sw->set[kk - lo];
            scm_fp_set_init(&sw->set[kk - lo]);
            r.seeds = sw->seeds[kk - lo];
            r.nothing_new = sw->nothing_new[kk - lo];
            r.cseeds = tried ? tried[kk - lo] : 0;
        } else {
            scm_status st = instance_enumerate(t, a, kk, mine, nmine, o, &r, err);
            if (st)
                return st;
        }
        (*applied)++;
        if (search_add(t, a, kk, &r, chain_links) || solutions_add(t, a, &r)) {
            if (r.one.pt) {
                scm_fp_set_free(&r.one);
                scm_ansatz_inst_free(r.in);
            }
            return scm_error_set(err, SCM_ENOMEM, "out of memory");
        }
    }
    return SCM_OK;
}

/* Ansatz a after the sweeps: its instances into the table.  *skip is set
 * when it does not apply (and was not named). */
static scm_status ansatz_take(scm_fp_table *t, int a, int named, const scm_fp_table_seeds *seeds,
                              long sweep_passes, sweep_task *task, const scm_fp_opts *o,
                              int *applied, scm_error *err)
{
    const char *name = scm_ansatz_name(t->ans[a]);
    int lo, hi, ap = scm_ansatz_applies(t->ans[a], (int)t->K, (int)t->M, &lo, &hi);
    if (ap < 0)
        return scm_error_set(err, SCM_EINVAL, "ansatz '%s': cannot evaluate its conditions",
                             name);
    if (ap == 0) {
        if (named)
            return scm_error_set(err, SCM_EINVAL,
                                 "ansatz '%s' does not apply at K = %ld, M = %ld (its "
                                 "\"require\" or \"require_positive\" conditions fail, "
                                 "or its k1 range is empty)",
                                 name, t->K, t->M);
        return SCM_OK;
    }
    /* every k1: the k1 sweep, each instance seeded with its neighbours'
     * solutions (fpsweep.h) */
    int use_sweep = !fpt_instances_restricted(t) && sweep_passes >= 2 && hi > lo;
    int nmine = 0;
    scm_fp_seed *mine = fpt_seeds_of(seeds, name, &nmine);
    if (!mine)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (use_sweep && task[a].st) {
        free(mine);
        return scm_error_set(err, fpt_failed(task[a].st), "%s", task[a].err.msg);
    }
    scm_fp_sweep sw;
    memset(&sw, 0, sizeof sw);
    int *tried = NULL;
    if (use_sweep) {
        /* take the sweep out of its task */
        sw = task[a].sw;
        tried = task[a].tried;
        memset(&task[a].sw, 0, sizeof task[a].sw);
        task[a].tried = NULL;
    }
    scm_status st = ansatz_collect(t, a, lo, hi, use_sweep ? &sw : NULL, tried,
                                   use_sweep ? task[a].chain_links : 0, mine, nmine, o, applied,
                                   err);
    scm_fp_sweep_free(&sw);
    free(tried);
    free(mine);
    return st;
}

scm_status fpt_enumerate(scm_fp_table *t, int named, long sweep_passes,
                         const scm_fp_table_seeds *seeds, const scm_fp_opts *o, scm_error *err)
{
    sweep_task *task = calloc((size_t)(t->nans ? t->nans : 1), sizeof *task);
    if (!task)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    sweeps_run(t, sweep_passes, seeds, o, task);
    int applied = 0;
    scm_status st = SCM_OK;
    for (int a = 0; a < t->nans && !st; a++)
        st = ansatz_take(t, a, named, seeds, sweep_passes, task, o, &applied, err);
    if (!st && applied == 0)
        st = scm_error_set(err, SCM_EINVAL, "no ansatz applies at K = %ld, M = %ld%s", t->K,
                           t->M, t->k1 >= 0 ? " with this k1" : "");
    for (int a = 0; a < t->nans; a++) {
        scm_fp_sweep_free(&task[a].sw);
        free(task[a].tried);
        free(task[a].mine);
    }
    free(task);
    return st;
}
