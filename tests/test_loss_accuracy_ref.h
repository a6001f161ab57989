/* test_loss_accuracy_ref.h: a reference for the loss along a gd trajectory,
 * computed another way than scm_traj_run (issue 25, item 5): RK4 with a
 * fixed step in long double (80-bit) in the variables (C, R), C = Q - R R^T
 * (so that C keeps its relative precision down to eps = 1e-12), the
 * bookkeeping of flow.c written out again, the loss summed in binary128
 * with its own kernels.  T = I, v = v* = 1, K (K + M) <= 128.  Shown
 * accurate by step halving (test_loss_accuracy.c, test_reference). */
#ifndef TEST_LOSS_ACCURACY_REF_H
#define TEST_LOSS_ACCURACY_REF_H

#include "scm/kernel.h"

typedef long double ld;

/* The loss and (FQ not NULL) the flow F_Q, F_R, and S = A + A^T (Sout not
 * NULL) at (Q, R), in long double. */
ld ref_flow(const scm_activation *act, int K, int M, const ld *Q, const ld *R, ld *FQ, ld *FR,
            ld *Sout);

/* RK4 in (C, R) from (Q0, R0) with step h, the loss at each time of ts
 * (increasing, nt of them) into eps. */
void ref_run(const scm_activation *act, int K, int M, const double *Q0, const double *R0,
             const double *ts, long nt, ld h, double *eps);

#endif
