/* linalg.h (internal): the few dense kernels libscm needs, kept local so
 * that hot loops do not go through GSL's reference CBLAS. */
#ifndef SCM_LINALG_H
#define SCM_LINALG_H

#include <gsl/gsl_matrix.h>

#include "scm/status.h"

/* The instruction sets of the copies of the hot loops (the product and
 * the Cholesky factor here, the vector operations of nvecops.c, the flow's
 * linearisation): each copy is the same C compiled for wider registers,
 * without FMA, so all give the same bits (test_linalg, test_flow), and
 * the library takes the widest the CPU has. */
typedef enum { SCM_LINALG_PLAIN, SCM_LINALG_AVX2, SCM_LINALG_AVX512 } scm_linalg_isa;

/* 1 when this CPU and build have the copies for isa. */
int scm_linalg_has(scm_linalg_isa isa);

/* The widest isa scm_linalg_has. */
scm_linalg_isa scm_linalg_widest(void);

/* In-place lower Cholesky factor of the n x n row-major matrix A (only the
 * lower triangle is read and written).  Returns -1 on success, otherwise the
 * index of the first pivot that is not positive. */
int scm_linalg_cholesky(double *A, int n);

/* The same with the copy isa (the plain one when the CPU lacks it). */
int scm_linalg_cholesky_copy(scm_linalg_isa isa, double *A, int n);

/* C (m x n) = A (m x k) B (k x n), or A B^T when transb (B is n x k).
 * C must not overlap A or B.  Each entry is summed over k in increasing
 * order (so the result does not depend on the blocking). */
void scm_linalg_gemm(int m, int n, int k, const double *A, const double *B, int transb,
                     double *C);


/* C = A B with the copy isa (for tests and benchmarks).  Returns 0, or -1
 * when this CPU or build lacks it (C untouched). */
int scm_linalg_gemm_copy(scm_linalg_isa isa, int m, int n, int k, const double *A,
                         const double *B, double *C);

/* At (n x m) = A^T for the m x n row-major A. */
void scm_linalg_transpose(int m, int n, const double *A, double *At);

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

/* A matrix in compressed-row form: row i holds val[row_ptr[i] .. row_ptr[i + 1] - 1]
 * in the columns col[...]. */
typedef struct {
    long m, n, nnz;
    long *row_ptr, *col;
    double *val;
} scm_csr;

/* S = the non-zero entries of the m x n row-major matrix A.  SCM_ENOMEM
 * (S then holds nothing to free). */
scm_status scm_csr_from_dense(const double *A, long m, long n, scm_csr *S);
void scm_csr_free(scm_csr *S);

/* LSQR (Paige and Saunders 1982): x = the minimum-norm least-squares
 * solution of A x = b, iterated from x = 0 until ||A^T r|| <= tol ||A|| ||r||
 * (a least-squares solution) or ||r|| <= tol (||b|| + ||A|| ||x||) (a
 * solution), with the running estimates of ||A|| and ||r||, or max_iter
 * iterations.  From x = 0 the iterates stay in the row space of A, so a
 * rank-deficient A gives the minimum-norm solution, as a complete
 * orthogonal decomposition would.  *iters gets the iterations made.
 * SCM_OK when a test was met, SCM_ENOCONV at max_iter (x holds the last
 * iterate), SCM_ENOMEM. */
scm_status scm_linalg_lsqr(const scm_csr *A, const double *b, double *x, double tol,
                           long max_iter, long *iters);

#endif
