/* euler_baseline.c: the field's usual integrator as a baseline for `scm run`.
 *
 *   euler_baseline [N_STEPS [TAU_MAX]]      (defaults 1000000 and 2000)
 *
 * Fixed-step explicit Euler of the Saad-Solla equations (bench/saad_solla.h:
 * erf, K = M = 4, T = I, v* = 1, both layers trained with eta_v = eta,
 * finite eta = 0.5 with the eta^2 I4 term) from one initial state, N_STEPS
 * steps to TAU_MAX.  Its accuracy is measured two ways: against a reference
 * solution of the same equations by GSL's rk8pd at 1e-13 (independent of
 * libscm and of CVODE), and by step halving (N_STEPS / 2).  The error is the
 * largest |eps - eps_ref| over 60 log-spaced output times (on the Euler grid).
 * When libscm has the `sgd` rule with a trained second layer it is timed on
 * the same trajectory at the loosest tolerance whose error is at most
 * Euler's, and the time ratio is printed (docs/simulate.md, "Benchmark"). */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_odeiv2.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "saad_solla.h"
#include "scm/init.h"

#define KU 4
#define MU 4
#define NT 60
#define ETA 0.5

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const double vs[MU] = {1, 1, 1, 1};
static const ss_params P = {KU, MU, ETA, 1.0, vs};

/* The initial state: Q(0), R(0) drawn by libscm's exact sampler (d = 10000,
 * sigma^2 = 0.5, seed 7; R(0) ~ 1e-2, so the run has a plateau), v(0) = 0.6. */
static void initial_state(double *y)
{
    scm_error err;
    scm_model *m = scm_model_alloc(KU, MU, &scm_act_erf, NULL, NULL, NULL, &err);
    if (!m || scm_init_random(m, 10000, sqrt(0.5), 7, y, y + KU * KU, &err)) {
        fprintf(stderr, "euler_baseline: initial state: %s\n", err.msg);
        exit(1);
    }
    for (int k = 0; k < KU; k++)
        y[KU * KU + KU * MU + k] = 0.6;
    scm_model_free(m);
}

/* Output times: NT log-spaced from TAU_MAX / 1000 to TAU_MAX, moved onto the
 * grid of the N-step run (also on the grid of N / 2 steps when N is even
 * and the index is). */
static void out_times(long N, double tmax, long *idx)
{
    for (int i = 0; i < NT; i++) {
        const double t = tmax * pow(10.0, -3.0 + 3.0 * i / (NT - 1));
        idx[i] = 2 * (long)llround(t / tmax * (double)N / 2);
        if (idx[i] < 2)
            idx[i] = 2;
    }
}

/* Euler with N steps; eps at the output indices (in steps of the N grid,
 * divided by N / Nrun). */
static double euler(long N, long Nref, double tmax, const long *idx, double *eps)
{
    const long n = ss_dim(&P);
    double y[SS_MAXU * SS_MAXU * 2], f[SS_MAXU * SS_MAXU * 2], e;
    initial_state(y);
    const double dt = tmax / (double)N;
    const long ratio = Nref / N;
    int j = 0;
    const double t0 = now();
    for (long s = 0; s <= N && j < NT; s++) {
        ss_rhs(&P, y, f, &e);
        while (j < NT && idx[j] == s * ratio)
            eps[j++] = e;
        for (long i = 0; i < n; i++)
            y[i] += dt * f[i];
    }
    return now() - t0;
}

static int gsl_f(double t, const double *y, double *f, void *params)
{
    (void)t;
    (void)params;
    ss_rhs(&P, y, f, NULL);
    return GSL_SUCCESS;
}

/* The same equations by rk8pd at tolerance tol (absolute and relative);
 * returns the seconds, eps at the output times in eps. */
static double rk8pd(double tol, long N, double tmax, const long *idx, double *eps)
{
    const long n = ss_dim(&P);
    double y[SS_MAXU * SS_MAXU * 2], f[SS_MAXU * SS_MAXU * 2];
    initial_state(y);
    gsl_odeiv2_system sys = {gsl_f, NULL, (size_t)n, NULL};
    gsl_odeiv2_driver *d =
        gsl_odeiv2_driver_alloc_y_new(&sys, gsl_odeiv2_step_rk8pd, 1e-3, tol, tol);
    double t = 0.0;
    const double t0 = now();
    for (int j = 0; j < NT; j++) {
        const double ti = tmax * (double)idx[j] / (double)N;
        if (gsl_odeiv2_driver_apply(d, &t, ti, y) != GSL_SUCCESS) {
            fprintf(stderr, "euler_baseline: rk8pd at %g failed at t = %g\n", tol, t);
            exit(1);
        }
        ss_rhs(&P, y, f, &eps[j]);
    }
    gsl_odeiv2_driver_free(d);
    return now() - t0;
}

static double max_diff(const double *a, const double *b)
{
    double m = 0.0;
    for (int j = 0; j < NT; j++)
        m = fmax(m, fabs(a[j] - b[j]));
    return m;
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
    long idx[NT];
    double e_ref[NT], e_n[NT], e_half[NT];
    out_times(N, tmax, idx);
    const double t_ref = rk8pd(1e-13, N, tmax, idx, e_ref);
    const double t_half = euler(N / 2, N, tmax, idx, e_half);
    const double t_n = euler(N, N, tmax, idx, e_n);
    const double err_n = max_diff(e_n, e_ref), err_half = max_diff(e_half, e_ref);
    printf("trajectory   erf K = M = 4, both layers, eta = %g, tau to %g, eps %.6g -> %.6g\n",
           ETA, tmax, e_ref[0], e_ref[NT - 1]);
    printf("reference    rk8pd 1e-13: %.3f s\n", t_ref);
    printf("euler        %ld steps: %.3f s, max |eps - eps_ref| = %.3g\n", N, t_n, err_n);
    printf("euler        %ld steps: %.3f s, max |eps - eps_ref| = %.3g\n", N / 2, t_half,
           err_half);
    printf("halving      max |eps_N - eps_N/2| = %.3g (first order: about the error of N/2)\n",
           max_diff(e_n, e_half));
    printf("per step     %.3g us\n", 1e6 * t_n / (double)N);
    /* Context: an adaptive high-order method on the same equations, at the
     * loosest tolerance (powers of 10) whose error is at most Euler's. */
    for (double tol = 1e-3; tol > 1e-13; tol /= 10) {
        double e_rk[NT], secs = 0.0;
        int reps = 0;
        do {
            secs += rk8pd(tol, N, tmax, idx, e_rk);
            reps++;
        } while (secs < 0.5);
        const double err = max_diff(e_rk, e_ref);
        if (err <= err_n) {
            printf("rk8pd        tol %g: %.4f s, max |eps - eps_ref| = %.3g: %.0fx faster than "
                   "Euler at equal accuracy\n",
                   tol, secs / reps, err, t_n / (secs / reps));
            break;
        }
    }
    if (getenv("EULER_VERBOSE"))
        for (int j = 0; j < NT; j++)
            printf("t %10.4g  eps_ref %.10g  euler %.10g  half %.10g\n", tmax * (double)idx[j] / (double)N, e_ref[j], e_n[j], e_half[j]);
    return 0;
}
