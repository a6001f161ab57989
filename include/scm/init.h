/* init.h: initial conditions of a run (MATH.md section 4).
 *
 * Random: students w_k ~ N(0, sigma^2 I_d) and a fixed teacher with
 * W* W*^T / d = T.  The law of (Q, R) is sampled exactly without forming
 * d-dimensional vectors: by rotation invariance the teacher spans the first
 * M coordinates (w*_m = sqrt(d) (L e)_m with T = L L^T); a student splits
 * into a ~ N(0, I_M) on that span and a Gaussian part on the other d - M
 * coordinates, whose K x K Gram matrix is Wishart(d - M, I_K) and is drawn
 * by the Bartlett decomposition (directly as vectors when d - M < K).
 * Same (model, d, sigma, seed) give bit-identical (Q, R). */
#ifndef SCM_INIT_H
#define SCM_INIT_H

#include "scm/model.h"

/* Fill Q (K x K) and R (K x M).  Requires d >= M, sigma > 0. */
scm_status scm_init_random(const scm_model *m, long d, double sigma, unsigned long seed,
                           double *Q, double *R, scm_error *err);

/* Scale a state as if every student vector were multiplied by s:
 * Q <- s^2 Q, R <- s R. */
void scm_init_scale(const scm_model *m, double s, double *Q, double *R);

#endif
