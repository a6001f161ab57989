/* crosscheck_report.c: the summary `scm crosscheck` prints and the object
 * it writes (scm_xc_check_text, scm_xc_check_json in crosscheck.h), built
 * from a finished scm_xc_check so that the library does not print: the
 * counts per method, the matched fixed points, the distinct unmatched
 * losses with the first end point of each and its groups of students,
 * the runs that did not converge. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/crosscheck_internal.h"
#include "core/strbuf.h"
#include "scm/output.h"
#include "scm_version.h"

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static const char *kind_str(int k)
{
    switch (k) {
    case SCM_ALIGN_DEAD: return "dead";
    case SCM_ALIGN_UNPAIRED: return "unpaired";
    case SCM_ALIGN_NONE: return "none";
    case SCM_ALIGN_ALIGNED: return "aligned";
    default: return "anti";
    }
}

static const char *meth_name(int me) { return me ? "gd" : "ode"; }

/* ---- the summary ---------------------------------------------------------- */

static void groups_text(strbuf *b, const scm_xc_groups *g)
{
    for (int i = 0; i < g->n; i++) {
        const scm_xc_group *G = &g->g[i];
        sb_printf(b, "      %2d x %-8s Q_kk %-11.6g R_own %-11.6g R_other", G->size,
                  kind_str(G->kind), G->q, G->own);
        for (int k = 0; k < G->n_values; k++)
            sb_printf(b, " %.6g (x%d)", G->value[k], G->count[k]);
        if (G->more_values)
            sb_printf(b, " ... %d more values", G->more_values);
        sb_printf(b, "\n");
    }
}

/* Whether converged run r is unmatched with the distinct loss u. */
static int is_first_of(const scm_xc_check *c, const scm_xc_run *r, const scm_xc_umloss *u)
{
    return r->converged && r->match < 0 && !r->global &&
           r->index == u->first_index[r->method] &&
           !(fabs(u->eps - r->eps) > c->xo.match_rtol * fabs(u->eps) + c->xo.match_atol);
}

static void first_unmatched_text(strbuf *b, const scm_xc_check *c, const scm_xc_run *r)
{
    sb_printf(b, "  %s run %ld: loss %.12g, residual %.3g%s, K_live %d (dead %d), anti %d "
                 "aligned %d unpaired %d none %d\n",
              scm_xc_method_str(r->method), r->index, r->eps, r->res,
              r->polished ? (r->polish_ok ? " (polished)" : " (polish did not converge)") : "",
              r->K_live, r->n_dead, r->n_anti, r->n_aligned, r->n_unpaired, r->n_none);
    scm_xc_groups g;
    if (scm_xc_group_students(r->K_live, c->M, r->Q, r->R, c->xo.group_tol, &g) == SCM_OK) {
        sb_printf(b, "    groups of students with equal overlaps:\n");
        groups_text(b, &g);
        scm_xc_groups_free(&g);
    }
}

static void unmatched_text(strbuf *b, const scm_xc_check *c)
{
    sb_printf(b, "\nunmatched losses (distinct to the match tolerance):\n");
    sb_printf(b, "  %-18s %6s %6s  %s\n", "loss", "ode", "gd", "first run (ode, gd)");
    for (int u = 0; u < c->num; u++)
        sb_printf(b, "  %-18.12g %6d %6d  %ld, %ld\n", c->um[u].eps, c->um[u].count[0],
                  c->um[u].count[1], c->um[u].first_index[0], c->um[u].first_index[1]);
    sb_printf(b, "\nunmatched end points, the first of each loss:\n");
    for (int u = 0; u < c->num; u++)
        for (long j = 0; j < c->nrun; j++)
            if (is_first_of(c, &c->run[j], &c->um[u])) {
                first_unmatched_text(b, c, &c->run[j]);
                break;
            }
    sb_printf(b, "(every unmatched end point, with Q and R, is in the JSON file)\n");
}

static void points_text(strbuf *b, const scm_xc_check *c)
{
    const scm_xc_list *l = c->main_list;
    sb_printf(b, "\nmatched fixed points (K = %d):\n", c->K);
    sb_printf(b, "  %-18s %-10s %4s %5s %5s %5s %6s %6s\n", "loss", "ansatz", "k1", "anti",
              "align", "other", "ode", "gd");
    for (int p = 0; p < l->n; p++) {
        if (!c->counts[2 * p] && !c->counts[2 * p + 1])
            continue;
        const scm_xc_point *x = &l->pt[p];
        sb_printf(b, "  %-18.12g %-10s %4d %5g %5g %5g %6d %6d\n", x->eps, x->ansatz, x->k1,
                  x->n_anti, x->n_aligned, x->n_other, c->counts[2 * p], c->counts[2 * p + 1]);
    }
}

char *scm_xc_check_text(const scm_xc_check *c, int quiet)
{
    strbuf b = {0};
    const scm_xc_list *l = c->main_list;
    sb_printf(&b, "scm crosscheck: K = %d, M = %d, %s, T = I, v = v* = 1; runs %ld..%ld, seed "
                  "%ld\n",
              c->K, c->M, c->act->name, c->first, c->first + c->runs - 1, c->seed);
    sb_printf(&b, "enumeration: %d fixed points from %d (ansatz, k1) instances (starts %ld, "
                  "fp-seed %ld, deflate %ld, sweep passes %ld)\n",
              l->n, l->n_instances, c->starts, c->fp_seed, c->deflate, c->sweep_passes);
    for (int me = c->meth_lo; me <= c->meth_hi; me++) {
        const scm_xc_tally *t = &c->tally[me];
        sb_printf(&b, "%-4s %ld runs: converged %ld (global minimum %ld, matched %ld, unmatched "
                      "%ld; invariants differ %ld), not converged %ld; with dead students %ld "
                      "(matched at K_live < K %ld), with small students %ld\n",
                  meth_name(me), c->runs, t->converged, t->global, t->matched, t->unmatched,
                  t->inv_differ, t->not_converged, t->with_dead, t->matched_below_K,
                  t->with_small);
    }
    if (!quiet) {
        points_text(&b, c);
        if (c->num)
            unmatched_text(&b, c);
        if (c->tally[0].not_converged + c->tally[1].not_converged) {
            sb_printf(&b, "\nnot converged:\n");
            for (long j = 0; j < c->nrun; j++)
                if (!c->run[j].converged)
                    sb_printf(&b, "  %s run %ld: %s (loss %.12g)\n",
                              scm_xc_method_str(c->run[j].method), c->run[j].index,
                              c->run[j].why, c->run[j].eps);
        }
    }
    long total = scm_xc_check_unmatched(c);
    sb_printf(&b, "%s: %ld unmatched end point(s)\n", total ? "INCOMPLETE" : "complete", total);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* ---- the result object ------------------------------------------------------ */

static cJSON *groups_json(const scm_xc_groups *g)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < g->n; i++) {
        const scm_xc_group *G = &g->g[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "size", G->size);
        cJSON_AddStringToObject(j, "kind", kind_str(G->kind));
        cJSON_AddItemToObject(j, "Q_kk", num_or_null(G->q));
        cJSON_AddItemToObject(j, "R_own", num_or_null(G->own));
        cJSON *v = cJSON_AddArrayToObject(j, "R_other");
        for (int k = 0; k < G->n_values; k++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "value", G->value[k]);
            cJSON_AddNumberToObject(x, "count", G->count[k]);
            cJSON_AddItemToArray(v, x);
        }
        cJSON_AddNumberToObject(j, "more_values", G->more_values);
        cJSON_AddItemToArray(a, j);
    }
    return a;
}

static void add_enumeration(cJSON *root, const scm_xc_check *c)
{
    cJSON *en = cJSON_AddObjectToObject(root, "enumeration");
    cJSON_AddNumberToObject(en, "points", c->main_list->n);
    cJSON_AddNumberToObject(en, "instances", c->main_list->n_instances);
    cJSON_AddNumberToObject(en, "starts", (double)c->starts);
    cJSON_AddNumberToObject(en, "fp_seed", (double)c->fp_seed);
    cJSON_AddNumberToObject(en, "deflate", (double)c->deflate);
    cJSON_AddNumberToObject(en, "sweep_passes", (double)c->sweep_passes);
    cJSON_AddNumberToObject(en, "seconds", c->t_enum);
    cJSON *ansa = cJSON_AddArrayToObject(en, "ansatze");
    for (int i = 0; i < c->n_ans; i++)
        cJSON_AddItemToArray(ansa, cJSON_CreateString(scm_ansatz_name(c->ans[i])));
}

static void add_summary(cJSON *root, const scm_xc_check *c)
{
    cJSON *sm = cJSON_AddObjectToObject(root, "summary");
    for (int me = c->meth_lo; me <= c->meth_hi; me++) {
        const scm_xc_tally *t = &c->tally[me];
        cJSON *j = cJSON_AddObjectToObject(sm, meth_name(me));
        cJSON_AddNumberToObject(j, "runs", (double)c->runs);
        cJSON_AddNumberToObject(j, "converged", (double)t->converged);
        cJSON_AddNumberToObject(j, "global_minimum", (double)t->global);
        cJSON_AddNumberToObject(j, "matched", (double)t->matched);
        cJSON_AddNumberToObject(j, "unmatched", (double)t->unmatched);
        cJSON_AddNumberToObject(j, "invariants_differ", (double)t->inv_differ);
        cJSON_AddNumberToObject(j, "not_converged", (double)t->not_converged);
        cJSON_AddNumberToObject(j, "with_dead_students", (double)t->with_dead);
        cJSON_AddNumberToObject(j, "with_small_students", (double)t->with_small);
        cJSON_AddNumberToObject(j, "matched_below_K", (double)t->matched_below_K);
        cJSON_AddNumberToObject(j, "work_mean",
                                c->runs ? (double)t->work / (double)c->runs : 0.0);
        cJSON_AddNumberToObject(j, "seconds", t->seconds);
    }
}

static void add_families(cJSON *root, const scm_xc_check *c)
{
    const scm_xc_list *l = c->main_list;
    cJSON *fa = cJSON_AddArrayToObject(root, "matched_families");
    for (int p = 0; p < l->n; p++) {
        if (!c->counts[2 * p] && !c->counts[2 * p + 1])
            continue;
        const scm_xc_point *x = &l->pt[p];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "loss", x->eps);
        cJSON_AddStringToObject(j, "ansatz", x->ansatz);
        cJSON_AddNumberToObject(j, "k1", x->k1);
        cJSON_AddItemToObject(j, "anti", num_or_null(x->n_anti));
        cJSON_AddItemToObject(j, "aligned", num_or_null(x->n_aligned));
        cJSON_AddItemToObject(j, "other", num_or_null(x->n_other));
        cJSON_AddNumberToObject(j, "ode", c->counts[2 * p]);
        cJSON_AddNumberToObject(j, "gd", c->counts[2 * p + 1]);
        cJSON_AddItemToArray(fa, j);
    }
}

/* The record of an unmatched converged end point (after its common
 * fields). */
static void add_unmatched_fields(cJSON *x, const scm_xc_check *c, const scm_xc_run *r)
{
    cJSON_AddBoolToObject(x, "polished", r->polished);
    cJSON_AddBoolToObject(x, "polish_converged", r->polish_ok);
    cJSON_AddNumberToObject(x, "K_live", r->K_live);
    cJSON_AddNumberToObject(x, "dead", r->n_dead);
    cJSON_AddNumberToObject(x, "small", r->n_small);
    cJSON_AddNumberToObject(x, "anti", r->n_anti);
    cJSON_AddNumberToObject(x, "aligned", r->n_aligned);
    cJSON_AddNumberToObject(x, "unpaired", r->n_unpaired);
    cJSON_AddNumberToObject(x, "none", r->n_none);
    cJSON_AddNumberToObject(x, "trQ", r->trQ);
    cJSON_AddNumberToObject(x, "normR2", r->normR2);
    scm_xc_groups g;
    if (scm_xc_group_students(r->K_live, c->M, r->Q, r->R, c->xo.group_tol, &g) == SCM_OK) {
        cJSON_AddItemToObject(x, "groups", groups_json(&g));
        scm_xc_groups_free(&g);
    }
    cJSON_AddItemToObject(x, "Q", scm_output_matrix(r->Q, r->K_live, r->K_live));
    cJSON_AddItemToObject(x, "R", scm_output_matrix(r->R, r->K_live, c->M));
}

static void add_points(cJSON *root, const scm_xc_check *c)
{
    cJSON *ua = cJSON_AddArrayToObject(root, "unmatched_points");
    cJSON *na = cJSON_AddArrayToObject(root, "not_converged");
    for (long j = 0; j < c->nrun; j++) {
        const scm_xc_run *r = &c->run[j];
        if (r->converged && (r->match >= 0 || r->global))
            continue;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "method", scm_xc_method_str(r->method));
        cJSON_AddNumberToObject(x, "index", (double)r->index);
        cJSON_AddNumberToObject(x, "seed", (double)r->seed);
        cJSON_AddItemToObject(x, "loss", num_or_null(r->eps));
        cJSON_AddItemToObject(x, "residual", num_or_null(r->res));
        cJSON_AddNumberToObject(x, "work", (double)r->work);
        if (!r->converged) {
            cJSON_AddStringToObject(x, "why", r->why);
            cJSON_AddItemToArray(na, x);
            continue;
        }
        add_unmatched_fields(x, c, r);
        cJSON_AddItemToArray(ua, x);
    }
}

cJSON *scm_xc_check_json(const scm_xc_check *c)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "crosscheck");
    cJSON_AddNumberToObject(root, "K", (double)c->K);
    cJSON_AddNumberToObject(root, "M", (double)c->M);
    cJSON_AddStringToObject(root, "activation", c->act->name);
    cJSON_AddNumberToObject(root, "seed", (double)c->seed);
    cJSON_AddNumberToObject(root, "first", (double)c->first);
    cJSON_AddNumberToObject(root, "runs", (double)c->runs);
    add_enumeration(root, c);
    add_summary(root, c);
    cJSON_AddNumberToObject(root, "unmatched", (double)scm_xc_check_unmatched(c));
    add_families(root, c);
    add_points(root, c);
    return root;
}
