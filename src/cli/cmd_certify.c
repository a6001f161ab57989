/* cmd_certify.c: `scm certify`: computer-assisted existence proofs of
 * fixed points (scm_certify_family, scm_certify_fpfile in
 * include/scm/certify.h); the command parses, calls, prints a table and
 * writes the JSON result atomically (docs/certify.md). */
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

/* --max-radius R in (0, 1). */
static int cert_max_radius(const char *me, const char *name, const char *v, void *dst)
{
    double *x = dst;
    if (cli_parse_double(v, x) && *x > 0.0 && *x < 1.0)
        return 0;
    return cli_usage_error(me, "%s needs a number in (0, 1), got '%s'", name, v), -1;
}

/* The proved eigenvalue bound of d H as a column: "> lo" for a strict
 * minimum, "< hi" for a saddle, "-" otherwise. */
static void eig_col(const scm_certify_result *r, char *buf, size_t n)
{
    if (r->strict == 1)
        snprintf(buf, n, ">%.6g", r->lambda_lo);
    else if (r->strict == -1)
        snprintf(buf, n, "<%.6g", r->lambda_neg_hi);
    else
        snprintf(buf, n, "-");
}

static void print_table(const scm_certify_list *l)
{
    printf("%5s %5s %4s %4s %-10s %-22s %-22s %-9s %-13s %s\n", "K", "M", "k1", "idx", "ansatz",
           "loss lo", "loss hi", "radius", "eig(dH)", "verdict");
    for (int i = 0; i < l->n; i++) {
        const scm_certify_entry *e = &l->e[i];
        char k1[16], eig[32];
        snprintf(k1, sizeof k1, e->k1 >= 0 ? "%d" : "-", e->k1);
        eig_col(&e->r, eig, sizeof eig);
        if (e->r.certified)
            printf("%5d %5d %4s %4d %-10s %-22.15g %-22.15g %-9.2g %-13s %s%s%s\n", e->K, e->M, k1,
                   e->index, e->ansatz, e->r.loss_lo, e->r.loss_hi, e->r.radius, eig,
                   e->r.verdict, e->r.reason[0] ? ": " : "", e->r.reason);
        else
            printf("%5d %5d %4s %4d %-10s %-22s %-22s %-9s %-13s %s: %s\n", e->K, e->M, k1,
                   e->index, e->ansatz, "-", "-", "-", "-", e->r.verdict, e->r.reason);
    }
}

static void table_progress(void *ctx, int done, int total)
{
    cli_progress_show(ctx, "certify: rows", done, total, NULL, done == total);
}

/* scm certify --table: the selection checked, the rows certified. */
static scm_status run_table(const char *table, long K, long M, long k1, long dK, long mmin,
                            long mmax, int rows, int quiet, const scm_certify_opts *o,
                            scm_certify_list *l, scm_error *err)
{
    scm_certify_table_sel sel;
    scm_certify_table_sel_default(&sel);
    sel.K = (int)K;
    sel.M = (int)M;
    sel.k1 = k1 >= 0 ? (int)k1 : -1;
    sel.dK = (int)dK;
    sel.M_min = (int)mmin;
    sel.M_max = (int)mmax;
    sel.rows = (scm_certify_rows)rows;
    cli_progress pr;
    cli_progress_start(&pr, 0);
    return scm_certify_table(table, &sel, o, quiet ? NULL : table_progress, &pr, l, err);
}

int scm_cmd_certify(int argc, char **argv)
{
    long K = -1, M = -1, k1 = -2, index = -1, starts = 40, dK = -1, mmin = 1, mmax = 1000000;
    int all = 0, every = 0, minima = 0, rows = 0, quiet = 0;
    const char *point = NULL, *out = NULL, *table = NULL;
    scm_certify_opts o;
    scm_certify_opts_default(&o);
    const cli_opt opts[] = {
        CLI_O("--K", CLI_LONG, &K, 1, 10000, "K", "number of students"),
        CLI_O("--M", CLI_LONG, &M, 1, 10000, "M", "number of teachers"),
        CLI_O("--k1", CLI_LONG, &k1, 0, 10000, "N", "the k1 family's minimum candidates (default 1)"),
        CLI_F("--all", &all, "every k1 = 0 .. K"),
        CLI_F("--every", &every, "every point of the family, saddles too"),
        CLI_O("--point", CLI_STR, &point, 0, 0, "FILE",
              "entry --index I of a `scm fixed-points -o` result (with\n--every: all its "
              "entries, e.g. of --grow-from)"),
        CLI_O("--index", CLI_LONG, &index, 0, 1000000, "I", "the entry of --point"),
        CLI_F("--minima", &minima,
              "with --point: its entries whose block Jacobian is\nstable (the floating-point "
              "minimum candidates)"),
        CLI_O("--starts", CLI_LONG, &starts, 1, 100000, "N",
              "random Newton starts per ansatz instance (40)"),
        CLI_FN_("--max-radius", cert_max_radius, &o.max_radius, "R",
                "largest box radius tried (1e-8)"),
        CLI_O("--table", CLI_STR, &table, 0, 0, "FILE",
              "the rows of a plateau table (CSV of bench/gen_plateau_table)"),
        CLI_O("--M-min", CLI_LONG, &mmin, 1, 1000000, "A", "with --table: rows with M >= A"),
        CLI_O("--M-max", CLI_LONG, &mmax, 1, 1000000, "B", "with --table: rows with M <= B"),
        CLI_O("--dK", CLI_LONG, &dK, 0, 10000, "D", "with --table: rows with K - M = D"),
        CLI_C("--rows", &rows, "minima|block-stable|every", "WHICH",
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
    if (table && (point || all || every || minima || index >= 0))
        return cli_usage_error(ME, "--table goes without --point, --index, --all, --every and "
                                   "--minima");
    if (!table && (dK >= 0 || mmin != 1 || mmax != 1000000 || rows))
        return cli_usage_error(ME, "--M-min, --M-max, --dK and --rows go with --table");
    if (table && mmin > mmax)
        return cli_usage_error(ME, "--M-min %ld exceeds --M-max %ld", mmin, mmax);
    if (minima && (!point || every || index >= 0))
        return cli_usage_error(ME, "--minima goes with --point FILE, without --index or --every");
    every = every || minima;
    if (!table && (point ? (K >= 0 || M >= 0 || all || k1 != -2 || (index < 0) == !every)
              : (K < 0 || M < 0 || index >= 0 || (all && k1 != -2)))) {
        return cli_usage_error(ME, "give --K K --M M [--k1 N | --all], or --point FILE --index "
                                   "I | --every | --minima");
    }
    if (k1 > K && !point && !table)
        return cli_usage_error(ME, "--k1 %ld exceeds K = %ld", k1, K);
    const char *in_file = point ? point : table;
    if (out && cli_check_output(ME, out, in_file ? &in_file : NULL, in_file ? 1 : 0))
        return 2;
    scm_certify_list l = {0};
    scm_error err;
    scm_error_clear(&err);
    if (point && index < 0)
        index = minima ? SCM_CERTIFY_MINIMA : SCM_CERTIFY_EVERY;
    scm_status st = table  ? run_table(table, K, M, k1, dK, mmin, mmax, rows, quiet, &o, &l, &err)
                    : point ? scm_certify_fpfile(point, index, &o, &l, &err)
                          : scm_certify_family((int)K, (int)M, all ? -1 : (k1 == -2 ? 1 : (int)k1),
                                               every, starts, &o, &l, &err);
    if (st) {
        const char *msg = strncmp(err.msg, "certify: ", 9) == 0 ? err.msg + 9 : err.msg;
        fprintf(stderr, "%s: %s\n", ME, msg);
        scm_certify_list_free(&l);
        return st == SCM_EINVAL || st == SCM_EIO ? 2 : 1;
    }
    print_table(&l);
    rc = 0;
    if (out) {
        cJSON *j = scm_certify_list_json(&l, &o);
        if (!j || scm_output_write_json(out, j, 0, &err)) {
            fprintf(stderr, "%s: %s\n", ME, j ? err.msg : "out of memory");
            rc = j ? CLI_EXIT_IO : 1;
        } else
            fprintf(stderr, "wrote %s\n", out);
        cJSON_Delete(j);
    }
    scm_certify_list_free(&l);
    return rc;
}
