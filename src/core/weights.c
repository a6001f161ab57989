/* weights.c: realising weights from overlaps, the overlaps of weights, and
 * the closed-form population gradient in weight space; see weights.h.
 *
 * Realisation.  The joint Gram matrix G = [[T, R^T], [R, Q]] (teachers
 * first) is factorised as G = L L^T by a diagonally pivoted (outer-product)
 * Cholesky whose pivots are chosen among the teachers first, largest
 * remaining diagonal first, and among the students once no teacher pivot
 * above the tolerance tau = SCM_WEIGHTS_PSD_TOL * max diag G is left.  A row
 * whose pivot is never taken keeps its place in the remaining Schur
 * complement, which later (student) pivots still reduce; at the end every
 * remaining diagonal is at most tau, so for a PSD G every remaining entry is
 * at most tau in magnitude and L L^T reproduces G to that tolerance (to
 * round-off when G is exactly singular).  Column r of L is the r-th pivot,
 * so the vectors live in the first rank(G) coordinates, and when T has full
 * numerical rank the teachers span exactly the first M coordinates and are
 * a function of T alone (the same W* for every state of a model).
 *
 * Gradient.  eps(W) = 1/2 sum_{k,l} v_k v_l f(|w_k|^2/d, |w_l|^2/d, w_k.w_l/d)
 *                     - sum_{k,m} v_k v*_m f(|w_k|^2/d, T_mm, w_k.w*_m/d) + const
 * is differentiated term by term with the chain rule:
 *   k < l (the pair (k,l) and (l,k) together, weight v_k v_l):
 *     d/dw_k = v_k v_l (fa 2 w_k + fc w_l) / d,  d/dw_l = v_k v_l (fb 2 w_l + fc w_k) / d;
 *   k = l (1/2 v_k^2 f(Q_kk, Q_kk, Q_kk), all three slots move with w_k):
 *     d/dw_k = v_k^2 (fa + fb + fc) w_k / d;
 *   teacher m:  d/dw_k = -v_k v*_m (fa 2 w_k + fc w*_m) / d.
 * This never goes through A and B of flow.c, so it checks them. */
#include "scm/weights.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative tolerance (of max diag G) of the rank decisions in realise:
 * twice the fixed-point enumeration's psd_tol (fixedpoint.c accepts block
 * Gram eigenvalues down to -1e-9), so that every listed point realises. */
#define SCM_WEIGHTS_PSD_TOL 2e-9
/* Relative asymmetry of Q tolerated by realise. */
#define SCM_WEIGHTS_SYM_TOL 1e-12

/* Name of row i of G (teachers first) for messages. */
static const char *row_kind(int i, int M) { return i < M ? "teacher" : "student"; }
static int row_index(int i, int M) { return i < M ? i : i - M; }

scm_status scm_weights_realise(const scm_model *m, const double *Q, const double *R, long d,
                               double *W, double *Ws, scm_error *err)
{
    const int K = m->K, M = m->M, n = K + M;
    if (d < 1)
        return scm_error_set(err, SCM_EINVAL, "the dimension d must be >= 1, got %ld", d);
    for (long i = 0; i < (long)K * K; i++)
        if (!isfinite(Q[i]))
            return scm_error_set(err, SCM_ENAN, "Q[%ld][%ld] is not finite", i / K, i % K);
    for (long i = 0; i < (long)K * M; i++)
        if (!isfinite(R[i]))
            return scm_error_set(err, SCM_ENAN, "R[%ld][%ld] is not finite", i / M, i % M);

    const size_t nn = (size_t)n * (size_t)n;
    double *S = malloc(sizeof *S * nn); /* the remaining Schur complement */
    double *L = calloc(nn, sizeof *L);  /* row = vector (teachers first), column = pivot */
    char *done = calloc((size_t)n, 1);
    if (!S || !L || !done) {
        free(S);
        free(L);
        free(done);
        return scm_error_set(err, SCM_ENOMEM, "out of memory realising weights");
    }
    scm_status st = SCM_OK;
    double dmax = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double g;
            if (i < M && j < M)
                g = m->T[i * M + j];
            else if (i < M)
                g = R[(j - M) * M + i];
            else if (j < M)
                g = R[(i - M) * M + j];
            else
                g = Q[(i - M) * K + (j - M)];
            S[i * n + j] = g;
            if (i == j)
                dmax = fmax(dmax, fabs(g));
        }
    for (int k = 0; k < K; k++)
        for (int l = 0; l < k; l++) {
            double a = Q[k * K + l], b = Q[l * K + k];
            if (fabs(a - b) > SCM_WEIGHTS_SYM_TOL * dmax) {
                st = scm_error_set(err, SCM_EINVAL,
                                   "Q is not symmetric: Q[%d][%d] = %.17g but Q[%d][%d] = %.17g",
                                   k, l, a, l, k, b);
                goto out;
            }
            S[(k + M) * n + (l + M)] = S[(l + M) * n + (k + M)] = 0.5 * (a + b);
        }
    const double tau = SCM_WEIGHTS_PSD_TOL * dmax;
    for (int i = 0; i < n; i++)
        if (S[i * n + i] < -tau) {
            st = scm_error_set(err, SCM_ENOTPSD,
                               "the Gram matrix [[T, R^T], [R, Q]] is not positive semi-definite: "
                               "the squared norm of %s %d is %.6g",
                               row_kind(i, M), row_index(i, M), S[i * n + i]);
            goto out;
        }

    int r = 0; /* pivots taken = numerical rank */
    for (int phase = 0; phase < 2; phase++) {
        const int lo = phase ? M : 0, hi = phase ? n : M;
        for (;;) {
            int p = -1;
            for (int i = lo; i < hi; i++)
                if (!done[i] && (p < 0 || S[i * n + i] > S[p * n + p]))
                    p = i;
            if (p < 0 || !(S[p * n + p] > tau))
                break;
            const double piv = sqrt(S[p * n + p]);
            done[p] = 1;
            L[p * n + r] = piv;
            for (int i = 0; i < n; i++)
                if (!done[i])
                    L[i * n + r] = S[i * n + p] / piv;
            for (int i = 0; i < n; i++) {
                if (done[i])
                    continue;
                for (int j = 0; j < n; j++)
                    if (!done[j])
                        S[i * n + j] -= L[i * n + r] * L[j * n + r];
                if (S[i * n + i] < -tau) {
                    st = scm_error_set(
                        err, SCM_ENOTPSD,
                        "the Gram matrix [[T, R^T], [R, Q]] is not positive semi-definite: "
                        "the part of %s %d independent of the %d vectors before it has squared "
                        "norm %.6g (tolerance %.3g)",
                        row_kind(i, M), row_index(i, M), r + 1, S[i * n + i], tau);
                    goto out;
                }
            }
            r++;
        }
    }
    /* What is left must be the (near-)zero Schur complement of a PSD matrix:
     * with diagonals <= tau, PSD forces every entry to be <= tau. */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (!done[i] && !done[j] && fabs(S[i * n + j]) > 2.0 * tau) {
                st = scm_error_set(err, SCM_ENOTPSD,
                                   "the Gram matrix [[T, R^T], [R, Q]] is not positive "
                                   "semi-definite: %s %d and %s %d have (numerically) zero "
                                   "independent parts but a residual overlap %.6g",
                                   row_kind(i, M), row_index(i, M), row_kind(j, M),
                                   row_index(j, M), S[i * n + j]);
                goto out;
            }
    if (r > d) {
        st = scm_error_set(err, SCM_EINVAL,
                           "the Gram matrix [[T, R^T], [R, Q]] has numerical rank %d, more than "
                           "the dimension d = %ld",
                           r, d);
        goto out;
    }
    const double sd = sqrt((double)d);
    for (int i = 0; i < n; i++) {
        double *w = i < M ? Ws + (long)i * d : W + (long)(i - M) * d;
        for (int c = 0; c < r; c++)
            w[c] = sd * L[i * n + c];
        for (long c = r; c < d; c++)
            w[c] = 0.0;
    }
out:
    free(S);
    free(L);
    free(done);
    return st;
}

static double dot(long d, const double *x, const double *y)
{
    double s = 0.0;
    for (long i = 0; i < d; i++)
        s += x[i] * y[i];
    return s;
}

void scm_weights_overlaps(const scm_model *m, long d, const double *W, const double *Ws,
                          double *Q, double *R)
{
    const int K = m->K, M = m->M;
    for (int k = 0; k < K; k++) {
        for (int l = k; l < K; l++)
            Q[k * K + l] = Q[l * K + k] = dot(d, W + (long)k * d, W + (long)l * d) / (double)d;
        for (int n = 0; n < M; n++)
            R[k * M + n] = dot(d, W + (long)k * d, Ws + (long)n * d) / (double)d;
    }
}

/* y += a x */
static void axpy(long d, double a, const double *x, double *y)
{
    if (a == 0.0)
        return;
    for (long i = 0; i < d; i++)
        y[i] += a * x[i];
}

scm_status scm_weights_grad(scm_flow *fl, long d, const double *W, const double *Ws,
                            double *eps, double *G)
{
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K, M = m->M;
    const double *v = m->v, *vs = m->vs, *T = m->T;
    if (d < 1)
        return SCM_EINVAL;
    double *Q = malloc(sizeof *Q * (size_t)K * (size_t)K);
    double *R = malloc(sizeof *R * (size_t)K * (size_t)M);
    if (!Q || !R) {
        free(Q);
        free(R);
        return SCM_ENOMEM;
    }
    scm_weights_overlaps(m, d, W, Ws, Q, R);
    scm_status st = SCM_OK;
    if (eps && (st = scm_flow_loss(fl, Q, R, eps)))
        goto out;
    if (!G)
        goto out;
    memset(G, 0, sizeof *G * (size_t)K * (size_t)d);
    const double id = 1.0 / (double)d;
    for (int k = 0; k < K; k++) {
        const double *wk = W + (long)k * d;
        double *gk = G + (long)k * d;
        for (int l = k; l < K; l++) {
            scm_pair p;
            if ((st = m->act->pair(Q[k * K + k], Q[l * K + l], Q[k * K + l], &p)))
                goto out;
            const double c = v[k] * v[l] * id;
            if (l == k) {
                axpy(d, c * (p.fa + p.fb + p.fc), wk, gk);
            } else {
                const double *wl = W + (long)l * d;
                double *gl = G + (long)l * d;
                axpy(d, 2.0 * c * p.fa, wk, gk);
                axpy(d, c * p.fc, wl, gk);
                axpy(d, 2.0 * c * p.fb, wl, gl);
                axpy(d, c * p.fc, wk, gl);
            }
        }
        for (int n = 0; n < M; n++) {
            scm_pair p;
            st = m->act->pair(Q[k * K + k], T[n * M + n], R[k * M + n], &p);
            /* A zero-norm teacher unit (ReLU) contributes nothing, as in flow.c. */
            if (st && !(st == SCM_EDEAD && Q[k * K + k] > 0.0))
                goto out;
            st = SCM_OK;
            const double c = -v[k] * vs[n] * id;
            axpy(d, 2.0 * c * p.fa, wk, gk);
            axpy(d, c * p.fc, Ws + (long)n * d, gk);
        }
    }
    for (long i = 0; i < (long)K * d; i++)
        if (!isfinite(G[i])) {
            st = SCM_ENAN;
            break;
        }
out:
    free(Q);
    free(R);
    return st;
}
