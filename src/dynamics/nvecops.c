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
 * order written is the order computed).  Also CVODE's dense linear solver
 * on linalg.h's LU (scm_nvecops_lu_new, at the end). */
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

static sunrealtype dot(N_Vector x, N_Vector y)
{
    const sunindextype n = NV_LENGTH_S(x);
    const sunrealtype *restrict a = NV_DATA_S(x), *restrict b = NV_DATA_S(y);
    sunrealtype s[LANES] = {0};
    sunindextype i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++)
            s[j] += a[i + j] * b[i + j];
    for (; i < n; i++)
        s[0] += a[i] * b[i];
    return sum_lanes(s);
}

/* sum (x_i w_i)^2 */
static sunrealtype wsqrsum(sunindextype n, const sunrealtype *restrict x,
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
    return sum_lanes(s);
}

static sunrealtype wrmsnorm(N_Vector x, N_Vector w)
{
    const sunindextype n = NV_LENGTH_S(x);
    return sqrt(wsqrsum(n, NV_DATA_S(x), NV_DATA_S(w)) / (sunrealtype)n);
}

/* SUNDIALS's N_VLinearSum_Serial has special cases; these three give its
 * bits in all of them (products with +-1 are exact, and rounding is
 * symmetric, so -(x - y) = y - x).  z may alias x or y. */
static void linearsum(sunrealtype a, N_Vector x, sunrealtype b, N_Vector y, N_Vector z)
{
    const sunindextype n = NV_LENGTH_S(x);
    const sunrealtype *xd = NV_DATA_S(x), *yd = NV_DATA_S(y);
    sunrealtype *zd = NV_DATA_S(z);
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

static void scale(sunrealtype c, N_Vector x, N_Vector z)
{
    const sunindextype n = NV_LENGTH_S(x);
    const sunrealtype *xd = NV_DATA_S(x);
    sunrealtype *zd = NV_DATA_S(z);
    for (sunindextype i = 0; i < n; i++)
        zd[i] = c * xd[i];
}

static void prod(N_Vector x, N_Vector y, N_Vector z)
{
    const sunindextype n = NV_LENGTH_S(x);
    const sunrealtype *xd = NV_DATA_S(x), *yd = NV_DATA_S(y);
    sunrealtype *zd = NV_DATA_S(z);
    for (sunindextype i = 0; i < n; i++)
        zd[i] = xd[i] * yd[i];
}

static void divide(N_Vector x, N_Vector y, N_Vector z)
{
    const sunindextype n = NV_LENGTH_S(x);
    const sunrealtype *xd = NV_DATA_S(x), *yd = NV_DATA_S(y);
    sunrealtype *zd = NV_DATA_S(z);
    for (sunindextype i = 0; i < n; i++)
        zd[i] = xd[i] / yd[i];
}

void scm_nvecops_install(N_Vector v)
{
    v->ops->nvdotprod = dot;
    v->ops->nvwrmsnorm = wrmsnorm;
    v->ops->nvlinearsum = linearsum;
    v->ops->nvscale = scale;
    v->ops->nvprod = prod;
    v->ops->nvdiv = divide;
}

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
