/* euler_baseline.c: the field's usual integrator as a baseline for `scm run`.
 *
 *   euler_baseline [N_STEPS [TAU_MAX]]      (defaults 1000000 and 2000)
 *
 * Fixed-step explicit Euler of the Saad-Solla equations (bench/saad_solla.h:
 * erf, K = M = 4, T = I, v* = 1, both layers trained with eta_v = eta,
 * finite eta = 0.5 with the eta^2 I4 term) from one initial state, N_STEPS
 * steps to TAU_MAX.  eps is compared at the output times of `scm run`
 * (t_first = TAU_MAX / 1000, n_out = 60 log-spaced; Euler's eps is
 * interpolated linearly between its steps, an O(dt^2) error below its own
 * O(dt)).  Its accuracy is measured against a reference solution of the
 * same equations by GSL's rk8pd at 1e-13 (independent of libscm and of
 * CVODE), and by step halving (N_STEPS / 2).  The error is the largest
 * |eps - eps_ref| over the output times.
 *
 * Then scm_traj_run, the integrator of `scm run` (CVODE BDF, error control),
 * is run on the same trajectory at the loosest rtol (10^(-k/2)) whose
 * error is at most Euler's: with the Saad-Solla right-hand side above
 * wrapped as an scm_rule table (the integrator's gain alone), and with the
 * library's `sgd` rule (eta = 0.5, lr_v_ratio = 1: what `scm run` does).
 *
 * Timing (ROUNDS rounds, default 3, env EULER_ROUNDS): each round times
 * Euler with N_STEPS once and then both scm_traj_run set-ups at their rtol
 * (the median over at least 11 runs filling >= 0.5 s), in wall-clock and in
 * process CPU time; the ratio of a round is Euler's time over the run's in
 * that round, and the median over rounds is reported.  On shared cores the
 * CPU-time ratio is the steadier one (a millisecond run is preempted in
 * bursts that a 6 s Euler run averages out).  docs/simulate.md section 5. */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "saad_solla.h"
#include "scm/init.h"
#include "scm/traj.h"

#define KU 4
#define MU 4
#define NT 60
#define ETA 0.5
#define V0 0.6
#define DIM (KU * KU + KU * MU + KU)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Wall-clock and CPU seconds. */
typedef struct {
    double wall, cpu;
} timing;

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static const double vs[MU] = {1, 1, 1, 1};
static const ss_params P = {KU, MU, ETA, 1.0, vs};

/* The initial state: Q(0), R(0) drawn by libscm's exact sampler (d = 10000,
 * sigma^2 = 0.5, seed 7; R(0) ~ 1e-2, so the run has a plateau), v(0) = V0. */
static void initial_state(double *y)
{
    scm_error err;
    scm_model *m = scm_model_alloc(KU, MU, &scm_act_erf, NULL, NULL, NULL, &err);
    if (!m || scm_init_random(m, 10000, sqrt(0.5), 7, y, y + KU * KU, &err)) {
        fprintf(stderr, "euler_baseline: initial state: %s\n", err.msg);
        exit(1);
    }
    for (int k = 0; k < KU; k++)
        y[KU * KU + KU * MU + k] = V0;
    scm_model_free(m);
}

/* The output times of scm_traj_run with t_first = tmax / 1000, n_out = NT. */
static void out_times(double tmax, double *t)
{
    const double t_first = tmax / 1000.0, ratio = log(tmax / t_first) / (NT - 1);
    for (int i = 0; i < NT; i++)
        t[i] = i == NT - 1 ? tmax : t_first * exp(ratio * i);
}

/* Euler with N steps; eps at the output times (linear interpolation). */
static timing euler(long N, double tmax, const double *times, double *eps)
{
    double y[DIM], f[DIM], e, e_prev = 0.0;
    initial_state(y);
    const double dt = tmax / (double)N;
    int j = 0;
    const double t0 = now(), c0 = cpu_now();
    for (long s = 0; s <= N && j < NT; s++) {
        ss_rhs(&P, y, f, &e);
        const double ts = (double)s * dt;
        for (; j < NT && times[j] <= ts; j++)
            eps[j] = s == 0 ? e : e + (times[j] - ts) / dt * (e - e_prev);
        e_prev = e;
        for (long i = 0; i < DIM; i++)
            y[i] += dt * f[i];
    }
    return (timing){now() - t0, cpu_now() - c0};
}

static int gsl_f(double t, const double *y, double *f, void *params)
{
    (void)t;
    (void)params;
    ss_rhs(&P, y, f, NULL);
    return GSL_SUCCESS;
}

/* The same equations by rk8pd at tolerance tol (absolute and relative). */
static double rk8pd(double tol, const double *times, double *eps)
{
    double y[DIM], f[DIM];
    initial_state(y);
    gsl_odeiv2_system sys = {gsl_f, NULL, DIM, NULL};
    gsl_odeiv2_driver *d =
        gsl_odeiv2_driver_alloc_y_new(&sys, gsl_odeiv2_step_rk8pd, 1e-3, tol, tol);
    double t = 0.0;
    const double t0 = now();
    for (int j = 0; j < NT; j++) {
        if (gsl_odeiv2_driver_apply(d, &t, times[j], y) != GSL_SUCCESS) {
            fprintf(stderr, "euler_baseline: rk8pd at %g failed at t = %g\n", tol, t);
            exit(1);
        }
        ss_rhs(&P, y, f, &eps[j]);
    }
    gsl_odeiv2_driver_free(d);
    return now() - t0;
}

/* ------------------------------------------------------------ scm_traj_run */

/* The Saad-Solla right-hand side as an scm_rule: state Q (full), R, v; v(0)
 * is the model's v. */
static long ssr_dim(const scm_model *m) { return (long)m->K * m->K + (long)m->K * m->M + m->K; }
static long ssr_scratch(const scm_model *m) { return ssr_dim(m); }
static void ssr_pack(const scm_model *m, const double *Q, const double *R, const double *v,
                     double *y)
{
    memcpy(y, Q, sizeof(double) * (size_t)(m->K * m->K));
    memcpy(y + m->K * m->K, R, sizeof(double) * (size_t)(m->K * m->M));
    memcpy(y + m->K * m->K + m->K * m->M, v ? v : m->v, sizeof(double) * (size_t)m->K);
}
static void ssr_unpack(const scm_model *m, const double *y, double *Q, double *R, double *v)
{
    memcpy(Q, y, sizeof(double) * (size_t)(m->K * m->K));
    memcpy(R, y + m->K * m->K, sizeof(double) * (size_t)(m->K * m->M));
    if (v)
        memcpy(v, y + m->K * m->K + m->K * m->M, sizeof(double) * (size_t)m->K);
}
static scm_status ssr_rhs(const scm_rule_params *p, scm_flow *fl, const double *y, double *ydot,
                          double *eps, double *scratch)
{
    (void)p;
    (void)fl;
    (void)scratch;
    ss_rhs(&P, y, ydot, eps);
    return SCM_OK;
}
static const scm_rule ss_rule = {.name = "saad_solla", .dim = ssr_dim, .scratch = ssr_scratch,
                                 .pack = ssr_pack, .unpack = ssr_unpack, .rhs = ssr_rhs,
                                 .trains_v = 1};

/* scm_traj_run of rule at rtol (atol = 1e-3 rtol) to tmax: eps at the
 * output times; with reps > 1 the median seconds over at least reps runs
 * filling >= 0.5 s (else one run).  Returns 0, or -1 if the run failed. */
#define MAX_REPS 4096
static int traj(const scm_rule *rule, double rtol, double tmax, int reps, double *eps,
                long *steps, long *rhs, timing *tm)
{
    double y[DIM], v0[KU];
    initial_state(y);
    for (int k = 0; k < KU; k++)
        v0[k] = y[KU * KU + KU * MU + k];
    scm_error err;
    scm_model *m = scm_model_alloc(KU, MU, &scm_act_erf, NULL, v0, vs, &err);
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.rtol = rtol;
    o.atol = 1e-3 * rtol;
    o.t_max = tmax;
    o.t_first = tmax / 1000.0;
    o.n_out = NT;
    o.eps_stop = 0.0;
    o.grad_stop = 0.0;
    if (rule == &scm_rule_sgd) {
        o.rule_params.eta = ETA;
        o.rule_params.lr_v_ratio = 1.0;
    }
    static double wall[MAX_REPS], cpu[MAX_REPS];
    double total = 0.0;
    int n = 0, ok = 1;
    do {
        scm_traj_result r;
        const double t0 = now(), c0 = cpu_now();
        if (scm_traj_run(m, rule, y, y + KU * KU, &o, &r, &err)) {
            fprintf(stderr, "euler_baseline: scm_traj_run: %s\n", err.msg);
            exit(1);
        }
        wall[n] = now() - t0;
        cpu[n] = cpu_now() - c0;
        total += wall[n++];
        ok = r.stop == SCM_STOP_T_MAX && r.n_out == NT + 1;
        if (!ok && getenv("EULER_VERBOSE"))
            printf("  rtol %g: stopped (%s) at t = %g: %s\n", rtol, scm_stop_reason_str(r.stop),
                   r.t, r.err.msg);
        for (int j = 0; ok && j < NT; j++)
            eps[j] = r.out_eps[j + 1]; /* out_t[0] = 0 */
        *steps = r.n_steps;
        *rhs = r.n_rhs;
        scm_traj_result_free(&r);
    } while (ok && n < MAX_REPS && (n < reps || (reps > 1 && total < 0.5)));
    scm_model_free(m);
    tm->wall = median(wall, n);
    tm->cpu = median(cpu, n);
    return ok ? 0 : -1;
}

static double max_diff(const double *a, const double *b)
{
    double m = 0.0;
    for (int j = 0; j < NT; j++)
        m = fmax(m, fabs(a[j] - b[j]));
    return m;
}

/* Seconds per right-hand side of rule at the initial state (mean over
 * calls filling 0.2 s). */
static double rhs_cost(const scm_rule *rule)
{
    double y0[DIM], v0[KU];
    initial_state(y0);
    memcpy(v0, y0 + KU * KU + KU * MU, sizeof v0);
    scm_error err;
    scm_model *m = scm_model_alloc(KU, MU, &scm_act_erf, NULL, v0, vs, &err);
    scm_flow *fl = scm_flow_alloc(m);
    scm_rule_params p;
    scm_rule_params_default(&p);
    if (rule == &scm_rule_sgd) {
        p.eta = ETA;
        p.lr_v_ratio = 1.0;
    }
    const long n = rule->dim(m);
    double *y = calloc((size_t)n, sizeof *y), *f = calloc((size_t)n, sizeof *f);
    double *scr = calloc((size_t)rule->scratch(m) + 1, sizeof *scr), eps;
    rule->pack(m, y0, y0 + KU * KU, v0, y);
    long calls = 0;
    const double t0 = now();
    double t = 0.0;
    do {
        for (int i = 0; i < 100; i++)
            rule->rhs(&p, fl, y, f, &eps, scr);
        calls += 100;
    } while ((t = now() - t0) < 0.2);
    free(y);
    free(f);
    free(scr);
    scm_flow_free(fl);
    scm_model_free(m);
    return t / (double)calls;
}

/* The loosest rtol of `name` (steps of sqrt 10) whose error is at most
 * target; prints it.  Returns the rtol, or 0 if none does. */
static double equal_accuracy(const char *name, const scm_rule *rule, double tmax,
                             const double *e_ref, double target)
{
    for (double rtol = 1e-3; rtol > 1e-12; rtol /= sqrt(10.0)) {
        double e[NT];
        long steps = 0, rhs = 0;
        timing tm;
        const int bad = traj(rule, rtol, tmax, 1, e, &steps, &rhs, &tm);
        const double err = bad ? INFINITY : max_diff(e, e_ref);
        if (getenv("EULER_VERBOSE"))
            printf("  %s rtol %g: %ld steps, %ld rhs, error %.3g%s\n", name, rtol, steps, rhs, err,
                   bad ? " (failed)" : "");
        if (err <= target) {
            printf("%-12s rtol %.3g (atol %.3g): %ld steps, %ld rhs, max |eps - eps_ref| = %.3g\n",
                   name, rtol, 1e-3 * rtol, steps, rhs, err);
            return rtol;
        }
    }
    printf("%-12s no rtol down to 1e-11 reaches Euler's error\n", name);
    return 0.0;
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    const long N = argc > 1 ? atol(argv[1]) : 1000000;
    const double tmax = argc > 2 ? atof(argv[2]) : 2000.0;
    if (N < 4 || !(tmax > 0.0)) {
        fprintf(stderr, "usage: euler_baseline [N_STEPS >= 4 [TAU_MAX > 0]]\n");
        return 2;
    }
    double times[NT], e_ref[NT], e_n[NT], e_half[NT];
    out_times(tmax, times);
    const double t_ref = rk8pd(1e-13, times, e_ref);
    const timing t_half = euler(N / 2, tmax, times, e_half);
    const timing t_n = euler(N, tmax, times, e_n);
    const double err_n = max_diff(e_n, e_ref), err_half = max_diff(e_half, e_ref);
    printf("trajectory   erf K = M = 4, both layers, eta = %g, tau to %g, eps %.6g -> %.6g\n",
           ETA, tmax, e_ref[0], e_ref[NT - 1]);
    printf("reference    rk8pd 1e-13: %.3f s\n", t_ref);
    printf("euler        %ld steps: %.3f s, max |eps - eps_ref| = %.3g\n", N, t_n.wall, err_n);
    printf("euler        %ld steps: %.3f s, max |eps - eps_ref| = %.3g\n", N / 2, t_half.wall,
           err_half);
    printf("halving      max |eps_N - eps_N/2| = %.3g (first order: about the error of N/2)\n",
           max_diff(e_n, e_half));
    printf("per step     %.3g us\n", 1e6 * t_n.wall / (double)N);
    if (getenv("EULER_VERBOSE"))
        for (int j = 0; j < NT; j++)
            printf("t %10.4g  eps_ref %.10g  euler %.10g  half %.10g\n", times[j], e_ref[j],
                   e_n[j], e_half[j]);
    printf("rhs          Saad-Solla sums %.3g us, library sgd rule %.3g us per evaluation\n",
           1e6 * rhs_cost(&ss_rule), 1e6 * rhs_cost(&scm_rule_sgd));
    /* Equal accuracy: the loosest rtol of each set-up with Euler's error. */
    const char *names[2] = {"scm_traj_run", "scm run sgd"};
    const scm_rule *rules[2] = {&ss_rule, &scm_rule_sgd};
    double rtol[2];
    for (int r = 0; r < 2; r++)
        rtol[r] = equal_accuracy(names[r], rules[r], tmax, e_ref, err_n);
    /* Timing rounds: Euler, then both runs, in each round. */
    const char *env = getenv("EULER_ROUNDS");
    const int rounds = env && atoi(env) > 0 && atoi(env) <= 99 ? atoi(env) : 3;
    double ew[99], ec[99], rw[2][99], rc[2][99], qw[2][99], qc[2][99];
    for (int k = 0; k < rounds; k++) {
        double e[NT];
        const timing te = k == 0 ? t_n : euler(N, tmax, times, e);
        ew[k] = te.wall;
        ec[k] = te.cpu;
        printf("round %d      euler %.3f s (cpu %.3f s)", k + 1, te.wall, te.cpu);
        for (int r = 0; r < 2; r++) {
            long steps, rhs;
            timing tr = {NAN, NAN};
            if (rtol[r] > 0.0 && traj(rules[r], rtol[r], tmax, 11, e, &steps, &rhs, &tr) != 0)
                tr.wall = tr.cpu = NAN;
            rw[r][k] = tr.wall;
            rc[r][k] = tr.cpu;
            qw[r][k] = te.wall / tr.wall;
            qc[r][k] = te.cpu / tr.cpu;
            printf("; %s %.2f ms (cpu %.2f ms): %.0fx (cpu %.0fx)", names[r], 1e3 * tr.wall,
                   1e3 * tr.cpu, qw[r][k], qc[r][k]);
        }
        printf("\n");
        fflush(stdout);
    }
    printf("median       euler %.3f s (cpu %.3f s) over %d rounds\n", median(ew, rounds),
           median(ec, rounds), rounds);
    for (int r = 0; r < 2; r++)
        printf("median       %-12s %.2f ms (cpu %.2f ms): %.0fx faster than Euler at equal "
               "accuracy (cpu %.0fx)\n",
               names[r], 1e3 * median(rw[r], rounds), 1e3 * median(rc[r], rounds),
               median(qw[r], rounds), median(qc[r], rounds));
    return 0;
}
