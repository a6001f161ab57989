/* cmd_sweep.c: `scm sweep` (random-initialisation sweeps written as JSON
 * lines, resumable and shardable) and `scm merge` (shard files -> one
 * summary with Wilson intervals).  The library does both
 * (scm_sweep_file_open, scm_sweep_file_run, scm_sweep_merge; sweepfile.h);
 * here are the options, the progress line, the messages and the exit
 * codes.  The runs are computed by the program's executor (sweep_exec.h),
 * passed down from its main(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "scm/config.h"
#include "scm/output.h"
#include "scm/sweep.h"
#include "scm/sweepfile.h"
#include "sweep_exec.h"

#define MAX_SETS 256

/* ---- scm sweep --------------------------------------------------------- */

static void sweep_usage(FILE *f)
{
    fprintf(f,
            "usage: scm sweep CONFIG.json --runs N [--seed S] [--threads T] [-o RUNS.jsonl]\n"
            "                 [--resume] [--shard i/n] [--families FP.json] [--summary FILE]\n"
            "                 [--set key=value]... [--loose-grad-stop G] [--dead-q Q]\n"
            "                 [--match-rtol R] [--fsync-interval S] [--certify | --certify-global]\n"
            "                 [--quiet]\n"
            "\n"
            "Run N random initialisations of the configured model (init.type random):\n"
            "run i draws its initial state with a seed derived from the base seed S\n"
            "(default: init.seed of the config) and i, integrates to its end and is\n"
            "classified; one JSON line per run is appended to RUNS.jsonl in index order\n"
            "(default: CONFIG's name with .runs.jsonl).  See docs/sweeps.md.\n"
            "\n"
            "  --runs N           number of runs of the whole sweep (>= 1)\n"
            "  --threads T        worker threads (default 1); output does not depend on T\n"
            "  --resume           continue an existing RUNS.jsonl (a truncated last line\n"
            "                     is dropped and rewritten); without it an existing file\n"
            "                     is an error\n"
            "  --shard i/n        only the runs with index = i mod n (0 <= i < n)\n"
            "  --families FILE    families to match final losses against (an array of\n"
            "                     {\"family\", \"k1\", \"loss\"}, or scm fixed-points output)\n"
            "  --summary FILE     also write the summary JSON (as scm merge would)\n"
            "  --loose-grad-stop G  two-stage stopping: stop at max|dy/dtau| < G when the\n"
            "                     state matches a family with k1 = anti-aligned count,\n"
            "                     else go on to integrator.grad_stop (default 0: off)\n"
            "  --dead-q Q         a student with Q_kk < Q counts as dead (default 1e-3)\n"
            "  --match-rtol R     relative loss tolerance of a family match (default 1e-8)\n"
            "  --fsync-interval S fsync the runs file at most every S seconds (default 0:\n"
            "                     after every record); each record is still flushed, so a\n"
            "                     killed sweep loses nothing more, a crashed machine at\n"
            "                     most S seconds of records (--resume redoes them)\n"
            "  --certify          early stop: end a run once it is certified to converge to\n"
            "                     a listed strict minimum, or its loss is below 1e-3 times\n"
            "                     the lowest positive family loss (docs/sweeps.md)\n"
            "  --certify-global   the early stop by the loss rule only (both rules rest\n"
            "                     on nothing more than the classification; the basin\n"
            "                     radii, proved from a Lipschitz bound of the Hessian,\n"
            "                     are small and their certificates cost time)\n"
            "  -q, --quiet        no progress line and no final summary on stderr\n"
            "\n"
            "exit status: 0 done, 2 bad input (also a runs file locked by another\n"
            "process), 4 a file could not be written (the records written stay, for\n"
            "--resume).\n");
}

/* The options of one `scm sweep`. */
typedef struct {
    const char *config, *out, *fam_path, *sum_path;
    const char *sets[MAX_SETS];
    int nsets, quiet, have_seed, certify_flags;
    long runs, threads, shard_i, shard_n;
    double seedd;
    scm_sweep_file_opts fo;
} sweep_args;

static void on_record(const scm_sweep_file *f, void *user)
{
    cli_sweep_progress(f, user, 0);
}

/* Parse argv into a; 0, or the exit status (help: -1 after printing it). */
static int sweep_parse(int argc, char **argv, sweep_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
            sweep_usage(stdout);
            return -1;
        } else if (strcmp(o, "-q") == 0 || strcmp(o, "--quiet") == 0) {
            a->quiet = 1;
        } else if (strcmp(o, "--resume") == 0) {
            a->fo.resume = 1;
        } else if (strcmp(o, "--certify") == 0) {
            a->fo.sweep.certify = 1;
            a->certify_flags |= 1;
        } else if (strcmp(o, "--certify-global") == 0) {
            a->fo.sweep.certify = 2;
            a->certify_flags |= 2;
        } else if (strcmp(o, "-o") == 0 || strcmp(o, "--runs") == 0 || strcmp(o, "--seed") == 0 ||
                   strcmp(o, "--threads") == 0 || strcmp(o, "--shard") == 0 ||
                   strcmp(o, "--families") == 0 || strcmp(o, "--summary") == 0 ||
                   strcmp(o, "--set") == 0 || strcmp(o, "--loose-grad-stop") == 0 ||
                   strcmp(o, "--dead-q") == 0 || strcmp(o, "--match-rtol") == 0 ||
                   strcmp(o, "--fsync-interval") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "scm sweep: option %s needs an argument\n", o);
                return 2;
            }
            const char *v = argv[++i];
            if (strcmp(o, "-o") == 0) {
                a->out = v;
            } else if (strcmp(o, "--runs") == 0) {
                if (!cli_parse_long(v, 1, 1000000000L, &a->runs)) {
                    fprintf(stderr, "scm sweep: --runs must be an integer in [1, 1e9], got '%s'\n", v);
                    return 2;
                }
            } else if (strcmp(o, "--seed") == 0) {
                long s;
                if (!cli_parse_long(v, 0, 9007199254740991L, &s)) {
                    fprintf(stderr, "scm sweep: --seed must be an integer in [0, 2^53), got '%s'\n", v);
                    return 2;
                }
                a->seedd = (double)s;
                a->have_seed = 1;
            } else if (strcmp(o, "--threads") == 0) {
                if (!cli_parse_long(v, 1, 1024, &a->threads)) {
                    fprintf(stderr, "scm sweep: --threads must be an integer in [1, 1024], got '%s'\n", v);
                    return 2;
                }
            } else if (strcmp(o, "--shard") == 0) {
                char buf[64];
                snprintf(buf, sizeof buf, "%s", v);
                char *slash = strchr(buf, '/');
                if (slash)
                    *slash = '\0';
                if (!slash || !cli_parse_long(buf, 0, 1000000, &a->shard_i) ||
                    !cli_parse_long(slash + 1, 1, 1000000, &a->shard_n) || a->shard_i >= a->shard_n) {
                    fprintf(stderr, "scm sweep: --shard must be i/n with 0 <= i < n, got '%s'\n", v);
                    return 2;
                }
            } else if (strcmp(o, "--families") == 0) {
                a->fam_path = v;
            } else if (strcmp(o, "--summary") == 0) {
                a->sum_path = v;
            } else if (strcmp(o, "--set") == 0) {
                if (a->nsets >= MAX_SETS) {
                    fprintf(stderr, "scm sweep: more than %d --set options\n", MAX_SETS);
                    return 2;
                }
                a->sets[a->nsets++] = v;
            } else {
                double x;
                if (!cli_parse_double(v, &x) || x < 0) {
                    fprintf(stderr, "scm sweep: %s must be a number >= 0, got '%s'\n", o, v);
                    return 2;
                }
                if (strcmp(o, "--fsync-interval") == 0)
                    a->fo.fsync_interval = x;
                else if (strcmp(o, "--loose-grad-stop") == 0)
                    a->fo.sweep.loose_grad_stop = x;
                else if (strcmp(o, "--dead-q") == 0)
                    a->fo.sweep.dead_q = x;
                else
                    a->fo.sweep.match_rtol = x;
            }
        } else if (o[0] == '-' && o[1] != '\0') {
            fprintf(stderr, "scm sweep: unknown option '%s' (see scm sweep --help)\n", o);
            return 2;
        } else if (!a->config) {
            a->config = o;
        } else {
            fprintf(stderr, "scm sweep: more than one config file ('%s' and '%s')\n", a->config, o);
            return 2;
        }
    }
    if (!a->config) {
        sweep_usage(stderr);
        return 2;
    }
    if (a->runs < 0) {
        fprintf(stderr, "scm sweep: --runs N is required\n");
        return 2;
    }
    if (a->certify_flags == 3) {
        fprintf(stderr, "scm sweep: --certify and --certify-global exclude each other\n");
        return 2;
    }
    if (a->certify_flags && !a->fam_path) {
        fprintf(stderr, "scm sweep: --certify%s needs --families (the points it certifies "
                        "against)\n", a->certify_flags == 2 ? "-global" : "");
        return 2;
    }
    return 0;
}

/* Run the sweep into its file, write the summary, print the final lines. */
static int sweep_file(const sweep_args *a, scm_sweep_file_opts *fo, const scm_config *c,
                      const scm_sweep_families *fams, const cli_executor *ex)
{
    scm_error err;
    scm_sweep_file *f = NULL;
    cli_progress pc = {0, 0.0, 0.0};
    int progress = !a->quiet && isatty(2);
    if (progress) {
        fo->progress = on_record;
        fo->progress_user = &pc;
    }
    scm_status st = scm_sweep_file_open(a->out, c, fams, fo, &f, &err);
    if (st) {
        fprintf(stderr, "scm sweep: %s\n", err.msg);
        return st == SCM_EIO ? CLI_EXIT_IO : 2;
    }
    long ndone = scm_sweep_file_resumed(f), nidx = scm_sweep_file_total(f);
    pc.done0 = ndone;
    pc.t0 = pc.last = cli_now();
    if (!a->quiet && ndone > 0)
        fprintf(stderr, "scm sweep: resuming '%s' after %ld of %ld runs\n", a->out, ndone, nidx);
    st = scm_sweep_file_run(f, &err);
    double secs = cli_now() - pc.t0;
    if (progress)
        cli_sweep_progress(f, &pc, 1);
    int rc = 0;
    if (st) {
        fprintf(stderr, "scm sweep: %s\n", err.msg);
        rc = st == SCM_EIO ? CLI_EXIT_IO : st == SCM_ENOMEM ? 1 : 2;
    } else if (a->sum_path) {
        cJSON *js = scm_sweep_summary_json(scm_sweep_file_summary(f));
        if (!js || scm_output_write_json(a->sum_path, js, 0, &err)) {
            fprintf(stderr, "scm sweep: %s (the runs file '%s' is complete: scm merge makes the "
                            "summary)\n", js ? err.msg : "out of memory", a->out);
            rc = js ? CLI_EXIT_IO : 1;
        }
        cJSON_Delete(js);
    }
    if (!st && !a->quiet)
        cli_sweep_print_summary(scm_sweep_file_summary(f), nidx, nidx - ndone, secs,
                            ex->width_fn((int)a->threads), ex->unit);
    scm_sweep_file_free(f);
    return rc;
}

int scm_cmd_sweep(int argc, char **argv, const cli_executor *ex)
{
    sweep_args a;
    memset(&a, 0, sizeof a);
    a.runs = -1;
    a.threads = 1;
    a.shard_n = 1;
    scm_sweep_file_opts_default(&a.fo);
    int rc = sweep_parse(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    char why[256];
    if (ex->check_fn((int)a.threads, why, sizeof why) != 0) {
        fprintf(stderr, "scm sweep: %s\n", why);
        return 2;
    }

    scm_error err;
    scm_error_clear(&err);
    scm_config *c = NULL;
    scm_sweep_families fams = {0, NULL, NULL};
    char *out_alloc = NULL;
    rc = 2;
    if (scm_sweep_opts_check(&a.fo.sweep, &err)) {
        fprintf(stderr, "scm sweep: %s\n", err.msg);
        goto done;
    }
    if (scm_config_load(a.config, a.sets, a.nsets, &c, &err)) {
        fprintf(stderr, "scm sweep: %s\n", err.msg);
        goto done;
    }
    if (c->init != SCM_INIT_RANDOM) {
        fprintf(stderr, "scm sweep: %s: a sweep needs init.type = \"random\"\n", a.config);
        goto done;
    }
    if (a.fam_path && cli_load_families(a.fam_path, &fams, &err)) {
        fprintf(stderr, "scm sweep: %s\n", err.msg);
        goto done;
    }
    if (!a.out)
        a.out = out_alloc = cli_output_name(a.config, ".runs.jsonl");
    if (!a.out) {
        fprintf(stderr, "scm sweep: out of memory\n");
        goto done;
    }
    const char *ins[] = {a.config, a.fam_path, a.out};
    if (cli_check_output("scm sweep", a.out, ins, 2) ||
        cli_check_output("scm sweep", a.sum_path, ins, 3))
        goto done;
    a.fo.runs = a.runs;
    a.fo.seed = a.have_seed ? (uint64_t)a.seedd : (uint64_t)c->seed;
    a.fo.shard_i = (int)a.shard_i;
    a.fo.shard_n = (int)a.shard_n;
    a.fo.threads = (int)a.threads;
    a.fo.exec = ex->sweep_fn;
    rc = sweep_file(&a, &a.fo, c, &fams, ex);
done:
    free(out_alloc);
    scm_sweep_families_free(&fams);
    scm_config_free(c);
    return rc;
}

/* ---- scm merge --------------------------------------------------------- */

static void merge_usage(FILE *f)
{
    fprintf(f,
            "usage: scm merge RUNS.jsonl... -o SUMMARY.json [--quiet]\n"
            "\n"
            "Combine the runs files of one sweep (its shards, or a single file) into a\n"
            "summary: counts and fractions per class with 95%% Wilson intervals, runs by\n"
            "anti-aligned count, distinct unmatched losses, the loss histogram, solver\n"
            "work.  The files must come from the same sweep (config, seed, runs and\n"
            "families); a run present twice is an error; missing runs are reported.\n"
            "\n"
            "exit status: 0 merged, 2 bad input, 4 the summary could not be written.\n");
}

int scm_cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    const char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0, quiet = 0;
    if (!files) {
        fprintf(stderr, "scm merge: out of memory\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            merge_usage(stdout);
            free(files);
            return 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "-o") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "scm merge: option -o needs an argument\n");
                free(files);
                return 2;
            }
            out = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "scm merge: unknown option '%s' (see scm merge --help)\n", a);
            free(files);
            return 2;
        } else {
            files[nfiles++] = a;
        }
    }
    if (nfiles == 0 || !out) {
        merge_usage(stderr);
        free(files);
        return 2;
    }
    if (cli_check_output("scm merge", out, files, nfiles)) {
        free(files);
        return 2;
    }
    scm_sweep_merge_result res;
    scm_error err;
    int rc = 0;
    scm_status st = scm_sweep_merge(files, nfiles, &res, &err);
    if (st) {
        fprintf(stderr, "scm merge: %s\n", err.msg);
        rc = st == SCM_ENOMEM ? 1 : 2;
    } else if (scm_output_write_json(out, res.json, 0, &err)) {
        fprintf(stderr, "scm merge: %s\n", err.msg);
        rc = CLI_EXIT_IO;
    } else {
        if (res.missing > 0)
            fprintf(stderr, "scm merge: %ld of %ld runs missing (first: run %ld)\n", res.missing,
                    res.runs, res.first_missing);
        if (!quiet) {
            char brief[400];
            scm_sweep_summary_brief(res.summary, brief, sizeof brief);
            fprintf(stderr, "merged     %ld runs from %d file%s: %s\nwrote      %s\n",
                    res.records, nfiles, nfiles == 1 ? "" : "s", brief, out);
        }
    }
    scm_sweep_merge_result_free(&res);
    free(files);
    return rc;
}
