/* flow_realisable.c: the loss of a realisable state (flow.h, "Realisable
 * states"): Q raised by the least amount that makes [[T, R^T], [R, Q]]
 * positive semi-definite, and the loss there.  Split from flow.c. */
#include "scm/flow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_eigen.h>

#include "core/flow_internal.h"

/* ---- the loss of a realisable state (flow.h, "Realisable states") ---- */

/* Ap = A^+ for the symmetric n x n A (eigenvalues below 1e-12 of the
 * largest dropped), from the eigenpairs in ev, evec. */
static void pinv_from_eig(int n, const gsl_vector *ev, const gsl_matrix *evec, double *Ap)
{
    double top = 0.0;
    for (int i = 0; i < n; i++)
        top = fmax(top, fabs(gsl_vector_get(ev, (size_t)i)));
    memset(Ap, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (int i = 0; i < n; i++) {
        double mu = gsl_vector_get(ev, (size_t)i);
        if (!(mu > 1e-12 * top))
            continue;
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                Ap[a * n + b] += gsl_matrix_get(evec, (size_t)a, (size_t)i) *
                                 gsl_matrix_get(evec, (size_t)b, (size_t)i) / mu;
    }
}

/* The symmetric eigenproblem of the n x n row-major X into ev, evec. */
static scm_status eig_sym(int n, const double *X, gsl_vector *ev, gsl_matrix *evec)
{
    gsl_matrix *A = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)n);
    scm_status st = SCM_ENOMEM;
    if (A && w) {
        memcpy(A->data, X, sizeof(double) * (size_t)n * (size_t)n); /* fresh: contiguous */
        st = gsl_eigen_symmv(A, ev, evec, w) == GSL_SUCCESS ? SCM_OK : SCM_ESOLVER;
    }
    gsl_matrix_free(A);
    if (w)
        gsl_eigen_symmv_free(w);
    return st;
}

/* C = Q - R T^+ R^T over the live students (index list live, nl of them),
 * symmetric from Q's upper triangle, into C (nl x nl). */
static scm_status schur_live(const scm_model *m, const double *Q, const double *R,
                             const int *live, int nl, double *C)
{
    const int K = m->K, M = m->M;
    double *Tp = malloc(sizeof(double) * (size_t)M * (size_t)M);
    gsl_vector *ev = gsl_vector_alloc((size_t)M);
    gsl_matrix *evec = gsl_matrix_alloc((size_t)M, (size_t)M);
    scm_status st = Tp && ev && evec ? eig_sym(M, m->T, ev, evec) : SCM_ENOMEM;
    if (!st) {
        pinv_from_eig(M, ev, evec, Tp);
        for (int i = 0; i < nl; i++)
            for (int j = i; j < nl; j++) {
                const int k = live[i], l = live[j];
                double s = 0.0;
                for (int a = 0; a < M; a++)
                    for (int b = 0; b < M; b++)
                        s += R[k * M + a] * Tp[a * M + b] * R[l * M + b];
                C[i * nl + j] = C[j * nl + i] = Q[k * K + l] - s;
            }
    }
    free(Tp);
    gsl_vector_free(ev);
    gsl_matrix_free(evec);
    return st;
}

scm_status scm_flow_realisable(const scm_model *m, const double *Q, const double *R, double *Qp,
                               double *proj)
{
    const int K = m->K, M = m->M;
    *proj = 0.0;
    for (long i = 0; i < (long)K * K; i++)
        if (!isfinite(Q[i]))
            return SCM_ENAN;
    for (long i = 0; i < (long)K * M; i++)
        if (!isfinite(R[i]))
            return SCM_ENAN;
    if (Qp != Q)
        memcpy(Qp, Q, sizeof(double) * (size_t)K * (size_t)K);
    int *live = malloc(sizeof(int) * (size_t)K), nl = 0;
    double *C = malloc(sizeof(double) * (size_t)K * (size_t)K);
    gsl_vector *ev = gsl_vector_alloc((size_t)K);
    gsl_matrix *evec = gsl_matrix_alloc((size_t)K, (size_t)K);
    scm_status st = live && C && ev && evec ? SCM_OK : SCM_ENOMEM;
    for (int k = 0; !st && k < K; k++)
        if (!scm_flow_student_dead(m, Q, R, k)) /* a dead student's rows stay exactly 0 */
            live[nl++] = k;
    if (!st && nl > 0 && !(st = schur_live(m, Q, R, live, nl, C))) {
        gsl_vector_view evv = gsl_vector_subvector(ev, 0, (size_t)nl);
        gsl_matrix_view evm = gsl_matrix_submatrix(evec, 0, 0, (size_t)nl, (size_t)nl);
        gsl_matrix *Z = gsl_matrix_alloc((size_t)nl, (size_t)nl); /* contiguous copy */
        st = Z ? eig_sym(nl, C, &evv.vector, Z) : SCM_ENOMEM;
        if (!st)
            gsl_matrix_memcpy(&evm.matrix, Z);
        gsl_matrix_free(Z);
        for (int i = 0; !st && i < nl; i++) {
            const double lam = gsl_vector_get(&evv.vector, (size_t)i);
            if (!(lam < 0.0))
                continue;
            *proj = fmax(*proj, -lam); /* Qp += |lam| u u^T */
            for (int a = 0; a < nl; a++)
                for (int b = 0; b < nl; b++)
                    Qp[live[a] * K + live[b]] -= lam * gsl_matrix_get(&evm.matrix, (size_t)a, (size_t)i) *
                                                 gsl_matrix_get(&evm.matrix, (size_t)b, (size_t)i);
        }
    }
    for (int k = 0; !st && *proj > 0.0 && k < K; k++) /* exactly symmetric */
        for (int l = k + 1; l < K; l++)
            Qp[l * K + k] = Qp[k * K + l];
    free(live);
    free(C);
    gsl_vector_free(ev);
    gsl_matrix_free(evec);
    return st;
}

scm_status scm_flow_loss_realisable(scm_flow *fl, const double *Q, const double *R, double *eps,
                                    double *proj)
{
    const scm_model *m = scm_flow_model(fl);
    const int K = m->K;
    double *Qp = malloc(sizeof(double) * (size_t)K * (size_t)K);
    if (!Qp)
        return SCM_ENOMEM;
    scm_status st = scm_flow_realisable(m, Q, R, Qp, proj);
    if (!st)
        st = scm_flow_grad(fl, Qp, R, eps, NULL, NULL);
    free(Qp);
    if (!st && *eps < 0.0) {
        /* a realisable state's loss is >= 0: below that is the round-off of
         * the cancelling sum, at most a few ulps of its O((K + M)^2) terms */
        double scale = 1.0;
        for (int k = 0; k < K; k++)
            scale = fmax(scale, Q[k * K + k]);
        for (int n = 0; n < m->M; n++)
            scale = fmax(scale, m->T[n * m->M + n]);
        const double n = (double)(K + m->M);
        if (*eps >= -SCM_FLOW_LOSS_ROUNDOFF * n * n * scale)
            *eps = 0.0;
        else
            st = SCM_ENOTPSD;
    }
    return st;
}
