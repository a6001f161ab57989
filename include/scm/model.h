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

/* Alignment of the students: the one definition of "anti-aligned" that the
 * fixed-point classification, the sweeps, compare and the CLI share
 * (MATH.md section 5: k1 counts the anti-aligned students).
 *
 * Students are paired with teachers one to one, greedily in decreasing
 * |cosine| c_km = R_km / sqrt(Q_kk T_mm) (ties: lower k, then lower m):
 * the pair of largest |c| among the unpaired students and teachers is made
 * first.  At a specialised fixed point this is the pairing of the block
 * ansatz (checked over the whole plateau table).  Then student k is
 * - SCM_ALIGN_DEAD when Q_kk <= dead_q (or Q_kk is not a number);
 * - SCM_ALIGN_UNPAIRED when every teacher went to another student (an
 *   extra student of an over-parameterised network);
 * - SCM_ALIGN_ANTI when the cosine with its partner is below
 *   -SCM_ALIGN_COS_TOL, SCM_ALIGN_ALIGNED when above +SCM_ALIGN_COS_TOL,
 *   SCM_ALIGN_NONE otherwise.
 * The tolerance is on the cosine, i.e. relative to the overlap scale
 * sqrt(Q_kk T_mm): a round-off-sized overlap (-1e-16 with a teacher the
 * student is orthogonal to) never counts as anti-aligned, and since the
 * pairing prefers the teacher a student is parallel to, a student parallel
 * to another teacher of its group is aligned. */
#define SCM_ALIGN_COS_TOL 1e-6
typedef enum {
    SCM_ALIGN_DEAD,
    SCM_ALIGN_UNPAIRED,
    SCM_ALIGN_NONE,
    SCM_ALIGN_ALIGNED,
    SCM_ALIGN_ANTI
} scm_alignment;

/* Fill kind[k] and partner[k] (the paired teacher or -1) for the K
 * students; cosine (may be NULL) gets the cosine with the partner (0 when
 * unpaired).  SCM_ENOMEM is the only failure. */
scm_status scm_model_align(const scm_model *m, const double *Q, const double *R, double dead_q,
                           scm_alignment *kind, int *partner, double *cosine);

/* The number of anti-aligned students of (Q, R) in *n_anti. */
scm_status scm_model_count_anti(const scm_model *m, const double *Q, const double *R,
                                double dead_q, int *n_anti);

#endif
