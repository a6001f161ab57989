/* model.h: a teacher-student pair of soft committee machines, described by
 * what the population quantities depend on (MATH.md section 1): the sizes K
 * (students) and M (teachers), the activation, the teacher overlap T and the
 * second-layer weights v (students) and v* (teachers).
 *
 * Matrices are dense, row-major: T is M x M, Q is K x K, R is K x M. */
#ifndef SCM_MODEL_H
#define SCM_MODEL_H

#include "scm/kernel.h"
#include "scm/status.h"

typedef struct scm_model {
    int K, M;
    const scm_activation *act;
    double *T;  /* M x M, symmetric PSD */
    double *v;  /* K student second-layer weights */
    double *vs; /* M teacher second-layer weights */
} scm_model;

/* Allocate a model.  T == NULL means T = I_M; v == NULL or vs == NULL mean
 * all ones.  T must be symmetric (to 1e-12 relative) and PSD: a Cholesky
 * factorisation of T + 1e-12 max|T| I is attempted, and failure gives
 * SCM_ENOTPSD with the offending pivot in err.  The model owns copies of
 * its arrays.  Returns NULL on failure with err filled. */
scm_model *scm_model_alloc(int K, int M, const scm_activation *act, const double *T,
                           const double *v, const double *vs, scm_error *err);
void scm_model_free(scm_model *m);

/* Check that the joint Gram matrix [[T, R^T], [R, Q]] is PSD up to a
 * relative tolerance tol (round-off and integration error, e.g. 1e-6), by a
 * Cholesky attempt on the matrix shifted by tol * max diag, and that every
 * entry is finite.  Q must be symmetric. */
scm_status scm_model_check_state(const scm_model *m, const double *Q, const double *R,
                                 double tol, scm_error *err);

#endif
