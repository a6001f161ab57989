/* flow_internal.h (internal): what flow_realisable.c shares with flow.c. */
#ifndef SCM_FLOW_INTERNAL_H
#define SCM_FLOW_INTERNAL_H

#include "scm/model.h"

/* 1 for a dead ReLU student k (Q_kk = 0 exactly, its row and R row zero),
 * 0 for a live one, -1 for Q_kk = 0 with a non-zero overlap (flow.c). */
int scm_flow_student_dead(const scm_model *m, const double *Q, const double *R, int k);

#endif
