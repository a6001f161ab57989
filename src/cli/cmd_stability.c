/* cmd_stability.c: `scm stability`: the stability of one fixed point, given
 * as a family (K, M, k1 and optionally an ansatz file: the lowest-loss
 * enumerated point with k1 anti-aligned students) or as entry i of a
 * `scm fixed-points -o` result file.  Prints a table and writes a JSON
 * result atomically (docs/stability.md).  The point comes from
 * scm_stabpoint_load or scm_stabpoint_family, its analysis from
 * scm_stab_analyse, the result object from scm_stabpoint_json. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/output.h"
#include "scm/stabpoint.h"

#define ME "scm stability"

static const char st_head[] =
    "usage: scm stability --K K --M M --k1 N [--index I | --loss L] [--ansatz FILE]\n"
    "                     [options]\n"
    "       scm stability --point FP.json --index I [options]\n"
    "\n"
    "Stability of a fixed point: the perturbation test (W + N(0, s^2) for each\n"
    "perturbation size s, GD steps W <- W - h d grad eps of step h, then the\n"
    "CVODE flow from the perturbed overlaps) and the spectra (weight-space\n"
    "Hessian with symmetry zero modes, Jacobian of (F_Q, F_R)).  The k1 family\n"
    "(T = I, v = v* = 1) lists every specialised enumerated point with k1\n"
    "anti-aligned students by loss; the one analysed is, by default, the\n"
    "lowest-loss minimum candidate (no positive eigenvalue of the Jacobian of\n"
    "the flow: the plateau where training stalls); --index I or --loss L picks\n"
    "any other listed point.\n";

/* The command line. */
typedef struct {
    long K, M, k1, index, starts, d, steps, trials, seed;
    int quiet, flow, hess, dense, perturb;
    double loss;
    const char *point, *ansatz, *out, *actname;
    scm_stab_opts o;
} st_args;

/* The command line into g: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, st_args *g)
{
    memset(g, 0, sizeof *g);
    g->K = g->M = g->k1 = g->index = -1;
    g->starts = 100;
    g->steps = 1000;
    g->trials = 10;
    g->seed = 1;
    g->flow = g->hess = 1;
    g->loss = NAN;
    scm_stab_opts_default(&g->o);
    scm_stab_opts *o = &g->o;
    const cli_opt opts[] = {
        CLI_O("--K", CLI_LONG, &g->K, 1, 10000, "K", "number of students"),
        CLI_O("--M", CLI_LONG, &g->M, 1, 10000, "M", "number of teachers"),
        CLI_O("--k1", CLI_LONG, &g->k1, 0, 10000, "N",
              "the family: the points with N anti-aligned students\n(built-in ansatze, or --ansatz)"),
        CLI_O("--index", CLI_LONG, &g->index, 0, 1000000, "I",
              "the family's point I (0: lowest loss) instead"),
        CLI_O("--loss", CLI_NONNEG, &g->loss, 0, 0, "L",
              "the family's point of loss L (1e-6 relative) instead"),
        CLI_O("--ansatz", CLI_STR, &g->ansatz, 0, 0, "FILE", "an ansatz file"),
        CLI_O("--starts", CLI_LONG, &g->starts, 0, 1000000, "N",
              "Newton starts of the enumeration (default 100)"),
        CLI_O("--point", CLI_STR, &g->point, 0, 0, "FILE",
              "a `scm fixed-points -o` result; --index I picks the point"),
        CLI_OPT_ACTIVATION(&g->actname),
        CLI_O("--d", CLI_LONG, &g->d, 1, 100000, "D", "dimension of the realisation (default K + M)"),
        CLI_O("--steps", CLI_LONG, &g->steps, 0, 100000000, "N", "GD steps (default 1000)"),
        CLI_O("--gd-step", CLI_POS, &o->eta, 0, 0, "H", "GD step in flow time (default 0.01)"),
        CLI_O("--eta", CLI_POS, &o->eta, 0, 0, NULL, NULL), /* the old name, for one release */
        CLI_L("--perturb-size", o->sigma, 1, SCM_STAB_MAX_SIGMA, &o->n_sigma, "S1,S2,...",
              "perturbation sizes s (default 1e-4,1e-3,1e-2,1e-1)"),
        CLI_L("--sigma", o->sigma, 1, SCM_STAB_MAX_SIGMA, &o->n_sigma, NULL, NULL),
        CLI_O("--trials", CLI_LONG, &g->trials, 1, 100000, "N", "trials per size (default 10)"),
        CLI_O("--seed", CLI_LONG, &g->seed, 0, 2147483647L, "S",
              "seed of the perturbations (default 1)"),
        CLI_O("--t-max", CLI_POS, &o->t_max, 0, 0, "T", "CVODE run length (default 1e5)"),
        CLI_O("--verdict-size-max", CLI_POS, &o->verdict_sigma_max, 0, 0, "S",
              "larger perturbation sizes do not enter the\nverdict (default 1e-2)"),
        CLI_O("--verdict-sigma-max", CLI_POS, &o->verdict_sigma_max, 0, 0, NULL, NULL),
        {"--no-flow", CLI_FLAG, &g->flow, 0, 0, NULL, "GD only (no CVODE runs)", NULL, NULL, NULL},
        {"--no-hessian", CLI_FLAG, &g->hess, 0, 0, NULL, "skip the Hessian (large K d; --dense only)",
         NULL, NULL, NULL},
        CLI_F("--dense", &g->dense,
              "dense spectra in weight space (default: the symmetric\nspectrum of the point's "
              "ansatz, any K; docs/stability.md)"),
        CLI_C("--perturb", &g->perturb, "auto|weights|qr|none", "MODE",
              "the perturbation test with GD steps in weight space,\nor the flow in (Q, R) from "
              "the mapped perturbation\n(auto, the default: weights for K d <= 800, else qr\nfor "
              "K <= 30, else none)"),
        CLI_O("-o", CLI_STR, &g->out, 0, 0, "FILE", "JSON result file"),
        CLI_OPT_QUIET(&g->quiet, "no table, no progress"),
        CLI_OPT_END};
    const cli_cmd cmd = {ME, st_head, opts,
                         CLI_EXIT_TEXT("0 done (also a family without a minimum), 1 a\n"
                                       "computation failed"),
                         NULL, 0};
    return cli_parse(&cmd, argc, argv);
}

/* The options among themselves, and into g->o: -1 to go on, else 2. */
static int check_args(st_args *g)
{
    int family = g->K >= 0 || g->M >= 0 || g->k1 >= 0;
    const char *why = NULL;
    if (g->point && family)
        why = "give either --point FILE --index I or --K --M --k1, not both";
    else if (g->point && isfinite(g->loss))
        why = "--loss selects in a family (--K --M --k1), not in --point files";
    else if (g->index >= 0 && isfinite(g->loss))
        why = "give --index or --loss, not both";
    else if (g->point && g->index < 0)
        why = "--point needs --index";
    if (why)
        return cli_usage_error(ME, "%s", why);
    if (!g->point && (g->K < 0 || g->M < 0 || g->k1 < 0))
        return cli_usage_error(ME, "--K, --M and --k1 are required (or --point FILE --index I)");
    if (!g->point && g->k1 > g->K)
        return cli_usage_error(ME, "--k1 %ld exceeds K = %ld", g->k1, g->K);
    g->o.d = g->d;
    g->o.n_steps = (int)g->steps;
    g->o.n_trials = (int)g->trials;
    g->o.seed = (unsigned long)g->seed;
    g->o.run_flow = g->flow;
    g->o.hessian = g->hess;
    scm_error err;
    if (scm_stab_opts_check(&g->o, &err)) {
        fprintf(stderr, ME ": %s\n", err.msg);
        return 2;
    }
    return -1;
}

static void print_family(const scm_family_pick *fp)
{
    const scm_family *f = &fp->fam;
    printf("family     k1 = %d at K = %d, M = %d: %d specialised point%s with %d anti-aligned "
           "student%s (%d ansatz instance%s)\n",
           f->k1, f->K, f->M, f->n, f->n == 1 ? "" : "s", f->k1, f->k1 == 1 ? "" : "s",
           f->n_instances, f->n_instances == 1 ? "" : "s");
    for (int i = 0; i < f->n; i++) {
        const scm_fam_point *p = &f->pt[i];
        printf("  %s[%d] loss %-18.12g %-32s ansatz %s at k1 = %d\n", i == fp->index ? "*" : " ",
               i, p->eps, scm_fam_class_str(p->cls), p->ansatz, p->ansatz_k1);
    }
    const scm_fam_point *p = &f->pt[fp->index];
    printf("point      [%d] (%s): ansatz %s at k1 = %d, %d anti-aligned, loss %.12g, %s\n",
           fp->index, fp->how, p->ansatz, p->ansatz_k1, p->n_anti, p->eps,
           scm_fam_class_str(p->cls));
    printf("scalars   ");
    for (int c = 0; c < p->nsc; c++)
        printf(" %s=%.10g", p->names[c], p->x[c]);
    printf("\n");
}

static void print_hessian(const scm_stab_result *r)
{
    printf("Hessian    %s, n = %d: %d negative, %d zero (|l| <= %.2e), %d positive; "
           "max %.4g\n",
           r->hessian_closed ? "closed form" : "central differences", r->counts.n,
           r->counts.n_neg, r->counts.n_zero, r->counts.zero_tol, r->counts.n_pos,
           r->eval_max);
    if (r->hessian_closed)
        printf("           closed form vs central differences: %.2e (relative)\n",
               r->hessian_fd_diff);
    printf("           smallest:");
    for (int i = 0; i < r->n_small; i++)
        printf(" %.4g", r->eval_small[i]);
    printf("\n");
    printf("zero modes predicted %ld: rotations of the %ld-dim complement of the "
           "teacher span %ld (p = %d students' directions outside it)",
           r->zm.total, r->d - r->zm.rank_T, r->zm.rotation, r->zm.p);
    if (r->zm.homogeneity)
        printf(", ReLU homogeneity of parallel students %ld", r->zm.homogeneity);
    if (r->zm.linear)
        printf(", linear: same v^T W %ld", r->zm.linear);
    printf("\n");
}

static const char *irrep_str(int i)
{
    static const char *const s[] = {"[n]", "[n-1,1]", "[n-2,2]", "[n-2,1,1]", "[n-1,1]x[n'-1,1]"};
    return i >= 0 && i < 5 ? s[i] : "?";
}

/* One distinct eigenvalue of a symmetric spectrum. */
static void print_eig(const scm_symstab_result *h, const scm_symstab_eig *e)
{
    char unit[160] = "";
    if (e->unit >= 0 && e->unit < h->n_units)
        snprintf(unit, sizeof unit, "%s", h->unit_name[e->unit]);
    if (e->unit2 >= 0 && e->unit2 < h->n_units)
        snprintf(unit + strlen(unit), sizeof unit - strlen(unit), " x %s",
                 h->unit_name[e->unit2]);
    if (e->part == SCM_SYMSTAB_FLOW && e->imag != 0.0)
        printf("    %+.10e %+.4ei x %-8ld", e->value, e->imag, e->mult);
    else
        printf("    %+.10e x %-8ld", e->value, e->mult);
    printf(" %-4s %-16s %s%s%s\n",
           e->part == SCM_SYMSTAB_SPAN ? "span" : e->part == SCM_SYMSTAB_PERP ? "perp" : "flow",
           irrep_str(e->irrep), unit, e->zero ? "  zero: " : "", e->zero ? e->cause : "");
}

/* The symmetric spectra (sp->sym.done). */
static void print_sym(const scm_stabpoint_sym *s, const scm_stab_result *r)
{
    const scm_symstab_result *h = &s->hess;
    printf("Hessian    symmetric spectrum (%d isotypic blocks, largest %d), n = K d = %ld: "
           "%ld negative, %ld zero (|l| <= %.2e), %ld positive; max %.4g\n",
           h->n_blocks, h->max_block, h->total, h->n_neg, h->n_zero, h->zero_tol, h->n_pos,
           r->eval_max);
    printf("           zeros predicted %ld (rotations %ld, ReLU homogeneity %ld, linear %ld); "
           "%d distinct eigenvalues:\n",
           s->predicted_zeros, r->zm.rotation, r->zm.homogeneity, r->zm.linear, h->n);
    for (int i = 0; i < h->n; i++)
        print_eig(h, &h->eig[i]);
    if (!r->jacobian_done) {
        printf("Jacobian   (F_Q, F_R): not computed (%s)\n",
               scm_symstab_refusal_str(s->jac.refusal));
        return;
    }
    const scm_symstab_result *j = &s->jac;
    printf("Jacobian   (F_Q, F_R) symmetric spectrum, n = %ld: largest real part %.4g, smallest "
           "%.4g; %ld unstable, %ld zero; %d distinct eigenvalues:\n",
           j->total, r->jac_re_max, r->jac_re_min, j->n_pos, j->n_zero, j->n);
    for (int i = 0; i < j->n; i++)
        print_eig(j, &j->eig[i]);
}

static void print_rows(const scm_stab_result *r, const scm_stab_opts *o, int perturb)
{
    if (perturb == SCM_STABPOINT_PERTURB_NONE) {
        printf("perturbation: not run (--perturb none, or auto at K > %d: --perturb qr runs "
               "it)\n", SCM_STABPOINT_QR_AUTO_MAX_K);
        return;
    }
    if (perturb == SCM_STABPOINT_PERTURB_QR)
        printf("perturbation: in (Q, R): weight-space noise mapped to the overlaps, then CVODE "
               "to t = %g%s\n",
               o->t_max, o->run_flow ? "" : " (off)");
    else
        printf("perturbation: %d GD steps of eta = %g (tau = %g), then CVODE to t = %g%s\n",
               o->n_steps, o->eta, o->n_steps * o->eta, o->t_max, o->run_flow ? "" : " (off)");
    printf("%-8s %6s %-10s %-10s %-10s %-10s %-10s  %-28s %s\n", "sigma", "trials",
           "dist0_med", "dist_med", "dist_max", "deps_med", "deps_max", "destination",
           "verdict");
    for (int i = 0; i < r->n_rows; i++) {
        const scm_stab_row *w = &r->rows[i];
        char dest[128];
        int n = snprintf(dest, sizeof dest, "same %d", w->n_same);
        if (w->n_global)
            n += snprintf(dest + n, sizeof dest - (size_t)n, ", global %d", w->n_global);
        if (w->n_other)
            n += snprintf(dest + n, sizeof dest - (size_t)n, ", eps %.6g..%.6g %d",
                          w->other_eps_min, w->other_eps_max, w->n_other);
        if (w->n_failed)
            snprintf(dest + n, sizeof dest - (size_t)n, ", failed %d", w->n_failed);
        printf("%-8.0e %6d %-10.3e %-10.3e %-10.3e %-10.3e %-10.3e  %-28s %s%s\n", w->sigma,
               w->n, w->dist0_med, w->dist_med, w->dist_max, w->deps_med, w->deps_max, dest,
               scm_verdict_str(w->verdict),
               w->sigma > o->verdict_sigma_max ? " (not in verdict)" : "");
    }
}

static void print_result(const scm_stabpoint *sp, const scm_activation *act,
                         const scm_stab_opts *o, const scm_stab_result *r)
{
    printf("scm stability: K = %ld, M = %ld, %s, T = I, v = v* = 1, d = %ld\n", sp->K, sp->M,
           act->name, r->d);
    if (sp->from_family && sp->pick.fam.n)
        print_family(&sp->pick);
    else
        printf("point      %s\n", sp->desc);
    printf("loss       %.12g   residual %.3g\n", r->eps, r->residual);
    if (!r->smooth.smooth)
        printf("smoothness not differentiable here: %s (no Hessian; the perturbation test "
               "decides)\n",
               r->smooth.what);
    else if (!r->smooth.closed_form)
        printf("smoothness kernel-singular (Hessian exists, C^2): %s; finite-difference "
               "Hessian\n",
               r->smooth.what);
    if (sp->sym.done) {
        print_sym(&sp->sym, r);
    } else {
        if (sp->sym.why_dense[0])
            printf("spectra    dense (%s)\n", sp->sym.why_dense);
        if (r->hessian_done)
            print_hessian(r);
        if (r->jacobian_done)
            printf("Jacobian   (F_Q, F_R): largest real part %.4g, smallest %.4g\n",
                   r->jac_re_max, r->jac_re_min);
    }
    print_rows(r, o, sp->sym.perturb);
    printf("verdict    %s (perturbation test); Hessian: %s; %s\n", scm_verdict_str(r->verdict),
           scm_hverdict_str(r->hverdict),
           r->agree == 1   ? "the two tests agree"
           : r->agree == 0 ? "THE TWO TESTS DISAGREE"
                           : "not comparable");
}

/* The point to analyse (from the file or the family) and its activation:
 * the exit status. */
static int get_point(const st_args *g, scm_stabpoint *sp, const scm_activation **act)
{
    scm_error err;
    scm_status st = SCM_OK;
    memset(sp, 0, sizeof *sp);
    if (g->point && (st = scm_stabpoint_load(g->point, g->index, sp, &err))) {
        fprintf(stderr, ME ": %s\n", err.msg);
        return st == SCM_ENOMEM ? 1 : 2;
    }
    const char *an = g->actname ? g->actname : g->point ? sp->activation : "relu";
    *act = scm_activation_find(an);
    if (!*act) {
        fprintf(stderr, ME ": unknown activation '%s' (relu, erf, linear)\n", an);
        return 2;
    }
    if (g->point)
        return 0;
    scm_family_pick_opts fo;
    scm_family_pick_opts_default(&fo);
    fo.K = (int)g->K;
    fo.M = (int)g->M;
    fo.k1 = (int)g->k1;
    fo.act = *act;
    fo.ansatz_file = g->ansatz;
    fo.starts = g->starts;
    fo.threads = cli_cpu_count(); /* the family does not depend on it */
    fo.index = g->index;
    fo.loss = g->loss;
    if ((st = scm_stabpoint_family(&fo, sp, &err))) {
        fprintf(stderr, ME ": %s\n", sp->pick.why ? sp->pick.why : err.msg);
        return st == SCM_EINVAL || st == SCM_EIO ? 2 : 1;
    }
    return 0;
}

int scm_cmd_stability(int argc, char **argv)
{
    st_args g;
    int rc = parse_args(argc, argv, &g);
    if (rc < 0)
        rc = check_args(&g);
    if (rc >= 0)
        return rc;
    gsl_set_error_handler_off();

    scm_stabpoint sp;
    const scm_activation *act = NULL;
    scm_stab_result r;
    scm_error err;
    rc = get_point(&g, &sp, &act);
    if (!rc) {
        scm_status st = scm_stabpoint_analyse(&sp, act, &g.o, g.dense, g.perturb, g.ansatz, &r,
                                              &err);
        if (st) {
            fprintf(stderr, ME ": %s\n", err.msg);
            rc = st == SCM_ENOMEM ? 1 : 2;
        }
    }
    if (!rc && !g.quiet)
        print_result(&sp, act, &g.o, &r);
    if (!rc && g.out) {
        cJSON *root = scm_stabpoint_json(&sp, act, &g.o, &r);
        rc = cli_write_json(ME, g.out, root, 0);
        cJSON_Delete(root);
    }
    scm_stabpoint_free(&sp);
    return rc;
}
