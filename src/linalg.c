/* linalg.c: see linalg.h. */
#include "linalg.h"

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
