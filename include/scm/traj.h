/* traj.h: integrating a training rule with SUNDIALS CVODE.
 *
 * A run starts at tau = 0 from (Q0, R0) and ends at the first of: t_max;
 * eps < eps_stop (the global minimum, up to the threshold); max |dy/dtau| <
 * grad_stop (a fixed point); the step budget.  It fails (stop ==
 * SCM_STOP_FAILED, err says why) on a CVODE error, a NaN, a state whose Gram
 * matrix [[Q, R], [R^T, T]] is no longer PSD beyond round-off, or (with
 * dead_fail) a dead ReLU neuron (Q_kk below dead_tol).  Without dead_fail a
 * neuron that dies is recorded (res->dead), set exactly to zero (its row of
 * Q and R), and the run goes on: with the subgradient g'(0) = 0 a dead
 * neuron stays dead and the others' flow is well defined, which is how a
 * spare student of an over-parameterised network ends.  The state is recorded at t = 0 and at
 * log-spaced times from t_first to t_max, plus the final state; every
 * recorded point has a finite loss, or the run fails naming the point. */
#ifndef SCM_TRAJ_H
#define SCM_TRAJ_H

#include "scm/rule.h"

typedef enum { SCM_METHOD_BDF, SCM_METHOD_ADAMS } scm_method;
/* AUTO: dense up to SCM_LINSOL_AUTO_DENSE_MAX state components, GMRES above
 * (the dense LU is unblocked, O(n^3): with CVODE's own it took ~80% of a
 * dense run at K = M = 17, 442 components, and matrix-free GMRES was ~15x
 * faster; scm_traj_run's dense solver is linalg.h's LU, the same algorithm
 * ~4x faster at n = 30). */
typedef enum { SCM_LINSOL_AUTO, SCM_LINSOL_DENSE, SCM_LINSOL_GMRES } scm_linsol;
#define SCM_LINSOL_AUTO_DENSE_MAX 120

typedef struct {
    scm_method method;
    scm_linsol linsol;
    double rtol, atol;
    double t_max;     /* final time */
    double t_first;   /* first log-spaced output time (> 0) */
    int n_out;        /* number of log-spaced output times (>= 1) */
    double eps_stop;  /* stop when eps < eps_stop; 0 disables */
    double grad_stop; /* stop when max |dy/dtau| < grad_stop; 0 disables
                       * (then dy/dtau is not evaluated after each step:
                       * only the loss, if eps_stop needs it) */
    long max_steps;   /* budget of internal CVODE steps */
    double psd_tol;   /* relative round-off allowed in the PSD check */
    double dead_tol;  /* a ReLU neuron with Q_kk < dead_tol is dead */
    int dead_fail;    /* a neuron dying ends the run as a failure */
    int record;       /* record the trajectory (else only the final state) */
    /* Two-stage accuracy (loose_until > 0): integrate with loose_rtol and
     * loose_atol until max |dy/dtau| < loose_until, then with rtol, atol;
     * the stopping tests (eps_stop, grad_stop) apply in the second stage
     * only.  The plateau escapes, most of a run, need no tight tolerance;
     * the final approach to the fixed point does.  The first stage's error
     * stays in the state: from then on the PSD check allows
     * psd_tol loose_rtol / rtol, and a ReLU student with Q_kk below
     * 100 loose_atol is dead; a start with Q_kk(0) < 1e4 loose_atol is
     * refused (SCM_EINVAL).  A step shorter than 1e-10 max(1, t),
     * in the first stage or after it, is a stall, and the run fails
     * (res->loose_failed). */
    double loose_rtol, loose_atol, loose_until;
    scm_rule_params rule_params; /* the rule's parameters (rule.h) */
    /* Initial second layer of a rule that trains v (K entries; NULL: the
     * model's v).  Kept by pointer. */
    const double *v0;
    /* With GMRES, the Jacobian-vector products: 0 (default): CVODE's
     * difference quotients, one rhs evaluation per Krylov iteration; 1: the
     * rule's analytic product (scm_rule.jtimes) at each Newton iterate; 2:
     * that product at a point kept for 5 steps (CVODE's modified Newton, as
     * with a dense Jacobian): its linearisation, the kernels' second
     * derivatives, is made once per point and each product then costs a few
     * K x K matrix products (scm compare uses 2; docs/sweeps.md).  A rule
     * without jtimes uses 0.  Config key integrator.jtimes: "dq",
     * "analytic", "lagged". */
    int analytic_jv;
    /* With GMRES: the largest Krylov dimension per linear solve (default
     * 5, CVODE's), and the linear solves' tolerance factor (default 0.05,
     * CVODE's; a fraction of the Newton iteration's tolerance).  Where GMRES
     * stops at its dimension short of the tolerance, the Newton iteration
     * may fail and CVODE cut the step: at K = 18, M = 17, 20 instead of 5
     * took 13% fewer steps (scm compare uses 20; docs/sweeps.md).  Config
     * keys integrator.krylov_dim, eps_lin. */
    int krylov_dim;
    double eps_lin;
    /* With GMRES, a preconditioner: 0 (default): none; 1: the rule's
     * (scm_rule.psetup/psolve; for gd the Newton matrix with S frozen,
     * solved in S's eigenbasis, scm_flow_precond_setup), built where CVODE
     * would evaluate a Jacobian (with analytic_jv 2 at the lagged point).
     * Applied on the right.  Where it cannot be built (a kernel or
     * eigensolver failure) GMRES runs unpreconditioned until the next
     * set-up.  A rule without one uses 0.  Slower than none in scm
     * compare's sweeps (docs/sweeps.md): for experiments.  Config key
     * integrator.precond: "none", "frozen_s". */
    int precond;
    /* 1: SUNDIALS's own serial vector operations; 0 (default): scm's
     * vectorisable ones (src/nvecops.c), the same up to the order of the
     * sums in dot products and norms.  For benchmarks against the stock. */
    int sundials_vec_ops;
    /* Early stop (NULL: off).  Called after each step at which the loss and
     * max |dy/dtau| are the flow's at the state (every step of the second
     * stage, and of the loose stage once the estimate of max |dy/dtau| is
     * below max(2 loose_until, certify_from)), with that time and state; a return of
     * 1 ends the run with SCM_STOP_CERTIFIED (the caller has proved where the
     * run converges, e.g. scm_basin_certify, basin.h), 0 goes on.  It runs
     * on the calling thread. */
    int (*certify)(void *user, double t, const double *Q, const double *R, double eps,
                   double max_F);
    void *certify_user;
    double certify_from; /* >= 0; 0: only where the flow is evaluated anyway */
    /* Tail stage (tail_eps > 0; default 0, off): once a gd run's loss is
     * below tail_eps with every student alive (ReLU: Q_kk >= 1e-2) and in the
     * teachers' span up to sqrt(tail_eps) (C = Q - R T^-1 R^T, C_kk below
     * it), the rest of the run integrates (C, R - R_e), R_e the R of that
     * state, with relative tolerance tail_rtol (default 1e-11; absolute 1e-24), the flow
     * and every loss in binary128 (flow_ext.h), ending at the same tests
     * (eps_stop on that loss).  It ends a loose stage.  Its reported losses
     * keep 1e-6 relative accuracy down to eps = 1e-12 where the state at
     * the entry was accurate (docs/sweeps.md, "Reported losses").  Linear
     * units (whose minima have C != 0) take a closed form instead, from the
     * first step on whatever the loss (traj_tail_linear.c).  A rule other
     * than gd, or gd training v, is refused (SCM_EINVAL naming tail_eps);
     * a singular T fails the run, naming it. */
    double tail_eps, tail_rtol;
} scm_traj_opts;

/* The defaults documented in the README. */
void scm_traj_opts_default(scm_traj_opts *o);

/* Validate options; names the offending field in err. */
scm_status scm_traj_opts_check(const scm_traj_opts *o, scm_error *err);

typedef enum {
    SCM_STOP_T_MAX,       /* reached t_max */
    SCM_STOP_EPS,         /* eps fell below eps_stop */
    SCM_STOP_FIXED_POINT, /* max |dy/dtau| fell below grad_stop */
    SCM_STOP_MAX_STEPS,   /* the step budget ran out */
    SCM_STOP_FAILED,      /* numerical failure: see err */
    SCM_STOP_CERTIFIED    /* opts.certify proved where the run converges */
} scm_stop_reason;

/* "t_max", "eps_threshold", "fixed_point", "max_steps", "failed",
 * "certified". */
const char *scm_stop_reason_str(scm_stop_reason r);

typedef struct {
    scm_stop_reason stop;
    scm_error err;     /* the reason when stop == SCM_STOP_FAILED */
    double t, eps;     /* final time and loss (NaN if unknown) */
    double max_F;      /* max |dy/dtau| at the final state */
    double *Q, *R;     /* final state, K x K and K x M */
    double *v;         /* final second layer (K; the model's when not trained) */
    long n_out;        /* recorded points (including the final one) */
    double *out_t, *out_eps, *out_Q, *out_R, *out_v; /* n_out entries / matrices */
    int *dead;         /* K flags: the student died during the run */
    int n_dead;        /* how many did */
    long n_steps, n_rhs, n_jac_evals, n_lin_iters; /* n_jac_evals: dense Jacobians,
                                                      or linearisations of analytic_jv 2 */
    /* The reported losses (eps, out_eps) are never below 0.  Each is the
     * state's own loss where that is >= 0.  A negative loss, which no
     * realisable state has, comes from a state beyond the PSD boundary by
     * integration error near a zero-loss minimum: it is reported as 0, the
     * loss of the global minimum (the closest value a realisable state can
     * have: the loss's error is that of the state, and its sign is known).
     * Where the state has no loss at all (an interpolated output point
     * beyond the Cauchy-Schwarz bounds) the loss of the realisable state
     * nearest it is reported (scm_flow_loss_realisable, flow.h).
     * eps_proj: how far the final state is from realisable (the most
     * negative eigenvalue of Q - R T^+ R^T, negated; 0 for a state whose
     * own loss is reported); eps_zeroed: its own loss was negative and
     * 0 is reported; max_proj: the largest such distance over the recorded
     * points and the final state.  The states themselves (Q, R, out_Q,
     * out_R) are the integrated ones.  The eps_stop test uses the state's
     * own loss.  Accuracy: docs/sweeps.md, "Reported losses". */
    int eps_zeroed;
    double eps_proj, max_proj;
    double tail_t;     /* when the tail stage began (NaN: not entered) */
    long tail_steps;   /* steps of the tail stage (in n_steps too) */
    int loose_failed;  /* stop == SCM_STOP_FAILED in the loose stage (its error
                          crossing the PSD boundary near parallel or vanishing
                          students, CVODE failing there, or its steps collapsing),
                          or the steps collapsing after it (on a state that
                          carries its error): a run with a tighter loose stage
                          may not fail */
} scm_traj_result;

/* Integrate rule from (Q0, R0) (and o->v0 when the rule trains v); a
 * manifold rule first retracts the start onto its manifold (rule.h), so
 * res->Q, res->R at t = 0 are the retracted state.  The return value is SCM_OK whenever the
 * result is meaningful, including a failed run (res->stop == SCM_STOP_FAILED,
 * res->err filled, res->Q/R the last valid state); it is an error (with err
 * filled) only for bad arguments or no memory, and res is then empty.
 * Free with scm_traj_result_free. */
scm_status scm_traj_run(const scm_model *m, const scm_rule *rule, const double *Q0,
                        const double *R0, const scm_traj_opts *o, scm_traj_result *res,
                        scm_error *err);
void scm_traj_result_free(scm_traj_result *res);

#endif
