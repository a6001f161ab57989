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

/* The points of one K whose verdicts are still to compute: their entries
 * and (Q, R). */
typedef struct {
    int n;
    cJSON **o;
    double **Q, **R;
} pending;

static void pending_free(pending *p)
{
    for (int i = 0; i < p->n; i++) {
        free(p->Q[i]);
        free(p->R[i]);
    }
    free(p->o);
    free(p->Q);
    free(p->R);
}

/* Move the fields of f (an object, deleted) to the end of o, in order. */
static void take_fields(cJSON *o, cJSON *f)
{
    while (f && f->child) {
        cJSON *it = cJSON_DetachItemViaPointer(f, f->child);
        cJSON_AddItemToObject(o, it->string, it);
    }
    cJSON_Delete(f);
}

/* The verdicts of the pending points, each entry completed with its
 * fields: handed to opts->jobs at once, or computed here in turn. */
static scm_status pending_run(const scm_compare_opts *opts, const scm_model *m, pending *p,
                              scm_error *err)
{
    if (!opts->jobs) {
        for (int i = 0; i < p->n; i++) {
            cJSON *f = scm_compare_stab_fields(m, p->Q[i], p->R[i]);
            if (!f)
                return scm_error_set(err, SCM_ENOMEM, "out of memory");
            take_fields(p->o[i], f);
        }
        return SCM_OK;
    }
    scm_compare_job *jobs = calloc((size_t)p->n, sizeof *jobs);
    scm_status st = jobs ? SCM_OK : scm_error_set(err, SCM_ENOMEM, "out of memory");
    for (int i = 0; i < p->n && !st; i++)
        if (!(jobs[i].in = scm_compare_job_stab(m, p->Q[i], p->R[i])))
            st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (!st)
        st = opts->jobs(jobs, p->n, opts->threads, err);
    for (int i = 0; i < p->n && !st; i++) {
        cJSON *f = cJSON_Parse(jobs[i].out);
        if (!cJSON_IsObject(f) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(f, "verdict")))
            st = scm_error_set(err, f ? SCM_EINVAL : SCM_ENOMEM,
                               "a malformed stability job result");
        take_fields(p->o[i], f);
    }
    for (int i = 0; jobs && i < p->n; i++) {
        free(jobs[i].in);
        free(jobs[i].out);
    }
    free(jobs);
    return st;
}

/* The entry of one class of the summary (its K, class, k1, count and
 * fraction) appended to out. */
static cJSON *class_entry(const cJSON *cl, long K, cJSON *out)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "K", (double)K);
    cJSON_AddStringToObject(o, "class", cJSON_GetObjectItemCaseSensitive(cl, "class")->valuestring);
    cJSON_AddNumberToObject(o, "k1", cJSON_GetObjectItemCaseSensitive(cl, "k1")->valuedouble);
    cJSON_AddNumberToObject(o, "count", cJSON_GetObjectItemCaseSensitive(cl, "count")->valuedouble);
    cJSON_AddNumberToObject(o, "fraction",
                            cJSON_GetObjectItemCaseSensitive(cl, "fraction")->valuedouble);
    cJSON_AddItemToArray(out, o);
    return o;
}

/* The closing fields of an entry: its verdicts and why (may be NULL). */
static void set_verdicts(cJSON *o, const char *verdict, const char *hessian_verdict,
                         const char *why)
{
    cJSON_AddStringToObject(o, "verdict", verdict);
    cJSON_AddStringToObject(o, "hessian_verdict", hessian_verdict);
    if (why)
        cJSON_AddStringToObject(o, "why", why);
}

/* A closing entry without a point: loss, "verdict", "-" and why. */
static void no_verdict(cJSON *o, double loss, const char *verdict, const char *why)
{
    cJSON_AddNumberToObject(o, "loss", loss);
    set_verdicts(o, verdict, "-", why);
}

/* The listed point of pts whose loss the class (eps in [lo, hi]) matched;
 * -1 when none is. */
static int match_point(const cJSON *pts, double lo, double hi)
{
    scm_sweep_opts sw;
    scm_sweep_opts_default(&sw);
    const double mid = 0.5 * (lo + hi);
    int best = -1;
    double bd = INFINITY;
    for (int i = 0; pts && i < cJSON_GetArraySize(pts); i++) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pts, i), "loss");
        if (cJSON_IsNumber(l) && fabs(l->valuedouble - mid) < bd) {
            bd = fabs(l->valuedouble - mid);
            best = i;
        }
    }
    return best >= 0 && bd <= sw.match_rtol * fabs(mid) + sw.match_atol + 0.5 * (hi - lo) ? best
                                                                                          : -1;
}

/* Above COMPARE_STAB_MAX_K the dense analysis is not run; the point's
 * entry in the families file carries the class of its symmetric Hessian
 * spectrum (`scm fixed-points`, exact at any K), which becomes the
 * Hessian verdict. */
static void symmetric_verdict(cJSON *o, const cJSON *pt)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(pt, "class");
    const char *cls = cJSON_IsString(c) ? c->valuestring : "";
    set_verdicts(o, "not_run",
                 strcmp(cls, "minimum") == 0  ? "min"
                 : strcmp(cls, "saddle") == 0 ? "saddle"
                                              : "-",
                 "K > 20: the Hessian verdict is the symmetric spectrum's of the families file");
}

/* The families the sweep of one K reached (its summary's matched classes),
 * each with its fixed point from the families file and, unless no_stab,
 * the verdict of scm_stab_analyse with the options of scm fixed-points
 * --stability (3 trials at sigma 1e-4, 1e-3, 1e-2), all the verdicts of
 * the K at once (pending_run).  Appends to out; returns 0, or -1 when the
 * families file cannot be read. */
scm_status scm_compare_reached(const scm_compare_opts *opts, const char *fam_path, const cJSON *S,
                               const scm_config *c, long K, cJSON *out, scm_error *err_out)
{
    const int no_stab = opts->no_stability;
    cJSON *F = scm_compare_read_json(fam_path);
    if (!F)
        return scm_error_set(err_out, SCM_EIO, "cannot read back '%s'", fam_path);
    /* a plain family list (name, k1, loss) has no points to analyse */
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(F, "fixed_points");
    const cJSON *classes = cJSON_GetObjectItemCaseSensitive(S, "classes");
    const int Ki = c->K, Mi = c->M, ncl = cJSON_GetArraySize(classes);
    scm_error err;
    scm_model *m = scm_model_alloc(Ki, Mi, c->act, NULL, NULL, NULL, &err);
    pending p = {0, calloc((size_t)ncl + 1, sizeof(cJSON *)),
                 calloc((size_t)ncl + 1, sizeof(double *)),
                 calloc((size_t)ncl + 1, sizeof(double *))};
    scm_status st = m && p.o && p.Q && p.R ? SCM_OK
                                           : scm_error_set(err_out, SCM_ENOMEM, "out of memory");
    const cJSON *cl;
    cJSON_ArrayForEach(cl, classes)
    {
        const cJSON *fam = cJSON_GetObjectItemCaseSensitive(cl, "family");
        if (st || !cJSON_IsString(fam))
            continue; /* unmatched, not converged */
        double lo = cJSON_GetObjectItemCaseSensitive(cl, "eps_min")->valuedouble,
               hi = cJSON_GetObjectItemCaseSensitive(cl, "eps_max")->valuedouble;
        cJSON *o = class_entry(cl, K, out);
        if (strcmp(fam->valuestring, "global_minimum") == 0) {
            no_verdict(o, 0.0, "global_minimum", NULL);
            continue;
        }
        if (!cJSON_IsArray(pts)) {
            no_verdict(o, 0.5 * (lo + hi), "not_run", "the families file lists no points (Q, R)");
            continue;
        }
        const int best = match_point(pts, lo, hi);
        if (best < 0) {
            no_verdict(o, 0.5 * (lo + hi), "error", "no point of this loss in the file");
            continue;
        }
        const cJSON *pt = cJSON_GetArrayItem(pts, best);
        const double loss = cJSON_GetObjectItemCaseSensitive(pt, "loss")->valuedouble;
        cJSON_AddNumberToObject(o, "loss", loss);
        cJSON_AddNumberToObject(o, "point_index", best);
        if (no_stab) {
            set_verdicts(o, "not_run", "-", "--no-stability");
            continue;
        }
        if (K > COMPARE_STAB_MAX_K) {
            symmetric_verdict(o, pt);
            continue;
        }
        double *Q = malloc(sizeof(double) * (size_t)(Ki * Ki)),
               *R = malloc(sizeof(double) * (size_t)(Ki * Mi));
        if (!Q || !R || json_matrix(cJSON_GetObjectItemCaseSensitive(pt, "Q"), Ki, Ki, Q) ||
            json_matrix(cJSON_GetObjectItemCaseSensitive(pt, "R"), Ki, Mi, R)) {
            free(Q);
            free(R);
            if (!Q || !R)
                st = scm_error_set(err_out, SCM_ENOMEM, "out of memory");
            else
                set_verdicts(o, "error", "-", "the point has no Q and R in the file");
            continue;
        }
        scm_compare_note(opts, K, "K = %ld: stability of %s (loss %.10g)", K,
                         cJSON_GetObjectItemCaseSensitive(cl, "class")->valuestring, loss);
        p.o[p.n] = o;
        p.Q[p.n] = Q;
        p.R[p.n++] = R;
    }
    if (!st && p.n > 0)
        st = pending_run(opts, m, &p, err_out);
    pending_free(&p);
    scm_model_free(m);
    cJSON_Delete(F);
    return st;
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
