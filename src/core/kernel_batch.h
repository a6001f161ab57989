/* kernel_batch.h (internal): the ReLU pair kernel for a row of pairs that
 * share their first argument, as flow.c's loss gradient needs them. */
#ifndef SCM_KERNEL_BATCH_H
#define SCM_KERNEL_BATCH_H

#include "core/linalg.h"
#include "scm/kernel.h"

/* For i < n: st[i] = scm_act_relu.pair(a, b[i], c[i], &out[i]), bit for bit
 * (the same status and the same four values).  Where the CPU has AVX-512,
 * or AVX2 and FMA, the pairs of the common case (a, b[i] in [2^-250, 2^250], |c[i]| <=
 * 2^250, ab - c^2 >= 0, not the cancelling branch) are formed side by side
 * in vector registers, the others one by one as before. */
void scm_kernel_relu_pairs(double a, int n, const double *b, const double *c, scm_pair *out,
                           scm_status *st);

/* scm_kernel_relu_pairs with the copy isa (for tests and benchmarks): the
 * plain loop, AVX2 with FMA four lanes at a time, or AVX-512 eight; the
 * widest the CPU has is scm_kernel_relu_pairs'.  Returns 0, or -1 when this
 * CPU or build lacks it (out and st untouched). */
int scm_kernel_relu_pairs_copy(scm_linalg_isa isa, double a, int n, const double *b,
                               const double *c, scm_pair *out, scm_status *st);

#endif
