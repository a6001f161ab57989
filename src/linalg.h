/* linalg.h (internal): the few dense kernels libscm needs, kept local so
 * that hot loops do not go through GSL's reference CBLAS. */
#ifndef SCM_LINALG_H
#define SCM_LINALG_H

/* In-place lower Cholesky factor of the n x n row-major matrix A (only the
 * lower triangle is read and written).  Returns -1 on success, otherwise the
 * index of the first pivot that is not positive. */
int scm_linalg_cholesky(double *A, int n);

/* C (m x n) = A (m x k) B (k x n), or A B^T when transb (B is n x k). */
void scm_linalg_gemm(int m, int n, int k, const double *A, const double *B, int transb,
                     double *C);

/* Largest absolute entry of x[0..n-1]; NaN if any entry is NaN. */
double scm_linalg_max_abs(const double *x, long n);

#endif
