/* fpsweep_grow.c: every k1 instance of an ansatz at a large M from a small
 * M0 by continuation in M (scm_fp_sweep_grow, issue 11): each solution of
 * the k1 sweep at M0 followed along its path in M (group sizes real) to
 * M1, random probes at a few instances of M1, then the closure in k1 at M1
 * (fpsweep_close.c); see fpsweep.h. */
#include "scm/fpsweep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "landscape/ansatz_internal.h"
#include "landscape/fpsweep_internal.h"

/* The k1 of path `mode` from base instance j (of lo0..hi0 at M0) at M.
 * Mode 0 (proportional): the ends keep k1 (j <= lo0 + 1) or K - k1
 * (j >= hi0 - 1) fixed, so that their groups of size 0 or 1 keep their
 * scalars; the others follow the straight line to the integer nearest
 * j M1 / M0 (in proportion to the range), so both groups grow in
 * proportion.  Mode 1 keeps k1 fixed and mode 2 keeps K - k1 fixed: one
 * group keeps its size (a family of k1 anti-aligned students at every M,
 * as the plateau table follows them). */
static double path_k1(int j, int mode, int lo0, int hi0, int lo1, int hi1, double M0,
                      double M1, double M)
{
    double t;
    if (mode == 1 || (mode == 0 && j <= lo0 + 1))
        t = lo1 + (j - lo0);
    else if (mode == 2 || (mode == 0 && j >= hi0 - 1))
        t = hi1 - (hi0 - j);
    else
        t = lo1 + round((double)(j - lo0) * (hi1 - lo1) / (double)(hi0 - lo0));
    return j + (t - j) * (M - M0) / (M1 - M0);
}

/* Follow solution x0 of instance (M0 + dK, M0, j) along its path to M1;
 * on success y (of the instance at M1) holds the end point and 0 is
 * returned; -1 if the branch ends (Newton fails, the PSD cone is left, the
 * corrector jumps); -2 for no memory. */
static int follow_M(const scm_ansatz *a, int dK, int j, int mode, int lo0, int hi0, int lo1,
                    int hi1, int M0, int M1, const scm_ansatz_inst *in0, const double *x0,
                    const scm_activation *act, const scm_fp_opts *o, scm_fp_chord *ch,
                    scm_ansatz_inst *in1, double *y, long *steps)
{
    int n = scm_ansatz_inst_nscalars(in0);
    if (scm_ansatz_inst_nscalars(in1) != n)
        return -1;
    double *xc = malloc(sizeof(double) * (size_t)n * 3);
    if (!xc)
        return -2;
    double *xp = xc + n, *xt = xc + 2 * n;
    memcpy(xc, x0, sizeof(double) * (size_t)n);
    double Mc = M0, Mp = NAN, ratio = 1.25;
    int rc = 0;
    ch->valid = 0;
    while (Mc < M1) {
        double Mn = fmin(M1, Mc * ratio);
        if (Mn - Mc < 1e-3 * Mc) {
            rc = -1;
            break;
        }
        scm_error e;
        scm_ansatz_inst *in = Mn == M1 ? in1
                                       : scm_ansatz_instantiate(a, Mn + dK, Mn,
                                                                path_k1(j, mode, lo0, hi0, lo1, hi1,
                                                                        M0, M1, Mn),
                                                                &e);
        scm_blockflow *bf = in ? scm_blockflow_alloc(in, act) : NULL;
        int ok = 0;
        long ev0 = ch->evals;
        /* the chord corrector; where it fails, lands outside the PSD cone
         * or jumps, GSL's hybrids from the predictor with a fresh Jacobian
         * (near a crossing of branches the kept Jacobian can lead to the
         * other branch: the k1 = 1 path from M = 8 did at M = 212.68) */
        long hy0 = ch->hybrids;
        for (int attempt = 0; attempt < 2 && !ok && bf && scm_ansatz_inst_nscalars(in) == n;
             attempt++) {
            if (attempt == 1 && ch->hybrids != hy0)
                break; /* the corrector's own fallback was hybrids from this start */
            scm_fp_path_predict(xc, xp, Mc, Mp, Mn, n, xt);
            double res, eps, gmin;
            if (attempt == 0) {
                ok = scm_fp_chord_correct(ch, bf, xt, o, &res, &eps) == 0;
            } else {
                scm_fp_opts oo = *o;
                oo.max_iter = 30;
                ch->hybrids++;
                ch->valid = 0;
                ok = scm_fp_solve(bf, xt, &oo, &res) == SCM_OK &&
                     scm_blockflow_residual(bf, xt, NULL, &eps) == SCM_OK;
            }
            ok = ok && scm_fp_psd_ok(bf, xt, o, &gmin);
            (*steps)++;
            ok = ok && scm_fp_path_no_jump(xc, xp, Mc, Mp, Mn, n, xt);
        }
        scm_blockflow_free(bf);
        if (in != in1)
            scm_ansatz_inst_free(in);
        if (!ok) {
            ratio = 1.0 + 0.5 * (ratio - 1.0);
            ch->valid = 0;
            continue;
        }
        memcpy(xp, xc, sizeof(double) * (size_t)n);
        memcpy(xc, xt, sizeof(double) * (size_t)n);
        Mp = Mc;
        Mc = Mn;
        if (ch->evals - ev0 <= 4)
            ratio = fmin(2.0, 1.0 + 1.5 * (ratio - 1.0));
    }
    if (!rc)
        memcpy(y, xc, sizeof(double) * (size_t)n);
    free(xc);
    return rc;
}

/* The independent parts of the continuation, on o->threads threads: item
 * q < n_follow follows base solution q (instance fj[q], point fp[q]) along
 * its path to instance fi[q] at M1; item n_follow + t runs the random
 * starts of probe t.  Each item's result depends on the item alone (the
 * chord is per thread but reset at the start of each path), so the
 * anchors, taken in item order afterwards, do not depend on the threads. */
typedef struct {
    const scm_ansatz *a;
    const scm_activation *act;
    const scm_fp_opts *o, *probe_o;
    int dK, lo0, hi0, lo1, hi1, M0, M1, n_follow;
    const scm_fp_sweep *base;
    const scm_fp_sweep *sw;
    const int *fj, *fp, *fi, *fm, *probe_i;
    double *y;          /* n_follow x 256: the end points */
    int *rc;            /* follow_M's return per path */
    long *steps;        /* corrector calls per path */
    scm_fp_set *probe;  /* the probes' solutions */
    scm_status *probe_st;
    scm_error *probe_err;
    scm_fp_chord *ch;   /* one per thread */
} grow_job;

static void grow_job_run(void *ctx, int tid, int q)
{
    grow_job *g = ctx;
    if (q < g->n_follow) {
        int j = g->fj[q], p = g->fp[q];
        g->rc[q] = g->M1 == g->M0
                       ? 0
                       : follow_M(g->a, g->dK, g->lo0 + j, g->fm[q], g->lo0, g->hi0, g->lo1, g->hi1,
                                  g->M0, g->M1, g->base->inst[j], g->base->set[j].pt[p].x, g->act,
                                  g->o, &g->ch[tid], g->sw->inst[g->fi[q]],
                                  g->y + (size_t)q * 256, &g->steps[q]);
        if (g->M1 == g->M0)
            memcpy(g->y + (size_t)q * 256, g->base->set[j].pt[p].x,
                   sizeof(double) * (size_t)g->base->set[j].pt[p].nsc);
        return;
    }
    int t = q - g->n_follow;
    g->probe_st[t] = scm_fp_enumerate(g->a, g->sw->inst[g->probe_i[t]], g->act, g->probe_o, NULL,
                                      0, &g->probe[t], &g->probe_err[t]);
}

/* One continuation in M (scm_fp_sweep_grow): the arguments and their
 * instance ranges at M0 and M1, the base sweep at M0, the sweep being
 * built at M1 (sw) with a blockflow per instance, the queue of the
 * closure in k1, and the parallel job with its index arrays (fj holds
 * them all) and the probes' options. */
typedef struct {
    const scm_ansatz *a;
    const scm_activation *act;
    const scm_fp_opts *o;
    int dK, M0, M1, n_probe, fixed_max, nthr;
    int lo0, hi0, lo1, hi1, n; /* n = hi1 - lo1 + 1 instances at M1 */
    scm_fp_sweep base, *sw;
    scm_fp_grow_stats *gs;     /* may be NULL */
    scm_blockflow **bfs;       /* [n] */
    double *buf;               /* 1024 doubles: the closure's, and a residual */
    scm_fp_grow_item *queue;   /* the solutions whose neighbours in k1 are to be tried */
    int n_queue, cap_queue;
    int *fj;
    scm_fp_opts probe_o;
    grow_job job;
    scm_fp_chord ch;           /* the closure's */
} grow_run;

/* The arguments' checks; the instance ranges at M0 and M1 into g. */
static scm_status grow_check(grow_run *g, scm_error *err)
{
    scm_status st = scm_fp_opts_check(g->o, err);
    if (st)
        return st;
    int M0 = g->M0, M1 = g->M1;
    if (!(M0 >= 1 && M1 >= M0))
        return scm_error_set(err, SCM_EINVAL, "continuation in M: need 1 <= M0 <= M1 (got %d, %d)",
                             M0, M1);
    if (scm_ansatz_applies(g->a, M0 + g->dK, M0, &g->lo0, &g->hi0) != 1 ||
        scm_ansatz_applies(g->a, M1 + g->dK, M1, &g->lo1, &g->hi1) != 1)
        return scm_error_set(err, SCM_EINVAL, "ansatz '%s' does not apply at K - M = %d, M = %d "
                             "or %d", scm_ansatz_name(g->a), g->dK, M0, M1);
    if (g->hi0 - g->lo0 < 3 && M1 > M0)
        return scm_error_set(err, SCM_EINVAL, "continuation in M: the base M0 = %d has fewer "
                             "than 4 k1 instances", M0);
    if (g->n_probe < 0 || g->n_probe > g->hi1 - g->lo1 + 1)
        return scm_error_set(err, SCM_EINVAL, "continuation in M: n_probe must be in 0..%d (the "
                             "k1 instances at M1), got %d", g->hi1 - g->lo1 + 1, g->n_probe);
    return SCM_OK;
}

/* The sweep at M1: every k1 instance (at most 256 scalars each) and a
 * blockflow of each. */
static scm_status grow_target(grow_run *g, scm_error *err)
{
    scm_fp_sweep *sw = g->sw;
    int n = g->n = g->hi1 - g->lo1 + 1;
    g->buf = malloc(sizeof(double) * 1024);
    sw->k1_min = g->lo1;
    sw->k1_max = g->hi1;
    sw->inst = calloc((size_t)n, sizeof *sw->inst);
    sw->set = calloc((size_t)n, sizeof *sw->set);
    sw->seeds = calloc((size_t)n, sizeof(int));
    sw->nothing_new = calloc((size_t)n, sizeof(int));
    g->bfs = calloc((size_t)n, sizeof *g->bfs);
    if (!g->buf || !sw->inst || !sw->set || !sw->seeds || !sw->nothing_new || !g->bfs)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
    sw->n = n;
    for (int i = 0; i < n; i++) {
        if (!(sw->inst[i] = scm_ansatz_instantiate(g->a, g->M1 + g->dK, g->M1, g->lo1 + i, err)))
            return err ? err->code : SCM_EINVAL;
        if (scm_ansatz_inst_nscalars(sw->inst[i]) > 256)
            return scm_error_set(err, SCM_EINVAL, "continuation in M: more than 256 scalars");
        if (!(g->bfs[i] = scm_blockflow_alloc(sw->inst[i], g->act)))
            return scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
    }
    if (g->gs)
        for (int i = 0; i < g->base.n; i++)
            g->gs->base += g->base.set[i].n;
    return SCM_OK;
}

/* The job's items: the paths of the base solutions (the proportional one,
 * and with fixed_max >= 2 those with k1 or K - k1 fixed, where they end
 * at another instance), then the probes: o->n_random random starts at
 * n_probe instances spread evenly over k1 at M1, for branches born
 * between M0 and M1. */
static scm_status grow_plan(grow_run *g, scm_error *err)
{
    grow_job *job = &g->job;
    const scm_fp_sweep *base = &g->base;
    int lo0 = g->lo0, hi0 = g->hi0, lo1 = g->lo1, hi1 = g->hi1, M0 = g->M0, M1 = g->M1;
    int n_probe = g->n_probe, n = g->n, n_follow = 0, n_sol = 0;
    for (int j = 0; j < base->n; j++)
        n_sol += base->set[j].n;
    job->fj = g->fj = malloc(sizeof(int) * (size_t)(12 * n_sol + n_probe + 1));
    job->y = malloc(sizeof(double) * 256 * (size_t)(3 * n_sol + 1));
    job->rc = calloc((size_t)(3 * n_sol) + 1, sizeof(int));
    job->steps = calloc((size_t)(3 * n_sol) + 1, sizeof(long));
    job->probe = calloc((size_t)n_probe + 1, sizeof(scm_fp_set));
    job->probe_st = calloc((size_t)n_probe + 1, sizeof(scm_status));
    job->probe_err = calloc((size_t)n_probe + 1, sizeof(scm_error));
    job->ch = calloc((size_t)g->nthr, sizeof(scm_fp_chord));
    if (!g->fj || !job->y || !job->rc || !job->steps || !job->probe || !job->probe_st ||
        !job->probe_err || !job->ch)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
    int *fj = g->fj, *fp = fj + 3 * n_sol, *fi = fj + 6 * n_sol, *fm = fj + 9 * n_sol,
        *probe_i = fj + 12 * n_sol;
    job->fp = fp;
    job->fi = fi;
    job->fm = fm;
    job->probe_i = probe_i;
    for (int j = 0; j < base->n; j++)
        for (int p = 0; p < base->set[j].n; p++)
            for (int mode = 0; mode < (M1 > M0 ? 3 : 1); mode++) {
                if ((mode == 1 && lo0 + j > lo0 + g->fixed_max) ||
                    (mode == 2 && lo0 + j < hi0 - g->fixed_max))
                    continue;
                int i = M1 > M0 ? (int)lround(path_k1(lo0 + j, mode, lo0, hi0, lo1, hi1, M0,
                                                      M1, M1)) - lo1
                                : j, dup = 0;
                for (int m = 0; m < mode; m++)
                    dup |= i == (int)lround(path_k1(lo0 + j, m, lo0, hi0, lo1, hi1, M0, M1, M1)) -
                                    lo1;
                if (dup)
                    continue;
                fj[n_follow] = j;
                fp[n_follow] = p;
                fi[n_follow] = i;
                fm[n_follow++] = mode;
            }
    for (int t = 0; t < n_probe; t++)
        probe_i[t] = n_probe == 1 ? n / 2 : (int)lround((double)t * (n - 1) / (n_probe - 1));
    g->probe_o = *g->o;
    g->probe_o.full_max_K = 0; /* block level, as the rest */
    g->probe_o.threads = 1;    /* the probes are the parallel items */
    job->a = g->a;
    job->act = g->act;
    job->o = g->o;
    job->probe_o = &g->probe_o;
    job->dK = g->dK;
    job->lo0 = lo0;
    job->hi0 = hi0;
    job->lo1 = lo1;
    job->hi1 = hi1;
    job->M0 = M0;
    job->M1 = M1;
    job->n_follow = n_follow;
    job->base = base;
    job->sw = g->sw;
    for (int t = 0; t < n_probe; t++)
        scm_fp_set_init(&job->probe[t]);
    return SCM_OK;
}

/* The anchors: the end points of the paths, in item order, each new PSD
 * one added to its instance at M1 and queued for the closure. */
static scm_status grow_anchors(grow_run *g, scm_error *err)
{
    scm_fp_sweep *sw = g->sw;
    const grow_job *job = &g->job;
    const scm_fp_opts *o = g->o;
    long steps = 0;
    for (int q = 0; q < job->n_follow; q++) {
        int i = job->fi[q], nn = scm_ansatz_inst_nscalars(sw->inst[i]);
        double *y = job->y + (size_t)q * 256, *Fy = g->buf, res = 0.0, eps, gmin;
        steps += job->steps[q];
        if (job->rc[q] == -2)
            return scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
        if (job->rc[q])
            continue;
        if (g->gs)
            g->gs->reached++;
        if (scm_blockflow_residual(g->bfs[i], y, Fy, &eps) ||
            scm_fp_set_has(&sw->set[i], y, nn, eps, o->dedup_tol))
            continue;
        for (int c = 0; c < nn; c++)
            res = fmax(res, fabs(Fy[c]));
        if (!scm_fp_psd_ok(g->bfs[i], y, o, &gmin))
            continue;
        if (scm_fp_set_add_block(&sw->set[i], sw->inst[i], y, eps, res, gmin) ||
            scm_fp_grow_queue_push(&g->queue, &g->n_queue, &g->cap_queue,
                                   (scm_fp_grow_item){i, sw->set[i].n - 1, -1, -1}))
            return scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
    }
    if (g->gs) {
        g->gs->anchors = g->n_queue;
        g->gs->steps_M = steps;
    }
    return SCM_OK;
}

/* The probes' solutions, in order, each new PSD one added and queued. */
static scm_status grow_probes(grow_run *g, scm_error *err)
{
    scm_fp_sweep *sw = g->sw;
    const grow_job *job = &g->job;
    const scm_fp_opts *o = g->o;
    for (int t = 0; t < g->n_probe; t++) {
        int i = job->probe_i[t];
        const scm_fp_set *s = &job->probe[t];
        if (job->probe_st[t]) {
            if (err)
                *err = job->probe_err[t];
            return job->probe_st[t];
        }
        for (int p = 0; p < s->n; p++) {
            double gmin;
            if (scm_fp_set_has(&sw->set[i], s->pt[p].x, s->pt[p].nsc, s->pt[p].eps,
                               o->dedup_tol) ||
                !scm_fp_psd_ok(g->bfs[i], s->pt[p].x, o, &gmin))
                continue;
            if (scm_fp_set_add_block(&sw->set[i], sw->inst[i], s->pt[p].x, s->pt[p].eps,
                                     s->pt[p].res_block, gmin) ||
                scm_fp_grow_queue_push(&g->queue, &g->n_queue, &g->cap_queue,
                                       (scm_fp_grow_item){i, sw->set[i].n - 1, -1, -1}))
                return scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
            if (g->gs)
                g->gs->probed++;
        }
    }
    return SCM_OK;
}

/* The closure in k1 at M1, and the counters of the correctors. */
static scm_status grow_close(grow_run *g, scm_error *err)
{
    long steps = 0;
    if (scm_fp_close_k1(g->a, g->act, g->sw, g->bfs, &g->queue, &g->n_queue, &g->cap_queue, g->o,
                        &g->ch, g->buf, &steps))
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (g->gs) {
        g->gs->steps_k1 = steps;
        g->gs->evals = g->ch.evals;
        g->gs->hybrids = g->ch.hybrids;
        for (int t = 0; t < g->nthr; t++) {
            g->gs->evals += g->job.ch[t].evals;
            g->gs->hybrids += g->job.ch[t].hybrids;
        }
    }
    return SCM_OK;
}

static void grow_free(grow_run *g)
{
    grow_job *job = &g->job;
    free(g->queue);
    free(g->fj);
    free(job->y);
    free(job->rc);
    free(job->steps);
    if (job->probe)
        for (int t = 0; t < g->n_probe; t++)
            scm_fp_set_free(&job->probe[t]);
    free(job->probe);
    free(job->probe_st);
    free(job->probe_err);
    if (job->ch)
        for (int t = 0; t < g->nthr; t++)
            scm_fp_chord_free(&job->ch[t]);
    free(job->ch);
    if (g->bfs)
        for (int i = 0; i < g->n; i++)
            scm_blockflow_free(g->bfs[i]);
    free(g->bfs);
    free(g->buf);
    scm_fp_chord_free(&g->ch);
    scm_fp_sweep_free(&g->base);
}

scm_status scm_fp_sweep_grow(const scm_ansatz *a, int dK, int M0, int M1, int n_probe,
                             int fixed_max, const scm_activation *act, const scm_fp_opts *o,
                             scm_fp_sweep *sw, scm_fp_grow_stats *gs, scm_error *err)
{
    memset(sw, 0, sizeof *sw);
    if (gs)
        memset(gs, 0, sizeof *gs);
    grow_run g;
    memset(&g, 0, sizeof g);
    g.a = a;
    g.act = act;
    g.o = o;
    g.dK = dK;
    g.M0 = M0;
    g.M1 = M1;
    g.n_probe = n_probe;
    g.fixed_max = fixed_max;
    g.sw = sw;
    g.gs = gs;
    scm_status st = grow_check(&g, err);
    if (st)
        return st;
    g.nthr = o->threads > 0 ? o->threads : 1;
    /* the base: every k1 at M0 by random starts (o->n_random each) */
    st = scm_fp_sweep_k1(a, M0 + dK, M0, act, o, 2, &g.base, err);
    if (st)
        return st;
    if (!(st = grow_target(&g, err)) && !(st = grow_plan(&g, err))) {
        /* the paths and the probes in parallel, then their results in order */
        scm_parallel_for(g.nthr, g.job.n_follow + n_probe, grow_job_run, &g.job);
        if (!(st = grow_anchors(&g, err)) && !(st = grow_probes(&g, err)))
            st = grow_close(&g, err);
    }
    if (st)
        scm_fp_sweep_free(sw);
    else
        sw->passes = 1;
    grow_free(&g);
    return st;
}
