/* test_kernel_batch.c: scm_kernel_relu_pairs and each of its copies
 * (scm_kernel_relu_pairs_copy: plain, AVX2, AVX-512; src/core/kernel_batch.h,
 * the ReLU pair kernel of a row of pairs in vector registers) against the
 * scalar kernel scm_act_relu.pair, bit for bit, status and all four values,
 * on rows of every length 1..70 (the chunk of 64 and the tail of 4) mixing
 * the common case with every edge of relu_pair: correlations near and at
 * +-1, beyond the Cauchy-Schwarz bound by round-off and by more, the
 * cancelling branch (c < 0, |rho| > 0.89), norms outside [2^-250, 2^250],
 * zero, negative, infinite and NaN arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernel_batch.h"
#include "testutil.h"

/* uniform in [0, 1) from a fixed LCG (no library state) */
static double uni(unsigned long *s)
{
    *s = *s * 6364136223846793005UL + 1442695040888963407UL;
    return (double)(*s >> 11) * 0x1.0p-53;
}

/* A second argument and an overlap for the first argument a: kind 0..11. */
static void pick(unsigned long *s, double a, int kind, double *b, double *c)
{
    double bb = 0.2 + 3.0 * uni(s), rho = 2.0 * uni(s) - 1.0;
    switch (kind) {
    case 0: case 1: case 2: case 3: break;                        /* the common case */
    case 4: rho = 1.0 - 1e-12 * uni(s); break;                    /* near +1 */
    case 5: rho = -1.0 + 1e-9 * uni(s); break;                    /* near -1: cancelling */
    case 6: rho = -0.9 - 0.0999 * uni(s); break;                  /* the cancelling branch */
    case 7: rho = (uni(s) < 0.5 ? 1.0 : -1.0) * (1.0 + 1e-9); break; /* clamped */
    case 8: rho = 1.5; break;                                      /* not PSD */
    case 9: bb = uni(s) < 0.5 ? 0x1p-300 : 0x1p300; break;         /* outside the safe range */
    case 10: bb = uni(s) < 0.5 ? 0.0 : -1.0; break;                /* dead or negative */
    default: bb = uni(s) < 0.5 ? INFINITY : NAN; break;
    }
    *b = bb;
    *c = rho * sqrt(a) * sqrt(fabs(bb));
    if (kind == 4 && uni(s) < 0.3)
        *c = sqrt(a * bb); /* on the bound */
    if (kind == 11 && uni(s) < 0.5) {
        *b = 1.0;
        *c = NAN;
    }
}

int main(void)
{
    static const double as[] = {1.0, 0.37, 2.385, 1e-3, 0x1p-260, 0x1p260, 0x1p700, 0.0, -1.0, NAN};
    unsigned long seed = 2026;
    const scm_linalg_isa isas[3] = {SCM_LINALG_PLAIN, SCM_LINALG_AVX2, SCM_LINALG_AVX512};
    long rows = 0, bad = 0, lanes = 0, common = 0, copies[4] = {0, 0, 0, 0};
    double b[70], c[70];
    scm_pair got[70], want[70];
    scm_status gst[70], wst[70];
    for (size_t ai = 0; ai < sizeof as / sizeof as[0]; ai++)
        for (int n = 1; n <= 70; n++)
            for (int mix = 0; mix < 3; mix++) {
                const double a = as[ai];
                for (int i = 0; i < n; i++)
                    pick(&seed, a, mix == 0 ? 0 : (int)(12 * uni(&seed)), &b[i], &c[i]);
                for (int i = 0; i < n; i++) {
                    wst[i] = scm_act_relu.pair(a, b[i], c[i], &want[i]);
                    common += wst[i] == SCM_OK;
                }
                for (int q = -1; q < 3; q++) { /* the widest copy, then each */
                    if (q < 0)
                        scm_kernel_relu_pairs(a, n, b, c, got, gst);
                    else if (scm_kernel_relu_pairs_copy(isas[q], a, n, b, c, got, gst))
                        continue;
                    bad += memcmp(got, want, sizeof(scm_pair) * (size_t)n) != 0 ||
                           memcmp(gst, wst, sizeof(scm_status) * (size_t)n) != 0;
                    rows++;
                    copies[q + 1]++;
                }
                lanes += n;
            }
    CHECK(bad == 0, "%ld of %ld rows differ from the scalar kernel", bad, rows);
    CHECK(copies[0] > 0 && copies[0] == copies[1], "the plain copy did not run every row");
    printf("# rows per copy: widest %ld, plain %ld, AVX2 %ld, AVX-512 %ld\n", copies[0],
           copies[1], copies[2], copies[3]);
    CHECK(common > lanes / 3 && common < lanes, "%ld of %ld lanes valid: the mix is off", common,
          lanes);
    return TEST_SUMMARY();
}
