/* fptable.c: scm_fp_table_run, the families table of `scm fixed-points`
 * (fptable.h): the options, the ansätze, and what follows the enumeration
 * of fptable_enum.c: the classification (and with --k1 N the choice of the
 * points of family N), the merging of a solution found in several ansätze
 * into its description with the fewest scalars (and of copies equal to
 * round-off), the full-space polish of one representative per family, the
 * continuation in M; then fptable_fam.c's stability and families table;
 * and the table's accessors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "landscape/fptable_internal.h"

void scm_fp_table_opts_default(scm_fp_table_opts *o)
{
    memset(o, 0, sizeof *o);
    o->K = -1;
    o->M = -1;
    o->act = NULL;
    o->k1 = -1;
    o->starts = 200;
    o->seed = 1;
    o->sweep_passes = SCM_FP_TABLE_SWEEP_PASSES;
    o->deflate = SCM_FP_TABLE_DEFLATE;
    o->polish_max_K = 24;
    o->chain_from = 0;
    o->continue_to = -1;
    o->grow_from = 0;
    o->probes = -1;
    o->fixed_k1 = 1;
    o->max_residual = 1e-12;
    o->threads = 0;
    o->states = SCM_FP_STATES_AUTO;
}

scm_status scm_fp_table_opts_named(scm_fp_table_opts *o, const char *actname, scm_error *err)
{
    if (o->K < 0 || o->M < 0)
        return scm_error_set(err, SCM_EINVAL, "--K and --M are required");
    if (!(o->act = scm_activation_find(actname)))
        return scm_error_set(err, SCM_EINVAL, "unknown activation '%s' (relu, erf, linear)",
                             actname);
    return SCM_OK;
}

static scm_status ansatze_check(const scm_fp_table_opts *o, scm_error *err);

scm_status scm_fp_table_opts_check(const scm_fp_table_opts *o, scm_error *err)
{
    long K = o->K, M = o->M;
    if (K < 1 || M < 1 || K > 100000 || M > 100000)
        return scm_error_set(err, SCM_EINVAL, "K and M must be in 1 .. 100000, got K = %ld, "
                             "M = %ld", K, M);
    if (o->starts < 0 || o->seed < 0 || o->sweep_passes < 0 || o->deflate < 0 ||
        o->polish_max_K < 0 || o->threads < 0 || o->k1 < -1 || o->chain_from < 0 ||
        o->grow_from < 0 || o->probes < -1 || o->fixed_k1 < 1 ||
        o->n_ansatz < 0 ||
        o->n_ansatz >
            SCM_FP_TABLE_MAX_FILES - (o->with_builtin ? scm_ansatz_builtin_count() : 0) ||
        (o->n_ansatz > 0 && !o->ansatz_files) || !(o->max_residual > 0.0) ||
        o->states < SCM_FP_STATES_AUTO || o->states > SCM_FP_STATES_ALL)
        return scm_error_set(err, SCM_EINVAL, "an option is out of its range");
    if (o->chain_from > 0 && o->chain_from >= M)
        return scm_error_set(err, SCM_EINVAL, "--chain-from must be below M = %ld, got %ld", M,
                             o->chain_from);
    if (o->chain_from > 0 && (o->k1 >= 0 || o->sweep_passes < 2))
        return scm_error_set(err, SCM_EINVAL, "--chain-from needs the k1 sweep (no --k1, "
                                              "--sweep-passes >= 2)");
    if (o->grow_from > 0 &&
        (o->grow_from > M || o->k1 >= 0 || o->chain_from > 0 || o->continue_to >= 0 || o->all ||
         o->stability || scm_fp_table_seeds_count(o->seeds) > 0))
        return scm_error_set(err, SCM_EINVAL,
                             "--grow-from M0 needs M0 <= M = %ld and goes without --k1, "
                             "--chain-from, --continue-to, --unmerged, --stability, --seed-from", M);
    if (o->grow_from == 0 && (o->probes >= 0 || o->fixed_k1 != 1))
        return scm_error_set(err, SCM_EINVAL, "--probes and --fixed-k1 go with --grow-from");
    if (o->continue_to >= 0 && o->continue_to <= M)
        return scm_error_set(err, SCM_EINVAL, "--continue-to must exceed M = %ld", M);
    /* extra files are read here, so that a comparison refuses them before
     * it writes anything */
    return o->with_builtin && o->n_ansatz > 0 ? ansatze_check(o, err) : SCM_OK;
}

static scm_status builtins_load(scm_fp_table *t, scm_error *err)
{
    scm_error e;
    for (int i = 0; i < scm_ansatz_builtin_count() && t->nans < SCM_FP_TABLE_MAX_FILES; i++) {
        const char *file, *text = scm_ansatz_builtin_text(i, &file);
        t->ans[t->nans] = scm_ansatz_parse(text, strlen(text), file, &e);
        if (!t->ans[t->nans])
            return scm_error_set(err, fpt_failed(e.code), "built-in %s", e.msg);
        t->nans++;
    }
    return SCM_OK;
}

/* The ansatz files, or the built-in ansätze, or both (o->with_builtin: the
 * built-in ones first, so that their points come out as without the
 * files).  With both, two ansätze of one name would make a point's
 * (ansatz, instance) label ambiguous: refused. */
static scm_status ansatze_load(scm_fp_table *t, const scm_fp_table_opts *o, scm_error *err)
{
    scm_error e;
    scm_status st;
    const int builtin = o->n_ansatz == 0 || o->with_builtin;
    if (builtin && (st = builtins_load(t, err)))
        return st;
    const int nb = t->nans;
    for (int i = 0; i < o->n_ansatz && t->nans < SCM_FP_TABLE_MAX_FILES; i++) {
        t->ans[t->nans] = scm_ansatz_load(o->ansatz_files[i], &e);
        if (!t->ans[t->nans])
            return scm_error_set(err, SCM_EINVAL, "%s", e.msg);
        t->nans++;
    }
    for (int a = nb; a < t->nans && o->with_builtin; a++)
        for (int b = 0; b < a; b++)
            if (strcmp(scm_ansatz_name(t->ans[a]), scm_ansatz_name(t->ans[b])) == 0)
                return scm_error_set(err, SCM_EINVAL,
                                     "ansatz file '%s': the name '%s' is %s; rename it (its "
                                     "\"name\")",
                                     o->ansatz_files[a - nb], scm_ansatz_name(t->ans[a]),
                                     b < nb ? "a built-in ansatz's" : "another file's too");
    return SCM_OK;
}

/* ansatze_load's checks, on a table of nothing else. */
static scm_status ansatze_check(const scm_fp_table_opts *o, scm_error *err)
{
    scm_fp_table *t = calloc(1, sizeof *t);
    if (!t)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    scm_status st = ansatze_load(t, o, err);
    for (int a = 0; a < t->nans; a++)
        scm_ansatz_free(t->ans[a]);
    free(t);
    return st;
}

/* Fewest scalars first (the most symmetric description represents a
 * solution found in several ansätze), then by loss. */
static int cmp_sol(const void *pa, const void *pb)
{
    const fpt_solution *a = pa, *b = pb;
    if (a->pt->nsc != b->pt->nsc)
        return a->pt->nsc - b->pt->nsc;
    if (a->pt->eps != b->pt->eps)
        return a->pt->eps < b->pt->eps ? -1 : 1;
    return 0;
}

/* The same point up to round-off: the loss to 1e-9 relative (above 1e-3)
 * plus the round-off of a loss summed over (K + M)^2 kernel terms,
 * 1e-16 (K + M)^2 absolute (1.6e-11 at K = M = 200, where the global
 * minimum came out at -9.09e-13 and +9.09e-13 and the k1 = 1 plateau at
 * 0.00141606259876 and 0.00141606260149), and the invariants tr Q and
 * ||R||_F^2 to 1e-9 relative. */
static int same_orbit(const fpt_solution *a, const fpt_solution *b, double KM)
{
    double tol = 1e-9;
    return fabs(a->pt->eps - b->pt->eps) <=
               tol * fmax(1e-3, fabs(a->pt->eps)) + 1e-16 * KM * KM &&
           fabs(a->st.trQ - b->st.trQ) <= tol * fmax(1.0, fabs(a->st.trQ)) &&
           fabs(a->st.normR2 - b->st.normR2) <= tol * fmax(1.0, fabs(a->st.normR2));
}

static void defer(scm_fp_table *t, const char *msg)
{
    if (t->deferred == SCM_OK)
        scm_error_set(&t->deferred_err, SCM_ENOMEM, "%s", msg);
    t->deferred = SCM_ENOMEM;
}

/* The loss of a PSD state is >= 0; a negative value is round-off (the
 * listed points passed the PSD check of fixedpoint.h): reported as 0. */
static double clamp0(double eps)
{
    return eps < 0.0 ? 0.0 : eps;
}

/* Classify each solution (its family: the anti-aligned count), keep with
 * --k1 N only family N, clamp the losses at 0. */
static void classify_all(scm_fp_table *t)
{
    int keep = 0;
    for (int s = 0; s < t->nsol; s++) {
        fpt_solution so = t->sol[s];
        so.pt = &t->set.pt[s];
        scm_fp_classify(so.in, so.pt->x, &so.st);
        double a = so.st.n_anti;
        so.family = isfinite(a) && a == floor(a) ? (int)a : -1;
        so.specialised = so.st.n_other == (double)(t->K - t->M) && so.family >= 0;
        so.hmin = NAN;
        so.j_re_max = NAN;
        so.pt->eps = clamp0(so.pt->eps);
        if (t->k1 >= 0 && so.family != t->k1)
            continue;
        t->sol[keep++] = so;
    }
    t->nsol = keep;
}

/* Classify, merge the copies of a point found in several ansätze, polish
 * one representative per family, and order by loss. */
static void merge_and_polish(scm_fp_table *t, const scm_fp_opts *o)
{
    classify_all(t);
    int nsol = t->nsol;
    fpt_solution *sol = t->sol;
    if (nsol > 0)
        qsort(sol, (size_t)nsol, sizeof *sol, cmp_sol);
    double KM = (double)(t->K + t->M);
    if (!t->unmerged)
        for (int s = 0; s < nsol; s++)
            for (int u = 0; u < s && sol[s].merged_into < 0; u++)
                if (sol[u].merged_into < 0 && same_orbit(&sol[s], &sol[u], KM))
                    sol[s].merged_into = u;
    /* the polish: one representative per family, in parallel */
    scm_fp_point **reps = malloc(sizeof *reps * ((size_t)nsol + 1));
    int nreps = 0;
    for (int s = 0; reps && s < nsol; s++)
        if (sol[s].merged_into < 0)
            reps[nreps++] = sol[s].pt;
    scm_error e;
    if (!reps || scm_fp_points_polish(reps, nreps, t->act, o, &e) == SCM_ENOMEM)
        defer(t, reps ? e.msg : "out of memory");
    free(reps);
    for (int s = 0; s < nsol; s++) {
        sol[s].pt->eps_full = clamp0(sol[s].pt->eps_full);
        sol[s].pt->eps_polish = clamp0(sol[s].pt->eps_polish);
    }
    /* display order: by loss (insertion sort; the lists are short) */
    t->order = malloc(sizeof *t->order * ((size_t)nsol + 1));
    if (!t->order) {
        defer(t, "out of memory");
        return;
    }
    t->nview = nsol;
    for (int s = 0; s < nsol; s++) {
        int j = s;
        while (j > 0 && sol[t->order[j - 1]].pt->eps > sol[s].pt->eps) {
            t->order[j] = t->order[j - 1];
            j--;
        }
        t->order[j] = s;
    }
}

/* Each listed point followed in M up to continue_to. */
static void continue_all(scm_fp_table *t, const scm_fp_opts *o)
{
    for (int s = 0; s < t->nview; s++) {
        fpt_solution *so = &t->sol[s];
        if (so->merged_into >= 0)
            continue;
        scm_error ce;
        if (scm_fp_continue(t->ans[so->ansatz], (double)(t->K - t->M), so->pt->k1, (double)t->M,
                            so->pt->x, (double)t->continue_to, 0.0, t->act, o, &so->br,
                            &ce) == SCM_OK)
            so->has_branch = 1;
    }
}

/* The listed points in the order of the table, and how many of them have
 * a residual not below max_residual. */
static scm_status rows_fill(scm_fp_table *t)
{
    t->rows = malloc(sizeof *t->rows * ((size_t)t->nview + 1));
    if (!t->rows)
        return SCM_ENOMEM;
    for (int si = 0; si < t->nview; si++) {
        int s = t->order[si];
        fpt_solution *so = &t->sol[s];
        if (so->merged_into >= 0)
            continue;
        const scm_fp_point *p = so->pt;
        double r = p->polished ? p->res_polish : p->full ? p->res_full : p->res_block;
        so->res_ok = r < t->max_residual;
        if (!so->res_ok)
            t->n_above++;
        int dups = 0;
        for (int u = 0; u < t->nsol; u++)
            dups += t->sol[u].merged_into == s;
        t->rows[t->nrows++] = (scm_fp_table_row){scm_ansatz_name(t->ans[so->ansatz]),
                                                 so->family, (int)p->k1, p, so->in, so->st, r,
                                                 dups};
    }
    return SCM_OK;
}

/* The block-level points of the continuation in M, by ansatz and k1. */
static scm_status rows_fill_grow(scm_fp_table *t)
{
    int n = 0;
    for (int g = 0; g < t->ngrow; g++)
        n += t->grow[g].points;
    t->rows = malloc(sizeof *t->rows * ((size_t)n + 1));
    if (!t->rows)
        return SCM_ENOMEM;
    for (int g = 0; g < t->ngrow; g++) {
        const scm_fp_sweep *sw = &t->grow[g].sw;
        for (int i = 0; i < sw->n; i++)
            for (int p = 0; p < sw->set[i].n; p++) {
                const scm_fp_point *pt = &sw->set[i].pt[p];
                scm_fp_structure st = {NAN, NAN, NAN, NAN, NAN};
                t->rows[t->nrows++] = (scm_fp_table_row){
                    scm_ansatz_name(t->ans[t->grow[g].ansatz]), -1, sw->k1_min + i, pt,
                    sw->inst[i], st, pt->res_block, 0};
            }
    }
    return SCM_OK;
}

static scm_status table_new(const scm_fp_table_opts *o, scm_fp_table **out, scm_error *err)
{
    scm_fp_table *t = calloc(1, sizeof *t);
    if (!t)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    t->K = o->K;
    t->M = o->M;
    t->k1 = o->k1;
    t->chain_from = o->chain_from;
    t->continue_to = o->continue_to;
    t->grow_from = o->grow_from;
    t->probes = o->probes;
    t->fixed_k1 = o->fixed_k1;
    t->act = o->act ? o->act : scm_activation_find("relu");
    t->unmerged = o->all;
    t->stability = o->stability;
    t->states = o->states != SCM_FP_STATES_AUTO  ? o->states
                : o->K <= SCM_FP_STATES_ALL_MAX_K ? SCM_FP_STATES_ALL
                                                  : SCM_FP_STATES_MINIMA;
    t->progress = o->progress;
    t->progress_ctx = o->progress_ctx;
    t->max_residual = o->max_residual;
    scm_fp_set_init(&t->set);
    *out = t;
    return SCM_OK;
}

scm_status scm_fp_table_run(const scm_fp_table_opts *o, scm_fp_table **out, scm_error *err)
{
    *out = NULL;
    scm_status st = scm_fp_table_opts_check(o, err);
    scm_fp_table *t = NULL;
    if (st || (st = table_new(o, &t, err)))
        return st;
    if ((st = ansatze_load(t, o, err))) {
        scm_fp_table_free(t);
        return st;
    }
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    fo.n_random = (int)o->starts;
    fo.seed = (unsigned long)o->seed;
    fo.polish_max_K = (int)o->polish_max_K;
    fo.deflate = (int)o->deflate;
    fo.threads = o->threads > 0 ? o->threads : scm_threads_online();
    /* polish after merging: one representative per family of permuted copies */
    fo.polish_defer = 1;
    if (t->grow_from > 0) {
        fo.full_max_K = 0; /* block level */
        st = fpt_grow_run(t, o->n_ansatz > 0 && !o->with_builtin, &fo, err);
        if (rows_fill_grow(t) && !st)
            st = scm_error_set(err, SCM_ENOMEM, "out of memory");
        if (st && t->ngrow == 0) {
            scm_fp_table_free(t);
            t = NULL;
        }
        *out = t;
        return st;
    }
    st = fpt_enumerate(t, o->n_ansatz > 0 && !o->with_builtin, o->sweep_passes, o->seeds, &fo,
                       err);
    if (st) {
        scm_fp_table_free(t);
        return st;
    }
    merge_and_polish(t, &fo);
    if (t->continue_to > 0)
        continue_all(t, &fo);
    if (rows_fill(t)) {
        scm_fp_table_free(t);
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    }
    if ((st = fpt_families_build(t, err))) {
        scm_fp_table_free(t);
        return st;
    }
    *out = t;
    return SCM_OK;
}

scm_status scm_fp_table_status(const scm_fp_table *t, scm_error *err)
{
    if (t->deferred && err)
        *err = t->deferred_err;
    return t->deferred;
}

int scm_fp_table_residual_ok(const scm_fp_table *t)
{
    return t->n_above == 0;
}

int scm_fp_table_n_above(const scm_fp_table *t)
{
    return t->n_above;
}

int scm_fp_table_count(const scm_fp_table *t)
{
    return t ? t->nrows : 0;
}

int scm_fp_table_n_solutions(const scm_fp_table *t)
{
    return t->grow_from > 0 ? t->nrows : t->nview;
}

scm_status scm_fp_table_row_get(const scm_fp_table *t, int i, scm_fp_table_row *row)
{
    if (i < 0 || i >= t->nrows)
        return SCM_EINVAL;
    *row = t->rows[i];
    return SCM_OK;
}

void scm_fp_table_free(scm_fp_table *t)
{
    if (!t)
        return;
    for (int s = 0; s < t->nsol; s++)
        scm_fp_branch_free(&t->sol[s].br);
    free(t->sol);
    for (int i = 0; i < t->ninst; i++)
        scm_ansatz_inst_free(t->insts[i]);
    free(t->insts);
    scm_fp_set_free(&t->set);
    free(t->order);
    free(t->search);
    for (int g = 0; g < t->ngrow; g++)
        scm_fp_sweep_free(&t->grow[g].sw);
    free(t->grow);
    free(t->rows);
    free(t->fam);
    for (int i = 0; i < t->nans; i++)
        scm_ansatz_free(t->ans[i]);
    free(t);
}
