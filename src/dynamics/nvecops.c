/* nvecops.c: the serial vector operations that CVODE and SPGMR spend their
 * time in, as loops the compiler can vectorise.
 *
 * Debian's libsundials_nvecserial sums dot products and weighted norms in
 * one running sum: a chain of dependent additions, latency-bound.  In the
 * sweeps of `scm compare` (n ~ 450) those reductions, mostly SPGMR's
 * Gram-Schmidt, took a third of a run (perf; docs/sweeps.md).  Here every
 * reduction keeps eight partial sums, added pairwise at the end; the
 * element-wise operations compute exactly what SUNDIALS computes.  Only the
 * order of the sums differs, so results differ from the stock vectors in
 * the last bits, and are as deterministic (C11 without fp-contract: the
 * order written is the order computed).  Each operation has a plain, an
 * AVX2 and an AVX-512 copy, the same C (linalg.h, scm_linalg_isa), which
 * give the same bits (test_linalg).  Also CVODE's dense linear solver on
 * linalg.h's LU (scm_nvecops_lu_new, at the end). */
#include "dynamics/nvecops.h"

#include <math.h>
#include <nvector/nvector_serial.h>
#include <stdlib.h>
#include <sunmatrix/sunmatrix_dense.h>

#include "core/linalg.h"

#define LANES 8

static inline sunrealtype sum_lanes(const sunrealtype s[LANES])
{
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* The bodies, inlined into one copy per instruction set (the end of the
 * file): the loops are the same C, so every copy computes the same bits. */
#define BODY static inline __attribute__((always_inline))

BODY sunrealtype dot_body(sunindextype n, const sunrealtype *restrict a,
                          const sunrealtype *restrict b)
{
    sunrealtype s[LANES] = {0};
    sunindextype i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++)
            s[j] += a[i + j] * b[i + j];
    for (; i < n; i++)
        s[0] += a[i] * b[i];
    return sum_lanes(s);
}

/* sqrt(sum (x_i w_i)^2 / n) */
BODY sunrealtype wrmsnorm_body(sunindextype n, const sunrealtype *restrict x,
                               const sunrealtype *restrict w)
{
    sunrealtype s[LANES] = {0};
    sunindextype i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) {
            const sunrealtype p = x[i + j] * w[i + j];
            s[j] += p * p;
        }
    for (; i < n; i++) {
        const sunrealtype p = x[i] * w[i];
        s[0] += p * p;
    }
    return sqrt(sum_lanes(s) / (sunrealtype)n);
}

/* SUNDIALS's N_VLinearSum_Serial has special cases; these three give its
 * bits in all of them (products with +-1 are exact, and rounding is
 * symmetric, so -(x - y) = y - x).  z may alias x or y. */
BODY void linearsum_body(sunindextype n, sunrealtype a, const sunrealtype *xd, sunrealtype b,
                         const sunrealtype *yd, sunrealtype *zd)
{
    if (a == b)
        for (sunindextype i = 0; i < n; i++)
            zd[i] = a * (xd[i] + yd[i]);
    else if (a == -b)
        for (sunindextype i = 0; i < n; i++)
            zd[i] = a * (xd[i] - yd[i]);
    else
        for (sunindextype i = 0; i < n; i++)
            zd[i] = a * xd[i] + b * yd[i];
}

BODY void scale_body(sunindextype n, sunrealtype c, const sunrealtype *xd, sunrealtype *zd)
{
    for (sunindextype i = 0; i < n; i++)
        zd[i] = c * xd[i];
}

BODY void prod_body(sunindextype n, const sunrealtype *xd, const sunrealtype *yd,
                    sunrealtype *zd)
{
    for (sunindextype i = 0; i < n; i++)
        zd[i] = xd[i] * yd[i];
}

BODY void divide_body(sunindextype n, const sunrealtype *xd, const sunrealtype *yd,
                      sunrealtype *zd)
{
    for (sunindextype i = 0; i < n; i++)
        zd[i] = xd[i] / yd[i];
}

BODY void const_body(sunindextype n, sunrealtype c, sunrealtype *zd)
{
    for (sunindextype i = 0; i < n; i++)
        zd[i] = c;
}

BODY void abs_body(sunindextype n, const sunrealtype *xd, sunrealtype *zd)
{
    for (sunindextype i = 0; i < n; i++)
        zd[i] = fabs(xd[i]);
}

BODY void addconst_body(sunindextype n, const sunrealtype *xd, sunrealtype b, sunrealtype *zd)
{
    for (sunindextype i = 0; i < n; i++)
        zd[i] = xd[i] + b;
}

BODY void inv_body(sunindextype n, const sunrealtype *xd, sunrealtype *zd)
{
    for (sunindextype i = 0; i < n; i++)
        zd[i] = 1.0 / xd[i];
}

/* max |x_i| (exact in any order; SUNDIALS's ignores NaN entries too: a NaN
 * never compares greater) */
BODY sunrealtype maxnorm_body(sunindextype n, const sunrealtype *restrict xd)
{
    sunrealtype s[LANES] = {0};
    sunindextype i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) {
            const sunrealtype a = fabs(xd[i + j]);
            s[j] = a > s[j] ? a : s[j];
        }
    for (; i < n; i++) {
        const sunrealtype a = fabs(xd[i]);
        s[0] = a > s[0] ? a : s[0];
    }
    sunrealtype r = 0.0;
    for (int j = 0; j < LANES; j++)
        r = s[j] > r ? s[j] : r;
    return r;
}

/* The N_Vector operations of one copy: SFX names it, ATTR is its target. */
#define NVEC_COPY(SFX, ATTR)                                                                   \
    ATTR static sunrealtype dot_##SFX(N_Vector x, N_Vector y)                                 \
    {                                                                                          \
        return dot_body(NV_LENGTH_S(x), NV_DATA_S(x), NV_DATA_S(y));                           \
    }                                                                                          \
    ATTR static sunrealtype wrmsnorm_##SFX(N_Vector x, N_Vector w)                            \
    {                                                                                          \
        return wrmsnorm_body(NV_LENGTH_S(x), NV_DATA_S(x), NV_DATA_S(w));                      \
    }                                                                                          \
    ATTR static void linearsum_##SFX(sunrealtype a, N_Vector x, sunrealtype b, N_Vector y,    \
                                     N_Vector z)                                               \
    {                                                                                          \
        linearsum_body(NV_LENGTH_S(x), a, NV_DATA_S(x), b, NV_DATA_S(y), NV_DATA_S(z));        \
    }                                                                                          \
    ATTR static void scale_##SFX(sunrealtype c, N_Vector x, N_Vector z)                       \
    {                                                                                          \
        scale_body(NV_LENGTH_S(x), c, NV_DATA_S(x), NV_DATA_S(z));                             \
    }                                                                                          \
    ATTR static void prod_##SFX(N_Vector x, N_Vector y, N_Vector z)                           \
    {                                                                                          \
        prod_body(NV_LENGTH_S(x), NV_DATA_S(x), NV_DATA_S(y), NV_DATA_S(z));                   \
    }                                                                                          \
    ATTR static void divide_##SFX(N_Vector x, N_Vector y, N_Vector z)                         \
    {                                                                                          \
        divide_body(NV_LENGTH_S(x), NV_DATA_S(x), NV_DATA_S(y), NV_DATA_S(z));                 \
    }                                                                                          \
    ATTR static void const_##SFX(sunrealtype c, N_Vector z)                                   \
    {                                                                                          \
        const_body(NV_LENGTH_S(z), c, NV_DATA_S(z));                                           \
    }                                                                                          \
    ATTR static void abs_##SFX(N_Vector x, N_Vector z)                                        \
    {                                                                                          \
        abs_body(NV_LENGTH_S(x), NV_DATA_S(x), NV_DATA_S(z));                                  \
    }                                                                                          \
    ATTR static void addconst_##SFX(N_Vector x, sunrealtype b, N_Vector z)                    \
    {                                                                                          \
        addconst_body(NV_LENGTH_S(x), NV_DATA_S(x), b, NV_DATA_S(z));                          \
    }                                                                                          \
    ATTR static void inv_##SFX(N_Vector x, N_Vector z)                                        \
    {                                                                                          \
        inv_body(NV_LENGTH_S(x), NV_DATA_S(x), NV_DATA_S(z));                                  \
    }                                                                                          \
    ATTR static sunrealtype maxnorm_##SFX(N_Vector x)                                         \
    {                                                                                          \
        return maxnorm_body(NV_LENGTH_S(x), NV_DATA_S(x));                                     \
    }                                                                                          \
    static void install_##SFX(N_Vector v)                                                      \
    {                                                                                          \
        v->ops->nvdotprod = dot_##SFX;                                                         \
        v->ops->nvwrmsnorm = wrmsnorm_##SFX;                                                   \
        v->ops->nvlinearsum = linearsum_##SFX;                                                 \
        v->ops->nvscale = scale_##SFX;                                                         \
        v->ops->nvprod = prod_##SFX;                                                           \
        v->ops->nvdiv = divide_##SFX;                                                          \
        v->ops->nvconst = const_##SFX;                                                         \
        v->ops->nvabs = abs_##SFX;                                                             \
        v->ops->nvaddconst = addconst_##SFX;                                                   \
        v->ops->nvinv = inv_##SFX;                                                             \
        v->ops->nvmaxnorm = maxnorm_##SFX;                                                     \
    }

NVEC_COPY(plain, )
#if defined(__x86_64__) && defined(__GNUC__)
#define SCM_NVECOPS_X86 1
NVEC_COPY(avx2, __attribute__((target("avx2"))))
NVEC_COPY(avx512, __attribute__((target("avx512f,prefer-vector-width=512"))))
#endif

int scm_nvecops_install_copy(N_Vector v, scm_linalg_isa isa)
{
    if (!scm_linalg_has(isa))
        return -1;
    switch (isa) {
#ifdef SCM_NVECOPS_X86
    case SCM_LINALG_AVX2:
        install_avx2(v);
        return 0;
    case SCM_LINALG_AVX512:
        install_avx512(v);
        return 0;
#endif
    default:
        install_plain(v);
        return 0;
    }
}

void scm_nvecops_install(N_Vector v) { scm_nvecops_install_copy(v, scm_linalg_widest()); }

/* CVODE's dense direct solver with the factorisation of linalg.h: the same
 * algorithm as SUNLinSol_Dense (LU with partial pivoting, in place in the
 * matrix CVODE passes, I - gamma J), which at n ~ 30 spends 4x the time in
 * its unvectorised loops (28% of the instructions of an erf sgd run at
 * K = M = 4 went to SUNDlsMat_denseGETRF/GETRS, docs/simulate.md section 5). */
typedef struct {
    long n, last_flag;
    long *piv;
} lu_content;

static SUNLinearSolver_Type lu_gettype(SUNLinearSolver S)
{
    (void)S;
    return SUNLINEARSOLVER_DIRECT;
}

static SUNLinearSolver_ID lu_getid(SUNLinearSolver S)
{
    (void)S;
    return SUNLINEARSOLVER_CUSTOM;
}

static int lu_setup(SUNLinearSolver S, SUNMatrix A)
{
    lu_content *c = S->content;
    if (SUNMatGetID(A) != SUNMATRIX_DENSE || SM_ROWS_D(A) != c->n || SM_COLUMNS_D(A) != c->n) {
        c->last_flag = SUNLS_ILL_INPUT;
        return SUNLS_ILL_INPUT;
    }
    c->last_flag = scm_linalg_lu(SM_DATA_D(A), c->n, c->piv);
    return c->last_flag > 0 ? SUNLS_LUFACT_FAIL : SUNLS_SUCCESS; /* > 0: recoverable */
}

static int lu_solve(SUNLinearSolver S, SUNMatrix A, N_Vector x, N_Vector b, sunrealtype tol)
{
    (void)tol;
    lu_content *c = S->content;
    N_VScale(1.0, b, x);
    scm_linalg_lu_solve(SM_DATA_D(A), c->n, c->piv, N_VGetArrayPointer(x));
    c->last_flag = SUNLS_SUCCESS;
    return SUNLS_SUCCESS;
}

static sunindextype lu_lastflag(SUNLinearSolver S) { return ((lu_content *)S->content)->last_flag; }

static int lu_free(SUNLinearSolver S)
{
    if (!S)
        return SUNLS_SUCCESS;
    if (S->content) {
        free(((lu_content *)S->content)->piv);
        free(S->content);
        S->content = NULL;
    }
    SUNLinSolFreeEmpty(S);
    return SUNLS_SUCCESS;
}

SUNLinearSolver scm_nvecops_lu_new(long n, SUNContext ctx)
{
    SUNLinearSolver S = SUNLinSolNewEmpty(ctx);
    if (!S)
        return NULL;
    S->ops->gettype = lu_gettype;
    S->ops->getid = lu_getid;
    S->ops->setup = lu_setup;
    S->ops->solve = lu_solve;
    S->ops->lastflag = lu_lastflag;
    S->ops->free = lu_free;
    lu_content *c = calloc(1, sizeof *c);
    S->content = c;
    if (c)
        c->piv = malloc(sizeof *c->piv * (size_t)n);
    if (!c || !c->piv) {
        lu_free(S);
        return NULL;
    }
    c->n = n;
    return S;
}
