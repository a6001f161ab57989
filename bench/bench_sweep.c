/* bench_sweep.c: runs per second of a K = M = 17 ReLU sweep (T = I,
 * d = 1000, sigma = 1, GMRES, grad_stop 1e-10, base seed 1) on 1 and 2
 * threads through scm_sweep_exec, and the effect of the two-stage stopping
 * rule (scm_sweep_opts.loose_grad_stop): for each loose threshold, the
 * runs/s and how many runs end differently from the strict runs (another
 * anti-aligned count, another convergence status, or a final loss off by
 * more than 1e-8 relative).  Families are not needed: with loose_grad_stop
 * and no families no run is accepted early, so the two-stage rule is
 * measured with the families given by --families FILE (e.g. the output of
 * scm fixed-points --K 17 --M 17).
 *
 * Usage: bench_sweep [--runs N] [--families FILE] [--K K]
 * Exit status 0, or 1 on an error (printed). */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/sweep.h"

typedef struct {
    scm_sweep_record *r;
    long n;
} store;

static int keep(const scm_sweep_record *r, void *user)
{
    store *s = user;
    s->r[s->n++] = *r;
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run(const scm_config *c, const long *idx, long n, int threads,
               const scm_sweep_families *f, const scm_sweep_opts *o, store *s, double *secs)
{
    scm_error err;
    s->n = 0;
    double t0 = now();
    if (scm_sweep_exec(c, 1, idx, n, threads, f, o, keep, s, &err)) {
        fprintf(stderr, "bench_sweep: %s\n", err.msg);
        return 1;
    }
    *secs = now() - t0;
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b)
        b[n] = '\0';
    fclose(f);
    return b;
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    long n = 20;
    int K = 17;
    const char *fam_path = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--runs") == 0)
            n = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--families") == 0)
            fam_path = argv[i + 1];
        else if (strcmp(argv[i], "--K") == 0)
            K = atoi(argv[i + 1]);
    }
    char text[512];
    snprintf(text, sizeof text,
             "{\"model\":{\"K\":%d,\"M\":%d},\"init\":{\"d\":1000,\"sigma\":1,\"seed\":1},"
             "\"integrator\":{\"linear_solver\":\"gmres\",\"grad_stop\":1e-10}}",
             K, K);
    scm_config *c = NULL;
    scm_error err;
    if (scm_config_parse(text, "bench", NULL, 0, &c, &err)) {
        fprintf(stderr, "bench_sweep: %s\n", err.msg);
        return 1;
    }
    scm_sweep_families fams = {0, NULL, NULL};
    if (fam_path) {
        char *t = slurp(fam_path);
        if (!t || scm_sweep_families_parse(t, fam_path, &fams, &err)) {
            fprintf(stderr, "bench_sweep: %s\n", t ? err.msg : "cannot read families");
            return 1;
        }
        free(t);
    }
    long *idx = malloc(sizeof *idx * (size_t)n);
    store a = {malloc(sizeof(scm_sweep_record) * (size_t)n), 0};
    store b = {malloc(sizeof(scm_sweep_record) * (size_t)n), 0};
    for (long i = 0; i < n; i++)
        idx[i] = i;
    scm_sweep_opts o;
    scm_sweep_opts_default(&o);
    double s1, s2;
    if (run(c, idx, n, 1, &fams, &o, &a, &s1) || run(c, idx, n, 2, &fams, &o, &b, &s2))
        return 1;
    double steps = 0;
    for (long i = 0; i < n; i++)
        steps += (double)a.r[i].steps;
    printf("K = M = %d, %ld runs, grad_stop 1e-10, GMRES (mean %.0f CVODE steps per run)\n", K,
           n, steps / (double)n);
    printf("  1 thread : %7.3f s  %6.3f runs/s  %.3f s per run\n", s1, (double)n / s1,
           s1 / (double)n);
    printf("  2 threads: %7.3f s  %6.3f runs/s  speed-up %.2f\n", s2, (double)n / s2, s1 / s2);
    const double loose[] = {1e-8, 1e-7, 1e-6, 1e-5};
    for (size_t j = 0; j < sizeof loose / sizeof loose[0]; j++) {
        scm_sweep_opts ol = o;
        ol.loose_grad_stop = loose[j];
        double sl;
        if (run(c, idx, n, 2, &fams, &ol, &b, &sl))
            return 1;
        long diff = 0, early = 0;
        double lsteps = 0;
        for (long i = 0; i < n; i++) {
            const scm_sweep_record *x = &a.r[i], *y = &b.r[i];
            lsteps += (double)y->steps;
            early += y->steps < x->steps;
            if (x->converged != y->converged || x->n_anti != y->n_anti ||
                strcmp(x->cls, y->cls) != 0 || !(fabs(x->eps - y->eps) <= 1e-8 * fabs(x->eps) + 1e-10))
                diff++;
        }
        printf("  loose_grad_stop %.0e (2 threads): %6.3f runs/s, mean %.0f steps, %ld runs "
               "stopped early, %ld of %ld classified differently\n",
               loose[j], (double)n / sl, lsteps / (double)n, early, diff, n);
    }
    free(idx);
    free(a.r);
    free(b.r);
    scm_sweep_families_free(&fams);
    scm_config_free(c);
    return 0;
}
