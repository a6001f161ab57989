/* fpsweep_classify.c: scm_fp_classify at block level (scm_fp_classify_block,
 * fpsweep.h): the same counts without the full (Q, R) state.
 *
 * scm_fp_classify builds the K x K and K x M state, a model (a Cholesky
 * factorisation of T, O(M^3)) and sorts all K M student-teacher pairs by
 * |cosine| for the greedy pairing of scm_model_align: at K = M = 200 that
 * was two thirds of the time of classifying the points of a continuation
 * in M, and at K = M = 1000 it would dominate everything.  But at an
 * ansatz point the cosines take one value per entry class of R (a
 * diagonal, an off-diagonal or a constant class per pair of groups), so
 * the greedy pairing can run level by level: the pairs sorted by
 * decreasing |cosine|, ties by student then teacher index (align_pair_cmp
 * of model.c), are taken in that order; at one level of |cosine| each
 * unpaired student, in index order, takes the first free teacher of its
 * classes at that level.  With a "next free teacher" array with path
 * compression this costs O(K (number of levels) + M) per point, with
 * exactly the pairing, hence the counts, of scm_model_align (T = I,
 * dead_q = 0, as scm_fp_classify). */
#include "scm/fpsweep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/fpclassify_internal.h"

/* The first free teacher >= m (nxt[M] = M is the end). */
static int next_free(int *nxt, int m)
{
    int r = m;
    while (nxt[r] != r)
        r = nxt[r];
    while (nxt[m] != r) { /* path compression */
        int n = nxt[m];
        nxt[m] = r;
        m = n;
    }
    return r;
}

/* |cosine| of class scalar r at a student of own overlap q, as
 * scm_model_align computes it (T_mm = 1). */
static double abs_cos(double r, double q)
{
    double c = fabs(r) / sqrt(q * 1.0);
    return isnan(c) ? 0.0 : c;
}

/* Scalar idx of x, 0 for an absent class (-1). */
static double xs(const double *x, int idx)
{
    return idx >= 0 ? x[idx] : 0.0;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The partner teacher of every student (-1: none) by the greedy pairing;
 * lev (at most 2 ns nt + 1 entries) is scratch. */
static void pair_greedy(const scm_ansatz_inst *in, const double *x, int *partner, int *nxt,
                        double *lev)
{
    int K = in->Ki, M = in->Mi, nl = 0;
    for (int i = 0; i < in->ns; i++) {
        double q = x[in->qd[i] >= 0 ? in->qd[i] : 0];
        if (in->soff[i + 1] == in->soff[i] || !(q > 0.0))
            continue;
        for (int t = 0; t < in->nt; t++) {
            int c = i * in->nt + t;
            if (in->toff[t + 1] == in->toff[t])
                continue;
            if (in->spair[i] == t) {
                lev[nl++] = abs_cos(xs(x, in->rd[c]), q);
                if (in->ro[c] >= 0)
                    lev[nl++] = abs_cos(xs(x, in->ro[c]), q);
            } else {
                lev[nl++] = abs_cos(xs(x, in->rc[c]), q);
            }
        }
    }
    qsort(lev, (size_t)nl, sizeof *lev, cmp_desc);
    for (int k = 0; k < K; k++)
        partner[k] = -1;
    for (int m = 0; m <= M; m++)
        nxt[m] = m;
    for (int l = 0; l < nl; l++) {
        double v = lev[l];
        if (l > 0 && v == lev[l - 1])
            continue;
        for (int i = 0; i < in->ns; i++) {
            double q = x[in->qd[i] >= 0 ? in->qd[i] : 0];
            if (in->soff[i + 1] == in->soff[i] || !(q > 0.0))
                continue;
            for (int k = in->soff[i]; k < in->soff[i + 1]; k++) {
                if (partner[k] >= 0)
                    continue;
                int best = M, pos = k - in->soff[i];
                for (int t = 0; t < in->nt; t++) {
                    int c = i * in->nt + t, lo = in->toff[t], hi = in->toff[t + 1];
                    if (hi == lo)
                        continue;
                    if (in->spair[i] == t) {
                        int own = lo + pos, m;
                        if (abs_cos(xs(x, in->rd[c]), q) == v && nxt[own] == own && own < best)
                            best = own;
                        if (in->ro[c] >= 0 && abs_cos(xs(x, in->ro[c]), q) == v) {
                            m = next_free(nxt, lo);
                            if (m == own)
                                m = next_free(nxt, own + 1);
                            if (m < hi && m < best)
                                best = m;
                        }
                    } else if (abs_cos(xs(x, in->rc[c]), q) == v) {
                        int m = next_free(nxt, lo);
                        if (m < hi && m < best)
                            best = m;
                    }
                }
                if (best < M) {
                    partner[k] = best;
                    nxt[best] = best + 1;
                }
            }
        }
    }
}

/* The R scalar of student k (group i, position pos) and teacher m. */
static double r_entry(const scm_ansatz_inst *in, const double *x, int i, int pos, int m)
{
    int t = 0;
    while (m >= in->toff[t + 1])
        t++;
    int c = i * in->nt + t;
    if (in->spair[i] == t)
        return x[m - in->toff[t] == pos ? in->rd[c] : in->ro[c]];
    return xs(x, in->rc[c]);
}

void scm_fp_structure_norms(const scm_ansatz_inst *in, const double *x, scm_fp_structure *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < in->ns; i++) {
        double n = in->ssize[i];
        if (scm_size_zero(n))
            continue;
        s->trQ += n * x[in->qd[i]];
        for (int u = 0; u < in->nt; u++) {
            int c = i * in->nt + u;
            double m = in->tsize[u];
            if (scm_size_zero(m))
                continue;
            if (in->rd[c] >= 0) {
                double dd = xs(x, in->rd[c]), oo = in->ro[c] >= 0 ? xs(x, in->ro[c]) : 0.0;
                s->normR2 += n * (dd * dd + (m - 1.0) * oo * oo);
            } else if (in->rc[c] >= 0) {
                s->normR2 += n * m * xs(x, in->rc[c]) * xs(x, in->rc[c]);
            }
        }
    }
}

void scm_fp_structure_count(const scm_ansatz_inst *in, const double *x,
                            const scm_alignment *kind, scm_fp_structure *s)
{
    for (int i = 0; i < in->ns; i++) {
        int unspec = scm_group_unspecialised(in, x, i);
        for (int k = in->soff[i]; k < in->soff[i + 1]; k++) {
            if (kind[k] == SCM_ALIGN_ANTI && !unspec)
                s->n_anti += 1.0;
            else if (kind[k] == SCM_ALIGN_ALIGNED && !unspec)
                s->n_aligned += 1.0;
            else
                s->n_other += 1.0;
        }
    }
}

scm_status scm_fp_classify_block(const scm_ansatz_inst *in, const double *x, scm_fp_structure *s)
{
    scm_fp_structure_norms(in, x, s);
    if (!in->integral) {
        s->n_anti = s->n_aligned = s->n_other = NAN;
        return SCM_OK;
    }
    int K = in->Ki, M = in->Mi;
    int *partner = malloc(sizeof(int) * ((size_t)K + (size_t)M + 1));
    double *lev = malloc(sizeof(double) * (2 * (size_t)in->ns * (size_t)in->nt + 1));
    scm_alignment *kind = malloc(sizeof *kind * ((size_t)K + 1));
    if (!partner || !lev || !kind) {
        free(partner);
        free(lev);
        free(kind);
        s->n_anti = s->n_aligned = s->n_other = NAN;
        return SCM_ENOMEM;
    }
    pair_greedy(in, x, partner, partner + K, lev);
    /* the kinds as scm_model_align names them; a student without a
     * partner (dead or unpaired) counts as other either way */
    for (int i = 0; i < in->ns; i++)
        for (int k = in->soff[i]; k < in->soff[i + 1]; k++) {
            double c = partner[k] >= 0 ? r_entry(in, x, i, k - in->soff[i], partner[k]) /
                                             sqrt(x[in->qd[i]] * 1.0)
                                       : 0.0;
            kind[k] = partner[k] < 0              ? SCM_ALIGN_UNPAIRED
                      : c < -SCM_ALIGN_COS_TOL ? SCM_ALIGN_ANTI
                      : c > SCM_ALIGN_COS_TOL  ? SCM_ALIGN_ALIGNED
                                               : SCM_ALIGN_NONE;
        }
    scm_fp_structure_count(in, x, kind, s);
    free(partner);
    free(lev);
    free(kind);
    return SCM_OK;
}
