/* cmd_compare.c: `scm compare`: one sweep per K (same M, rule, init and
 * integrator), the families each K reaches with their stability verdicts,
 * and one report (JSON + Markdown) with Wilson intervals. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_plot.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/config.h"
#include "scm/init.h"
#include "scm/output.h"
#include "scm/stability.h"
#include "scm/sweep.h"
#include "scm_paths.h"
#include "sweep_exec.h"

#define MAX_SETS 256

/* ---- scm compare ------------------------------------------------------- */

static void compare_usage(FILE *f)
{
    fprintf(f,
            "usage: scm compare --M M --K K1,K2,... --runs N [CONFIG.json] [--seed S]\n"
            "                   [--threads T] [--families K=FP.json]... [--traces n]\n"
            "                   [--no-stability] [--no-plots] [--set key=value]... [-o PREFIX]\n"
            "                   [--rule R1,R2,...] [--certify | --certify-global] [--quiet]\n"
            "\n"
            "One sweep per K (same M, rule, init and integrator; CONFIG.json is the base\n"
            "configuration, default ReLU, T = I, d = 1000, sigma = 1, GMRES with the\n"
            "lagged analytic Jacobian-vector product (integrator.jtimes) and Krylov\n"
            "dimension 20 (integrator.krylov_dim), two-stage\n"
            "accuracy (rtol 1e-4, atol 1e-6 until max |F| < 1e-6, then 1e-8, 1e-10;\n"
            "a run whose loose stage fails is redone with rtol 1e-6, atol 1e-8),\n"
            "eps_stop 1e-10, max_steps 1e5, seed 1), run or resumed in\n"
            "PREFIX.K<K>.runs.jsonl and summarised in\n"
            "PREFIX.K<K>.summary.json, then one report: PREFIX.json (fractions per k1\n"
            "and per K with 95%% Wilson intervals, the families reached with their\n"
            "stability verdicts, the loss histograms, loss-vs-time traces of the first\n"
            "run of each of the n most frequent classes of each K, default 4) and\n"
            "PREFIX.md, then the figures PREFIX.hist.png, PREFIX.fractions.png and\n"
            "PREFIX.traces.png (python3 with matplotlib on plot_compare.py, found in\n"
            "$SCM_SCRIPTS_DIR, else " SCM_SCRIPTS_DIR ",\n"
            "else " SCM_DATA_SCRIPTS_DIR "; python3 is $SCM_PYTHON, else the\n"
            "first of python3, /usr/bin/python3 with matplotlib; --no-plots skips them).\n"
            "\n"
            "The families of each K are enumerated (`scm fixed-points --K K --M M\n"
            "--polish-max-K 0 --max-residual 1e-9`, the built-in ansaetze, into\n"
            "PREFIX.K<K>.families.json)\n"
            "unless --families K=FILE gives them, or the model is not one scm\n"
            "fixed-points handles (T = I, v = v* = 1): then rows are the anti-aligned\n"
            "count of converged runs.  Each family reached gets the verdict of\n"
            "`scm stability --trials 3 --sigma 1e-4,1e-3,1e-2` (K <= 20; --no-stability\n"
            "skips it).  Default PREFIX: compare_M<M>.\n"
            "--certify, --certify-global: the sweeps' early stop (scm sweep --help).\n"
            "\n"
            "--rule R1,R2,... (gd, normalised, stiefel, two_layer): one compare per\n"
            "rule (--set rule=R, prefix PREFIX.R), then PREFIX.rules.json and\n"
            "PREFIX.rules.md: per rule and K the fraction reaching the global minimum\n"
            "(eps below eps_stop) and not converged, with Wilson intervals.\n"
            "\n"
            "exit status: 0 done (also when matplotlib is missing: no figures, and how\n"
            "to get them), 1 a failure while running or writing (a plotting failure\n"
            "keeps the JSON and Markdown report), 2 bad input.\n");
}

/* Append a row count into the k1 table column (k1 < 0: unmatched). */
static void table_add(long *tab, int nrows, int col, int ncols, int row, long v)
{
    if (row >= 0 && row < nrows)
        tab[row * ncols + col] += v;
}


/* scm fixed-points enumerates for T = I, v = v* = 1 and the GD rule only. */
static int enumerable(const scm_config *c)
{
    if (c->T || c->rule != &scm_rule_gd)
        return 0;
    for (int k = 0; k < c->K; k++)
        if (c->v[k] != 1.0)
            return 0;
    for (int n = 0; n < c->M; n++)
        if (c->vs[n] != 1.0)
            return 0;
    return 1;
}

/* A run stopped below eps_stop is called a global minimum: that is sound
 * only far below the lowest positive family loss (the loss decreases along
 * the flow, so such a run can end at no family above it). */
static int check_eps_stop(const char *fam_path, const scm_config *c, long K)
{
    scm_sweep_families fams;
    scm_error err;
    if (cli_load_families(fam_path, &fams, &err)) {
        fprintf(stderr, "scm compare: %s\n", err.msg);
        return 2;
    }
    scm_sweep_opts so;
    scm_sweep_opts_default(&so);
    double low = INFINITY;
    for (int i = 0; i < fams.n; i++)
        if (fams.f[i].eps > so.match_atol)
            low = fmin(low, fams.f[i].eps);
    scm_sweep_families_free(&fams);
    if (isfinite(low) && c->traj.eps_stop > 1e-3 * low) {
        fprintf(stderr,
                "scm compare: K = %ld: integrator.eps_stop = %g is not far below the lowest "
                "positive family loss %.6g in '%s' (a run stopped there might be on that "
                "plateau); use at most %.3g\n",
                K, c->traj.eps_stop, low, fam_path, 1e-3 * low);
        return 2;
    }
    return 0;
}

/* Row-major n x m matrix from a JSON array of arrays. */
static int json_matrix(const cJSON *a, int n, int m, double *out)
{
    if (cJSON_GetArraySize(a) != n)
        return -1;
    for (int i = 0; i < n; i++) {
        const cJSON *row = cJSON_GetArrayItem(a, i);
        if (cJSON_GetArraySize(row) != m)
            return -1;
        for (int j = 0; j < m; j++) {
            const cJSON *x = cJSON_GetArrayItem(row, j);
            if (!cJSON_IsNumber(x))
                return -1;
            out[i * m + j] = x->valuedouble;
        }
    }
    return 0;
}

#define COMPARE_STAB_MAX_K 20 /* as scm fixed-points --stability */

/* The families the sweep of one K reached (its summary's matched classes),
 * each with its fixed point from the families file and, unless no_stab,
 * the verdict of scm_stab_analyse with the options of scm fixed-points
 * --stability (3 trials at sigma 1e-4, 1e-3, 1e-2).  Appends to out;
 * returns 0, or -1 when the families file cannot be read. */
static int reached_families(const char *fam_path, const cJSON *S, const scm_config *c, long K,
                            int no_stab, int quiet, cJSON *out)
{
    cJSON *F = cli_read_json(fam_path);
    if (!F) {
        fprintf(stderr, "scm compare: cannot read back '%s'\n", fam_path);
        return -1;
    }
    /* a plain family list (name, k1, loss) has no points to analyse */
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(F, "fixed_points");
    const int Ki = c->K, Mi = c->M;
    scm_error err;
    scm_model *m = scm_model_alloc(Ki, Mi, c->act, NULL, NULL, NULL, &err);
    double *Q = malloc(sizeof(double) * (size_t)(Ki * Ki)),
           *R = malloc(sizeof(double) * (size_t)(Ki * Mi));
    if (!m || !Q || !R) {
        fprintf(stderr, "scm compare: out of memory\n");
        scm_model_free(m);
        free(Q);
        free(R);
        cJSON_Delete(F);
        return -1;
    }
    scm_sweep_opts sw;
    scm_sweep_opts_default(&sw);
    scm_stab_opts so;
    scm_stab_opts_three_sigma(&so);
    const cJSON *cl;
    cJSON_ArrayForEach(cl, cJSON_GetObjectItemCaseSensitive(S, "classes"))
    {
        const cJSON *fam = cJSON_GetObjectItemCaseSensitive(cl, "family");
        if (!cJSON_IsString(fam))
            continue; /* unmatched, not converged */
        double lo = cJSON_GetObjectItemCaseSensitive(cl, "eps_min")->valuedouble,
               hi = cJSON_GetObjectItemCaseSensitive(cl, "eps_max")->valuedouble,
               mid = 0.5 * (lo + hi);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "K", (double)K);
        cJSON_AddStringToObject(o, "class",
                                cJSON_GetObjectItemCaseSensitive(cl, "class")->valuestring);
        cJSON_AddNumberToObject(o, "k1", cJSON_GetObjectItemCaseSensitive(cl, "k1")->valuedouble);
        cJSON_AddNumberToObject(o, "count",
                                cJSON_GetObjectItemCaseSensitive(cl, "count")->valuedouble);
        cJSON_AddNumberToObject(o, "fraction",
                                cJSON_GetObjectItemCaseSensitive(cl, "fraction")->valuedouble);
        cJSON_AddItemToArray(out, o);
        if (strcmp(fam->valuestring, "global_minimum") == 0) {
            cJSON_AddNumberToObject(o, "loss", 0.0);
            cJSON_AddStringToObject(o, "verdict", "global_minimum");
            cJSON_AddStringToObject(o, "hessian_verdict", "-");
            continue;
        }
        if (!cJSON_IsArray(pts)) {
            cJSON_AddNumberToObject(o, "loss", mid);
            cJSON_AddStringToObject(o, "verdict", "not_run");
            cJSON_AddStringToObject(o, "hessian_verdict", "-");
            cJSON_AddStringToObject(o, "why", "the families file lists no points (Q, R)");
            continue;
        }
        /* the listed point whose loss the runs matched */
        int best = -1;
        double bd = INFINITY;
        for (int i = 0; pts && i < cJSON_GetArraySize(pts); i++) {
            const cJSON *l = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pts, i), "loss");
            if (cJSON_IsNumber(l) && fabs(l->valuedouble - mid) < bd) {
                bd = fabs(l->valuedouble - mid);
                best = i;
            }
        }
        const cJSON *pt = best >= 0 ? cJSON_GetArrayItem(pts, best) : NULL;
        if (!pt || !(bd <= sw.match_rtol * fabs(mid) + sw.match_atol + 0.5 * (hi - lo)) ||
            json_matrix(cJSON_GetObjectItemCaseSensitive(pt, "Q"), Ki, Ki, Q) ||
            json_matrix(cJSON_GetObjectItemCaseSensitive(pt, "R"), Ki, Mi, R)) {
            cJSON_AddNumberToObject(o, "loss", mid);
            cJSON_AddStringToObject(o, "verdict", "error");
            cJSON_AddStringToObject(o, "hessian_verdict", "-");
            cJSON_AddStringToObject(o, "why", "no point of this loss with Q and R in the file");
            continue;
        }
        cJSON_AddNumberToObject(o, "loss",
                                cJSON_GetObjectItemCaseSensitive(pt, "loss")->valuedouble);
        cJSON_AddNumberToObject(o, "point_index", best);
        if (no_stab || K > COMPARE_STAB_MAX_K) {
            cJSON_AddStringToObject(o, "verdict", "not_run");
            cJSON_AddStringToObject(o, "hessian_verdict", "-");
            cJSON_AddStringToObject(o, "why", no_stab ? "--no-stability" : "K > 20");
            continue;
        }
        if (!quiet)
            fprintf(stderr, "scm compare: K = %ld: stability of %s (loss %.10g)\n", K,
                    cJSON_GetObjectItemCaseSensitive(cl, "class")->valuestring,
                    cJSON_GetObjectItemCaseSensitive(pt, "loss")->valuedouble);
        scm_stab_result r;
        if (scm_stab_analyse(m, Q, R, &so, &r, &err)) {
            cJSON_AddStringToObject(o, "verdict", "error");
            cJSON_AddStringToObject(o, "hessian_verdict", "-");
            cJSON_AddStringToObject(o, "why", err.msg);
            continue;
        }
        cJSON_AddStringToObject(o, "verdict", scm_verdict_str(r.verdict));
        cJSON_AddStringToObject(o, "hessian_verdict", scm_hverdict_str(r.hverdict));
        cJSON_AddStringToObject(o, "tests_agree",
                                r.agree == 1 ? "yes" : r.agree == 0 ? "no" : "not_comparable");
        if (r.hessian_done) {
            cJSON_AddNumberToObject(o, "hessian_negative", r.counts.n_neg);
            cJSON_AddNumberToObject(o, "hessian_zero", r.counts.n_zero);
            if (r.n_small)
                cJSON_AddNumberToObject(o, "hessian_smallest", r.eval_small[0]);
        }
        if (r.jacobian_done)
            cJSON_AddNumberToObject(o, "jacobian_re_max", r.jac_re_max);
        int same = 0, glob = 0, other = 0, failed = 0;
        double omin = INFINITY, omax = -INFINITY;
        for (int q = 0; q < r.n_rows; q++) {
            same += r.rows[q].n_same;
            glob += r.rows[q].n_global;
            other += r.rows[q].n_other;
            failed += r.rows[q].n_failed;
            if (r.rows[q].n_other) {
                omin = fmin(omin, r.rows[q].other_eps_min);
                omax = fmax(omax, r.rows[q].other_eps_max);
            }
        }
        char to[160];
        int w = snprintf(to, sizeof to, "same %d, global %d, other %d", same, glob, other);
        if (other)
            w += snprintf(to + w, sizeof to - (size_t)w, " (loss %.6g..%.6g)", omin, omax);
        if (failed)
            snprintf(to + w, sizeof to - (size_t)w, ", failed %d", failed);
        cJSON_AddStringToObject(o, "escapes_to", to);
    }
    scm_model_free(m);
    free(Q);
    free(R);
    cJSON_Delete(F);
    return 0;
}

/* The unconverged runs of every K grouped by the listed point they sit
 * nearest (the summaries' not_converged_near, issue 12), each with a
 * stability verdict: the families file's when it had one, else that of
 * the same point among the families reached (same K, loss to 1e-8), else
 * "unknown".  A new array (NULL without memory). */
static cJSON *near_rows(cJSON *const *summ, const long *Ks, int nK, const cJSON *reached)
{
    cJSON *out = cJSON_CreateArray();
    for (int j = 0; out && j < nK; j++) {
        const cJSON *g;
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(summ[j], "not_converged_near"))
        {
            cJSON *o = cJSON_Duplicate(g, 1);
            if (!o)
                continue;
            cJSON_AddNumberToObject(o, "K", (double)Ks[j]);
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(g, "stability");
            const double L = cJSON_GetObjectItemCaseSensitive(g, "loss")->valuedouble;
            if (cJSON_IsString(st) && strcmp(st->valuestring, "unknown") == 0) {
                const cJSON *r;
                cJSON_ArrayForEach(r, reached)
                {
                    const cJSON *rk = cJSON_GetObjectItemCaseSensitive(r, "K"),
                                *rl = cJSON_GetObjectItemCaseSensitive(r, "loss"),
                                *rv = cJSON_GetObjectItemCaseSensitive(r, "verdict"),
                                *rh = cJSON_GetObjectItemCaseSensitive(r, "hessian_verdict");
                    if (cJSON_IsNumber(rk) && rk->valuedouble == (double)Ks[j] &&
                        cJSON_IsNumber(rl) && fabs(rl->valuedouble - L) <= 1e-8 * fabs(L) + 1e-10 &&
                        cJSON_IsString(rv) && strcmp(rv->valuestring, "not_run") != 0) {
                        char b[96];
                        snprintf(b, sizeof b, "%.40s/%.40s", rv->valuestring,
                                 cJSON_IsString(rh) ? rh->valuestring : "-");
                        cJSON_ReplaceItemInObjectCaseSensitive(o, "stability", cJSON_CreateString(b));
                        break;
                    }
                }
            }
            cJSON_AddItemToArray(out, o);
        }
    }
    return out;
}

/* The runs to trace: the first run of each of the n most frequent classes
 * of a runs file (so that the traces show the different plateaus, not n
 * runs that happen to end alike).  Fills idx[] and cls[] (most frequent
 * first); returns how many, or -1 if the file cannot be read. */
#define TRACE_MAX_CLASSES 512
static int pick_traces(const char *runs_path, int n, long *idx, char (*cls)[80])
{
    FILE *f = fopen(runs_path, "r");
    if (!f)
        return -1;
    static const int cap = TRACE_MAX_CLASSES;
    char(*name)[80] = malloc(sizeof *name * (size_t)cap);
    long *first = malloc(sizeof *first * (size_t)cap), *count = malloc(sizeof *count * (size_t)cap);
    char *line = malloc(1 << 16);
    int nc = 0;
    if (!name || !first || !count || !line) {
        nc = -1;
        goto done;
    }
    int header = 1;
    while (fgets(line, 1 << 16, f)) {
        if (header) { /* line 1 is the sweep's header */
            header = 0;
            continue;
        }
        cJSON *r = cJSON_Parse(line);
        const cJSON *ci = cJSON_GetObjectItemCaseSensitive(r, "class"),
                    *ii = cJSON_GetObjectItemCaseSensitive(r, "index");
        if (cJSON_IsString(ci) && cJSON_IsNumber(ii)) {
            int q = 0;
            while (q < nc && strcmp(name[q], ci->valuestring) != 0)
                q++;
            if (q == nc && nc < cap) {
                snprintf(name[nc], sizeof name[nc], "%s", ci->valuestring);
                first[nc] = (long)ii->valuedouble;
                count[nc++] = 0;
            }
            if (q < nc)
                count[q]++;
        }
        cJSON_Delete(r);
    }
    int got = 0;
    for (; got < n && got < nc; got++) { /* selection by count, ties by first run */
        int b = -1;
        for (int q = 0; q < nc; q++)
            if (count[q] > 0 && (b < 0 || count[q] > count[b] ||
                                 (count[q] == count[b] && first[q] < first[b])))
                b = q;
        if (b < 0)
            break;
        idx[got] = first[b];
        snprintf(cls[got], sizeof cls[got], "%s", name[b]);
        count[b] = 0;
    }
    nc = got;
done:
    fclose(f);
    free(name);
    free(first);
    free(count);
    free(line);
    return nc;
}

int scm_cmd_compare(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* several rules: one compare each, one table */
        if (strcmp(argv[i], "--rule") == 0)
            return scm_cmd_compare_rules(argc, argv);
    const char *config = NULL, *prefix = NULL, *seed = NULL, *threads = "1";
    const char *sets[MAX_SETS], *fam_for[64] = {0};
    int nsets = 0, quiet = 0, ntr = 4, no_stab = 0, no_plots = 0, certify = 0;
    long M = -1, runs = -1, Ks[64];
    char fam_made[64][4096];
    int nK = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            compare_usage(stdout);
            return 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "--no-stability") == 0) {
            no_stab = 1;
        } else if (strcmp(a, "--no-plots") == 0) {
            no_plots = 1;
        } else if (strcmp(a, "--certify") == 0) {
            certify = 1; /* the sweeps' early stop (docs/sweeps.md) */
        } else if (strcmp(a, "--certify-global") == 0) {
            certify = 2; /* its loss rule only */
        } else if (a[0] == '-' && a[1] != '\0') {
            if (i + 1 >= argc) {
                fprintf(stderr, "scm compare: option %s needs an argument\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (strcmp(a, "--M") == 0) {
                if (!cli_parse_long(v, 1, 100000, &M)) {
                    fprintf(stderr, "scm compare: --M must be an integer >= 1, got '%s'\n", v);
                    return 2;
                }
            } else if (strcmp(a, "--K") == 0) {
                char buf[512];
                snprintf(buf, sizeof buf, "%s", v);
                for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                    if (nK >= 64 || !cli_parse_long(tok, 1, 100000, &Ks[nK])) {
                        fprintf(stderr, "scm compare: --K must be a list of up to 64 integers "
                                        ">= 1, got '%s'\n", v);
                        return 2;
                    }
                    nK++;
                }
            } else if (strcmp(a, "--runs") == 0) {
                if (!cli_parse_long(v, 1, 1000000000L, &runs)) {
                    fprintf(stderr, "scm compare: --runs must be an integer in [1, 1e9], got '%s'\n", v);
                    return 2;
                }
            } else if (strcmp(a, "--traces") == 0) {
                long t;
                if (!cli_parse_long(v, 0, 100, &t)) {
                    fprintf(stderr, "scm compare: --traces must be in [0, 100], got '%s'\n", v);
                    return 2;
                }
                ntr = (int)t;
            } else if (strcmp(a, "--seed") == 0) {
                seed = v;
            } else if (strcmp(a, "--threads") == 0) {
                threads = v;
            } else if (strcmp(a, "-o") == 0) {
                prefix = v;
            } else if (strcmp(a, "--set") == 0) {
                if (nsets >= MAX_SETS - 2) {
                    fprintf(stderr, "scm compare: too many --set options\n");
                    return 2;
                }
                sets[nsets++] = v;
            } else if (strcmp(a, "--families") == 0) {
                long k;
                char buf[32];
                const char *eq = strchr(v, '=');
                size_t n = eq ? (size_t)(eq - v) : 0;
                if (n >= sizeof buf)
                    n = sizeof buf - 1;
                memcpy(buf, v, n);
                buf[n] = '\0';
                if (!eq || !cli_parse_long(buf, 1, 100000, &k)) {
                    fprintf(stderr, "scm compare: --families must be K=FILE, got '%s'\n", v);
                    return 2;
                }
                int j = 0;
                while (j < nK && Ks[j] != k)
                    j++;
                if (j == nK) {
                    fprintf(stderr, "scm compare: --families %s: K = %ld is not in --K (give "
                                    "--K first)\n", v, k);
                    return 2;
                }
                fam_for[j] = eq + 1;
            } else {
                fprintf(stderr, "scm compare: unknown option '%s' (see scm compare --help)\n", a);
                return 2;
            }
        } else if (!config) {
            config = a;
        } else {
            fprintf(stderr, "scm compare: more than one config file\n");
            return 2;
        }
    }
    if (M < 0 || nK == 0 || runs < 0) {
        fprintf(stderr, "scm compare: --M, --K and --runs are required\n");
        compare_usage(stderr);
        return 2;
    }
    long nthreads;
    char why[256];
    if (!cli_parse_long(threads, 1, 1024, &nthreads)) {
        fprintf(stderr, "scm compare: --threads must be an integer in [1, 1024], got '%s'\n",
                threads);
        return 2;
    }
    if (cli_sweep_exec_check((int)nthreads, why, sizeof why) != 0) { /* scm-mpi: before any file */
        fprintf(stderr, "scm compare: %s\n", why);
        return 2;
    }
    char pbuf[64];
    if (!prefix) {
        snprintf(pbuf, sizeof pbuf, "compare_M%ld", M);
        prefix = pbuf;
    }
    const char *base_text =
        "{\"model\": {\"K\": 1, \"M\": 1, \"activation\": \"relu\"},\n"
        " \"init\": {\"type\": \"random\", \"d\": 1000, \"sigma\": 1, \"seed\": 1},\n"
        " \"integrator\": {\"linear_solver\": \"gmres\", \"grad_stop\": 1e-10,\n"
        "                \"loose_until\": 1e-6, \"loose_rtol\": 1e-4, \"loose_atol\": 1e-6,\n"
        "                \"jtimes\": \"lagged\", \"krylov_dim\": 20, \"eps_stop\": 1e-10,\n"
        "                \"max_steps\": 100000}}\n";
    char *text = NULL;
    size_t tlen = 0;
    if (config) {
        text = cli_read_all(config, &tlen);
        if (!text) {
            fprintf(stderr, "scm compare: cannot read '%s': %s\n", config, strerror(errno));
            return 2;
        }
    }
    int rc = 2;
    cJSON *report = cJSON_CreateObject(), *summ[64] = {0};
    /* the report's arrays, owned here until they are attached to it */
    cJSON *fam_arr = NULL, *reached_arr = NULL, *hist_arr = NULL, *trace_arr = NULL,
          *files_arr = NULL;
    int attached = 0;
    char path[4096];
    long nrows_max = 0;
    for (int j = 0; j < nK; j++)
        if (Ks[j] + 1 > nrows_max)
            nrows_max = Ks[j] + 1;
    const size_t ncols = nK > 0 && nK <= 64 ? (size_t)nK : 1; /* (nK is 1..64 here) */
    long *cnt = calloc((size_t)(nrows_max + 2) * ncols, sizeof *cnt);
    long *done = calloc(ncols, sizeof *done);
    FILE *md = NULL;
    if (!report || !cnt || !done) {
        fprintf(stderr, "scm compare: out of memory\n");
        goto out;
    }
    fam_arr = cJSON_CreateArray();
    reached_arr = cJSON_CreateArray();
    hist_arr = cJSON_CreateArray();
    trace_arr = cJSON_CreateArray();
    files_arr = cJSON_CreateArray();
    for (int j = 0; j < nK; j++) {
        /* The configuration of this K, written next to its runs. */
        char kset[64], mset[64];
        snprintf(kset, sizeof kset, "model.K=%ld", Ks[j]);
        snprintf(mset, sizeof mset, "model.M=%ld", M);
        const char *all[MAX_SETS];
        int na = 0;
        for (int s = 0; s < nsets; s++)
            all[na++] = sets[s];
        all[na++] = kset;
        all[na++] = mset;
        scm_config *c = NULL;
        scm_error err;
        if (scm_config_parse(text ? text : base_text, config ? config : "(default config)", all,
                             na, &c, &err)) {
            fprintf(stderr, "scm compare: K = %ld: %s\n", Ks[j], err.msg);
            goto out;
        }
        char cfg[4096], runsf[4096], sumf[4096];
        snprintf(cfg, sizeof cfg, "%s.K%ld.config.json", prefix, Ks[j]);
        snprintf(runsf, sizeof runsf, "%s.K%ld.runs.jsonl", prefix, Ks[j]);
        snprintf(sumf, sizeof sumf, "%s.K%ld.summary.json", prefix, Ks[j]);
        if (scm_output_write_json(cfg, c->used, 0, &err)) {
            fprintf(stderr, "scm compare: %s\n", err.msg);
            scm_config_free(c);
            rc = 1;
            goto out;
        }
        if (!fam_for[j] && enumerable(c)) {
            snprintf(fam_made[j], sizeof fam_made[j], "%s.K%ld.families.json", prefix, Ks[j]);
            char kb[32], mb[32];
            snprintf(kb, sizeof kb, "%ld", Ks[j]);
            snprintf(mb, sizeof mb, "%ld", M);
            const char *fargv[] = {"fixed-points", "--K", kb, "--M", mb, "--activation",
                                   c->act->name, "--polish-max-K", "0", "--max-residual",
                                   "1e-9", "-q", "-o", fam_made[j], NULL};
            if (!quiet)
                fprintf(stderr, "scm compare: K = %ld, M = %ld: enumerating the families into %s\n",
                        Ks[j], M, fam_made[j]);
            int frc = scm_cmd_fixed_points(14, (char **)fargv);
            if (frc) {
                fprintf(stderr, "scm compare: K = %ld: the family enumeration failed\n", Ks[j]);
                scm_config_free(c);
                rc = frc;
                goto out;
            }
            fam_for[j] = fam_made[j];
        }
        if (fam_for[j] && check_eps_stop(fam_for[j], c, Ks[j]) != 0) {
            scm_config_free(c);
            rc = 2;
            goto out;
        }
        char rbuf[32];
        snprintf(rbuf, sizeof rbuf, "%ld", runs);
        const char *sargv[20];
        int sa = 0;
        sargv[sa++] = "sweep";
        sargv[sa++] = cfg;
        sargv[sa++] = "--runs";
        sargv[sa++] = rbuf;
        sargv[sa++] = "-o";
        sargv[sa++] = runsf;
        sargv[sa++] = "--threads";
        sargv[sa++] = threads;
        sargv[sa++] = "--resume";
        sargv[sa++] = "--summary";
        sargv[sa++] = sumf;
        if (seed) {
            sargv[sa++] = "--seed";
            sargv[sa++] = seed;
        }
        if (fam_for[j]) {
            sargv[sa++] = "--families";
            sargv[sa++] = fam_for[j];
        }
        if (quiet)
            sargv[sa++] = "--quiet";
        if (certify)
            sargv[sa++] = certify == 2 ? "--certify-global" : "--certify";
        sargv[sa] = NULL;
        if (!quiet)
            fprintf(stderr, "scm compare: K = %ld, M = %ld: %s\n", Ks[j], M, runsf);
        int src = scm_cmd_sweep(sa, (char **)sargv);
        if (src) {
            scm_config_free(c);
            rc = src;
            goto out;
        }
        summ[j] = cli_read_json(sumf);
        if (!summ[j]) {
            fprintf(stderr, "scm compare: cannot read back '%s'\n", sumf);
            scm_config_free(c);
            rc = 1;
            goto out;
        }
        cJSON *fo = cJSON_CreateObject();
        cJSON_AddNumberToObject(fo, "K", (double)Ks[j]);
        cJSON_AddStringToObject(fo, "config", cfg);
        cJSON_AddStringToObject(fo, "runs", runsf);
        cJSON_AddStringToObject(fo, "summary", sumf);
        if (fam_for[j])
            cJSON_AddStringToObject(fo, "families", fam_for[j]);
        else
            cJSON_AddNullToObject(fo, "families");
        cJSON_AddItemToArray(files_arr, fo);
        /* The table column: by matched k1 with families, else by anti count. */
        const cJSON *S = summ[j];
        done[j] = (long)cJSON_GetObjectItemCaseSensitive(S, "done")->valuedouble;
        const int nrows = (int)nrows_max;
        const cJSON *it;
        if (fam_for[j]) {
            cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(S, "classes"))
            {
                const cJSON *k1 = cJSON_GetObjectItemCaseSensitive(it, "k1");
                long n = (long)cJSON_GetObjectItemCaseSensitive(it, "count")->valuedouble;
                const char *cl = cJSON_GetObjectItemCaseSensitive(it, "class")->valuestring;
                if (cJSON_IsNumber(k1))
                    table_add(cnt, nrows + 2, j, nK, (int)k1->valuedouble, n);
                else
                    table_add(cnt, nrows + 2, j, nK,
                              strcmp(cl, "unmatched") == 0 ? nrows : nrows + 1, n);
            }
        } else {
            cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(S, "by_anti"))
            table_add(cnt, nrows + 2, j, nK,
                      (int)cJSON_GetObjectItemCaseSensitive(it, "anti")->valuedouble,
                      (long)cJSON_GetObjectItemCaseSensitive(it, "count")->valuedouble);
            long conv = (long)cJSON_GetObjectItemCaseSensitive(S, "converged")->valuedouble;
            table_add(cnt, nrows + 2, j, nK, nrows + 1, done[j] - conv);
        }
        /* Families with their losses. */
        if (fam_for[j]) {
            scm_sweep_families fams;
            if (cli_load_families(fam_for[j], &fams, &err) == SCM_OK) {
                for (int q = 0; q < fams.n; q++) {
                    cJSON *o = cJSON_CreateObject();
                    cJSON_AddNumberToObject(o, "K", (double)Ks[j]);
                    cJSON_AddStringToObject(o, "family", fams.f[q].name);
                    cJSON_AddNumberToObject(o, "k1", fams.f[q].k1);
                    cJSON_AddNumberToObject(o, "loss", fams.f[q].eps);
                    cJSON_AddItemToArray(fam_arr, o);
                }
                scm_sweep_families_free(&fams);
            }
        }
        if (fam_for[j] &&
            reached_families(fam_for[j], S, c, Ks[j], no_stab, quiet, reached_arr) != 0) {
            scm_config_free(c);
            rc = 1;
            goto out;
        }
        cJSON *ho = cJSON_CreateObject();
        cJSON_AddNumberToObject(ho, "K", (double)Ks[j]);
        cJSON_AddItemToObject(ho, "histogram",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(S, "loss_histogram"), 1));
        cJSON_AddItemToObject(ho, "classes",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(S, "classes"), 1));
        cJSON_AddItemToArray(hist_arr, ho);
        /* Loss-vs-time traces (recorded trajectories) of the first run of
         * each of the ntr most frequent classes. */
        long tidx[100];
        char tcls[100][80];
        int nt = pick_traces(runsf, ntr, tidx, tcls);
        if (nt < 0) {
            fprintf(stderr, "scm compare: cannot read back '%s'\n", runsf);
            scm_config_free(c);
            rc = 1;
            goto out;
        }
        scm_model *m = scm_config_model(c, &err);
        double *Q0 = m ? malloc(sizeof(double) * (size_t)(c->K * c->K)) : NULL;
        double *R0 = m ? malloc(sizeof(double) * (size_t)(c->K * c->M)) : NULL;
        uint64_t base = seed ? (uint64_t)strtoull(seed, NULL, 10) : (uint64_t)c->seed;
        for (int q = 0; m && Q0 && R0 && q < nt; q++) {
            const long t = tidx[q];
            scm_traj_result tr;
            if (scm_init_random(m, c->d, c->sigma, scm_sweep_seed(base, t), Q0, R0, &err))
                break;
            if (c->scale != 1.0)
                scm_init_scale(m, c->scale, Q0, R0);
            scm_traj_opts to = c->traj;
            to.record = 1;
            if (scm_traj_run(m, c->rule, Q0, R0, &to, &tr, &err))
                break;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "K", (double)Ks[j]);
            cJSON_AddNumberToObject(o, "index", (double)t);
            cJSON_AddStringToObject(o, "class", tcls[q]);
            cJSON_AddItemToObject(o, "t", scm_output_vector(tr.out_t, (int)tr.n_out));
            cJSON_AddItemToObject(o, "eps", scm_output_vector(tr.out_eps, (int)tr.n_out));
            cJSON_AddItemToArray(trace_arr, o);
            scm_traj_result_free(&tr);
        }
        free(Q0);
        free(R0);
        scm_model_free(m);
        scm_config_free(c);
    }
    /* The fraction table. */
    const int nrows = (int)nrows_max;
    cJSON_AddStringToObject(report, "command", "compare");
    cJSON_AddNumberToObject(report, "M", (double)M);
    cJSON *kc = cJSON_AddArrayToObject(report, "K");
    for (int j = 0; j < nK; j++)
        cJSON_AddItemToArray(kc, cJSON_CreateNumber((double)Ks[j]));
    cJSON_AddNumberToObject(report, "runs", (double)runs);
    cJSON *tab = cJSON_AddObjectToObject(report, "fractions");
    cJSON_AddStringToObject(tab, "rows_are",
                            "k1 (matched family, or anti-aligned count without families), "
                            "then unmatched, then not_converged; columns K");
    cJSON *rows = cJSON_AddArrayToObject(tab, "rows");
    cJSON *cnts = cJSON_AddArrayToObject(tab, "count");
    cJSON *frs = cJSON_AddArrayToObject(tab, "fraction");
    cJSON *wis = cJSON_AddArrayToObject(tab, "wilson95");
    for (int r = 0; r < nrows + 2; r++) {
        long any = 0;
        for (int j = 0; j < nK; j++)
            any += cnt[r * nK + j];
        if (!any && r < nrows)
            continue;
        char name[32];
        if (r < nrows)
            snprintf(name, sizeof name, "%d", r);
        else
            snprintf(name, sizeof name, "%s", r == nrows ? "unmatched" : "not_converged");
        cJSON_AddItemToArray(rows, cJSON_CreateString(name));
        cJSON *cr = cJSON_CreateArray(), *fr = cJSON_CreateArray(), *wr = cJSON_CreateArray();
        for (int j = 0; j < nK; j++) {
            long k = cnt[r * nK + j];
            double lo, hi;
            scm_sweep_wilson(k, done[j], &lo, &hi);
            cJSON_AddItemToArray(cr, cJSON_CreateNumber((double)k));
            cJSON_AddItemToArray(fr, cJSON_CreateNumber(done[j] ? (double)k / (double)done[j] : 0));
            cJSON *w = cJSON_CreateArray();
            cJSON_AddItemToArray(w, cJSON_CreateNumber(lo));
            cJSON_AddItemToArray(w, cJSON_CreateNumber(hi));
            cJSON_AddItemToArray(wr, w);
        }
        cJSON_AddItemToArray(cnts, cr);
        cJSON_AddItemToArray(frs, fr);
        cJSON_AddItemToArray(wis, wr);
    }
    cJSON_AddItemToObject(report, "families", fam_arr);
    cJSON_AddItemToObject(report, "families_reached", reached_arr);
    cJSON *near_arr = near_rows(summ, Ks, nK, reached_arr);
    if (near_arr)
        cJSON_AddItemToObject(report, "not_converged_near", near_arr);
    cJSON_AddItemToObject(report, "histograms", hist_arr);
    cJSON_AddItemToObject(report, "traces", trace_arr);
    cJSON_AddItemToObject(report, "files", files_arr);
    attached = 1;
    snprintf(path, sizeof path, "%s.json", prefix);
    scm_error err;
    if (scm_output_write_json(path, report, 0, &err)) {
        fprintf(stderr, "scm compare: %s\n", err.msg);
        rc = 1;
        goto out;
    }
    /* Markdown: the same tables. */
    snprintf(path, sizeof path, "%s.md", prefix);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    md = fopen(tmp, "w");
    if (!md) {
        fprintf(stderr, "scm compare: cannot write '%s': %s\n", tmp, strerror(errno));
        rc = 1;
        goto out;
    }
    fprintf(md, "# Where training ends: M = %ld, K = ", M);
    for (int j = 0; j < nK; j++)
        fprintf(md, "%s%ld", j ? ", " : "", Ks[j]);
    fprintf(md, "\n\n%ld random initialisations per K.  Fractions of all runs, with 95%% "
                "Wilson intervals.  Rows: k1 (the matched family where a family list was "
                "given, else the number of anti-aligned students of a converged run), "
                "unmatched, not converged.\n\n| k1 |", runs);
    for (int j = 0; j < nK; j++)
        fprintf(md, " K = %ld |", Ks[j]);
    fprintf(md, "\n| --- |");
    for (int j = 0; j < nK; j++)
        fprintf(md, " --- |");
    fprintf(md, "\n");
    for (int r = 0; r < cJSON_GetArraySize(rows); r++) {
        fprintf(md, "| %s |", cJSON_GetArrayItem(rows, r)->valuestring);
        for (int j = 0; j < nK; j++) {
            const cJSON *w = cJSON_GetArrayItem(cJSON_GetArrayItem(wis, r), j);
            fprintf(md, " %.4f [%.4f, %.4f] (%.0f) |",
                    cJSON_GetArrayItem(cJSON_GetArrayItem(frs, r), j)->valuedouble,
                    cJSON_GetArrayItem(w, 0)->valuedouble, cJSON_GetArrayItem(w, 1)->valuedouble,
                    cJSON_GetArrayItem(cJSON_GetArrayItem(cnts, r), j)->valuedouble);
        }
        fprintf(md, "\n");
    }
    fprintf(md, "\n## Classes reached, per K\n\n| K | class | count | fraction | eps range |\n"
                "| --- | --- | --- | --- | --- |\n");
    for (int j = 0; j < nK; j++) {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(summ[j], "classes"))
        fprintf(md, "| %ld | %s | %.0f | %.4f | %.10g .. %.10g |\n", Ks[j],
                cJSON_GetObjectItemCaseSensitive(it, "class")->valuestring,
                cJSON_GetObjectItemCaseSensitive(it, "count")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(it, "fraction")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(it, "eps_min")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(it, "eps_max")->valuedouble);
    }
    fprintf(md, "\n## Converged runs by anti-aligned count, per K\n\n| K | anti | count | fraction |\n"
                "| --- | --- | --- | --- |\n");
    for (int j = 0; j < nK; j++) {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(summ[j], "by_anti"))
        fprintf(md, "| %ld | %.0f | %.0f | %.4f |\n", Ks[j],
                cJSON_GetObjectItemCaseSensitive(it, "anti")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(it, "count")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(it, "fraction")->valuedouble);
    }
    if (cJSON_GetArraySize(reached_arr) > 0) {
        fprintf(md, "\n## Families reached, with their stability\n\n"
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
            fprintf(md, "| %.0f | %s | %.0f | %.12g | %.0f | %s | %s | %s | %s | %s |\n",
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
    if (near_arr && cJSON_GetArraySize(near_arr) > 0) {
        fprintf(md, "\n## Runs that did not converge, by the point they sit near\n\n"
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
            fprintf(md, "| %.0f | %.0f | %s | %.0f | %.10g | %s | %.0f | %.4f | %s | %.10g .. %.10g |\n",
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
    if (cJSON_GetArraySize(fam_arr) > 0) {
        fprintf(md, "\n## Families given (lowest 12 losses per K)\n\n| K | family | k1 | loss |\n"
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
                fprintf(md, "| %ld | %s | %.0f | %.10g |\n", Ks[j],
                        cJSON_GetObjectItemCaseSensitive(bi, "family")->valuestring,
                        cJSON_GetObjectItemCaseSensitive(bi, "k1")->valuedouble, best);
            }
        }
    }
    fprintf(md, "\nFiles: %s.json; figures %s.hist.png, %s.fractions.png, %s.traces.png "
                "(`python3 scripts/plot_compare.py %s.json`).\n",
            prefix, prefix, prefix, prefix, prefix);
    if (fclose(md) != 0 || rename(tmp, path) != 0) {
        md = NULL;
        fprintf(stderr, "scm compare: cannot write '%s': %s\n", path, strerror(errno));
        remove(tmp);
        rc = 1;
        goto out;
    }
    md = NULL;
    if (!quiet)
        fprintf(stderr, "scm compare: wrote %s.json and %s.md\n", prefix, prefix);
    snprintf(path, sizeof path, "%s.json", prefix);
    rc = no_plots ? 0 : cli_plot("scm compare", "plot_compare.py", path, quiet);
out:
    if (md)
        fclose(md);
    for (int j = 0; j < nK; j++)
        cJSON_Delete(summ[j]);
    if (!attached) {
        cJSON_Delete(fam_arr);
        cJSON_Delete(reached_arr);
        cJSON_Delete(hist_arr);
        cJSON_Delete(trace_arr);
        cJSON_Delete(files_arr);
    }
    cJSON_Delete(report);
    free(cnt);
    free(done);
    free(text);
    return rc;
}
