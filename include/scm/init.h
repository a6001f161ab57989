/* init.h: initial conditions of a run (MATH.md section 4).
 *
 * Random: students w_k ~ N(0, sigma^2 I_d) and a fixed teacher with
 * W* W*^T / d = T.  The law of (Q, R) is sampled exactly without forming
 * d-dimensional vectors: by rotation invariance the teacher spans the first
 * M coordinates (w*_m = sqrt(d) (L e)_m with T = L L^T); a student splits
 * into a ~ N(0, I_M) on that span and a Gaussian part on the other d - M
 * coordinates, whose K x K Gram matrix is Wishart(d - M, I_K) and is drawn
 * by the Bartlett decomposition (directly as vectors when d - M < K).
 * Same (model, d, sigma, seed) give bit-identical (Q, R).
 *
 * The initialisation law (config key init.law; docs/map.md):
 *   gaussian        the above, in any dimension d >= M (the default);
 *   xavier          the weight-space convention of the published
 *                   experiments: d = M and, in their parameterisation
 *                   (pre-activation w . x), w ~ N(0, I / d), i.e. in ours
 *                   (w . x / sqrt d) w ~ N(0, sigma^2 I) with sigma = 1: the
 *                   Gaussian law at d = M (the same draws as "gaussian" with
 *                   init.d = M);
 *   xavier_uniform  its uniform variant: d = M and every coordinate of w
 *                   uniform on [-sqrt 3, sqrt 3] sigma (variance sigma^2),
 *                   teachers along the coordinate axes when T is diagonal
 *                   (w*_m = sqrt(d T_mm) e_m, else sqrt(d) times the rows of
 *                   L with L L^T = T).  Not rotation invariant: sampled as
 *                   actual d-dimensional vectors, exactly, at any d.
 * init.scale multiplies the students of every law (a small-scale start). */
#ifndef SCM_INIT_H
#define SCM_INIT_H

#include "scm/model.h"

/* Fill Q (K x K) and R (K x M).  Requires d >= M, sigma > 0. */
scm_status scm_init_random(const scm_model *m, long d, double sigma, unsigned long seed,
                           double *Q, double *R, scm_error *err);

typedef enum {
    SCM_INIT_LAW_GAUSSIAN = 0,
    SCM_INIT_LAW_XAVIER,
    SCM_INIT_LAW_XAVIER_UNIFORM
} scm_init_law;

/* The law's config name ("gaussian", "xavier", "xavier_uniform"). */
const char *scm_init_law_name(scm_init_law law);
/* 0 and *law set when name is a law's name, else -1. */
int scm_init_law_find(const char *name, scm_init_law *law);
/* 1 when the law fixes d = M (the xavier laws). */
int scm_init_law_needs_d_eq_M(scm_init_law law);

/* Fill Q, R by the law: gaussian and xavier as scm_init_random (xavier
 * requires d = M); xavier_uniform as above (requires d = M).  Same
 * arguments give bit-identical (Q, R). */
scm_status scm_init_sample(const scm_model *m, scm_init_law law, long d, double sigma,
                           unsigned long seed, double *Q, double *R, scm_error *err);

/* Scale a state as if every student vector were multiplied by s:
 * Q <- s^2 Q, R <- s R. */
void scm_init_scale(const scm_model *m, double s, double *Q, double *R);

#endif
