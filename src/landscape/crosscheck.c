/* crosscheck.c: random runs (ODE and weight-space GD) classified against
 * the fixed-point enumeration; see crosscheck.h.  The GD runs themselves
 * are in crosscheck_gd.c, the whole check of `scm crosscheck` in
 * crosscheck_check.c and crosscheck_report.c. */
#include "landscape/crosscheck_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/fpsweep.h"
#include "scm/init.h"
#include "scm/sweep.h"
#include "scm/weights.h"
#include "core/parallel.h"

/* ---- options ---------------------------------------------------------- */

void scm_xc_opts_default(scm_xc_opts *o)
{
    memset(o, 0, sizeof *o);
    o->d = 1000;
    o->sigma = 1.0;
    scm_traj_opts_default(&o->traj);
    o->traj.record = 0;
    o->gd_sigma = 1.0;
    o->gd_tol = 1e-10;
    o->gd_max_iter = 200000;
    o->dead_q = 1e-3;
    o->polish_max_K = 32;
    o->global_eps = 1e-10;
    o->match_rtol = 1e-8;
    o->match_atol = 1e-10;
    o->inv_rtol = 1e-6;
    o->group_tol = 1e-6;
}

scm_status scm_xc_opts_check(const scm_xc_opts *o, scm_error *err)
{
    if (o->d < 1 || !(o->sigma > 0.0) || !(o->gd_sigma > 0.0))
        return scm_error_set(err, SCM_EINVAL, "need d >= 1, sigma > 0, gd_sigma > 0");
    if (!(o->gd_tol > 0.0) || o->gd_max_iter < 1)
        return scm_error_set(err, SCM_EINVAL, "need gd_tol > 0 and gd_max_iter >= 1");
    if (!(o->dead_q >= 0.0) || !(o->global_eps >= 0.0) || !(o->match_rtol >= 0.0) ||
        !(o->match_atol >= 0.0) || !(o->inv_rtol > 0.0) || !(o->group_tol > 0.0))
        return scm_error_set(err, SCM_EINVAL, "crosscheck tolerances must be >= 0 "
                                              "(inv_rtol, group_tol > 0)");
    return scm_traj_opts_check(&o->traj, err);
}

const char *scm_xc_method_str(scm_xc_method m) { return m == SCM_XC_GD ? "gd" : "ode"; }

/* ---- the enumerated list ------------------------------------------------ */

void scm_xc_list_free(scm_xc_list *l)
{
    free(l->pt);
    memset(l, 0, sizeof *l);
}

typedef struct {
    scm_fp_point *p;
    scm_fp_structure st;
    int merged;
} cand;

static int cmp_cand(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    if (a->p->nsc != b->p->nsc)
        return a->p->nsc - b->p->nsc;
    return (a->p->eps > b->p->eps) - (a->p->eps < b->p->eps);
}

static int cmp_point(const void *pa, const void *pb)
{
    const scm_xc_point *a = pa, *b = pb;
    return (a->eps > b->eps) - (a->eps < b->eps);
}

/* The merge rule of `scm fixed-points` (same_orbit in cmd_fixed_points.c). */
static int same_orbit(const cand *a, const cand *b)
{
    double tol = 1e-9;
    return fabs(a->p->eps - b->p->eps) <= tol * fmax(1e-3, fabs(a->p->eps)) &&
           fabs(a->st.trQ - b->st.trQ) <= tol * fmax(1.0, fabs(a->st.trQ)) &&
           fabs(a->st.normR2 - b->st.normR2) <= tol * fmax(1.0, fabs(a->st.normR2));
}

/* Append the instance in (owned from now on) and its solutions one (moved
 * out) to inst and set; owner[p] gets the instance of point p. */
static scm_status take_instance(scm_ansatz_inst *in, scm_fp_set *one, scm_ansatz_inst ***inst,
                                int *ninst, int *capinst, scm_fp_set *set, int **owner,
                                scm_error *err)
{
    if (*ninst == *capinst) {
        int cap = *capinst ? 2 * *capinst : 32;
        scm_ansatz_inst **ni = realloc(*inst, sizeof *ni * (size_t)cap);
        if (!ni) {
            scm_ansatz_inst_free(in);
            scm_fp_set_free(one);
            return scm_error_set(err, SCM_ENOMEM, "out of memory");
        }
        *inst = ni;
        *capinst = cap;
    }
    (*inst)[(*ninst)++] = in;
    if (one->n == 0)
        return SCM_OK;
    scm_fp_point *np = realloc(set->pt, sizeof *np * (size_t)(set->n + one->n));
    int *no = realloc(*owner, sizeof *no * (size_t)(set->n + one->n));
    if (np)
        set->pt = np;
    if (no)
        *owner = no;
    if (!np || !no) {
        scm_fp_set_free(one);
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    }
    set->cap = set->n + one->n;
    for (int p = 0; p < one->n; p++) {
        (*owner)[set->n] = *ninst - 1;
        set->pt[set->n++] = one->pt[p];
    }
    free(one->pt);
    scm_fp_set_init(one);
    return SCM_OK;
}

scm_status scm_xc_enumerate(int K, int M, scm_ansatz *const *ans, int n_ans,
                            const scm_activation *act, const scm_fp_opts *o, int sweep_passes,
                            scm_xc_list *l, scm_error *err)
{
    memset(l, 0, sizeof *l);
    l->K = K;
    l->M = M;
    scm_status st = scm_fp_opts_check(o, err);
    if (st)
        return st;
    scm_fp_set set;
    scm_fp_set_init(&set);
    int ninst = 0, capinst = 0;
    scm_ansatz_inst **inst = NULL;
    int *owner = NULL; /* instance of each point of set */
    cand *c = NULL;
    for (int a = 0; a < n_ans && !st; a++) {
        int lo, hi;
        if (scm_ansatz_applies(ans[a], K, M, &lo, &hi) != 1)
            continue;
        if (sweep_passes >= 2 && hi > lo) {
            scm_fp_sweep sw;
            if ((st = scm_fp_sweep_k1(ans[a], K, M, act, o, sweep_passes, &sw, err)))
                break;
            for (int i = 0; i < sw.n && !st; i++) {
                scm_ansatz_inst *in = sw.inst[i];
                sw.inst[i] = NULL;
                st = take_instance(in, &sw.set[i], &inst, &ninst, &capinst, &set, &owner, err);
            }
            scm_fp_sweep_free(&sw);
            continue;
        }
        for (int k1 = lo; k1 <= hi && !st; k1++) {
            scm_ansatz_inst *in = scm_ansatz_instantiate(ans[a], K, M, k1, err);
            if (!in) {
                st = err ? err->code : SCM_EINVAL;
                break;
            }
            scm_fp_set one;
            scm_fp_set_init(&one);
            if ((st = scm_fp_enumerate(ans[a], in, act, o, NULL, 0, &one, err))) {
                scm_fp_set_free(&one);
                scm_ansatz_inst_free(in);
                break;
            }
            st = take_instance(in, &one, &inst, &ninst, &capinst, &set, &owner, err);
        }
    }
    l->n_instances = ninst;
    if (!st && set.n > 0) {
        c = calloc((size_t)set.n, sizeof *c);
        l->pt = calloc((size_t)set.n, sizeof *l->pt);
        if (!c || !l->pt)
            st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    }
    for (int p = 0; !st && p < set.n; p++) {
        c[p].p = &set.pt[p];
        if (scm_fp_classify(inst[owner[p]], set.pt[p].x, &c[p].st))
            st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    }
    if (!st && set.n > 0) {
        qsort(c, (size_t)set.n, sizeof *c, cmp_cand);
        /* each solution merges into the first representative of its orbit */
        for (int s = 0; s < set.n; s++) {
            c[s].merged = -1;
            for (int t = 0; t < s && c[s].merged < 0; t++)
                if (c[t].merged < 0 && same_orbit(&c[s], &c[t]))
                    c[s].merged = t;
        }
        for (int s = 0; s < set.n && !st; s++) {
            if (c[s].merged >= 0)
                continue;
            scm_fp_point *p = c[s].p;
            if (scm_fp_point_polish(p, act, o, err) == SCM_ENOMEM) {
                st = SCM_ENOMEM;
                break;
            }
            scm_xc_point *x = &l->pt[l->n++];
            x->eps = p->eps;
            x->res = p->polished ? p->res_polish : p->full ? p->res_full : p->res_block;
            x->trQ = c[s].st.trQ;
            x->normR2 = c[s].st.normR2;
            x->n_anti = c[s].st.n_anti;
            x->n_aligned = c[s].st.n_aligned;
            x->n_other = c[s].st.n_other;
            snprintf(x->ansatz, sizeof x->ansatz, "%s", p->ansatz);
            x->k1 = (int)lround(p->k1);
            x->copies = 1;
            for (int t = s + 1; t < set.n; t++)
                x->copies += c[t].merged == s;
        }
        qsort(l->pt, (size_t)l->n, sizeof *l->pt, cmp_point);
    }
    free(c);
    free(owner);
    for (int i = 0; i < ninst; i++)
        scm_ansatz_inst_free(inst[i]);
    free(inst);
    scm_fp_set_free(&set);
    if (st)
        scm_xc_list_free(l);
    return st;
}

/* ---- runs --------------------------------------------------------------- */

void scm_xc_run_free(scm_xc_run *r)
{
    free(r->Q);
    free(r->R);
    r->Q = r->R = NULL;
}

/* The polish target of fixedpoint.c: the roundoff floor of F. */
static double polish_floor(int K, int M) { return fmax(1e-14, 5e-16 * (K + M)); }

/* Dead students out, polish, invariants, alignment: from the end state
 * (Q, R) of K students to r->Q, r->R of K_live. */
static scm_status finish(int K, int M, const scm_activation *act, const double *Q,
                         const double *R, const scm_xc_opts *o, scm_xc_run *r, scm_error *err)
{
    int *idx = malloc(sizeof(int) * (size_t)K + 1);
    if (!idx)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    int n = 0;
    for (int k = 0; k < K; k++) {
        if (Q[k * K + k] > o->traj.dead_tol)
            idx[n++] = k;
        if (Q[k * K + k] > o->traj.dead_tol && Q[k * K + k] <= o->dead_q)
            r->n_small++;
    }
    r->K_live = n;
    r->n_dead = K - n;
    r->Q = malloc(sizeof(double) * ((size_t)n * n + 1));
    r->R = malloc(sizeof(double) * ((size_t)n * M + 1));
    scm_alignment *kind = malloc(sizeof *kind * ((size_t)n + 1));
    int *partner = malloc(sizeof(int) * ((size_t)n + 1));
    double *F = malloc(sizeof(double) * ((size_t)n * n + (size_t)n * M + 1));
    scm_model *m = NULL;
    scm_flow *fl = NULL;
    scm_status st = SCM_OK;
    if (!r->Q || !r->R || !kind || !partner || !F) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
        goto done;
    }
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++)
            r->Q[a * n + b] = Q[idx[a] * K + idx[b]];
        memcpy(r->R + (size_t)a * M, R + (size_t)idx[a] * M, sizeof(double) * (size_t)M);
    }
    r->eps = NAN;
    r->res = NAN;
    if (n == 0)
        goto done;
    m = scm_model_alloc(n, M, act, NULL, NULL, NULL, err);
    fl = m ? scm_flow_alloc(m) : NULL;
    if (!fl) {
        st = m ? scm_error_set(err, SCM_ENOMEM, "out of memory") : (err ? err->code : SCM_ENOMEM);
        goto done;
    }
    if (scm_flow_loss(fl, r->Q, r->R, &r->eps))
        r->eps = NAN;
    if (r->converged && r->eps > o->global_eps && n <= o->polish_max_K) {
        scm_error pe;
        double res;
        r->polished = 1;
        scm_status ps = scm_fp_polish(fl, r->Q, r->R, 6, polish_floor(n, M), &res, &pe);
        if (ps == SCM_ENOMEM) {
            st = scm_error_set(err, SCM_ENOMEM, "%s", pe.msg);
            goto done;
        }
        r->polish_ok = ps == SCM_OK;
        if (scm_flow_loss(fl, r->Q, r->R, &r->eps))
            r->eps = NAN;
    }
    if (scm_flow_rhs(fl, r->Q, r->R, F, F + (size_t)n * n, NULL) == SCM_OK)
        r->res = scm_xc_max_abs(F, (size_t)n * n + (size_t)n * M);
    r->trQ = r->normR2 = 0.0;
    for (int a = 0; a < n; a++)
        r->trQ += r->Q[a * n + a];
    for (size_t i = 0; i < (size_t)n * M; i++)
        r->normR2 += r->R[i] * r->R[i];
    if ((st = scm_model_align(m, r->Q, r->R, 0.0, kind, partner, NULL))) {
        st = scm_error_set(err, st, "out of memory");
        goto done;
    }
    for (int a = 0; a < n; a++) {
        r->n_anti += kind[a] == SCM_ALIGN_ANTI;
        r->n_aligned += kind[a] == SCM_ALIGN_ALIGNED;
        r->n_unpaired += kind[a] == SCM_ALIGN_UNPAIRED;
        r->n_none += kind[a] == SCM_ALIGN_NONE || kind[a] == SCM_ALIGN_DEAD;
    }
done:
    scm_flow_free(fl);
    scm_model_free(m);
    free(idx);
    free(kind);
    free(partner);
    free(F);
    return st;
}

/* The smallest Q_kk of a small student (dead_tol < Q_kk <= dead_q), or 1
 * when there is none. */
static double small_min(int K, const double *Q, const scm_xc_opts *o)
{
    double q = 1.0;
    for (int k = 0; k < K; k++)
        if (Q[k * K + k] > o->traj.dead_tol && Q[k * K + k] <= o->dead_q)
            q = fmin(q, Q[k * K + k]);
    return q;
}

scm_status scm_xc_run_one(int K, int M, const scm_activation *act, scm_xc_method meth,
                          uint64_t base, long index, const scm_xc_opts *o, scm_xc_run *r,
                          scm_error *err)
{
    memset(r, 0, sizeof *r);
    r->method = meth;
    r->index = index;
    r->match = -1;
    scm_status st = scm_xc_opts_check(o, err);
    if (st)
        return st;
    if (K < 1 || M < 1 || index < 0)
        return scm_error_set(err, SCM_EINVAL, "need K, M >= 1 and index >= 0");
    r->seed = scm_sweep_seed(base, index);
    double *Q = malloc(sizeof(double) * ((size_t)K * K + (size_t)K * M));
    if (!Q)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    double *R = Q + (size_t)K * K;
    scm_model *m = NULL;
    if (meth == SCM_XC_ODE) {
        m = scm_model_alloc(K, M, act, NULL, NULL, NULL, err);
        if (!m) {
            free(Q);
            return err ? err->code : SCM_ENOMEM;
        }
        scm_traj_result tr;
        if ((st = scm_init_random(m, o->d, o->sigma, r->seed, Q, R, err)) ||
            (st = scm_traj_run(m, &scm_rule_gd, Q, R, &o->traj, &tr, err))) {
            scm_model_free(m);
            free(Q);
            return st;
        }
        r->work = tr.n_steps;
        double t_used = tr.t, q_before = 1.0;
        int vanishing = 0;
        for (int stage = 0;; stage++) {
            scm_stop_reason stop = tr.stop;
            r->converged = stop == SCM_STOP_FIXED_POINT || stop == SCM_STOP_EPS;
            if (!r->converged)
                snprintf(r->why, sizeof r->why, "%s%s%.200s%s", scm_stop_reason_str(stop),
                         stop == SCM_STOP_FAILED ? ": " : "",
                         stop == SCM_STOP_FAILED ? tr.err.msg : "",
                         stage ? " (continuing a run with a small student)" : "");
            memcpy(Q, tr.Q, sizeof(double) * (size_t)K * K);
            memcpy(R, tr.R, sizeof(double) * (size_t)K * M);
            scm_traj_result_free(&tr);
            /* A small student's rows of F scale with its norm, so the
             * absolute stopping test passes while it may still vanish: go
             * on with the test scaled by its Q_kk, until it dies (zeroed
             * by the integrator) or stops shrinking (stationary at its own
             * scale: Q_kk kept more than half of its value over a stage). */
            double qs = small_min(K, Q, o);
            vanishing = stage > 0 && qs < 0.5 * q_before;
            if (!r->converged || stop == SCM_STOP_EPS || qs >= 1.0 || (stage > 0 && !vanishing))
                break;
            if (stage == SCM_XC_SMALL_STAGES) {
                r->converged = 0;
                snprintf(r->why, sizeof r->why, "a small student still vanishing after %d "
                         "continuations (Q_kk = %.3g)", SCM_XC_SMALL_STAGES, qs);
                break;
            }
            q_before = qs;
            scm_traj_opts t2 = o->traj;
            t2.grad_stop = o->traj.grad_stop * qs;
            t2.t_max = o->traj.t_max - t_used;
            t2.max_steps = o->traj.max_steps - r->work;
            if (t2.t_max <= 0.0 || t2.max_steps < 1) {
                r->converged = 0;
                snprintf(r->why, sizeof r->why, "a small student (Q_kk = %.3g) and no time "
                         "or steps left to settle it", qs);
                break;
            }
            if (t2.t_first > t2.t_max)
                t2.t_first = t2.t_max;
            if ((st = scm_traj_run(m, &scm_rule_gd, Q, R, &t2, &tr, err))) {
                scm_model_free(m);
                free(Q);
                return st;
            }
            r->work += tr.n_steps;
            t_used += tr.t;
            r->stages++;
        }
        scm_model_free(m);
    } else {
        if ((st = scm_xc_gd_run(K, M, act, r->seed, o, Q, R, r, err))) {
            free(Q);
            return st;
        }
    }
    st = finish(K, M, act, Q, R, o, r, err);
    free(Q);
    return st;
}

/* The runs of scm_xc_run_many, one per item. */
typedef struct {
    int K, M;
    const scm_activation *act;
    scm_xc_method meth;
    uint64_t base;
    long first;
    const scm_xc_opts *o;
    scm_xc_run *r;
    scm_status *st;
} run_job;

static void run_item(void *ctx, int tid, int i)
{
    (void)tid;
    run_job *j = ctx;
    j->st[i] = scm_xc_run_one(j->K, j->M, j->act, j->meth, j->base, j->first + i, j->o, &j->r[i],
                              NULL);
}

scm_status scm_xc_run_many(int K, int M, const scm_activation *act, scm_xc_method meth,
                           uint64_t base, long first, int n, const scm_xc_opts *o, int threads,
                           scm_xc_run *r, long *failed, scm_error *err)
{
    *failed = -1;
    if (threads < 1 || threads > 64)
        return scm_error_set(err, SCM_EINVAL, "threads must be in [1, 64], got %d", threads);
    if (n < 0 || first < 0)
        return scm_error_set(err, SCM_EINVAL, "need n >= 0 and first >= 0");
    scm_status *st = malloc(sizeof *st * ((size_t)n + 1));
    if (!st)
        return scm_error_set(err, SCM_ENOMEM, "out of memory for %d crosscheck runs", n);
    run_job j = {K, M, act, meth, base, first, o, r, st};
    scm_parallel_for(threads, n, run_item, &j);
    scm_status out = SCM_OK;
    for (int i = 0; i < n && !out; i++)
        if (st[i]) {
            /* a run is a pure function of its index: again, for the message */
            *failed = first + i;
            scm_xc_run_free(&r[i]);
            out = scm_xc_run_one(K, M, act, meth, base, first + i, o, &r[i], err);
            if (!out)
                out = scm_error_set(err, st[i], "run %ld failed once and not again", first + i);
        }
    free(st);
    return out;
}

void scm_xc_match(scm_xc_run *r, const scm_xc_list *l, const scm_xc_opts *o)
{
    r->match = -1;
    r->global = 0;
    r->inv_agree = 0;
    if (!r->converged || !isfinite(r->eps))
        return;
    if (r->eps < o->global_eps) {
        r->global = 1;
        for (int i = 0; i < l->n && r->match < 0; i++)
            if (l->pt[i].eps < o->global_eps)
                r->match = i;
        return;
    }
    double best = INFINITY;
    for (int i = 0; i < l->n; i++) {
        double d = fabs(l->pt[i].eps - r->eps);
        if (d <= o->match_rtol * fabs(l->pt[i].eps) + o->match_atol && d < best) {
            best = d;
            r->match = i;
        }
    }
    if (r->match >= 0) {
        const scm_xc_point *p = &l->pt[r->match];
        r->inv_agree = fabs(p->trQ - r->trQ) <= o->inv_rtol * fmax(1.0, fabs(p->trQ)) &&
                       fabs(p->normR2 - r->normR2) <= o->inv_rtol * fmax(1.0, fabs(p->normR2));
    }
}

/* ---- block structure ---------------------------------------------------- */

void scm_xc_groups_free(scm_xc_groups *g)
{
    free(g->g);
    memset(g, 0, sizeof *g);
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static int cmp_group(const void *pa, const void *pb)
{
    const scm_xc_group *a = pa, *b = pb;
    if (a->size != b->size)
        return b->size - a->size;
    return a->first - b->first;
}

scm_status scm_xc_group_students(int K, int M, const double *Q, const double *R, double tol,
                                 scm_xc_groups *g)
{
    memset(g, 0, sizeof *g);
    if (K < 1)
        return SCM_OK;
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_linear, NULL, NULL, NULL, &e);
    scm_alignment *kind = malloc(sizeof *kind * (size_t)K);
    int *partner = malloc(sizeof(int) * (size_t)K);
    int *grp = malloc(sizeof(int) * (size_t)K);
    double *others = malloc(sizeof(double) * (size_t)K * (size_t)M);
    double *own = malloc(sizeof(double) * (size_t)K);
    int *nother = malloc(sizeof(int) * (size_t)K);
    g->g = calloc((size_t)K, sizeof *g->g);
    scm_status st = SCM_OK;
    if (!m || !kind || !partner || !grp || !others || !own || !nother || !g->g) {
        st = SCM_ENOMEM;
        goto done;
    }
    if ((st = scm_model_align(m, Q, R, 0.0, kind, partner, NULL)))
        goto done;
    for (int k = 0; k < K; k++) {
        int q = 0;
        own[k] = partner[k] >= 0 ? R[k * M + partner[k]] : NAN;
        for (int t = 0; t < M; t++)
            if (t != partner[k])
                others[(size_t)k * M + q++] = R[k * M + t];
        nother[k] = q;
        qsort(others + (size_t)k * M, (size_t)q, sizeof(double), cmp_double);
        grp[k] = -1;
    }
    for (int k = 0; k < K; k++) {
        if (grp[k] >= 0)
            continue;
        int gi = g->n++;
        grp[k] = gi;
        for (int l = k + 1; l < K; l++) {
            if (grp[l] >= 0 || kind[l] != kind[k] || nother[l] != nother[k])
                continue;
            double sc = tol * sqrt(fmax(fmax(Q[k * K + k], Q[l * K + l]), 1e-300));
            int same = fabs(Q[k * K + k] - Q[l * K + l]) <= sc &&
                       (isnan(own[k]) ? isnan(own[l]) : fabs(own[k] - own[l]) <= sc);
            for (int i = 0; same && i < nother[k]; i++)
                same = fabs(others[(size_t)k * M + i] - others[(size_t)l * M + i]) <= sc;
            if (same)
                grp[l] = gi;
        }
        scm_xc_group *G = &g->g[gi];
        G->first = k;
        G->kind = (int)kind[k];
        G->q = Q[k * K + k];
        G->own = own[k];
        double sc = tol * sqrt(fmax(Q[k * K + k], 1e-300));
        const double *o = others + (size_t)k * M;
        for (int i = 0; i < nother[k];) {
            int j = i + 1;
            while (j < nother[k] && o[j] - o[i] <= sc)
                j++;
            if (G->n_values < SCM_XC_MAX_VALUES) {
                G->value[G->n_values] = o[i];
                G->count[G->n_values] = j - i;
                G->n_values++;
            } else {
                G->more_values++;
            }
            i = j;
        }
    }
    for (int k = 0; k < K; k++)
        g->g[grp[k]].size++;
    qsort(g->g, (size_t)g->n, sizeof *g->g, cmp_group);
done:
    scm_model_free(m);
    free(kind);
    free(partner);
    free(grp);
    free(others);
    free(own);
    free(nother);
    if (st)
        scm_xc_groups_free(g);
    return st;
}
