/* bench_rhs.c: throughput of the right-hand side and cost of a trajectory.
 *
 * (a) Right-hand-side evaluations per second for ReLU at K = M = 4, 17, 50,
 *     100 (T = I, v = v* = 1, a random state from scm_init_random with
 *     d = 1000, sigma = 1): the matrix form scm_flow_rhs against the textbook
 *     I3 form scm_flow_rhs_i3, in the same run.  Each timing is a batch of
 *     calls lasting at least the target time (0.3 s; less for the slow I3
 *     form at K = 100), repeated 5 times; the median is reported.
 * (b) Wall time of one K = M = 17 trajectory from a random init (d = 1000,
 *     sigma = 1, fixed seed; scm_traj_opts_default with t_max = 1e6) to its
 *     fixed point, for BDF + dense, BDF + GMRES and Adams + dense, with the
 *     stop reason and the CVODE counters.
 *
 * Usage: bench_rhs [--quick] [--only=rhs|traj] [--config=bdf-dense|bdf-gmres|adams-dense]
 *                  [--t-max=T]
 * --quick shortens the timings (0.03 s batches, 3 repetitions); --only and
 * --config select parts (for profiling); --t-max overrides 1e6.
 * Exit status 0 on success, 1 on any error (all printed to stderr). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/flow.h"
#include "scm/init.h"
#include "scm/model.h"
#include "scm/rule.h"
#include "scm/traj.h"

#define INIT_D 1000L
#define INIT_SIGMA 1.0
#define RHS_SEED 12345UL
#define TRAJ_SEED 1UL
#define MAX_REPS 5

static double now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        perror("clock_gettime");
        exit(1);
    }
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Keeps the results of the timed calls alive. */
static volatile double sink;

typedef enum { FORM_MATRIX, FORM_I3 } rhs_form;

typedef struct {
    scm_flow *fl;
    const double *Q, *R;
    double *FQ, *FR;
} rhs_args;

/* n calls of the chosen form; returns the elapsed seconds, or -1 on error. */
static double time_calls(const rhs_args *a, rhs_form form, long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++) {
        scm_status st = form == FORM_MATRIX ? scm_flow_rhs(a->fl, a->Q, a->R, a->FQ, a->FR, NULL)
                                            : scm_flow_rhs_i3(a->fl, a->Q, a->R, a->FQ, a->FR);
        if (st) {
            fprintf(stderr, "bench_rhs: %s failed: %s\n",
                    form == FORM_MATRIX ? "scm_flow_rhs" : "scm_flow_rhs_i3", scm_status_str(st));
            return -1.0;
        }
        sink += a->FQ[0] + a->FR[0];
    }
    return now() - t0;
}

/* Median calls per second over reps batches, each of >= target seconds.
 * *calls gets the batch size.  Returns -1 on error. */
static double rate(const rhs_args *a, rhs_form form, double target, int reps, long *calls)
{
    long n = 1;
    double dt;
    for (;;) { /* calibrate: double n until one batch lasts the target */
        if ((dt = time_calls(a, form, n)) < 0.0)
            return -1.0;
        if (dt >= target)
            break;
        long want = dt > 0.0 ? (long)ceil(1.2 * n * target / dt) : 2 * n;
        n = want > 2 * n ? (want < 64 * n ? want : 64 * n) : 2 * n;
    }
    double r[MAX_REPS];
    for (int i = 0; i < reps; i++) {
        if ((dt = time_calls(a, form, n)) < 0.0)
            return -1.0;
        r[i] = (double)n / dt;
    }
    *calls = n;
    return median(r, reps);
}

/* Largest |x - y| relative to max(|y|). */
static double rel_diff(const double *x, const double *y, long n)
{
    double d = 0.0, s = 0.0;
    for (long i = 0; i < n; i++) {
        d = fmax(d, fabs(x[i] - y[i]));
        s = fmax(s, fabs(y[i]));
    }
    return s > 0.0 ? d / s : d;
}

static int bench_rhs_part(int quick)
{
    static const int sizes[] = {4, 17, 50, 100};
    const double target = quick ? 0.03 : 0.3;
    const int reps = quick ? 3 : MAX_REPS;
    printf("(a) right-hand side, ReLU, T = I, v = v* = 1, random state (d = %ld, sigma = %g, "
           "seed %lu)\n",
           INIT_D, INIT_SIGMA, RHS_SEED);
    printf("    median of %d batches of >= %.2f s each (I3 at K = 100: >= %.2f s)\n", reps,
           target, target / 3.0);
    printf("%5s %7s %14s %10s %14s %10s %10s %11s\n", "K=M", "dim", "matrix [1/s]", "calls",
           "I3 [1/s]", "calls", "ratio", "rel diff");
    int rc = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && rc == 0; s++) {
        const int K = sizes[s], M = K;
        scm_error err;
        scm_error_clear(&err);
        scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &err);
        if (!m) {
            fprintf(stderr, "bench_rhs: scm_model_alloc(K = %d): %s\n", K, err.msg);
            return 1;
        }
        scm_flow *fl = scm_flow_alloc(m);
        size_t KK = (size_t)K * K, KM = (size_t)K * M;
        double *Q = malloc(sizeof(double) * KK), *R = malloc(sizeof(double) * KM);
        double *FQ = malloc(sizeof(double) * KK), *FR = malloc(sizeof(double) * KM);
        double *FQ3 = malloc(sizeof(double) * KK), *FR3 = malloc(sizeof(double) * KM);
        if (!fl || !Q || !R || !FQ || !FR || !FQ3 || !FR3) {
            fprintf(stderr, "bench_rhs: out of memory at K = %d\n", K);
            rc = 1;
            goto next;
        }
        scm_status st = scm_init_random(m, INIT_D, INIT_SIGMA, RHS_SEED, Q, R, &err);
        if (st) {
            fprintf(stderr, "bench_rhs: scm_init_random(K = %d): %s\n", K, err.msg);
            rc = 1;
            goto next;
        }
        /* The two forms must agree (Stein's lemma): a guard against timing
         * a broken code path. */
        scm_status s1 = scm_flow_rhs(fl, Q, R, FQ, FR, NULL);
        scm_status s2 = scm_flow_rhs_i3(fl, Q, R, FQ3, FR3);
        if (s1 || s2) {
            fprintf(stderr, "bench_rhs: K = %d: rhs %s, rhs_i3 %s\n", K, scm_status_str(s1),
                    scm_status_str(s2));
            rc = 1;
            goto next;
        }
        double dq = rel_diff(FQ, FQ3, (long)KK), dr = rel_diff(FR, FR3, (long)KM);
        double diff = fmax(dq, dr);
        if (!(diff < 1e-8)) {
            fprintf(stderr, "bench_rhs: K = %d: the two forms disagree (rel diff %.3g)\n", K,
                    diff);
            rc = 1;
            goto next;
        }
        rhs_args a = {fl, Q, R, FQ, FR};
        long n_mat = 0, n_i3 = 0;
        double r_mat = rate(&a, FORM_MATRIX, target, reps, &n_mat);
        double r_i3 = r_mat < 0.0 ? -1.0
                                  : rate(&a, FORM_I3, K >= 100 ? target / 3.0 : target, reps,
                                         &n_i3);
        if (r_mat < 0.0 || r_i3 < 0.0) {
            rc = 1;
            goto next;
        }
        printf("%5d %7ld %14.4g %10ld %14.4g %10ld %10.1f %11.2e\n", K,
               scm_rule_gd.dim(m), r_mat, n_mat, r_i3, n_i3, r_mat / r_i3, diff);
        fflush(stdout);
    next:
        free(Q);
        free(R);
        free(FQ);
        free(FR);
        free(FQ3);
        free(FR3);
        scm_flow_free(fl);
        scm_model_free(m);
    }
    return rc;
}

typedef struct {
    const char *name;
    scm_method method;
    scm_linsol linsol;
} traj_config;

static const traj_config configs[] = {
    {"bdf-dense", SCM_METHOD_BDF, SCM_LINSOL_DENSE},
    {"bdf-gmres", SCM_METHOD_BDF, SCM_LINSOL_GMRES},
    {"adams-dense", SCM_METHOD_ADAMS, SCM_LINSOL_DENSE},
};
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

static int bench_traj_part(const char *only_config, double t_max)
{
    const int K = 17, M = 17;
    scm_error err;
    scm_error_clear(&err);
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &err);
    if (!m) {
        fprintf(stderr, "bench_rhs: scm_model_alloc(K = %d): %s\n", K, err.msg);
        return 1;
    }
    int rc = 0;
    double *Q0 = malloc(sizeof(double) * (size_t)K * K);
    double *R0 = malloc(sizeof(double) * (size_t)K * M);
    if (!Q0 || !R0) {
        fprintf(stderr, "bench_rhs: out of memory\n");
        rc = 1;
        goto out;
    }
    scm_status st = scm_init_random(m, INIT_D, INIT_SIGMA, TRAJ_SEED, Q0, R0, &err);
    if (st) {
        fprintf(stderr, "bench_rhs: scm_init_random: %s\n", err.msg);
        rc = 1;
        goto out;
    }
    scm_traj_opts o0;
    scm_traj_opts_default(&o0);
    o0.t_max = t_max;
    printf("\n(b) trajectory, ReLU, K = M = %d (state dim %ld), random init (d = %ld, sigma = %g, "
           "seed %lu)\n",
           K, scm_rule_gd.dim(m), INIT_D, INIT_SIGMA, TRAJ_SEED);
    printf("    default options (rtol %g, atol %g, grad_stop %g, eps_stop %g, n_out %d), t_max = "
           "%g\n",
           o0.rtol, o0.atol, o0.grad_stop, o0.eps_stop, o0.n_out, o0.t_max);
    printf("%-12s %9s %-13s %11s %11s %10s %8s %8s %8s %9s\n", "config", "wall [s]", "stop",
           "t", "eps", "max|F|", "steps", "rhs", "jac", "lin_iters");
    for (int i = 0; i < N_CONFIGS; i++) {
        if (only_config && strcmp(only_config, configs[i].name) != 0)
            continue;
        scm_traj_opts o = o0;
        o.method = configs[i].method;
        o.linsol = configs[i].linsol;
        scm_traj_result res;
        scm_error_clear(&err);
        double t0 = now();
        st = scm_traj_run(m, &scm_rule_gd, Q0, R0, &o, &res, &err);
        double wall = now() - t0;
        if (st) {
            fprintf(stderr, "bench_rhs: %s: scm_traj_run: %s: %s\n", configs[i].name,
                    scm_status_str(st), err.msg);
            rc = 1;
            continue;
        }
        printf("%-12s %9.3f %-13s %11.5g %11.5g %10.3g %8ld %8ld %8ld %9ld\n", configs[i].name,
               wall, scm_stop_reason_str(res.stop), res.t, res.eps, res.max_F, res.n_steps,
               res.n_rhs, res.n_jac_evals, res.n_lin_iters);
        if (res.stop == SCM_STOP_FAILED) {
            printf("    failed: %s\n", res.err.msg);
            fprintf(stderr, "bench_rhs: %s: the run failed: %s\n", configs[i].name,
                    res.err.msg);
            rc = 1;
        }
        fflush(stdout);
        scm_traj_result_free(&res);
    }
out:
    free(Q0);
    free(R0);
    scm_model_free(m);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_rhs [--quick] [--only=rhs|traj] "
               "[--config=bdf-dense|bdf-gmres|adams-dense] [--t-max=T]\n");
}

int main(int argc, char **argv)
{
    int quick = 0, do_rhs = 1, do_traj = 1;
    const char *config = NULL;
    double t_max = 1e6;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--quick") == 0) {
            quick = 1;
        } else if (strcmp(a, "--only=rhs") == 0) {
            do_traj = 0;
        } else if (strcmp(a, "--only=traj") == 0) {
            do_rhs = 0;
        } else if (strncmp(a, "--config=", 9) == 0) {
            config = a + 9;
            int ok = 0;
            for (int c = 0; c < N_CONFIGS; c++)
                ok |= strcmp(config, configs[c].name) == 0;
            if (!ok) {
                fprintf(stderr, "bench_rhs: unknown config '%s'\n", config);
                usage(stderr);
                return 1;
            }
        } else if (strncmp(a, "--t-max=", 8) == 0) {
            char *end;
            t_max = strtod(a + 8, &end);
            if (*end || !(t_max > 0.0 && isfinite(t_max))) {
                fprintf(stderr, "bench_rhs: bad --t-max '%s'\n", a + 8);
                return 1;
            }
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_rhs: unknown option '%s'\n", a);
            usage(stderr);
            return 1;
        }
    }
    int rc = 0;
    if (do_rhs)
        rc |= bench_rhs_part(quick);
    if (do_traj)
        rc |= bench_traj_part(config, t_max);
    return rc;
}
