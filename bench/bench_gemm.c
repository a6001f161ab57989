/* bench_gemm.c: GFlop/s of each copy of the dense product (core/linalg.h:
 * plain, AVX2, AVX-512, the ones this CPU has) at the shapes of the flow's
 * Jacobian-vector product, K x K x K and K x M x K, for (K, M) = (12, 10),
 * (22, 20), (42, 40), (102, 100); each copy's result checked against the
 * plain one bit for bit.  Each figure is the best of 7 batches of about
 * 0.05 s.  docs/map.md, section "Speed".
 *
 * Usage: bench_gemm.  Exit status 0, or 1 when a copy differs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/linalg.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void)
{
    static const int km[][2] = {{12, 10}, {22, 20}, {42, 40}, {102, 100}};
    static const char *name[3] = {"plain", "AVX2", "AVX-512"};
    int bad = 0;
    printf("%5s %5s %5s  %10s %10s %10s  (GFlop/s)\n", "m", "n", "k", name[0], name[1],
           name[2]);
    for (size_t s = 0; s < 2 * sizeof km / sizeof km[0]; s++) {
        const int K = km[s / 2][0], M = km[s / 2][1], m = K, n = s % 2 ? M : K, k = K;
        double *A = malloc(sizeof(double) * (size_t)(m * k));
        double *B = malloc(sizeof(double) * (size_t)(k * n));
        double *C0 = malloc(sizeof(double) * (size_t)(m * n));
        double *C = malloc(sizeof(double) * (size_t)(m * n));
        if (!A || !B || !C0 || !C) {
            fprintf(stderr, "bench_gemm: out of memory\n");
            return 1;
        }
        unsigned long x = 12345;
        for (int i = 0; i < m * k; i++)
            A[i] = (double)((x = x * 6364136223846793005UL + 1442695040888963407UL) >> 11) * 0x1p-53 - 0.5;
        for (int i = 0; i < k * n; i++)
            B[i] = (double)((x = x * 6364136223846793005UL + 1442695040888963407UL) >> 11) * 0x1p-53 - 0.5;
        scm_linalg_gemm_copy(SCM_LINALG_PLAIN, m, n, k, A, B, C0);
        const double flops = 2.0 * m * n * k;
        const long reps = (long)(5e7 / flops) + 1;
        printf("%5d %5d %5d ", m, n, k);
        for (int isa = SCM_LINALG_PLAIN; isa <= SCM_LINALG_AVX512; isa++) {
            if (!scm_linalg_has((scm_linalg_isa)isa)) {
                printf(" %10s", "-");
                continue;
            }
            scm_linalg_gemm_copy((scm_linalg_isa)isa, m, n, k, A, B, C);
            if (memcmp(C, C0, sizeof(double) * (size_t)(m * n)) != 0) {
                fprintf(stderr, "bench_gemm: the %s copy differs at %d x %d x %d\n", name[isa],
                        m, n, k);
                bad = 1;
            }
            double best = 1e30;
            for (int t = 0; t < 7; t++) {
                const double t0 = now();
                for (long r = 0; r < reps; r++)
                    scm_linalg_gemm_copy((scm_linalg_isa)isa, m, n, k, A, B, C);
                const double dt = now() - t0;
                best = dt < best ? dt : best;
            }
            printf(" %10.1f", flops * (double)reps / best * 1e-9);
        }
        printf("\n");
        free(A), free(B), free(C0), free(C);
    }
    return bad;
}
