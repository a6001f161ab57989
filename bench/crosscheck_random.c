/* crosscheck_random.c: the random-initialisation cross-check (issue 3,
 * item 7).  Enumerate every fixed point of every built-in ansatz at (K, M)
 * (all k1, scm_fp_opts_default, no polish), then run the flow
 * (scm_traj_run, scm_traj_opts_default, rule gd) from random initial
 * conditions (scm_init_random, d = 1000, sigma = 1, seeds S0..S1) and match
 * the loss of every fixed point reached to an enumerated one to 1e-8.
 *
 * Prints one line per run (seed, stop reason, loss, matched family or
 * UNMATCHED with a description of the final state) unless --summary, then
 * a table: each distinct final loss, its count and its match.
 *
 * Usage: crosscheck_random K M [S0 S1] [--summary]
 * Exit status 0 if every fixed point reached matched, 1 otherwise, 2 on bad
 * usage or an error. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/fixedpoint.h"
#include "scm/init.h"
#include "scm/model.h"
#include "scm/rule.h"
#include "scm/traj.h"

typedef struct {
    double eps;
    char desc[160];
} fam;

typedef struct {
    double eps;
    int count;
    int matched; /* index into fams or -1 (global: -2; not converged: -3) */
    char desc[200];
} outcome;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A short description of a full state: per student its largest-|R|
 * teacher overlap; counts of anti-aligned students (largest |R| negative),
 * of teachers covered by two students with R > 0.3, of small students. */
static void describe(int K, int M, const double *Q, const double *R, char *buf, size_t len)
{
    int anti = 0, small = 0, shared = 0;
    double *cover = calloc((size_t)M, sizeof *cover);
    for (int k = 0; k < K; k++) {
        int best = 0;
        for (int m = 1; m < M; m++)
            if (fabs(R[k * M + m]) > fabs(R[k * M + best]))
                best = m;
        if (R[k * M + best] < 0.0)
            anti++;
        if (Q[k * K + k] < 0.05)
            small++;
        for (int m = 0; m < M; m++)
            if (R[k * M + m] > 0.3)
                cover[m] += 1.0;
    }
    for (int m = 0; m < M; m++)
        shared += cover[m] > 1.5;
    free(cover);
    double qmin = INFINITY;
    for (int k = 0; k < K; k++)
        qmin = fmin(qmin, Q[k * K + k]);
    snprintf(buf, len, "anti(max|R|<0)=%d shared_teachers(R>0.3 twice)=%d small(Qkk<0.05)=%d min_Qkk=%.4g",
             anti, shared, small, qmin);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: crosscheck_random K M [S0 S1] [--summary]\n");
        return 2;
    }
    int K = atoi(argv[1]), M = atoi(argv[2]);
    long s0 = argc > 4 ? atol(argv[3]) : 1, s1 = argc > 4 ? atol(argv[4]) : 500;
    int summary = argc > 1 && strcmp(argv[argc - 1], "--summary") == 0;
    if (K < 1 || M < 1 || s1 < s0) {
        fprintf(stderr, "crosscheck_random: bad K, M or seed range\n");
        return 2;
    }
    gsl_set_error_handler_off();
    double t0 = now();
    /* 1. enumerate */
    int nf = 0, capf = 256;
    fam *fams = malloc(sizeof *fams * (size_t)capf);
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.polish_max_K = 0;
    o.full_max_K = 0;
    for (int i = 0; i < scm_ansatz_builtin_count(); i++) {
        const char *file, *text = scm_ansatz_builtin_text(i, &file);
        scm_error e;
        scm_ansatz *a = scm_ansatz_parse(text, strlen(text), file, &e);
        int lo, hi;
        if (!a || scm_ansatz_applies(a, K, M, &lo, &hi) != 1) {
            scm_ansatz_free(a);
            continue;
        }
        for (int k1 = lo; k1 <= hi; k1++) {
            scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, M, k1, &e);
            if (!in)
                continue;
            scm_fp_set s;
            scm_fp_set_init(&s);
            if (scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s, &e) == SCM_OK)
                for (int p = 0; p < s.n; p++) {
                    if (nf == capf) {
                        capf *= 2;
                        fams = realloc(fams, sizeof *fams * (size_t)capf);
                    }
                    scm_fp_structure st;
                    scm_fp_classify(in, s.pt[p].x, &st);
                    fams[nf].eps = s.pt[p].eps;
                    snprintf(fams[nf].desc, sizeof fams[nf].desc,
                             "%s k1=%d anti=%g aligned=%g other=%g", scm_ansatz_name(a), k1,
                             st.n_anti, st.n_aligned, st.n_other);
                    nf++;
                }
            scm_fp_set_free(&s);
            scm_ansatz_inst_free(in);
        }
        scm_ansatz_free(a);
    }
    double t1 = now();
    printf("K = %d, M = %d: %d enumerated fixed points (before merging) in %.2f s\n", K, M, nf,
           t1 - t0);

    /* 2. random runs */
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, NULL);
    double *Q = malloc(sizeof(double) * (size_t)(K * K + K * M)), *R = Q + K * K;
    scm_traj_opts to;
    scm_traj_opts_default(&to);
    to.record = 0;
    int no = 0, capo = 64, n_unmatched = 0, n_global = 0, n_fp = 0, n_other = 0;
    outcome *out = malloc(sizeof *out * (size_t)capo);
    for (long seed = s0; seed <= s1; seed++) {
        scm_error e;
        if (scm_init_random(m, 1000, 1.0, (unsigned long)seed, Q, R, &e)) {
            fprintf(stderr, "init: %s\n", e.msg);
            return 2;
        }
        scm_traj_result res;
        double tr = now();
        scm_status st = scm_traj_run(m, &scm_rule_gd, Q, R, &to, &res, &e);
        tr = now() - tr;
        int match = -3;
        char desc[200] = "";
        if (st == SCM_OK && (res.stop == SCM_STOP_EPS || res.eps < 1e-9)) {
            match = -2;
            n_global++;
        } else if (st == SCM_OK && res.stop == SCM_STOP_FIXED_POINT) {
            n_fp++;
            match = -1;
            double best = INFINITY;
            for (int f = 0; f < nf; f++)
                if (fabs(fams[f].eps - res.eps) < best) {
                    best = fabs(fams[f].eps - res.eps);
                    if (best < 1e-8)
                        match = f;
                }
            if (match == -1) {
                n_unmatched++;
                describe(K, M, res.Q, res.R, desc, sizeof desc);
            }
        } else {
            n_other++;
            snprintf(desc, sizeof desc, "stop=%s %.150s", scm_stop_reason_str(res.stop),
                     res.stop == SCM_STOP_FAILED ? res.err.msg : "");
        }
        if (!summary)
            printf("seed %4ld  %-14s eps %.12g  max|F| %.2e  %.2fs  %s\n", seed,
                   scm_stop_reason_str(res.stop), res.eps, res.max_F, tr,
                   match >= 0 ? fams[match].desc : match == -2 ? "global minimum"
                                               : match == -1 ? "UNMATCHED"
                                                             : desc);
        fflush(stdout);
        /* tally by loss */
        int o_i = -1;
        for (int i = 0; i < no && o_i < 0; i++)
            if (fabs(out[i].eps - res.eps) < 1e-8 && out[i].matched == match)
                o_i = i;
        if (o_i < 0) {
            if (no == capo) {
                capo *= 2;
                out = realloc(out, sizeof *out * (size_t)capo);
            }
            o_i = no++;
            out[o_i].eps = res.eps;
            out[o_i].count = 0;
            out[o_i].matched = match;
            snprintf(out[o_i].desc, sizeof out[o_i].desc, "%s",
                     match >= 0 ? fams[match].desc : match == -2 ? "global minimum" : desc);
        }
        out[o_i].count++;
        scm_traj_result_free(&res);
    }
    double t2 = now();
    /* sort the table by loss */
    for (int i = 1; i < no; i++)
        for (int j = i; j > 0 && out[j - 1].eps > out[j].eps; j--) {
            outcome t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    printf("\nK = %d, M = %d, seeds %ld..%ld (d = 1000, sigma = 1), %.1f s of flow\n", K, M, s0,
           s1, t2 - t1);
    printf("%-20s %6s  %s\n", "final loss", "runs", "enumerated family");
    for (int i = 0; i < no; i++)
        printf("%-20.12g %6d  %s%s\n", out[i].eps, out[i].count,
               out[i].matched == -1 ? "UNMATCHED: " : out[i].matched == -3 ? "not a fixed point: " : "",
               out[i].desc);
    printf("global minima %d, fixed points %d (matched %d, unmatched %d), other %d\n", n_global,
           n_fp, n_fp - n_unmatched, n_unmatched, n_other);
    free(out);
    free(Q);
    free(fams);
    scm_model_free(m);
    return n_unmatched ? 1 : 0;
}
