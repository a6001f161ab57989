/* traj.c: CVODE driver for a training rule.  CVODE runs in one-step mode so
 * that the stopping rules (eps threshold, fixed point, validity of the
 * state) are checked after every internal step; the log-spaced output
 * points are interpolated with CVodeGetDky, so recording costs no extra
 * steps. */
#include "scm/traj.h"

#include <cvode/cvode.h>
#include <float.h>
#include <math.h>
#include <nvector/nvector_serial.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sundials/sundials_context.h>
#include <sunlinsol/sunlinsol_spgmr.h>
#include <sunmatrix/sunmatrix_dense.h>

#include "core/linalg.h"
#include "dynamics/nvecops.h"
#include "dynamics/traj_tail.h"

void scm_traj_result_free(scm_traj_result *res)
{
    if (!res)
        return;
    free(res->Q);
    free(res->R);
    free(res->out_t);
    free(res->out_eps);
    free(res->out_Q);
    free(res->out_R);
    free(res->v);
    free(res->out_v);
    free(res->dead);
    memset(res, 0, sizeof *res);
}

/* What the CVODE callbacks see. */
typedef struct {
    const scm_rule *rule;
    const scm_rule_params *params;
    scm_flow *fl;
    double *scratch;
    scm_status last_rhs_status; /* of the most recent failing call */
    char cvode_msg[256];        /* the last message CVODE wanted to print */
    const scm_model *m;
    const int *dead;  /* K flags: students frozen at zero */
    int n_dead;
    double *ytmp, *Qs, *Rs, *vs; /* room to clean a state of its dead rows */
    /* analytic_jv 2: the point of the current linearisation (cleaned), set
     * when CVODE asks for a fresh Jacobian; lin_dead: n_dead then */
    double *ylin;
    int have_lin, lin_dead;
    int lin_bad; /* the product failed there (near parallel neurons): use
                    difference quotients until the next set-up */
    long n_lin; /* linearisations taken */
    /* precond: the preconditioner was built (pc_dead: n_dead then) and
     * holds (not pc_bad) */
    int precond, have_pc, pc_dead, pc_bad;
    int lagged; /* analytic_jv 2 in use */
} traj_ctx;

/* Zero the rows (and columns) of the dead students. */
static void zero_dead(const scm_model *m, const int *dead, double *Q, double *R)
{
    const int K = m->K, M = m->M;
    for (int k = 0; k < K; k++)
        if (dead[k]) {
            for (int l = 0; l < K; l++)
                Q[k * K + l] = Q[l * K + k] = 0.0;
            for (int p = 0; p < M; p++)
                R[k * M + p] = 0.0;
        }
}

/* y with the dead students' entries set to zero, in place. */
static void clean_state(traj_ctx *c, double *y)
{
    if (!c->n_dead)
        return;
    c->rule->unpack(c->m, y, c->Qs, c->Rs, c->vs);
    zero_dead(c->m, c->dead, c->Qs, c->Rs);
    c->rule->pack(c->m, c->Qs, c->Rs, c->vs, y);
}

static int cvode_rhs(sunrealtype t, N_Vector y, N_Vector ydot, void *user)
{
    (void)t;
    traj_ctx *c = user;
    const double *yv = N_VGetArrayPointer(y);
    if (c->n_dead) {
        /* CVODE's difference quotients and Newton iterates may perturb the
         * frozen entries; the flow sees them at zero (and keeps them there). */
        memcpy(c->ytmp, yv, sizeof(double) * (size_t)c->rule->dim(c->m));
        clean_state(c, c->ytmp);
        yv = c->ytmp;
    }
    scm_status st = c->rule->rhs(c->params, c->fl, yv, N_VGetArrayPointer(ydot), NULL, c->scratch);
    if (st) {
        c->last_rhs_status = st;
        return 1; /* recoverable: CVODE retries with a smaller step */
    }
    return 0;
}

/* CVODE's linear-solver set-up, called when it would evaluate a Jacobian
 * (jok false: every LAGGED_JV_STEPS steps with analytic_jv 2, after a
 * convergence failure, at the start) or may reuse one (jok true).  It
 * moves the point of the linearisation used by cvode_jtimes (analytic_jv
 * 2), so that the Newton iteration is CVODE's modified Newton, and builds
 * the preconditioner there (precond).  Every 5 steps: CVODE's default for
 * a dense Jacobian, 51 steps (and set-ups every 20), took 12% more steps
 * at K = 18, M = 17 (convergence failures cutting the step), every step
 * 15% more rhs evaluations, 3 and 5 steps the fewest (docs/sweeps.md). */
#define LAGGED_JV_STEPS 5

static int cvode_lin_setup(sunrealtype t, N_Vector y, N_Vector fy, sunbooleantype jok,
                           sunbooleantype *jcur, sunrealtype gamma, void *user)
{
    (void)t, (void)fy, (void)gamma;
    traj_ctx *c = user;
    if (jok && (!c->lagged || (c->have_lin && c->lin_dead == c->n_dead)) &&
        (!c->precond || (c->have_pc && c->pc_dead == c->n_dead))) {
        *jcur = SUNFALSE;
        return 0;
    }
    memcpy(c->ylin, N_VGetArrayPointer(y), sizeof(double) * (size_t)c->rule->dim(c->m));
    clean_state(c, c->ylin);
    if (c->lagged) {
        c->have_lin = 1;
        c->lin_dead = c->n_dead;
        c->lin_bad = 0;
        c->n_lin++;
    }
    if (c->precond) {
        /* a failure (a kernel outside its domain at a Newton iterate, the
         * eigensolver) leaves GMRES unpreconditioned until the next set-up */
        c->pc_bad = c->rule->psetup(c->params, c->fl, c->ylin,
                                    c->scratch + c->rule->scratch(c->m)) != SCM_OK;
        c->have_pc = 1;
        c->pc_dead = c->n_dead;
    }
    *jcur = SUNTRUE;
    return 0;
}

/* precond: z = P^-1 r, or z = r where there is no preconditioner. */
static int cvode_psolve(sunrealtype t, N_Vector y, N_Vector fy, N_Vector r, N_Vector z,
                        sunrealtype gamma, sunrealtype delta, int lr, void *user)
{
    (void)t, (void)y, (void)fy, (void)delta, (void)lr;
    traj_ctx *c = user;
    if (!c->pc_bad && c->pc_dead == c->n_dead &&
        c->rule->psolve(c->params, c->fl, gamma, N_VGetArrayPointer(r), N_VGetArrayPointer(z),
                        c->scratch + c->rule->scratch(c->m)) == SCM_OK)
        return 0;
    N_VScale(1.0, r, z);
    return 0;
}

/* Jv with the rule's analytic product at y (dead rows cleaned as in
 * cvode_rhs), or at the lagged point of cvode_lin_setup (analytic_jv 2,
 * until a student dies); where that is not available (SCM_ESINGULAR near
 * parallel neurons) a forward difference of cvode_rhs at y, as CVODE's own. */
static int cvode_jtimes(N_Vector v, N_Vector Jv, sunrealtype t, N_Vector y, N_Vector fy,
                        void *user, N_Vector tmp)
{
    traj_ctx *c = user;
    const long n = c->rule->dim(c->m);
    const double *yv = N_VGetArrayPointer(y);
    const int lagged = c->have_lin && c->lin_dead == c->n_dead;
    if (lagged) {
        yv = c->ylin;
    } else if (c->n_dead) {
        memcpy(c->ytmp, yv, sizeof(double) * (size_t)n);
        clean_state(c, c->ytmp);
        yv = c->ytmp;
    }
    if (!(lagged && c->lin_bad)) {
        if (c->rule->jtimes(c->params, c->fl, yv, N_VGetArrayPointer(v), N_VGetArrayPointer(Jv),
                            c->scratch + c->rule->scratch(c->m)) == SCM_OK)
            return 0;
        c->lin_bad = lagged; /* no second linearisation at the same point */
    }
    double vmax = N_VMaxNorm(v), ymax = N_VMaxNorm(y);
    if (vmax == 0.0) {
        N_VConst(0.0, Jv);
        return 0;
    }
    double sig = sqrt(DBL_EPSILON) * fmax(1.0, ymax) / vmax;
    N_VLinearSum(1.0, y, sig, v, tmp);
    int r = cvode_rhs(t, tmp, Jv, user);
    if (r)
        return r;
    N_VLinearSum(1.0 / sig, Jv, -1.0 / sig, fy, Jv);
    return 0;
}

/* The library never prints: CVODE's messages are kept for the error. */
static void cvode_err(int code, const char *module, const char *function, char *msg, void *user)
{
    (void)code;
    traj_ctx *c = user;
    snprintf(c->cvode_msg, sizeof c->cvode_msg, "%s/%s: %s", module, function, msg);
}

/* Append one recorded point. */
static scm_status record_point(scm_traj_result *r, long cap, int K, int M, double t, double eps,
                               const double *Q, const double *R, const double *v)
{
    if (r->n_out >= cap)
        return SCM_EINVAL;
    long i = r->n_out++;
    r->out_t[i] = t;
    r->out_eps[i] = eps;
    memcpy(r->out_Q + i * K * K, Q, sizeof(double) * (size_t)K * (size_t)K);
    memcpy(r->out_R + i * K * M, R, sizeof(double) * (size_t)K * (size_t)M);
    memcpy(r->out_v + i * K, v, sizeof(double) * (size_t)K);
    return SCM_OK;
}

/* Add CVODE's counters (which CVodeReInit resets) to the result's. */
static void add_counters(void *cv, scm_traj_result *res)
{
    long v;
    if (CVodeGetNumSteps(cv, &v) == CV_SUCCESS)
        res->n_steps += v;
    if (CVodeGetNumRhsEvals(cv, &v) == CV_SUCCESS)
        res->n_rhs += v;
    if (CVodeGetNumJacEvals(cv, &v) == CV_SUCCESS)
        res->n_jac_evals += v;
    if (CVodeGetNumLinIters(cv, &v) == CV_SUCCESS)
        res->n_lin_iters += v;
}

/* A loose-stage step shorter than this times max(1, t) means the steps
 * have collapsed (a run in order takes steps of 1e-8 at the very start
 * and O(t / 100) later). */
#define LOOSE_STALL_STEP 1e-10

/* With a loose stage, a squared norm below this many loose_atol is dead. */
#define LOOSE_DEAD_FACTOR 100.0

/* The loss at an unpacked state (Q, R, v): the eps every rule's rhs
 * returns is the flow's loss there (rule.h), so this is that eps to the
 * bit, without the rest of the right-hand side (for the sgd rule the flow
 * is a fifth of it). */
static scm_status state_loss(const traj_ctx *c, const double *Q, const double *R,
                             const double *v, double *eps)
{
    scm_flow_set_v(c->fl, c->rule->trains_v ? v : NULL);
    scm_status st = scm_flow_loss(c->fl, Q, R, eps);
    scm_flow_set_v(c->fl, NULL);
    return st;
}

/* The loss that is reported (traj.h), >= 0: the state's own where that is
 * >= 0; 0, the global minimum's, where it is negative (*proj: how far the
 * state is from realisable); where the state has none (beyond the
 * Cauchy-Schwarz bounds), that of the realisable state nearest (Q, R, v)
 * (scm_flow_loss_realisable, *proj the projection's size).  *proj is also
 * kept in the result's max_proj. */
static scm_status reported_loss(const traj_ctx *c, scm_traj_result *res, const double *Q,
                                const double *R, const double *v, double *eps, double *proj)
{
    scm_flow_set_v(c->fl, c->rule->trains_v ? v : NULL);
    *proj = 0.0;
    scm_status st = scm_flow_loss(c->fl, Q, R, eps);
    if (st) {
        st = scm_flow_loss_realisable(c->fl, Q, R, eps, proj);
    } else if (*eps < 0.0) {
        *eps = 0.0;
        st = scm_flow_realisable(c->m, Q, R, c->Qs, proj); /* c->Qs: scratch */
    }
    scm_flow_set_v(c->fl, NULL);
    if (!st)
        res->max_proj = fmax(res->max_proj, *proj);
    return st;
}

/* The first dead ReLU neuron of Q, or -1. */
static int dead_neuron(const scm_model *m, const double *Q, double tol)
{
    if (m->act != &scm_act_relu)
        return -1;
    for (int k = 0; k < m->K; k++)
        if (!(Q[k * m->K + k] >= tol))
            return k;
    return -1;
}

/* One run of scm_traj_run, passed between its steps: the problem, the CVODE
 * objects, and the state of the loop over CVODE's internal steps. */
typedef struct {
    const scm_model *m;
    const scm_rule *rule;
    const scm_traj_opts *o;
    scm_traj_result *res;
    traj_ctx c; /* CVODE's user data: the run must not move */
    int K, M;
    long n, KK, KM, cap;
    SUNContext ctx;
    N_Vector y, yout, ydot;
    SUNMatrix J;
    SUNLinearSolver LS;
    void *cv;
    double *Q, *R;        /* the current state, unpacked */
    double *yv, *yo, *yd; /* the data of y, yout, ydot */
    int loose;            /* in the loose stage */
    double psd_run, dead_run; /* the PSD and dead tolerances of the run */
    double ratio;         /* of the log-spaced output times */
    int next;             /* the next output time to record */
    double t, eps, maxF;  /* of the last valid state */
    long steps;
    /* fresh: CVODE was (re)initialised, its interpolant holds no step yet;
     * have_eps: eps and maxF are the flow's at the current state. */
    int fresh, have_eps;
    int tailed; /* the tail stage ended the run (traj_tail.h) */
} traj_run;

/* Each step of the loop says whether the run goes on or has ended
 * (res->stop says how). */
enum { RUN_ON = 0, RUN_END = 1 };

/* The arrays of the run and of its result, and the CVODE vectors. */
static scm_status run_alloc(traj_run *r, scm_error *err)
{
    const scm_model *m = r->m;
    const int K = r->K;
    const long n = r->n, KK = r->KK, KM = r->KM, cap = r->cap;
    scm_traj_result *res = r->res;
    traj_ctx *c = &r->c;
    c->fl = scm_flow_alloc(m);
    c->scratch = malloc(sizeof(double) * 3 * (size_t)r->rule->scratch(m)); /* rhs, jtimes */
    r->Q = malloc(sizeof(double) * (size_t)KK);
    r->R = malloc(sizeof(double) * (size_t)KM);
    res->Q = malloc(sizeof(double) * (size_t)KK);
    res->R = malloc(sizeof(double) * (size_t)KM);
    res->out_t = malloc(sizeof(double) * (size_t)cap);
    res->out_eps = malloc(sizeof(double) * (size_t)cap);
    res->out_Q = malloc(sizeof(double) * (size_t)(cap * KK));
    res->out_R = malloc(sizeof(double) * (size_t)(cap * KM));
    res->dead = calloc((size_t)K, sizeof(int));
    res->v = malloc(sizeof(double) * (size_t)K);
    res->out_v = malloc(sizeof(double) * (size_t)(cap * K));
    c->vs = malloc(sizeof(double) * (size_t)K);
    c->ytmp = malloc(sizeof(double) * (size_t)n);
    c->ylin = malloc(sizeof(double) * (size_t)n);
    c->Qs = malloc(sizeof(double) * (size_t)KK);
    c->Rs = malloc(sizeof(double) * (size_t)KM);
    c->dead = res->dead;
    if (!res->dead || !res->v || !res->out_v || !c->vs || !c->ytmp || !c->ylin || !c->Qs ||
        !c->Rs || !c->fl || !c->scratch || !r->Q || !r->R || !res->Q || !res->R || !res->out_t ||
        !res->out_eps || !res->out_Q || !res->out_R)
        return scm_error_set(err, SCM_ENOMEM, "out of memory setting up the trajectory");
    if (SUNContext_Create(NULL, &r->ctx) != 0)
        return scm_error_set(err, SCM_ESOLVER, "SUNContext_Create failed");
    r->y = N_VNew_Serial(n, r->ctx);
    r->yout = N_VNew_Serial(n, r->ctx);
    r->ydot = N_VNew_Serial(n, r->ctx);
    if (!r->y || !r->yout || !r->ydot)
        return scm_error_set(err, SCM_ENOMEM, "out of memory allocating CVODE vectors");
    if (!r->o->sundials_vec_ops) {
        scm_nvecops_install(r->y); /* before the clones: CVODE's, SPGMR's */
        scm_nvecops_install(r->yout); /* CVodeGetDky's interpolation works in it */
        scm_nvecops_install(r->ydot);
    }
    r->yv = N_VGetArrayPointer(r->y);
    r->yo = N_VGetArrayPointer(r->yout);
    r->yd = N_VGetArrayPointer(r->ydot);
    return SCM_OK;
}

/* The initial state into y, its loss into r->eps and its flow into ydot,
 * and the tolerances of the run.  The initial state must be valid: that is
 * an input error, not a run. */
static scm_status run_start(traj_run *r, const double *Q0, const double *R0, scm_error *err)
{
    const scm_model *m = r->m;
    const scm_rule *rule = r->rule;
    const scm_traj_opts *o = r->o;
    scm_traj_result *res = r->res;
    const int K = r->K;
    scm_status st;
    if ((st = scm_rule_params_check(rule, &o->rule_params, err)) ||
        (st = scm_traj_tail_check(rule, o, err)))
        return st;
    st = scm_model_check_state(m, Q0, R0, o->psd_tol, err);
    if (st)
        return st;
    int dk = dead_neuron(m, Q0, o->dead_tol);
    if (dk >= 0)
        return scm_error_set(err, SCM_EDEAD, "initial student %d is a dead ReLU neuron (Q_kk = %g)",
                             dk, Q0[dk * K + dk]);
    /* a manifold rule starts on its manifold */
    memcpy(r->Q, Q0, sizeof(double) * (size_t)r->KK);
    memcpy(r->R, R0, sizeof(double) * (size_t)r->KM);
    if (rule->retract && (st = rule->retract(m, r->Q, r->R, err)))
        return st;
    memcpy(res->v, o->v0 ? o->v0 : m->v, sizeof(double) * (size_t)K);
    for (int k = 0; k < K; k++)
        if (!isfinite(res->v[k]))
            return scm_error_set(err, SCM_ENAN, "initial v[%d] is not finite", k);
    rule->pack(m, r->Q, r->R, res->v, r->yv);
    st = rule->rhs(&o->rule_params, r->c.fl, r->yv, r->yd, &r->eps, r->c.scratch);
    if (st) {
        scm_error_set(err, st, "the right-hand side fails at the initial state: %s",
                      scm_status_str(st));
        return st;
    }

    r->loose = o->loose_until > 0.0;
    /* After a loose stage the state carries that stage's error for good:
     * it is PSD only to that error, and a squared norm below
     * LOOSE_DEAD_FACTOR loose_atol (more than 1% error) is not resolved,
     * so such a ReLU student counts as dead (else the integrator stalls on
     * its direction, steps collapsing at Cauchy-Schwarz violations). */
    r->psd_run = r->loose ? fmin(0.1, o->psd_tol * o->loose_rtol / o->rtol) : o->psd_tol;
    r->dead_run = fmax(o->dead_tol, r->loose ? LOOSE_DEAD_FACTOR * o->loose_atol : 0.0);
    if (r->loose && m->act == &scm_act_relu)
        for (int k = 0; k < K; k++)
            if (Q0[k * K + k] < LOOSE_DEAD_FACTOR * r->dead_run)
                return scm_error_set(err, SCM_EINVAL,
                                     "integrator.loose_atol = %g cannot resolve student %d "
                                     "(Q_kk = %g at t = 0; a loose stage needs Q_kk >= %g): use "
                                     "a smaller loose_atol or loose_until 0",
                                     o->loose_atol, k, Q0[k * K + k],
                                     LOOSE_DEAD_FACTOR * r->dead_run);
    return SCM_OK;
}

/* CVODE's memory, its options and its linear solver. */
static scm_status run_cvode_setup(traj_run *r, scm_error *err)
{
    const scm_rule *rule = r->rule;
    const scm_traj_opts *o = r->o;
    traj_ctx *c = &r->c;
    const int loose = r->loose;
    r->cv = CVodeCreate(o->method == SCM_METHOD_ADAMS ? CV_ADAMS : CV_BDF, r->ctx);
    void *cv = r->cv;
    if (!cv || CVodeSetErrHandlerFn(cv, cvode_err, c) || CVodeInit(cv, cvode_rhs, 0.0, r->y) ||
        CVodeSStolerances(cv, loose ? o->loose_rtol : o->rtol, loose ? o->loose_atol : o->atol) ||
        CVodeSetUserData(cv, c) || CVodeSetStopTime(cv, o->t_max) ||
        CVodeSetMaxNumSteps(cv, o->max_steps))
        return scm_error_set(err, SCM_ESOLVER, "setting up CVODE failed: %s", c->cvode_msg);
    int gmres = o->linsol == SCM_LINSOL_GMRES ||
                (o->linsol == SCM_LINSOL_AUTO && r->n > SCM_LINSOL_AUTO_DENSE_MAX);
    c->lagged = gmres && o->analytic_jv == 2 && rule->jtimes;
    c->precond = gmres && o->precond && rule->psetup && rule->psolve;
    if (gmres) {
        /* right preconditioning: GMRES's test stays on the true residual
         * (left, the damping preconditioner shrank it and loosened the solve) */
        r->LS = SUNLinSol_SPGMR(r->y, c->precond ? SUN_PREC_RIGHT : SUN_PREC_NONE, o->krylov_dim,
                                r->ctx);
    } else {
        r->J = SUNDenseMatrix(r->n, r->n, r->ctx);
        r->LS = r->J ? scm_nvecops_lu_new(r->n, r->ctx) : NULL;
    }
    if (!r->LS || CVodeSetLinearSolver(cv, r->LS, r->J) ||
        (gmres && o->analytic_jv && rule->jtimes && CVodeSetJacTimes(cv, NULL, cvode_jtimes)) ||
        ((c->lagged || c->precond) &&
         CVodeSetPreconditioner(cv, cvode_lin_setup, c->precond ? cvode_psolve : NULL)) ||
        (gmres && CVodeSetEpsLin(cv, o->eps_lin)) ||
        (c->lagged && (CVodeSetLSetupFrequency(cv, LAGGED_JV_STEPS) ||
                       CVodeSetJacEvalFrequency(cv, LAGGED_JV_STEPS))))
        return scm_error_set(err, SCM_ESOLVER, "setting up the CVODE linear solver failed: %s",
                             c->cvode_msg);
    return SCM_OK;
}

/* Output times: 0, then n_out log-spaced points t_first .. t_max. */
static double out_time(const traj_run *r, int i)
{
    return i == r->o->n_out - 1 ? r->o->t_max : r->o->t_first * exp(r->ratio * i);
}

/* The loop's starting point: the initial state recorded and kept as the
 * last valid one. */
static void run_begin(traj_run *r)
{
    const scm_traj_opts *o = r->o;
    scm_traj_result *res = r->res;
    r->next = 0;
    r->ratio = o->n_out > 1 ? log(o->t_max / o->t_first) / (o->n_out - 1) : 0.0;
    r->rule->unpack(r->m, r->yv, r->Q, r->R, res->v);
    double e0 = r->eps, p0;
    if (reported_loss(&r->c, res, r->Q, r->R, res->v, &e0, &p0) != SCM_OK)
        e0 = r->eps; /* the start passed the PSD check: cannot happen */
    if (o->record)
        record_point(res, r->cap, r->K, r->M, 0.0, e0, r->Q, r->R, res->v);
    r->t = 0.0;
    r->maxF = scm_linalg_max_abs(r->yd, r->n);
    /* res->Q, res->R, res->v always hold the last valid state (of time t). */
    memcpy(res->Q, r->Q, sizeof(double) * (size_t)r->KK);
    memcpy(res->R, r->R, sizeof(double) * (size_t)r->KM);
    res->stop = SCM_STOP_T_MAX;
    r->steps = 0;
    r->fresh = 1;
    r->have_eps = 1;
}

/* The end of the loose stage, once max |F| < loose_until: the second stage
 * has full accuracy for the approach to the fixed point. */
static int run_switch_stage(traj_run *r)
{
    const scm_traj_opts *o = r->o;
    if (!(r->loose && r->maxF < o->loose_until))
        return RUN_ON;
    r->loose = 0;
    /* CVodeSStolerances alone mid-run leaves CVODE 6.4's error-weight
     * data unset (it is filled at the initial set-up): re-initialise. */
    add_counters(r->cv, r->res);
    r->fresh = 1; /* (maxF is exact here: estimates stop above 2 loose_until) */
    if (CVodeSStolerances(r->cv, o->rtol, o->atol) != CV_SUCCESS ||
        CVodeReInit(r->cv, r->t, r->y) != CV_SUCCESS) {
        scm_error_set(&r->res->err, SCM_ESOLVER, "CVodeSStolerances failed at t = %.6g: %s", r->t,
                      r->c.cvode_msg);
        r->res->stop = SCM_STOP_FAILED;
        return RUN_END;
    }
    return RUN_ON;
}

/* The stopping tests at the last valid state. */
static int run_stop_tests(traj_run *r)
{
    const scm_traj_opts *o = r->o;
    scm_traj_result *res = r->res;
    if (!r->loose && o->eps_stop > 0.0 && r->eps < o->eps_stop) {
        res->stop = SCM_STOP_EPS;
        return RUN_END;
    }
    if (!r->loose && o->grad_stop > 0.0 && r->maxF < o->grad_stop) {
        res->stop = SCM_STOP_FIXED_POINT;
        return RUN_END;
    }
    if (r->t >= o->t_max) {
        res->stop = SCM_STOP_T_MAX;
        return RUN_END;
    }
    if (r->steps >= o->max_steps) {
        res->stop = SCM_STOP_MAX_STEPS;
        return RUN_END;
    }
    return RUN_ON;
}

/* One internal CVODE step to *tret, failing on CVODE's error or on steps
 * that have collapsed. */
static int run_cvode_step(traj_run *r, sunrealtype *tret)
{
    const scm_traj_opts *o = r->o;
    scm_traj_result *res = r->res;
    traj_ctx *c = &r->c;
    int flag = CVode(r->cv, o->t_max, r->y, tret, CV_ONE_STEP);
    r->steps++;
    if (flag < 0) {
        char *name = CVodeGetReturnFlagName(flag);
        scm_error_set(&res->err, SCM_ESOLVER, "CVODE failed at t = %.6g with %s (%s)%s%s", r->t,
                      name ? name : "?", c->cvode_msg,
                      c->last_rhs_status ? "; last right-hand-side failure: " : "",
                      c->last_rhs_status ? scm_status_str(c->last_rhs_status) : "");
        free(name);
        res->loose_failed = r->loose;
        res->stop = SCM_STOP_FAILED;
        return RUN_END;
    }
    sunrealtype h_last;
    long stage_steps = 0; /* CVODE's count restarts with the second stage,
                             whose first steps are short by design */
    if (o->loose_until > 0.0 && CVodeGetLastStep(r->cv, &h_last) == CV_SUCCESS &&
        h_last < LOOSE_STALL_STEP * fmax(1.0, *tret) &&
        (r->loose || (CVodeGetNumSteps(r->cv, &stage_steps) == CV_SUCCESS && stage_steps > 20))) {
        /* steps collapsed: the right-hand side keeps failing just ahead
         * (a correlation at its Cauchy-Schwarz bound, within the loose
         * stage's error), which CVODE takes for a convergence failure.
         * After the loose stage too: the state carries its error (seen
         * in the second stage of 4 of 10^4 runs at K = 19, M = 17 with
         * the lagged product, steps of 1e-9 until max_steps). */
        scm_error_set(&res->err, SCM_ESOLVER, "%s at t = %.6g (step %g)",
                      r->loose ? "the loose stage stalled" : "stalled after a loose stage", *tret,
                      h_last);
        res->loose_failed = 1;
        res->stop = SCM_STOP_FAILED;
        return RUN_END;
    }
    return RUN_ON;
}

/* The interpolated output points passed by the step to tret, each with
 * the loss of its realisable state; an output point without one (CVODE's
 * interpolation failing, a non-finite state) ends the run as a failure
 * that names it (no point is recorded without a loss). */
static int run_record_outputs(traj_run *r, sunrealtype tret)
{
    const scm_traj_opts *o = r->o;
    traj_ctx *c = &r->c;
    scm_traj_result *res = r->res;
    while (o->record && r->next < o->n_out && out_time(r, r->next) <= tret) {
        double to = out_time(r, r->next), eo, po;
        int flag = CVodeGetDky(r->cv, to, 0, r->yout);
        if (flag != CV_SUCCESS) {
            scm_error_set(&res->err, SCM_ESOLVER,
                          "CVODE cannot interpolate the output point t = %.6g (flag %d)", to, flag);
            res->stop = SCM_STOP_FAILED;
            return RUN_END;
        }
        clean_state(c, r->yo);
        memcpy(c->vs, res->v, sizeof(double) * (size_t)r->K);
        r->rule->unpack(r->m, r->yo, r->Q, r->R, c->vs);
        scm_status st = reported_loss(c, res, r->Q, r->R, c->vs, &eo, &po);
        if (st) {
            scm_error_set(&res->err, st, "no loss at the output point t = %.6g: %s", to,
                          scm_status_str(st));
            res->loose_failed = r->loose;
            res->stop = SCM_STOP_FAILED;
            return RUN_END;
        }
        record_point(res, r->cap, r->K, r->M, to, eo, r->Q, r->R, c->vs);
        r->next++;
    }
    return RUN_ON;
}

/* Students that died at the new state (ReLU): recorded, and frozen at zero
 * with CVODE re-initialised there, or the end of the run with dead_fail. */
static int run_check_dead(traj_run *r, sunrealtype tret)
{
    const int K = r->K;
    scm_traj_result *res = r->res;
    int died = -1;
    for (int k = 0; k < K; k++)
        if (!res->dead[k] && !(r->Q[k * K + k] >= r->dead_run)) {
            res->dead[k] = 1;
            res->n_dead++;
            if (died < 0)
                died = k;
        }
    if (died >= 0 && r->o->dead_fail) {
        scm_error_set(&res->err, SCM_EDEAD,
                      "student %d became a dead ReLU neuron at t = %.6g (Q_kk = %g)", died, tret,
                      r->Q[died * K + died]);
        res->stop = SCM_STOP_FAILED;
        return RUN_END;
    }
    if (died >= 0) {
        /* Freeze the dead students exactly at zero, where the flow
         * keeps them (flow.h): a vanishing norm would otherwise
         * make their correlations, and the steps, ill-conditioned. */
        r->c.n_dead = res->n_dead;
        zero_dead(r->m, res->dead, r->Q, r->R);
        r->rule->pack(r->m, r->Q, r->R, r->c.vs, r->yv);
        add_counters(r->cv, res);
        r->fresh = 1;
        if (CVodeReInit(r->cv, tret, r->y) != CV_SUCCESS) {
            scm_error_set(&res->err, SCM_ESOLVER,
                          "CVodeReInit failed after student %d died at t = %.6g: %s", died, tret,
                          r->c.cvode_msg);
            res->stop = SCM_STOP_FAILED;
            return RUN_END;
        }
    }
    return RUN_ON;
}

/* The new state into Q, R, c.vs: valid, alive, finite? */
static int run_check_state(traj_run *r, sunrealtype tret)
{
    traj_ctx *c = &r->c;
    scm_traj_result *res = r->res;
    clean_state(c, r->yv);
    memcpy(c->vs, res->v, sizeof(double) * (size_t)r->K);
    r->rule->unpack(r->m, r->yv, r->Q, r->R, c->vs);
    scm_error chk;
    scm_status vs = scm_model_check_state(r->m, r->Q, r->R, r->psd_run, &chk);
    if (vs) {
        scm_error_set(&res->err, vs, "invalid state at t = %.6g: %s", tret, chk.msg);
        res->loose_failed = r->loose;
        res->stop = SCM_STOP_FAILED;
        return RUN_END;
    }
    if (r->m->act == &scm_act_relu)
        return run_check_dead(r, tret);
    return RUN_ON;
}

/* The new state (of time tret) becomes the last valid one. */
static void run_accept(traj_run *r, sunrealtype tret)
{
    r->t = tret;
    memcpy(r->res->Q, r->Q, sizeof(double) * (size_t)r->KK);
    memcpy(r->res->R, r->R, sizeof(double) * (size_t)r->KM);
    memcpy(r->res->v, r->c.vs, sizeof(double) * (size_t)r->K);
}

/* In the loose stage F only decides when the stage ends: the derivative of
 * CVODE's interpolant estimates it for free, and the flow is evaluated once
 * the estimate nears loose_until.  1: the estimate stands for F at the new
 * state (accepted), 0: evaluate the flow. */
static int run_loose_estimate(traj_run *r, sunrealtype tret)
{
    const scm_traj_opts *o = r->o;
    if (!(r->loose && !r->fresh && CVodeGetDky(r->cv, tret, 1, r->yout) == CV_SUCCESS))
        return 0;
    double est = scm_linalg_max_abs(r->yo, r->n), e_tail = INFINITY;
    if (o->tail_eps > 0.0 && state_loss(&r->c, r->Q, r->R, r->c.vs, &e_tail) != SCM_OK)
        e_tail = INFINITY; /* the flow's evaluation will say */
    if (est >= 2.0 * o->loose_until && !(o->certify && est < o->certify_from) &&
        !(e_tail < o->tail_eps)) {
        r->t = tret;
        r->maxF = est;
        r->have_eps = 0;
        memcpy(r->res->Q, r->Q, sizeof(double) * (size_t)r->KK);
        memcpy(r->res->R, r->R, sizeof(double) * (size_t)r->KM);
        memcpy(r->res->v, r->c.vs, sizeof(double) * (size_t)r->K);
        return 1;
    }
    return 0;
}

/* The loss (and F where a test needs it) at the new state, which is then
 * accepted, and the early-stop callback. */
static int run_evaluate(traj_run *r, sunrealtype tret)
{
    const scm_traj_opts *o = r->o;
    traj_ctx *c = &r->c;
    scm_traj_result *res = r->res;
    r->fresh = 0;
    scm_status rs;
    if (!r->loose && o->grad_stop == 0.0) {
        /* No stopping test needs F here: the loss when eps_stop needs
         * it, F once at the end (CVODE's own evaluations meet any
         * failure of the right-hand side). */
        r->have_eps = 0;
        rs = o->eps_stop > 0.0 || o->tail_eps > 0.0 ? state_loss(c, r->Q, r->R, c->vs, &r->eps)
                                                    : SCM_OK;
    } else {
        r->have_eps = 1;
        rs = r->rule->rhs(&o->rule_params, c->fl, r->yv, r->yd, &r->eps, c->scratch);
    }
    if (rs) {
        scm_error_set(&res->err, rs, "the right-hand side fails at t = %.6g: %s", tret,
                      scm_status_str(rs));
        res->loose_failed = r->loose;
        res->stop = SCM_STOP_FAILED;
        return RUN_END;
    }
    if (r->have_eps)
        r->maxF = scm_linalg_max_abs(r->yd, r->n);
    run_accept(r, tret);
    if (o->certify && o->certify(o->certify_user, r->t, r->Q, r->R, r->eps, r->maxF)) {
        res->stop = SCM_STOP_CERTIFIED;
        return RUN_END;
    }
    return RUN_ON;
}

/* The tail stage's side of the run (traj_tail.h). */
static double tail_out_time(void *user, int i)
{
    return out_time(user, i);
}

static void tail_record(void *user, double t, double eps, const double *Q, const double *R)
{
    traj_run *r = user;
    record_point(r->res, r->cap, r->K, r->M, t, eps, Q, R, r->res->v);
}

/* At an evaluated state: the tail stage, when it applies, runs the rest. */
static int run_tail(traj_run *r)
{
    scm_traj_result *res = r->res;
    if (!scm_traj_tail_applies(r->m, r->rule, r->o, r->Q, r->R, r->eps, r->c.n_dead))
        return RUN_ON;
    const scm_traj_tail_io io = {tail_out_time, tail_record, r};
    scm_traj_tail_out out = {.Q = res->Q, .R = res->R, .eps = r->eps, .max_F = r->maxF};
    res->tail_t = r->t;
    scm_traj_tail_run(r->m, r->o, r->t, r->Q, r->R, r->next, r->o->max_steps - r->steps, &io,
                      &out);
    r->tailed = 1;
    r->t = out.t;
    r->eps = out.eps;
    r->maxF = out.max_F;
    r->next = out.next;
    res->stop = out.stop;
    if (out.stop == SCM_STOP_FAILED)
        res->err = out.err;
    res->tail_steps = out.n_steps;
    res->n_steps += out.n_steps;
    res->n_rhs += out.n_rhs;
    res->n_jac_evals += out.n_jac;
    res->eps_zeroed = out.eps_zeroed;
    res->max_proj = fmax(res->max_proj, out.proj);
    return RUN_END;
}

/* The loop over CVODE's internal steps, until a stopping rule or a failure
 * (res->stop). */
static void run_loop(traj_run *r)
{
    for (;;) {
        sunrealtype tret;
        if (run_switch_stage(r) || run_stop_tests(r) || run_cvode_step(r, &tret))
            break;
        if (run_record_outputs(r, tret) || run_check_state(r, tret))
            break;
        if (run_loose_estimate(r, tret))
            continue;
        if (run_evaluate(r, tret) || run_tail(r))
            break;
    }
}

/* The final time, loss and F into the result, the record closed, the
 * counters summed. */
static void run_finish(traj_run *r)
{
    const scm_traj_opts *o = r->o;
    scm_traj_result *res = r->res;
    traj_ctx *c = &r->c;
    if (!r->tailed && !r->have_eps) {
        /* F was not evaluated at the final state (the loose stage estimates
         * it; without a stopping test on F it is not needed until here) */
        r->rule->pack(r->m, res->Q, res->R, res->v, r->yv);
        scm_status rs = r->rule->rhs(&o->rule_params, c->fl, r->yv, r->yd, &r->eps, c->scratch);
        if (rs == SCM_OK) {
            r->maxF = scm_linalg_max_abs(r->yd, r->n);
        } else {
            r->eps = r->maxF = NAN;
            if (res->stop != SCM_STOP_FAILED) {
                scm_error_set(&res->err, rs, "the right-hand side fails at the final t = %.6g: %s",
                              r->t, scm_status_str(rs));
                res->stop = SCM_STOP_FAILED;
            }
        }
    }
    if (!r->tailed && isfinite(r->eps)) {
        /* the reported loss: the realisable state's (traj.h) */
        double own = r->eps;
        scm_status ls = reported_loss(c, res, res->Q, res->R, res->v, &r->eps, &res->eps_proj);
        res->eps_zeroed = !ls && own < 0.0;
        if (ls) {
            r->eps = NAN;
            if (res->stop != SCM_STOP_FAILED) {
                scm_error_set(&res->err, ls, "no loss at the final state (t = %.6g): %s", r->t,
                              scm_status_str(ls));
                res->stop = SCM_STOP_FAILED;
            }
        }
    }
    res->t = r->t;
    res->eps = r->eps;
    res->max_F = r->maxF;
    /* The final state closes the record unless it is already its last point. */
    if (o->record) {
        if (res->n_out == 0 || res->out_t[res->n_out - 1] != r->t)
            record_point(res, r->cap, r->K, r->M, r->t, r->eps, res->Q, res->R, res->v);
    } else {
        record_point(res, r->cap, r->K, r->M, r->t, r->eps, res->Q, res->R, res->v);
    }
    add_counters(r->cv, res);
    res->n_jac_evals += c->n_lin; /* analytic_jv 2: the linearisations */
}

/* Everything of the run but its result. */
static void run_free(traj_run *r)
{
    if (r->cv)
        CVodeFree(&r->cv);
    if (r->LS)
        SUNLinSolFree(r->LS);
    if (r->J)
        SUNMatDestroy(r->J);
    if (r->y)
        N_VDestroy(r->y);
    if (r->yout)
        N_VDestroy(r->yout);
    if (r->ydot)
        N_VDestroy(r->ydot);
    if (r->ctx)
        SUNContext_Free(&r->ctx);
    scm_flow_free(r->c.fl);
    free(r->c.scratch);
    free(r->c.ytmp);
    free(r->c.ylin);
    free(r->c.Qs);
    free(r->c.Rs);
    free(r->c.vs);
    free(r->Q);
    free(r->R);
}

scm_status scm_traj_run(const scm_model *m, const scm_rule *rule, const double *Q0,
                        const double *R0, const scm_traj_opts *o, scm_traj_result *res,
                        scm_error *err)
{
    memset(res, 0, sizeof *res);
    res->tail_t = NAN;
    scm_status st = scm_traj_opts_check(o, err);
    if (st)
        return st;
    traj_run r = {.m = m, .rule = rule, .o = o, .res = res, .K = m->K, .M = m->M};
    r.n = rule->dim(m);
    r.KK = (long)m->K * m->K;
    r.KM = (long)m->K * m->M;
    r.cap = o->record ? o->n_out + 2 : 1;
    r.c = (traj_ctx){.rule = rule, .params = &o->rule_params, .last_rhs_status = SCM_OK, .m = m};
    st = run_alloc(&r, err);
    if (!st)
        st = run_start(&r, Q0, R0, err);
    if (!st)
        st = run_cvode_setup(&r, err);
    if (st) {
        scm_traj_result_free(res);
        run_free(&r);
        return st;
    }
    run_begin(&r);
    run_loop(&r);
    run_finish(&r);
    run_free(&r);
    return SCM_OK;
}
