/* traj_tail_linear.c: the tail stage of a trajectory (traj_tail.h) for
 * linear units, in closed form (docs/sweeps.md, "Accuracy of a
 * trajectory's loss").
 *
 * With g(x) = x the loss is eps = rho / 2, rho = |r|^2 / d, the residual
 * r = sum_k v_k w_k - sum_m v*_m w*_m: linear in (Q, R), so in (Q, R)
 * doubles its relative accuracy is the state's absolute error over eps, and
 * its minima form a manifold on which C = Q - R T^-1 R^T stays O(1).  gd
 * (MATH.md section 3: A = v v^T / 2, S = v v^T, B = -v v*^T) gives
 *
 *     dQ/dtau = -(v g^T + g v^T),   dR/dtau = -v h^T,
 *
 * with g = Q v - R v* (g_k = w_k.r / d), h = R^T v - T v* (h_m = w*_m.r / d),
 * and these close: with a = |v|^2 and v.g - v*.h = rho,
 *
 *     dh/dtau = -a h,   dg/dtau = -a g - v rho,   drho/dtau = -2 a rho.
 *
 * From the entry (s = tau - tau_e, x = exp(-a s)):
 *
 *     rho = rho_e x^2,   h = h_e x,   g = x (g_e - v rho_e (1 - x) / a),
 *     R = R_e - v h_e^T (1 - x) / a,
 *     Q = Q_e - (v G^T + G v^T),  G = g_e (1 - x) / a
 *                                     - v rho_e ((1 - x) - (1 - x^2) / 2) / a^2,
 *
 * (G the integral of g), so eps keeps its relative precision down to any
 * value (1 - x by expm1).  v = v* = 1: eps = eps_e exp(-2 K s). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/linalg.h"
#include "dynamics/traj_tail.h"

/* A stage's "step": a quarter of the slowest time constant 1 / a (eps falls
 * by exp(-1/2) per step), so that eps_stop and grad_stop end the run at
 * most that far past their crossing, as the integrator's steps would. */
#define LIN_STEP 0.25

/* The entry state and its closed-form evolution. */
typedef struct {
    const scm_model *m;
    double t0, a;
    double *Qe, *Re, *ge, *he; /* entry Q, R, g, h */
    double rho_e;
    double *Q, *R, *dQ, *dR; /* the state at the last evaluation, its flow */
} lin_tail;

static void lin_free(lin_tail *L)
{
    free(L->ge);
    free(L->he);
    free(L->dQ);
    free(L->dR);
    free(L->Q);
    free(L->R);
}

/* g, h, rho at the entry (Q0, R0); rho_e = v.g - v*.h (= 2 eps). */
static scm_status lin_setup(lin_tail *L, const scm_model *m, double t0, const double *Q0,
                            const double *R0, scm_error *err)
{
    const int K = m->K, M = m->M;
    L->m = m;
    L->t0 = t0;
    L->Qe = (double *)Q0;
    L->Re = (double *)R0;
    L->ge = malloc(sizeof(double) * (size_t)K);
    L->he = malloc(sizeof(double) * (size_t)M);
    L->Q = malloc(sizeof(double) * (size_t)(K * K));
    L->R = malloc(sizeof(double) * (size_t)(K * M));
    L->dQ = malloc(sizeof(double) * (size_t)(K * K));
    L->dR = malloc(sizeof(double) * (size_t)(K * M));
    if (!L->ge || !L->he || !L->Q || !L->R || !L->dQ || !L->dR)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the linear tail stage");
    long double a = 0, rho = 0;
    for (int k = 0; k < K; k++)
        a += (long double)m->v[k] * m->v[k];
    for (int k = 0; k < K; k++) {
        long double s = 0;
        for (int l = 0; l < K; l++)
            s += (long double)Q0[k * K + l] * m->v[l];
        for (int n = 0; n < M; n++)
            s -= (long double)R0[k * M + n] * m->vs[n];
        L->ge[k] = (double)s;
        rho += s * m->v[k];
    }
    for (int n = 0; n < M; n++) {
        long double s = 0;
        for (int k = 0; k < K; k++)
            s += (long double)R0[k * M + n] * m->v[k];
        for (int p = 0; p < M; p++)
            s -= (long double)m->T[n * M + p] * m->vs[p];
        L->he[n] = (double)s;
        rho -= s * m->vs[n];
    }
    if (!(a > 0))
        return scm_error_set(err, SCM_EINVAL, "the linear tail stage needs v != 0");
    L->a = (double)a;
    L->rho_e = (double)rho;
    return SCM_OK;
}

/* The state at time t into L->Q, L->R, its flow into L->dQ, L->dR, and
 * eps = rho / 2 (*eps; its max |dQ, dR| into *maxF). */
static void lin_eval(lin_tail *L, double t, double *eps, double *maxF)
{
    const scm_model *m = L->m;
    const int K = m->K, M = m->M;
    const double a = L->a, s = t - L->t0, x = exp(-a * s);
    const double om = -expm1(-a * s), om2 = -expm1(-2.0 * a * s); /* 1 - x, 1 - x^2 */
    const double cG = L->rho_e * (om - 0.5 * om2) / (a * a), cg = L->rho_e * om / a;
    for (int k = 0; k < K; k++) {
        const double Gk = L->ge[k] * om / a - m->v[k] * cG;
        const double gk = x * (L->ge[k] - m->v[k] * cg);
        for (int l = 0; l < K; l++) {
            const double Gl = L->ge[l] * om / a - m->v[l] * cG;
            const double gl = x * (L->ge[l] - m->v[l] * cg);
            L->Q[k * K + l] = L->Qe[k * K + l] - (m->v[k] * Gl + Gk * m->v[l]);
            L->dQ[k * K + l] = -(m->v[k] * gl + gk * m->v[l]);
        }
        for (int n = 0; n < M; n++) {
            L->R[k * M + n] = L->Re[k * M + n] - m->v[k] * L->he[n] * om / a;
            L->dR[k * M + n] = -m->v[k] * L->he[n] * x;
        }
    }
    *eps = 0.5 * L->rho_e * x * x;
    *maxF = fmax(scm_linalg_max_abs(L->dQ, K * K), scm_linalg_max_abs(L->dR, K * M));
}

/* The final state, loss and flow into out. */
static void lin_out(lin_tail *L, double t, scm_traj_tail_out *out)
{
    const int K = L->m->K, M = L->m->M;
    lin_eval(L, t, &out->eps, &out->max_F);
    out->t = t;
    out->eps_zeroed = out->eps < 0.0; /* rho_e < 0: the entry state's own error */
    if (out->eps_zeroed)
        out->eps = 0.0;
    memcpy(out->Q, L->Q, sizeof(double) * (size_t)(K * K));
    memcpy(out->R, L->R, sizeof(double) * (size_t)(K * M));
}

/* The stop tests both tails make before each step: sets out->stop and
 * returns 1 when one holds (here, not in traj_tail.c, so that the two
 * files do not call each other). */
int scm_traj_tail_stopped(const scm_traj_opts *o, scm_traj_tail_out *out)
{
    if (o->eps_stop > 0.0 && out->eps < o->eps_stop)
        out->stop = SCM_STOP_EPS;
    else if (o->grad_stop > 0.0 && out->max_F < o->grad_stop)
        out->stop = SCM_STOP_FIXED_POINT;
    else if (out->t >= o->t_max)
        out->stop = SCM_STOP_T_MAX;
    else
        return 0;
    return 1;
}

void scm_traj_tail_linear_run(const scm_model *m, const scm_traj_opts *o, double t0,
                              const double *Q0, const double *R0, int next, long steps_left,
                              const scm_traj_tail_io *io, scm_traj_tail_out *out)
{
    lin_tail L;
    memset(&L, 0, sizeof L);
    out->next = next;
    out->n_steps = out->n_rhs = out->n_jac = 0;
    out->proj = 0.0;
    scm_error_clear(&out->err);
    if (lin_setup(&L, m, t0, Q0, R0, &out->err)) {
        out->stop = SCM_STOP_FAILED;
        lin_free(&L);
        return;
    }
    lin_out(&L, t0, out);
    const double h = LIN_STEP / L.a;
    out->stop = SCM_STOP_MAX_STEPS;
    for (long steps = 0; steps < steps_left; steps++) {
        if (scm_traj_tail_stopped(o, out))
            break;
        /* once eps has underflowed nothing is left to resolve: on to t_max */
        double t1 = out->eps > 0.0 ? fmin(out->t + h, o->t_max) : o->t_max;
        while (o->record && out->next < o->n_out && io->out_time(io->user, out->next) <= t1) {
            const double to = io->out_time(io->user, out->next);
            double eo, fo;
            lin_eval(&L, to, &eo, &fo);
            io->record(io->user, to, eo < 0.0 ? 0.0 : eo, L.Q, L.R);
            out->next++;
        }
        lin_out(&L, t1, out);
        out->n_steps++;
    }
    lin_free(&L);
}
