/* test_traj.c: CVODE trajectories and initial conditions.
 *  - the three solver set-ups (BDF + dense, BDF + GMRES, Adams) agree on
 *    the state at t_max to their tolerances;
 *  - stop reasons: t_max, eps threshold, fixed point, step budget;
 *  - failures are reported, not turned into numbers: a dead neuron, a
 *    CVODE error, an invalid initial state;
 *  - the same seed gives bit-identical trajectories;
 *  - the exact (Q, R) sampler against the moments of the random-vector
 *    construction it replaces (E Q_kk = sigma^2, Var Q_kk = 2 sigma^4 / d,
 *    E R = 0, Var R_km = sigma^2 T_mm / d, Cov(Q_kl) = sigma^4 / d), with
 *    seeded Monte Carlo error bars, for both the Bartlett (d - M >= K) and
 *    the direct (d - M < K) branch;
 *  - without a stopping test on F the loss alone is evaluated per step:
 *    the same run, bit for bit, as with F;
 *  - the dense LU of the CVODE linear solver (linalg.h) against SUNDIALS'
 *    own (SUNDlsMat_denseGETRF/GETRS): same pivots, factors and solutions
 *    to round-off; a singular matrix reported by its pivot. */
#include <gsl/gsl_errno.h>
#include <stdlib.h>
#include <string.h>

#include <sundials/sundials_dense.h>

#include "core/linalg.h"
#include "scm/init.h"
#include "scm/traj.h"
#include "testutil.h"

static double max_diff(const double *a, const double *b, long n)
{
    double d = 0;
    for (long i = 0; i < n; i++)
        d = fmax(d, fabs(a[i] - b[i]));
    return d;
}

static void test_solvers_agree(void)
{
    const int K = 4, M = 3;
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_erf, NULL, NULL, NULL, &e);
    double Q0[16], R0[12];
    CHECK(scm_init_random(m, 500, 1.0, 7, Q0, R0, &e) == SCM_OK, "init: %s", e.msg);
    /* dense, GMRES, Adams, GMRES with the analytic Jv, lagged, GMRES with
     * the frozen-S preconditioner (difference quotients, lagged), lagged
     * with Krylov dimension 20 and a tighter linear tolerance */
    enum { NS = 8 };
    scm_traj_result r[NS];
    for (int s = 0; s < NS; s++) {
        scm_traj_opts o;
        scm_traj_opts_default(&o);
        o.t_max = 30;
        o.rtol = 1e-10;
        o.atol = 1e-12;
        o.eps_stop = o.grad_stop = 0;
        o.method = s == 2 ? SCM_METHOD_ADAMS : SCM_METHOD_BDF;
        o.linsol = s == 1 || s >= 3 ? SCM_LINSOL_GMRES : SCM_LINSOL_DENSE;
        o.analytic_jv = s == 3 ? 1 : s == 4 || s >= 6 ? 2 : 0;
        o.precond = s == 5 || s == 6;
        o.krylov_dim = s == 7 ? 20 : 5;
        o.eps_lin = s == 7 ? 0.01 : 0.05;
        CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r[s], &e) == SCM_OK, "run: %s", e.msg);
        CHECK(r[s].stop == SCM_STOP_T_MAX, "solver %d stopped with %s (%s)", s,
              scm_stop_reason_str(r[s].stop), r[s].err.msg);
        CHECK(r[s].t == 30.0, "final t = %g", r[s].t);
        CHECK(r[s].n_out == o.n_out + 1, "recorded %ld points", r[s].n_out);
    }
    /* the lagged product linearises once per few steps, not per iterate */
    CHECK(r[4].n_jac_evals > 0 && r[4].n_jac_evals < r[4].n_steps / 2 && r[1].n_jac_evals == 0,
          "lagged: %ld linearisations in %ld steps", r[4].n_jac_evals, r[4].n_steps);
    for (int s = 1; s < NS; s++) {
        CHECK(max_diff(r[0].Q, r[s].Q, K * K) < 1e-7, "solver %d Q differs by %g", s,
              max_diff(r[0].Q, r[s].Q, K * K));
        CHECK(max_diff(r[0].R, r[s].R, K * M) < 1e-7, "solver %d R differs by %g", s,
              max_diff(r[0].R, r[s].R, K * M));
    }
    CHECK(max_diff(r[0].Q, Q0, K * K) > 1e-2, "the state did not move");
    /* recorded times are 0 then increasing log-spaced up to t_max */
    CHECK(r[0].out_t[0] == 0.0 && r[0].out_t[1] == 1e-2, "first times %g %g", r[0].out_t[0], r[0].out_t[1]);
    int mono = 1;
    for (long i = 1; i < r[0].n_out; i++)
        mono &= r[0].out_t[i] > r[0].out_t[i - 1] && r[0].out_eps[i] <= r[0].out_eps[i - 1] * (1 + 1e-12);
    CHECK(mono, "times not increasing or eps increasing along the record");
    /* the preconditioner is in use (it does not cut the iterations here:
     * erf, K = 4, 570 -> 562 and 568 -> 573) */
    CHECK(r[5].n_lin_iters != r[1].n_lin_iters && r[6].n_lin_iters != r[4].n_lin_iters,
          "preconditioned Krylov iterations %ld, %ld, the same as without", r[5].n_lin_iters,
          r[6].n_lin_iters);
    for (int s = 0; s < NS; s++)
        scm_traj_result_free(&r[s]);
    scm_model_free(m);
}

static void test_stop_reasons(void)
{
    scm_error e;
    scm_model *m = scm_model_alloc(2, 2, &scm_act_relu, NULL, NULL, NULL, &e);
    double Q0[4], R0[4];
    scm_init_random(m, 1000, 1.0, 3, Q0, R0, &e);
    scm_traj_opts o;
    scm_traj_result r;
    scm_traj_opts_default(&o);
    o.eps_stop = 1e-6;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r, &e) == SCM_OK, "run");
    CHECK(r.stop == SCM_STOP_EPS && r.eps < 1e-6, "eps stop: %s eps %g", scm_stop_reason_str(r.stop), r.eps);
    scm_traj_result_free(&r);

    scm_traj_opts_default(&o);
    o.eps_stop = 0;
    o.grad_stop = 1e-6;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r, &e) == SCM_OK, "run");
    CHECK(r.stop == SCM_STOP_FIXED_POINT && r.max_F < 1e-6, "fixed-point stop: %s max_F %g",
          scm_stop_reason_str(r.stop), r.max_F);
    scm_traj_result_free(&r);

    scm_traj_opts_default(&o);
    o.max_steps = 5;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r, &e) == SCM_OK, "run");
    CHECK(r.stop == SCM_STOP_MAX_STEPS && r.n_steps == 5, "budget stop: %s after %ld steps",
          scm_stop_reason_str(r.stop), r.n_steps);
    scm_traj_result_free(&r);

    /* CVODE refuses a tolerance below machine precision: a reported failure. */
    scm_traj_opts_default(&o);
    o.rtol = 1e-18;
    o.atol = 1e-30;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r, &e) == SCM_OK, "run");
    CHECK(r.stop == SCM_STOP_FAILED && strstr(r.err.msg, "CVODE") != NULL, "CVODE failure: %s / %s",
          scm_stop_reason_str(r.stop), r.err.msg);
    CHECK(r.n_out >= 1 && isfinite(r.eps), "a failed run still reports its last valid state");
    scm_traj_result_free(&r);

    /* invalid initial states are input errors */
    double Qbad[4] = {1, 0, 0, 1}, Rbad[4] = {1.2, 0, 0, 0.5};
    scm_traj_opts_default(&o);
    CHECK(scm_traj_run(m, &scm_rule_gd, Qbad, Rbad, &o, &r, &e) == SCM_ENOTPSD, "non-PSD start: %s", e.msg);
    double Qdead[4] = {0, 0, 0, 1}, Rdead[4] = {0, 0, 0, 0.5};
    CHECK(scm_traj_run(m, &scm_rule_gd, Qdead, Rdead, &o, &r, &e) == SCM_EDEAD, "dead start: %s", e.msg);
    double Qnan[4] = {1, NAN, NAN, 1}, Rnan[4] = {0, 0, 0, 0.5};
    CHECK(scm_traj_run(m, &scm_rule_gd, Qnan, Rnan, &o, &r, &e) == SCM_ENAN, "NaN start: %s", e.msg);
    o.rtol = 2.0;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r, &e) == SCM_EINVAL && strstr(e.msg, "rtol"),
          "bad rtol: %s", e.msg);
    scm_model_free(m);

    /* A redundant student shrinks (K = 2, M = 1, student 1 = the teacher):
     * with a high dead threshold the run must end as a dead-neuron failure. */
    m = scm_model_alloc(2, 1, &scm_act_relu, NULL, NULL, NULL, &e);
    double Q1[4] = {1, 0, 0, 1}, R1[2] = {1, 0};
    scm_traj_opts_default(&o);
    o.dead_tol = 0.5;
    o.dead_fail = 1;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q1, R1, &o, &r, &e) == SCM_OK, "run");
    CHECK(r.stop == SCM_STOP_FAILED && r.err.code == SCM_EDEAD, "dead neuron: %s / %s",
          scm_stop_reason_str(r.stop), r.err.msg);
    CHECK(r.Q[3] >= 0.5, "the reported state is the last valid one (Q_22 = %g)", r.Q[3]);
    scm_traj_result_free(&r);
    /* without dead_fail the death is recorded and the run goes on to the end */
    o.dead_fail = 0;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q1, R1, &o, &r, &e) == SCM_OK, "run");
    CHECK(r.stop != SCM_STOP_FAILED && r.n_dead == 1 && r.dead[1] == 1 && r.dead[0] == 0,
          "dead neuron recorded: %s, n_dead %d (%s)", scm_stop_reason_str(r.stop), r.n_dead,
          r.err.msg);
    CHECK(r.Q[3] < 0.5 && r.eps < 1e-3, "the run went on past the death (Q_22 = %g, eps = %g)",
          r.Q[3], r.eps);
    scm_traj_result_free(&r);
    scm_model_free(m);
}

static void test_reproducible(void)
{
    scm_error e;
    scm_model *m = scm_model_alloc(3, 3, &scm_act_relu, NULL, NULL, NULL, &e);
    double Q0[9], R0[9], Q1[9], R1[9];
    scm_init_random(m, 100, 0.5, 42, Q0, R0, &e);
    scm_init_random(m, 100, 0.5, 42, Q1, R1, &e);
    CHECK(memcmp(Q0, Q1, sizeof Q0) == 0 && memcmp(R0, R1, sizeof R0) == 0, "same seed, other init");
    scm_init_random(m, 100, 0.5, 43, Q1, R1, &e);
    CHECK(memcmp(Q0, Q1, sizeof Q0) != 0, "other seed, same init");
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.t_max = 50;
    scm_traj_result a, b;
    scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &a, &e);
    scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &b, &e);
    CHECK(a.n_out == b.n_out && memcmp(a.out_Q, b.out_Q, sizeof(double) * 9 * a.n_out) == 0 &&
              memcmp(a.out_eps, b.out_eps, sizeof(double) * a.n_out) == 0,
          "two identical runs differ");
    scm_traj_result_free(&a);
    scm_traj_result_free(&b);
    scm_model_free(m);
}

/* Moments of the exact sampler over n seeds, each compared with theory. */
static void test_init_moments(int K, int M, long d)
{
    const double sigma = 1.3;
    double T[9] = {1.0, 0.3, 0.0, 0.3, 2.0, 0.5, 0.0, 0.5, 1.5}; /* M = 3 */
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, T, NULL, NULL, &e);
    CHECK(m != NULL, "model: %s", e.msg);
    const long n = 40000;
    double sq = 0, sq2 = 0, so = 0, so2 = 0, sr[3] = {0}, sr2[3] = {0};
    double *Q = malloc(sizeof(double) * K * K), *R = malloc(sizeof(double) * K * M);
    for (long s = 0; s < n; s++) {
        scm_init_random(m, d, sigma, (unsigned long)s + 1, Q, R, &e);
        sq += Q[0];
        sq2 += Q[0] * Q[0];
        so += Q[1];
        so2 += Q[1] * Q[1];
        for (int j = 0; j < M; j++) {
            sr[j] += R[(K - 1) * M + j];
            sr2[j] += R[(K - 1) * M + j] * R[(K - 1) * M + j];
        }
    }
    double s2 = sigma * sigma, s4 = s2 * s2;
    /* mean and variance with their own Monte Carlo error bars */
    double mq = sq / n, vq = sq2 / n - mq * mq;
    CHECK(fabs(mq - s2) < 5 * sqrt(vq / n), "K=%d d=%ld: E Q_11 = %g, want %g", K, d, mq, s2);
    double vq_want = 2 * s4 / d;
    CHECK(fabs(vq - vq_want) < 0.05 * vq_want, "K=%d d=%ld: Var Q_11 = %g, want %g", K, d, vq, vq_want);
    double mo = so / n, vo = so2 / n - mo * mo;
    CHECK(fabs(mo) < 5 * sqrt(vo / n), "E Q_12 = %g", mo);
    CHECK(fabs(vo - s4 / d) < 0.05 * s4 / d, "Var Q_12 = %g, want %g", vo, s4 / d);
    for (int j = 0; j < M; j++) {
        double mr = sr[j] / n, vr = sr2[j] / n - mr * mr, want = s2 * T[j * M + j] / d;
        CHECK(fabs(mr) < 5 * sqrt(vr / n), "E R_%d = %g", j, mr);
        CHECK(fabs(vr - want) < 0.05 * want, "Var R_K%d = %g, want %g", j, vr, want);
    }
    free(Q);
    free(R);
    scm_model_free(m);
}

/* The two-stage accuracy option ends at the same fixed point as a run at
 * full accuracy throughout (same loss to 1e-8 relative, the final state
 * within the tolerances), in fewer steps; bad settings are named. */
static void test_two_stage(void)
{
    const int K = 17, M = 17;
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &e);
    double *Q0 = malloc(sizeof(double) * K * K), *R0 = malloc(sizeof(double) * K * M);
    scm_init_random(m, 1000, 1.0, 2, Q0, R0, &e);
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.t_max = 1e6;
    o.record = 0;
    scm_traj_result a, b;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &a, &e) == SCM_OK, "tight run");
    o.loose_until = 1e-6;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &b, &e) == SCM_OK, "two-stage run");
    CHECK(a.stop == SCM_STOP_FIXED_POINT && b.stop == SCM_STOP_FIXED_POINT, "stops %s %s",
          scm_stop_reason_str(a.stop), scm_stop_reason_str(b.stop));
    CHECK(a.eps > 1e-3, "this seed must end on a plateau (eps %g)", a.eps);
    /* both stop at max abs(F) < 1e-10, which fixes the loss to ~1e-9: the
     * sweep matches families to 1e-8 */
    CHECK_CLOSE(b.eps, a.eps, 1e-8, 0, "two-stage final loss");
    CHECK(max_diff(a.R, b.R, K * M) < 1e-4 && max_diff(a.Q, b.Q, K * K) < 1e-4,
          "final states differ by %g", max_diff(a.R, b.R, K * M));
    CHECK(b.max_F < o.grad_stop, "two-stage stopped at max_F %g", b.max_F);
    CHECK(b.n_steps < a.n_steps, "two-stage took %ld steps, tight %ld", b.n_steps, a.n_steps);
    scm_traj_result_free(&a);
    scm_traj_result_free(&b);
    /* Ended inside the loose stage (t_max = 50, F still large), where F is
     * only estimated from CVODE's interpolant: the reported loss and max_F
     * are the flow's own at the final state. */
    o.t_max = 50.0;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &b, &e) == SCM_OK &&
              b.stop == SCM_STOP_T_MAX,
          "loose run to t = 50");
    {
        scm_flow *fl = scm_flow_alloc(m);
        double *FQ = malloc(sizeof(double) * K * K), *FR = malloc(sizeof(double) * K * M), ef;
        CHECK(scm_flow_rhs(fl, b.Q, b.R, FQ, FR, &ef) == SCM_OK, "flow at the loose end");
        double mf = 0.0;
        for (int i = 0; i < K * K; i++)
            mf = fmax(mf, fabs(FQ[i]));
        for (int i = 0; i < K * M; i++)
            mf = fmax(mf, fabs(FR[i]));
        CHECK(b.eps == ef && b.max_F == mf && mf > o.loose_until,
              "loose end: eps %.17g vs %.17g, max_F %g vs %g", b.eps, ef, b.max_F, mf);
        free(FQ);
        free(FR);
        scm_flow_free(fl);
    }
    scm_traj_result_free(&b);
    o.t_max = 1e6;
    o.loose_until = 1e-11; /* below grad_stop */
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &a, &e) == SCM_EINVAL && strstr(e.msg, "loose_until"),
          "loose_until below grad_stop: %s", e.msg);
    o.loose_until = 1e-6;
    o.loose_rtol = 1e-10;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &a, &e) == SCM_EINVAL && strstr(e.msg, "loose_rtol"),
          "loose_rtol below rtol: %s", e.msg);
    free(Q0);
    free(R0);
    scm_model_free(m);
}

/* Over-parameterised runs with a loose stage: K = 18, M = 17, init seed
 * 1995124768 (run 1175 of `scm compare --M 17 --K 18`).  Its spare student
 * shrinks to Q_kk ~ 1e-8, where the loose stage (atol 1e-8) cannot resolve
 * it: before students below 100 loose_atol counted as dead, CVODE's steps
 * collapsed there (1e6 steps at t = 918, eps 1.2e-9).  Now it dies, is
 * frozen, and the run ends at the global minimum in a few hundred steps.
 * A loose stage that cannot resolve the initial norms is refused. */
static void test_loose_dead(void)
{
    const int K = 18, M = 17;
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &e);
    double *Q0 = malloc(sizeof(double) * K * K), *R0 = malloc(sizeof(double) * K * M);
    CHECK(m && scm_init_random(m, 1000, 1.0, 1995124768UL, Q0, R0, &e) == SCM_OK, "K = 18 init");
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.record = 0;
    o.linsol = SCM_LINSOL_GMRES;
    o.loose_until = 1e-6;
    o.eps_stop = 1e-10;
    o.max_steps = 20000;
    scm_traj_result r;
    /* with each Jacobian-vector product (the lagged one linearised, for a
     * few steps, where the student was alive), and with the frozen-S
     * preconditioner (S_kk ~ Q_kk^(-1/2) of the dying student), the same
     * student dies */
    int dead_k[5] = {-1, -1, -1, -1, -1};
    for (int jv = 0; jv < 5; jv++) {
        o.analytic_jv = jv < 3 ? jv : jv == 3 ? 0 : 2;
        o.precond = jv >= 3;
        CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r, &e) == SCM_OK, "K = 18 run");
        CHECK(r.stop == SCM_STOP_EPS && r.n_dead == 1 && r.n_steps < 5000 && fabs(r.eps) < 1e-9,
              "K = 18 run, jtimes %d: stop %s, %d dead, %ld steps, eps %g", jv,
              scm_stop_reason_str(r.stop), r.n_dead, r.n_steps, r.eps);
        int k = 0;
        while (k < K && !r.dead[k])
            k++;
        CHECK(k < K && r.Q[k * K + k] == 0.0, "the dead student is frozen at zero (jtimes %d)",
              jv);
        dead_k[jv] = k;
        scm_traj_result_free(&r);
    }
    CHECK(dead_k[1] == dead_k[0] && dead_k[2] == dead_k[0] && dead_k[3] == dead_k[0] &&
              dead_k[4] == dead_k[0],
          "the same student dies: %d %d %d %d %d", dead_k[0], dead_k[1], dead_k[2], dead_k[3],
          dead_k[4]);
    o.analytic_jv = 0;
    o.precond = 0;
    scm_init_scale(m, 1e-3, Q0, R0); /* Q_kk ~ 1e-6 */
    CHECK(scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &r, &e) == SCM_EINVAL &&
              strstr(e.msg, "integrator.loose_atol"),
          "small init with a loose stage: %s", e.msg);
    free(Q0);
    free(R0);
    scm_model_free(m);
}

/* scm_linalg_lu against SUNDIALS' dense LU on awkward matrices of the sizes
 * CVODE sees (I - gamma J of a state of 30 components, and others). */
static void test_dense_lu(void)
{
    enum { NMAX = 45 };
    static double A[NMAX * NMAX], B[NMAX * NMAX], x[NMAX], y[NMAX];
    const long sizes[] = {1, 2, 7, 30, 45};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const long n = sizes[s];
        unsigned long st = 2385 + (unsigned long)n;
        for (long i = 0; i < n * n; i++) {
            st = st * 6364136223846793005UL + 1442695040888963407UL;
            A[i] = (double)(st >> 11) / 9007199254740992.0 - 0.5;
        }
        for (long i = 0; i < n; i++)
            A[i * n + i] += i % 3 ? 0.0 : 1.385; /* some rows need pivoting */
        memcpy(B, A, sizeof(double) * (size_t)(n * n));
        long piv[NMAX];
        sunindextype spiv[NMAX];
        double *cols[NMAX];
        for (long j = 0; j < n; j++)
            cols[j] = B + j * n;
        CHECK(scm_linalg_lu(A, n, piv) == 0 && SUNDlsMat_denseGETRF(cols, n, n, spiv) == 0,
              "LU of a regular matrix (n = %ld)", n);
        int same = 1;
        for (long k = 0; k < n; k++)
            same &= piv[k] == (long)spiv[k];
        CHECK(same, "pivots differ from SUNDIALS' (n = %ld)", n);
        CHECK(max_diff(A, B, n * n) <= 1e-13, "LU factors differ by %g (n = %ld)",
              max_diff(A, B, n * n), n);
        for (long i = 0; i < n; i++)
            x[i] = y[i] = 0.385 * (double)i - 1.0;
        scm_linalg_lu_solve(A, n, piv, x);
        SUNDlsMat_denseGETRS(cols, n, spiv, y);
        CHECK(max_diff(x, y, n) <= 1e-12 * (1.0 + scm_linalg_max_abs(y, n)),
              "LU solutions differ by %g (n = %ld)", max_diff(x, y, n), n);
    }
    /* singular: the third column is a multiple of the first */
    double S[9] = {1.0, 2.0, 3.0, 0.5, -1.0, 2.0, 2.0, 4.0, 6.0};
    long piv[3];
    CHECK(scm_linalg_lu(S, 3, piv) == 3, "singular matrix: the zero pivot is the third");
}

/* Without a stopping test on F (grad_stop = 0) scm_traj_run evaluates the
 * loss alone after each step (when eps_stop needs it) and at the output
 * times: the same run as with the whole right-hand side (grad_stop tiny
 * but on), bit for bit: stop, time, recorded eps and states, final eps and
 * max |F|; gd (ReLU, eps threshold) and sgd (erf, v trained, to t_max).
 * Each recorded eps is the rule's rhs eps at the recorded state. */
static void test_loss_only_path(void)
{
    scm_error e;
    for (int c = 0; c < 2; c++) {
        scm_model *m = scm_model_alloc(3, 2, c ? &scm_act_erf : &scm_act_relu, NULL, NULL, NULL,
                                       &e);
        double Q0[9], R0[6];
        scm_init_random(m, 1000, 0.8, 5, Q0, R0, &e);
        const scm_rule *rule = c ? &scm_rule_sgd : &scm_rule_gd;
        scm_traj_opts o;
        scm_traj_result a, b;
        scm_traj_opts_default(&o);
        o.t_max = c ? 50.0 : 1e5;
        o.eps_stop = c ? 0.0 : 1e-6;
        o.n_out = 30;
        if (c) {
            o.rule_params.eta = 0.385;
            o.rule_params.lr_v_ratio = 0.7;
        }
        o.grad_stop = 1e-300;
        CHECK(scm_traj_run(m, rule, Q0, R0, &o, &a, &e) == SCM_OK, "run with F per step");
        o.grad_stop = 0.0;
        CHECK(scm_traj_run(m, rule, Q0, R0, &o, &b, &e) == SCM_OK, "run with the loss per step");
        CHECK(a.stop == (c ? SCM_STOP_T_MAX : SCM_STOP_EPS) && b.stop == a.stop && a.t == b.t &&
                  a.eps == b.eps && a.max_F == b.max_F && a.n_out == b.n_out,
              "%s: the runs differ (%s at %g, %s at %g; eps %g %g, max_F %g %g)", rule->name,
              scm_stop_reason_str(a.stop), a.t, scm_stop_reason_str(b.stop), b.t, a.eps, b.eps,
              a.max_F, b.max_F);
        if (a.n_out == b.n_out)
            CHECK(memcmp(a.out_eps, b.out_eps, sizeof(double) * (size_t)a.n_out) == 0 &&
                      memcmp(a.out_Q, b.out_Q, sizeof(double) * 9 * (size_t)a.n_out) == 0 &&
                      memcmp(a.out_v, b.out_v, sizeof(double) * 3 * (size_t)a.n_out) == 0,
                  "%s: recorded trajectories differ", rule->name);
        /* the recorded eps is the rule's eps at the recorded state, to the bit */
        scm_flow *fl = scm_flow_alloc(m);
        double y[32], yd[32], sc[128], ep;
        int same = 1;
        for (long i = 0; i < b.n_out; i++) {
            rule->pack(m, b.out_Q + 9 * i, b.out_R + 6 * i, b.out_v + 3 * i, y);
            same &= rule->rhs(&o.rule_params, fl, y, yd, &ep, sc) == SCM_OK && ep == b.out_eps[i];
        }
        CHECK(same, "%s: a recorded eps is not the rule's eps at the recorded state", rule->name);
        scm_flow_free(fl);
        scm_traj_result_free(&a);
        scm_traj_result_free(&b);
        scm_model_free(m);
    }
}

int main(void)
{
    gsl_set_error_handler_off();
    test_solvers_agree();
    test_stop_reasons();
    test_reproducible();
    test_two_stage();
    test_loose_dead();
    test_dense_lu();
    test_loss_only_path();
    test_init_moments(4, 3, 50); /* Bartlett branch: d - M >= K */
    test_init_moments(6, 3, 6);  /* direct branch: d - M < K */
    return TEST_SUMMARY();
}
