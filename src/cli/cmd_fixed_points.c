/* cmd_fixed_points.c: `scm fixed-points`: the fixed points of the flow
 * inside the block-symmetric ansätze (the built-in ones, or files given
 * with --ansatz) at given K and M.  What it computes is one library call,
 * scm_fp_table_run (include/scm/fptable.h); here are the options, the
 * printed table, the JSON result file (written atomically) and the exit
 * status. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/fptable.h"
#include "scm/output.h"

#define ME "scm fixed-points"
#define STR_(x) #x
#define STR(x) STR_(x)

static const char fp_head[] =
    "usage: scm fixed-points --K K --M M [--k1 N] [--ansatz FILE]... [--all]\n"
    "                        [--states none|minima|all] [-o OUT.json]\n"
    "\n"
    "Enumerate the fixed points of the population gradient flow (T = I,\n"
    "v = v* = 1) inside block-symmetric ansätze: Newton's method on the\n"
    "block-level residual from many starts, deduplicated, non-PSD solutions\n"
    "rejected, each checked (and, for small K, polished) in the full (Q, R)\n"
    "space.  Without --ansatz the built-in ansätze (ansatz/*.json) are used.\n"
    "It prints the families table first: per family k1 (the number of\n"
    "anti-aligned students; with K > M also the pattern of the extra\n"
    "students) the lowest-loss strict minimum, its loss and smallest\n"
    "Hessian eigenvalue (exact symmetric spectrum), the numbers of minima\n"
    "and saddles.\n";

/* What the command line asks for besides the table's options. */
typedef struct {
    const char *files[SCM_FP_TABLE_MAX_FILES], *out, *actname;
    int quiet, all;
    cli_progress pr;
} fp_cli;

/* --seed-from FILE: its points read into the seeds (dst). */
static int fp_seed_from(const char *me, const char *name, const char *v, void *dst)
{
    scm_error err;
    (void)name;
    if (scm_fp_table_seeds_read(dst, v, &err) == SCM_OK)
        return 0;
    fprintf(stderr, "%s: %s\n", me, err.msg);
    return -1;
}

/* The command line into o and c: -1 to go on, or the exit status. */
static int fp_parse(int argc, char **argv, scm_fp_table_opts *o, fp_cli *c,
                    scm_fp_table_seeds *seeds)
{
    cli_strs files = {c->files, 0, SCM_FP_TABLE_MAX_FILES};
    const cli_opt opts[] = {
        CLI_O("--K", CLI_LONG, &o->K, 1, 100000, "K", "number of students"),
        CLI_O("--M", CLI_LONG, &o->M, 1, 100000, "M", "number of teachers"),
        CLI_O("--k1", CLI_LONG, &o->k1, 0, 100000, "N",
              "only family N: the points with N anti-aligned students"),
        CLI_O("--ansatz", CLI_STRS, &files, 0, 0, "FILE", "an ansatz file (repeatable)"),
        CLI_OPT_ACTIVATION(&c->actname),
        CLI_O("--starts", CLI_LONG, &o->starts, 0, 1000000, "N",
              "random Newton starts per (ansatz, instance) (default\n200)"),
        CLI_O("--seed", CLI_LONG, &o->seed, 0, 2147483647L, "S",
              "seed of the random starts (default 1)"),
        CLI_O("--sweep-passes", CLI_LONG, &o->sweep_passes, 0, 1000, "P",
              "without --k1, each ansatz's instances seed each\nother (scm_fp_sweep_k1), at "
              "most P passes (default\n" STR(SCM_FP_TABLE_SWEEP_PASSES)
              "; 0 or 1: each instance alone)"),
        CLI_FN_("--seed-from", fp_seed_from, seeds, "FILE",
                "Newton starts from the points of another scm\nfixed-points result (repeatable), "
                "matched by ansatz\nand instance, scalars by name: continuation from\nM - 1 or "
                "a neighbouring (K, M); tried after the\nk1 sweep, so they only add points"),
        CLI_O("--deflate", CLI_LONG, &o->deflate, 0, 1000, "N",
              "deflated Newton: a start that finds nothing new is\nsolved again with the roots "
              "found removed, up to N\ntimes (default " STR(SCM_FP_TABLE_DEFLATE) "; 0: off)"),
        CLI_O("--polish-max-K", CLI_LONG, &o->polish_max_K, 0, 100000, "N",
              "full-space Newton polish when K <= N (default 24)"),
        CLI_O("--chain-from", CLI_LONG, &o->chain_from, 1, 100000, "M0",
              "continuation seeds from every smaller M: the k1 sweep\nat (M0 + K - M, M0), then "
              "each M0 < m <= M seeded\nwith all points of m - 1 (scm_fp_sweep_k1_chain);\nthe "
              "list holds every point of the default"),
        CLI_OPT_THREADS(&o->threads),
        CLI_O("--continue-to", CLI_LONG, &o->continue_to, 1, 1000000, "M1",
              "follow each solution in M (group sizes real) up to M1"),
        CLI_O("--grow-from", CLI_LONG, &o->grow_from, 1, 100000, "M0",
              "block level, for large K: every k1 by continuation in M\nfrom M0 "
              "(scm_fp_sweep_grow): the scalars, loss and\nblock residual of each point, no full "
              "(Q, R) state,\nnot classified (K = M = 1000 in about a second)"),
        CLI_O("--probes", CLI_LONG, &o->probes, 0, 100000, "N",
              "with --grow-from: random starts at N instances at M\n(default M / 100 + 1)"),
        CLI_O("--fixed-k1", CLI_LONG, &o->fixed_k1, 1, 100000, "N",
              "with --grow-from: also the paths with k1 fixed for\nk1 <= N (default 1: only the "
              "proportional paths)"),
        CLI_F("--all", &c->all, "also print every distinct point after the families"),
        CLI_F("--unmerged", &o->all, "list every solution of every ansatz (no merging)"),
        CLI_O("--max-residual", CLI_UNIT, &o->max_residual, 0, 0, "R",
              "a point whose residual is not below R is flagged,\ncounted and kept out of the "
              "families (default 1e-12)"),
        CLI_F("--stability", &o->stability,
              "the symmetric Hessian and Jacobian spectra of every\ndistinct point (not only the "
              "specialised ones) in\nits JSON entry, with progress on stderr"),
        CLI_C("--states", &o->states, "auto|none|minima|all", "S",
              "Q and R in the JSON for: none, minima (the strict\nminima and the points of loss < 1e-6) or all\n(default auto: "
              "all for K <= " STR(SCM_FP_STATES_ALL_MAX_K) ", else minima)"),
        CLI_O("-o", CLI_STR, &c->out, 0, 0, "FILE", "JSON result file"),
        CLI_OPT_QUIET(&c->quiet, "no table, no progress"),
        CLI_OPT_END};
    const cli_cmd cmd = {ME, fp_head, opts,
                         CLI_EXIT_TEXT("0 done (also with points above the residual bound, or a\n"
                                       "family without a minimum), 1 a computation failed"),
                         NULL, 0};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc >= 0)
        return rc;
    o->n_ansatz = files.n;
    scm_error err;
    if (scm_fp_table_opts_named(o, c->actname, &err))
        return cli_usage_error(ME, "%s", err.msg);
    o->ansatz_files = c->files;
    o->seeds = seeds;
    return -1;
}

/* Progress of the stability classification (cli_progress_show). */
static void fp_progress(void *ctx, int done, int total)
{
    fp_cli *c = ctx;
    if (done == 0)
        cli_progress_start(&c->pr, 0);
    else
        cli_progress_show(&c->pr, "stability: points", done, total, NULL, done == total);
}

/* The table printed (unless quiet) and written to c->out: the exit status. */
static int fp_report(const scm_fp_table *t, const fp_cli *c, double max_residual)
{
    int rc = 0;
    scm_error err;
    if (scm_fp_table_status(t, &err))
        rc = cli_fail(ME, &err, 1);
    if (!c->quiet)
        cli_put(stdout, c->all ? scm_fp_table_text_all(t) : scm_fp_table_text(t));
    if (c->out && scm_fp_table_json_fits(t, c->out, &err)) {
        rc = cli_fail(ME, &err, 1);
    } else if (c->out) {
        int w = cli_write_json(ME, c->out, scm_fp_table_json(t), 0);
        rc = w ? w : rc;
    }
    if (!scm_fp_table_residual_ok(t))
        fprintf(stderr, ME ": note: %d fixed point(s) with a residual above %g, flagged in "
                        "the list and kept out of the families table\n",
                scm_fp_table_n_above(t), max_residual);
    return rc;
}

int scm_cmd_fixed_points(int argc, char **argv)
{
    scm_fp_table_opts o;
    scm_fp_table_opts_default(&o);
    fp_cli c = {.actname = "relu"};
    scm_fp_table_seeds *seeds = scm_fp_table_seeds_alloc();
    if (!seeds) {
        fprintf(stderr, ME ": out of memory\n");
        return 1;
    }
    int rc = fp_parse(argc, argv, &o, &c, seeds);
    scm_error err;
    if (rc < 0 && scm_fp_table_opts_check(&o, &err))
        rc = cli_fail(ME, &err, 2);
    if (rc >= 0) {
        scm_fp_table_seeds_free(seeds);
        return rc;
    }
    if (o.stability && !c.quiet) {
        o.progress = fp_progress;
        o.progress_ctx = &c;
    }
    scm_fp_table *t = NULL;
    scm_status st = scm_fp_table_run(&o, &t, &err);
    if (st) {
        /* what a block-level run printed before the ansatz that failed */
        if (t && !c.quiet)
            cli_put(stdout, scm_fp_table_text(t));
        rc = cli_fail(ME, &err, CLI_EXIT_OF(st));
    } else {
        rc = fp_report(t, &c, o.max_residual);
    }
    scm_fp_table_free(t);
    scm_fp_table_seeds_free(seeds);
    return rc;
}
