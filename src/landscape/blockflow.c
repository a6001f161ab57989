/* blockflow.c: the reduced flow at block level; see blockflow.h for the
 * block algebra.  The kernel bookkeeping mirrors flow.c (A_kk collects the
 * a/b slots of every term it appears in and the c slot of its own term),
 * with each sum over students or teachers replaced by a sum over groups
 * weighted by the group size. */
#include "scm/blockflow.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <math.h>
#include <stdlib.h>

#include "landscape/ansatz_internal.h"

typedef struct {
    double d, o;
} blk;

struct scm_blockflow {
    const scm_ansatz_inst *in;
    const scm_activation *act;
    blk *Q, *R, *S, *B, *P, *FR;
    double *Ad; /* diagonal entries of A, one per student group */
    int *live_s, *live_t;
    gsl_matrix *G;
};

void scm_blockflow_free(scm_blockflow *bf)
{
    if (!bf)
        return;
    free(bf->Q);
    free(bf->R);
    free(bf->S);
    free(bf->B);
    free(bf->P);
    free(bf->FR);
    free(bf->Ad);
    free(bf->live_s);
    free(bf->live_t);
    if (bf->G)
        gsl_matrix_free(bf->G);
    free(bf);
}

scm_blockflow *scm_blockflow_alloc(const scm_ansatz_inst *in, const scm_activation *act)
{
    scm_blockflow *bf = calloc(1, sizeof *bf);
    if (!bf)
        return NULL;
    size_t ns = (size_t)in->ns, nt = (size_t)in->nt, g = ns + nt;
    bf->in = in;
    bf->act = act;
    bf->Q = calloc(ns * ns, sizeof(blk));
    bf->S = calloc(ns * ns, sizeof(blk));
    bf->P = calloc(ns * ns, sizeof(blk));
    bf->R = calloc(ns * nt, sizeof(blk));
    bf->B = calloc(ns * nt, sizeof(blk));
    bf->FR = calloc(ns * nt, sizeof(blk));
    bf->Ad = calloc(ns, sizeof(double));
    bf->live_s = calloc(ns, sizeof(int));
    bf->live_t = calloc(nt, sizeof(int));
    /* gsl_matrix_alloc reports failure through the GSL error handler; the
     * caller of the library has turned it off or installed its own. */
    bf->G = gsl_matrix_alloc(g, g);
    if (!bf->Q || !bf->S || !bf->P || !bf->R || !bf->B || !bf->FR || !bf->Ad || !bf->live_s ||
        !bf->live_t || !bf->G) {
        scm_blockflow_free(bf);
        return NULL;
    }
    for (int i = 0; i < in->ns; i++)
        bf->live_s[i] = !scm_size_zero(in->ssize[i]);
    for (int t = 0; t < in->nt; t++)
        bf->live_t[t] = !scm_size_zero(in->tsize[t]);
    return bf;
}

const scm_ansatz_inst *scm_blockflow_inst(const scm_blockflow *bf) { return bf->in; }

/* acc += X Y, n the size of the summed-over group (see blockflow.h). */
static inline void blk_fma(blk *acc, blk X, blk Y, double n)
{
    acc->d += X.d * Y.d + (n - 1.0) * X.o * Y.o;
    acc->o += X.d * Y.o + X.o * Y.d + (n - 2.0) * X.o * Y.o;
}

/* Blocks of Q and R from the scalars. */
static void load_blocks(scm_blockflow *bf, const double *x)
{
    const scm_ansatz_inst *in = bf->in;
    int ns = in->ns, nt = in->nt;
    for (int i = 0; i < ns; i++) {
        if (!bf->live_s[i])
            continue;
        for (int j = 0; j < ns; j++) {
            if (!bf->live_s[j])
                continue;
            if (i == j)
                bf->Q[i * ns + i] = (blk){x[in->qd[i]], in->qo[i] >= 0 ? x[in->qo[i]] : 0.0};
            else {
                double c = x[in->qc[i * ns + j]];
                bf->Q[i * ns + j] = (blk){c, c};
            }
        }
        for (int t = 0; t < nt; t++) {
            if (!bf->live_t[t])
                continue;
            int c = i * nt + t;
            if (in->spair[i] == t)
                bf->R[c] = (blk){x[in->rd[c]], in->ro[c] >= 0 ? x[in->ro[c]] : 0.0};
            else
                bf->R[c] = (blk){x[in->rc[c]], x[in->rc[c]]};
        }
    }
}

/* Student group i's (live) terms of the loss, added to *e in the order of
 * the full sum, and its rows of the blocks S = A + A^T and B. */
static scm_status group_terms(scm_blockflow *bf, int i, double *e)
{
    const scm_ansatz_inst *in = bf->in;
    const scm_activation *act = bf->act;
    int ns = in->ns, nt = in->nt;
    const double *ns_ = in->ssize, *nt_ = in->tsize;
    scm_status st;
    scm_pair p;
    double n = ns_[i], xi = bf->Q[i * ns + i].d, Ad = 0.0;
    if ((st = act->pair(xi, xi, xi, &p)))
        return st;
    *e += 0.5 * n * p.f;
    Ad += p.fa + 0.5 * p.fc;
    double Soff = 0.0;
    if (in->qo[i] >= 0) {
        if ((st = act->pair(xi, xi, bf->Q[i * ns + i].o, &p)))
            return st;
        *e += 0.5 * n * (n - 1.0) * p.f;
        Ad += (n - 1.0) * p.fa;
        Soff = p.fc;
    }
    for (int j = 0; j < ns; j++) {
        if (j == i || !bf->live_s[j])
            continue;
        double c = bf->Q[i * ns + j].d;
        if ((st = act->pair(xi, bf->Q[j * ns + j].d, c, &p)))
            return st;
        *e += 0.5 * n * ns_[j] * p.f;
        Ad += ns_[j] * p.fa;
        bf->S[i * ns + j] = (blk){p.fc, p.fc};
    }
    for (int t = 0; t < nt; t++) {
        if (!bf->live_t[t])
            continue;
        int c = i * nt + t;
        if (in->spair[i] == t) {
            if ((st = act->pair(xi, 1.0, bf->R[c].d, &p)))
                return st;
            *e -= n * p.f;
            Ad -= p.fa;
            bf->B[c].d = -p.fc;
            bf->B[c].o = 0.0;
            if (in->ro[c] >= 0) {
                if ((st = act->pair(xi, 1.0, bf->R[c].o, &p)))
                    return st;
                *e -= n * (nt_[t] - 1.0) * p.f;
                Ad -= (nt_[t] - 1.0) * p.fa;
                bf->B[c].o = -p.fc;
            }
        } else {
            if ((st = act->pair(xi, 1.0, bf->R[c].d, &p)))
                return st;
            *e -= n * nt_[t] * p.f;
            Ad -= nt_[t] * p.fa;
            bf->B[c] = (blk){-p.fc, -p.fc};
        }
    }
    /* S = A + A^T = 2 A (A is symmetric); A_kl = fc / 2 off the diagonal */
    bf->S[i * ns + i] = (blk){2.0 * Ad, Soff};
    return SCM_OK;
}

/* P = S Q + B R^T into bf->P and S R + B into bf->FR. */
static void block_products(scm_blockflow *bf)
{
    const scm_ansatz_inst *in = bf->in;
    int ns = in->ns, nt = in->nt;
    const double *ns_ = in->ssize, *nt_ = in->tsize;
    for (int i = 0; i < ns; i++) {
        if (!bf->live_s[i])
            continue;
        for (int j = 0; j < ns; j++) {
            if (!bf->live_s[j])
                continue;
            blk acc = {0.0, 0.0};
            for (int k = 0; k < ns; k++)
                if (bf->live_s[k])
                    blk_fma(&acc, bf->S[i * ns + k], bf->Q[k * ns + j], ns_[k]);
            for (int t = 0; t < nt; t++)
                if (bf->live_t[t])
                    blk_fma(&acc, bf->B[i * nt + t], bf->R[j * nt + t], nt_[t]);
            bf->P[i * ns + j] = acc;
        }
        for (int t = 0; t < nt; t++) {
            if (!bf->live_t[t])
                continue;
            blk acc = bf->B[i * nt + t];
            for (int k = 0; k < ns; k++)
                if (bf->live_s[k])
                    blk_fma(&acc, bf->S[i * ns + k], bf->R[k * nt + t], ns_[k]);
            bf->FR[i * nt + t] = acc;
        }
    }
}

/* F_Q = -(P + P^T) and F_R = -(S R + B), scattered onto the scalars F. */
static void scatter_residual(const scm_blockflow *bf, double *F)
{
    const scm_ansatz_inst *in = bf->in;
    int ns = in->ns, nt = in->nt;
    for (int i = 0; i < ns; i++) {
        if (!bf->live_s[i])
            continue;
        blk P = bf->P[i * ns + i];
        F[in->qd[i]] = -2.0 * P.d;
        if (in->qo[i] >= 0)
            F[in->qo[i]] = -2.0 * P.o;
        for (int j = i + 1; j < ns; j++)
            if (bf->live_s[j])
                F[in->qc[i * ns + j]] = -(bf->P[i * ns + j].d + bf->P[j * ns + i].d);
        for (int t = 0; t < nt; t++) {
            if (!bf->live_t[t])
                continue;
            int c = i * nt + t;
            if (in->spair[i] == t) {
                F[in->rd[c]] = -bf->FR[c].d;
                if (in->ro[c] >= 0)
                    F[in->ro[c]] = -bf->FR[c].o;
            } else {
                F[in->rc[c]] = -bf->FR[c].d;
            }
        }
    }
}

scm_status scm_blockflow_residual(scm_blockflow *bf, const double *x, double *F, double *eps)
{
    const scm_ansatz_inst *in = bf->in;
    const scm_activation *act = bf->act;
    int ns = in->ns, nt = in->nt;
    const double *nt_ = in->tsize;
    load_blocks(bf, x);
    scm_status st;
    scm_pair p;
    double e = 0.0, Mtot = 0.0;
    for (int t = 0; t < nt; t++)
        Mtot += nt_[t];
    /* teacher-teacher term, T = I: M f(1,1,1) + M (M - 1) f(1,1,0) */
    if ((st = act->pair(1.0, 1.0, 1.0, &p)))
        return st;
    e += 0.5 * Mtot * p.f;
    if ((st = act->pair(1.0, 1.0, 0.0, &p)))
        return st;
    e += 0.5 * Mtot * (Mtot - 1.0) * p.f;
    for (int i = 0; i < ns; i++)
        if (bf->live_s[i] && (st = group_terms(bf, i, &e)))
            return st;
    if (!isfinite(e))
        return SCM_ENAN;
    if (eps)
        *eps = e;
    if (!F)
        return SCM_OK;
    block_products(bf);
    scatter_residual(bf, F);
    for (int c = 0; c < in->nsc; c++)
        if (!isfinite(F[c]))
            return SCM_ENAN;
    return SCM_OK;
}

scm_status scm_blockflow_gram_min_eig(scm_blockflow *bf, const double *x, double *lam_min)
{
    const scm_ansatz_inst *in = bf->in;
    int ns = in->ns, nt = in->nt;
    load_blocks(bf, x);
    double lmin = INFINITY;
    /* contrast subspaces */
    for (int t = 0; t < nt; t++) {
        if (!bf->live_t[t] || !scm_size_has_off(in->tsize[t]))
            continue;
        int i = in->tpair[t];
        if (i >= 0 && bf->live_s[i]) {
            double a = 1.0, c = bf->R[i * nt + t].d - bf->R[i * nt + t].o,
                   b = bf->Q[i * ns + i].d - bf->Q[i * ns + i].o;
            double mean = 0.5 * (a + b), rad = hypot(0.5 * (a - b), c);
            lmin = fmin(lmin, mean - rad);
        } else {
            lmin = fmin(lmin, 1.0);
        }
    }
    for (int i = 0; i < ns; i++)
        if (bf->live_s[i] && in->spair[i] < 0 && scm_size_has_off(in->ssize[i]))
            lmin = fmin(lmin, bf->Q[i * ns + i].d - bf->Q[i * ns + i].o);
    /* group means: e_g = indicator / sqrt(n_g); teachers first */
    int idx[128], G = 0;
    double sz[128];
    int is_t[128];
    for (int t = 0; t < nt && G < 128; t++)
        if (bf->live_t[t]) {
            idx[G] = t;
            is_t[G] = 1;
            sz[G++] = in->tsize[t];
        }
    for (int i = 0; i < ns && G < 128; i++)
        if (bf->live_s[i]) {
            idx[G] = i;
            is_t[G] = 0;
            sz[G++] = in->ssize[i];
        }
    gsl_matrix_view Gv = gsl_matrix_submatrix(bf->G, 0, 0, (size_t)G, (size_t)G);
    for (int a = 0; a < G; a++)
        for (int b = 0; b < G; b++) {
            blk X;
            if (is_t[a] && is_t[b])
                X = a == b ? (blk){1.0, 0.0} : (blk){0.0, 0.0};
            else if (is_t[a])
                X = bf->R[idx[b] * nt + idx[a]];
            else if (is_t[b])
                X = bf->R[idx[a] * nt + idx[b]];
            else
                X = bf->Q[idx[a] * ns + idx[b]];
            int square = a == b || (!is_t[a] && is_t[b] && in->spair[idx[a]] == idx[b]) ||
                         (is_t[a] && !is_t[b] && in->spair[idx[b]] == idx[a]);
            double v = square ? X.d + (sz[a] - 1.0) * X.o : X.d * sqrt(sz[a] * sz[b]);
            gsl_matrix_set(&Gv.matrix, (size_t)a, (size_t)b, v);
        }
    gsl_vector *ev = gsl_vector_alloc((size_t)G);
    gsl_eigen_symm_workspace *ws = gsl_eigen_symm_alloc((size_t)G);
    if (!ev || !ws) {
        if (ev)
            gsl_vector_free(ev);
        if (ws)
            gsl_eigen_symm_free(ws);
        return SCM_ENOMEM;
    }
    int gst = gsl_eigen_symm(&Gv.matrix, ev, ws);
    if (gst == GSL_SUCCESS)
        for (int a = 0; a < G; a++)
            lmin = fmin(lmin, gsl_vector_get(ev, (size_t)a));
    gsl_vector_free(ev);
    gsl_eigen_symm_free(ws);
    if (gst != GSL_SUCCESS)
        return SCM_ESOLVER;
    *lam_min = lmin;
    return isfinite(lmin) ? SCM_OK : SCM_ENAN;
}

void scm_blockflow_set_q_from_r(scm_blockflow *bf, double *x, double q0)
{
    const scm_ansatz_inst *in = bf->in;
    int ns = in->ns, nt = in->nt;
    load_blocks(bf, x);
    for (int i = 0; i < ns; i++) {
        if (!bf->live_s[i])
            continue;
        for (int j = i; j < ns; j++) {
            if (!bf->live_s[j])
                continue;
            blk acc = {0.0, 0.0};
            for (int t = 0; t < nt; t++)
                if (bf->live_t[t])
                    blk_fma(&acc, bf->R[i * nt + t], bf->R[j * nt + t], in->tsize[t]);
            if (i == j) {
                x[in->qd[i]] = acc.d + q0;
                if (in->qo[i] >= 0)
                    x[in->qo[i]] = acc.o;
            } else {
                x[in->qc[i * ns + j]] = acc.d;
            }
        }
    }
}
