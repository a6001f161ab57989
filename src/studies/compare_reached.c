/* compare_reached.c: the parts of the comparison (compare.h) that look at
 * where the runs of one K ended: the families reached, each with the
 * stability verdict of its point (the perturbation test and the Hessian,
 * as `scm fixed-points --stability`), the unconverged runs by the point
 * they sit near (the traces are compare_trace.c's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/output.h"
#include "scm/stability.h"
#include "scm/sweep.h"
#include "scm/traj.h"
#include "studies/compare_internal.h"

/* Row-major n x m matrix from a JSON array of arrays. */
static int json_matrix(const cJSON *a, int n, int m, double *out)
{
    if (cJSON_GetArraySize(a) != n)
        return -1;
    for (int i = 0; i < n; i++) {
        const cJSON *row = cJSON_GetArrayItem(a, i);
        if (cJSON_GetArraySize(row) != m)
            return -1;
        for (int j = 0; j < m; j++) {
            const cJSON *x = cJSON_GetArrayItem(row, j);
            if (!cJSON_IsNumber(x))
                return -1;
            out[i * m + j] = x->valuedouble;
        }
    }
    return 0;
}


#define COMPARE_STAB_MAX_K 20 /* as scm fixed-points --stability */

/* The families the sweep of one K reached (its summary's matched classes),
 * each with its fixed point from the families file and, unless no_stab,
 * the verdict of scm_stab_analyse with the options of scm fixed-points
 * --stability (3 trials at sigma 1e-4, 1e-3, 1e-2).  Appends to out;
 * returns 0, or -1 when the families file cannot be read. */
scm_status scm_compare_reached(const scm_compare_opts *opts, const char *fam_path, const cJSON *S,
                               const scm_config *c, long K, cJSON *out, scm_error *err_out)
{
    const int no_stab = opts->no_stability;
    cJSON *F = scm_compare_read_json(fam_path);
    if (!F)
        return scm_error_set(err_out, SCM_EIO, "cannot read back '%s'", fam_path);
    /* a plain family list (name, k1, loss) has no points to analyse */
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(F, "fixed_points");
    const int Ki = c->K, Mi = c->M;
    scm_error err;
    scm_model *m = scm_model_alloc(Ki, Mi, c->act, NULL, NULL, NULL, &err);
    double *Q = malloc(sizeof(double) * (size_t)(Ki * Ki)),
           *R = malloc(sizeof(double) * (size_t)(Ki * Mi));
    if (!m || !Q || !R) {
        scm_model_free(m);
        free(Q);
        free(R);
        cJSON_Delete(F);
        return scm_error_set(err_out, SCM_ENOMEM, "out of memory");
    }
    scm_sweep_opts sw;
    scm_sweep_opts_default(&sw);
    scm_stab_opts so;
    scm_stab_opts_three_sigma(&so);
    const cJSON *cl;
    cJSON_ArrayForEach(cl, cJSON_GetObjectItemCaseSensitive(S, "classes"))
    {
        const cJSON *fam = cJSON_GetObjectItemCaseSensitive(cl, "family");
        if (!cJSON_IsString(fam))
            continue; /* unmatched, not converged */
        double lo = cJSON_GetObjectItemCaseSensitive(cl, "eps_min")->valuedouble,
               hi = cJSON_GetObjectItemCaseSensitive(cl, "eps_max")->valuedouble,
               mid = 0.5 * (lo + hi);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "K", (double)K);
        cJSON_AddStringToObject(o, "class",
                                cJSON_GetObjectItemCaseSensitive(cl, "class")->valuestring);
        cJSON_AddNumberToObject(o, "k1", cJSON_GetObjectItemCaseSensitive(cl, "k1")->valuedouble);
        cJSON_AddNumberToObject(o, "count",
                                cJSON_GetObjectItemCaseSensitive(cl, "count")->valuedouble);
        cJSON_AddNumberToObject(o, "fraction",
                                cJSON_GetObjectItemCaseSensitive(cl, "fraction")->valuedouble);
        cJSON_AddItemToArray(out, o);
        if (strcmp(fam->valuestring, "global_minimum") == 0) {
            cJSON_AddNumberToObject(o, "loss", 0.0);
            cJSON_AddStringToObject(o, "verdict", "global_minimum");
            cJSON_AddStringToObject(o, "hessian_verdict", "-");
            continue;
        }
        if (!cJSON_IsArray(pts)) {
            cJSON_AddNumberToObject(o, "loss", mid);
            cJSON_AddStringToObject(o, "verdict", "not_run");
            cJSON_AddStringToObject(o, "hessian_verdict", "-");
            cJSON_AddStringToObject(o, "why", "the families file lists no points (Q, R)");
            continue;
        }
        /* the listed point whose loss the runs matched */
        int best = -1;
        double bd = INFINITY;
        for (int i = 0; pts && i < cJSON_GetArraySize(pts); i++) {
            const cJSON *l = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pts, i), "loss");
            if (cJSON_IsNumber(l) && fabs(l->valuedouble - mid) < bd) {
                bd = fabs(l->valuedouble - mid);
                best = i;
            }
        }
        const cJSON *pt = best >= 0 ? cJSON_GetArrayItem(pts, best) : NULL;
        if (!pt || !(bd <= sw.match_rtol * fabs(mid) + sw.match_atol + 0.5 * (hi - lo)) ||
            json_matrix(cJSON_GetObjectItemCaseSensitive(pt, "Q"), Ki, Ki, Q) ||
            json_matrix(cJSON_GetObjectItemCaseSensitive(pt, "R"), Ki, Mi, R)) {
            cJSON_AddNumberToObject(o, "loss", mid);
            cJSON_AddStringToObject(o, "verdict", "error");
            cJSON_AddStringToObject(o, "hessian_verdict", "-");
            cJSON_AddStringToObject(o, "why", "no point of this loss with Q and R in the file");
            continue;
        }
        cJSON_AddNumberToObject(o, "loss",
                                cJSON_GetObjectItemCaseSensitive(pt, "loss")->valuedouble);
        cJSON_AddNumberToObject(o, "point_index", best);
        if (no_stab || K > COMPARE_STAB_MAX_K) {
            cJSON_AddStringToObject(o, "verdict", "not_run");
            cJSON_AddStringToObject(o, "hessian_verdict", "-");
            cJSON_AddStringToObject(o, "why", no_stab ? "--no-stability" : "K > 20");
            continue;
        }
        scm_compare_note(opts, K, "K = %ld: stability of %s (loss %.10g)", K,
                         cJSON_GetObjectItemCaseSensitive(cl, "class")->valuestring,
                         cJSON_GetObjectItemCaseSensitive(pt, "loss")->valuedouble);
        scm_stab_result r;
        if (scm_stab_analyse(m, Q, R, &so, &r, &err)) {
            cJSON_AddStringToObject(o, "verdict", "error");
            cJSON_AddStringToObject(o, "hessian_verdict", "-");
            cJSON_AddStringToObject(o, "why", err.msg);
            continue;
        }
        cJSON_AddStringToObject(o, "verdict", scm_verdict_str(r.verdict));
        cJSON_AddStringToObject(o, "hessian_verdict", scm_hverdict_str(r.hverdict));
        cJSON_AddStringToObject(o, "tests_agree",
                                r.agree == 1 ? "yes" : r.agree == 0 ? "no" : "not_comparable");
        if (r.hessian_done) {
            cJSON_AddNumberToObject(o, "hessian_negative", r.counts.n_neg);
            cJSON_AddNumberToObject(o, "hessian_zero", r.counts.n_zero);
            if (r.n_small)
                cJSON_AddNumberToObject(o, "hessian_smallest", r.eval_small[0]);
        }
        if (r.jacobian_done)
            cJSON_AddNumberToObject(o, "jacobian_re_max", r.jac_re_max);
        int same = 0, glob = 0, other = 0, failed = 0;
        double omin = INFINITY, omax = -INFINITY;
        for (int q = 0; q < r.n_rows; q++) {
            same += r.rows[q].n_same;
            glob += r.rows[q].n_global;
            other += r.rows[q].n_other;
            failed += r.rows[q].n_failed;
            if (r.rows[q].n_other) {
                omin = fmin(omin, r.rows[q].other_eps_min);
                omax = fmax(omax, r.rows[q].other_eps_max);
            }
        }
        char to[160];
        int w = snprintf(to, sizeof to, "same %d, global %d, other %d", same, glob, other);
        if (other)
            w += snprintf(to + w, sizeof to - (size_t)w, " (loss %.6g..%.6g)", omin, omax);
        if (failed)
            snprintf(to + w, sizeof to - (size_t)w, ", failed %d", failed);
        cJSON_AddStringToObject(o, "escapes_to", to);
    }
    scm_model_free(m);
    free(Q);
    free(R);
    cJSON_Delete(F);
    return SCM_OK;
}

/* The unconverged runs of every K grouped by the listed point they sit
 * nearest (the summaries' not_converged_near, issue 12), each with a
 * stability verdict: the families file's when it had one, else that of
 * the same point among the families reached (same K, loss to 1e-8), else
 * "unknown".  A new array (NULL without memory). */
cJSON *scm_compare_near_rows(cJSON *const *summ, const long *Ks, int nK, const cJSON *reached)
{
    cJSON *out = cJSON_CreateArray();
    for (int j = 0; out && j < nK; j++) {
        const cJSON *g;
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(summ[j], "not_converged_near"))
        {
            cJSON *o = cJSON_Duplicate(g, 1);
            if (!o)
                continue;
            cJSON_AddNumberToObject(o, "K", (double)Ks[j]);
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(g, "stability");
            const double L = cJSON_GetObjectItemCaseSensitive(g, "loss")->valuedouble;
            if (cJSON_IsString(st) && strcmp(st->valuestring, "unknown") == 0) {
                const cJSON *r;
                cJSON_ArrayForEach(r, reached)
                {
                    const cJSON *rk = cJSON_GetObjectItemCaseSensitive(r, "K"),
                                *rl = cJSON_GetObjectItemCaseSensitive(r, "loss"),
                                *rv = cJSON_GetObjectItemCaseSensitive(r, "verdict"),
                                *rh = cJSON_GetObjectItemCaseSensitive(r, "hessian_verdict");
                    if (cJSON_IsNumber(rk) && rk->valuedouble == (double)Ks[j] &&
                        cJSON_IsNumber(rl) && fabs(rl->valuedouble - L) <= 1e-8 * fabs(L) + 1e-10 &&
                        cJSON_IsString(rv) && strcmp(rv->valuestring, "not_run") != 0) {
                        char b[96];
                        snprintf(b, sizeof b, "%.40s/%.40s", rv->valuestring,
                                 cJSON_IsString(rh) ? rh->valuestring : "-");
                        cJSON_ReplaceItemInObjectCaseSensitive(o, "stability", cJSON_CreateString(b));
                        break;
                    }
                }
            }
            cJSON_AddItemToArray(out, o);
        }
    }
    return out;
}
