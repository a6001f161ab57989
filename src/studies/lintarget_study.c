/* lintarget_study.c: the study `scm lintarget` reports (docs/lintarget.md):
 * two-layer runs of the linear target from several small initialisations,
 * their phases and the fits of the phase times against log(1/alpha), and
 * the saddle manifold checked at several c.  It builds the JSON document and
 * the two CSV tables the command writes, so that the command only parses,
 * prints and writes; see lintarget.h. */
#include "scm/lintarget.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/output.h"
#include "scm_version.h"

void scm_lintarget_study_opts_default(scm_lintarget_study_opts *o)
{
    static const double alpha[] = {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};
    static const double c[] = {-2.5, -0.4, 0.385, 1.7};
    memset(o, 0, sizeof *o);
    o->t = 1.0;
    o->d = 1000;
    o->seed = 1;
    o->t_max = 200.0;
    o->n_out = 600;
    o->n_alpha = 6;
    memcpy(o->alpha, alpha, sizeof alpha);
    o->n_c = 4;
    memcpy(o->c, c, sizeof c);
}

void scm_lintarget_study_free(scm_lintarget_study *s)
{
    if (!s)
        return;
    cJSON_Delete(s->json);
    free(s->phases_csv);
    free(s->traces_csv);
    memset(s, 0, sizeof *s);
}

static cJSON *num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

/* A growing text; ok falls to 0 (for good) when out of memory. */
typedef struct {
    char *s;
    size_t len, cap;
    int ok;
} text;

static void text_printf(text *b, const char *fmt, ...)
{
    while (b->ok) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->ok = 0;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        char *nb = realloc(b->s, b->cap * 2 + (size_t)n);
        if (!nb) {
            b->ok = 0;
            return;
        }
        b->s = nb;
        b->cap = b->cap * 2 + (size_t)n;
    }
}

/* Least-squares line y = a + b x over the finite pairs. */
static cJSON *fit_json(const double *x, const double *y, int n)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(y[i])) {
            sx += x[i];
            sy += y[i];
            sxx += x[i] * x[i];
            sxy += x[i] * y[i];
            syy += y[i] * y[i];
            m++;
        }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "points", m);
    double den = m * sxx - sx * sx;
    if (m >= 2 && den > 0.0) {
        double b = (m * sxy - sx * sy) / den, a = (sy - b * sx) / m;
        double vy = m * syy - sy * sy;
        cJSON_AddItemToObject(o, "slope", num(b));
        cJSON_AddItemToObject(o, "intercept", num(a));
        cJSON_AddItemToObject(o, "r2", num(vy > 0.0 ? (m * sxy - sx * sy) * (m * sxy - sx * sy) / (den * vy) : 1.0));
    }
    return o;
}

/* The document's head: version, command, settings. */
static cJSON *study_root(const scm_lintarget_study_opts *o, const scm_lintarget_phase_opts *po)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "lintarget");
    cJSON *cfg = cJSON_AddObjectToObject(root, "settings");
    cJSON_AddNumberToObject(cfg, "t", o->t);
    cJSON_AddNumberToObject(cfg, "d", (double)o->d);
    cJSON_AddNumberToObject(cfg, "seed", (double)o->seed);
    cJSON_AddNumberToObject(cfg, "t_max", o->t_max);
    cJSON_AddNumberToObject(cfg, "n_out", (double)o->n_out);
    cJSON *pj = cJSON_AddObjectToObject(cfg, "phase_thresholds");
    cJSON_AddNumberToObject(pj, "align_tol", po->align_tol);
    cJSON_AddNumberToObject(pj, "grow_factor", po->grow_factor);
    cJSON_AddNumberToObject(pj, "coef_tol", po->coef_tol);
    cJSON_AddNumberToObject(pj, "conv_tol", po->conv_tol);
    return root;
}

/* A row's entry of "runs", its line of the phases table and the lines of
 * its recorded points in the traces table. */
static void row_out(const scm_lintarget_study_opts *o, const scm_lintarget_study_row *w,
                    const scm_traj_result *r, cJSON *runs, text *pcsv, text *tcsv)
{
    const scm_lintarget_phases *ph = &w->ph;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "alpha", w->alpha);
    cJSON_AddItemToObject(j, "t_align", num(ph->t_align));
    cJSON_AddItemToObject(j, "t_grow_start", num(ph->t_grow_start));
    cJSON_AddItemToObject(j, "t_grow_end", num(ph->t_grow_end));
    cJSON_AddItemToObject(j, "t_conv", num(ph->t_conv));
    cJSON_AddItemToObject(j, "convergence_rate", num(ph->rate));
    cJSON_AddItemToObject(j, "imbalance_drift", num(ph->imbalance_drift));
    cJSON_AddStringToObject(j, "stop_reason", scm_stop_reason_str(r->stop));
    cJSON_AddItemToObject(j, "final_eps", num(r->eps));
    cJSON_AddItemToObject(j, "final_v", scm_output_vector(r->v, 2));
    cJSON_AddItemToArray(runs, j);
    text_printf(pcsv, "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.6g,%s,%ld\n", w->alpha,
                w->log_inv_alpha, ph->t_align, ph->t_grow_start, ph->t_grow_end, ph->t_conv,
                ph->rate, ph->imbalance_drift, scm_stop_reason_str(r->stop), r->n_steps);
    for (long j2 = 0; tcsv->ok && j2 < r->n_out; j2++) {
        const double *Q = r->out_Q + j2 * 4, *R = r->out_R + j2 * 4, *v = r->out_v + j2 * 2;
        text_printf(tcsv, "%.6g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n", w->alpha,
                    r->out_t[j2], r->out_eps[j2], R[0] / sqrt(Q[0] * o->t), R[2] / sqrt(Q[3] * o->t),
                    Q[0], Q[3], v[0], v[1]);
    }
}

/* The run at alpha[i] and its phases into row i. */
static scm_status study_alpha(const scm_lintarget_study_opts *o,
                              const scm_lintarget_phase_opts *po, int i, scm_lintarget_study *s,
                              cJSON *runs, text *pcsv, text *tcsv, scm_error *err)
{
    const double alpha = o->alpha[i];
    scm_lintarget_study_row *w = &s->rows[i];
    scm_traj_result r;
    scm_error e;
    scm_status st = scm_lintarget_run(o->t, alpha, o->d, o->seed, o->t_max, o->n_out, &r, &e);
    if (st) {
        scm_traj_result_free(&r);
        s->refused = 1;
        return scm_error_set(err, st, "alpha = %g: %s", alpha, e.msg);
    }
    const double v0[2] = {alpha, -alpha};
    scm_model *m = scm_lintarget_model(2, o->t, v0, NULL);
    if (!m)
        snprintf(e.msg, sizeof e.msg, "out of memory");
    /* a failed run is a row with its reason and no phases (it may have
     * stopped before its record has the points the detection needs) */
    const scm_lintarget_phases none = {NAN, NAN, NAN, NAN, NAN, NAN};
    w->ph = none;
    st = !m ? SCM_ENOMEM
         : r.stop == SCM_STOP_FAILED ? SCM_OK
                                     : scm_lintarget_phases_detect(m, &r, po, &w->ph, &e);
    scm_model_free(m);
    if (st) {
        scm_traj_result_free(&r);
        return scm_error_set(err, st, "alpha = %g: %s", alpha, e.msg);
    }
    w->alpha = alpha;
    w->log_inv_alpha = log(1.0 / alpha);
    w->stop = r.stop;
    w->run_err = r.err;
    w->n_steps = r.n_steps;
    w->final_eps = r.eps;
    memcpy(w->final_v, r.v, sizeof w->final_v);
    if (r.stop == SCM_STOP_FAILED)
        s->n_failed++;
    row_out(o, w, &r, runs, pcsv, tcsv);
    scm_traj_result_free(&r);
    s->n_rows = i + 1;
    return SCM_OK;
}

/* The saddle manifold at c[i] into saddle row i and the document. */
static scm_status study_saddle(const scm_lintarget_study_opts *o, int i, scm_lintarget_study *s,
                               cJSON *sad, scm_error *err)
{
    static const double beta[2] = {0.8, 1.3};
    const double c = o->c[i];
    scm_lintarget_saddle_row *w = &s->saddle[i];
    scm_lintarget_saddle_report *a = &w->at_s, *b = &w->at_2s;
    scm_error e;
    scm_status st;
    if ((st = scm_lintarget_saddle_check(o->t, c, beta, 3, 0.01, a, &e)) ||
        (st = scm_lintarget_saddle_check(o->t, c, beta, 3, 0.02, b, &e)))
        return scm_error_set(err, st, "saddle check at c = %g: %s", c, e.msg);
    w->c = c;
    double ratio = b->descent_min / a->descent_min;
    w->ratio = ratio;
    w->verdict = a->n_neg > 0                         ? "strict saddle"
                 : a->descent_min < 0.0 && ratio > 6 ? "non-strict saddle (cubic descent)"
                 : a->descent_min >= 0.0             ? "flat to third order (no descent found)"
                                                     : "undecided";
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "c", c);
    cJSON_AddItemToObject(j, "eps", num(a->eps));
    cJSON_AddItemToObject(j, "grad_max", num(a->grad_max));
    cJSON_AddNumberToObject(j, "hessian_negative", a->n_neg);
    cJSON_AddNumberToObject(j, "hessian_zero", a->n_zero);
    cJSON_AddNumberToObject(j, "hessian_positive", a->n_pos);
    cJSON_AddNumberToObject(j, "hessian_zero_predicted", a->predicted_zero);
    cJSON_AddItemToObject(j, "flat_change_s", num(a->descent_min));
    cJSON_AddItemToObject(j, "flat_change_2s", num(b->descent_min));
    cJSON_AddNumberToObject(j, "s", a->s0);
    cJSON_AddStringToObject(j, "verdict", w->verdict);
    cJSON_AddItemToArray(sad, j);
    s->n_saddle = i + 1;
    return SCM_OK;
}

static scm_status check_opts(const scm_lintarget_study_opts *o, scm_error *err)
{
    if (o->n_alpha < 0 || o->n_alpha > SCM_LINTARGET_STUDY_MAX || o->n_c < 0 ||
        o->n_c > SCM_LINTARGET_STUDY_MAX)
        return scm_error_set(err, SCM_EINVAL, "the study takes 0 .. %d alphas and cs",
                             SCM_LINTARGET_STUDY_MAX);
    if (!(o->t >= SCM_LINTARGET_T_MIN && o->t <= SCM_LINTARGET_T_MAXT))
        return scm_error_set(err, SCM_EINVAL,
                             "t = %.15g is out of range [%g, %g]: t only sets the units (time "
                             "scales as 1/sqrt(t)); above %g the dynamics runs faster than "
                             "the first recorded time %g resolves, below %g the state's "
                             "products underflow",
                             o->t, SCM_LINTARGET_T_MIN, SCM_LINTARGET_T_MAXT,
                             SCM_LINTARGET_T_MAXT, SCM_LINTARGET_T_FIRST, SCM_LINTARGET_T_MIN);
    const double amax = fmin(1.0, pow(o->t, 0.25));
    for (int i = 0; i < o->n_alpha; i++) {
        const double a = o->alpha[i];
        if (!(a > 0.0 && a < amax))
            return scm_error_set(err, SCM_EINVAL,
                                 "alpha = %g is not a small initialisation: alpha must be in "
                                 "(0, %g) (below 1 and t^(1/4), the initial output coefficients "
                                 "alpha^2 below the target's sqrt(t))",
                                 a, amax);
        if (!(a >= SCM_LINTARGET_ALPHA_MIN))
            return scm_error_set(err, SCM_EINVAL,
                                 "alpha = %g is below %g: the run's tolerances scale as alpha^2 "
                                 "and would leave the normal doubles",
                                 a, SCM_LINTARGET_ALPHA_MIN);
    }
    for (int i = 0; i < o->n_c; i++)
        if (!(fabs(o->c[i]) <= SCM_LINTARGET_C_MAX))
            return scm_error_set(err, SCM_EINVAL,
                                 "c = %.15g is out of range: |c| must be <= %g (the loss at the "
                                 "saddle is a difference of terms of size c^2 and loses "
                                 "2 log10|c| digits)",
                                 o->c[i], SCM_LINTARGET_C_MAX);
    if (!(o->t_max > SCM_LINTARGET_T_FIRST && o->t_max <= SCM_LINTARGET_T_MAX_MAX))
        return scm_error_set(err, SCM_EINVAL,
                             "t_max = %.15g is out of range: it must exceed the first recorded "
                             "time %g and be <= %g",
                             o->t_max, SCM_LINTARGET_T_FIRST, SCM_LINTARGET_T_MAX_MAX);
    if (o->n_out < 3 || o->n_out > 1000000)
        return scm_error_set(err, SCM_EINVAL, "n_out must be in [3, 1000000], got %d", o->n_out);
    if (o->d < 3 || o->d > 100000000)
        return scm_error_set(err, SCM_EINVAL, "d must be in [3, 1e8], got %ld", o->d);
    return SCM_OK;
}

scm_status scm_lintarget_study_run(const scm_lintarget_study_opts *o, scm_lintarget_study *s,
                                   scm_error *err)
{
    memset(s, 0, sizeof *s);
    scm_status st = check_opts(o, err);
    if (st) {
        s->refused = 1;
        return st;
    }
    scm_lintarget_phase_opts po;
    scm_lintarget_phase_opts_default(&po);
    cJSON *root = study_root(o, &po);
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    text pcsv = {malloc(1024), 0, 1024, 1}, tcsv = {malloc(1 << 16), 0, 1 << 16, 1};
    pcsv.ok = pcsv.s != NULL;
    tcsv.ok = tcsv.s != NULL;
    text_printf(&pcsv, "alpha,log_inv_alpha,t_align,t_grow_start,t_grow_end,t_conv,rate,"
                       "imbalance_drift,stop,steps\n");
    text_printf(&tcsv, "alpha,t,eps,cos1,cos2,Q11,Q22,v1,v2\n");
    double lx[SCM_LINTARGET_STUDY_MAX] = {0}, ta[SCM_LINTARGET_STUDY_MAX] = {0},
           tgs[SCM_LINTARGET_STUDY_MAX] = {0}, tge[SCM_LINTARGET_STUDY_MAX] = {0},
           tc[SCM_LINTARGET_STUDY_MAX] = {0};
    for (int i = 0; !st && i < o->n_alpha; i++) {
        if (!root || !runs || !pcsv.ok || !tcsv.ok) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory");
            break;
        }
        st = study_alpha(o, &po, i, s, runs, &pcsv, &tcsv, err);
        lx[i] = s->rows[i].log_inv_alpha;
        ta[i] = s->rows[i].ph.t_align;
        tgs[i] = s->rows[i].ph.t_grow_start;
        tge[i] = s->rows[i].ph.t_grow_end;
        tc[i] = s->rows[i].ph.t_conv;
    }
    cJSON *fits = st ? NULL : cJSON_AddObjectToObject(root, "fits_vs_log_inv_alpha");
    if (fits) {
        cJSON_AddItemToObject(fits, "t_align", fit_json(lx, ta, o->n_alpha));
        cJSON_AddItemToObject(fits, "t_grow_start", fit_json(lx, tgs, o->n_alpha));
        cJSON_AddItemToObject(fits, "t_grow_end", fit_json(lx, tge, o->n_alpha));
        cJSON_AddItemToObject(fits, "t_conv", fit_json(lx, tc, o->n_alpha));
    }
    cJSON *sad = st ? NULL : cJSON_AddArrayToObject(root, "saddle_manifold");
    if (!st && (!fits || !sad))
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    for (int i = 0; !st && i < o->n_c; i++)
        st = study_saddle(o, i, s, sad, err);
    if (!st && (!pcsv.ok || !tcsv.ok))
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (st) {
        cJSON_Delete(root);
        free(pcsv.s);
        free(tcsv.s);
        return st;
    }
    s->json = root;
    s->phases_csv = pcsv.s;
    s->phases_len = pcsv.len;
    s->traces_csv = tcsv.s;
    s->traces_len = tcsv.len;
    return SCM_OK;
}

scm_status scm_lintarget_study_opts_check(const scm_lintarget_study_opts *o, scm_error *err)
{
    for (int i = 0; i < o->n_alpha; i++)
        if (!(o->alpha[i] < 1.0))
            return scm_error_set(err, SCM_EINVAL,
                                 "--alpha values must be in (0, 1) (small initialisation), got %g",
                                 o->alpha[i]);
    return SCM_OK;
}
