/* linalg.c: see linalg.h. */
#include "core/linalg.h"

#include <gsl/gsl_eigen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int scm_linalg_cholesky(double *A, int n)
{
    for (int j = 0; j < n; j++) {
        double d = A[j * n + j];
        for (int k = 0; k < j; k++)
            d -= A[j * n + k] * A[j * n + k];
        if (!(d > 0.0))
            return j;
        d = sqrt(d);
        A[j * n + j] = d;
        for (int i = j + 1; i < n; i++) {
            double s = A[i * n + j];
            for (int k = 0; k < j; k++)
                s -= A[i * n + k] * A[j * n + k];
            A[i * n + j] = s / d;
        }
    }
    return -1;
}

/* C = A B in 4 x 4 tiles of C held in registers (the plain loop below
 * spends its time loading and storing C).  Every entry is still summed over
 * p in increasing order from 0, so the result is bitwise that of the plain
 * loop.  C overlaps neither A nor B. */
static void gemm_nn(int m, int n, int k, const double *restrict A, const double *restrict B,
                    double *restrict C)
{
    int i = 0;
    for (; i + 4 <= m; i += 4) {
        const double *a0 = A + (long)i * k;
        int j = 0;
        for (; j + 4 <= n; j += 4) {
            double c[4][4] = {{0.0}};
            for (int p = 0; p < k; p++) {
                const double *b = B + (long)p * n + j;
                for (int r = 0; r < 4; r++) {
                    const double a = a0[(long)r * k + p];
                    for (int q = 0; q < 4; q++)
                        c[r][q] += a * b[q];
                }
            }
            for (int r = 0; r < 4; r++)
                for (int q = 0; q < 4; q++)
                    C[(long)(i + r) * n + j + q] = c[r][q];
        }
        for (; j < n; j++) {
            double c[4] = {0.0};
            for (int p = 0; p < k; p++)
                for (int r = 0; r < 4; r++)
                    c[r] += a0[(long)r * k + p] * B[(long)p * n + j];
            for (int r = 0; r < 4; r++)
                C[(long)(i + r) * n + j] = c[r];
        }
    }
    for (; i < m; i++) {
        double *c = C + (long)i * n;
        for (int j = 0; j < n; j++)
            c[j] = 0.0;
        for (int p = 0; p < k; p++) {
            const double a = A[(long)i * k + p];
            const double *b = B + (long)p * n;
            for (int j = 0; j < n; j++)
                c[j] += a * b[j];
        }
    }
}

void scm_linalg_gemm(int m, int n, int k, const double *A, const double *B, int transb,
                     double *C)
{
    if (!transb) {
        gemm_nn(m, n, k, A, B, C);
        return;
    }
    for (int i = 0; i < m; i++) {
        double *c = C + (long)i * n;
        for (int j = 0; j < n; j++)
            c[j] = 0.0;
        for (int p = 0; p < k; p++) {
            double a = A[(long)i * k + p];
            if (a == 0.0)
                continue;
            for (int j = 0; j < n; j++)
                c[j] += a * B[(long)j * k + p];
        }
    }
}

void scm_linalg_transpose(int m, int n, const double *A, double *At)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            At[(long)j * m + i] = A[(long)i * n + j];
}

double scm_linalg_max_abs(const double *x, long n)
{
    double m = 0.0;
    for (long i = 0; i < n; i++) {
        if (isnan(x[i]))
            return NAN;
        if (fabs(x[i]) > m)
            m = fabs(x[i]);
    }
    return m;
}

scm_status scm_linalg_re_range(gsl_matrix *J, double *re_max, double *re_min)
{
    size_t n = J->size1;
    gsl_vector_complex *ev = gsl_vector_complex_alloc(n);
    gsl_eigen_nonsymm_workspace *w = gsl_eigen_nonsymm_alloc(n);
    scm_status st = SCM_OK;
    if (!ev || !w)
        st = SCM_ENOMEM;
    else if (gsl_eigen_nonsymm(J, ev, w) != GSL_SUCCESS)
        st = SCM_ESOLVER;
    if (!st) {
        double hi = -INFINITY, lo = INFINITY;
        for (size_t i = 0; i < n; i++) {
            double re = GSL_REAL(gsl_vector_complex_get(ev, i));
            hi = fmax(hi, re);
            lo = fmin(lo, re);
        }
        *re_max = hi;
        if (re_min)
            *re_min = lo;
    }
    if (ev)
        gsl_vector_complex_free(ev);
    if (w)
        gsl_eigen_nonsymm_free(w);
    return st;
}

long scm_linalg_lu(double *A, long n, long *piv)
{
    for (long k = 0; k < n; k++) {
        double *ck = A + k * n;
        long l = k;
        double big = fabs(ck[k]);
        for (long i = k + 1; i < n; i++)
            if (fabs(ck[i]) > big) {
                big = fabs(ck[i]);
                l = i;
            }
        piv[k] = l;
        if (ck[l] == 0.0)
            return k + 1;
        if (l != k)
            for (long j = 0; j < n; j++) {
                double *cj = A + j * n, t = cj[l];
                cj[l] = cj[k];
                cj[k] = t;
            }
        const double r = 1.0 / ck[k];
        for (long i = k + 1; i < n; i++)
            ck[i] *= r;
        for (long j = k + 1; j < n; j++) {
            double *restrict cj = A + j * n;
            const double *restrict cl = ck;
            const double a = cj[k];
            if (a != 0.0)
                for (long i = k + 1; i < n; i++)
                    cj[i] -= a * cl[i];
        }
    }
    return 0;
}

void scm_linalg_lu_solve(const double *A, long n, const long *piv, double *b)
{
    for (long k = 0; k < n; k++)
        if (piv[k] != k) {
            double t = b[k];
            b[k] = b[piv[k]];
            b[piv[k]] = t;
        }
    for (long k = 0; k < n - 1; k++) {
        const double *ck = A + k * n, bk = b[k];
        for (long i = k + 1; i < n; i++)
            b[i] -= ck[i] * bk;
    }
    for (long k = n - 1; k >= 0; k--) {
        const double *ck = A + k * n;
        b[k] /= ck[k];
        const double bk = b[k];
        for (long i = 0; i < k; i++)
            b[i] -= ck[i] * bk;
    }
}

scm_status scm_csr_from_dense(const double *A, long m, long n, scm_csr *S)
{
    long nnz = 0;
    for (long i = 0; i < m * n; i++)
        nnz += A[i] != 0.0;
    S->m = m;
    S->n = n;
    S->nnz = nnz;
    S->row_ptr = malloc(sizeof(long) * (size_t)(m + 1));
    S->col = malloc(sizeof(long) * (size_t)(nnz ? nnz : 1));
    S->val = malloc(sizeof(double) * (size_t)(nnz ? nnz : 1));
    if (!S->row_ptr || !S->col || !S->val) {
        scm_csr_free(S);
        return SCM_ENOMEM;
    }
    long p = 0;
    for (long i = 0; i < m; i++) {
        S->row_ptr[i] = p;
        for (long j = 0; j < n; j++)
            if (A[i * n + j] != 0.0) {
                S->col[p] = j;
                S->val[p++] = A[i * n + j];
            }
    }
    S->row_ptr[m] = p;
    return SCM_OK;
}

void scm_csr_free(scm_csr *S)
{
    free(S->row_ptr);
    free(S->col);
    free(S->val);
    S->row_ptr = S->col = NULL;
    S->val = NULL;
    S->nnz = 0;
}

static double norm2(const double *x, long n)
{
    double s = 0.0;
    for (long i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

/* y = A x - a y */
static void csr_mv(const scm_csr *A, const double *x, double a, double *y)
{
    for (long i = 0; i < A->m; i++) {
        double s = 0.0;
        for (long p = A->row_ptr[i]; p < A->row_ptr[i + 1]; p++)
            s += A->val[p] * x[A->col[p]];
        y[i] = s - a * y[i];
    }
}

/* y = A^T x - a y */
static void csr_mtv(const scm_csr *A, const double *x, double a, double *y)
{
    for (long j = 0; j < A->n; j++)
        y[j] *= -a;
    for (long i = 0; i < A->m; i++)
        for (long p = A->row_ptr[i]; p < A->row_ptr[i + 1]; p++)
            y[A->col[p]] += A->val[p] * x[i];
}

scm_status scm_linalg_lsqr(const scm_csr *A, const double *b, double *x, double tol,
                           long max_iter, long *iters)
{
    long m = A->m, n = A->n;
    double *u = malloc(sizeof(double) * (size_t)(m + 2 * n));
    *iters = 0;
    if (!u)
        return SCM_ENOMEM;
    double *v = u + m, *w = v + n;
    memset(x, 0, sizeof(double) * (size_t)n);
    memcpy(u, b, sizeof(double) * (size_t)m);
    double beta = norm2(u, m), bnorm = beta;
    if (beta == 0.0) {
        free(u);
        return SCM_OK; /* x = 0 */
    }
    for (long i = 0; i < m; i++)
        u[i] /= beta;
    memset(v, 0, sizeof(double) * (size_t)n);
    csr_mtv(A, u, 0.0, v);
    double alpha = norm2(v, n);
    if (alpha == 0.0) {
        free(u);
        return SCM_OK; /* b orthogonal to the range: x = 0 */
    }
    for (long j = 0; j < n; j++)
        v[j] /= alpha;
    memcpy(w, v, sizeof(double) * (size_t)n);
    double phibar = beta, rhobar = alpha, anorm2 = 0.0;
    scm_status st = SCM_ENOCONV;
    for (long it = 1; it <= max_iter; it++) {
        *iters = it;
        /* bidiagonalisation: beta u = A v - alpha u, alpha v = A^T u - beta v */
        csr_mv(A, v, alpha, u);
        beta = norm2(u, m);
        anorm2 += alpha * alpha + beta * beta;
        if (beta > 0.0) {
            for (long i = 0; i < m; i++)
                u[i] /= beta;
            csr_mtv(A, u, beta, v);
            alpha = norm2(v, n);
            if (alpha > 0.0)
                for (long j = 0; j < n; j++)
                    v[j] /= alpha;
        }
        /* plane rotation eliminating beta */
        double rho = hypot(rhobar, beta), c = rhobar / rho, s = beta / rho;
        double theta = s * alpha, phi = c * phibar;
        rhobar = -c * alpha;
        phibar = s * phibar;
        for (long j = 0; j < n; j++) {
            x[j] += (phi / rho) * w[j];
            w[j] = v[j] - (theta / rho) * w[j];
        }
        double anorm = sqrt(anorm2), rnorm = phibar, arnorm = phibar * alpha * fabs(c);
        if (rnorm <= tol * (bnorm + anorm * norm2(x, n)) || arnorm <= tol * anorm * rnorm ||
            beta == 0.0 || alpha == 0.0) {
            st = SCM_OK;
            break;
        }
    }
    free(u);
    return st;
}
