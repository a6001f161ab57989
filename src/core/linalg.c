/* linalg.c: see linalg.h. */
#include "core/linalg.h"

#include <gsl/gsl_eigen.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The textbook (left-looking) factor: entry (i, j) is A_ij minus
 * L_ik L_jk for k = 0, 1, .., j - 1 in turn, then divided by L_jj. */
static int cholesky_left(double *A, int n)
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

/* The same factor right-looking: once column j is final, it is subtracted
 * from the trailing triangle, row by row along contiguous memory (with
 * column j copied to col), which the compiler vectorises.  Each entry
 * receives the same subtractions in the same order k = 0, 1, .. as in
 * cholesky_left, so the factor is bitwise the same (test_linalg).  It is
 * the PSD check of every trajectory step (n = K + M). */
#define CHOL_COL_MAX 512
static inline __attribute__((always_inline)) int cholesky_right(double *restrict A, int n)
{
    double col[CHOL_COL_MAX];
    for (int j = 0; j < n; j++) {
        double d = A[j * n + j];
        if (!(d > 0.0))
            return j;
        d = sqrt(d);
        A[j * n + j] = d;
        for (int i = j + 1; i < n; i++)
            col[i] = A[i * n + j] = A[i * n + j] / d;
        for (int i = j + 1; i < n; i++) {
            double *restrict a = A + (long)i * n;
            const double x = col[i];
            for (int l = j + 1; l <= i; l++)
                a[l] -= x * col[l];
        }
    }
    return -1;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define SCM_LINALG_AVX2 1
__attribute__((target("avx2"))) static int cholesky_right_avx2(double *A, int n)
{
    return cholesky_right(A, n);
}

__attribute__((target("avx512f,prefer-vector-width=512"))) static int cholesky_right_avx512(
    double *A, int n)
{
    return cholesky_right(A, n);
}
#endif

static int cholesky_right_plain(double *A, int n) { return cholesky_right(A, n); }

int scm_linalg_has(scm_linalg_isa isa)
{
    switch (isa) {
    case SCM_LINALG_PLAIN:
        return 1;
#ifdef SCM_LINALG_AVX2
    case SCM_LINALG_AVX2:
        return __builtin_cpu_supports("avx2");
    case SCM_LINALG_AVX512:
        return __builtin_cpu_supports("avx512f");
#endif
    default:
        return 0;
    }
}

scm_linalg_isa scm_linalg_widest(void)
{
    return scm_linalg_has(SCM_LINALG_AVX512) ? SCM_LINALG_AVX512
           : scm_linalg_has(SCM_LINALG_AVX2) ? SCM_LINALG_AVX2
                                             : SCM_LINALG_PLAIN;
}

int scm_linalg_cholesky_copy(scm_linalg_isa isa, double *A, int n)
{
    if (n > CHOL_COL_MAX)
        return cholesky_left(A, n);
    switch (scm_linalg_has(isa) ? isa : SCM_LINALG_PLAIN) {
#ifdef SCM_LINALG_AVX2
    case SCM_LINALG_AVX2:
        return cholesky_right_avx2(A, n);
    case SCM_LINALG_AVX512:
        return cholesky_right_avx512(A, n);
#endif
    default:
        return cholesky_right_plain(A, n);
    }
}

int scm_linalg_cholesky(double *A, int n)
{
    return scm_linalg_cholesky_copy(scm_linalg_widest(), A, n);
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

#ifdef SCM_LINALG_AVX2
/* The same product in vector registers, where the CPU has them
 * (bench/bench_map_ab.sh measures the runs): AVX2 (4 doubles) in 4 x 8
 * tiles, AVX-512 (8 doubles) in 6 x 16 tiles.  Neither copy uses FMA (C11
 * does not contract), and a vector multiply or add rounds each lane as the
 * scalar one does, so every entry is still the plain loop's sum, bit for
 * bit (test_linalg compares every copy).  The tiles are inlined into the
 * functions of their instruction set, so that no vector crosses a call. */
typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));

/* C[0..R-1][0..W V-1] = A[0..R-1][:] B[:][0..W V-1] in vectors VT of W
 * doubles, each entry summed over p in increasing order from 0 (A, B, C at
 * the tile's corner). */
#define BCAST4(a) {a, a, a, a}
#define BCAST8(a) {a, a, a, a, a, a, a, a}
#define GEMM_TILE(NAME, VT, W, R, V)                                                          \
    static inline __attribute__((always_inline)) void NAME(                                   \
        int n, int k, const double *restrict A, const double *restrict B, double *restrict C) \
    {                                                                                         \
        VT c[R][V];                                                                           \
        for (int r = 0; r < R; r++)                                                           \
            for (int q = 0; q < V; q++)                                                       \
                c[r][q] = (VT){0.0};                                                          \
        for (int p = 0; p < k; p++) {                                                         \
            VT b[V];                                                                          \
            for (int q = 0; q < V; q++)                                                       \
                memcpy(&b[q], B + (long)p * n + W * q, sizeof b[q]);                          \
            for (int r = 0; r < R; r++) {                                                     \
                const double a = A[(long)r * k + p];                                          \
                const VT av = BCAST##W(a);                                                    \
                for (int q = 0; q < V; q++)                                                   \
                    c[r][q] += av * b[q];                                                     \
            }                                                                                 \
        }                                                                                     \
        for (int r = 0; r < R; r++)                                                           \
            for (int q = 0; q < V; q++)                                                       \
                memcpy(C + (long)r * n + W * q, &c[r][q], sizeof c[r][q]);                    \
    }
GEMM_TILE(tile4x8, v4d, 4, 4, 2)
GEMM_TILE(tile4x4, v4d, 4, 4, 1)
GEMM_TILE(tile1x4, v4d, 4, 1, 1)
GEMM_TILE(tile6x16, v8d, 8, 6, 2)
GEMM_TILE(tile6x8w, v8d, 8, 6, 1)
GEMM_TILE(tile4x16, v8d, 8, 4, 2)
GEMM_TILE(tile4x8w, v8d, 8, 4, 1)
GEMM_TILE(tile1x16, v8d, 8, 1, 2)
GEMM_TILE(tile1x8w, v8d, 8, 1, 1)

/* C[i][j] for the rows i0..i1-1 and the columns j0..n-1, plainly. */
static inline __attribute__((always_inline)) void gemm_plain(int i0, int i1, int j0, int n,
                                                             int k, const double *restrict A,
                                                             const double *restrict B,
                                                             double *restrict C)
{
    for (int i = i0; i < i1; i++)
        for (int j = j0; j < n; j++) {
            double c = 0.0;
            for (int p = 0; p < k; p++)
                c += A[(long)i * k + p] * B[(long)p * n + j];
            C[(long)i * n + j] = c;
        }
}

__attribute__((target("avx2"))) static void gemm_nn_avx2(int m, int n, int k,
                                                         const double *restrict A,
                                                         const double *restrict B,
                                                         double *restrict C)
{
    int i = 0;
    for (; i + 4 <= m; i += 4) {
        const double *a = A + (long)i * k;
        double *c = C + (long)i * n;
        int j = 0;
        for (; j + 8 <= n; j += 8)
            tile4x8(n, k, a, B + j, c + j);
        for (; j + 4 <= n; j += 4)
            tile4x4(n, k, a, B + j, c + j);
        gemm_plain(i, i + 4, j, n, k, A, B, C);
    }
    for (; i < m; i++) {
        int j = 0;
        for (; j + 4 <= n; j += 4)
            tile1x4(n, k, A + (long)i * k, B + j, C + (long)i * n + j);
        gemm_plain(i, i + 1, j, n, k, A, B, C);
    }
}

/* The last w < 8 columns of R rows, in vectors whose other lanes are
 * masked off: the w lanes compute what the plain loop does, so the tiles
 * cover every column (a plain remainder costs as much as the tiles at
 * n = 42, its sums one dependent chain each). */
#define GEMM_TILE_MASKED(NAME, R)                                                              \
    static inline __attribute__((always_inline, target("avx512f"))) void NAME(                 \
        int n, int k, int w, const double *restrict A, const double *restrict B,               \
        double *restrict C)                                                                    \
    {                                                                                          \
        const __mmask8 lanes = (__mmask8)((1u << w) - 1u);                                     \
        __m512d c[R];                                                                          \
        for (int r = 0; r < R; r++)                                                            \
            c[r] = _mm512_setzero_pd();                                                        \
        for (int p = 0; p < k; p++) {                                                          \
            const __m512d b = _mm512_maskz_loadu_pd(lanes, B + (long)p * n);                   \
            for (int r = 0; r < R; r++)                                                        \
                c[r] = _mm512_add_pd(c[r], _mm512_mul_pd(_mm512_set1_pd(A[(long)r * k + p]), b)); \
        }                                                                                      \
        for (int r = 0; r < R; r++)                                                            \
            _mm512_mask_storeu_pd(C + (long)r * n, lanes, c[r]);                               \
    }
GEMM_TILE_MASKED(tile6xw, 6)
GEMM_TILE_MASKED(tile4xw, 4)
GEMM_TILE_MASKED(tile1xw, 1)

/* The rows i.. of C in blocks of R rows (while R fit), each in tiles of
 * 16, then 8, then the masked rest of the columns. */
#define GEMM_ROWS_AVX512(R, T16, T8, TW)                                                       \
    for (; i + (R) <= m; i += (R)) {                                                           \
        const double *a = A + (long)i * k;                                                     \
        double *c = C + (long)i * n;                                                           \
        int j = 0;                                                                             \
        for (; j + 16 <= n; j += 16)                                                           \
            T16(n, k, a, B + j, c + j);                                                        \
        for (; j + 8 <= n; j += 8)                                                             \
            T8(n, k, a, B + j, c + j);                                                         \
        if (j < n)                                                                             \
            TW(n, k, n - j, a, B + j, c + j);                                                  \
    }

/* 6-row blocks (12 accumulators: 15% faster than 4 rows at K = 42), then
 * 4 rows and single rows. */
__attribute__((target("avx512f"))) static void gemm_nn_avx512(int m, int n, int k,
                                                              const double *restrict A,
                                                              const double *restrict B,
                                                              double *restrict C)
{
    int i = 0;
    GEMM_ROWS_AVX512(6, tile6x16, tile6x8w, tile6xw)
    GEMM_ROWS_AVX512(4, tile4x16, tile4x8w, tile4xw)
    GEMM_ROWS_AVX512(1, tile1x16, tile1x8w, tile1xw)
}
#endif

int scm_linalg_gemm_copy(scm_linalg_isa isa, int m, int n, int k, const double *A,
                         const double *B, double *C)
{
    if (!scm_linalg_has(isa))
        return -1;
    switch (isa) {
#ifdef SCM_LINALG_AVX2
    case SCM_LINALG_AVX2:
        gemm_nn_avx2(m, n, k, A, B, C);
        return 0;
    case SCM_LINALG_AVX512:
        gemm_nn_avx512(m, n, k, A, B, C);
        return 0;
#endif
    default:
        gemm_nn(m, n, k, A, B, C);
        return 0;
    }
}

void scm_linalg_gemm(int m, int n, int k, const double *A, const double *B, int transb,
                     double *C)
{
    if (!transb) {
        scm_linalg_gemm_copy(scm_linalg_widest(), m, n, k, A, B, C);
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

/* Without an early exit at a NaN and in four lanes, so that the loop
 * vectorises: the maximum is exact in any order, and a NaN still gives NaN
 * (a != a). */
/* The largest |x_i| in eight lanes (a maximum is exact in any order, so
 * every copy gives the same value), NaN if any x_i is NaN. */
static inline __attribute__((always_inline)) double max_abs(const double *x, long n)
{
    double m[8] = {0.0}, bad[8] = {0.0};
    long i = 0;
    for (; i + 8 <= n; i += 8)
        for (int q = 0; q < 8; q++) {
            const double a = fabs(x[i + q]);
            bad[q] = a != a ? 1.0 : bad[q];
            m[q] = a > m[q] ? a : m[q];
        }
    for (; i < n; i++) {
        const double a = fabs(x[i]);
        bad[0] = a != a ? 1.0 : bad[0];
        m[0] = a > m[0] ? a : m[0];
    }
    double b = 0.0, r = 0.0;
    for (int q = 0; q < 8; q++) {
        b += bad[q];
        r = fmax(r, m[q]);
    }
    return b > 0.0 ? NAN : r;
}

#ifdef SCM_LINALG_AVX2
__attribute__((target("avx2"))) static double max_abs_avx2(const double *x, long n)
{
    return max_abs(x, n);
}

__attribute__((target("avx512f,prefer-vector-width=512"))) static double max_abs_avx512(
    const double *x, long n)
{
    return max_abs(x, n);
}
#endif

double scm_linalg_max_abs(const double *x, long n)
{
    switch (scm_linalg_widest()) {
#ifdef SCM_LINALG_AVX2
    case SCM_LINALG_AVX2:
        return max_abs_avx2(x, n);
    case SCM_LINALG_AVX512:
        return max_abs_avx512(x, n);
#endif
    default:
        return max_abs(x, n);
    }
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
