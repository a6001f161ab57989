/* simulate.h: a real two-layer network of dimension d trained in weight
 * space, to check the order-parameter ODEs against (docs/simulate.md).
 *
 * Online mode: one-pass SGD, one fresh sample x ~ N(0, I_d) per step,
 *   w_k <- w_k - (eta / sqrt d) delta_k x,   delta_k = (phi - y) v_k g'(lambda_k),
 *   v_k <- v_k - (eta_v / d) (phi - y) g(lambda_k)      (second layer, when trained),
 * with y = phi*(x) + sqrt(noise) xi the label.  Batch mode: full-batch GD on
 * a fixed set of n samples drawn once, the same steps with the per-sample
 * terms averaged over the set.  Either way a step advances the time
 * tau = eta t / d by eta / d, so that the mean step is the population
 * gradient flow dW/dtau = -d grad_W eps of MATH.md section 3.
 *
 * Constraints (MATH.md section 8) are kept by a retraction after every step:
 * SPHERE rescales each row to ||w_k||^2 = d (normalised GD); STIEFEL applies
 * the polar retraction W <- sqrt(d) (W W^T)^(-1/2) W, so W W^T = d I
 * (orthonormalised GD).  The initial state is retracted the same way.
 *
 * Start: W, W* are realised from (Q0, R0, T) by scm_weights_realise.  The
 * law of online SGD (and of batch GD on Gaussian samples) is invariant under
 * rotations of R^d, so the law of the whole trajectory of (Q, R, v) depends
 * on the initial overlaps only: realising given overlaps is as good as
 * drawing the vectors themselves, and starts the simulation exactly where
 * `scm run` starts the ODE for the same config and seed.
 *
 * Samples come from GSL's taus2 generator (ziggurat Gaussians) seeded with
 * opts.seed: the same options give bit-identical results. */
#ifndef SCM_SIMULATE_H
#define SCM_SIMULATE_H

#include "scm/model.h"

typedef enum { SCM_SIM_ONLINE, SCM_SIM_BATCH } scm_sim_mode;
typedef enum { SCM_SIM_FREE, SCM_SIM_SPHERE, SCM_SIM_STIEFEL } scm_sim_constraint;

/* Largest batch sample set n d (doubles) accepted: 800 MB. */
#define SCM_SIM_BATCH_MAX 100000000L

typedef struct {
    scm_sim_mode mode;
    long d;                        /* dimension (>= K + M) */
    long n;                        /* batch: number of samples (>= 1) */
    double eta;                    /* learning rate of the first layer (> 0) */
    double eta_v_ratio;            /* eta_v / eta; 0: second layer fixed */
    double noise;                  /* label-noise variance (>= 0) */
    scm_sim_constraint constraint; /* retraction after every step */
    unsigned long seed;            /* seed of the samples */
} scm_sim_opts;

/* Online, d = 1000, n = 0, eta = 0.05, first layer only, no noise, no
 * constraint, seed 1. */
void scm_sim_opts_default(scm_sim_opts *o);

/* Validate options for model m; the message names the field. */
scm_status scm_sim_opts_check(const scm_sim_opts *o, const scm_model *m, scm_error *err);

typedef struct scm_sim scm_sim;

/* A network realising (Q0, R0) with the model's T and v, retracted onto the
 * constraint, at tau = 0 (in batch mode the sample set is drawn here).
 * NULL with err filled on bad options, a non-PSD state (SCM_ENOTPSD), a
 * constraint the start cannot be retracted onto (a zero row, a rank-deficient
 * W for STIEFEL: SCM_ESINGULAR) or no memory.  The simulation keeps its own
 * copy of the model. */
scm_sim *scm_sim_alloc(const scm_model *m, const scm_sim_opts *o, const double *Q0,
                       const double *R0, scm_error *err);
void scm_sim_free(scm_sim *s);

/* Train until step round(t d / eta) (no step if already there or beyond).
 * SCM_ENAN if the weights or the labels stop being finite, SCM_ESINGULAR if
 * a retraction fails; the simulation is then unusable. */
scm_status scm_sim_advance(scm_sim *s, double t, scm_error *err);

/* Time reached (steps * eta / d) and steps taken. */
double scm_sim_time(const scm_sim *s);
long scm_sim_steps(const scm_sim *s);

/* Current overlaps Q (K x K), R (K x M), second layer v (K; may be NULL) and
 * population loss eps(Q, R, v) (exact, scm_flow_loss; may be NULL).  Status
 * as scm_flow_loss. */
scm_status scm_sim_state(scm_sim *s, double *Q, double *R, double *v, double *eps,
                         scm_error *err);

#endif
