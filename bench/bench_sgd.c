/* bench_sgd.c: throughput of the SGD eta term scm_sgd_term (G = E[delta
 * delta^T]) for erf and ReLU at K = M = 4 and 17 (T = I, v = v* = 1, a
 * random state from scm_init_random with d = 1000, sigma = 1, fixed seed,
 * sigma2 = 0.1), beside the flow right-hand side scm_flow_rhs at the same
 * state as the baseline of the same run.  Each timing is a batch of calls
 * lasting at least 0.3 s of process CPU time (at least one call; CPU time
 * rather than wall-clock, which on shared cores counts the waits for a
 * core), the median of 3 is reported.
 *
 * Usage: bench_sgd [--quick]   (--quick: 0.03 s batches)
 * Exit status 0 on success, 1 on any error (printed to stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/flow.h"
#include "scm/init.h"
#include "scm/sgd.h"

#define REPS 3

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    scm_model *m;
    scm_flow *fl;
    scm_sgd_work *w;
    double *Q, *R, *out, *out2;
} bench_state;

/* Calls per second of the SGD term (which = 0) or of the flow rhs (1). */
static int rate(bench_state *s, int which, double target, double *per_s)
{
    double r[REPS];
    for (int rep = 0; rep < REPS; rep++) {
        long n = 0;
        double t0 = now(), t;
        do {
            scm_status st = which == 0
                                ? scm_sgd_term(s->m, s->Q, s->R, s->m->v, 0.1, s->out, s->w, NULL)
                                : scm_flow_rhs(s->fl, s->Q, s->R, s->out, s->out2, NULL);
            if (st) {
                fprintf(stderr, "bench_sgd: status %s\n", scm_status_str(st));
                return 1;
            }
            n++;
            t = now() - t0;
        } while (t < target);
        r[rep] = (double)n / t;
    }
    qsort(r, REPS, sizeof *r, cmp);
    *per_s = r[REPS / 2];
    return 0;
}

int main(int argc, char **argv)
{
    double target = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 0.03 : 0.3;
    const scm_activation *acts[2] = {&scm_act_erf, &scm_act_relu};
    const int Ks[2] = {4, 17};
    printf("%-6s %4s %14s %14s %10s\n", "act", "K=M", "G evals/s", "rhs evals/s", "rhs/G");
    for (int a = 0; a < 2; a++)
        for (int ki = 0; ki < 2; ki++) {
            int K = Ks[ki];
            scm_error err;
            bench_state s = {0};
            s.m = scm_model_alloc(K, K, acts[a], NULL, NULL, NULL, &err);
            if (!s.m) {
                fprintf(stderr, "bench_sgd: %s\n", err.msg);
                return 1;
            }
            s.fl = scm_flow_alloc(s.m);
            s.w = scm_sgd_work_alloc(K, K);
            s.Q = malloc(sizeof(double) * K * K);
            s.R = malloc(sizeof(double) * K * K);
            s.out = malloc(sizeof(double) * K * K);
            s.out2 = malloc(sizeof(double) * K * K);
            if (!s.fl || !s.w || !s.Q || !s.R || !s.out || !s.out2 ||
                scm_init_random(s.m, 1000, 1.0, 4242UL, s.Q, s.R, &err)) {
                fprintf(stderr, "bench_sgd: set-up failed (K = %d)\n", K);
                return 1;
            }
            double g, f;
            if (rate(&s, 0, target, &g) || rate(&s, 1, target, &f))
                return 1;
            printf("%-6s %4d %14.4g %14.4g %10.3g\n", acts[a]->name, K, g, f, f / g);
            fflush(stdout);
            free(s.Q), free(s.R), free(s.out), free(s.out2);
            scm_sgd_work_free(s.w);
            scm_flow_free(s.fl);
            scm_model_free(s.m);
        }
    return 0;
}
