/* cmd_certify.c: `scm certify`: computer-assisted existence proofs of
 * fixed points (scm_certify_family, scm_certify_fpfile in
 * include/scm/certify.h, run as scm_certify_args_run asks after
 * scm_certify_args_check); the command parses, calls, prints the table of
 * scm_certify_list_text and writes the JSON result atomically
 * (docs/certify.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/certify.h"
#include "scm/output.h"

#define ME "scm certify"

static const char cert_head[] =
    "usage: scm certify --K K --M M [--k1 N | --all] [--every] [-o OUT.json]\n"
    "       scm certify --point FP.json --index I | --every | --minima [-o OUT.json]\n"
    "       scm certify --table PLATEAU.csv [--K K] [--M M] [--M-min A] [--M-max B] [--dK D]\n"
    "                   [--k1 N] [--rows minima|block-stable|every] [-q] [-o OUT.json]\n"
    "\n"
    "Prove in ball arithmetic (Arb) that a true fixed point of the flow lies in a\n"
    "small box around each listed one: the Krawczyk operator of the block-level\n"
    "residual, every angle away from 0 and pi, the point realisable by weights\n"
    "(ReLU, T = I, v = v* = 1, built-in ansatze); then strictness: the\n"
    "symmetry-adapted Hessian in balls, positive definite (a strict local minimum\n"
    "for every d >= M) or with a negative eigenvalue (a saddle).  eig(dH): the\n"
    "proved lower bound of the smallest eigenvalue of d H (> lo), or an upper\n"
    "bound of a negative one (< hi).  --table: the rows of a plateau table (e.g.\n"
    "data/plateau_table_M100.csv) from their stored scalars, each polished by Newton\n"
    "in double first; --K, --M, --k1 (its family_n_anti) then select rows, and idx is\n"
    "the row's line in the file.\n";

static void table_progress(void *ctx, int done, int total)
{
    cli_progress_show(ctx, "certify: rows", done, total, NULL, done == total);
}

int scm_cmd_certify(int argc, char **argv)
{
    scm_certify_args a;
    scm_certify_args_default(&a);
    int quiet = 0;
    const char *out = NULL;
    scm_certify_opts o;
    scm_certify_opts_default(&o);
    const cli_opt opts[] = {
        CLI_O("--K", CLI_LONG, &a.K, 1, 10000, "K", "number of students"),
        CLI_O("--M", CLI_LONG, &a.M, 1, 10000, "M", "number of teachers"),
        CLI_O("--k1", CLI_LONG, &a.k1, 0, 10000, "N", "the k1 family's minimum candidates (default 1)"),
        CLI_F("--all", &a.all, "every k1 = 0 .. K"),
        CLI_F("--every", &a.every, "every point of the family, saddles too"),
        CLI_O("--point", CLI_STR, &a.point, 0, 0, "FILE",
              "entry --index I of a `scm fixed-points -o` result (with\n--every: all its "
              "entries, e.g. of --grow-from)"),
        CLI_O("--index", CLI_LONG, &a.index, 0, 1000000, "I", "the entry of --point"),
        CLI_F("--minima", &a.minima,
              "with --point: its entries whose block Jacobian is\nstable (the floating-point "
              "minimum candidates)"),
        CLI_O("--starts", CLI_LONG, &a.starts, 1, 100000, "N",
              "random Newton starts per ansatz instance (40)"),
        CLI_O("--max-radius", CLI_UNIT, &o.max_radius, 0, 0, "R", "largest box radius tried (1e-8)"),
        CLI_O("--table", CLI_STR, &a.table, 0, 0, "FILE",
              "the rows of a plateau table (CSV of bench/gen_plateau_table)"),
        CLI_O("--M-min", CLI_LONG, &a.M_min, 1, 1000000, "A", "with --table: rows with M >= A"),
        CLI_O("--M-max", CLI_LONG, &a.M_max, 1, 1000000, "B", "with --table: rows with M <= B"),
        CLI_O("--dK", CLI_LONG, &a.dK, 0, 10000, "D", "with --table: rows with K - M = D"),
        CLI_C("--rows", &a.rows, "minima|block-stable|every", "WHICH",
              "with --table: minima (min_candidate, global_min and\ndegenerate; the default), block-stable "
              "(block_max_eig <= 1e-6) or every row"),
        CLI_OPT_QUIET(&quiet, "no progress lines (--table)"),
        CLI_O("-o", CLI_STR, &out, 0, 0, "FILE", "JSON result"),
        CLI_OPT_END};
    const cli_cmd cmd = {ME, cert_head, opts,
                         CLI_EXIT_TEXT("0 done (certified or not), 1 a computation failed"), NULL,
                         0};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc >= 0)
        return rc;
    scm_certify_list l = {0};
    scm_error err;
    scm_error_clear(&err);
    if (scm_certify_args_check(&a, &err))
        return cli_usage_error(ME, "%s", err.msg);
    const char *in_file = a.point ? a.point : a.table;
    if (out && cli_check_output(ME, out, in_file ? &in_file : NULL, in_file ? 1 : 0))
        return 2;
    cli_progress pr;
    cli_progress_start(&pr, 0);
    scm_status st = scm_certify_args_run(&a, &o, quiet ? NULL : table_progress, &pr, &l, &err);
    char *text = st ? NULL : scm_certify_list_text(&l);
    if (st || !text) {
        const char *msg = strncmp(err.msg, "certify: ", 9) == 0 ? err.msg + 9 : err.msg;
        fprintf(stderr, "%s: %s\n", ME, st ? msg : "out of memory");
        scm_certify_list_free(&l);
        return st == SCM_EINVAL || st == SCM_EIO ? 2 : 1;
    }
    fputs(text, stdout);
    free(text);
    rc = out ? cli_write_json(ME, out, scm_certify_list_json(&l, &o), 0) : 0;
    if (out && !rc)
        fprintf(stderr, "wrote %s\n", out);
    scm_certify_list_free(&l);
    return rc;
}
