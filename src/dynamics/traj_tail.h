/* traj_tail.h: the tail stage of scm_traj_run (traj.h, tail_eps): the
 * approach to a zero-loss minimum integrated in the variables (C, R - R_e),
 * C = Q - R T^-1 R^T, with the flow and the loss in binary128
 * (flow_ext.h).  Internal to src/dynamics. */
#ifndef SCM_TRAJ_TAIL_H
#define SCM_TRAJ_TAIL_H

#include "scm/traj.h"

/* tail_eps > 0 needs the gd rule with the model's v (no o->v0): SCM_EINVAL
 * naming tail_eps and the rule otherwise (scm_traj_run refuses the run). */
scm_status scm_traj_tail_check(const scm_rule *rule, const scm_traj_opts *o, scm_error *err);

/* Where the tail stage applies (1) at a state of the run: tail_eps > 0, the
 * gd rule, and for linear units nothing more (the closed form of
 * traj_tail_linear.c holds from any state: the stage starts after the
 * first step); else its loss eps below tail_eps, every student alive (no
 * dead one; ReLU: Q_kk >= 1e-2) and in the teachers' span up to
 * sqrt(tail_eps) (C_kk < sqrt(tail_eps)), and T invertible (checked by the
 * stage). */
int scm_traj_tail_applies(const scm_model *m, const scm_rule *rule, const scm_traj_opts *o,
                          const double *Q, const double *R, double eps, int n_dead);

/* The run's side: its output times and its record. */
typedef struct {
    double (*out_time)(void *user, int i); /* output time i */
    void (*record)(void *user, double t, double eps, const double *Q, const double *R);
    void *user;
} scm_traj_tail_io;

/* What the stage returns: the end of the run. */
typedef struct {
    scm_stop_reason stop;
    scm_error err;
    double t, eps, max_F; /* of the final state; eps >= 0 (eps_zeroed: its own was < 0) */
    double *Q, *R;        /* the final state (the caller's K x K, K x M arrays) */
    int next;             /* the next output time not recorded */
    long n_steps, n_rhs, n_jac;
    int eps_zeroed;
    double proj; /* the entry state's distance from realisable (C raised onto PSD) */
} scm_traj_tail_out;

/* Sets out->stop and returns 1 when eps_stop, grad_stop or t_max holds
 * (checked by both tails before each step). */
int scm_traj_tail_stopped(const scm_traj_opts *o, scm_traj_tail_out *out);

/* Integrate from (Q0, R0) at t0 (the run's state, its outputs recorded up
 * to t0 and next the first one after) to the end of the run: t_max, eps_stop
 * and grad_stop as the run's (eps the binary128 loss, max |dQ/dtau, dR/dtau|
 * from the binary128 flow), a step budget of steps_left.  A failure (T
 * singular, CVODE) ends it with stop SCM_STOP_FAILED and err; out->Q, R
 * then hold the last valid state. */
void scm_traj_tail_run(const scm_model *m, const scm_traj_opts *o, double t0, const double *Q0,
                       const double *R0, int next, long steps_left, const scm_traj_tail_io *io,
                       scm_traj_tail_out *out);

/* The same for linear units (called by scm_traj_tail_run): the state,
 * the loss rho / 2 and the flow in closed form from the entry
 * (traj_tail_linear.c derives it), evaluated at the output times and at
 * "steps" of 1 / (4 |v|^2) where the stopping tests are made (n_steps
 * counts them; no CVODE, n_rhs = n_jac = 0). */
void scm_traj_tail_linear_run(const scm_model *m, const scm_traj_opts *o, double t0,
                              const double *Q0, const double *R0, int next, long steps_left,
                              const scm_traj_tail_io *io, scm_traj_tail_out *out);

#endif
