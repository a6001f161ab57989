/* compare_reached.c: the parts of the comparison (compare.h) that look at
 * where the runs of one K ended: the families reached, each with the
 * stability verdict of its point (the perturbation test and the Hessian,
 * as `scm fixed-points --stability`), the unconverged runs by the point
 * they sit near, and loss-vs-time traces of the first run of the most
 * frequent classes (recorded again: the runs file keeps no trajectory). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/init.h"
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


/* The runs to trace: the first run of each of the n most frequent classes
 * of a runs file (so that the traces show the different plateaus, not n
 * runs that happen to end alike).  Fills idx[] and cls[] (most frequent
 * first); returns how many, or -1 if the file cannot be read. */
#define TRACE_MAX_CLASSES 512
static int pick_traces(const char *runs_path, int n, long *idx, char (*cls)[80])
{
    FILE *f = fopen(runs_path, "r");
    if (!f)
        return -1;
    static const int cap = TRACE_MAX_CLASSES;
    char(*name)[80] = malloc(sizeof *name * (size_t)cap);
    long *first = malloc(sizeof *first * (size_t)cap), *count = malloc(sizeof *count * (size_t)cap);
    char *line = malloc(1 << 16);
    int nc = 0;
    if (!name || !first || !count || !line) {
        nc = -1;
        goto done;
    }
    int header = 1;
    while (fgets(line, 1 << 16, f)) {
        if (header) { /* line 1 is the sweep's header */
            header = 0;
            continue;
        }
        cJSON *r = cJSON_Parse(line);
        const cJSON *ci = cJSON_GetObjectItemCaseSensitive(r, "class"),
                    *ii = cJSON_GetObjectItemCaseSensitive(r, "index");
        if (cJSON_IsString(ci) && cJSON_IsNumber(ii)) {
            int q = 0;
            while (q < nc && strcmp(name[q], ci->valuestring) != 0)
                q++;
            if (q == nc && nc < cap) {
                snprintf(name[nc], sizeof name[nc], "%s", ci->valuestring);
                first[nc] = (long)ii->valuedouble;
                count[nc++] = 0;
            }
            if (q < nc)
                count[q]++;
        }
        cJSON_Delete(r);
    }
    int got = 0;
    for (; got < n && got < nc; got++) { /* selection by count, ties by first run */
        int b = -1;
        for (int q = 0; q < nc; q++)
            if (count[q] > 0 && (b < 0 || count[q] > count[b] ||
                                 (count[q] == count[b] && first[q] < first[b])))
                b = q;
        if (b < 0)
            break;
        idx[got] = first[b];
        snprintf(cls[got], sizeof cls[got], "%s", name[b]);
        count[b] = 0;
    }
    nc = got;
done:
    fclose(f);
    free(name);
    free(first);
    free(count);
    free(line);
    return nc;
}


scm_status scm_compare_traces(const char *runs_path, int n, const scm_config *c, uint64_t base,
                              long K, cJSON *out, scm_error *err_out)
{
    long tidx[100];
    char tcls[100][80];
    int nt = pick_traces(runs_path, n, tidx, tcls);
    if (nt < 0)
        return scm_error_set(err_out, SCM_EIO, "cannot read back '%s'", runs_path);
    /* a run that cannot be traced ends the traces of this K, quietly */
    scm_error err;
    scm_model *m = scm_config_model(c, &err);
    double *Q0 = m ? malloc(sizeof(double) * (size_t)(c->K * c->K)) : NULL;
    double *R0 = m ? malloc(sizeof(double) * (size_t)(c->K * c->M)) : NULL;
    for (int q = 0; m && Q0 && R0 && q < nt; q++) {
        const long t = tidx[q];
        scm_traj_result tr;
        if (scm_init_sample(m, c->law, c->d, c->sigma, scm_sweep_seed(base, t), Q0, R0, &err))
            break;
        if (c->scale != 1.0)
            scm_init_scale(m, c->scale, Q0, R0);
        scm_traj_opts to = c->traj;
        to.record = 1;
        if (scm_traj_run(m, c->rule, Q0, R0, &to, &tr, &err))
            break;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "K", (double)K);
        cJSON_AddNumberToObject(o, "index", (double)t);
        cJSON_AddStringToObject(o, "class", tcls[q]);
        cJSON_AddItemToObject(o, "t", scm_output_vector(tr.out_t, (int)tr.n_out));
        cJSON_AddItemToObject(o, "eps", scm_output_vector(tr.out_eps, (int)tr.n_out));
        cJSON_AddItemToArray(out, o);
        scm_traj_result_free(&tr);
    }
    free(Q0);
    free(R0);
    scm_model_free(m);
    return SCM_OK;
}
