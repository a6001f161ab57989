/* cmd_compare.c: `scm compare`: one sweep per K (same M, rule, init and
 * integrator), the families each K reaches with their stability verdicts,
 * and one report (JSON + Markdown) with Wilson intervals.  The comparison
 * is scm_compare_run (compare.h); here are the options, the messages of
 * its events, the report files and the figures. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_plot.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/compare.h"
#include "scm/output.h"
#include "scm/sweepfile.h"
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
            "to get them), 1 a failure while running (a plotting failure keeps the\n"
            "JSON and Markdown report), 2 bad input (refused before any file is\n"
            "written), 4 a file could not be written.\n");
}

/* What the command line asks for besides the comparison's options. */
typedef struct {
    const char *config, *seed, *threads;
    const char *sets[MAX_SETS];
    int quiet, no_plots;
    char pbuf[64];
} compare_cli;

/* Parse argv into o and c: 0, -1 after --help, or the exit status 2. */
static int compare_parse(int argc, char **argv, scm_compare_opts *o, compare_cli *c)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            compare_usage(stdout);
            return -1;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            c->quiet = 1;
        } else if (strcmp(a, "--no-stability") == 0) {
            o->no_stability = 1;
        } else if (strcmp(a, "--no-plots") == 0) {
            c->no_plots = 1;
        } else if (strcmp(a, "--certify") == 0 || strcmp(a, "--certify-global") == 0) {
            int want = strcmp(a, "--certify") == 0 ? 1 : 2; /* early stop; its loss rule only */
            if (o->certify && o->certify != want) {
                fprintf(stderr, "scm compare: --certify and --certify-global exclude each other\n");
                return 2;
            }
            o->certify = want;
        } else if (a[0] == '-' && a[1] != '\0') {
            if (i + 1 >= argc) {
                fprintf(stderr, "scm compare: option %s needs an argument\n", a);
                return 2;
            }
            const char *v = argv[++i];
            if (strcmp(a, "--M") == 0) {
                if (!cli_parse_long(v, 1, 100000, &o->M)) {
                    fprintf(stderr, "scm compare: --M must be an integer >= 1, got '%s'\n", v);
                    return 2;
                }
            } else if (strcmp(a, "--K") == 0) {
                char buf[512];
                snprintf(buf, sizeof buf, "%s", v);
                for (char *tok = buf, *next; tok; tok = next) {
                    next = strchr(tok, ',');
                    if (next)
                        *next++ = '\0';
                    int dup = 0;
                    for (int q = 0; q < o->nK && o->nK < 64; q++)
                        dup |= cli_parse_long(tok, 1, 100000, &o->K[o->nK]) && o->K[q] == o->K[o->nK];
                    if (dup) {
                        fprintf(stderr, "scm compare: --K lists K = %s twice ('%s')\n", tok, v);
                        return 2;
                    }
                    if (o->nK >= 64 || !cli_parse_long(tok, 1, 100000, &o->K[o->nK])) {
                        fprintf(stderr, "scm compare: --K must be a list of up to 64 integers "
                                        ">= 1, got '%s'\n", v);
                        return 2;
                    }
                    o->nK++;
                }
            } else if (strcmp(a, "--runs") == 0) {
                if (!cli_parse_long(v, 1, 1000000000L, &o->runs)) {
                    fprintf(stderr, "scm compare: --runs must be an integer in [1, 1e9], got '%s'\n", v);
                    return 2;
                }
            } else if (strcmp(a, "--traces") == 0) {
                long t;
                if (!cli_parse_long(v, 0, 100, &t)) {
                    fprintf(stderr, "scm compare: --traces must be in [0, 100], got '%s'\n", v);
                    return 2;
                }
                o->traces = (int)t;
            } else if (strcmp(a, "--seed") == 0) {
                c->seed = v;
            } else if (strcmp(a, "--threads") == 0) {
                c->threads = v;
            } else if (strcmp(a, "-o") == 0) {
                o->prefix = v;
            } else if (strcmp(a, "--set") == 0) {
                if (o->nsets >= MAX_SETS - 2) {
                    fprintf(stderr, "scm compare: too many --set options\n");
                    return 2;
                }
                c->sets[o->nsets++] = v;
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
                while (j < o->nK && o->K[j] != k)
                    j++;
                if (j == o->nK) {
                    fprintf(stderr, "scm compare: --families %s: K = %ld is not in --K (give "
                                    "--K first)\n", v, k);
                    return 2;
                }
                o->families[j] = eq + 1;
            } else {
                fprintf(stderr, "scm compare: unknown option '%s' (see scm compare --help)\n", a);
                return 2;
            }
        } else if (!c->config) {
            c->config = a;
        } else {
            fprintf(stderr, "scm compare: more than one config file\n");
            return 2;
        }
    }
    if (o->M < 0 || o->nK == 0 || o->runs < 0) {
        fprintf(stderr, "scm compare: --M, --K and --runs are required\n");
        compare_usage(stderr);
        return 2;
    }
    return 0;
}

/* The printing of the comparison's events: as `scm sweep` prints its own. */
typedef struct {
    int quiet, progress, threads;
    const cli_executor *ex;
    cli_progress pc;
} compare_print;

static void on_event(const scm_compare_event *e, void *user)
{
    compare_print *p = user;
    if (e->kind == SCM_COMPARE_NOTE) {
        if (!p->quiet)
            fprintf(stderr, "scm compare: %s\n", e->text);
    } else if (e->kind == SCM_COMPARE_SWEEP_START) {
        long ndone = scm_sweep_file_resumed(e->sweep);
        p->pc.done0 = ndone;
        p->pc.t0 = p->pc.last = cli_now();
        if (!p->quiet && ndone > 0)
            fprintf(stderr, "scm sweep: resuming '%s' after %ld of %ld runs\n", e->path, ndone,
                    scm_sweep_file_total(e->sweep));
    } else if (e->kind == SCM_COMPARE_SWEEP_RECORD) {
        if (p->progress)
            cli_sweep_progress(e->sweep, &p->pc, 0);
    } else {
        double secs = cli_now() - p->pc.t0;
        if (e->ran && p->progress)
            cli_sweep_progress(e->sweep, &p->pc, 1);
        if (e->status)
            fprintf(stderr, "scm sweep: %s\n", e->err->msg);
        if (e->run_ok && !p->quiet) {
            long total = scm_sweep_file_total(e->sweep);
            cli_sweep_print_summary(scm_sweep_file_summary(e->sweep), total,
                                    total - p->pc.done0, secs, p->ex->width_fn(p->threads), p->ex->unit);
        }
    }
}

/* PREFIX.md, written atomically: 0, or the exit status. */
static int write_markdown(const scm_compare_result *res, const char *prefix)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.md", prefix);
    char *text = scm_compare_markdown(res, prefix);
    if (!text) {
        fprintf(stderr, "scm compare: out of memory\n");
        return 1;
    }
    scm_error err;
    scm_status st = scm_output_write_atomic(path, text, strlen(text), &err);
    free(text);
    if (st) {
        fprintf(stderr, "scm compare: %s\n", err.msg);
        return st == SCM_EIO ? CLI_EXIT_IO : 2;
    }
    return 0;
}

/* No output of the comparison may be one of its inputs (the config, a
 * families file) or a path scm_output_check_path refuses: 0, or 2. */
static int compare_check_outputs(const scm_compare_opts *o, const char *config)
{
    static const char *const sfx[] = {".config.json", ".runs.jsonl", ".summary.json",
                                      ".families.json"};
    const char *ins[SCM_COMPARE_MAX_K + 1];
    int nin = 0;
    ins[nin++] = config;
    for (int j = 0; j < o->nK; j++)
        ins[nin++] = o->families[j];
    char path[4200];
    snprintf(path, sizeof path, "%s.json", o->prefix);
    if (cli_check_output("scm compare", path, ins, nin))
        return 2;
    snprintf(path, sizeof path, "%s.md", o->prefix);
    if (cli_check_output("scm compare", path, ins, nin))
        return 2;
    for (int j = 0; j < o->nK; j++)
        for (int q = 0; q < 4; q++) {
            snprintf(path, sizeof path, "%s.K%ld%s", o->prefix, o->K[j], sfx[q]);
            if (q == 3 && o->families[j] && strcmp(path, o->families[j]) == 0)
                continue; /* the families given are read, this name is not written */
            for (int i = 0; i < nin; i++)
                if (ins[i] && scm_output_same_file(path, ins[i]) &&
                    !(q == 3 && i == j + 1)) {
                    fprintf(stderr, "scm compare: the output '%s' is also an input ('%s'); "
                                    "refused\n", path, ins[i]);
                    return 2;
                }
        }
    return 0;
}

/* The failure of the comparison reported: the exit status. */
static int compare_failed(const scm_compare_result *res, const scm_error *err)
{
    if (res->failed_part == SCM_COMPARE_PART_ENUMERATION) {
        fprintf(stderr, "scm fixed-points: %s\n", err->msg);
        fprintf(stderr, "scm compare: K = %ld: the family enumeration failed\n", res->failed_K);
    } else if (res->failed_part != SCM_COMPARE_PART_SWEEP) {
        fprintf(stderr, "scm compare: %s\n", err->msg); /* a sweep's: printed at its end */
    }
    return res->failed_input ? 2 : err->code == SCM_EIO ? CLI_EXIT_IO : 1;
}

int scm_cmd_compare(int argc, char **argv, const cli_executor *ex)
{
    scm_compare_opts o;
    scm_compare_opts_default(&o);
    compare_cli c;
    memset(&c, 0, sizeof c);
    c.threads = "1";
    int rc = compare_parse(argc, argv, &o, &c);
    if (rc)
        return rc < 0 ? 0 : rc;
    long nthreads, seed;
    char why[256];
    if (!cli_parse_long(c.threads, 1, 1024, &nthreads)) {
        fprintf(stderr, "scm compare: --threads must be an integer in [1, 1024], got '%s'\n",
                c.threads);
        return 2;
    }
    if (ex->check_fn((int)nthreads, why, sizeof why) != 0) { /* scm-mpi: before any file */
        fprintf(stderr, "scm compare: %s\n", why);
        return 2;
    }
    if (c.seed && !cli_parse_long(c.seed, 0, 9007199254740991L, &seed)) {
        fprintf(stderr, "scm compare: --seed must be an integer in [0, 2^53), got '%s'\n",
                c.seed);
        return 2;
    }
    if (!o.prefix) {
        snprintf(c.pbuf, sizeof c.pbuf, "compare_M%ld", o.M);
        o.prefix = c.pbuf;
    }
    char *text = NULL;
    size_t tlen = 0;
    if (c.config) {
        text = cli_read_all(c.config, &tlen);
        if (!text) {
            fprintf(stderr, "scm compare: cannot read '%s': %s\n", c.config, strerror(errno));
            return 2;
        }
    }
    if ((rc = compare_check_outputs(&o, c.config))) {
        free(text);
        return rc;
    }
    o.config_text = text;
    o.config_name = c.config;
    o.sets = c.sets;
    o.have_seed = c.seed != NULL;
    o.seed = c.seed ? (uint64_t)(double)seed : 0;
    o.threads = (int)nthreads;
    o.exec = ex->sweep_fn;
    compare_print pr = {c.quiet, !c.quiet && isatty(2), (int)nthreads, ex, {0, 0.0, 0.0}};
    o.event = on_event;
    o.event_user = &pr;
    scm_compare_result res;
    scm_error err;
    char path[4096];
    if (scm_compare_run(&o, &res, &err)) {
        rc = compare_failed(&res, &err);
    } else {
        snprintf(path, sizeof path, "%s.json", o.prefix);
        if (scm_output_write_json(path, res.report, 0, &err)) {
            fprintf(stderr, "scm compare: %s\n", err.msg);
            rc = CLI_EXIT_IO;
        } else if ((rc = write_markdown(&res, o.prefix))) {
            struct stat sb; /* the report is its .json and .md: both or neither */
            if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode))
                remove(path);
        } else {
            if (!c.quiet)
                fprintf(stderr, "scm compare: wrote %s.json and %s.md\n", o.prefix, o.prefix);
            rc = c.no_plots ? 0 : cli_plot("scm compare", "plot_compare.py", path, c.quiet);
        }
    }
    scm_compare_result_free(&res);
    free(text);
    return rc;
}
