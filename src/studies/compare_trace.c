/* compare_trace.c: the loss-vs-time traces of the comparison (compare.h):
 * the first run of each of the most frequent classes of a runs file,
 * integrated again (the runs file keeps no trajectory) from the same
 * initial state with an accurate integrator, so that the plotted losses
 * are right to 1e-6 relative down to eps = 1e-12 (issue 25, item 5;
 * docs/sweeps.md, "Accuracy of a trajectory's loss").  The sweep's own
 * integrator (a loose first stage at rtol 1e-4) classifies the runs well
 * but shifts the plateau escapes by 1e-4 .. 1e-3 relative and carries the
 * loss only to ~1e-10 absolute; the traces use no loose stage, rtol 1e-10,
 * and the tail stage of traj.h.  Where the accurate run ends in another
 * class than the sweep's run (tolerance sensitivity), the trace says so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/init.h"
#include "scm/output.h"
#include "scm/sweep.h"
#include "scm/traj.h"
#include "studies/compare_internal.h"

/* The traces' integrator (compare_internal.h).  rtol 1e-10 throughout: the
 * state at the tail's entry (eps ~ 1e-4) must be accurate to ~1e-7 for the
 * tail to carry 1e-6 relative to eps = 1e-12 (docs/sweeps.md). */
#define TRACE_RTOL 1e-10
#define TRACE_ATOL 1e-12
#define TRACE_TAIL_EPS 1e-4
#define TRACE_EPS_STOP 1e-12

void scm_compare_trace_opts(const scm_config *c, scm_traj_opts *to)
{
    *to = c->traj;
    to->record = 1;
    to->loose_until = 0.0;
    to->rtol = fmin(to->rtol, TRACE_RTOL);
    to->atol = fmin(to->atol, TRACE_ATOL);
    to->certify = NULL;
    if (to->eps_stop > 0.0)
        to->eps_stop = fmin(to->eps_stop, TRACE_EPS_STOP);
    /* the tail stage takes gd with the model's v only (traj.h) */
    to->tail_eps = c->rule == &scm_rule_gd ? TRACE_TAIL_EPS : 0.0;
}

cJSON *scm_compare_trace_integrator_json(const scm_config *c)
{
    scm_traj_opts to;
    scm_compare_trace_opts(c, &to);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "what",
                            "the traced runs integrated again from their initial states with "
                            "these options (no loose stage); class_traced is where that run "
                            "ended, class the sweep's run");
    cJSON_AddNumberToObject(j, "rtol", to.rtol);
    cJSON_AddNumberToObject(j, "atol", to.atol);
    cJSON_AddNumberToObject(j, "loose_until", to.loose_until);
    cJSON_AddNumberToObject(j, "tail_eps", to.tail_eps);
    cJSON_AddNumberToObject(j, "tail_rtol", to.tail_rtol);
    cJSON_AddNumberToObject(j, "eps_stop", to.eps_stop);
    cJSON_AddNumberToObject(j, "grad_stop", to.grad_stop);
    return j;
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

/* The class of the accurate run tr, as the sweep classifies a run
 * (sweep.h) against the families fams (may be empty). */
static void traced_class(const scm_model *m, const scm_traj_result *tr,
                         const scm_sweep_families *fams, char *cls, size_t n)
{
    scm_sweep_opts so;
    scm_sweep_opts_default(&so);
    scm_sweep_record rec;
    memset(&rec, 0, sizeof rec);
    rec.stop = tr->stop;
    rec.converged = tr->stop == SCM_STOP_FIXED_POINT || tr->stop == SCM_STOP_EPS;
    rec.eps = tr->eps;
    scm_sweep_classify(m, tr->Q, tr->R, tr->eps, fams, &so, &rec);
    snprintf(cls, n, "%s", rec.cls);
}

/* One trace's object: the sweep's class, the accurate run's class, stop,
 * tail entry and final loss, its output times and losses. */
static cJSON *trace_json(long K, long index, const char *cls, const char *cls_traced,
                         const scm_traj_result *tr)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "K", (double)K);
    cJSON_AddNumberToObject(o, "index", (double)index);
    cJSON_AddStringToObject(o, "class", cls);
    cJSON_AddStringToObject(o, "class_traced", cls_traced);
    cJSON_AddBoolToObject(o, "class_differs", strcmp(cls, cls_traced) != 0);
    cJSON_AddStringToObject(o, "stop_traced", scm_stop_reason_str(tr->stop));
    if (tr->stop == SCM_STOP_FAILED)
        cJSON_AddStringToObject(o, "why_traced", tr->err.msg);
    cJSON_AddNumberToObject(o, "eps_final", tr->eps); /* NaN: null */
    if (isfinite(tr->tail_t))
        cJSON_AddNumberToObject(o, "tail_t", tr->tail_t);
    else
        cJSON_AddNullToObject(o, "tail_t");
    cJSON_AddItemToObject(o, "t", scm_output_vector(tr->out_t, (int)tr->n_out));
    cJSON_AddItemToObject(o, "eps", scm_output_vector(tr->out_eps, (int)tr->n_out));
    return o;
}

scm_status scm_compare_traces(const char *runs_path, const char *fam_path, int n,
                              const scm_config *c, uint64_t base, long K, cJSON *out,
                              scm_error *err_out)
{
    long tidx[100];
    char tcls[100][80];
    int nt = pick_traces(runs_path, n, tidx, tcls);
    if (nt < 0)
        return scm_error_set(err_out, SCM_EIO, "cannot read back '%s'", runs_path);
    scm_sweep_families fams = {0, NULL, NULL};
    if (fam_path && nt > 0 && scm_sweep_families_load(fam_path, &fams, err_out))
        return SCM_EIO; /* read by the sweep already: cannot happen but by I/O */
    /* a run that cannot be traced ends the traces of this K, quietly */
    scm_error err;
    scm_model *m = scm_config_model(c, &err);
    double *Q0 = m ? malloc(sizeof(double) * (size_t)(c->K * c->K)) : NULL;
    double *R0 = m ? malloc(sizeof(double) * (size_t)(c->K * c->M)) : NULL;
    scm_traj_opts to;
    scm_compare_trace_opts(c, &to);
    for (int q = 0; m && Q0 && R0 && q < nt; q++) {
        const long t = tidx[q];
        scm_traj_result tr;
        if (scm_init_sample(m, c->law, c->d, c->sigma, scm_sweep_seed(base, t), Q0, R0, &err))
            break;
        if (c->scale != 1.0)
            scm_init_scale(m, c->scale, Q0, R0);
        if (scm_traj_run(m, c->rule, Q0, R0, &to, &tr, &err))
            break;
        char cls[80];
        traced_class(m, &tr, &fams, cls, sizeof cls);
        cJSON_AddItemToArray(out, trace_json(K, t, tcls[q], cls, &tr));
        scm_traj_result_free(&tr);
    }
    free(Q0);
    free(R0);
    scm_model_free(m);
    scm_sweep_families_free(&fams);
    return SCM_OK;
}
