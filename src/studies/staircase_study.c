/* staircase_study.c: the study `scm staircase` reports (docs/staircase.md):
 * runs from small initialisations alpha, the plateaus of their loss curves
 * matched to fixed points (enumerated, or reached by a Newton polish), and
 * the escape times fitted against log(1/alpha), with the JSON document the
 * command writes; see staircase.h.  The command only parses, prints and
 * writes. */
#include "scm/staircase.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/init.h"
#include "scm/output.h"
#include "scm_version.h"

void scm_stair_study_opts_default(scm_stair_study_opts *o)
{
    memset(o, 0, sizeof *o);
    o->K = o->M = -1;
    o->act = &scm_act_erf;
    o->rule = &scm_rule_gd;
    scm_rule_params_default(&o->rp);
    for (int i = 0; i < SCM_STAIR_STUDY_MAX_M; i++)
        o->T_diag[i] = o->vstar[i] = 1.0;
    o->d = 1000;
    o->seed = 1;
    o->n_out = 3000;
    o->starts = 50;
    o->t_max = 1e4;
    o->match_tol = 1e-4;
    o->atol_rel = 1e-2;
    o->rtol = 1e-10;
    scm_stair_opts_default(&o->so);
    o->threads = 1;
}

void scm_stair_study_free(scm_stair_study *s)
{
    if (!s)
        return;
    for (int a = 0; s->rows && a < s->n_rows; a++)
        scm_traj_result_free(&s->rows[a].tr);
    free(s->rows);
    scm_fplist_free(s->list, s->n_list);
    memset(s, 0, sizeof *s);
}

/* Hand a problem that does not stop the study to the caller's note. */
static void notef(const scm_stair_study_opts *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void notef(const scm_stair_study_opts *o, const char *fmt, ...)
{
    if (!o->note)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    o->note(o->note_user, msg);
}

/* The fixed points the polish found, in order of discovery. */
typedef struct {
    int n;
    double eps[SCM_STAIR_STUDY_MAX_FP], lam[SCM_STAIR_STUDY_MAX_FP];
    int origin;        /* the index of the origin in the list, -1 until met */
    double eps0, lam0; /* the origin's loss and escape rate (scm_stair_origin) */
    int have_origin;   /* eps0, lam0 computed (both layers trained) */
} polished_t;

/* What the runs share. */
typedef struct {
    const scm_stair_study_opts *o;
    const scm_model *m;
    scm_flow *fl;
    polished_t pf;
} study_ctx;

/* Polish the middle state of plateau k of run r and match it to the
 * list (same loss to 1e-8 relative) or append it. */
static void polish_match(study_ctx *x, scm_stair_study_row *r, int k)
{
    const scm_stair_study_opts *o = x->o;
    const scm_model *m = x->m;
    polished_t *pf = &x->pf;
    long K = o->K, M = o->M, i = (r->pl[k].i_start + r->pl[k].i_end) / 2;
    long n = o->rule->dim(m);
    double *y = malloc(sizeof(double) * (size_t)n), eps, lam, resid = NAN;
    scm_error err;
    r->match[k] = -1;
    r->resid[k] = NAN;
    if (!y)
        return;
    o->rule->pack(m, r->tr.out_Q + i * K * K, r->tr.out_R + i * K * M,
                  o->rule->trains_v ? r->tr.out_v + i * K : NULL, y);
    /* Near w = v = 0 the Gram factor is degenerate and the polish does not
     * apply: a plateau there is the origin, matched by its loss. */
    double size = 0.0, tmax = 0.0;
    for (long k = 0; k < K && pf->have_origin; k++)
        size = fmax(size, fmax(r->tr.out_Q[i * K * K + k * K + k],
                               r->tr.out_v[i * K + k] * r->tr.out_v[i * K + k]));
    for (long n2 = 0; n2 < M; n2++)
        tmax = fmax(tmax, m->T[n2 * M + n2]);
    if (pf->have_origin && size <= 1e-2 * tmax &&
        fabs(r->pl[k].eps - pf->eps0) <= 1e-2 * pf->eps0) {
        if (pf->origin < 0 && pf->n < SCM_STAIR_STUDY_MAX_FP) {
            pf->origin = pf->n++;
            pf->eps[pf->origin] = pf->eps0;
            pf->lam[pf->origin] = pf->lam0;
        }
        r->match[k] = pf->origin;
        free(y);
        return;
    }
    if (scm_stair_polish(o->rule, &o->rp, x->fl, y, 1e-9, 50, &eps, &lam, &resid, &err) ==
        SCM_OK) {
        int f = scm_stair_match(eps, pf->eps, pf->n, 1e-8);
        if (f < 0 && pf->n < SCM_STAIR_STUDY_MAX_FP) {
            f = pf->n++;
            pf->eps[f] = eps;
            pf->lam[f] = lam;
        }
        r->match[k] = f;
    } else
        notef(o, "alpha = %g, plateau %d: %s", r->alpha, k, err.msg);
    r->resid[k] = resid;
    free(y);
}

/* The run of row r from Q, R (v0: room for K). */
static scm_status run_one(study_ctx *x, scm_stair_study_row *r, const double *Q, const double *R,
                          double *v0, scm_error *err)
{
    const scm_stair_study_opts *o = x->o;
    const scm_model *m = x->m;
    scm_error e;
    scm_traj_opts to;
    scm_traj_opts_default(&to);
    to.t_max = o->t_max;
    to.t_first = SCM_STAIR_T_FIRST;
    to.n_out = (int)o->n_out;
    to.eps_stop = 1e-10;
    to.grad_stop = 0;
    /* the symmetry-breaking part of the state starts at ~ alpha / sqrt d:
     * the absolute tolerance stays well below it, or integration error
     * (not the initialisation) seeds the escape */
    to.atol = fmin(to.atol, o->atol_rel * r->alpha * r->alpha / (double)o->d);
    to.rtol = fmin(to.rtol, o->rtol);
    /* a ReLU student starts with Q_kk ~ alpha^2: dead only far below that */
    to.dead_tol = fmin(to.dead_tol, 1e-4 * r->alpha * r->alpha);
    to.rule_params = o->rp;
    for (long k = 0; k < o->K; k++) /* the small scale on v too (docs/staircase.md) */
        v0[k] = r->alpha * m->v[k];
    to.v0 = v0;
    scm_status st = scm_traj_run(m, o->rule, Q, R, &to, &r->tr, &e);
    if (st || r->tr.stop == SCM_STOP_FAILED)
        return scm_error_set(err, st ? st : SCM_ESOLVER, "run at alpha = %g failed: %s", r->alpha,
                             r->tr.stop == SCM_STOP_FAILED ? r->tr.err.msg : e.msg);
    return SCM_OK;
}

/* The plateaus of row r's curve and their matches. */
static scm_status plateaus(study_ctx *x, scm_stair_study_row *r, scm_error *err)
{
    const scm_stair_study_opts *o = x->o;
    scm_error e;
    /* a converged run may end with a loss at round-off level (even
     * negative, the loss is a difference of kernels): the curve ends
     * before it */
    long n = 0;
    while (n < r->tr.n_out && r->tr.out_eps[n] > 1e-12)
        n++;
    r->n_curve = n;
    scm_status st = scm_stair_detect(r->tr.out_t, r->tr.out_eps, n, &o->so, r->pl,
                                     SCM_STAIR_STUDY_MAX_PLATEAUS, &r->np, &e);
    if (st)
        return scm_error_set(err, st, "alpha = %g: %s", r->alpha, e.msg);
    if (r->np > SCM_STAIR_STUDY_MAX_PLATEAUS)
        r->np = SCM_STAIR_STUDY_MAX_PLATEAUS;
    return SCM_OK;
}

/* One run per alpha, its plateaus and their matches (against fp_eps[nfp]
 * unless polishing). */
static scm_status run_all(study_ctx *x, scm_stair_study *s, const double *fp_eps, int nfp,
                          scm_error *err)
{
    const scm_stair_study_opts *o = x->o;
    scm_error e;
    double *Q = calloc((size_t)(o->K * o->K), sizeof *Q);
    double *R = calloc((size_t)(o->K * o->M), sizeof *R);
    double *v0 = calloc((size_t)o->K, sizeof *v0);
    scm_status st = Q && R && v0 ? SCM_OK : scm_error_set(err, SCM_ENOMEM, "out of memory");
    for (int a = 0; a < s->n_rows && !st; a++) {
        scm_stair_study_row *r = &s->rows[a];
        if ((st = scm_init_random(x->m, o->d, r->alpha, (unsigned long)o->seed, Q, R, &e))) {
            s->refused = 1;
            scm_error_set(err, st, "initialisation: %s", e.msg);
            break;
        }
        if ((st = run_one(x, r, Q, R, v0, err)) || (st = plateaus(x, r, err)))
            break;
        for (int k = 0; k < r->np; k++) {
            r->resid[k] = NAN;
            if (s->polish)
                polish_match(x, r, k);
            else
                r->match[k] = scm_stair_match(r->pl[k].eps, fp_eps, nfp, o->match_tol);
        }
    }
    free(Q);
    free(R);
    free(v0);
    return st;
}

/* Fit the escape times of each fixed point reached from >= 3 alphas. */
static void fit_all(scm_stair_study *s)
{
    int nf = 0;
    double x[SCM_STAIR_STUDY_MAX_ALPHA], y[SCM_STAIR_STUDY_MAX_ALPHA];
    const scm_stair_study_row *runs = s->rows;
    for (int f = 0; f < s->n_fp; f++) {
        int n = 0;
        for (int a = 0; a < s->n_rows; a++)
            for (int k = 0; k < runs[a].np; k++)
                if (runs[a].match[k] == f && runs[a].pl[k].i_end < runs[a].n_curve - 1) {
                    x[n] = log(1.0 / runs[a].alpha);
                    y[n++] = runs[a].pl[k].t_end;
                    break; /* the first visit */
                }
        scm_stair_study_fit *t = &s->fits[nf];
        t->fp = f;
        t->n = n;
        t->lambda = s->fp_lam[f];
        if (n >= 3 && scm_stair_fit(x, y, n, &t->slope, &t->intercept, &t->se) == SCM_OK)
            nf++;
    }
    s->n_fits = nf;
}

/* The teacher, the rule's ratio, the run length and the thresholds: within
 * the ranges of staircase.h, named when not. */
static scm_status check_scales(const scm_stair_study_opts *o, scm_error *err)
{
    for (long m = 0; m < o->M; m++) {
        if (!(o->T_diag[m] >= SCM_STAIR_T_MIN && o->T_diag[m] <= SCM_STAIR_T_MAX))
            return scm_error_set(err, SCM_EINVAL,
                                 "T_diag[%ld] = %.15g is out of range [%g, %g] (outside it the "
                                 "flow's time scales leave what the record resolves)",
                                 m, o->T_diag[m], SCM_STAIR_T_MIN, SCM_STAIR_T_MAX);
        if (!(fabs(o->vstar[m]) <= SCM_STAIR_VSTAR_MAX))
            return scm_error_set(err, SCM_EINVAL,
                                 "vstar[%ld] = %.15g is out of range: |v*_m| must be <= %g (the "
                                 "loss and the flow scale as v*^2)",
                                 m, o->vstar[m], SCM_STAIR_VSTAR_MAX);
    }
    if (o->rule->trains_v &&
        !(o->rp.lr_v_ratio >= SCM_STAIR_LR_MIN && o->rp.lr_v_ratio <= SCM_STAIR_LR_MAX))
        return scm_error_set(err, SCM_EINVAL,
                             "lr_v_ratio = %.15g is out of range [%g, %g] (the two layers' time "
                             "scales must both be resolved)",
                             o->rp.lr_v_ratio, SCM_STAIR_LR_MIN, SCM_STAIR_LR_MAX);
    if (!(o->t_max > SCM_STAIR_T_FIRST && o->t_max <= SCM_STAIR_T_MAX_MAX))
        return scm_error_set(err, SCM_EINVAL,
                             "t_max = %.15g is out of range: it must exceed the first recorded "
                             "time %g and be <= %g",
                             o->t_max, SCM_STAIR_T_FIRST, SCM_STAIR_T_MAX_MAX);
    if (!(o->so.rate_tol > 0.0 && isfinite(o->so.rate_tol) && o->so.min_dur > 0.0 &&
          isfinite(o->so.min_dur) && o->match_tol > 0.0 && isfinite(o->match_tol)))
        return scm_error_set(err, SCM_EINVAL,
                             "rate_tol, min_dur and match_tol must be > 0 and finite (got %g, "
                             "%g, %g)",
                             o->so.rate_tol, o->so.min_dur, o->match_tol);
    if (!(o->atol_rel > 0.0 && isfinite(o->atol_rel) && o->rtol > 0.0 && o->rtol < 1.0))
        return scm_error_set(err, SCM_EINVAL, "atol_rel must be > 0 and rtol in (0, 1)");
    return SCM_OK;
}

static scm_status check_opts(const scm_stair_study_opts *o, scm_error *err)
{
    if (o->K < 1 || o->K > SCM_STAIR_STUDY_MAX_M || o->M < 1 || o->M > SCM_STAIR_STUDY_MAX_M)
        return scm_error_set(err, SCM_EINVAL, "K and M must be in [1, %d], got %ld, %ld",
                             SCM_STAIR_STUDY_MAX_M, o->K, o->M);
    if (o->n_alpha < 1 || o->n_alpha > SCM_STAIR_STUDY_MAX_ALPHA)
        return scm_error_set(err, SCM_EINVAL, "1 .. %d alphas, got %d",
                             SCM_STAIR_STUDY_MAX_ALPHA, o->n_alpha);
    for (int a = 0; a < o->n_alpha; a++)
        if (!(o->alpha[a] >= SCM_STAIR_ALPHA_MIN && o->alpha[a] <= SCM_STAIR_ALPHA_MAX))
            return scm_error_set(err, SCM_EINVAL,
                                 "alpha = %.15g is out of range [%g, %g]: the state starts at "
                                 "alpha^2 and the run's tolerances scale as alpha^2 / d; below "
                                 "the range the runs fail at the PSD boundary or at t = 0",
                                 o->alpha[a], SCM_STAIR_ALPHA_MIN, SCM_STAIR_ALPHA_MAX);
    if (o->d < o->M)
        return scm_error_set(err, SCM_EINVAL, "d = %ld is below M = %ld", o->d, o->M);
    if (!o->act || (o->rule != &scm_rule_gd && o->rule != &scm_rule_two_layer))
        return scm_error_set(err, SCM_EINVAL, "an activation and the rule gd or two_layer");
    if (o->n_out < 2 || o->n_out > 1000000 || o->threads < 1)
        return scm_error_set(err, SCM_EINVAL, "n_out must be in [2, 1e6] and threads >= 1");
    return check_scales(o, err);
}

/* The model of the study: T = diag(T_diag), v = 1, v* = vstar. */
static scm_model *study_model(const scm_stair_study_opts *o, scm_error *err)
{
    double *T = calloc((size_t)(o->M * o->M), sizeof *T);
    if (!T) {
        scm_error_set(err, SCM_ENOMEM, "out of memory");
        return NULL;
    }
    for (long i = 0; i < o->M; i++)
        T[i * o->M + i] = o->T_diag[i];
    scm_model *m = scm_model_alloc((int)o->K, (int)o->M, o->act, T, NULL, o->vstar, err);
    free(T);
    return m;
}

/* A point's lambda: the flow Jacobian's largest real part by symmetry
 * (scm_fplist_point.jac_re_max: the closed-form Jacobian's, to about
 * 1e-10, at any K), else (a ReLU pair parallel, where the closed form is
 * refused) the central-difference Jacobian of scm_fp_full_stability up to
 * this many unknowns (K (K + 1)/2 + K M; 2000: K = M = 31), whose O(n^3)
 * eigensolve takes seconds there and hours at K = 200. */
#define STAIR_DENSE_JAC_MAX 2000

/* The enumerated fixed points (not polishing) and their lambdas. */
static void list_points(study_ctx *x, scm_stair_study *s)
{
    const long n = x->o->K * (x->o->K + 1) / 2 + x->o->K * x->o->M;
    s->n_fp = s->n_list > SCM_STAIR_STUDY_MAX_FP ? SCM_STAIR_STUDY_MAX_FP : s->n_list;
    for (int f = 0; f < s->n_fp; f++) {
        double re_min;
        s->fp_eps[f] = s->list[f].eps;
        s->fp_name[f] = s->list[f].ansatz;
        s->fp_lam[f] = s->list[f].jac_re_max;
        if (!isfinite(s->fp_lam[f]) &&
            (n > STAIR_DENSE_JAC_MAX ||
             scm_fp_full_stability(x->fl, s->list[f].Q, s->list[f].R, &s->fp_lam[f], &re_min)))
            s->fp_lam[f] = NAN;
    }
}

scm_status scm_stair_study_run(const scm_stair_study_opts *o, scm_stair_study *s,
                               scm_error *err)
{
    memset(s, 0, sizeof *s);
    scm_status st = check_opts(o, err);
    if (st) {
        s->refused = 1;
        return st;
    }
    s->polish = o->rule->trains_v;
    for (long i = 0; i < o->M; i++)
        if (o->T_diag[i] != 1.0 || o->vstar[i] != 1.0)
            s->polish = 1;
    study_ctx x = {.o = o, .pf = {.origin = -1}};
    scm_model *m = study_model(o, err);
    if (!m) {
        st = err ? err->code : SCM_EINVAL;
        s->refused = st != SCM_ENOMEM;
        return st;
    }
    x.m = m;
    int bad_list = 0;
    if (!s->polish)
        bad_list = scm_fplist_find((int)o->K, (int)o->M, o->act, o->starts, o->threads, &s->list,
                                   &s->n_list, NULL) != SCM_OK;
    if (s->polish && o->rule->trains_v) {
        scm_error e;
        if (scm_stair_origin(m, &x.pf.eps0, &x.pf.lam0, &e) == SCM_OK)
            x.pf.have_origin = 1;
        else
            notef(o, "the origin is not matched: %s", e.msg);
    }
    s->rows = calloc((size_t)o->n_alpha, sizeof *s->rows);
    x.fl = scm_flow_alloc(m);
    if (bad_list || !s->rows || !x.fl) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
        goto done;
    }
    s->n_rows = o->n_alpha;
    list_points(&x, s);
    for (int a = 0; a < s->n_rows; a++)
        s->rows[a].alpha = o->alpha[a];
    double eps[SCM_STAIR_STUDY_MAX_FP];
    memcpy(eps, s->fp_eps, sizeof eps);
    if ((st = run_all(&x, s, eps, s->n_fp, err)))
        goto done;
    if (s->polish) {
        s->n_fp = x.pf.n;
        for (int f = 0; f < s->n_fp; f++) {
            s->fp_eps[f] = x.pf.eps[f];
            s->fp_lam[f] = x.pf.lam[f];
            s->fp_name[f] = f == x.pf.origin ? "origin" : "newton polish";
        }
    }
    fit_all(s);
done:
    scm_flow_free(x.fl);
    scm_model_free(m);
    return st;
}

static cJSON *num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

static cJSON *run_json(const scm_stair_study_row *r)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "alpha", r->alpha);
    cJSON_AddStringToObject(j, "stop", scm_stop_reason_str(r->tr.stop));
    cJSON_AddItemToObject(j, "tau", scm_output_vector(r->tr.out_t, (int)r->tr.n_out));
    cJSON_AddItemToObject(j, "loss", scm_output_vector(r->tr.out_eps, (int)r->tr.n_out));
    cJSON *jp = cJSON_AddArrayToObject(j, "plateaus");
    for (int k = 0; k < r->np; k++) {
        cJSON *p = cJSON_CreateObject();
        int last = r->pl[k].i_end == r->n_curve - 1;
        cJSON_AddNumberToObject(p, "tau_start", r->pl[k].t_start);
        cJSON_AddItemToObject(p, "tau_escape", last ? cJSON_CreateNull() : num(r->pl[k].t_end));
        cJSON_AddItemToObject(p, "loss", num(r->pl[k].eps));
        cJSON_AddNumberToObject(p, "fixed_point", r->match[k]);
        cJSON_AddItemToObject(p, "polish_residual", num(r->resid[k]));
        cJSON_AddItemToArray(jp, p);
    }
    return j;
}

cJSON *scm_stair_study_json(const scm_stair_study_opts *o, const scm_stair_study *s)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "staircase");
    cJSON_AddNumberToObject(root, "K", (double)o->K);
    cJSON_AddNumberToObject(root, "M", (double)o->M);
    cJSON_AddStringToObject(root, "activation", o->act->name);
    cJSON_AddNumberToObject(root, "d", (double)o->d);
    cJSON_AddNumberToObject(root, "seed", (double)o->seed);
    cJSON_AddStringToObject(root, "rule", o->rule->name);
    cJSON_AddNumberToObject(root, "lr_v_ratio", o->rp.lr_v_ratio);
    cJSON_AddItemToObject(root, "T_diag", scm_output_vector(o->T_diag, (int)o->M));
    cJSON_AddItemToObject(root, "vstar", scm_output_vector(o->vstar, (int)o->M));
    cJSON_AddStringToObject(root, "matching", s->polish ? "polish" : "enumerator");
    cJSON_AddNumberToObject(root, "rate_tol", o->so.rate_tol);
    cJSON_AddNumberToObject(root, "min_dur", o->so.min_dur);
    cJSON *jf = cJSON_AddArrayToObject(root, "fixed_points");
    for (int f = 0; f < s->n_fp; f++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "loss", num(s->fp_eps[f]));
        cJSON_AddStringToObject(j, "ansatz", s->fp_name[f]);
        cJSON_AddItemToObject(j, "lambda", num(s->fp_lam[f]));
        cJSON_AddItemToArray(jf, j);
    }
    cJSON *jr = cJSON_AddArrayToObject(root, "runs");
    for (int a = 0; a < s->n_rows; a++)
        cJSON_AddItemToArray(jr, run_json(&s->rows[a]));
    cJSON *jt = cJSON_AddArrayToObject(root, "fits");
    for (int i = 0; i < s->n_fits; i++) {
        const scm_stair_study_fit *t = &s->fits[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "fixed_point", t->fp);
        cJSON_AddNumberToObject(j, "alphas", t->n);
        cJSON_AddItemToObject(j, "slope", num(t->slope));
        cJSON_AddItemToObject(j, "slope_se", num(t->se));
        cJSON_AddItemToObject(j, "intercept", num(t->intercept));
        cJSON_AddItemToObject(j, "inverse_lambda", num(1.0 / t->lambda));
        cJSON_AddItemToArray(jt, j);
    }
    return root;
}
