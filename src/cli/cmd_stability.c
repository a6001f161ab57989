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

#include "cli_util.h"
#include "commands.h"
#include "scm/output.h"
#include "scm/stabpoint.h"

#define ME "scm stability"

static void st_usage(FILE *f)
{
    fprintf(f,
            "usage: scm stability --K K --M M --k1 N [--index I | --loss L] [--ansatz FILE]\n"
            "                     [options]\n"
            "       scm stability --point FP.json --index I [options]\n"
            "\n"
            "Stability of a fixed point: the perturbation test (W + N(0, sigma^2),\n"
            "GD steps W <- W - eta d grad eps, then the CVODE flow from the perturbed\n"
            "overlaps) and the spectra (weight-space Hessian with symmetry zero modes,\n"
            "Jacobian of (F_Q, F_R)).  The k1 family (T = I, v = v* = 1) lists every\n"
            "specialised enumerated point with k1 anti-aligned students by loss; the\n"
            "one analysed is, by default, the lowest-loss minimum candidate (no\n"
            "positive eigenvalue of the Jacobian of the flow: the plateau where\n"
            "training stalls); --index I or --loss L picks any other listed point.\n"
            "\n"
            "  --K K --M M --k1 N   the family (with the built-in ansatze or --ansatz)\n"
            "  --index I            the family's point I (0: lowest loss) instead\n"
            "  --loss L             the family's point of loss L (1e-6 relative) instead\n"
            "  --ansatz FILE        an ansatz file\n"
            "  --starts N           Newton starts of the enumeration (default 100)\n"
            "  --point FILE         a `scm fixed-points -o` result; --index I picks the point\n"
            "  --activation NAME    relu (default; with --point: the file's)\n"
            "  --d D                dimension of the realisation (default K + M)\n"
            "  --steps N            GD steps (default 1000)\n"
            "  --eta E              GD step in flow time (default 0.01)\n"
            "  --sigma S1,S2,...    perturbation sizes (default 1e-4,1e-3,1e-2,1e-1)\n"
            "  --trials N           trials per sigma (default 10)\n"
            "  --seed S             seed of the perturbations (default 1)\n"
            "  --t-max T            CVODE run length (default 1e5)\n"
            "  --verdict-sigma-max S  larger sigmas do not enter the verdict (default 1e-2)\n"
            "  --no-flow            GD only (no CVODE runs)\n"
            "  --no-hessian         skip the Hessian (large K d; --dense only)\n"
            "  --dense              dense spectra in weight space (default: the symmetric\n"
            "                       spectrum of the point's ansatz, any K; docs/stability.md)\n"
            "  --perturb MODE       auto (default), weights, qr or none: the perturbation\n"
            "                       test with GD steps in weight space, or the flow in\n"
            "                       (Q, R) from the mapped perturbation (auto: weights\n"
            "                       for K d <= 800, else qr for K <= 30, else none)\n"
            "  -o FILE              JSON result file\n"
            "  -q, --quiet          no table\n"
            "\n"
            "exit status: 0 done, 1 a computation failed, 2 bad input.\n");
}


/* The command line. */
typedef struct {
    long K, M, k1, index, starts, d, steps, trials, seed;
    int quiet, flow, hess, dense, perturb;
    double loss;
    const char *point, *ansatz, *out, *actname;
    scm_stab_opts o;
} st_args;

/* --sigma S1,S2,...: -1 to go on, else the exit status. */
static int parse_sigma(const char *a, const char *v, scm_stab_opts *o)
{
    char buf[512];
    int bad = 0;
    snprintf(buf, sizeof buf, "%s", v);
    o->n_sigma = 0;
    for (char *tok = strtok(buf, ","); tok && !bad; tok = strtok(NULL, ",")) {
        if (o->n_sigma == SCM_STAB_MAX_SIGMA) {
            fprintf(stderr, ME ": at most %d sigma values\n", SCM_STAB_MAX_SIGMA);
            return 2;
        }
        bad = cli_opt_positive(ME, a, tok, &o->sigma[o->n_sigma++]);
    }
    if (!bad && o->n_sigma == 0) {
        fprintf(stderr, ME ": --sigma needs at least one value\n");
        return 2;
    }
    return bad ? 2 : -1;
}

/* One option with a value: -1 to go on, else the exit status. */
static int parse_value(const char *a, const char *v, st_args *g)
{
    int bad = 0;
    if (!strcmp(a, "--K"))
        bad = cli_opt_long(ME, a, v, 1, 10000, &g->K);
    else if (!strcmp(a, "--M"))
        bad = cli_opt_long(ME, a, v, 1, 10000, &g->M);
    else if (!strcmp(a, "--k1"))
        bad = cli_opt_long(ME, a, v, 0, 10000, &g->k1);
    else if (!strcmp(a, "--index"))
        bad = cli_opt_long(ME, a, v, 0, 1000000, &g->index);
    else if (!strcmp(a, "--starts"))
        bad = cli_opt_long(ME, a, v, 0, 1000000, &g->starts);
    else if (!strcmp(a, "--d"))
        bad = cli_opt_long(ME, a, v, 1, 100000, &g->d);
    else if (!strcmp(a, "--steps"))
        bad = cli_opt_long(ME, a, v, 0, 100000000, &g->steps);
    else if (!strcmp(a, "--trials"))
        bad = cli_opt_long(ME, a, v, 1, 100000, &g->trials);
    else if (!strcmp(a, "--seed"))
        bad = cli_opt_long(ME, a, v, 0, 2147483647L, &g->seed);
    else if (!strcmp(a, "--loss")) {
        bad = !cli_parse_double(v, &g->loss) || !(g->loss >= 0.0);
        if (bad)
            fprintf(stderr, ME ": --loss needs a non-negative number, got '%s'\n", v);
    } else if (!strcmp(a, "--eta"))
        bad = cli_opt_positive(ME, a, v, &g->o.eta);
    else if (!strcmp(a, "--t-max"))
        bad = cli_opt_positive(ME, a, v, &g->o.t_max);
    else if (!strcmp(a, "--verdict-sigma-max"))
        bad = cli_opt_positive(ME, a, v, &g->o.verdict_sigma_max);
    else if (!strcmp(a, "--sigma"))
        return parse_sigma(a, v, &g->o);
    else if (!strcmp(a, "--perturb")) {
        static const char *const modes[] = {"auto", "weights", "qr", "none"};
        g->perturb = -1;
        for (int i = 0; i < 4; i++)
            if (!strcmp(v, modes[i]))
                g->perturb = i;
        bad = g->perturb < 0;
        if (bad)
            fprintf(stderr, ME ": --perturb must be auto, weights, qr or none, got '%s'\n", v);
    } else if (!strcmp(a, "--point"))
        g->point = v;
    else if (!strcmp(a, "--ansatz"))
        g->ansatz = v;
    else if (!strcmp(a, "--activation"))
        g->actname = v;
    else if (!strcmp(a, "-o"))
        g->out = v;
    else {
        fprintf(stderr, ME ": unknown option '%s'\n", a);
        st_usage(stderr);
        return 2;
    }
    return bad ? 2 : -1;
}

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
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            st_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            g->quiet = 1;
            continue;
        }
        if (!strcmp(a, "--no-flow")) {
            g->flow = 0;
            continue;
        }
        if (!strcmp(a, "--no-hessian")) {
            g->hess = 0;
            continue;
        }
        if (!strcmp(a, "--dense")) {
            g->dense = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, ME ": unknown option or missing value: '%s'\n", a);
            st_usage(stderr);
            return 2;
        }
        int rc = parse_value(a, v, g);
        if (rc >= 0)
            return rc;
        i++;
    }
    return -1;
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
    if (why) {
        fprintf(stderr, ME ": %s\n", why);
        return 2;
    }
    if (!g->point && (g->K < 0 || g->M < 0 || g->k1 < 0)) {
        fprintf(stderr, ME ": --K, --M and --k1 are required (or --point FILE --index I)\n");
        st_usage(stderr);
        return 2;
    }
    if (!g->point && g->k1 > g->K) {
        fprintf(stderr, ME ": --k1 %ld exceeds K = %ld\n", g->k1, g->K);
        return 2;
    }
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
        if (scm_output_write_json(g.out, root, 0, &err)) {
            fprintf(stderr, ME ": %s\n", err.msg);
            rc = 1;
        }
        cJSON_Delete(root);
    }
    scm_stabpoint_free(&sp);
    return rc;
}
