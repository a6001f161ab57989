/* fpsweep_close.c: the closure in k1 at one M of scm_fp_sweep_grow: the
 * solutions found at M (the anchors and the probes) continued to their
 * neighbours in k1, then the new ones in turn, until every branch in k1
 * is carried to every k1 it reaches; see fpsweep_internal.h
 * (scm_fp_close_k1). */
#include "scm/fpsweep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/fpsweep_internal.h"

int scm_fp_grow_queue_push(scm_fp_grow_item **queue, int *n_queue, int *cap_queue,
                           scm_fp_grow_item it)
{
    if (*n_queue == *cap_queue) {
        int cap = *cap_queue ? 2 * *cap_queue : 256;
        scm_fp_grow_item *nq = realloc(*queue, sizeof *nq * (size_t)cap);
        if (!nq)
            return -1;
        *queue = nq;
        *cap_queue = cap;
    }
    (*queue)[(*n_queue)++] = it;
    return 0;
}

/* One try of the closure: correct y (of instance k) and add it to sw if
 * it is a new, PSD solution; 1 if added, 0 if not, -1 for no memory.
 * Where the chord corrector lands outside the PSD cone, GSL's hybrids
 * from the same start with a fresh Jacobian: next to the points on the
 * PSD boundary (the aligned students matching their teachers) lies a
 * solution just outside it with nearly the same loss (K = M = 1000,
 * k1 = 2: 0.00058473254 with Gram eigenvalue -1e-4 against 0.00058473251
 * on the boundary), and the kept Jacobian leads there. */
static int close_try(scm_fp_sweep *sw, scm_blockflow **bfs, int k, double *y,
                     const scm_fp_opts *o, scm_fp_chord *ch, long *steps)
{
    int n = scm_ansatz_inst_nscalars(sw->inst[k]);
    double res, eps, gmin, y0[256];
    memcpy(y0, y, sizeof(double) * (size_t)n);
    (*steps)++;
    sw->seeds[k]++;
    ch->valid = 0;
    long hy0 = ch->hybrids;
    int ok = scm_fp_chord_correct(ch, bfs[k], y, o, &res, &eps) == 0 &&
             scm_fp_psd_ok(bfs[k], y, o, &gmin);
    if (!ok && ch->hybrids == hy0) { /* not already hybrids from this start */
        scm_fp_opts oo = *o;
        oo.max_iter = 30;
        memcpy(y, y0, sizeof(double) * (size_t)n);
        ch->hybrids++;
        ch->valid = 0;
        ok = scm_fp_solve(bfs[k], y, &oo, &res) == SCM_OK &&
             scm_blockflow_residual(bfs[k], y, NULL, &eps) == SCM_OK &&
             scm_fp_psd_ok(bfs[k], y, o, &gmin);
    }
    if (!ok || scm_fp_set_has(&sw->set[k], y, n, eps, o->dedup_tol)) {
        sw->nothing_new[k]++;
        return 0;
    }
    return scm_fp_set_add_block(&sw->set[k], sw->inst[k], y, eps, res, gmin) ? -1 : 1;
}

/* Continue solution x of instance in (k1 = ka) at fixed (K, M) to k1 = kb
 * = ka +- 1 through instances of real k1 (group sizes real), in steps of
 * 1/4 halved on failure down to 1/64, with a secant predictor, so that a
 * solution that moves a long way between neighbouring k1 is followed
 * rather than lost.  On success y (in the scalars of inst_b, at k1 = kb)
 * and 0; -1 if the path ends (fold, PSD cone left, jump), -2 for no
 * memory. */
static int step_k1_frac(const scm_ansatz *a, const scm_ansatz_inst *in, const double *x,
                        const scm_ansatz_inst *inst_b, const scm_activation *act,
                        const scm_fp_opts *o, scm_fp_chord *ch, double *y, long *steps)
{
    int n = scm_ansatz_inst_nscalars(in);
    if (scm_ansatz_inst_nscalars(inst_b) != n)
        return -1;
    double K = scm_ansatz_inst_K(in), M = scm_ansatz_inst_M(in);
    double ka = scm_ansatz_inst_k1(in), kb = scm_ansatz_inst_k1(inst_b);
    double xc[256], xp[256], xt[256], kc = ka, kp = NAN, h = 0.25;
    memcpy(xc, x, sizeof(double) * (size_t)n);
    ch->valid = 0;
    while (kc != kb) {
        if (h < 1.0 / 64)
            return -1;
        double kn = kb > ka ? fmin(kb, kc + h) : fmax(kb, kc - h);
        scm_fp_path_predict(xc, xp, kc, kp, kn, n, xt);
        scm_error e;
        scm_ansatz_inst *ik = kn == kb ? (scm_ansatz_inst *)inst_b
                                       : scm_ansatz_instantiate(a, K, M, kn, &e);
        scm_blockflow *bf = ik ? scm_blockflow_alloc(ik, act) : NULL;
        if (!ik || !bf) {
            scm_blockflow_free(bf);
            if (ik != inst_b)
                scm_ansatz_inst_free(ik);
            return -2;
        }
        double res, eps, gmin;
        int ok = scm_ansatz_inst_nscalars(ik) == n &&
                 scm_fp_chord_correct(ch, bf, xt, o, &res, &eps) == 0 &&
                 scm_fp_psd_ok(bf, xt, o, &gmin) && scm_fp_path_no_jump(xc, xp, kc, kp, kn, n, xt);
        (*steps)++;
        scm_blockflow_free(bf);
        if (ik != inst_b)
            scm_ansatz_inst_free(ik);
        if (!ok) {
            h *= 0.5;
            ch->valid = 0;
            continue;
        }
        memcpy(xp, xc, sizeof(double) * (size_t)n);
        memcpy(xc, xt, sizeof(double) * (size_t)n);
        kp = kc;
        kc = kn;
    }
    memcpy(y, xc, sizeof(double) * (size_t)n);
    return 0;
}

/* No group of x (of nonzero size) unspecialised: the points the closure
 * in k1 continues.  The others (a group collapsed onto its teachers'
 * mean, e.g. ReLU's continuum of collapsed fixed points) are listed where
 * met but not continued: they are not the k1 families, and at K = M = 1000
 * continuing them took most of the time (25137 solutions against 1406). */
static int block_specialised(const scm_ansatz_inst *in, const double *x)
{
    for (int i = 0; i < in->ns; i++)
        if (!scm_size_zero(in->ssize[i]) && scm_group_unspecialised(in, x, i))
            return 0;
    return 1;
}

int scm_fp_close_k1(const scm_ansatz *a, const scm_activation *act, scm_fp_sweep *sw,
                    scm_blockflow **bfs, scm_fp_grow_item **queue, int *n_queue,
                    int *cap_queue, const scm_fp_opts *o, scm_fp_chord *ch, double *buf,
                    long *steps)
{
    double *y = buf, *yp = buf + 256;
    for (int q = 0; q < *n_queue; q++) {
        scm_fp_grow_item it = (*queue)[q];
        const double *x = sw->set[it.i].pt[it.p].x;
        for (int dir = -1; dir <= 1; dir += 2) {
            int k = it.i + dir;
            if (k < 0 || k >= sw->n || k == it.from)
                continue;
            int n = scm_ansatz_inst_nscalars(sw->inst[k]), got = 0;
            if (it.from >= 0) { /* the step that reached x, again (secant) */
                scm_fp_map_point(sw->inst[it.i], x, sw->inst[k], y);
                scm_fp_map_point(sw->inst[it.from], sw->set[it.from].pt[it.from_p].x, sw->inst[k],
                                 yp);
                for (int c = 0; c < n; c++)
                    y[c] += y[c] - yp[c];
                got = close_try(sw, bfs, k, y, o, ch, steps);
            }
            if (got == 0) { /* x itself, mapped */
                scm_fp_map_point(sw->inst[it.i], x, sw->inst[k], y);
                got = close_try(sw, bfs, k, y, o, ch, steps);
            }
            if (got == 0 && scm_ansatz_inst_nscalars(sw->inst[it.i]) != n) {
                /* a group of size 1 grows: its new off-diagonal overlaps
                 * from its overlaps with the other groups */
                scm_fp_map_point_fill(sw->inst[it.i], x, sw->inst[k], y);
                got = close_try(sw, bfs, k, y, o, ch, steps);
            }
            if (got == 0) { /* through real k1 */
                int rc = step_k1_frac(a, sw->inst[it.i], x, sw->inst[k], act, o, ch, y, steps);
                if (rc == -2)
                    return -1;
                if (rc == 0)
                    got = close_try(sw, bfs, k, y, o, ch, steps);
            }
            if (got < 0)
                return -1;
            if (got == 0 || !block_specialised(sw->inst[k], sw->set[k].pt[sw->set[k].n - 1].x))
                continue;
            if (scm_fp_grow_queue_push(queue, n_queue, cap_queue,
                                       (scm_fp_grow_item){k, sw->set[k].n - 1, it.i, it.p}))
                return -1;
        }
    }
    return 0;
}
