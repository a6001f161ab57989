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
#include "scm/fixedpoint.h"
#include "scm/output.h"
#include "scm/stability.h"
#include "scm_version.h"

#define ME "scm stability"

static void st_usage(FILE *f)
{
    fprintf(f,
            "usage: scm stability --K K --M M --k1 N [--ansatz FILE] [options]\n"
            "       scm stability --point FP.json --index I [options]\n"
            "\n"
            "Stability of a fixed point: the perturbation test (W + N(0, sigma^2),\n"
            "GD steps W <- W - eta d grad eps, then the CVODE flow from the perturbed\n"
            "overlaps) and the spectra (weight-space Hessian with symmetry zero modes,\n"
            "Jacobian of (F_Q, F_R)).  A family is the lowest-loss enumerated point\n"
            "with k1 anti-aligned students (T = I, v = v* = 1).\n"
            "\n"
            "  --K K --M M --k1 N   the family (with the built-in ansatze or --ansatz)\n"
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

/* The lowest-loss point of the family: n_anti == k1, full residual < 1e-12. */
static int find_family(long K, long M, long k1, const char *ansatz_file, long starts,
                       const scm_activation *act, double **Q, double **R, char *desc,
                       size_t desclen)
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
    *Q = calloc((size_t)(K * K), sizeof **Q);
    *R = calloc((size_t)(K * M), sizeof **R);
    if (!*Q || !*R) {
        rc = 1;
        goto out;
    }
    double best = INFINITY;
    int applied = 0;
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = (int)starts;
    for (int a = 0; a < nans; a++) {
        int lo, hi;
        if (scm_ansatz_applies(ans[a], (int)K, (int)M, &lo, &hi) != 1)
            continue;
        /* the k1 instance, and (K = M) its mirror K - k1, which holds the same points */
        for (int kk = lo; kk <= hi; kk++) {
            if (kk != k1 && !(K == M && kk == K - k1))
                continue;
            scm_ansatz_inst *in = scm_ansatz_instantiate(ans[a], (double)K, (double)M, kk, &err);
            if (!in)
                continue;
            applied++;
            scm_fp_set set;
            scm_fp_set_init(&set);
            if (scm_fp_enumerate(ans[a], in, act, &o, NULL, 0, &set, &err) == SCM_OK)
                for (int i = 0; i < set.n; i++) {
                    scm_fp_point *p = &set.pt[i];
                    scm_fp_structure s;
                    scm_fp_classify(in, p->x, &s);
                    double res = p->polished ? p->res_polish : p->res_full;
                    if (!p->Q || s.n_anti != (double)k1 || s.n_other != (double)(K - M) ||
                        !(res < 1e-12) || !(p->eps < best))
                        continue;
                    best = p->eps;
                    memcpy(*Q, p->Q, sizeof **Q * (size_t)(K * K));
                    memcpy(*R, p->R, sizeof **R * (size_t)(K * M));
                    snprintf(desc, desclen, "family k1 = %ld (ansatz %s at k1 = %d), loss %.12g",
                             k1, scm_ansatz_name(ans[a]), kk, p->eps);
                }
            scm_fp_set_free(&set);
            scm_ansatz_inst_free(in);
        }
    }
    if (!applied) {
        fprintf(stderr, ME ": no ansatz applies at K = %ld, M = %ld, k1 = %ld\n", K, M, k1);
        goto out;
    }
    if (!isfinite(best)) {
        fprintf(stderr,
                ME ": no specialised fixed point with %ld anti-aligned students found at K = "
                   "%ld, M = %ld\n",
                k1, K, M);
        rc = 1;
        goto out;
    }
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
        else if (!strcmp(a, "--eta"))
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
        rc = find_family(K, M, k1, ansatz, starts, act, &Q, &R, desc, sizeof desc);
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
    scm_model_free(m);
    free(Q);
    free(R);
    return rc;
}
