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

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/config.h"
#include "scm/output.h"
#include "scm/sweep.h"
#include "scm/sweep_text.h"
#include "scm/sweepfile.h"
#include "sweep_exec.h"

#define MAX_SETS 256

/* ---- scm sweep --------------------------------------------------------- */

static const char sweep_head[] =
    "usage: scm sweep CONFIG.json --runs N [--seed S] [--threads T] [-o RUNS.jsonl]\n"
    "                 [--resume] [--shard i/n] [--families FP.json] [--summary FILE]\n"
    "                 [--set key=value]... [--unset key]... [--loose-grad-stop G]\n"
    "                 [--dead-q Q] [--match-rtol R] [--fsync-interval S]\n"
    "                 [--certify | --certify-global] [--quiet]\n"
    "\n"
    "Run N random initialisations of the configured model (init.type random):\n"
    "run i draws its initial state with a seed derived from the base seed S\n"
    "(default: init.seed of the config) and i, integrates to its end and is\n"
    "classified; one JSON line per run is appended to RUNS.jsonl in index order\n"
    "(default: CONFIG's name with .runs.jsonl).  See docs/sweeps.md.\n";

/* The options of one `scm sweep`. */
typedef struct {
    const char *config, *out, *fam_path, *sum_path;
    const char *sets[MAX_SETS], *unsets[MAX_SETS];
    int nsets, nunsets, quiet, threads, certify, certify_global;
    long runs, seed, shard_i, shard_n;
    scm_sweep_file_opts fo;
} sweep_args;

static void on_record(const scm_sweep_file *f, void *user)
{
    cli_sweep_progress(f, user, 0);
}

/* --shard i/n */
static int parse_shard(const char *me, const char *name, const char *v, void *dst)
{
    sweep_args *a = dst;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", v);
    char *slash = strchr(buf, '/');
    if (slash)
        *slash = '\0';
    if (!slash || !cli_parse_long(buf, 0, 1000000, &a->shard_i) ||
        !cli_parse_long(slash + 1, 1, 1000000, &a->shard_n) || a->shard_i >= a->shard_n)
        return cli_usage_error(me, "%s must be i/n with 0 <= i < n, got '%s'", name, v), -1;
    return 0;
}

/* Parse argv into a; -1 to go on, or the exit status. */
static int sweep_parse(int argc, char **argv, sweep_args *a)
{
    cli_strs pos = {&a->config, 0, 1}, set = {a->sets, 0, MAX_SETS},
             unset = {a->unsets, 0, MAX_SETS};
    scm_sweep_opts *so = &a->fo.sweep;
    const cli_opt opts[] = {
        CLI_O("--runs", CLI_LONG, &a->runs, 1, 1000000000L, "N",
              "number of runs of the whole sweep (>= 1)"),
        CLI_O("--seed", CLI_LONG, &a->seed, 0, 9007199254740991L, "S",
              "base seed of the runs (default: init.seed)"),
        CLI_OPT_THREADS(&a->threads),
        CLI_O("-o", CLI_STR, &a->out, 0, 0, "FILE", "the runs file"),
        CLI_F("--resume", &a->fo.resume,
              "continue an existing RUNS.jsonl (a truncated last line\nis dropped and "
              "rewritten); without it an existing file\nis an error"),
        CLI_FN_("--shard", parse_shard, a, "i/n", "only the runs with index = i mod n (0 <= i < n)"),
        CLI_O("--families", CLI_STR, &a->fam_path, 0, 0, "FILE",
              "families to match final losses against (an array of\n{\"family\", \"k1\", "
              "\"loss\"}, or scm fixed-points output)"),
        CLI_O("--summary", CLI_STR, &a->sum_path, 0, 0, "FILE",
              "also write the summary JSON (as scm merge would)"),
        CLI_OPT_SET(&set), CLI_OPT_UNSET(&unset),
        CLI_O("--loose-grad-stop", CLI_NONNEG, &so->loose_grad_stop, 0, 0, "G",
              "two-stage stopping: stop at max|dy/dtau| < G when the\nstate matches a family "
              "with k1 = anti-aligned count,\nelse go on to integrator.grad_stop (default 0: "
              "off)"),
        CLI_O("--dead-q", CLI_NONNEG, &so->dead_q, 0, 0, "Q",
              "a student with Q_kk < Q counts as dead (default 1e-3)"),
        CLI_O("--match-rtol", CLI_NONNEG, &so->match_rtol, 0, 0, "R",
              "relative loss tolerance of a family match (default 1e-8)"),
        CLI_O("--fsync-interval", CLI_NONNEG, &a->fo.fsync_interval, 0, 0, "S",
              "fsync the runs file at most every S seconds (default 0:\nafter every record); "
              "each record is still flushed, so a\nkilled sweep loses nothing more, a crashed "
              "machine at\nmost S seconds of records (--resume redoes them)"),
        CLI_F("--certify", &a->certify,
              "early stop: end a run once it is certified to converge to\na listed strict "
              "minimum, or its loss is below 1e-3 times\nthe lowest positive family loss "
              "(docs/sweeps.md)"),
        CLI_F("--certify-global", &a->certify_global,
              "the early stop by the loss rule only (both rules rest\non nothing more than the "
              "classification; the basin\nradii, proved from a Lipschitz bound of the Hessian,\n"
              "are small and their certificates cost time)"),
        CLI_OPT_QUIET(&a->quiet, "no progress line and no final summary on stderr"),
        CLI_OPT_END};
    const cli_cmd cmd = {"scm sweep", sweep_head, opts,
                         CLI_EXIT_TEXT("0 done, 1 out of memory (2 also: a runs file locked\n"
                                       "by another process; 4: the records written stay, for "
                                       "--resume)"),
                         &pos, 1};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc >= 0)
        return rc;
    a->nsets = set.n;
    a->nunsets = unset.n;
    if (!a->config)
        return cli_usage_error(cmd.me, "CONFIG.json is required");
    if (a->runs < 0)
        return cli_usage_error(cmd.me, "--runs N is required");
    if (a->certify && a->certify_global)
        return cli_usage_error(cmd.me, "--certify and --certify-global exclude each other");
    if ((a->certify || a->certify_global) && !a->fam_path)
        return cli_usage_error(cmd.me, "--certify%s needs --families (the points it certifies "
                                       "against)", a->certify_global ? "-global" : "");
    so->certify = a->certify ? 1 : a->certify_global ? 2 : 0;
    return -1;
}

/* Run the sweep into its file, write the summary, print the final lines. */
static int sweep_file(const sweep_args *a, scm_sweep_file_opts *fo, const scm_config *c,
                      const scm_sweep_families *fams, const cli_executor *ex)
{
    scm_error err;
    scm_sweep_file *f = NULL;
    cli_progress pc = {0, 0.0, 0.0};
    int progress = !a->quiet;
    if (progress) {
        fo->progress = on_record;
        fo->progress_user = &pc;
    }
    scm_status st = scm_sweep_file_open(a->out, c, fams, fo, &f, &err);
    if (st)
        return cli_fail("scm sweep", &err, st == SCM_EIO ? CLI_EXIT_IO : 2);
    long ndone = scm_sweep_file_resumed(f), nidx = scm_sweep_file_total(f);
    cli_progress_start(&pc, ndone);
    if (!a->quiet && ndone > 0)
        fprintf(stderr, "scm sweep: resuming '%s' after %ld of %ld runs\n", a->out, ndone, nidx);
    st = scm_sweep_file_run(f, &err);
    double secs = cli_now() - pc.t0;
    if (progress)
        cli_sweep_progress(f, &pc, 1);
    int rc = 0;
    if (st)
        rc = cli_fail("scm sweep", &err, st == SCM_EIO ? CLI_EXIT_IO : st == SCM_ENOMEM ? 1 : 2);
    else if (a->sum_path) {
        cJSON *js = scm_sweep_summary_json(scm_sweep_file_summary(f));
        if (!js || scm_output_write_json(a->sum_path, js, 0, &err)) {
            fprintf(stderr, "scm sweep: %s (the runs file '%s' is complete: scm merge makes the "
                            "summary)\n", js ? err.msg : "out of memory", a->out);
            rc = js ? CLI_EXIT_IO : 1;
        }
        cJSON_Delete(js);
    }
    if (!st && !a->quiet)
        cli_put(stderr, scm_sweep_summary_text_timed(scm_sweep_file_summary(f), nidx, nidx - ndone,
                                                     secs, ex->width_fn(a->threads), ex->unit));
    scm_sweep_file_free(f);
    return rc;
}

int scm_cmd_sweep(int argc, char **argv, const cli_executor *ex)
{
    sweep_args a;
    memset(&a, 0, sizeof a);
    a.runs = a.seed = -1;
    a.shard_n = 1;
    scm_sweep_file_opts_default(&a.fo);
    int rc = sweep_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if ((a.threads = cli_exec_threads("scm sweep", ex, a.threads)) < 0)
        return 2;

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
    if (cli_config_load("scm sweep", a.config, a.sets, a.nsets, a.unsets, a.nunsets, &c))
        goto done;
    if (scm_sweep_file_setup(c, a.config, a.fam_path, a.seed, &fams, &a.fo, &err)) {
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
    a.fo.shard_i = (int)a.shard_i;
    a.fo.shard_n = (int)a.shard_n;
    a.fo.threads = a.threads;
    a.fo.exec = ex->sweep_fn;
    rc = sweep_file(&a, &a.fo, c, &fams, ex);
done:
    free(out_alloc);
    scm_sweep_families_free(&fams);
    scm_config_free(c);
    return rc;
}

/* ---- scm merge --------------------------------------------------------- */

int scm_cmd_merge(int argc, char **argv)
{
    const char *out = NULL;
    const char **files = calloc((size_t)argc, sizeof *files);
    int quiet = 0;
    if (!files) {
        fprintf(stderr, "scm merge: out of memory\n");
        return 1;
    }
    cli_strs pos = {files, 0, argc};
    const cli_opt opts[] = {
        CLI_O("-o", CLI_STR, &out, 0, 0, "FILE", "the summary (required)"),
        CLI_OPT_QUIET(&quiet, "no summary lines on stderr"), CLI_OPT_END};
    const cli_cmd cmd = {
        "scm merge",
        "usage: scm merge RUNS.jsonl... -o SUMMARY.json [--quiet]\n"
        "\n"
        "Combine the runs files of one sweep (its shards, or a single file) into a\n"
        "summary: counts and fractions per class with 95% Wilson intervals, runs by\n"
        "anti-aligned count, distinct unmatched losses, the loss histogram, solver\n"
        "work.  The files must come from the same sweep (config, seed, runs and\n"
        "families); a run present twice is an error; missing runs are reported.\n",
        opts, CLI_EXIT_TEXT("0 merged, 1 out of memory"), &pos, 0};
    int rc = cli_parse(&cmd, argc, argv);
    const int nfiles = pos.n;
    if (rc < 0 && (nfiles == 0 || !out))
        rc = cli_usage_error(cmd.me, "usage: scm merge RUNS.jsonl... -o SUMMARY.json");
    if (rc < 0 && cli_check_output("scm merge", out, files, nfiles))
        rc = 2;
    if (rc >= 0) {
        free(files);
        return rc;
    }
    scm_sweep_merge_result res;
    scm_error err;
    rc = 0;
    scm_status st = scm_sweep_merge(files, nfiles, &res, &err);
    if (st)
        rc = cli_fail("scm merge", &err, st == SCM_ENOMEM ? 1 : 2);
    else if (scm_output_write_json(out, res.json, 0, &err))
        rc = cli_fail("scm merge", &err, CLI_EXIT_IO);
    else {
        if (res.missing > 0)
            fprintf(stderr, "scm merge: %ld of %ld runs missing (first: run %ld)\n", res.missing,
                    res.runs, res.first_missing);
        if (!quiet)
            cli_put(stderr, scm_sweep_merge_text(&res, nfiles, out));
    }
    scm_sweep_merge_result_free(&res);
    free(files);
    return rc;
}
