/* cmd_fixed_points.c: `scm fixed-points`: the fixed points of the flow
 * inside the block-symmetric ansätze (the built-in ones, or files given
 * with --ansatz) at given K and M.  What it computes is one library call,
 * scm_fp_table_run (include/scm/fptable.h); here are the options, the
 * printed table, the JSON result file (written atomically) and the exit
 * status. */
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "scm/fptable.h"
#include "scm/output.h"

#define ME "scm fixed-points"
#define STR_(x) #x
#define STR(x) STR_(x)

static void fp_usage(FILE *f)
{
    fprintf(f,
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
            "and saddles.\n"
            "\n"
            "  --K K, --M M       numbers of students and teachers\n"
            "  --k1 N             only family N: the points with N anti-aligned students\n"
            "  --ansatz FILE      an ansatz file (repeatable)\n"
            "  --activation NAME  relu (default), erf or linear\n"
            "  --starts N         random Newton starts per (ansatz, k1) (default 200)\n"
            "  --seed S           seed of the random starts (default 1)\n"
            "  --sweep-passes P   without --k1, each ansatz's k1 instances seed each\n"
            "                     other (scm_fp_sweep_k1), at most P passes (default\n"
            "                     " STR(SCM_FP_TABLE_SWEEP_PASSES) "; 0 or 1: each k1 alone)\n"
            "  --seed-from FILE   Newton starts from the points of another scm\n"
            "                     fixed-points result (repeatable), matched by ansatz\n"
            "                     and k1, scalars by name: continuation from M - 1\n"
            "                     or a neighbouring (K, M); tried after the k1 sweep,\n"
            "                     so they only add points\n"
            "  --deflate N        deflated Newton: a start that finds nothing new is\n"
            "                     solved again with the roots found removed, up to N\n"
            "                     times (default " STR(SCM_FP_TABLE_DEFLATE) "; 0: off)\n"
            "  --polish-max-K N   full-space Newton polish when K <= N (default 24)\n"
            "  --chain-from M0    continuation seeds from every smaller M: the k1 sweep\n"
            "                     at (M0 + K - M, M0), then each M0 < m <= M seeded\n"
            "                     with all points of m - 1 (scm_fp_sweep_k1_chain);\n"
            "                     the list holds every point of the default\n"
            "  --threads T        threads (default: the processors online, at most\n"
            "                     16); the result does not depend on T\n"
            "  --continue-to M1   follow each solution in M (group sizes real) up to M1\n"
            "  --grow-from M0     block level, for large K: every k1 by continuation in M\n"
            "                     from M0 (scm_fp_sweep_grow): the scalars, loss and\n"
            "                     block residual of each point, no full (Q, R) state,\n"
            "                     not classified (K = M = 1000 in about a second)\n"
            "  --probes N         with --grow-from: random starts at N instances at M\n"
            "                     (default M / 100 + 1)\n"
            "  --fixed-k1 N       with --grow-from: also the paths with k1 fixed for\n"
            "                     k1 <= N (default 1: only the proportional paths)\n"
            "  --all              also print every distinct point after the families\n"
            "  --unmerged         list every solution of every ansatz (no merging)\n"
            "  --max-residual R   a point whose residual is not below R is flagged,\n"
            "                     counted and kept out of the families (default 1e-12)\n"
            "  --stability        the symmetric Hessian and Jacobian spectra of every\n"
            "                     distinct point (not only the specialised ones) in\n"
            "                     its JSON entry, with progress on stderr\n"
            "  --states S         Q and R in the JSON for: none, minima (the strict\n"
            "                     minima) or all (default: all for K <= " STR(SCM_FP_STATES_ALL_MAX_K) ", else minima)\n"
            "  -o FILE            JSON result file\n"
            "  -q, --quiet        no table\n"
            "\n"
            "exit status: 0 done (also with points above the residual bound, or a\n"
            "family without a minimum), 1 a computation failed, 2 bad input.\n");
}

/* The exit status of a failed library call: 2 for bad input. */
static int fp_exit_status(scm_status st)
{
    return st == SCM_EINVAL || st == SCM_EIO ? 2 : 1;
}

/* What the command line asks for besides the table's options. */
typedef struct {
    const char *files[SCM_FP_TABLE_MAX_FILES], *out, *actname;
    int quiet, all;
    time_t t0, last; /* progress: start, last line */
} fp_cli;

/* One option that takes a value (a at argv[i], v its value): 0, or the
 * exit status after naming the problem on stderr. */
static int fp_option(const char *a, const char *v, scm_fp_table_opts *o, fp_cli *c,
                     scm_fp_table_seeds *seeds)
{
    long threads = o->threads;
    int bad = 0;
    if (strcmp(a, "--K") == 0)
        bad = cli_opt_long(ME, a, v, 1, 100000, &o->K);
    else if (strcmp(a, "--M") == 0)
        bad = cli_opt_long(ME, a, v, 1, 100000, &o->M);
    else if (strcmp(a, "--k1") == 0)
        bad = cli_opt_long(ME, a, v, 0, 100000, &o->k1);
    else if (strcmp(a, "--starts") == 0)
        bad = cli_opt_long(ME, a, v, 0, 1000000, &o->starts);
    else if (strcmp(a, "--seed") == 0)
        bad = cli_opt_long(ME, a, v, 0, 2147483647L, &o->seed);
    else if (strcmp(a, "--sweep-passes") == 0)
        bad = cli_opt_long(ME, a, v, 0, 1000, &o->sweep_passes);
    else if (strcmp(a, "--deflate") == 0)
        bad = cli_opt_long(ME, a, v, 0, 1000, &o->deflate);
    else if (strcmp(a, "--polish-max-K") == 0)
        bad = cli_opt_long(ME, a, v, 0, 100000, &o->polish_max_K);
    else if (strcmp(a, "--threads") == 0) {
        bad = cli_opt_long(ME, a, v, 1, 64, &threads);
        o->threads = (int)threads;
    } else if (strcmp(a, "--chain-from") == 0)
        bad = cli_opt_long(ME, a, v, 1, 100000, &o->chain_from);
    else if (strcmp(a, "--grow-from") == 0)
        bad = cli_opt_long(ME, a, v, 1, 100000, &o->grow_from);
    else if (strcmp(a, "--probes") == 0)
        bad = cli_opt_long(ME, a, v, 0, 100000, &o->probes);
    else if (strcmp(a, "--fixed-k1") == 0)
        bad = cli_opt_long(ME, a, v, 1, 100000, &o->fixed_k1);
    else if (strcmp(a, "--continue-to") == 0)
        bad = cli_opt_long(ME, a, v, 1, 1000000, &o->continue_to);
    else if (strcmp(a, "--max-residual") == 0) {
        char *end;
        o->max_residual = strtod(v, &end);
        if (*v == '\0' || *end != '\0' || !(o->max_residual > 0.0 && o->max_residual < 1.0)) {
            fprintf(stderr, ME ": --max-residual needs a number in (0, 1), got '%s'\n", v);
            bad = -1;
        }
    } else if (strcmp(a, "--states") == 0) {
        o->states = strcmp(v, "none") == 0     ? SCM_FP_STATES_NONE
                    : strcmp(v, "minima") == 0 ? SCM_FP_STATES_MINIMA
                    : strcmp(v, "all") == 0    ? SCM_FP_STATES_ALL
                                               : -1;
        if (o->states < 0) {
            fprintf(stderr, ME ": --states needs none, minima or all, got '%s'\n", v);
            bad = -1;
        }
    } else if (strcmp(a, "--activation") == 0)
        c->actname = v;
    else if (strcmp(a, "-o") == 0)
        c->out = v;
    else if (strcmp(a, "--seed-from") == 0) {
        scm_error err;
        scm_status st = scm_fp_table_seeds_read(seeds, v, &err);
        if (st) {
            fprintf(stderr, ME ": %s\n", err.msg);
            return fp_exit_status(st);
        }
    } else if (strcmp(a, "--ansatz") == 0) {
        if (o->n_ansatz == SCM_FP_TABLE_MAX_FILES) {
            fprintf(stderr, ME ": at most %d --ansatz files\n", SCM_FP_TABLE_MAX_FILES);
            return 2;
        }
        c->files[o->n_ansatz++] = v;
    } else {
        fprintf(stderr, ME ": unknown option '%s'\n", a);
        fp_usage(stderr);
        return 2;
    }
    return bad ? 2 : 0;
}

/* The command line into o and c: -1 to go on, or the exit status. */
static int fp_parse(int argc, char **argv, scm_fp_table_opts *o, fp_cli *c,
                    scm_fp_table_seeds *seeds)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fp_usage(stdout);
            return 0;
        } else if (strcmp(a, "--unmerged") == 0) {
            o->all = 1;
            takes = 0;
        } else if (strcmp(a, "--all") == 0) {
            c->all = 1;
            takes = 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            c->quiet = 1;
            takes = 0;
        } else if (strcmp(a, "--stability") == 0) {
            o->stability = 1;
            takes = 0;
        }
        if (takes && !v) {
            fprintf(stderr, ME ": unknown option or missing value: '%s'\n", a);
            fp_usage(stderr);
            return 2;
        }
        if (!takes)
            continue;
        int rc = fp_option(a, v, o, c, seeds);
        if (rc)
            return rc;
        i++;
    }
    if (o->K < 0 || o->M < 0) {
        fprintf(stderr, ME ": --K and --M are required\n");
        fp_usage(stderr);
        return 2;
    }
    o->act = scm_activation_find(c->actname);
    if (!o->act) {
        fprintf(stderr, ME ": unknown activation '%s' (relu, erf, linear)\n", c->actname);
        return 2;
    }
    o->ansatz_files = c->files;
    o->seeds = seeds;
    return -1;
}

/* Progress of the stability classification on stderr: a line every few
 * seconds (each point on a terminal), and the last one. */
static void fp_progress(void *ctx, int done, int total)
{
    fp_cli *c = ctx;
    time_t now = time(NULL);
    int tty = isatty(STDERR_FILENO);
    if (done == 0) {
        c->t0 = c->last = now;
        return;
    }
    if (done < total && now - c->last < (tty ? 0 : 5))
        return;
    c->last = now;
    double el = difftime(now, c->t0);
    double left = done > 0 ? el * (total - done) / done : 0.0;
    fprintf(stderr, "%sstability %d/%d points, %.0f s, about %.0f s left%s", tty ? "\r" : "",
            done, total, el, left, tty && done < total ? "" : "\n");
    fflush(stderr);
}

/* The table printed (unless quiet) and written to c->out: the exit status. */
static int fp_report(const scm_fp_table *t, const fp_cli *c, double max_residual)
{
    int rc = 0;
    scm_error err;
    if (scm_fp_table_status(t, &err)) {
        fprintf(stderr, ME ": %s\n", err.msg);
        rc = 1;
    }
    if (!c->quiet) {
        char *text = c->all ? scm_fp_table_text_all(t) : scm_fp_table_text(t);
        if (text)
            fputs(text, stdout);
        free(text);
    }
    if (c->out && scm_fp_table_json_fits(t, c->out, &err)) {
        fprintf(stderr, ME ": %s\n", err.msg);
        rc = 1;
    } else if (c->out) {
        cJSON *root = scm_fp_table_json(t);
        if (!root || scm_output_write_json(c->out, root, 0, &err)) {
            fprintf(stderr, ME ": %s\n", root ? err.msg : "out of memory");
            rc = 1;
        }
        cJSON_Delete(root);
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
    if (rc < 0 && scm_fp_table_opts_check(&o, &err)) {
        fprintf(stderr, ME ": %s\n", err.msg);
        rc = 2;
    }
    if (rc >= 0) {
        scm_fp_table_seeds_free(seeds);
        return rc;
    }
    gsl_set_error_handler_off();
    if (o.stability) {
        o.progress = fp_progress;
        o.progress_ctx = &c;
    }
    scm_fp_table *t = NULL;
    scm_status st = scm_fp_table_run(&o, &t, &err);
    if (st) {
        /* what a block-level run printed before the ansatz that failed */
        char *text = t && !c.quiet ? scm_fp_table_text(t) : NULL;
        if (text)
            fputs(text, stdout);
        free(text);
        fprintf(stderr, ME ": %s\n", err.msg);
        rc = fp_exit_status(st);
    } else {
        rc = fp_report(t, &c, o.max_residual);
    }
    scm_fp_table_free(t);
    scm_fp_table_seeds_free(seeds);
    return rc;
}
