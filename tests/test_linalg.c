/* test_linalg.c: the hot loops written for speed, against the plain
 * computations they replace: the blocked product of linalg.c against the
 * textbook triple loop (bit for bit: the same sum order), the right-looking
 * Cholesky factor against the textbook left-looking one (bit for bit), and the vector
 * operations of nvecops.c against SUNDIALS's own serial ones (bit for bit
 * where element-wise; the reductions against a long double sum). */
#include <math.h>
#include <nvector/nvector_serial.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sundials/sundials_context.h>

#include "core/linalg.h"
#include "dynamics/nvecops.h"
#include "testutil.h"

/* uniform in [-1, 1) from a fixed LCG (no library state) */
static double next(unsigned long *s)
{
    *s = *s * 6364136223846793005UL + 1442695040888963407UL;
    return (double)(*s >> 11) * 0x1.0p-52 - 1.0;
}

static void fill(double *x, long n, unsigned long *s, int zeros)
{
    for (long i = 0; i < n; i++)
        x[i] = zeros && i % 5 == 2 ? 0.0 : next(s) * (1.0 + 1e3 * (i % 7 == 3));
}

static void test_gemm(void)
{
    /* every remainder of the 4- and 8-wide tiles and of the 16-wide ones */
    static const int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 18, 19, 23, 35, 36, 41, 42, 44, 47};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    unsigned long seed = 12345;
    long shapes = 0, bad = 0, badt = 0, copies[3] = {0}, badc[3] = {0};
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < ns; b++)
            for (int c = 0; c < ns; c += 3) {
                const int m = sizes[a], n = sizes[b], k = sizes[c];
                double *A = malloc(sizeof(double) * (size_t)(m * k));
                double *B = malloc(sizeof(double) * (size_t)(k * n));
                double *Bt = malloc(sizeof(double) * (size_t)(k * n));
                double *C = malloc(sizeof(double) * (size_t)(m * n));
                double *D = malloc(sizeof(double) * (size_t)(m * n));
                if (!A || !B || !Bt || !C || !D) {
                    CHECK(0, "out of memory");
                    return;
                }
                fill(A, (long)m * k, &seed, (a + b) % 2);
                fill(B, (long)k * n, &seed, 0);
                for (int i = 0; i < m; i++) /* the textbook order: p = 0, 1, ... */
                    for (int j = 0; j < n; j++) {
                        double s = 0.0;
                        for (int p = 0; p < k; p++)
                            s += A[i * k + p] * B[p * n + j];
                        D[i * n + j] = s;
                    }
                scm_linalg_gemm(m, n, k, A, B, 0, C);
                bad += memcmp(C, D, sizeof(double) * (size_t)(m * n)) != 0;
                for (int isa = SCM_LINALG_PLAIN; isa <= SCM_LINALG_AVX512; isa++) {
                    memset(C, 0xff, sizeof(double) * (size_t)(m * n)); /* NaNs */
                    if (scm_linalg_gemm_copy((scm_linalg_isa)isa, m, n, k, A, B, C) == 0) {
                        copies[isa]++;
                        badc[isa] += memcmp(C, D, sizeof(double) * (size_t)(m * n)) != 0;
                    }
                }
                scm_linalg_transpose(k, n, B, Bt); /* n x k */
                for (int p = 0; p < k; p++)
                    for (int j = 0; j < n; j++)
                        if (Bt[j * k + p] != B[p * n + j])
                            badt++;
                scm_linalg_gemm(m, n, k, A, Bt, 1, C);
                bad += memcmp(C, D, sizeof(double) * (size_t)(m * n)) != 0;
                shapes++;
                free(A), free(B), free(Bt), free(C), free(D);
            }
    CHECK(bad == 0, "%ld of %ld shapes: the blocked product differs from the triple loop", bad,
          shapes);
    CHECK(badt == 0, "%ld transposed entries wrong", badt);
    static const char *name[3] = {"plain", "AVX2", "AVX-512"};
    CHECK(copies[SCM_LINALG_PLAIN] == shapes, "the plain copy ran on %ld of %ld shapes",
          copies[SCM_LINALG_PLAIN], shapes);
    for (int isa = 0; isa < 3; isa++) {
        CHECK(badc[isa] == 0, "the %s copy differs from the triple loop on %ld of %ld shapes",
              name[isa], badc[isa], copies[isa]);
        printf("# gemm, %s copy: %s\n", name[isa], copies[isa] ? "bitwise the triple loop's"
                                                                 : "not on this CPU");
    }
}

/* The exact value's bound for a sum of n terms summed in any order:
 * |error| <= (n - 1) eps sum |terms| (to first order). */
static int close_to(double got, long double exact, long double abs_sum, long n)
{
    return fabsl((long double)got - exact) <= (long double)(n + 1) * 0x1.0p-52 * abs_sum;
}

/* One copy of nvecops (isa) against SUNDIALS's operations: the element-wise
 * ones bit for bit, the reductions within their error bound; each reduction
 * is also stored in red_out (NRED of them) to compare the copies.  0, or -1
 * when the CPU lacks the copy. */
#define NRED 32
static int test_nvecops_copy(scm_linalg_isa isa, double *red_out)
{
    SUNContext ctx = NULL;
    int nred = 0;
    if (SUNContext_Create(NULL, &ctx) != 0) {
        CHECK(0, "SUNContext_Create");
        return 0;
    }
    static const long lens[] = {1, 7, 8, 9, 17, 459, 630, 1001};
    unsigned long seed = 99;
    long bits = 0, red = 0, cases = 0;
    for (size_t q = 0; q < sizeof lens / sizeof lens[0]; q++) {
        const long n = lens[q];
        /* stock: SUNDIALS's operations; own: scm's, on a clone (the clone
         * must inherit them, as CVODE's and SPGMR's work vectors do) */
        N_Vector stock[4], own[4];
        N_Vector tmpl = N_VNew_Serial(n, ctx);
        if (scm_nvecops_install_copy(tmpl, isa)) {
            N_VDestroy(tmpl);
            SUNContext_Free(&ctx);
            return -1;
        }
        for (int i = 0; i < 4; i++) {
            stock[i] = N_VNew_Serial(n, ctx);
            own[i] = N_VClone(tmpl);
        }
        CHECK(own[0]->ops->nvdotprod == tmpl->ops->nvdotprod &&
                  own[0]->ops->nvdotprod != stock[0]->ops->nvdotprod,
              "a clone does not inherit the operations");
        for (int i = 0; i < 3; i++) {
            fill(NV_DATA_S(stock[i]), n, &seed, 0);
            memcpy(NV_DATA_S(own[i]), NV_DATA_S(stock[i]), sizeof(double) * (size_t)n);
        }
        for (long i = 0; i < n; i++) /* a positive weight vector */
            NV_DATA_S(stock[2])[i] = NV_DATA_S(own[2])[i] = 1.0 + fabs(NV_DATA_S(stock[2])[i]);
        /* N_VLinearSum in each of SUNDIALS's special cases, also in place */
        static const double coef[][2] = {{1, 1},  {1, -1},   {-1, 1},    {-1, -1}, {1, 0.5},
                                         {0.5, 1}, {-1, 0.3}, {0.3, -1},  {0.7, 0.7},
                                         {0.7, -0.7}, {-2.5, 1.5}, {0, 2}};
        for (size_t c = 0; c < sizeof coef / sizeof coef[0]; c++)
            for (int alias = 0; alias < 3; alias++) {
                /* z = a x + b y with z separate (0), z = x (1), z = y (2) */
                N_Vector zs = stock[3], zo = own[3];
                N_Vector xs = stock[0], ys = stock[1], xo = own[0], yo = own[1];
                if (alias) { /* work on copies so that the inputs survive */
                    /* (NV_DATA_S does not parenthesise its argument) */
                    N_Vector srcs = alias == 1 ? xs : ys, srco = alias == 1 ? xo : yo;
                    memcpy(NV_DATA_S(zs), NV_DATA_S(srcs), sizeof(double) * (size_t)n);
                    memcpy(NV_DATA_S(zo), NV_DATA_S(srco), sizeof(double) * (size_t)n);
                    N_VLinearSum(coef[c][0], alias == 1 ? zs : xs, coef[c][1],
                                 alias == 2 ? zs : ys, zs);
                    N_VLinearSum(coef[c][0], alias == 1 ? zo : xo, coef[c][1],
                                 alias == 2 ? zo : yo, zo);
                } else {
                    N_VLinearSum(coef[c][0], xs, coef[c][1], ys, zs);
                    N_VLinearSum(coef[c][0], xo, coef[c][1], yo, zo);
                }
                bits += memcmp(NV_DATA_S(zs), NV_DATA_S(zo), sizeof(double) * (size_t)n) != 0;
                cases++;
            }
        N_VScale(-0.37, stock[0], stock[3]);
        N_VScale(-0.37, own[0], own[3]);
        bits += memcmp(NV_DATA_S(stock[3]), NV_DATA_S(own[3]), sizeof(double) * (size_t)n) != 0;
        N_VProd(stock[0], stock[1], stock[3]);
        N_VProd(own[0], own[1], own[3]);
        bits += memcmp(NV_DATA_S(stock[3]), NV_DATA_S(own[3]), sizeof(double) * (size_t)n) != 0;
        N_VDiv(stock[0], stock[2], stock[3]);
        N_VDiv(own[0], own[2], own[3]);
        bits += memcmp(NV_DATA_S(stock[3]), NV_DATA_S(own[3]), sizeof(double) * (size_t)n) != 0;
        N_VConst(-1.25, stock[3]);
        N_VConst(-1.25, own[3]);
        bits += memcmp(NV_DATA_S(stock[3]), NV_DATA_S(own[3]), sizeof(double) * (size_t)n) != 0;
        N_VAbs(stock[0], stock[3]);
        N_VAbs(own[0], own[3]);
        bits += memcmp(NV_DATA_S(stock[3]), NV_DATA_S(own[3]), sizeof(double) * (size_t)n) != 0;
        N_VAddConst(stock[0], 0.3, stock[3]);
        N_VAddConst(own[0], 0.3, own[3]);
        bits += memcmp(NV_DATA_S(stock[3]), NV_DATA_S(own[3]), sizeof(double) * (size_t)n) != 0;
        N_VInv(stock[1], stock[3]);
        N_VInv(own[1], own[3]);
        bits += memcmp(NV_DATA_S(stock[3]), NV_DATA_S(own[3]), sizeof(double) * (size_t)n) != 0;
        bits += N_VMaxNorm(stock[0]) != N_VMaxNorm(own[0]);
        cases += 8;
        /* the reductions, against long double sums */
        long double d = 0, dabs = 0, w = 0;
        const double *x = NV_DATA_S(stock[0]), *y = NV_DATA_S(stock[1]), *wt = NV_DATA_S(stock[2]);
        for (long i = 0; i < n; i++) {
            d += (long double)x[i] * y[i];
            dabs += fabsl((long double)x[i] * y[i]);
            w += ((long double)x[i] * wt[i]) * ((long double)x[i] * wt[i]);
        }
        const double dot_own = N_VDotProd(own[0], own[1]), dot_stock = N_VDotProd(stock[0], stock[1]);
        red += !close_to(dot_own, d, dabs, n) || !close_to(dot_stock, d, dabs, n);
        const double wr = N_VWrmsNorm(own[0], own[2]);
        red_out[nred++] = dot_own;
        red_out[nred++] = wr;
        red += !(fabsl((long double)wr * wr * n - w) <= (long double)(n + 3) * 0x1.0p-52 * w);
        red += !(fabs(wr - N_VWrmsNorm(stock[0], stock[2])) <= 4e-16 * (double)n * wr);
        /* integer entries: every partial sum is exact, so any order agrees */
        for (long i = 0; i < n; i++) {
            NV_DATA_S(own[0])[i] = NV_DATA_S(stock[0])[i] = (double)((i * 37) % 11) - 5.0;
            NV_DATA_S(own[1])[i] = NV_DATA_S(stock[1])[i] = (double)((i * 13) % 7) - 3.0;
        }
        red += N_VDotProd(own[0], own[1]) != N_VDotProd(stock[0], stock[1]);
        red += N_VWrmsNorm(own[0], own[1]) != N_VWrmsNorm(stock[0], stock[1]);
        for (int i = 0; i < 4; i++) {
            N_VDestroy(stock[i]);
            N_VDestroy(own[i]);
        }
        N_VDestroy(tmpl);
    }
    CHECK(bits == 0, "copy %d: %ld of %ld element-wise cases differ from SUNDIALS's bits",
          (int)isa, bits, cases);
    CHECK(red == 0, "copy %d: %ld reductions off their error bound", (int)isa, red);
    SUNContext_Free(&ctx);
    return 0;
}

/* Every copy the CPU has: and their reductions are the plain copy's, bit
 * for bit (the runs do not depend on the CPU). */
static void test_nvecops(void)
{
    static const char *name[3] = {"plain", "AVX2", "AVX-512"};
    double red[3][NRED];
    for (int isa = SCM_LINALG_PLAIN; isa <= SCM_LINALG_AVX512; isa++) {
        memset(red[isa], 0, sizeof red[isa]);
        if (test_nvecops_copy((scm_linalg_isa)isa, red[isa])) {
            CHECK(isa != SCM_LINALG_PLAIN, "the plain copy of nvecops is missing");
            printf("# nvecops, %s copy: not on this CPU\n", name[isa]);
            continue;
        }
        CHECK(memcmp(red[isa], red[0], sizeof red[0]) == 0,
              "the %s copy's dot products and norms differ from the plain copy's", name[isa]);
        printf("# nvecops, %s copy: tested\n", name[isa]);
    }
}

/* The textbook (left-looking) Cholesky factor, for the bitwise comparison. */
static int chol_textbook(double *A, int n)
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

/* scm_linalg_cholesky (right-looking, vectorised) against the textbook loop
 * bit for bit, on Gram matrices X X^T + shift I (positive definite, and
 * with shift < 0 indefinite at some pivot: the same index returned), the
 * upper triangle untouched; and L L^T against the input within round-off. */
static void test_cholesky(void)
{
    static const int sizes[] = {1, 2, 3, 5, 8, 17, 40, 41, 80, 83, 513};
    unsigned long seed = 777;
    long cases = 0, bits = 0, pivots = 0, upper = 0, resid = 0;
    for (size_t q = 0; q < sizeof sizes / sizeof sizes[0]; q++)
        for (int indef = 0; indef < 2; indef++) {
            const int n = sizes[q];
            double *X = malloc(sizeof(double) * (size_t)n * (size_t)n);
            double *G = malloc(sizeof(double) * (size_t)n * (size_t)n);
            double *L = malloc(sizeof(double) * (size_t)n * (size_t)n);
            double *T = malloc(sizeof(double) * (size_t)n * (size_t)n);
            if (!X || !G || !L || !T) {
                CHECK(0, "out of memory");
                return;
            }
            fill(X, (long)n * n, &seed, 0);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    double g = 0.0;
                    for (int k = 0; k < n / 2 + 1; k++) /* rank n/2 + 1 */
                        g += X[i * n + k] * X[j * n + k];
                    G[i * n + j] = g + (i == j ? (indef ? -2.385 : 0.385) : 0.0);
                }
            memcpy(L, G, sizeof(double) * (size_t)n * (size_t)n);
            memcpy(T, G, sizeof(double) * (size_t)n * (size_t)n);
            int pl = scm_linalg_cholesky(L, n), pt = chol_textbook(T, n);
            pivots += pl != pt;
            for (int i = 0; i < n; i++)
                for (int j = i + 1; j < n; j++)
                    upper += memcmp(&L[i * n + j], &G[i * n + j], sizeof(double)) != 0;
            for (int isa = SCM_LINALG_PLAIN; isa <= SCM_LINALG_AVX512; isa++) {
                /* every copy the CPU has: the same pivot, the same bits */
                double *Lc = X; /* X is spent */
                if (!scm_linalg_has((scm_linalg_isa)isa))
                    continue;
                memcpy(Lc, G, sizeof(double) * (size_t)n * (size_t)n);
                pivots += scm_linalg_cholesky_copy((scm_linalg_isa)isa, Lc, n) != pt;
                if (pt < 0)
                    bits += memcmp(Lc, T, sizeof(double) * (size_t)n * (size_t)n) != 0;
            }
            if (pt < 0) {
                bits += memcmp(L, T, sizeof(double) * (size_t)n * (size_t)n) != 0;
                double gmax = 0.0, err = 0.0;
                for (int i = 0; i < n; i++)
                    for (int j = 0; j <= i; j++) {
                        long double s = 0.0L;
                        for (int k = 0; k <= j; k++)
                            s += (long double)L[i * n + k] * L[j * n + k];
                        err = fmax(err, fabs((double)(s - G[i * n + j])));
                        gmax = fmax(gmax, fabs(G[i * n + j]));
                    }
                resid += !(err <= 4.0 * n * 0x1.0p-52 * gmax);
            }
            CHECK(indef || pt < 0, "n = %d: the positive definite case failed at %d", n, pt);
            cases++;
            free(X), free(G), free(L), free(T);
        }
    CHECK(bits == 0, "%ld of %ld factors differ from the textbook loop's bits", bits, cases);
    CHECK(pivots == 0, "%ld of %ld failing pivots differ from the textbook loop's", pivots, cases);
    CHECK(upper == 0, "%ld upper-triangle entries written", upper);
    CHECK(resid == 0, "%ld factors with L L^T off the input beyond round-off", resid);
}

/* scm_linalg_max_abs (eight lanes, no early exit) against the plain loop:
 * the same maximum for every length 0..13 and 100, a NaN anywhere gives
 * NaN, an infinity gives infinity. */
static void test_max_abs(void)
{
    unsigned long seed = 4242;
    long bad = 0;
    double x[100];
    for (int n = 0; n <= 100; n = n < 13 ? n + 1 : 100) {
        for (int spoil = -1; spoil < n; spoil++)
            for (int kind = 0; kind < 2; kind++) {
                fill(x, n, &seed, 1);
                if (spoil >= 0)
                    x[spoil] = kind ? -INFINITY : NAN;
                double want = 0.0;
                for (int i = 0; i < n; i++)
                    want = isnan(x[i]) || isnan(want) ? NAN : fmax(want, fabs(x[i]));
                double got = scm_linalg_max_abs(x, n);
                bad += isnan(want) ? !isnan(got) : got != want;
            }
        if (n == 100)
            break;
    }
    CHECK(bad == 0, "%ld cases of max_abs differ from the plain loop", bad);
}

int main(void)
{
    test_gemm();
    test_cholesky();
    test_max_abs();
    test_nvecops();
    return TEST_SUMMARY();
}
