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

#include <cjson/cJSON.h>

#include "scm/config.h"
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

/* ---- the study of `scm simulate`: several seeds, network beside ODE ----
 *
 * For each seed s = 0..seeds-1 the config's random initial state is drawn
 * with init seed config.seed + s, realised as a network (scm_sim_alloc) and
 * the ODE of the config's rule (scm_traj_run, recording) is integrated from
 * the realised overlaps; the network is then trained to each recorded time
 * of the ODE.  Seeds run on threads; the results do not depend on how many:
 * every seed has its own generators.  Nothing here prints or exits. */

/* Fields of scm_simulate_study_opts given on the command line: they
 * override the config's "simulate" section (bits of .given). */
#define SCM_SIMULATE_GIVEN_D 1u
#define SCM_SIMULATE_GIVEN_SEEDS 2u
#define SCM_SIMULATE_GIVEN_MODE 4u
#define SCM_SIMULATE_GIVEN_N 8u
#define SCM_SIMULATE_GIVEN_ETA 16u
#define SCM_SIMULATE_GIVEN_T_MAX 32u
/* Most seeds of a study. */
#define SCM_SIMULATE_MAX_SEEDS 1000

typedef struct {
    scm_sim_opts sim; /* mode, d, n, eta, eta_v_ratio, noise, constraint (seed: per seed) */
    int seeds;        /* number of seeds (4) */
    double t_max;     /* end of the ODE and of the simulation (10) */
    int threads;      /* threads the seeds run on (1) */
    unsigned given;   /* SCM_SIMULATE_GIVEN_* bits (0) */
    /* progress (NULL: none): called once per finished seed, done of total,
     * one call at a time whatever the threads; taken as is from cli */
    void (*progress)(void *ctx, int done, int total);
    void *progress_ctx;
} scm_simulate_study_opts;

/* scm_sim_opts_default, 4 seeds, t_max 10, 1 thread, nothing given. */
void scm_simulate_study_opts_default(scm_simulate_study_opts *o);

/* The options a command line (or the Python call) gives into o, each only
 * when given, and marked in o->given: d, seeds, n when >= 1, mode 0
 * (online) or 1 (batch; -1: not given), eta and t_max when > 0. */
void scm_simulate_study_opts_given(scm_simulate_study_opts *o, long d, int seeds, int mode,
                                   long n, double eta, double t_max);

/* A study ready to run: the config (its "simulate" section taken out), its
 * model and the resolved options.  Owns config and model. */
typedef struct {
    scm_config *config;
    scm_model *model;
    scm_simulate_study_opts opts;
} scm_simulate_study;

/* Set up a study from the JSON text (len bytes) of a config of `scm run`
 * with an optional "simulate" section (keys d, seeds, mode, n, eta, t_max),
 * path naming it in messages.  sets[0..nsets-1] are "key.path=value"
 * overrides: "simulate.KEY=VALUE" ones go to the section, the others to the
 * config.  The fields of cli marked in cli->given override the section;
 * cli->threads is taken as is.  Then: eta defaults to 0.05 (online) or
 * 0.02 d (batch); the config's rule gives the constraint and the trained
 * layers (docs/simulate.md, section 1; rule sgd also eta, eta_v_ratio and
 * noise); a random init is drawn in dimension d (config.d and the used
 * JSON's init.d are set to d).  On success s owns a config and a model
 * (scm_simulate_study_free).  SCM_EINVAL with the message the command prints
 * (naming path and key) for text that is not JSON, a bad section, a bad
 * config, a rule the simulator has no form of, batch mode without n,
 * invalid options for the model or t_first >= t_max; SCM_ENOMEM.  On
 * failure s holds nothing. */
scm_status scm_simulate_study_setup(const char *text, size_t len, const char *path,
                                    const char *const *sets, int nsets,
                                    const scm_simulate_study_opts *cli, scm_simulate_study *s,
                                    scm_error *err);
void scm_simulate_study_free(scm_simulate_study *s);

/* The sample stream's seed of init seed s: a splitmix64 step, so that the
 * samples are not the numbers that drew the initial state. */
unsigned long scm_simulate_sample_seed(unsigned long s);

/* One seed's records at the n output times of its ODE: network (sim) and
 * ODE side by side; Q, R, v row-major per time (n K^2, n K M, n K). */
typedef struct {
    unsigned long init_seed;
    long n;                /* times both sides reached */
    double *t, *t_sim;     /* the ODE's output times; the network's time there */
    double *eps_sim, *Q_sim, *R_sim, *v_sim;
    double *eps_ode, *Q_ode, *R_ode, *v_ode;
    scm_stop_reason ode_stop;
    char error[600];       /* empty when both sides ran to the end */
    double secs_sim, secs_ode; /* wall-clock seconds of each side */
    long steps;            /* the network's SGD/GD steps */
} scm_simulate_seed;

/* Over the seeds that reached output time i (seeds of them, >= 1): mean and
 * standard error (NaN for one seed) of eps_sim - eps_ode, and the root mean
 * square over seeds of the largest deviation of an entry of Q, R or v. */
typedef struct {
    double t; /* output time i of seed 0, NaN if seed 0 did not reach it */
    int seeds;
    double eps_diff_mean, eps_diff_se, state_dev_rms;
} scm_simulate_stat;

typedef struct {
    int K, M, seeds;
    scm_simulate_seed *runs; /* seeds entries, in seed order */
    long n_stats;            /* the longest run's n */
    scm_simulate_stat *stats;
    int failed;              /* a seed's run ended early (its error says why) */
    double secs_sim, secs_ode; /* summed over the seeds */
} scm_simulate_result;

/* Run every seed of s on s->opts.threads threads into res (owned by the
 * caller: scm_simulate_result_free, also after a failure).  A numerical
 * failure of either side of a seed is not an error: it is recorded in that
 * seed's error, its records stop there and res->failed is set.  Errors:
 * SCM_ENOMEM ("out of memory"); otherwise the first failing seed's status
 * (bad initial state, a start the constraint cannot be retracted onto, the
 * ODE unable to start) with a message "seed N: ...". */
scm_status scm_simulate_study_run(const scm_simulate_study *s, scm_simulate_result *res,
                                  scm_error *err);
void scm_simulate_result_free(scm_simulate_result *res);

/* The result file of `scm simulate` (version, status, config used, the
 * resolved parameters, each seed's trajectories, the statistics); NULL on
 * no memory.  The caller frees it (cJSON_Delete). */
cJSON *scm_simulate_study_json(const scm_simulate_study *s, const scm_simulate_result *res);

/* The CSV of `scm simulate`: a header, then per seed and output time a
 * "sim" and an "ode" row (seed, source, t, eps, upper triangle of Q, R row
 * by row, v; %.17g).  NUL-terminated, *len bytes; NULL on no memory.  The
 * caller frees it. */
char *scm_simulate_study_csv(const scm_simulate_study *s, const scm_simulate_result *res,
                             size_t *len);

/* The files a study writes for prefix (simulate_study_out.c): PREFIX.json,
 * PREFIX.csv and PREFIX.png into paths[0], [1], [2], each malloc'ed (the
 * caller frees them); SCM_ENOMEM with every entry NULL. */
scm_status scm_simulate_study_paths(const char *prefix, char *paths[3], scm_error *err);

#endif
