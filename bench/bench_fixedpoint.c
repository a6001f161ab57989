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
 * Usage: bench_fixedpoint [--starts N] [--only=17|1000]
 * Exit status 0 on success, 1 on error. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/fixedpoint.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
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

int main(int argc, char **argv)
{
    int starts = 200, only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--starts") && i + 1 < argc)
            starts = atoi(argv[++i]);
        else if (!strncmp(argv[i], "--only=", 7))
            only = atoi(argv[i] + 7);
        else {
            fprintf(stderr, "usage: bench_fixedpoint [--starts N] [--only=17|1000]\n");
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
    scm_ansatz_free(a);
    return rc;
}
