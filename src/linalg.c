/* linalg.c: see linalg.h. */
#include "linalg.h"

#include <gsl/gsl_eigen.h>
#include <math.h>

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

void scm_linalg_gemm(int m, int n, int k, const double *A, const double *B, int transb,
                     double *C)
{
    for (int i = 0; i < m; i++) {
        double *c = C + (long)i * n;
        for (int j = 0; j < n; j++)
            c[j] = 0.0;
        for (int p = 0; p < k; p++) {
            double a = A[(long)i * k + p];
            if (a == 0.0)
                continue;
            if (transb)
                for (int j = 0; j < n; j++)
                    c[j] += a * B[(long)j * k + p];
            else {
                const double *b = B + (long)p * n;
                for (int j = 0; j < n; j++)
                    c[j] += a * b[j];
            }
        }
    }
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
