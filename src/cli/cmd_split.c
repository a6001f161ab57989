/* cmd_split.c: `scm split`: split neuron r of a K-student fixed point into
 * daughters with output weights mu_j v_r (sum mu_j = 1), classify the
 * split line by the parent's inner Hessian and check each sample point
 * against the full Hessian of the larger network (and optionally the
 * perturbation test).  The study is the library's (scm_split_parent_*,
 * scm_split_samples, scm_split_study_* in include/scm/split.h); the
 * command parses, calls, prints the table and writes the JSON result
 * atomically (docs/split.md); the table is scm_split_study_text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/output.h"
#include "scm/split.h"

#define ME "scm split"
#define MAX_LAMBDA SCM_SPLIT_MAX_SAMPLES
#define MAX_DAUGHTERS SCM_SPLIT_MAX_DAUGHTERS

/* The exit status of a library failure: 2 for bad input, else 1. */
static int fail(const scm_error *err)
{
    fprintf(stderr, ME ": %s\n", err->msg);
    return err->code == SCM_EINVAL || err->code == SCM_EIO ? 2 : 1;
}

/* The parent: read from FILE, or chosen among the enumerated points. */
static int get_parent(const char *point, const char *actname, long K, long M, long starts,
                      long k1, long index, double loss, scm_split_parent *p)
{
    scm_error err;
    scm_error_clear(&err);
    if (point) {
        if (scm_split_parent_load(point, index, p, &err))
            return fail(&err);
        if (actname)
            snprintf(p->act, sizeof p->act, "%s", actname);
        return 0;
    }
    const scm_activation *act = scm_activation_find(actname ? actname : "relu");
    if (!act)
        return cli_usage_error(ME, "unknown activation '%s' (relu, erf, linear)",
                actname ? actname : "relu");
    if (scm_split_parent_choose(K, M, act, starts, cli_cpu_count(), k1, index, loss, p, &err))
        return fail(&err);
    return 0;
}

static int run(scm_split_parent *p, const scm_split_study_opts *o, const char *out, int quiet,
               scm_split_sample *s, int ns)
{
    scm_error err;
    scm_error_clear(&err);
    scm_split_study st;
    int rc = 0;
    if (scm_split_study_run(p, o, s, ns, &st, &err)) {
        rc = fail(&err);
        goto done;
    }
    char *text = quiet ? NULL : scm_split_study_text(&st);
    if (!quiet && !text) {
        fprintf(stderr, ME ": out of memory\n");
        rc = 1;
        goto done;
    }
    if (text)
        fputs(text, stdout);
    free(text);
    if (out) {
        cJSON *root = scm_split_study_json(&st);
        rc = cli_write_json(ME, out, root, 0);
        cJSON_Delete(root);
    }
done:
    scm_split_study_free(&st);
    return rc;
}

int scm_cmd_split(int argc, char **argv)
{
    long K = -1, M = -1, k1 = -1, index = -1, r = -1, grid = 0, d = 0, starts = 100;
    double loss = NAN, lam[MAX_LAMBDA], w[MAX_DAUGHTERS];
    int nl = 0, nw = 0, quiet = 0, do_polish = 0, do_perturb = 0;
    const char *point = NULL, *out = NULL, *actname = NULL;
    const cli_opt opts[] = {
        CLI_O("--K", CLI_LONG, &K, 1, 1000, "K", "number of students"),
        CLI_O("--M", CLI_LONG, &M, 1, 1000, "M", "number of teachers"),
        CLI_O("--k1", CLI_LONG, &k1, 0, 1000, "N", "the lowest-loss point with N anti-aligned students"),
        CLI_O("--index", CLI_LONG, &index, 0, 1000000, "I", "point I of the list sorted by loss"),
        CLI_O("--loss", CLI_NUM, &loss, 0, 0, "L", "the point of loss nearest L"),
        CLI_O("--point", CLI_STR, &point, 0, 0, "FILE", "the point from FILE"),
        CLI_O("--neuron", CLI_LONG, &r, 0, 999, "r", "the student split (0-based; required)"),
        CLI_OPT_ACTIVATION(&actname),
        CLI_L("--lambda", lam, 0, MAX_LAMBDA, &nl, "a,b,...", "split weights lambda of two daughters"),
        CLI_O("--lambda-grid", CLI_LONG, &grid, 1, MAX_LAMBDA, "N",
              "N lambdas evenly in [-0.5, 1.5] (default 9)"),
        CLI_L("--weights", w, 0, MAX_DAUGHTERS, &nw, "m1,m2,..", "one split into several daughters (sum 1)"),
        CLI_O("--d", CLI_LONG, &d, 1, 2000, "D", "dimension of the realisation (default K + M + 1)"),
        CLI_O("--starts", CLI_LONG, &starts, 0, 1000000, "N",
              "Newton starts of the enumeration (default 100)"),
        CLI_F("--polish", &do_polish, "Newton-polish a point read from FILE first"),
        CLI_F("--perturb", &do_perturb,
              "also the perturbation test at each point (3 trials at\nperturbation sizes 1e-4, "
              "1e-3, 1e-2, GD then the CVODE flow)"),
        CLI_O("-o", CLI_STR, &out, 0, 0, "FILE", "JSON result file"),
        CLI_OPT_QUIET(&quiet, "no table"),
        CLI_OPT_END};
    const cli_cmd cmd = {
        ME,
        "usage: scm split --K K --M M [--k1 N | --index I | --loss L] --neuron r\n"
        "                 [--lambda a,b,... | --lambda-grid N | --weights mu1,mu2,...]\n"
        "       scm split --point FILE [--index I] --neuron r [...]\n"
        "\n"
        "Split student r (0-based) of a fixed point into daughters with output\n"
        "weights mu_j v_r, sum mu_j = 1 (two daughters: lambda, 1 - lambda).  Prints\n"
        "the parent's inner Hessian (residual-weighted second derivative of its\n"
        "feature: eigenvalues of d H_r on the span of students and teachers and on\n"
        "the complement) and its class, then for each split point the residual of\n"
        "the larger flow, the Hessian's inertia (measured and predicted), its\n"
        "smallest eigenvalue without the explained zero modes, and the verdict.\n"
        "The fixed point is enumerated (T = I, v = v* = 1, built-in ansatze) and\n"
        "chosen by --k1 (lowest loss with N anti-aligned students), --index (in the\n"
        "list sorted by loss) or --loss (nearest); or read from FILE: a `scm\n"
        "fixed-points -o` result (with --index) or an object with Q, R and\n"
        "optionally v, vs, T, activation.\n",
        opts, CLI_EXIT_TEXT("0 done, 1 a computation failed"), NULL, 0};
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    int nsel = (k1 >= 0) + (index >= 0 && !point) + !isnan(loss);
    if (r < 0)
        return cli_usage_error(ME, "--neuron r is required");
    if (point ? (K >= 0 || M >= 0 || k1 >= 0 || !isnan(loss)) : (K < 0 || M < 0 || nsel != 1))
        return cli_usage_error(ME, "give --K, --M and one of --k1, --index, --loss; or --point "
                                   "FILE [--index I] (without --K, --M, --k1, --loss)");
    if (!!nl + !!grid + !!nw > 1)
        return cli_usage_error(ME, "give one of --lambda, --lambda-grid, --weights");
    if (nw == 1)
        return cli_usage_error(ME, "--weights needs at least 2 daughters");
    if (!nl && !nw && !grid)
        grid = 9;
    if (do_polish && !point)
        return cli_usage_error(ME, "--polish applies to --point only");
    scm_split_sample *s = NULL;
    scm_split_parent p;
    memset(&p, 0, sizeof p);
    scm_error err;
    scm_error_clear(&err);
    int ns = 0, rc = 0;
    if (scm_split_samples(lam, nl, grid, w, nw, &s, &ns, &err))
        rc = fail(&err);
    if (!rc)
        rc = get_parent(point, actname, K, M, starts, k1, index, loss, &p);
    if (!rc) {
        scm_split_study_opts o;
        scm_split_study_opts_default(&o);
        o.neuron = (int)r;
        o.d = d;
        o.polish = do_polish;
        o.perturb = do_perturb;
        rc = run(&p, &o, out, quiet, s, ns);
    }
    scm_split_parent_free(&p);
    free(s);
    return rc;
}
