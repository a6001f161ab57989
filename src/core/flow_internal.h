/* flow_internal.h (internal): what flow_realisable.c, flow_i3.c and the
 * tests share with flow.c. */
#ifndef SCM_FLOW_INTERNAL_H
#define SCM_FLOW_INTERNAL_H

#include "core/linalg.h"
#include "scm/flow.h"
#include "scm/model.h"

/* 1 for a dead ReLU student k (Q_kk = 0 exactly, its row and R row zero),
 * 0 for a live one, -1 for Q_kk = 0 with a non-zero overlap (flow.c). */
int scm_flow_student_dead(const scm_model *m, const double *Q, const double *R, int k);

/* The absolute slack of the Cauchy-Schwarz bound at Q (flow.c says why). */
double scm_flow_cs_slack(const scm_model *m, const double *Q);

/* c clamped onto +-sqrt(ab) when it exceeds it by at most tol. */
double scm_flow_clamp_cs(double a, double b, double c, double tol);

/* The second layer fl uses (the model's, or scm_flow_set_v's). */
const double *scm_flow_v(const scm_flow *fl);

/* The copy of the flow's linearisation (lin_dgrad) fl uses from now on
 * (for tests and benchmarks: every copy gives the same bits).  0, or -1
 * when the CPU lacks it (fl unchanged). */
int scm_flow_set_isa(scm_flow *fl, scm_linalg_isa isa);

#endif
