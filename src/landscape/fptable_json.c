/* fptable_json.c: the result object of `scm fixed-points -o` built from a
 * table (scm_fp_table_json), and the check that it fits in memory before
 * it is built (scm_fp_table_json_fits).  Non-finite numbers go out as
 * null. */
#include <math.h>
#include <unistd.h>

#include "landscape/fptable_internal.h"
#include "scm/output.h"
#include "scm_version.h"

static cJSON *num_or_null(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

/* The "stability" object of --stability: the symmetric spectra of the
 * Hessian (symstab.h, d = K + M) and of the flow's Jacobian. */
static cJSON *stab_json(const fpt_solution *s)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "method", "symmetric_spectrum");
    cJSON_AddStringToObject(j, "class", scm_fp_class_str((scm_fp_class)s->cls));
    if (s->cls == SCM_FP_CLASS_REFUSED) {
        cJSON_AddStringToObject(j, "why", s->stab_err);
        return j;
    }
    cJSON_AddNumberToObject(j, "hessian_negative", (double)s->h_neg);
    cJSON_AddNumberToObject(j, "hessian_zero", (double)s->h_zero);
    cJSON_AddNumberToObject(j, "hessian_positive", (double)s->h_pos);
    cJSON_AddItemToObject(j, "hessian_smallest", num_or_null(s->hmin));
    if (s->jac_done) {
        cJSON_AddNumberToObject(j, "jacobian_unstable", (double)s->j_pos);
        cJSON_AddItemToObject(j, "jacobian_re_max", num_or_null(s->j_re_max));
    } else {
        cJSON_AddNullToObject(j, "jacobian_unstable");
        cJSON_AddNullToObject(j, "jacobian_re_max");
    }
    return j;
}

/* The "searches" array: what the starts of each (ansatz, k1) did. */
static cJSON *searches_json(const scm_fp_table *t)
{
    cJSON *runs = cJSON_CreateArray();
    for (int i = 0; runs && i < t->nsearch; i++) {
        const fpt_search *s = &t->search[i];
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "ansatz", scm_ansatz_name(t->ans[s->ansatz]));
        cJSON_AddNumberToObject(r, "instance", s->k1);
        cJSON_AddNumberToObject(r, "starts", s->starts);
        cJSON_AddNumberToObject(r, "converged", s->converged);
        cJSON_AddNumberToObject(r, "no_progress_singular", s->noprog);
        cJSON_AddNumberToObject(r, "max_iterations", s->maxiter);
        cJSON_AddNumberToObject(r, "left_domain", s->domain);
        cJSON_AddNumberToObject(r, "rejected_not_psd", s->notpsd);
        cJSON_AddNumberToObject(r, "distinct", s->distinct);
        cJSON_AddNumberToObject(r, "neighbour_seeds", s->seeds);
        cJSON_AddNumberToObject(r, "continuation_seeds", s->cseeds);
        if (t->chain_from > 0)
            cJSON_AddNumberToObject(r, "chain_links", s->chain_links);
        cJSON_AddNumberToObject(r, "found_nothing_new", s->nothing_new);
        cJSON_AddNumberToObject(r, "deflated_solves", s->deflated);
        cJSON_AddNumberToObject(r, "found_by_deflation", s->deflated_new);
        cJSON_AddItemToArray(runs, r);
    }
    return runs;
}

/* Q and R of solution s into j, or null (block level, or --states). */
static void add_state(cJSON *j, const scm_fp_table *t, int s)
{
    const scm_fp_point *p = t->sol[s].pt;
    if (p->Q && fpt_state_shown(t, s)) {
        cJSON_AddItemToObject(j, "Q", scm_output_matrix(p->Q, (int)t->K, (int)t->K));
        cJSON_AddItemToObject(j, "R", scm_output_matrix(p->R, (int)t->K, (int)t->M));
    } else {
        cJSON_AddNullToObject(j, "Q");
        cJSON_AddNullToObject(j, "R");
    }
}

/* The "families" array: per family its lowest-loss minimum (loss null
 * when it has none) and the counts; "index" is the entry of
 * "fixed_points". */
static cJSON *families_json(const scm_fp_table *t)
{
    cJSON *arr = cJSON_CreateArray();
    for (int f = 0; arr && f < t->nfam; f++) {
        const fpt_family *F = &t->fam[f];
        const fpt_solution *b = F->best >= 0 ? &t->sol[F->best] : NULL;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "k1", F->k1);
        if (t->K > t->M)
            cJSON_AddStringToObject(j, "extra", F->pattern);
        cJSON_AddNumberToObject(j, "points", F->n_points);
        cJSON_AddNumberToObject(j, "minima", F->n_minima);
        cJSON_AddNumberToObject(j, "saddles", F->n_saddles);
        cJSON_AddNumberToObject(j, "refused", F->n_refused);
        cJSON_AddItemToObject(j, "loss", b ? num_or_null(b->pt->eps) : cJSON_CreateNull());
        cJSON_AddItemToObject(j, "hessian_min", b ? num_or_null(b->hmin) : cJSON_CreateNull());
        if (b) {
            cJSON_AddNumberToObject(j, "index", F->best_row);
            cJSON_AddStringToObject(j, "ansatz", scm_ansatz_name(t->ans[b->ansatz]));
            cJSON_AddNumberToObject(j, "instance", b->pt->k1);
            add_state(j, t, F->best);
        } else {
            cJSON_AddNullToObject(j, "index");
        }
        cJSON_AddItemToArray(arr, j);
    }
    return arr;
}

/* The entry of listed solution s. */
static cJSON *point_json(const scm_fp_table *t, int s)
{
    const fpt_solution *so = &t->sol[s];
    const scm_fp_point *p = so->pt;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "ansatz", scm_ansatz_name(t->ans[so->ansatz]));
    if (so->family >= 0)
        cJSON_AddNumberToObject(j, "k1", so->family);
    else
        cJSON_AddNullToObject(j, "k1");
    cJSON_AddNumberToObject(j, "instance", p->k1);
    cJSON_AddBoolToObject(j, "specialised", so->specialised);
    if (so->specialised && t->K > t->M)
        cJSON_AddStringToObject(j, "extra", so->pattern);
    cJSON_AddStringToObject(j, "class", scm_fp_class_str((scm_fp_class)so->cls));
    cJSON_AddItemToObject(j, "hessian_min", num_or_null(so->hmin));
    cJSON_AddBoolToObject(j, "residual_ok", so->res_ok);
    cJSON *st = cJSON_AddObjectToObject(j, "structure");
    cJSON_AddNumberToObject(st, "anti", so->st.n_anti);
    cJSON_AddNumberToObject(st, "aligned", so->st.n_aligned);
    cJSON_AddNumberToObject(st, "other", so->st.n_other);
    cJSON_AddItemToObject(j, "loss", num_or_null(p->eps));
    cJSON_AddItemToObject(j, "residual_block", num_or_null(p->res_block));
    cJSON_AddItemToObject(j, "residual_full", num_or_null(p->res_full));
    cJSON_AddItemToObject(j, "invariance_defect", num_or_null(p->inv_dev));
    cJSON_AddItemToObject(j, "block_vs_full", num_or_null(p->block_vs_full));
    cJSON_AddBoolToObject(j, "polished", p->polished);
    cJSON_AddItemToObject(j, "residual_polished", num_or_null(p->res_polish));
    cJSON_AddItemToObject(j, "loss_polished", num_or_null(p->eps_polish));
    cJSON_AddItemToObject(j, "polish_shift", num_or_null(p->polish_shift));
    cJSON_AddItemToObject(j, "gram_min_eigenvalue", num_or_null(p->gram_min));
    cJSON_AddItemToObject(j, "jacobian_sv_min", num_or_null(p->jac_smin));
    cJSON_AddItemToObject(j, "jacobian_sv_max", num_or_null(p->jac_smax));
    cJSON_AddNumberToObject(j, "hits", p->hits);
    int dups = 0;
    for (int u = 0; u < t->nsol; u++)
        dups += t->sol[u].merged_into == s;
    cJSON_AddNumberToObject(j, "also_found_in_other_ansatze", dups);
    cJSON *sc = cJSON_AddObjectToObject(j, "scalars");
    for (int c = 0; c < p->nsc; c++)
        cJSON_AddNumberToObject(sc, scm_ansatz_inst_scalar_name(so->in, c), p->x[c]);
    add_state(j, t, s);
    if (t->stability)
        cJSON_AddItemToObject(j, "stability", stab_json(so));
    if (so->has_branch) {
        const scm_fp_branch *b = &so->br;
        cJSON *c = cJSON_AddObjectToObject(j, "continuation");
        cJSON_AddItemToObject(c, "M", scm_output_vector(b->M, b->n));
        cJSON_AddItemToObject(c, "loss", scm_output_vector(b->eps, b->n));
        cJSON_AddItemToObject(c, "residual", scm_output_vector(b->res, b->n));
        cJSON_AddBoolToObject(c, "ended_early", b->ended_early);
        cJSON_AddNumberToObject(c, "M_last", b->M_last);
        if (b->ended_early)
            cJSON_AddStringToObject(c, "why", b->why);
    }
    return j;
}

/* The object of the block-level continuation in M (grow_from). */
static cJSON *grow_json(const scm_fp_table *t)
{
    long M = t->M;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "fixed-points");
    cJSON_AddStringToObject(root, "status", "ok");
    cJSON_AddStringToObject(root, "level", "block");
    cJSON_AddNumberToObject(root, "K", (double)t->K);
    cJSON_AddNumberToObject(root, "M", (double)M);
    cJSON_AddStringToObject(root, "activation", t->act->name);
    cJSON_AddStringToObject(root, "teacher", "T = I, v = v* = 1");
    cJSON_AddNumberToObject(root, "grow_from", (double)t->grow_from);
    cJSON_AddNumberToObject(root, "probes", (double)(t->probes < 0 ? M / 100 + 1 : t->probes));
    cJSON_AddNumberToObject(root, "fixed_k1", (double)t->fixed_k1);
    cJSON *srch = cJSON_AddArrayToObject(root, "searches");
    cJSON *arr = cJSON_AddArrayToObject(root, "fixed_points");
    for (int g = 0; g < t->ngrow; g++) {
        const fpt_grow *gr = &t->grow[g];
        const scm_fp_sweep *sw = &gr->sw;
        const char *name = scm_ansatz_name(t->ans[gr->ansatz]);
        for (int i = 0; i < sw->n; i++)
            for (int p = 0; p < sw->set[i].n; p++) {
                const scm_fp_point *pt = &sw->set[i].pt[p];
                cJSON *j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "ansatz", name);
                cJSON_AddNumberToObject(j, "instance", sw->k1_min + i);
                cJSON_AddItemToObject(j, "loss", num_or_null(pt->eps));
                cJSON_AddItemToObject(j, "residual_block", num_or_null(pt->res_block));
                cJSON_AddItemToObject(j, "gram_min_eigenvalue", num_or_null(pt->gram_min));
                cJSON *sc = cJSON_AddObjectToObject(j, "scalars");
                for (int c = 0; c < pt->nsc; c++)
                    cJSON_AddNumberToObject(sc, scm_ansatz_inst_scalar_name(sw->inst[i], c),
                                            pt->x[c]);
                cJSON_AddItemToArray(arr, j);
            }
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "ansatz", name);
        cJSON_AddNumberToObject(r, "instance_min", sw->k1_min);
        cJSON_AddNumberToObject(r, "instance_max", sw->k1_max);
        cJSON_AddNumberToObject(r, "points", gr->points);
        cJSON_AddNumberToObject(r, "base_solutions", gr->gs.base);
        cJSON_AddNumberToObject(r, "paths_reached", gr->gs.reached);
        cJSON_AddNumberToObject(r, "anchors", gr->gs.anchors);
        cJSON_AddNumberToObject(r, "probes", gr->probes);
        cJSON_AddNumberToObject(r, "found_by_probes", gr->gs.probed);
        cJSON_AddItemToArray(srch, r);
    }
    return root;
}

cJSON *scm_fp_table_json(const scm_fp_table *t)
{
    if (t->grow_from > 0)
        return grow_json(t);
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "fixed-points");
    cJSON_AddStringToObject(root, "status", "ok");
    cJSON_AddNumberToObject(root, "K", (double)t->K);
    cJSON_AddNumberToObject(root, "M", (double)t->M);
    cJSON_AddStringToObject(root, "activation", t->act->name);
    cJSON_AddStringToObject(root, "teacher", "T = I, v = v* = 1");
    if (t->chain_from > 0)
        cJSON_AddNumberToObject(root, "chain_from", (double)t->chain_from);
    cJSON_AddStringToObject(root, "states", t->states == SCM_FP_STATES_ALL      ? "all"
                                            : t->states == SCM_FP_STATES_MINIMA ? "minima"
                                                                                : "none");
    cJSON_AddNumberToObject(root, "max_residual", t->max_residual);
    cJSON_AddNumberToObject(root, "points_above_residual", t->n_above);
    if (t->k1 >= 0)
        cJSON_AddNumberToObject(root, "k1", (double)t->k1);
    /* scm_sweep_families_parse (sweep.c) reads "fixed_points" before
     * "families", so `scm sweep --families` classifies runs against every
     * listed point, not the families' minima alone */
    cJSON_AddItemToObject(root, "families", families_json(t));
    cJSON_AddItemToObject(root, "searches", searches_json(t));
    cJSON *arr = cJSON_AddArrayToObject(root, "fixed_points");
    for (int si = 0; si < t->nview; si++) {
        int s = t->order[si];
        if (t->sol[s].merged_into < 0)
            cJSON_AddItemToArray(arr, point_json(t, s));
    }
    return root;
}

scm_status scm_fp_table_json_fits(const scm_fp_table *t, const char *path, scm_error *err)
{
    if (t->grow_from > 0)
        return SCM_OK;
    double numbers = 0.0;
    int n_full = 0;
    for (int s = 0; s < t->nview; s++)
        if (t->sol[s].merged_into < 0 && t->sol[s].pt->Q && fpt_state_shown(t, s)) {
            numbers += (double)t->K * (double)t->K + (double)t->K * (double)t->M;
            n_full++;
        }
    double need = 300.0 * numbers, have = -1.0;
    long pages = sysconf(_SC_AVPHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0)
        have = (double)pages * (double)psize;
    if (have > 0.0 && need > 0.8 * have)
        return scm_error_set(err, SCM_ENOMEM,
                             "%s not written: it would hold Q and R of %d points at K = %ld, "
                             "M = %ld (%.3g numbers, about %.1f GB in memory while it is "
                             "written), more than the %.1f GB free here; use --states "
                             "minima or none, --k1 N for one family, or the block-level continuation in M (scm_fp_sweep_grow, "
                             "docs/fixed-points.md)",
                             path, n_full, t->K, t->M, numbers, need / 1e9, have / 1e9);
    return SCM_OK;
}
