/* cmd_crosscheck.c: `scm crosscheck`: random runs (the ODE and weight-space
 * GD in d = M) classified against the fixed-point enumeration with the
 * options of `scm fixed-points` (crosscheck.h); a readable summary and a
 * JSON result file listing every unmatched and every non-converged end
 * point.  Exit status 3 when an end point is unmatched (docs/crosscheck.md). */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "fp_list.h"
#include "scm/crosscheck.h"
#include "scm/output.h"
#include "scm_version.h"

#define XC_MAX_ANSATZ 64
#define XC_ME "scm crosscheck"

static void xc_usage(FILE *f)
{
    fprintf(f,
            "usage: scm crosscheck --K K --M M [--runs N] [--method ode|gd|both] [-o OUT.json]\n"
            "\n"
            "Is the fixed-point enumeration complete?  N random runs of the ODE (d = 1000,\n"
            "sigma = 1, CVODE, as a sweep run) and N runs of gradient descent in weight\n"
            "space (d = M), every end point polished and classified against the fixed\n"
            "points `scm fixed-points` lists with the same options.  Unmatched end points\n"
            "are listed with their loss, alignment and groups of equal overlaps (and Q,\n"
            "R in the JSON); runs that did not converge are listed as such.\n"
            "\n"
            "  --K K, --M M       numbers of students and teachers\n"
            "  --runs N           runs per method (default 200)\n"
            "  --seed S           base seed of the runs (default 1; run i uses\n"
            "                     scm_sweep_seed(S, i))\n"
            "  --first I          first run index (default 0)\n"
            "  --method M         ode, gd or both (default both)\n"
            "  --activation NAME  relu (default), erf or linear\n"
            "  --ansatz FILE      enumerate these ansätze only (repeatable; default the\n"
            "                     built-in ones)\n"
            "  --starts N         random Newton starts per (ansatz, k1) (default 200)\n"
            "  --fp-seed S        seed of those starts (default 1)\n"
            "  --deflate N        deflated Newton rounds (default "
            SCM_STR(SCM_FP_CLI_DEFLATE) ")\n"
            "  --sweep-passes P   k1 sweep passes (default " SCM_STR(SCM_FP_CLI_SWEEP_PASSES) ")\n"
            "  --gd-max-iter N    GD iteration budget (default 200000)\n"
            "  --threads T        threads for the runs and the enumeration (default: the\n"
            "                     processors online, at most 16); the result does not\n"
            "                     depend on T\n"
            "  -o FILE            JSON result file\n"
            "  -q, --quiet        no per-point listing (the counts only)\n"
            "\n"
            "exit status: 0 every converged end point matched, 3 some did not (the\n"
            "result is complete either way), 1 a computation failed, 2 bad input.\n");
}

/* The enumeration at K' = K_live, computed on first use. */
typedef struct {
    int M;
    scm_ansatz **ans;
    int n_ans;
    const scm_activation *act;
    scm_fp_opts o;
    int sweep_passes;
    scm_xc_list *lists; /* [K + 1] */
    int *done;
} lists_cache;

static const scm_xc_list *get_list(lists_cache *c, int K, scm_error *err, int *failed)
{
    if (!c->done[K]) {
        if (scm_xc_enumerate(K, c->M, c->ans, c->n_ans, c->act, &c->o, c->sweep_passes,
                             &c->lists[K], err)) {
            *failed = 1;
            return NULL;
        }
        c->done[K] = 1;
    }
    return &c->lists[K];
}

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

static void groups_print(const scm_xc_groups *g)
{
    for (int i = 0; i < g->n; i++) {
        const scm_xc_group *G = &g->g[i];
        printf("      %2d x %-8s Q_kk %-11.6g R_own %-11.6g R_other", G->size, kind_str(G->kind),
               G->q, G->own);
        for (int k = 0; k < G->n_values; k++)
            printf(" %.6g (x%d)", G->value[k], G->count[k]);
        if (G->more_values)
            printf(" ... %d more values", G->more_values);
        printf("\n");
    }
}

/* Distinct unmatched losses: a loss within the match tolerance of an
 * earlier one is counted with it. */
typedef struct {
    double eps;
    int count[2];
    long first_index[2];
} umloss;

int scm_cmd_crosscheck(int argc, char **argv)
{
    long K = -1, M = -1, runs = 200, seed = 1, first = 0, starts = 200, fpseed = 1;
    long deflate = SCM_FP_CLI_DEFLATE, gdmax = 200000, sweep_passes = SCM_FP_CLI_SWEEP_PASSES;
    long threads = cli_cpu_count();
    int quiet = 0, na = 0, meth_lo = 0, meth_hi = 1;
    const char *files[XC_MAX_ANSATZ], *out = NULL, *actname = "relu";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            xc_usage(stdout);
            return 0;
        }
        if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, XC_ME ": unknown option or missing value: '%s'\n", a);
            xc_usage(stderr);
            return 2;
        }
        int bad = 0;
        if (strcmp(a, "--K") == 0)
            bad = cli_opt_long(XC_ME, a, v, 1, 1000, &K);
        else if (strcmp(a, "--M") == 0)
            bad = cli_opt_long(XC_ME, a, v, 1, 1000, &M);
        else if (strcmp(a, "--runs") == 0)
            bad = cli_opt_long(XC_ME, a, v, 0, 100000000L, &runs);
        else if (strcmp(a, "--seed") == 0)
            bad = cli_opt_long(XC_ME, a, v, 0, 2147483647L, &seed);
        else if (strcmp(a, "--first") == 0)
            bad = cli_opt_long(XC_ME, a, v, 0, 2147483647L, &first);
        else if (strcmp(a, "--starts") == 0)
            bad = cli_opt_long(XC_ME, a, v, 0, 1000000, &starts);
        else if (strcmp(a, "--fp-seed") == 0)
            bad = cli_opt_long(XC_ME, a, v, 0, 2147483647L, &fpseed);
        else if (strcmp(a, "--deflate") == 0)
            bad = cli_opt_long(XC_ME, a, v, 0, 1000, &deflate);
        else if (strcmp(a, "--sweep-passes") == 0)
            bad = cli_opt_long(XC_ME, a, v, 0, 1000, &sweep_passes);
        else if (strcmp(a, "--gd-max-iter") == 0)
            bad = cli_opt_long(XC_ME, a, v, 1, 100000000L, &gdmax);
        else if (strcmp(a, "--threads") == 0)
            bad = cli_opt_long(XC_ME, a, v, 1, 64, &threads);
        else if (strcmp(a, "--method") == 0) {
            if (strcmp(v, "ode") == 0)
                meth_lo = meth_hi = 0;
            else if (strcmp(v, "gd") == 0)
                meth_lo = meth_hi = 1;
            else if (strcmp(v, "both") == 0)
                meth_lo = 0, meth_hi = 1;
            else {
                fprintf(stderr, XC_ME ": --method needs ode, gd or both, got '%s'\n", v);
                bad = -1;
            }
        } else if (strcmp(a, "--activation") == 0)
            actname = v;
        else if (strcmp(a, "-o") == 0)
            out = v;
        else if (strcmp(a, "--ansatz") == 0) {
            if (na == XC_MAX_ANSATZ) {
                fprintf(stderr, XC_ME ": at most %d --ansatz files\n", XC_MAX_ANSATZ);
                return 2;
            }
            files[na++] = v;
        } else {
            fprintf(stderr, XC_ME ": unknown option '%s'\n", a);
            xc_usage(stderr);
            return 2;
        }
        if (bad)
            return 2;
        i++;
    }
    if (K < 0 || M < 0) {
        fprintf(stderr, XC_ME ": --K and --M are required\n");
        xc_usage(stderr);
        return 2;
    }
    const scm_activation *act = scm_activation_find(actname);
    if (!act) {
        fprintf(stderr, XC_ME ": unknown activation '%s' (relu, erf, linear)\n", actname);
        return 2;
    }
    gsl_set_error_handler_off();

    scm_ansatz *ans[XC_MAX_ANSATZ];
    int nans = 0, rc = 0;
    scm_error err;
    for (int i = 0; i < (na > 0 ? na : scm_ansatz_builtin_count()) && nans < XC_MAX_ANSATZ;
         i++) {
        if (na > 0)
            ans[nans] = scm_ansatz_load(files[i], &err);
        else {
            const char *file, *text = scm_ansatz_builtin_text(i, &file);
            ans[nans] = scm_ansatz_parse(text, strlen(text), file, &err);
        }
        if (!ans[nans]) {
            fprintf(stderr, XC_ME ": %s\n", err.msg);
            for (int j = 0; j < nans; j++)
                scm_ansatz_free(ans[j]);
            return 2;
        }
        nans++;
    }
    lists_cache cache;
    memset(&cache, 0, sizeof cache);
    cache.M = (int)M;
    cache.ans = ans;
    cache.n_ans = nans;
    cache.act = act;
    scm_fp_opts_default(&cache.o);
    cache.o.n_random = (int)starts;
    cache.o.threads = (int)threads; /* the lists do not depend on it */
    cache.o.seed = (unsigned long)fpseed;
    cache.o.polish_defer = 1; /* as scm fixed-points: polish the listed points */
    cache.o.deflate = (int)deflate;
    cache.sweep_passes = (int)sweep_passes;
    cache.lists = calloc((size_t)K + 1, sizeof *cache.lists);
    cache.done = calloc((size_t)K + 1, sizeof *cache.done);
    scm_xc_opts xo;
    scm_xc_opts_default(&xo);
    xo.gd_max_iter = gdmax;
    int nmeth = meth_hi - meth_lo + 1;
    scm_xc_run *run = calloc((size_t)(runs * nmeth) + 1, sizeof *run);
    long nrun = 0;
    umloss *um = calloc((size_t)(runs * nmeth) + 1, sizeof *um);
    int num = 0, failed = 0;
    /* per list point and method: runs matched (lists[K] only) */
    int *counts = NULL;
    if (!cache.lists || !cache.done || !run || !um) {
        fprintf(stderr, XC_ME ": out of memory\n");
        rc = 1;
        goto cleanup;
    }
    double t0 = cli_now();
    const scm_xc_list *main_list = get_list(&cache, (int)K, &err, &failed);
    if (!main_list) {
        fprintf(stderr, XC_ME ": enumeration: %s\n", err.msg);
        rc = 1;
        goto cleanup;
    }
    double t_enum = cli_now() - t0;
    fprintf(stderr, XC_ME ": K = %ld, M = %ld: %d fixed points enumerated (%d instances) in "
                    "%.1f s\n",
            K, M, main_list->n, main_list->n_instances, t_enum);
    counts = calloc((size_t)main_list->n * 2 + 1, sizeof *counts);
    if (!counts) {
        fprintf(stderr, XC_ME ": out of memory\n");
        rc = 1;
        goto cleanup;
    }
    long n_conv[2] = {0, 0}, n_match[2] = {0, 0}, n_global[2] = {0, 0}, n_um[2] = {0, 0},
         n_nc[2] = {0, 0}, n_inv[2] = {0, 0}, n_deadrun[2] = {0, 0}, work[2] = {0, 0},
         n_smallrun[2] = {0, 0}, n_lower[2] = {0, 0};
    double t_meth[2] = {0.0, 0.0};
    for (int me = meth_lo; me <= meth_hi; me++) {
        double tm = cli_now();
        /* the runs in parallel (each a pure function of its index), then
         * classified in index order */
        long bad_run;
        scm_status rst = scm_xc_run_many((int)K, (int)M, act, me ? SCM_XC_GD : SCM_XC_ODE,
                                         (uint64_t)seed, first, (int)runs, &xo, (int)threads,
                                         &run[nrun], &bad_run, &err);
        long nrun0 = nrun;
        nrun += runs; /* filled either way: cleanup frees them */
        if (rst) {
            fprintf(stderr, XC_ME ": run %ld (%s): %s\n", bad_run, me ? "gd" : "ode", err.msg);
            rc = 1;
            goto cleanup;
        }
        for (long i = first; i < first + runs; i++) {
            scm_xc_run *r = &run[nrun0 + (i - first)];
            work[me] += r->work;
            n_deadrun[me] += r->n_dead > 0;
            n_smallrun[me] += r->n_small > 0;
            if (!r->converged) {
                n_nc[me]++;
                continue;
            }
            n_conv[me]++;
            const scm_xc_list *l = r->K_live == K ? main_list
                                   : r->K_live > 0 ? get_list(&cache, r->K_live, &err, &failed)
                                                   : NULL;
            if (failed) {
                fprintf(stderr, XC_ME ": enumeration at K = %d: %s\n", r->K_live, err.msg);
                rc = 1;
                goto cleanup;
            }
            if (l)
                scm_xc_match(r, l, &xo);
            if (r->global)
                n_global[me]++;
            if (r->match >= 0 || r->global) {
                n_match[me]++;
                n_inv[me] += r->match >= 0 && !r->global && !r->inv_agree;
                n_lower[me] += l != main_list;
                if (l == main_list && r->match >= 0)
                    counts[r->match * 2 + me]++;
                continue;
            }
            n_um[me]++;
            int u = -1;
            for (int k = 0; k < num && u < 0; k++)
                if (fabs(um[k].eps - r->eps) <= xo.match_rtol * fabs(um[k].eps) + xo.match_atol)
                    u = k;
            if (u < 0) {
                u = num++;
                um[u].eps = r->eps;
                um[u].first_index[0] = um[u].first_index[1] = -1;
            }
            if (um[u].first_index[me] < 0)
                um[u].first_index[me] = i;
            um[u].count[me]++;
        }
        t_meth[me] = cli_now() - tm;
        fprintf(stderr, XC_ME ": %s: %ld runs in %.1f s\n", me ? "gd" : "ode", runs, t_meth[me]);
    }
    long total_um = n_um[0] + n_um[1];

    /* ---- the readable summary ---- */
    printf("scm crosscheck: K = %ld, M = %ld, %s, T = I, v = v* = 1; runs %ld..%ld, seed %ld\n",
           K, M, act->name, first, first + runs - 1, seed);
    printf("enumeration: %d fixed points from %d (ansatz, k1) instances (starts %ld, fp-seed "
           "%ld, deflate %ld, sweep passes %ld)\n",
           main_list->n, main_list->n_instances, starts, fpseed, deflate, sweep_passes);
    for (int me = meth_lo; me <= meth_hi; me++)
        printf("%-4s %ld runs: converged %ld (global minimum %ld, matched %ld, unmatched %ld; "
               "invariants differ %ld), not converged %ld; with dead students %ld (matched at "
               "K_live < K %ld), with small students %ld\n",
               me ? "gd" : "ode", runs, n_conv[me], n_global[me], n_match[me], n_um[me],
               n_inv[me], n_nc[me], n_deadrun[me], n_lower[me], n_smallrun[me]);
    if (!quiet) {
        printf("\nmatched fixed points (K = %ld):\n", K);
        printf("  %-18s %-10s %4s %5s %5s %5s %6s %6s\n", "loss", "ansatz", "k1", "anti",
               "align", "other", "ode", "gd");
        for (int p = 0; p < main_list->n; p++) {
            if (!counts[2 * p] && !counts[2 * p + 1])
                continue;
            const scm_xc_point *x = &main_list->pt[p];
            printf("  %-18.12g %-10s %4d %5g %5g %5g %6d %6d\n", x->eps, x->ansatz, x->k1,
                   x->n_anti, x->n_aligned, x->n_other, counts[2 * p], counts[2 * p + 1]);
        }
        if (num) {
            printf("\nunmatched losses (distinct to the match tolerance):\n");
            printf("  %-18s %6s %6s  %s\n", "loss", "ode", "gd", "first run (ode, gd)");
            for (int u = 0; u < num; u++)
                printf("  %-18.12g %6d %6d  %ld, %ld\n", um[u].eps, um[u].count[0],
                       um[u].count[1], um[u].first_index[0], um[u].first_index[1]);
            printf("\nunmatched end points, the first of each loss:\n");
            for (int u = 0; u < num; u++)
                for (long j = 0; j < nrun; j++) {
                    const scm_xc_run *r = &run[j];
                    if (!r->converged || r->match >= 0 || r->global ||
                        r->index != um[u].first_index[r->method] ||
                        fabs(um[u].eps - r->eps) >
                            xo.match_rtol * fabs(um[u].eps) + xo.match_atol)
                        continue;
                    printf("  %s run %ld: loss %.12g, residual %.3g%s, K_live %d (dead %d), "
                           "anti %d aligned %d unpaired %d none %d\n",
                           scm_xc_method_str(r->method), r->index, r->eps, r->res,
                           r->polished ? (r->polish_ok ? " (polished)" : " (polish did not "
                                                                          "converge)")
                                       : "",
                           r->K_live, r->n_dead, r->n_anti, r->n_aligned, r->n_unpaired,
                           r->n_none);
                    scm_xc_groups g;
                    if (scm_xc_group_students(r->K_live, (int)M, r->Q, r->R, xo.group_tol, &g) ==
                        SCM_OK) {
                        printf("    groups of students with equal overlaps:\n");
                        groups_print(&g);
                        scm_xc_groups_free(&g);
                    }
                    break;
                }
            printf("(every unmatched end point, with Q and R, is in the JSON file)\n");
        }
        if (n_nc[0] + n_nc[1]) {
            printf("\nnot converged:\n");
            for (long j = 0; j < nrun; j++)
                if (!run[j].converged)
                    printf("  %s run %ld: %s (loss %.12g)\n", scm_xc_method_str(run[j].method),
                           run[j].index, run[j].why, run[j].eps);
        }
    }
    printf("%s: %ld unmatched end point(s)\n", total_um ? "INCOMPLETE" : "complete", total_um);

    if (out) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
        cJSON_AddStringToObject(root, "command", "crosscheck");
        cJSON_AddNumberToObject(root, "K", (double)K);
        cJSON_AddNumberToObject(root, "M", (double)M);
        cJSON_AddStringToObject(root, "activation", act->name);
        cJSON_AddNumberToObject(root, "seed", (double)seed);
        cJSON_AddNumberToObject(root, "first", (double)first);
        cJSON_AddNumberToObject(root, "runs", (double)runs);
        cJSON *en = cJSON_AddObjectToObject(root, "enumeration");
        cJSON_AddNumberToObject(en, "points", main_list->n);
        cJSON_AddNumberToObject(en, "instances", main_list->n_instances);
        cJSON_AddNumberToObject(en, "starts", (double)starts);
        cJSON_AddNumberToObject(en, "fp_seed", (double)fpseed);
        cJSON_AddNumberToObject(en, "deflate", (double)deflate);
        cJSON_AddNumberToObject(en, "sweep_passes", (double)sweep_passes);
        cJSON_AddNumberToObject(en, "seconds", t_enum);
        cJSON *ansa = cJSON_AddArrayToObject(en, "ansatze");
        for (int i = 0; i < nans; i++)
            cJSON_AddItemToArray(ansa, cJSON_CreateString(scm_ansatz_name(ans[i])));
        cJSON *sm = cJSON_AddObjectToObject(root, "summary");
        for (int me = meth_lo; me <= meth_hi; me++) {
            cJSON *j = cJSON_AddObjectToObject(sm, me ? "gd" : "ode");
            cJSON_AddNumberToObject(j, "runs", (double)runs);
            cJSON_AddNumberToObject(j, "converged", (double)n_conv[me]);
            cJSON_AddNumberToObject(j, "global_minimum", (double)n_global[me]);
            cJSON_AddNumberToObject(j, "matched", (double)n_match[me]);
            cJSON_AddNumberToObject(j, "unmatched", (double)n_um[me]);
            cJSON_AddNumberToObject(j, "invariants_differ", (double)n_inv[me]);
            cJSON_AddNumberToObject(j, "not_converged", (double)n_nc[me]);
            cJSON_AddNumberToObject(j, "with_dead_students", (double)n_deadrun[me]);
            cJSON_AddNumberToObject(j, "with_small_students", (double)n_smallrun[me]);
            cJSON_AddNumberToObject(j, "matched_below_K", (double)n_lower[me]);
            cJSON_AddNumberToObject(j, "work_mean", runs ? (double)work[me] / (double)runs : 0.0);
            cJSON_AddNumberToObject(j, "seconds", t_meth[me]);
        }
        cJSON_AddNumberToObject(root, "unmatched", (double)total_um);
        cJSON *fa = cJSON_AddArrayToObject(root, "matched_families");
        for (int p = 0; p < main_list->n; p++) {
            if (!counts[2 * p] && !counts[2 * p + 1])
                continue;
            const scm_xc_point *x = &main_list->pt[p];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "loss", x->eps);
            cJSON_AddStringToObject(j, "ansatz", x->ansatz);
            cJSON_AddNumberToObject(j, "k1", x->k1);
            cJSON_AddItemToObject(j, "anti", num_or_null(x->n_anti));
            cJSON_AddItemToObject(j, "aligned", num_or_null(x->n_aligned));
            cJSON_AddItemToObject(j, "other", num_or_null(x->n_other));
            cJSON_AddNumberToObject(j, "ode", counts[2 * p]);
            cJSON_AddNumberToObject(j, "gd", counts[2 * p + 1]);
            cJSON_AddItemToArray(fa, j);
        }
        cJSON *ua = cJSON_AddArrayToObject(root, "unmatched_points");
        cJSON *na_ = cJSON_AddArrayToObject(root, "not_converged");
        for (long j = 0; j < nrun; j++) {
            const scm_xc_run *r = &run[j];
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
                cJSON_AddItemToArray(na_, x);
                continue;
            }
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
            if (scm_xc_group_students(r->K_live, (int)M, r->Q, r->R, xo.group_tol, &g) ==
                SCM_OK) {
                cJSON_AddItemToObject(x, "groups", groups_json(&g));
                scm_xc_groups_free(&g);
            }
            cJSON_AddItemToObject(x, "Q", scm_output_matrix(r->Q, r->K_live, r->K_live));
            cJSON_AddItemToObject(x, "R", scm_output_matrix(r->R, r->K_live, (int)M));
            cJSON_AddItemToArray(ua, x);
        }
        if (scm_output_write_json(out, root, 0, &err)) {
            fprintf(stderr, XC_ME ": %s\n", err.msg);
            rc = 1;
        }
        cJSON_Delete(root);
    }
    if (!rc && total_um)
        rc = 3;
cleanup:
    for (long j = 0; j < nrun; j++)
        scm_xc_run_free(&run[j]);
    free(run);
    free(um);
    free(counts);
    for (long k = 0; cache.lists && k <= K; k++)
        scm_xc_list_free(&cache.lists[k]);
    free(cache.lists);
    free(cache.done);
    for (int i = 0; i < nans; i++)
        scm_ansatz_free(ans[i]);
    return rc;
}
