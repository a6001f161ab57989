/* bench_fixedpoint.c: cost of the fixed-point enumeration (issue 3, item 8).
 *
 * (a) Wall time to enumerate all k1 families (the k1 ansatz, k1 = 0..M,
 *     scm_fp_opts_default: 200 random starts + the guess per k1) at
 *     K = M = 17 (with the full-space checks and polish of the defaults,
 *     K <= 24) and at K = M = 1000 (block level only: full checks off).
 * (b) Block-level residual evaluations per second (scm_blockflow_residual)
 *     at both sizes, k1 = 2, at the k1 = 2 solution, batches of >= 0.3 s,
 *     median of 5.
 *
 * (c) issue 11: the full-space polish at K = M = 17, every point of every
 *     k1, with the old target 1e-15 and with the default (the roundoff
 *     floor, max(1e-14, 5e-16 (K + M))), same run.
 * (d) issue 11: at K = M = 20 and 1000, block level, the k1 sweep
 *     (fpsweep.h: starts from the neighbouring k1, --sweep-random random
 *     starts per k1, default 2) against 200 random starts per k1 on every
 *     k1 (M = 20) or every 25th k1 (M = 1000, time scaled to all k1): wall
 *     and CPU time, solutions found, and those of the random starts the
 *     sweep misses (distinct losses, to 1e-10 relative, as the sweep
 *     deduplicates), and vice versa.
 *
 * Usage: bench_fixedpoint [--starts N] [--sweep-random N] [--only=17|1000|polish|sweep]
 * Exit status 0 on success, 1 on error. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/fixedpoint.h"
#include "scm/fpsweep.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run(const scm_ansatz *a, int M, int starts)
{
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = starts;
    if (M > 24)
        o.full_max_K = 0;
    double t0 = now();
    int total = 0, conv = 0, nst = 0;
    double x2[64];
    int nsc2 = 0;
    for (int k1 = 0; k1 <= M; k1++) {
        scm_error e;
        scm_ansatz_inst *in = scm_ansatz_instantiate(a, M, M, k1, &e);
        if (!in) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        scm_fp_set s;
        scm_fp_set_init(&s);
        if (scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        total += s.n;
        conv += s.n_converged;
        nst += s.n_starts;
        if (k1 == 2 && s.n > 0) {
            int best = 0;
            for (int p = 1; p < s.n; p++)
                if (s.pt[p].eps < s.pt[best].eps)
                    best = p;
            nsc2 = s.pt[best].nsc;
            memcpy(x2, s.pt[best].x, sizeof(double) * (size_t)nsc2);
        }
        scm_fp_set_free(&s);
        scm_ansatz_inst_free(in);
    }
    double t_enum = now() - t0;
    printf("K = M = %-5d enumerate k1 = 0..%d: %.2f s  (%d starts, %d converged, %d distinct "
           "solutions; %s)\n",
           M, M, t_enum, nst, conv, total,
           M > 24 ? "block level only" : "with full-space checks and polish");
    /* residual throughput */
    scm_error e;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, M, M, 2, &e);
    scm_blockflow *bf = scm_blockflow_alloc(in, &scm_act_relu);
    double F[64], eps, rate[5];
    for (int r = 0; r < 5; r++) {
        long n = 0;
        double t = now(), dt;
        do {
            for (int i = 0; i < 1000; i++)
                scm_blockflow_residual(bf, x2, F, &eps);
            n += 1000;
            dt = now() - t;
        } while (dt < 0.3);
        rate[r] = (double)n / dt;
    }
    qsort(rate, 5, sizeof *rate, cmpd);
    printf("K = M = %-5d block residual (k1 = 2, %d scalars): %.3g evaluations/s (median of 5)\n",
           M, nsc2, rate[2]);
    scm_blockflow_free(bf);
    scm_ansatz_inst_free(in);
    return 0;
}

/* (c) */
static int run_polish(const scm_ansatz *a, int M)
{
    double t_old = 0.0, t_new = 0.0;
    int n = 0, n_old_it = 0, n_new_it = 0;
    double worst_old = 0.0, worst_new = 0.0;
    for (int pass = 0; pass < 2; pass++) {
        scm_fp_opts o;
        scm_fp_opts_default(&o);
        o.n_random = 60;
        o.polish_tol = pass == 0 ? 1e-15 : 0.0;
        double c0 = cpu();
        for (int k1 = 0; k1 <= M; k1++) {
            scm_error e;
            scm_ansatz_inst *in = scm_ansatz_instantiate(a, M, M, k1, &e);
            scm_fp_set s;
            scm_fp_set_init(&s);
            if (!in || scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s, &e)) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
            }
            for (int p = 0; p < s.n; p++) {
                double r = s.pt[p].res_polish;
                if (pass == 0) {
                    n++;
                    n_old_it += s.pt[p].polish_shift > 0.0;
                    worst_old = fmax(worst_old, r);
                } else {
                    n_new_it += s.pt[p].polish_shift > 0.0;
                    worst_new = fmax(worst_new, r);
                }
            }
            scm_fp_set_free(&s);
            scm_ansatz_inst_free(in);
        }
        *(pass == 0 ? &t_old : &t_new) = cpu() - c0;
    }
    printf("K = M = %d polish of %d points (60 random starts per k1, enumeration included):\n"
           "  target 1e-15 (before): %.2f s CPU, %d moved, worst residual %.3g\n"
           "  default target (after): %.2f s CPU, %d moved, worst residual %.3g  (x%.1f)\n",
           M, n, t_old, n_old_it, worst_old, t_new, n_new_it, worst_new, t_old / t_new);
    return 0;
}

/* Is a solution with loss eps (to 1e-10 relative) in s?  By loss, as the
 * sweep deduplicates (a continuum of points has one loss). */
static int in_set(const scm_fp_set *s, double eps)
{
    for (int p = 0; p < s->n; p++)
        if (fabs(s->pt[p].eps - eps) <= 1e-10 * fmax(1e-3, fabs(eps)))
            return 1;
    return 0;
}

static int n_losses(const scm_fp_set *s)
{
    int n = 0;
    for (int p = 0; p < s->n; p++) {
        int seen = 0;
        for (int q = 0; q < p && !seen; q++)
            seen = fabs(s->pt[p].eps - s->pt[q].eps) <= 1e-10 * fmax(1e-3, fabs(s->pt[q].eps));
        n += !seen;
    }
    return n;
}

/* (d) */
static int run_sweep(const scm_ansatz *a, int M, int sweep_random)
{
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.full_max_K = 0;
    o.n_random = sweep_random;
    scm_error e;
    scm_fp_sweep sw;
    double w0 = now(), c0 = cpu();
    if (scm_fp_sweep_k1(a, M, M, &scm_act_relu, &o, 20, &sw, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    double w_sweep = now() - w0, c_sweep = cpu() - c0;
    int n_sweep = 0, seeds = 0, nothing = 0;
    for (int i = 0; i < sw.n; i++) {
        n_sweep += sw.set[i].n;
        seeds += sw.seeds[i];
        nothing += sw.nothing_new[i];
    }
    int stride = M > 100 ? 25 : 1, n_sub = 0, n_rand = 0, missed = 0, extra = 0;
    o.n_random = 200;
    w0 = now();
    c0 = cpu();
    for (int k1 = 0; k1 <= M; k1 += stride) {
        scm_fp_set s;
        scm_fp_set_init(&s);
        if (scm_fp_enumerate(a, sw.inst[k1], &scm_act_relu, &o, NULL, 0, &s, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        n_sub++;
        n_rand += n_losses(&s);
        for (int p = 0; p < s.n; p++)
            missed += !in_set(&sw.set[k1], s.pt[p].eps) &&
                      !(p > 0 && in_set(&(scm_fp_set){.n = p, .pt = s.pt}, s.pt[p].eps));
        for (int p = 0; p < sw.set[k1].n; p++)
            extra += !in_set(&s, sw.set[k1].pt[p].eps);
        scm_fp_set_free(&s);
    }
    double scale = (double)(M + 1) / n_sub;
    double w_rand = (now() - w0) * scale, c_rand = (cpu() - c0) * scale;
    printf("K = M = %-5d all k1, block level:\n"
           "  200 random starts per k1 (before%s): %.2f s wall, %.2f s CPU\n"
           "  k1 sweep, %d random per k1 (after): %.3f s wall, %.3f s CPU  (x%.0f CPU), "
           "%d passes, %d solutions, %d neighbour seeds, %d starts found nothing new\n"
           "  on the %d k1 compared: random found %d distinct losses, the sweep misses %d of "
           "them and finds %d more\n",
           M, stride > 1 ? ", every 25th k1, time scaled" : "", w_rand, c_rand, sweep_random,
           w_sweep, c_sweep, c_rand / c_sweep, sw.passes, n_sweep, seeds, nothing, n_sub,
           n_rand, missed, extra);
    scm_fp_sweep_free(&sw);
    return 0;
}

int main(int argc, char **argv)
{
    int starts = 200, only = 0, sweep_random = 2;
    const char *mode = "";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--starts") && i + 1 < argc)
            starts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sweep-random") && i + 1 < argc)
            sweep_random = atoi(argv[++i]);
        else if (!strncmp(argv[i], "--only=", 7)) {
            mode = argv[i] + 7;
            only = atoi(mode);
            if (!only)
                only = -1;
        }
        else {
            fprintf(stderr, "usage: bench_fixedpoint [--starts N] [--sweep-random N] "
                            "[--only=17|1000|polish|sweep]\n");
            return 1;
        }
    }
    gsl_set_error_handler_off();
    scm_ansatz *a = NULL;
    for (int i = 0; i < scm_ansatz_builtin_count() && !a; i++) {
        const char *f, *t = scm_ansatz_builtin_text(i, &f);
        scm_error e;
        a = scm_ansatz_parse(t, strlen(t), f, &e);
        if (a && strcmp(scm_ansatz_name(a), "k1") != 0) {
            scm_ansatz_free(a);
            a = NULL;
        }
    }
    if (!a) {
        fprintf(stderr, "no built-in k1 ansatz\n");
        return 1;
    }
    int rc = 0;
    if (!only || only == 17)
        rc |= run(a, 17, starts);
    if (!only || only == 1000)
        rc |= run(a, 1000, starts);
    if (!only || !strcmp(mode, "polish"))
        rc |= run_polish(a, 17);
    if (!only || !strcmp(mode, "sweep")) {
        rc |= run_sweep(a, 20, sweep_random);
        rc |= run_sweep(a, 1000, sweep_random);
    }
    scm_ansatz_free(a);
    return rc;
}
