/* cmd_stability.c: `scm stability`: the stability of one fixed point, given
 * as a family (K, M, k1 and optionally an ansatz file: the lowest-loss
 * enumerated point with k1 anti-aligned students) or as entry i of a
 * `scm fixed-points -o` result file.  Prints a table and writes a JSON
 * result atomically (docs/stability.md). */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "scm/family.h"
#include "scm/fixedpoint.h"
#include "scm/output.h"
#include "scm/stability.h"
#include "scm_version.h"

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
            "  --no-hessian         skip the Hessian (large K d)\n"
            "  -o FILE              JSON result file\n"
            "  -q, --quiet          no table\n"
            "\n"
            "exit status: 0 done, 1 a computation failed, 2 bad input.\n");
}


static cJSON *num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

/* Load point index from a fixed-points result: K, M, activation, Q, R. */
static int load_point(const char *path, long index, long *K, long *M, char *act, size_t actlen,
                      double **Q, double **R, char *desc, size_t desclen)
{
    size_t len = 0;
    char *text = cli_read_all(path, &len);
    if (!text) {
        fprintf(stderr, ME ": cannot read '%s'\n", path);
        return 2;
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    int rc = 2;
    if (!root) {
        fprintf(stderr, ME ": '%s' is not valid JSON\n", path);
        return 2;
    }
    const cJSON *jK = cJSON_GetObjectItemCaseSensitive(root, "K"),
                *jM = cJSON_GetObjectItemCaseSensitive(root, "M"),
                *ja = cJSON_GetObjectItemCaseSensitive(root, "activation"),
                *fps = cJSON_GetObjectItemCaseSensitive(root, "fixed_points");
    if (!cJSON_IsNumber(jK) || !cJSON_IsNumber(jM) || !cJSON_IsArray(fps) || jK->valuedouble < 1 ||
        jM->valuedouble < 1 || jK->valuedouble != floor(jK->valuedouble) ||
        jM->valuedouble != floor(jM->valuedouble) || jK->valuedouble > 10000 ||
        jM->valuedouble > 10000) {
        fprintf(stderr,
                ME ": '%s' is not a `scm fixed-points` result (needs integer K, M and an array "
                   "fixed_points)\n",
                path);
        goto out;
    }
    *K = (long)jK->valuedouble;
    *M = (long)jM->valuedouble;
    snprintf(act, actlen, "%s", cJSON_IsString(ja) ? ja->valuestring : "relu");
    int n = cJSON_GetArraySize(fps);
    if (index < 0 || index >= n) {
        fprintf(stderr, ME ": --index %ld out of range: '%s' has %d fixed points\n", index, path,
                n);
        goto out;
    }
    const cJSON *p = cJSON_GetArrayItem(fps, (int)index);
    const cJSON *jQ = cJSON_GetObjectItemCaseSensitive(p, "Q"),
                *jR = cJSON_GetObjectItemCaseSensitive(p, "R"),
                *jl = cJSON_GetObjectItemCaseSensitive(p, "loss"),
                *jn = cJSON_GetObjectItemCaseSensitive(p, "ansatz");
    *Q = calloc((size_t)(*K * *K), sizeof **Q);
    *R = calloc((size_t)(*K * *M), sizeof **R);
    scm_error err;
    if (!*Q || !*R) {
        fprintf(stderr, ME ": out of memory\n");
        rc = 1;
        goto out;
    }
    if (cJSON_IsNull(jQ) || !jQ) {
        fprintf(stderr, ME ": fixed point %ld of '%s' has no full state (Q is null)\n", index,
                path);
        goto out;
    }
    if (scm_output_read_matrix(jQ, "Q", (int)*K, (int)*K, *Q, &err) ||
        scm_output_read_matrix(jR, "R", (int)*K, (int)*M, *R, &err)) {
        fprintf(stderr, ME ": fixed point %ld of '%s': %s\n", index, path, err.msg);
        goto out;
    }
    snprintf(desc, desclen, "%s[%ld] ansatz %s, loss %.12g", path, index,
             cJSON_IsString(jn) ? jn->valuestring : "?", cJSON_IsNumber(jl) ? jl->valuedouble : NAN);
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

/* How the point was chosen (family mode): its identity, printed and in
 * the JSON. */
typedef struct {
    scm_family fam;
    int index;           /* the chosen point */
    const char *how;     /* the selection rule */
} family_pick;

static void print_family(const family_pick *fp)
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

static cJSON *family_json(const family_pick *fp)
{
    const scm_family *f = &fp->fam;
    const scm_fam_point *p = &f->pt[fp->index];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "k1", f->k1);
    cJSON_AddNumberToObject(o, "index", fp->index);
    cJSON_AddStringToObject(o, "selection", fp->how);
    cJSON_AddStringToObject(o, "ansatz", p->ansatz);
    cJSON_AddNumberToObject(o, "ansatz_k1", p->ansatz_k1);
    cJSON_AddNumberToObject(o, "n_anti", p->n_anti);
    cJSON_AddItemToObject(o, "loss", num(p->eps));
    cJSON_AddStringToObject(o, "class", scm_fam_class_str(p->cls));
    cJSON_AddItemToObject(o, "block_jacobian_re_max", num(p->block_re_max));
    cJSON_AddItemToObject(o, "full_jacobian_re_max", num(p->full_re_max));
    cJSON *sc = cJSON_AddObjectToObject(o, "scalars");
    for (int c = 0; c < p->nsc; c++)
        cJSON_AddItemToObject(sc, p->names[c], num(p->x[c]));
    cJSON *all = cJSON_AddArrayToObject(o, "points");
    for (int i = 0; i < f->n; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "index", i);
        cJSON_AddItemToObject(j, "loss", num(f->pt[i].eps));
        cJSON_AddStringToObject(j, "class", scm_fam_class_str(f->pt[i].cls));
        cJSON_AddStringToObject(j, "ansatz", f->pt[i].ansatz);
        cJSON_AddNumberToObject(j, "ansatz_k1", f->pt[i].ansatz_k1);
        cJSON_AddItemToArray(all, j);
    }
    return o;
}

/* Enumerate the family (K, M, k1) and pick its point: by --index, by
 * --loss, or by default the lowest-loss minimum candidate (no positive
 * eigenvalue of the flow's Jacobian: the plateau where training stalls).
 * Returns an exit status; on 0, Q and R are the chosen point's. */
static int find_family(long K, long M, long k1, const char *ansatz_file, long starts,
                       long index, double loss, const scm_activation *act, family_pick *fp,
                       double **Q, double **R, char *desc, size_t desclen)
{
    scm_ansatz *ans[16];
    int nans = 0, rc = 2;
    scm_error err;
    if (ansatz_file) {
        ans[0] = scm_ansatz_load(ansatz_file, &err);
        if (!ans[0]) {
            fprintf(stderr, ME ": %s\n", err.msg);
            return 2;
        }
        nans = 1;
    } else {
        for (int i = 0; i < scm_ansatz_builtin_count() && nans < 16; i++) {
            const char *file, *text = scm_ansatz_builtin_text(i, &file);
            ans[nans] = scm_ansatz_parse(text, strlen(text), file, &err);
            if (!ans[nans]) {
                fprintf(stderr, ME ": built-in %s\n", err.msg);
                rc = 1;
                goto out;
            }
            nans++;
        }
    }
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = (int)starts;
    o.threads = cli_cpu_count(); /* the family does not depend on it */
    scm_status st = scm_family_find((int)K, (int)M, (int)k1, ans, nans, act, &o, &fp->fam, &err);
    if (st) {
        fprintf(stderr, ME ": %s\n", err.msg);
        rc = st == SCM_EINVAL ? 2 : 1;
        goto out;
    }
    if (fp->fam.n == 0) {
        fprintf(stderr,
                ME ": no specialised fixed point with %ld anti-aligned students found at K = "
                   "%ld, M = %ld\n",
                k1, K, M);
        rc = 1;
        goto out;
    }
    if (index >= 0) {
        if (index >= fp->fam.n) {
            fprintf(stderr, ME ": --index %ld: the family has points 0 .. %d\n", index,
                    fp->fam.n - 1);
            goto out;
        }
        fp->index = (int)index;
        fp->how = "--index";
    } else if (isfinite(loss)) {
        fp->index = scm_family_by_loss(&fp->fam, loss, 1e-6);
        fp->how = "--loss";
        if (fp->index < 0) {
            fprintf(stderr, ME ": --loss %.12g: no point of the family has that loss (to 1e-6 "
                            "relative); its losses:", loss);
            for (int i = 0; i < fp->fam.n; i++)
                fprintf(stderr, " %.12g", fp->fam.pt[i].eps);
            fprintf(stderr, "\n");
            goto out;
        }
    } else {
        fp->how = "lowest-loss minimum candidate";
        if (scm_family_default(&fp->fam, act, &fp->index, &err)) {
            fprintf(stderr, ME ": %s\n", err.msg);
            rc = 1;
            goto out;
        }
        if (fp->index < 0) {
            fprintf(stderr,
                    ME ": no point of the k1 = %ld family at K = %ld, M = %ld is a minimum "
                       "candidate (all %d have a positive Jacobian eigenvalue); pick one with "
                       "--index or --loss:\n",
                    k1, K, M, fp->fam.n);
            for (int i = 0; i < fp->fam.n; i++)
                fprintf(stderr, "  [%d] loss %.12g %s\n", i, fp->fam.pt[i].eps,
                        scm_fam_class_str(fp->fam.pt[i].cls));
            rc = 1;
            goto out;
        }
    }
    if (scm_family_check_full(&fp->fam, fp->index, act, &err)) {
        fprintf(stderr, ME ": %s\n", err.msg);
        rc = 1;
        goto out;
    }
    const scm_fam_point *p = &fp->fam.pt[fp->index];
    *Q = malloc(sizeof **Q * (size_t)(K * K));
    *R = malloc(sizeof **R * (size_t)(K * M));
    if (!*Q || !*R) {
        fprintf(stderr, ME ": out of memory\n");
        rc = 1;
        goto out;
    }
    memcpy(*Q, p->Q, sizeof **Q * (size_t)(K * K));
    memcpy(*R, p->R, sizeof **R * (size_t)(K * M));
    snprintf(desc, desclen, "family k1 = %ld [%d] (%s): ansatz %s at k1 = %d, loss %.12g, %s", k1,
             fp->index, fp->how, p->ansatz, p->ansatz_k1, p->eps, scm_fam_class_str(p->cls));
    rc = 0;
out:
    for (int i = 0; i < nans; i++)
        scm_ansatz_free(ans[i]);
    return rc;
}

int scm_cmd_stability(int argc, char **argv)
{
    long K = -1, M = -1, k1 = -1, index = -1, starts = 100, d = 0, steps = 1000, trials = 10,
         seed = 1;
    int quiet = 0, flow = 1, hess = 1;
    double loss = NAN;
    family_pick fpick;
    memset(&fpick, 0, sizeof fpick);
    const char *point = NULL, *ansatz = NULL, *out = NULL, *actname = NULL;
    scm_stab_opts o;
    scm_stab_opts_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            st_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
            continue;
        }
        if (!strcmp(a, "--no-flow")) {
            flow = 0;
            continue;
        }
        if (!strcmp(a, "--no-hessian")) {
            hess = 0;
            continue;
        }
        if (!v) {
            fprintf(stderr, ME ": unknown option or missing value: '%s'\n", a);
            st_usage(stderr);
            return 2;
        }
        int bad = 0;
        if (!strcmp(a, "--K"))
            bad = cli_opt_long(ME, a, v, 1, 10000, &K);
        else if (!strcmp(a, "--M"))
            bad = cli_opt_long(ME, a, v, 1, 10000, &M);
        else if (!strcmp(a, "--k1"))
            bad = cli_opt_long(ME, a, v, 0, 10000, &k1);
        else if (!strcmp(a, "--index"))
            bad = cli_opt_long(ME, a, v, 0, 1000000, &index);
        else if (!strcmp(a, "--starts"))
            bad = cli_opt_long(ME, a, v, 0, 1000000, &starts);
        else if (!strcmp(a, "--d"))
            bad = cli_opt_long(ME, a, v, 1, 100000, &d);
        else if (!strcmp(a, "--steps"))
            bad = cli_opt_long(ME, a, v, 0, 100000000, &steps);
        else if (!strcmp(a, "--trials"))
            bad = cli_opt_long(ME, a, v, 1, 100000, &trials);
        else if (!strcmp(a, "--seed"))
            bad = cli_opt_long(ME, a, v, 0, 2147483647L, &seed);
        else if (!strcmp(a, "--loss")) {
            bad = !cli_parse_double(v, &loss) || !(loss >= 0.0);
            if (bad)
                fprintf(stderr, ME ": --loss needs a non-negative number, got '%s'\n", v);
        } else if (!strcmp(a, "--eta"))
            bad = cli_opt_positive(ME, a, v, &o.eta);
        else if (!strcmp(a, "--t-max"))
            bad = cli_opt_positive(ME, a, v, &o.t_max);
        else if (!strcmp(a, "--verdict-sigma-max"))
            bad = cli_opt_positive(ME, a, v, &o.verdict_sigma_max);
        else if (!strcmp(a, "--sigma")) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s", v);
            o.n_sigma = 0;
            for (char *tok = strtok(buf, ","); tok && !bad; tok = strtok(NULL, ",")) {
                if (o.n_sigma == SCM_STAB_MAX_SIGMA) {
                    fprintf(stderr, ME ": at most %d sigma values\n", SCM_STAB_MAX_SIGMA);
                    return 2;
                }
                bad = cli_opt_positive(ME, a, tok, &o.sigma[o.n_sigma++]);
            }
            if (!bad && o.n_sigma == 0) {
                fprintf(stderr, ME ": --sigma needs at least one value\n");
                return 2;
            }
        } else if (!strcmp(a, "--point"))
            point = v;
        else if (!strcmp(a, "--ansatz"))
            ansatz = v;
        else if (!strcmp(a, "--activation"))
            actname = v;
        else if (!strcmp(a, "-o"))
            out = v;
        else {
            fprintf(stderr, ME ": unknown option '%s'\n", a);
            st_usage(stderr);
            return 2;
        }
        if (bad)
            return 2;
        i++;
    }
    int family = K >= 0 || M >= 0 || k1 >= 0;
    if (point && family) {
        fprintf(stderr, ME ": give either --point FILE --index I or --K --M --k1, not both\n");
        return 2;
    }
    if (point && isfinite(loss)) {
        fprintf(stderr, ME ": --loss selects in a family (--K --M --k1), not in --point files\n");
        return 2;
    }
    if (index >= 0 && isfinite(loss)) {
        fprintf(stderr, ME ": give --index or --loss, not both\n");
        return 2;
    }
    if (point && index < 0) {
        fprintf(stderr, ME ": --point needs --index\n");
        return 2;
    }
    if (!point && (K < 0 || M < 0 || k1 < 0)) {
        fprintf(stderr, ME ": --K, --M and --k1 are required (or --point FILE --index I)\n");
        st_usage(stderr);
        return 2;
    }
    if (!point && k1 > K) {
        fprintf(stderr, ME ": --k1 %ld exceeds K = %ld\n", k1, K);
        return 2;
    }
    o.d = d;
    o.n_steps = (int)steps;
    o.n_trials = (int)trials;
    o.seed = (unsigned long)seed;
    o.run_flow = flow;
    o.hessian = hess;
    scm_error err;
    if (scm_stab_opts_check(&o, &err)) {
        fprintf(stderr, ME ": %s\n", err.msg);
        return 2;
    }
    gsl_set_error_handler_off();

    double *Q = NULL, *R = NULL;
    char desc[1200] = "", fileact[64] = "relu";
    int rc;
    if (point)
        rc = load_point(point, index, &K, &M, fileact, sizeof fileact, &Q, &R, desc, sizeof desc);
    else
        rc = 0;
    const scm_activation *act = NULL;
    if (!rc) {
        const char *an = actname ? actname : fileact;
        act = scm_activation_find(an);
        if (!act) {
            fprintf(stderr, ME ": unknown activation '%s' (relu, erf, linear)\n", an);
            rc = 2;
        }
    }
    if (!rc && d > 0 && d < 1) {
        rc = 2;
    }
    if (!rc && !point)
        rc = find_family(K, M, k1, ansatz, starts, index, loss, act, &fpick, &Q, &R, desc,
                         sizeof desc);
    scm_model *m = NULL;
    scm_stab_result r;
    if (!rc) {
        m = scm_model_alloc((int)K, (int)M, act, NULL, NULL, NULL, &err);
        if (!m) {
            fprintf(stderr, ME ": %s\n", err.msg);
            rc = 2;
        }
    }
    if (!rc) {
        scm_status st = scm_stab_analyse(m, Q, R, &o, &r, &err);
        if (st) {
            fprintf(stderr, ME ": %s\n", err.msg);
            rc = st == SCM_ENOMEM ? 1 : 2;
        }
    }
    if (rc)
        goto done;

    if (!quiet) {
        printf("scm stability: K = %ld, M = %ld, %s, T = I, v = v* = 1, d = %ld\n", K, M,
               act->name, r.d);
        if (fpick.fam.n)
            print_family(&fpick);
        else
            printf("point      %s\n", desc);
        printf("loss       %.12g   residual %.3g\n", r.eps, r.residual);
        if (!r.smooth.smooth)
            printf("smoothness not differentiable here: %s (no Hessian; the perturbation test "
                   "decides)\n",
                   r.smooth.what);
        else if (!r.smooth.closed_form)
            printf("smoothness kernel-singular (Hessian exists, C^2): %s; finite-difference "
                   "Hessian\n",
                   r.smooth.what);
        if (r.hessian_done) {
            printf("Hessian    %s, n = %d: %d negative, %d zero (|l| <= %.2e), %d positive; "
                   "max %.4g\n",
                   r.hessian_closed ? "closed form" : "central differences", r.counts.n,
                   r.counts.n_neg, r.counts.n_zero, r.counts.zero_tol, r.counts.n_pos,
                   r.eval_max);
            if (r.hessian_closed)
                printf("           closed form vs central differences: %.2e (relative)\n",
                       r.hessian_fd_diff);
            printf("           smallest:");
            for (int i = 0; i < r.n_small; i++)
                printf(" %.4g", r.eval_small[i]);
            printf("\n");
            printf("zero modes predicted %ld: rotations of the %ld-dim complement of the "
                   "teacher span %ld (p = %d students' directions outside it)",
                   r.zm.total, r.d - r.zm.rank_T, r.zm.rotation, r.zm.p);
            if (r.zm.homogeneity)
                printf(", ReLU homogeneity of parallel students %ld", r.zm.homogeneity);
            if (r.zm.linear)
                printf(", linear: same v^T W %ld", r.zm.linear);
            printf("\n");
        }
        if (r.jacobian_done)
            printf("Jacobian   (F_Q, F_R): largest real part %.4g, smallest %.4g\n",
                   r.jac_re_max, r.jac_re_min);
        printf("perturbation: %d GD steps of eta = %g (tau = %g), then CVODE to t = %g%s\n",
               o.n_steps, o.eta, o.n_steps * o.eta, o.t_max, o.run_flow ? "" : " (off)");
        printf("%-8s %6s %-10s %-10s %-10s %-10s %-10s  %-28s %s\n", "sigma", "trials",
               "dist0_med", "dist_med", "dist_max", "deps_med", "deps_max", "destination",
               "verdict");
        for (int i = 0; i < r.n_rows; i++) {
            scm_stab_row *w = &r.rows[i];
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
                   scm_verdict_str(w->verdict), w->sigma > o.verdict_sigma_max ? " (not in verdict)" : "");
        }
        printf("verdict    %s (perturbation test); Hessian: %s; %s\n", scm_verdict_str(r.verdict),
               scm_hverdict_str(r.hverdict),
               r.agree == 1 ? "the two tests agree"
               : r.agree == 0 ? "THE TWO TESTS DISAGREE"
                              : "not comparable");
    }
    if (out) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
        cJSON_AddStringToObject(root, "command", "stability");
        cJSON_AddNumberToObject(root, "K", (double)K);
        cJSON_AddNumberToObject(root, "M", (double)M);
        cJSON_AddStringToObject(root, "activation", act->name);
        cJSON_AddStringToObject(root, "point", desc);
        if (fpick.fam.n)
            cJSON_AddItemToObject(root, "family", family_json(&fpick));
        cJSON_AddItemToObject(root, "loss", num(r.eps));
        cJSON_AddItemToObject(root, "residual", num(r.residual));
        cJSON_AddNumberToObject(root, "d", (double)r.d);
        cJSON_AddItemToObject(root, "Q", scm_output_matrix(Q, (int)K, (int)K));
        cJSON_AddItemToObject(root, "R", scm_output_matrix(R, (int)K, (int)M));
        cJSON *sm = cJSON_AddObjectToObject(root, "smoothness");
        cJSON_AddBoolToObject(sm, "hessian_exists", r.smooth.smooth);
        cJSON_AddBoolToObject(sm, "closed_form", r.smooth.closed_form);
        cJSON_AddNumberToObject(sm, "dead_students", r.smooth.n_dead);
        cJSON_AddNumberToObject(sm, "parallel_student_pairs", r.smooth.n_par_ss);
        cJSON_AddNumberToObject(sm, "aligned_student_teacher_pairs", r.smooth.n_par_st);
        cJSON_AddStringToObject(sm, "what", r.smooth.what);
        cJSON *h = cJSON_AddObjectToObject(root, "hessian");
        cJSON_AddBoolToObject(h, "computed", r.hessian_done);
        if (r.hessian_done) {
            cJSON_AddStringToObject(h, "method", r.hessian_closed ? "closed_form" : "central_differences");
            cJSON_AddItemToObject(h, "closed_vs_fd", num(r.hessian_fd_diff));
            cJSON_AddNumberToObject(h, "n", r.counts.n);
            cJSON_AddNumberToObject(h, "negative", r.counts.n_neg);
            cJSON_AddNumberToObject(h, "zero", r.counts.n_zero);
            cJSON_AddNumberToObject(h, "positive", r.counts.n_pos);
            cJSON_AddItemToObject(h, "zero_threshold", num(r.counts.zero_tol));
            cJSON_AddItemToObject(h, "smallest", scm_output_vector(r.eval_small, r.n_small));
            cJSON_AddItemToObject(h, "largest", num(r.eval_max));
        }
        cJSON_AddStringToObject(h, "verdict", scm_hverdict_str(r.hverdict));
        cJSON *z = cJSON_AddObjectToObject(root, "zero_modes_predicted");
        cJSON_AddNumberToObject(z, "total", (double)r.zm.total);
        cJSON_AddNumberToObject(z, "rotations", (double)r.zm.rotation);
        cJSON_AddNumberToObject(z, "students_outside_teacher_span_rank", r.zm.p);
        cJSON_AddNumberToObject(z, "teacher_rank", r.zm.rank_T);
        cJSON_AddNumberToObject(z, "relu_homogeneity", (double)r.zm.homogeneity);
        cJSON_AddNumberToObject(z, "linear", (double)r.zm.linear);
        cJSON *jj = cJSON_AddObjectToObject(root, "jacobian");
        cJSON_AddBoolToObject(jj, "computed", r.jacobian_done);
        cJSON_AddItemToObject(jj, "re_max", r.jacobian_done ? num(r.jac_re_max) : cJSON_CreateNull());
        cJSON_AddItemToObject(jj, "re_min", r.jacobian_done ? num(r.jac_re_min) : cJSON_CreateNull());
        cJSON *pt = cJSON_AddObjectToObject(root, "perturbation");
        cJSON_AddNumberToObject(pt, "steps", o.n_steps);
        cJSON_AddNumberToObject(pt, "eta", o.eta);
        cJSON_AddNumberToObject(pt, "seed", (double)o.seed);
        cJSON_AddBoolToObject(pt, "flow", o.run_flow);
        cJSON_AddNumberToObject(pt, "t_max", o.t_max);
        cJSON_AddNumberToObject(pt, "verdict_sigma_max", o.verdict_sigma_max);
        cJSON *rows = cJSON_AddArrayToObject(pt, "rows");
        for (int i = 0; i < r.n_rows; i++) {
            scm_stab_row *w = &r.rows[i];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "sigma", w->sigma);
            cJSON_AddNumberToObject(j, "trials", w->n);
            cJSON_AddItemToObject(j, "dist0_median", num(w->dist0_med));
            cJSON_AddItemToObject(j, "dist0_max", num(w->dist0_max));
            cJSON_AddItemToObject(j, "dist_median", num(w->dist_med));
            cJSON_AddItemToObject(j, "dist_max", num(w->dist_max));
            cJSON_AddItemToObject(j, "loss_change_median", num(w->deps_med));
            cJSON_AddItemToObject(j, "loss_change_max", num(w->deps_max));
            cJSON_AddNumberToObject(j, "distance_grew", w->n_grew);
            cJSON_AddNumberToObject(j, "dest_same", w->n_same);
            cJSON_AddNumberToObject(j, "dest_global_min", w->n_global);
            cJSON_AddNumberToObject(j, "dest_other", w->n_other);
            cJSON_AddNumberToObject(j, "dest_failed", w->n_failed);
            cJSON_AddNumberToObject(j, "flow_unsettled", w->n_unsettled);
            cJSON_AddItemToObject(j, "other_loss_min", num(w->other_eps_min));
            cJSON_AddItemToObject(j, "other_loss_max", num(w->other_eps_max));
            cJSON_AddItemToObject(j, "flow_loss_median", num(w->flow_eps_med));
            cJSON_AddStringToObject(j, "verdict", scm_verdict_str(w->verdict));
            cJSON_AddItemToArray(rows, j);
        }
        cJSON_AddStringToObject(root, "verdict", scm_verdict_str(r.verdict));
        cJSON_AddStringToObject(root, "tests_agree",
                                r.agree == 1 ? "yes" : r.agree == 0 ? "no" : "not_comparable");
        if (scm_output_write_json(out, root, 0, &err)) {
            fprintf(stderr, ME ": %s\n", err.msg);
            rc = 1;
        }
        cJSON_Delete(root);
    }
done:
    scm_family_free(&fpick.fam);
    scm_model_free(m);
    free(Q);
    free(R);
    return rc;
}
