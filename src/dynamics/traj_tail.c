/* traj_tail.c: the tail stage of a trajectory (traj_tail.h; traj.h,
 * tail_eps; docs/sweeps.md, "Reported losses").  Near a zero-loss minimum
 * with the students in the teachers' span, the loss is to first order a
 * linear function of C = Q - R T^-1 R^T (of the order of eps) plus a
 * quadratic one of R's distance from the minimum (of the order of
 * sqrt(eps)).  CVODE's error control, relative to |y| ~ 1 in (Q, R), can
 * resolve neither at eps = 1e-12.  Here the state is (C, z), z = R - R_e
 * with R_e the run's R at the entry, so that CVODE's relative tolerance
 * applies to C itself and to R's motion since the entry (absolute
 * tolerance TAIL_ATOL), and C obeys dC/dtau = -(S C + C S), small with C.
 * The flow and the loss are evaluated in binary128 (flow_ext.h). */
#include "dynamics/traj_tail.h"

#include <cvode/cvode.h>
#include <math.h>
#include <nvector/nvector_serial.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sundials/sundials_context.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunlinsol/sunlinsol_spgmr.h>
#include <sunmatrix/sunmatrix_dense.h>

#include "core/linalg.h"
#include "scm/flow.h"
#include "scm/flow_ext.h"

/* The absolute tolerance of the tail: far below what eps = 1e-12 needs of
 * C (1e-18) and of z (1e-13); it only keeps CVODE's weights finite where a
 * component is exactly 0 (z at the entry). */
#define TAIL_ATOL 1e-24

/* A ReLU student this short is not in the stage (its kernels' derivative
 * s / (4 pi a) would blow up as it dies; erf's are smooth at a = 0, where
 * a spare erf student goes). */
#define TAIL_MIN_NORM2 1e-2

/* Dense LU (CVODE's difference-quotient Jacobian) up to this many state
 * components, GMRES above. */
#define TAIL_DENSE_MAX 200

scm_status scm_traj_tail_check(const scm_rule *rule, const scm_traj_opts *o, scm_error *err)
{
    if (o->tail_eps > 0.0 && (rule != &scm_rule_gd || o->v0))
        return scm_error_set(err, SCM_EINVAL,
                             "integrator.tail_eps = %g: the tail stage needs the gd rule with the "
                             "model's fixed v, not rule '%s'%s (its flow of C = Q - R T^-1 R^T, "
                             "or for linear units of the residual r, does not close); use "
                             "tail_eps 0",
                             o->tail_eps, rule->name, o->v0 ? " training v" : "");
    return SCM_OK;
}

int scm_traj_tail_applies(const scm_model *m, const scm_rule *rule, const scm_traj_opts *o,
                          const double *Q, const double *R, double eps, int n_dead)
{
    const int K = m->K, M = m->M;
    /* linear units: the closed form (traj_tail_linear.c) holds from any
     * state, and the earlier it starts the less of the integrator's
     * absolute error (~1e-10, relative to eps = 1e-4: 1e-6) it inherits */
    if (m->act == &scm_act_linear)
        return o->tail_eps > 0.0 && rule == &scm_rule_gd && !o->v0;
    if (!(o->tail_eps > 0.0 && rule == &scm_rule_gd && !o->v0 && n_dead == 0 && eps < o->tail_eps))
        return 0;
    /* C_kk = Q_kk - R_k T^-1 R_k^T; T^-1 by the binary128 inverse is the
     * stage's business: here a cheap necessary test with T's diagonal
     * (exact for diagonal T; a non-diagonal T is checked by the stage) */
    for (int k = 0; k < K; k++) {
        if (m->act == &scm_act_relu && !(Q[k * K + k] >= TAIL_MIN_NORM2))
            return 0;
        double p = 0.0;
        for (int n = 0; n < M; n++)
            p += R[k * M + n] * R[k * M + n] / m->T[n * M + n];
        if (!(Q[k * K + k] - p < sqrt(o->tail_eps)))
            return 0;
    }
    return 1;
}

/* CVODE's user data. */
typedef struct {
    const scm_model *m;
    scm_flow_ext *x;
    const double *Re; /* R at the entry */
    double *R, *dQ;   /* scratch: R, dQ */
    char msg[256];    /* CVODE's last message */
} tail_ctx;

static int tail_rhs(sunrealtype t, N_Vector y, N_Vector ydot, void *user)
{
    (void)t;
    tail_ctx *c = user;
    const int K = c->m->K, KM = c->m->K * c->m->M;
    const double *yv = N_VGetArrayPointer(y);
    double *yd = N_VGetArrayPointer(ydot);
    for (int i = 0; i < KM; i++)
        c->R[i] = c->Re[i] + yv[K * K + i];
    /* recoverable: CVODE retries with a smaller step */
    return scm_flow_ext_rhs(c->x, yv, c->R, yd, yd + K * K, NULL, NULL) ? 1 : 0;
}

static void tail_err(int code, const char *module, const char *function, char *msg, void *user)
{
    (void)code;
    tail_ctx *c = user;
    snprintf(c->msg, sizeof c->msg, "%s/%s: %s", module, function, msg);
}

/* Everything of one tail stage. */
typedef struct {
    tail_ctx c;
    SUNContext ctx;
    N_Vector y, yout;
    SUNMatrix J;
    SUNLinearSolver LS;
    void *cv;
    double *Q, *Ro, *dR, *C; /* scratch */
} tail_run;

static void tail_free(tail_run *r)
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
    if (r->ctx)
        SUNContext_Free(&r->ctx);
    scm_flow_ext_free(r->c.x);
    free(r->c.R);
    free(r->c.dQ);
    free(r->Q);
    free(r->Ro);
    free(r->dR);
    free(r->C);
}

/* The entry state into y: C of the realisable state (Q raised onto the
 * PSD cone if integration error had pushed it out; out->proj), z = 0. */
static scm_status tail_setup(tail_run *r, const scm_model *m, const scm_traj_opts *o, double t0,
                             const double *Q0, const double *R0, long steps_left,
                             scm_traj_tail_out *out)
{
    const int K = m->K, M = m->M, n = K * K + K * M;
    scm_status st;
    r->c.m = m;
    r->c.Re = R0;
    if (!(r->c.x = scm_flow_ext_alloc(m, &out->err)))
        return out->err.code;
    r->c.R = malloc(sizeof(double) * (size_t)(K * M));
    r->c.dQ = malloc(sizeof(double) * (size_t)(K * K));
    r->Q = malloc(sizeof(double) * (size_t)(K * K));
    r->Ro = malloc(sizeof(double) * (size_t)(K * M));
    r->dR = malloc(sizeof(double) * (size_t)(K * M));
    r->C = malloc(sizeof(double) * (size_t)(K * K));
    if (!r->c.R || !r->c.dQ || !r->Q || !r->Ro || !r->dR || !r->C)
        return scm_error_set(&out->err, SCM_ENOMEM, "out of memory in the tail stage");
    if ((st = scm_flow_realisable(m, Q0, R0, r->Q, &out->proj)))
        return scm_error_set(&out->err, st, "the tail stage's entry state: %s", scm_status_str(st));
    if (SUNContext_Create(NULL, &r->ctx) != 0 || !(r->y = N_VNew_Serial(n, r->ctx)) ||
        !(r->yout = N_VNew_Serial(n, r->ctx)))
        return scm_error_set(&out->err, SCM_ENOMEM, "out of memory for the tail stage's vectors");
    double *yv = N_VGetArrayPointer(r->y);
    scm_flow_ext_schur(r->c.x, r->Q, R0, yv);
    memset(yv + K * K, 0, sizeof(double) * (size_t)(K * M));
    r->cv = CVodeCreate(CV_BDF, r->ctx);
    if (!r->cv || CVodeSetErrHandlerFn(r->cv, tail_err, &r->c) ||
        CVodeInit(r->cv, tail_rhs, t0, r->y) ||
        CVodeSStolerances(r->cv, o->tail_rtol, TAIL_ATOL) || CVodeSetUserData(r->cv, &r->c) ||
        CVodeSetStopTime(r->cv, o->t_max) || CVodeSetMaxNumSteps(r->cv, steps_left))
        return scm_error_set(&out->err, SCM_ESOLVER, "setting up the tail stage's CVODE failed: %s",
                             r->c.msg);
    if (n <= TAIL_DENSE_MAX) {
        r->J = SUNDenseMatrix(n, n, r->ctx);
        r->LS = r->J ? SUNLinSol_Dense(r->y, r->J, r->ctx) : NULL;
    } else {
        r->LS = SUNLinSol_SPGMR(r->y, SUN_PREC_NONE, 20, r->ctx);
    }
    if (!r->LS || CVodeSetLinearSolver(r->cv, r->LS, r->J))
        return scm_error_set(&out->err, SCM_ESOLVER,
                             "setting up the tail stage's linear solver failed: %s", r->c.msg);
    return SCM_OK;
}

/* y = (C, z) into (Q, R) for output (R into r->Ro, Q into r->Q), and the
 * loss; eps < 0 (C beyond PSD by the tail's own error) reported as 0 with
 * *zeroed. */
static scm_status tail_state(tail_run *r, const double *yv, double *eps, int *zeroed)
{
    const int K = r->c.m->K, KM = r->c.m->K * r->c.m->M;
    for (int i = 0; i < KM; i++)
        r->Ro[i] = r->c.Re[i] + yv[K * K + i];
    scm_flow_ext_q(r->c.x, yv, r->Ro, r->Q);
    scm_status st = scm_flow_ext_loss(r->c.x, yv, r->Ro, eps);
    *zeroed = !st && *eps < 0.0;
    if (*zeroed)
        *eps = 0.0;
    return st;
}

/* The output points passed by the step to tret. */
static scm_status tail_outputs(tail_run *r, const scm_traj_opts *o, const scm_traj_tail_io *io,
                               sunrealtype tret, scm_traj_tail_out *out)
{
    while (o->record && out->next < o->n_out && io->out_time(io->user, out->next) <= tret) {
        const double to = io->out_time(io->user, out->next);
        double eo;
        int z;
        if (CVodeGetDky(r->cv, to, 0, r->yout) != CV_SUCCESS)
            return scm_error_set(&out->err, SCM_ESOLVER,
                                 "the tail stage cannot interpolate the output point t = %.6g", to);
        scm_status st = tail_state(r, N_VGetArrayPointer(r->yout), &eo, &z);
        if (st)
            return scm_error_set(&out->err, st, "no loss at the output point t = %.6g: %s", to,
                                 scm_status_str(st));
        io->record(io->user, to, eo, r->Q, r->Ro);
        out->next++;
    }
    return SCM_OK;
}

/* The loss and max |dQ, dR| at y; the state into out->Q, R. */
static scm_status tail_eval(tail_run *r, scm_traj_tail_out *out)
{
    const int K = r->c.m->K, KM = r->c.m->K * r->c.m->M;
    const double *yv = N_VGetArrayPointer(r->y);
    scm_status st = tail_state(r, yv, &out->eps, &out->eps_zeroed);
    if (!st)
        st = scm_flow_ext_rhs(r->c.x, yv, r->Ro, N_VGetArrayPointer(r->yout), r->dR, r->c.dQ,
                              NULL);
    if (st)
        return st;
    out->max_F = fmax(scm_linalg_max_abs(r->c.dQ, K * K), scm_linalg_max_abs(r->dR, KM));
    memcpy(out->Q, r->Q, sizeof(double) * (size_t)(K * K));
    memcpy(out->R, r->Ro, sizeof(double) * (size_t)KM);
    return SCM_OK;
}

void scm_traj_tail_run(const scm_model *m, const scm_traj_opts *o, double t0, const double *Q0,
                       const double *R0, int next, long steps_left, const scm_traj_tail_io *io,
                       scm_traj_tail_out *out)
{
    if (m->act == &scm_act_linear) {
        scm_traj_tail_linear_run(m, o, t0, Q0, R0, next, steps_left, io, out);
        return;
    }
    tail_run r;
    memset(&r, 0, sizeof r);
    out->next = next;
    out->t = t0;
    out->n_steps = out->n_rhs = out->n_jac = 0;
    out->eps_zeroed = 0;
    out->proj = 0.0;
    scm_error_clear(&out->err);
    scm_status st = steps_left > 0 ? tail_setup(&r, m, o, t0, Q0, R0, steps_left, out) : SCM_OK;
    if (!st && steps_left > 0)
        st = tail_eval(&r, out);
    out->stop = SCM_STOP_MAX_STEPS;
    for (long steps = 0; !st && steps < steps_left;) {
        if (scm_traj_tail_stopped(o, out))
            break;
        sunrealtype tret;
        int flag = CVode(r.cv, o->t_max, r.y, &tret, CV_ONE_STEP);
        steps++;
        if (flag < 0) {
            char *name = CVodeGetReturnFlagName(flag);
            st = scm_error_set(&out->err, SCM_ESOLVER, "the tail stage's CVODE failed at t = %.6g "
                               "with %s (%s)", out->t, name ? name : "?", r.c.msg);
            free(name);
            break;
        }
        if ((st = tail_outputs(&r, o, io, tret, out)))
            break;
        if ((st = tail_eval(&r, out))) {
            scm_error_set(&out->err, st, "the tail stage's flow fails at t = %.6g: %s", tret,
                          scm_status_str(st));
            break;
        }
        out->t = tret;
    }
    if (st) {
        if (!out->err.msg[0])
            scm_error_set(&out->err, st, "the tail stage failed: %s", scm_status_str(st));
        out->stop = SCM_STOP_FAILED;
    }
    long v;
    if (r.cv && CVodeGetNumSteps(r.cv, &v) == CV_SUCCESS)
        out->n_steps = v;
    if (r.cv && CVodeGetNumRhsEvals(r.cv, &v) == CV_SUCCESS)
        out->n_rhs = v;
    if (r.cv && CVodeGetNumLinRhsEvals(r.cv, &v) == CV_SUCCESS)
        out->n_rhs += v; /* the difference-quotient Jacobians' */
    if (r.cv && CVodeGetNumJacEvals(r.cv, &v) == CV_SUCCESS)
        out->n_jac = v;
    tail_free(&r);
}
