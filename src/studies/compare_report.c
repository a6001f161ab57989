/* compare_report.c: the Markdown report of a comparison (compare.h):
 * the tables of PREFIX.json (fractions with Wilson intervals, classes,
 * anti-aligned counts, families reached with their stability, unconverged
 * runs by the point they sit near, the families given, how the traces
 * were integrated) as the text of
 * PREFIX.md; and the stamp of PREFIX.json (scmode_version, status) that the
 * other commands' results carry. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm_version.h"
#include "studies/compare_internal.h"

#define md_printf scm_compare_md_printf

/* What every section reads. */
typedef struct {
    md_buf *md;
    long M, runs;
    const long *Ks;
    int nK;
    const cJSON *rows, *cnts, *frs, *wis;
    cJSON *const *summ;
    const cJSON *reached_arr, *near_arr, *fam_arr;
    const char *prefix;
} md_ctx;

/* The title and the fraction table. */
static void md_fractions(const md_ctx *x)
{
    md_buf *md = x->md;
    const long M = x->M;
    const long runs = x->runs;
    const long *Ks = x->Ks;
    const int nK = x->nK;
    const cJSON *rows = x->rows;
    const cJSON *cnts = x->cnts;
    const cJSON *frs = x->frs;
    const cJSON *wis = x->wis;
    md_printf(md, "# Where training ends: M = %ld, K = ", M);
    for (int j = 0; j < nK; j++)
        md_printf(md, "%s%ld", j ? ", " : "", Ks[j]);
    md_printf(md, "\n\n%ld random initialisations per K.  Fractions of all runs, with 95%% "
                "Wilson intervals.  Rows: k1 (the matched family where a family list was "
                "given, else the number of anti-aligned students of a converged run), "
                "unmatched, not converged.\n\n| k1 |", runs);
    for (int j = 0; j < nK; j++)
        md_printf(md, " K = %ld |", Ks[j]);
    md_printf(md, "\n| --- |");
    for (int j = 0; j < nK; j++)
        md_printf(md, " --- |");
    md_printf(md, "\n");
    for (int r = 0; r < cJSON_GetArraySize(rows); r++) {
        md_printf(md, "| %s |", cJSON_GetArrayItem(rows, r)->valuestring);
        for (int j = 0; j < nK; j++) {
            const cJSON *w = cJSON_GetArrayItem(cJSON_GetArrayItem(wis, r), j);
            md_printf(md, " %.4f [%.4f, %.4f] (%.0f) |",
                    cJSON_GetArrayItem(cJSON_GetArrayItem(frs, r), j)->valuedouble,
                    cJSON_GetArrayItem(w, 0)->valuedouble, cJSON_GetArrayItem(w, 1)->valuedouble,
                    cJSON_GetArrayItem(cJSON_GetArrayItem(cnts, r), j)->valuedouble);
        }
        md_printf(md, "\n");
    }
}

/* The classes reached, per K. */
static void md_classes(const md_ctx *x)
{
    md_buf *md = x->md;
    const long *Ks = x->Ks;
    const int nK = x->nK;
    cJSON *const *summ = x->summ;
    md_printf(md, "\n## Classes reached, per K\n\n| K | class | count | fraction | eps range |\n"
                "| --- | --- | --- | --- | --- |\n");
    for (int j = 0; j < nK; j++) {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(summ[j], "classes"))
        md_printf(md, "| %ld | %s | %.0f | %.4f | %.10g .. %.10g |\n", Ks[j],
                cJSON_GetObjectItemCaseSensitive(it, "class")->valuestring,
                cJSON_GetObjectItemCaseSensitive(it, "count")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(it, "fraction")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(it, "eps_min")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(it, "eps_max")->valuedouble);
    }
}

/* Converged runs by anti-aligned count, per K. */
static void md_anti(const md_ctx *x)
{
    md_buf *md = x->md;
    const long *Ks = x->Ks;
    const int nK = x->nK;
    cJSON *const *summ = x->summ;
    md_printf(md, "\n## Converged runs by anti-aligned count, per K\n\n| K | anti | count | fraction |\n"
                "| --- | --- | --- | --- |\n");
    for (int j = 0; j < nK; j++) {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(summ[j], "by_anti"))
        md_printf(md, "| %ld | %.0f | %.0f | %.4f |\n", Ks[j],
                cJSON_GetObjectItemCaseSensitive(it, "anti")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(it, "count")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(it, "fraction")->valuedouble);
    }
}

/* The families reached, with their stability. */
static void md_reached(const md_ctx *x)
{
    md_buf *md = x->md;
    const cJSON *reached_arr = x->reached_arr;
    if (cJSON_GetArraySize(reached_arr) > 0) {
        md_printf(md, "\n## Families reached, with their stability\n\n"
                    "Verdict: the perturbation test (3 trials at sigma 1e-4, 1e-3, 1e-2: GD in "
                    "weight space, then the CVODE flow; `scm stability`), and the Hessian's "
                    "(minimum, saddle, degenerate: more zero eigenvalues than symmetries "
                    "explain).\n\n| K | class | k1 | loss | runs | verdict | Hessian | "
                    "negative | smallest eigenvalue | escapes to |\n"
                    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
        const cJSON *it;
        cJSON_ArrayForEach(it, reached_arr)
        {
            const cJSON *neg = cJSON_GetObjectItemCaseSensitive(it, "hessian_negative"),
                        *sm = cJSON_GetObjectItemCaseSensitive(it, "hessian_smallest"),
                        *to = cJSON_GetObjectItemCaseSensitive(it, "escapes_to");
            char nb[32] = "-", sb[32] = "-";
            if (cJSON_IsNumber(neg))
                snprintf(nb, sizeof nb, "%.0f", neg->valuedouble);
            if (cJSON_IsNumber(sm))
                snprintf(sb, sizeof sb, "%.4g", sm->valuedouble);
            md_printf(md, "| %.0f | %s | %.0f | %.12g | %.0f | %s | %s | %s | %s | %s |\n",
                    cJSON_GetObjectItemCaseSensitive(it, "K")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(it, "class")->valuestring,
                    cJSON_GetObjectItemCaseSensitive(it, "k1")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(it, "loss")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(it, "count")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(it, "verdict")->valuestring,
                    cJSON_GetObjectItemCaseSensitive(it, "hessian_verdict")->valuestring, nb, sb,
                    cJSON_IsString(to) ? to->valuestring : "-");
        }
    }
}

/* The unconverged runs by the point they sit near. */
static void md_near(const md_ctx *x)
{
    md_buf *md = x->md;
    const cJSON *near_arr = x->near_arr;
    if (near_arr && cJSON_GetArraySize(near_arr) > 0) {
        md_printf(md, "\n## Runs that did not converge, by the point they sit near\n\n"
                    "The listed fixed point nearest to the final state (weight-space "
                    "distance after aligning students and teachers; docs/sweeps.md), its "
                    "loss and stability verdict (perturbation/Hessian; unknown when "
                    "neither the families file nor the families reached give one).\n\n"
                    "| K | point | family | k1 | loss | stability | runs | fraction | distance | "
                    "final eps |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
        const cJSON *it;
        cJSON_ArrayForEach(it, near_arr)
        {
            const cJSON *d0 = cJSON_GetObjectItemCaseSensitive(it, "dist_min"),
                        *d1 = cJSON_GetObjectItemCaseSensitive(it, "dist_max");
            char db[64] = "-";
            if (cJSON_IsNumber(d0) && cJSON_IsNumber(d1))
                snprintf(db, sizeof db, "%.2g .. %.2g", d0->valuedouble, d1->valuedouble);
            md_printf(md, "| %.0f | %.0f | %s | %.0f | %.10g | %s | %.0f | %.4f | %s | %.10g .. %.10g |\n",
                    cJSON_GetObjectItemCaseSensitive(it, "K")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(it, "point")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(it, "family")->valuestring,
                    cJSON_GetObjectItemCaseSensitive(it, "k1")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(it, "loss")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(it, "stability")->valuestring,
                    cJSON_GetObjectItemCaseSensitive(it, "count")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(it, "fraction")->valuedouble, db,
                    cJSON_GetObjectItemCaseSensitive(it, "eps_min")->valuedouble,
                    cJSON_GetObjectItemCaseSensitive(it, "eps_max")->valuedouble);
        }
    }
}

/* The families given: the lowest 12 losses per K. */
static void md_families(const md_ctx *x)
{
    md_buf *md = x->md;
    const long *Ks = x->Ks;
    const int nK = x->nK;
    const cJSON *fam_arr = x->fam_arr;
    if (cJSON_GetArraySize(fam_arr) > 0) {
        md_printf(md, "\n## Families given (lowest 12 losses per K)\n\n| K | family | k1 | loss |\n"
                    "| --- | --- | --- | --- |\n");
        for (int j = 0; j < nK; j++) {
            int shown = 0;
            double last = -1;
            for (;;) { /* ascending loss, distinct */
                double best = INFINITY;
                const cJSON *bi = NULL, *it;
                cJSON_ArrayForEach(it, fam_arr)
                {
                    double l = cJSON_GetObjectItemCaseSensitive(it, "loss")->valuedouble;
                    if ((long)cJSON_GetObjectItemCaseSensitive(it, "K")->valuedouble == Ks[j] &&
                        l > last + 1e-12 && l < best) {
                        best = l;
                        bi = it;
                    }
                }
                if (!bi || shown++ >= 12)
                    break;
                last = best;
                md_printf(md, "| %ld | %s | %.0f | %.10g |\n", Ks[j],
                        cJSON_GetObjectItemCaseSensitive(bi, "family")->valuestring,
                        cJSON_GetObjectItemCaseSensitive(bi, "k1")->valuedouble, best);
            }
        }
    }
}

/* The traces: how they were integrated, and the traced runs whose
 * accurate rerun ended in another class than the sweep's (compare_trace.c). */
static void md_traces(const md_ctx *x, const cJSON *R)
{
    md_buf *md = x->md;
    const cJSON *ti = cJSON_GetObjectItemCaseSensitive(R, "traces_integrator");
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(ti, "rtol");
    const cJSON *te = cJSON_GetObjectItemCaseSensitive(ti, "tail_eps");
    const cJSON *es = cJSON_GetObjectItemCaseSensitive(ti, "eps_stop");
    if (!cJSON_IsNumber(rt) || !cJSON_IsNumber(te) || !cJSON_IsNumber(es))
        return;
    int n = 0, nd = 0;
    const cJSON *tr;
    cJSON_ArrayForEach(tr, cJSON_GetObjectItemCaseSensitive(R, "traces"))
    {
        n++;
        nd += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tr, "class_differs"));
    }
    md_printf(md, "\nTraces: %d run(s) integrated again from their initial states without the "
                  "loose stage (rtol %g, eps_stop %g, ",
              n, rt->valuedouble, es->valuedouble);
    if (te->valuedouble > 0.0)
        md_printf(md, "the tail stage from eps = %g", te->valuedouble);
    else
        md_printf(md, "no tail stage for this rule");
    md_printf(md, "; `traces_integrator`); %d ended in another class than the sweep's run%s\n",
              nd, nd ? ":" : ".");
    cJSON_ArrayForEach(tr, cJSON_GetObjectItemCaseSensitive(R, "traces"))
    {
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tr, "class_differs")))
            continue;
        md_printf(md, "- K = %.0f, run %.0f: %s in the sweep, %s when traced\n",
                  cJSON_GetObjectItemCaseSensitive(tr, "K")->valuedouble,
                  cJSON_GetObjectItemCaseSensitive(tr, "index")->valuedouble,
                  cJSON_GetObjectItemCaseSensitive(tr, "class")->valuestring,
                  cJSON_GetObjectItemCaseSensitive(tr, "class_traced")->valuestring);
    }
}

/* The files of the report. */
static void md_files(const md_ctx *x)
{
    md_buf *md = x->md;
    const char *prefix = x->prefix;
    md_printf(md, "\nFiles: %s.json; figures %s.hist.png, %s.fractions.png, %s.traces.png "
                "(`python3 scripts/plot_compare.py %s.json`).\n",
            prefix, prefix, prefix, prefix, prefix);
}

char *scm_compare_markdown(const scm_compare_result *res, const char *prefix)
{
    const cJSON *R = res->report;
    const cJSON *tab = cJSON_GetObjectItemCaseSensitive(R, "fractions");
    const cJSON *kc = cJSON_GetObjectItemCaseSensitive(R, "K");
    long Ks[SCM_COMPARE_MAX_K];
    int nK = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, kc)
    {
        if (nK < SCM_COMPARE_MAX_K)
            Ks[nK++] = (long)k->valuedouble;
    }
    md_buf b = {malloc(4096), 0, 4096, 0};
    if (!b.p)
        return NULL;
    b.p[0] = '\0';
    md_ctx x = {&b,
                (long)cJSON_GetObjectItemCaseSensitive(R, "M")->valuedouble,
                (long)cJSON_GetObjectItemCaseSensitive(R, "runs")->valuedouble,
                Ks,
                nK,
                cJSON_GetObjectItemCaseSensitive(tab, "rows"),
                cJSON_GetObjectItemCaseSensitive(tab, "count"),
                cJSON_GetObjectItemCaseSensitive(tab, "fraction"),
                cJSON_GetObjectItemCaseSensitive(tab, "wilson95"),
                res->summaries,
                cJSON_GetObjectItemCaseSensitive(R, "families_reached"),
                cJSON_GetObjectItemCaseSensitive(R, "not_converged_near"),
                cJSON_GetObjectItemCaseSensitive(R, "families"),
                prefix};
    md_fractions(&x);
    md_classes(&x);
    md_anti(&x);
    md_reached(&x);
    md_near(&x);
    md_families(&x);
    md_traces(&x, R);
    md_files(&x);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* Put item (named name) at position pos of object o, replacing an item of
 * that name. */
static void put_at(cJSON *o, const char *name, cJSON *item, int pos)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, name);
    if (!cJSON_AddItemToObject(o, name, item)) {
        cJSON_Delete(item);
        return;
    }
    cJSON_DetachItemViaPointer(o, item); /* keeps its name */
    if (!cJSON_InsertItemInArray(o, pos, item))
        cJSON_AddItemToObject(o, name, item);
}

void scm_compare_report_stamp(cJSON *report)
{
    if (!report)
        return;
    cJSON *v = cJSON_CreateString(SCM_VERSION), *s = cJSON_CreateString("ok");
    if (!v || !s) {
        cJSON_Delete(v);
        cJSON_Delete(s);
        return;
    }
    put_at(report, "scmode_version", v, 0);
    int pos = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, report)
    {
        pos++;
        if (it->string && strcmp(it->string, "command") == 0)
            break;
    }
    put_at(report, "status", s, pos);
}
