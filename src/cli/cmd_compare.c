/* cmd_compare.c: `scm compare`: one sweep per K (same M, rule, init and
 * integrator), the families each K reaches with their stability verdicts,
 * and one report (JSON + Markdown) with Wilson intervals.  The comparison
 * is scm_compare_run (compare.h), its outputs checked first by
 * scm_compare_check_outputs; here are the options, the report files and
 * the figures (its events are printed by cli_compare_event). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_plot.h"
#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/compare.h"
#include "scm_paths.h"
#include "sweep_exec.h"

#define MAX_SETS 256

/* ---- scm compare ------------------------------------------------------- */

static const char compare_head[] =
    "usage: scm compare --M M --K K1,K2,... --runs N [CONFIG.json] [--seed S]\n"
    "                   [--threads T] [--families K=FP.json]... [--ansatz FILE]...\n"
    "                   [--traces n] [--no-stability] [--no-plots] [--set key=value]...\n"
    "                   [--unset key]... [--prefix PREFIX] [--rule R1,R2,...]\n"
    "                   [--certify | --certify-global] [--quiet]\n"
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
    "and per K with 95% Wilson intervals, the families reached with their\n"
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
    "PREFIX.K<K>.families.json; --ansatz FILE adds an ansatz file, such as\n"
    "examples/ansatz/k1_shared.json, at the K where it applies)\n"
    "unless --families K=FILE gives them, or the model is not one scm\n"
    "fixed-points handles (T = I, v = v* = 1): then rows are the anti-aligned\n"
    "count of converged runs.  Each family reached gets the verdict of\n"
    "`scm stability --trials 3 --perturb-size 1e-4,1e-3,1e-2` (K <= 20;\n"
    "--no-stability skips it).  Default PREFIX: compare_M<M>; -o PREFIX is its\n"
    "old spelling (kept for this release).\n"
    "--certify, --certify-global: the sweeps' early stop (scm sweep --help).\n"
    "\n"
    "--rule R1,R2,... (gd, normalised, stiefel, two_layer): one compare per\n"
    "rule (--set rule=R, prefix PREFIX.R), then PREFIX.rules.json and\n"
    "PREFIX.rules.md: per rule and K the fraction reaching the global minimum\n"
    "(eps below eps_stop) and not converged, with Wilson intervals.\n";

/* What the command line asks for besides the comparison's options. */
typedef struct {
    const char *config, *rules;
    const char *sets[MAX_SETS], *unsets[MAX_SETS];
    const char *ansatz[SCM_COMPARE_MAX_ANSATZ];
    int quiet, no_plots, threads, certify, certify_global, nunsets;
    long seed;
    char pbuf[64];
} compare_cli;

/* --K K1,K2,...: distinct integers >= 1 */
static int parse_K(const char *me, const char *name, const char *v, void *dst)
{
    scm_compare_opts *o = dst;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    o->nK = 0;
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        if (o->nK >= 64 || !cli_parse_long(tok, 1, 100000, &o->K[o->nK]))
            return cli_usage_error(me, "%s must be a list of up to 64 integers >= 1, got '%s'",
                                   name, v), -1;
        for (int q = 0; q < o->nK; q++)
            if (o->K[q] == o->K[o->nK])
                return cli_usage_error(me, "%s lists K = %s twice ('%s')", name, tok, v), -1;
        o->nK++;
    }
    return 0;
}

/* --families K=FILE, K one of --K's */
static int parse_families(const char *me, const char *name, const char *v, void *dst)
{
    scm_compare_opts *o = dst;
    long k;
    char buf[32];
    const char *eq = strchr(v, '=');
    size_t n = eq ? (size_t)(eq - v) : 0;
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), v);
    if (!eq || !cli_parse_long(buf, 1, 100000, &k))
        return cli_usage_error(me, "%s must be K=FILE, got '%s'", name, v), -1;
    int j = 0;
    while (j < o->nK && o->K[j] != k)
        j++;
    if (j == o->nK)
        return cli_usage_error(me, "%s %s: K = %ld is not in --K (give --K first)", name, v, k),
               -1;
    o->families[j] = eq + 1;
    return 0;
}

/* Parse argv into o and c: -1 to go on, or the exit status. */
static int compare_parse(int argc, char **argv, scm_compare_opts *o, compare_cli *c)
{
    cli_strs pos = {&c->config, 0, 1}, set = {c->sets, 0, MAX_SETS - 2},
             unset = {c->unsets, 0, MAX_SETS}, ans = {c->ansatz, 0, SCM_COMPARE_MAX_ANSATZ};
    const cli_opt opts[] = {
        CLI_O("--M", CLI_LONG, &o->M, 1, 100000, "M", "number of teachers"),
        CLI_FN_("--K", parse_K, o, "K1,K2,...", "numbers of students, one sweep each"),
        CLI_O("--runs", CLI_LONG, &o->runs, 1, 1000000000L, "N", "runs per K"),
        CLI_O("--seed", CLI_LONG, &c->seed, 0, 9007199254740991L, "S",
              "base seed of the sweeps (default: init.seed)"),
        CLI_OPT_THREADS(&c->threads),
        CLI_FN_("--families", parse_families, o, "K=FILE",
                "the families of K (scm fixed-points -o), not enumerated"),
        CLI_O("--ansatz", CLI_STRS, &ans, 0, 0, "FILE",
              "an ansatz file the enumeration takes besides\nthe built-in ones, where it applies "
              "(repeatable)"),
        CLI_O("--traces", CLI_INT, &o->traces, 0, 100, "n", "classes traced per K (default 4)"),
        CLI_F("--no-stability", &o->no_stability, "no stability verdicts"),
        CLI_F("--no-plots", &c->no_plots, "no figures"),
        CLI_OPT_SET(&set), CLI_OPT_UNSET(&unset),
        CLI_O("--prefix", CLI_STR, &o->prefix, 0, 0, "PREFIX", "of every file written"),
        CLI_O("-o", CLI_STR, &o->prefix, 0, 0, NULL, NULL),
        CLI_O("--rule", CLI_STR, &c->rules, 0, 0, "R1,R2,...", "one compare per rule, one table"),
        CLI_F("--certify", &c->certify, "the sweeps' early stop (scm sweep --help)"),
        CLI_F("--certify-global", &c->certify_global, "its loss rule only"),
        CLI_OPT_QUIET(&c->quiet, "no progress and no summaries on stderr"),
        CLI_OPT_END};
    const cli_cmd cmd = {"scm compare", compare_head, opts,
                         CLI_EXIT_TEXT("0 done (also when matplotlib is missing: no figures, "
                                       "and how\nto get them), 1 a failure while running (a "
                                       "plotting failure keeps the\nJSON and Markdown report)"),
                         &pos, 1};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc >= 0)
        return rc;
    o->nsets = set.n;
    c->nunsets = unset.n;
    o->ansatz_files = c->ansatz;
    o->n_ansatz = ans.n;
    if (c->certify && c->certify_global)
        return cli_usage_error(cmd.me, "--certify and --certify-global exclude each other");
    o->certify = c->certify ? 1 : c->certify_global ? 2 : 0;
    if (o->M < 0 || o->nK == 0 || o->runs < 0)
        return cli_usage_error(cmd.me, "--M, --K and --runs are required");
    if (c->nunsets && !c->config)
        return cli_usage_error(cmd.me, "--unset needs CONFIG.json");
    return -1;
}

/* The report, PREFIX.json and PREFIX.md, both or neither: 0, or the exit
 * status. */
static int write_report(const scm_compare_result *res, const char *prefix)
{
    char pj[4096], pm[4096];
    snprintf(pj, sizeof pj, "%s.json", prefix);
    snprintf(pm, sizeof pm, "%s.md", prefix);
    char *md = scm_compare_markdown(res, prefix);
    int rc = cli_write_json_with("scm compare", pj, res->report, 0, pm, md, md ? strlen(md) : 0);
    free(md);
    return rc;
}

/* The failure of the comparison reported: the exit status. */
static int compare_failed(const scm_compare_result *res, const scm_error *err)
{
    char msg[sizeof err->msg + 64];
    if (res->failed_part != SCM_COMPARE_PART_SWEEP) /* a sweep's: printed at its end */
        fprintf(stderr, "scm compare: %s\n", scm_compare_failure(res, err, msg, sizeof msg));
    return res->failed_input ? 2 : err->code == SCM_EIO ? CLI_EXIT_IO : 1;
}

int scm_cmd_compare(int argc, char **argv, const cli_executor *ex)
{
    scm_compare_opts o;
    scm_compare_opts_default(&o);
    compare_cli c;
    memset(&c, 0, sizeof c);
    c.seed = -1;
    int rc = compare_parse(argc, argv, &o, &c);
    if (rc >= 0)
        return rc;
    const int nthreads = cli_exec_threads("scm compare", ex, c.threads);
    if (nthreads < 0) /* scm-mpi: before any file */
        return 2;
    if (!o.prefix) {
        snprintf(c.pbuf, sizeof c.pbuf, "compare_M%ld", o.M);
        o.prefix = c.pbuf;
    }
    char *text = NULL;
    size_t tlen = 0;
    if (c.config && !(text = cli_config_text("scm compare", c.config, c.unsets, c.nunsets, &tlen)))
        return 2;
    scm_error err;
    o.config_text = text;
    o.config_name = c.config;
    if (scm_compare_check_outputs(&o, &err)) {
        free(text);
        return cli_fail("scm compare", &err, 2);
    }
    o.sets = c.sets;
    o.have_seed = c.seed >= 0;
    o.seed = c.seed >= 0 ? (uint64_t)c.seed : 0;
    o.threads = nthreads;
    o.exec = ex->sweep_fn;
    o.jobs = ex->jobs_fn;
    cli_compare_printer pr = {"scm compare", "scm sweep", c.quiet, !c.quiet, 1, nthreads, ex,
                              {0, 0.0, 0.0}};
    o.event = cli_compare_event;
    o.event_user = &pr;
    scm_compare_result res;
    char path[4096];
    if (scm_compare_run(&o, &res, &err)) {
        rc = compare_failed(&res, &err);
    } else {
        snprintf(path, sizeof path, "%s.json", o.prefix);
        if (!(rc = write_report(&res, o.prefix))) {
            if (!c.quiet)
                fprintf(stderr, "scm compare: wrote %s.json and %s.md\n", o.prefix, o.prefix);
            rc = c.no_plots ? 0 : cli_plot("scm compare", "plot_compare.py", path, NULL, c.quiet);
        }
    }
    scm_compare_result_free(&res);
    free(text);
    return rc;
}
