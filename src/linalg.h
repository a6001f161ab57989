/* linalg.h (internal): the few dense kernels libscm needs, kept local so
 * that hot loops do not go through GSL's reference CBLAS. */
#ifndef SCM_LINALG_H
#define SCM_LINALG_H

#include <gsl/gsl_matrix.h>

#include "scm/status.h"

/* In-place lower Cholesky factor of the n x n row-major matrix A (only the
 * lower triangle is read and written).  Returns -1 on success, otherwise the
 * index of the first pivot that is not positive. */
int scm_linalg_cholesky(double *A, int n);

/* C (m x n) = A (m x k) B (k x n), or A B^T when transb (B is n x k). */
void scm_linalg_gemm(int m, int n, int k, const double *A, const double *B, int transb,
                     double *C);

/* LU factorisation with partial pivoting (the largest entry of the column,
 * the first of equals), in place, of the n x n column-major matrix A
 * (A[j * n + i] is row i, column j): L unit lower, U upper, row k swapped
 * with piv[k] before step k.  Returns 0, or k + 1 when the k-th pivot is
 * zero (then A is partly factored).  The algorithm of SUNDIALS' dense
 * solver (SUNDlsMat_denseGETRF), written with contiguous columns that the
 * compiler vectorises: ~4x faster at n = 30. */
long scm_linalg_lu(double *A, long n, long *piv);

/* Solve A x = b in place (b becomes x) with the factors of scm_linalg_lu. */
void scm_linalg_lu_solve(const double *A, long n, const long *piv, double *b);

/* Largest absolute entry of x[0..n-1]; NaN if any entry is NaN. */
double scm_linalg_max_abs(const double *x, long n);

/* The largest (and, if re_min is not NULL, smallest) real part of the
 * eigenvalues of the square matrix J (overwritten).  SCM_ENOMEM, or
 * SCM_ESOLVER when GSL's eigensolver fails. */
scm_status scm_linalg_re_range(gsl_matrix *J, double *re_max, double *re_min);

#endif
