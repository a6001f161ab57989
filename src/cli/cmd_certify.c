/* cmd_certify.c: `scm certify`: computer-assisted existence proofs of
 * fixed points (scm_certify_family, scm_certify_fpfile in
 * include/scm/certify.h); the command parses, calls, prints a table and
 * writes the JSON result atomically (docs/certify.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "scm/certify.h"
#include "scm/output.h"

#define ME "scm certify"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: scm certify --K K --M M [--k1 N | --all] [--every] [-o OUT.json]\n"
            "       scm certify --point FP.json --index I | --every [-o OUT.json]\n"
            "\n"
            "Prove in ball arithmetic (Arb) that a true fixed point of the flow lies in a\n"
            "small box around each listed one: the Krawczyk operator of the block-level\n"
            "residual, every angle away from 0 and pi, the point realisable by weights\n"
            "(ReLU, T = I, v = v* = 1, built-in ansatze); then strictness: the\n"
            "symmetry-adapted Hessian in balls, positive definite (a strict local minimum\n"
            "for every d >= M) or with a negative eigenvalue (a saddle).  eig(dH): the\n"
            "proved lower bound of the smallest eigenvalue of d H (> lo), or an upper\n"
            "bound of a negative one (< hi).\n"
            "\n"
            "  --k1 N             the k1 family's minimum candidates (default 1)\n"
            "  --all              every k1 = 0 .. K\n"
            "  --every            every point of the family, saddles too\n"
            "  --point FILE       entry --index I of a `scm fixed-points -o` result (with\n"
            "                     --every: all its entries, e.g. of --grow-from)\n"
            "  --starts N         random Newton starts per ansatz instance (40)\n"
            "  --max-radius R     largest box radius tried (1e-8)\n"
            "  -o FILE            JSON result\n"
            "\n"
            "exit status: 0 done (certified or not), 1 a computation failed, 2 bad input.\n");
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

int scm_cmd_certify(int argc, char **argv)
{
    long K = -1, M = -1, k1 = -2, index = -1, starts = 40;
    int all = 0, every = 0;
    const char *point = NULL, *out = NULL;
    scm_certify_opts o;
    scm_certify_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int r = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--all") == 0) {
            all = 1;
            continue; /* a flag: no value to skip */
        } else if (strcmp(a, "--every") == 0) {
            every = 1;
            continue;
        } else if (!v) {
            fprintf(stderr, "%s: %s needs a value (see --help)\n", ME, a);
            return 2;
        } else if (strcmp(a, "--K") == 0)
            r = cli_opt_long(ME, a, v, 1, 10000, &K);
        else if (strcmp(a, "--M") == 0)
            r = cli_opt_long(ME, a, v, 1, 10000, &M);
        else if (strcmp(a, "--k1") == 0)
            r = cli_opt_long(ME, a, v, 0, 10000, &k1);
        else if (strcmp(a, "--index") == 0)
            r = cli_opt_long(ME, a, v, 0, 1000000, &index);
        else if (strcmp(a, "--starts") == 0)
            r = cli_opt_long(ME, a, v, 1, 100000, &starts);
        else if (strcmp(a, "--max-radius") == 0) {
            r = cli_opt_positive(ME, a, v, &o.max_radius);
            if (!r && !(o.max_radius < 1.0)) {
                fprintf(stderr, "%s: --max-radius %s: must be below 1\n", ME, v);
                return 2;
            }
        } else if (strcmp(a, "--point") == 0)
            point = v;
        else if (strcmp(a, "-o") == 0)
            out = v;
        else {
            fprintf(stderr, "%s: unknown option %s (see --help)\n", ME, a);
            return 2;
        }
        if (r)
            return 2;
        i++;
    }
    if (point ? (K >= 0 || M >= 0 || all || k1 != -2 || (index < 0) == !every)
              : (K < 0 || M < 0 || index >= 0 || (all && k1 != -2))) {
        fprintf(stderr,
                "%s: give --K K --M M [--k1 N | --all], or --point FILE --index I | --every\n",
                ME);
        return 2;
    }
    if (k1 > K && !point) {
        fprintf(stderr, "%s: --k1 %ld exceeds K = %ld\n", ME, k1, K);
        return 2;
    }
    if (out && cli_check_output(ME, out, point ? &point : NULL, point ? 1 : 0))
        return 2;
    scm_certify_list l = {0};
    scm_error err;
    scm_error_clear(&err);
    scm_status st = point ? scm_certify_fpfile(point, index, &o, &l, &err)
                          : scm_certify_family((int)K, (int)M, all ? -1 : (k1 == -2 ? 1 : (int)k1),
                                               every, starts, &o, &l, &err);
    if (st) {
        const char *msg = strncmp(err.msg, "certify: ", 9) == 0 ? err.msg + 9 : err.msg;
        fprintf(stderr, "%s: %s\n", ME, msg);
        scm_certify_list_free(&l);
        return st == SCM_EINVAL || st == SCM_EIO ? 2 : 1;
    }
    print_table(&l);
    int rc = 0;
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
