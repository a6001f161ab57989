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
 *     k1 (one enumeration, deferred polish), with the old target 1e-15 and
 *     with the default (the roundoff floor, max(1e-14, 5e-16 (K + M))),
 *     each with central-difference (scm_fp_polish_fd) and closed-form
 *     (scm_fp_polish) Jacobians, same run: CPU time of the polish alone.
 * (d) issue 11: at K = M = 20 and 1000, block level, the k1 sweep
 *     (fpsweep.h: starts from the neighbouring k1, --sweep-random random
 *     starts per k1, default 2) against 200 random starts per k1 on every
 *     k1 (M = 20) or every 25th k1 (M = 1000, time scaled to all k1): wall
 *     and CPU time, solutions found, and those of the random starts the
 *     sweep misses (distinct losses, to 1e-10 relative, as the sweep
 *     deduplicates), and vice versa.
 *
 * (e) issue 11: continuation in M (scm_fp_sweep_grow, fpsweep.h) from a
 *     base M0 = 8 enumerated with --base-starts random starts per k1
 *     (default 200), to K = M = 12, 16, 20 and 1000, against 200 random
 *     starts per k1 (every k1, or every 25th at M = 1000): CPU time, and
 *     the distinct losses one finds and the other misses, in the same k1
 *     and in any k1 (a point is found in several instances), all and
 *     specialised (n_other = 0, the plateau table's rows); --list prints
 *     the missed ones at M <= 20.  --probes N (default M / 100 + 1),
 *     --fixed N (fixed_max, default 1) and --threads T (default 1) are
 *     scm_fp_sweep_grow's.  First the block
 *     residual's cost at K = M = 20 .. 10^5 (independent of K and M).
 *
 * (f) issue 11 (--only=grow-table): the same continuation at K = M = 20,
 *     60, 100, with 0 and M / 10 + 1 probes, against the plateau table
 *     (data/plateau_table_M100.csv): its rows, and min* rows, missed.
 *
 * Usage: bench_fixedpoint [--starts N] [--sweep-random N] [--base-starts N] [--probes N]
 *                         [--fixed N] [--threads T] [--list]
 *                         [--only=17|1000|polish|sweep|grow|grow-small|grow-table]
 * (grow-small: (e) at M = 12, 16, 20 only)
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

/* The central-difference Jacobian of the packed (F_Q, F_R) at K = M, as
 * scm_fp_polish_fd builds it (u: n doubles of scratch). */
static int fd_jacobian(scm_flow *fl, int M, double *Q, double *R, double *J, double *u)
{
    long n = (long)M * (M + 1) / 2 + (long)M * M, KK = (long)M * M;
    double *FQ = malloc(sizeof(double) * (size_t)(4 * KK)), *FR = FQ + KK, *Q0 = FR + KK,
           *R0 = Q0 + KK;
    memcpy(Q0, Q, sizeof(double) * (size_t)KK);
    memcpy(R0, R, sizeof(double) * (size_t)KK);
    for (long j = 0; j < n; j++) {
        /* unknown j: Q (k, l), k <= l, row by row, then R */
        int k = 0, l = 0;
        double *x = NULL, *x2 = NULL;
        if (j < n - KK) {
            long p = j;
            while (p >= M - k) {
                p -= M - k;
                k++;
            }
            l = k + (int)p;
            x = &Q[k * M + l];
            x2 = &Q[l * M + k];
        } else {
            x = x2 = &R[j - (n - KK)];
        }
        double x0 = *x, h = 1e-6 * fmax(1.0, fabs(x0));
        for (int side = 0; side < 2; side++) {
            *x = *x2 = x0 + (side ? -h : h);
            if (scm_flow_rhs(fl, Q, R, FQ, FR, NULL)) {
                free(FQ);
                return 1;
            }
            long i = 0;
            for (int a = 0; a < M; a++)
                for (int b = a; b < M; b++, i++)
                    u[i] = side ? (J[i * n + j] - FQ[a * M + b]) / (2 * h) : FQ[a * M + b];
            for (long c = 0; c < KK; c++, i++)
                u[i] = side ? (J[i * n + j] - FR[c]) / (2 * h) : FR[c];
            for (i = 0; i < n; i++)
                J[i * n + j] = u[i];
        }
        *x = *x2 = x0;
    }
    free(FQ);
    return 0;
}

/* (c): one enumeration (deferred polish), then every point polished from
 * its block-level state four ways: central-difference or closed-form
 * Jacobian, target 1e-15 (steps on most points) or the default floor. */
static int run_polish(const scm_ansatz *a, int M)
{
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = 60;
    o.polish_defer = 1;
    scm_fp_set s;
    scm_fp_set_init(&s);
    scm_error e;
    double c0 = cpu();
    for (int k1 = 0; k1 <= M; k1++) {
        scm_ansatz_inst *in = scm_ansatz_instantiate(a, M, M, k1, &e);
        if (!in || scm_fp_enumerate(a, in, &scm_act_relu, &o, NULL, 0, &s, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        scm_ansatz_inst_free(in);
    }
    double t_enum = cpu() - c0;
    scm_model *m = scm_model_alloc(M, M, &scm_act_relu, NULL, NULL, NULL, &e);
    scm_flow *fl = scm_flow_alloc(m);
    size_t KK = (size_t)M * M;
    double *Q = malloc(sizeof(double) * KK * 4), *R = Q + KK, *eps = malloc(sizeof(double) * (size_t)s.n * 2);
    const double floor_tol = fmax(1e-14, 5e-16 * (2 * M));
    printf("K = M = %d polish of %d points (60 random starts per k1; enumeration %.2f s CPU, "
           "not included):\n", M, s.n, t_enum);
    for (int target = 0; target < 2; target++) {
        /* at 1e-15 (below the floor) most points take every step allowed:
         * two steps each keep the run short */
        double tol = target ? floor_tol : 1e-15, t[2] = {0, 0}, worst[2] = {0, 0};
        int max_it = target ? 6 : 2;
        int moved[2] = {0, 0}, ok[2] = {0, 0};
        for (int fd = 1; fd >= 0; fd--) {
            for (int p = 0; p < s.n; p++) {
                if (!s.pt[p].full)
                    continue;
                memcpy(Q, s.pt[p].Q, sizeof(double) * KK);
                memcpy(R, s.pt[p].R, sizeof(double) * KK);
                double res;
                double t0 = cpu();
                scm_status st = fd ? scm_fp_polish_fd(fl, Q, R, max_it, tol, &res, &e)
                                   : scm_fp_polish(fl, Q, R, max_it, tol, &res, &e);
                t[fd] += cpu() - t0;
                ok[fd] += st == SCM_OK;
                worst[fd] = fmax(worst[fd], res);
                double sh = 0.0;
                for (size_t i = 0; i < KK; i++)
                    sh = fmax(sh, fmax(fabs(Q[i] - s.pt[p].Q[i]), fabs(R[i] - s.pt[p].R[i])));
                moved[fd] += sh > 0.0;
                if (scm_flow_loss(fl, Q, R, &eps[2 * p + fd]))
                    eps[2 * p + fd] = NAN;
            }
        }
        double deps = 0.0;
        for (int p = 0; p < s.n; p++)
            if (s.pt[p].full)
                deps = fmax(deps, fabs(eps[2 * p] - eps[2 * p + 1]) / fmax(1.0, fabs(eps[2 * p])));
        printf("  target %-8.3g (<= %d steps) differences: %.3f s CPU, %d moved, %d converged, "
               "worst residual %.3g\n"
               "  target %-8.3g (<= %d steps) closed form: %.3f s CPU, %d moved, %d converged, "
               "worst residual %.3g  (x%.2f); max |loss difference| / max(1, loss) %.3g\n",
               tol, max_it, t[1], moved[1], ok[1], worst[1], tol, max_it, t[0], moved[0], ok[0],
               worst[0], t[1] / t[0], deps);
    }
    /* the Jacobian alone, at the lowest k1 = 1 point: central differences
     * (2 n flow evaluations, as scm_fp_polish_fd builds them) vs closed form */
    int best = -1;
    for (int p = 0; p < s.n; p++)
        if (s.pt[p].full && (int)s.pt[p].k1 == 1 && (best < 0 || s.pt[p].eps < s.pt[best].eps))
            best = p;
    long n = (long)M * (M + 1) / 2 + (long)M * M;
    double *J = malloc(sizeof(double) * (size_t)(n * n)), *u = malloc(sizeof(double) * (size_t)n);
    double *J2 = malloc(sizeof(double) * (size_t)(n * n));
    double tj[2] = {0, 0};
    const int reps = 5;
    for (int fd = 0; fd < 2 && best >= 0; fd++) {
        double t0 = cpu();
        for (int r = 0; r < reps; r++) {
            memcpy(Q, s.pt[best].Q, sizeof(double) * KK);
            memcpy(R, s.pt[best].R, sizeof(double) * KK);
            Q[0] += 1e-12 * r; /* a new point: the cached linearisation is rebuilt */
            if (fd ? fd_jacobian(fl, M, Q, R, J, u) != 0 : scm_flow_jacobian(fl, Q, R, J) != SCM_OK)
                return 1;
        }
        tj[fd] = (cpu() - t0) / reps;
        if (!fd)
            memcpy(J2, J, sizeof(double) * (size_t)(n * n));
    }
    double dj = 0.0, sj = 0.0;
    for (long i = 0; i < n * n && best >= 0; i++) {
        dj = fmax(dj, fabs(J[i] - J2[i]));
        sj = fmax(sj, fabs(J2[i]));
    }
    if (best >= 0)
        printf("  one Jacobian (n = %ld) at the k1 = 1 point eps %.6g: differences %.2f ms, "
               "closed form %.2f ms CPU (x%.1f); max |difference| %.2g of max |J| %.3g\n",
               n, s.pt[best].eps, 1e3 * tj[1], 1e3 * tj[0], tj[1] / tj[0], dj, sj);
    free(J);
    free(J2);
    free(u);
    free(Q);
    free(eps);
    scm_flow_free(fl);
    scm_model_free(m);
    scm_fp_set_free(&s);
    return 0;
}

/* Is a solution with loss eps (to 1e-10 relative, and 1e-15 M^2) in s?  By loss, as the
 * sweep deduplicates (a continuum of points has one loss). */
static int in_set(const scm_fp_set *s, double eps)
{
    /* plus the loss's round-off: it sums O(M^2) terms of order one, so at
     * M = 1000 the global minimum comes out as +-3e-11 */
    for (int p = 0; p < s->n; p++)
        if (fabs(s->pt[p].eps - eps) <=
            1e-10 * fmax(1e-3, fabs(eps)) + 1e-15 * s->pt[p].M * s->pt[p].M)
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

/* Distinct losses of s (to 1e-10 relative) missing from every set of sw
 * (the union over k1: a point is one whichever instance holds it); with
 * list, print them with their structure. */
static int union_missing(const scm_fp_set *s, const scm_ansatz_inst *in, const scm_fp_sweep *sw,
                         int *n_spec, int list)
{
    int miss = 0;
    for (int p = 0; p < s->n; p++) {
        int found = 0, dup = 0;
        for (int q = 0; q < p && !dup; q++)
            dup = fabs(s->pt[p].eps - s->pt[q].eps) <= 1e-10 * fmax(1e-3, fabs(s->pt[q].eps));
        for (int k = 0; k < sw->n && !found && !dup; k++)
            found = in_set(&sw->set[k], s->pt[p].eps);
        if (found || dup)
            continue;
        scm_fp_structure st = {.n_other = NAN};
        if (s->pt[p].K <= 100) /* the classification builds the full K x K state */
            scm_fp_classify(in, s->pt[p].x, &st);
        miss++;
        *n_spec += st.n_other == 0;
        if (list)
            printf("    missed: k1 = %g, eps = %.10g, anti/aligned/other = %g/%g/%g, "
                   "block residual %.2g\n",
                   s->pt[p].k1, s->pt[p].eps, st.n_anti, st.n_aligned, st.n_other, s->pt[p].res_block);
    }
    return miss;
}

/* The block residual's cost at K = M = 20 .. 10^5 (k1 = M / 4, a PSD point
 * with Q = R R^T + 0.3 I), and that of instantiating the ansatz: both
 * independent of K and M. */
static void run_rescost(const scm_ansatz *a)
{
    const int Ms[4] = {20, 100, 1000, 100000};
    for (int i = 0; i < 4; i++) {
        scm_error e;
        scm_ansatz_inst *in = scm_ansatz_instantiate(a, Ms[i], Ms[i], Ms[i] / 4, &e);
        scm_blockflow *bf = in ? scm_blockflow_alloc(in, &scm_act_relu) : NULL;
        if (!bf)
            return;
        int n = scm_ansatz_inst_nscalars(in);
        double x[64], F[64], eps;
        for (int c = 0; c < n; c++) {
            const char *nm = scm_ansatz_inst_scalar_name(in, c);
            x[c] = nm[0] == 'R' ? (strstr(nm, ".diag") ? 0.7 : 0.001) : 0.0;
        }
        scm_blockflow_set_q_from_r(bf, x, 0.3);
        const int reps = 200000;
        double c0 = cpu();
        for (int k = 0; k < reps; k++)
            scm_blockflow_residual(bf, x, F, &eps);
        double t_res = (cpu() - c0) / reps;
        c0 = cpu();
        for (int k = 0; k < 2000; k++)
            scm_ansatz_inst_free(scm_ansatz_instantiate(a, Ms[i], Ms[i], Ms[i] / 4, &e));
        double t_inst = (cpu() - c0) / 2000;
        printf("K = M = %-6d k1 = %d (%d scalars): block residual %.3f us, instantiation "
               "%.2f us CPU\n",
               Ms[i], Ms[i] / 4, n, 1e6 * t_res, 1e6 * t_inst);
        scm_blockflow_free(bf);
        scm_ansatz_inst_free(in);
    }
}

/* (e) issue 11: continuation in M (scm_fp_sweep_grow) from M0 = 8 with
 * base_starts random starts per k1 there, to M1, against 200 random
 * starts per k1 at M1 (every k1, or every 25th above M = 100). */
static int run_grow(const scm_ansatz *a, int M1, int base_starts, int probes, int fixed,
                    int threads, int list)
{
    const int M0 = 8;
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.full_max_K = 0;
    o.n_random = base_starts;
    o.threads = threads;
    scm_error e;
    scm_fp_sweep sw;
    scm_fp_grow_stats gs;
    double w0 = now(), c0 = cpu();
    if (scm_fp_sweep_grow(a, 0, M0, M1, probes, fixed, &scm_act_relu, &o, &sw, &gs, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    double w_grow = now() - w0, c_grow = cpu() - c0;
    /* the base alone, to split the time */
    scm_fp_sweep base;
    c0 = cpu();
    if (scm_fp_sweep_k1(a, M0, M0, &scm_act_relu, &o, 2, &base, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    double c_base = cpu() - c0;
    scm_fp_sweep_free(&base);
    o.threads = 1;
    int n_grow = 0;
    for (int i = 0; i < sw.n; i++)
        n_grow += sw.set[i].n;
    int stride = M1 > 100 ? 25 : 1, n_sub = 0, n_rand = 0, n_rand_spec = 0, missed = 0,
        missed_spec = 0, extra = 0, umiss = 0, umiss_spec = 0;
    o.n_random = 200;
    w0 = now();
    c0 = cpu();
    for (int k1 = 0; k1 < sw.n; k1 += stride) {
        scm_fp_set s;
        scm_fp_set_init(&s);
        if (scm_fp_enumerate(a, sw.inst[k1], &scm_act_relu, &o, NULL, 0, &s, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        n_sub++;
        for (int p = 0; p < s.n; p++) {
            if (p > 0 && in_set(&(scm_fp_set){.n = p, .pt = s.pt}, s.pt[p].eps))
                continue;
            scm_fp_structure st = {.n_other = NAN};
            if (M1 <= 100)
                scm_fp_classify(sw.inst[k1], s.pt[p].x, &st);
            n_rand++;
            n_rand_spec += st.n_other == 0;
            if (!in_set(&sw.set[k1], s.pt[p].eps)) {
                missed++;
                missed_spec += st.n_other == 0;
            }
        }
        for (int p = 0; p < sw.set[k1].n; p++)
            extra += !in_set(&s, sw.set[k1].pt[p].eps);
        umiss += union_missing(&s, sw.inst[k1], &sw, &umiss_spec, list);
        scm_fp_set_free(&s);
    }
    double scale = (double)sw.n / n_sub;
    double w_rand = (now() - w0) * scale, c_rand = (cpu() - c0) * scale;
    printf("K = M = %-5d all k1, block level, continuation in M from M0 = %d (%d random starts "
           "per k1 there), %d probes, fixed_max %d, %d threads:\n"
           "  200 random starts per k1 (before%s): %.2f s wall, %.2f s CPU\n"
           "  continuation in M (after): %.3f s wall, %.3f s CPU (base %.3f s CPU)  (x%.0f CPU); "
           "%d base solutions, %d reach M = %d, %d anchors; %ld corrector calls in M, %ld in k1, "
           "%ld chord residual evaluations, %ld hybrids fallbacks; %d solutions\n"
           "  on the %d k1 compared: random found %d distinct losses (%d specialised); "
           "continuation misses %d (%d specialised) in the same k1, %d (%d specialised) in any "
           "k1, and finds %d more%s\n",
           M1, M0, base_starts, probes, fixed, threads, stride > 1 ? ", every 25th k1, time scaled" : "", w_rand, c_rand,
           w_grow, c_grow, c_base, c_rand / c_grow, gs.base, gs.reached, M1, gs.anchors,
           gs.steps_M, gs.steps_k1, gs.evals, gs.hybrids, n_grow, n_sub, n_rand, n_rand_spec,
           missed, missed_spec, umiss, umiss_spec, extra,
           M1 > 100 ? " (not classified above M = 100: specialised counts 0)" : "");
    scm_fp_sweep_free(&sw);
    return 0;
}

/* (f) issue 11: scm_fp_sweep_grow from M0 = 8 against the plateau table
 * to M = 100 (data/plateau_table_M100.csv, random starts at every M plus
 * continuation seeds from M - 1): how many of its K = M = M1 rows, and of
 * its min* rows, the continuation misses, with 0 probes and with
 * M1 / 10 + 1. */
static int run_grow_table(const scm_ansatz *a, int M1)
{
    FILE *f = fopen("data/plateau_table_M100.csv", "r");
    if (!f)
        f = fopen("../data/plateau_table_M100.csv", "r");
    if (!f) {
        fprintf(stderr, "data/plateau_table_M100.csv not found (run from the source tree)\n");
        return 1;
    }
    int cap = 4096, n = 0, *is_min = malloc(sizeof(int) * (size_t)cap);
    double *loss = malloc(sizeof(double) * (size_t)cap);
    static char line[1 << 16];
    while (fgets(line, sizeof line, f)) {
        int K, M;
        double l;
        char cls[64];
        if (sscanf(line, "%d,%d,%*d,%*d,%*d,%*d,%lf,%*[^,],%*[^,],%*[^,],%*[^,],%63[^,]", &K, &M,
                   &l, cls) != 4 || K != M1 || M != M1 || n == cap)
            continue;
        loss[n] = l;
        is_min[n++] = strncmp(cls, "min", 3) == 0;
    }
    fclose(f);
    for (int pass = 0; pass < 2; pass++) {
        int probes = pass ? M1 / 10 + 1 : 0;
        scm_fp_opts o;
        scm_fp_opts_default(&o);
        o.full_max_K = 0;
        scm_fp_sweep sw;
        scm_fp_grow_stats gs;
        scm_error e;
        double c0 = cpu();
        if (scm_fp_sweep_grow(a, 0, 8, M1, probes, 1, &scm_act_relu, &o, &sw, &gs, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        double c = cpu() - c0;
        int miss = 0, miss_min = 0, n_min = 0;
        for (int r = 0; r < n; r++) {
            n_min += is_min[r];
            int found = 0;
            for (int i = 0; i < sw.n && !found; i++)
                for (int p = 0; p < sw.set[i].n && !found; p++)
                    found = fabs(sw.set[i].pt[p].eps - loss[r]) <= 1e-9 * fmax(1e-3, loss[r]);
            miss += !found;
            miss_min += !found && is_min[r];
        }
        printf("K = M = %-4d M0 = 8, %2d probes: %.3f s CPU, %d anchors, %d new from the probes; "
               "the table's %d rows: %d missed; its %d min* rows: %d missed\n",
               M1, probes, c, gs.anchors, gs.probed, n, miss, n_min, miss_min);
        scm_fp_sweep_free(&sw);
    }
    free(is_min);
    free(loss);
    return 0;
}

int main(int argc, char **argv)
{
    int starts = 200, only = 0, sweep_random = 2, base_starts = 200, list = 0, probes = -1,
        threads = 1, fixed = 1;
    const char *mode = "";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--starts") && i + 1 < argc)
            starts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sweep-random") && i + 1 < argc)
            sweep_random = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--base-starts") && i + 1 < argc)
            base_starts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--probes") && i + 1 < argc)
            probes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fixed") && i + 1 < argc)
            fixed = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--list"))
            list = 1;
        else if (!strncmp(argv[i], "--only=", 7)) {
            mode = argv[i] + 7;
            only = atoi(mode);
            if (!only)
                only = -1;
        }
        else {
            fprintf(stderr, "usage: bench_fixedpoint [--starts N] [--sweep-random N] "
                            "[--base-starts N] [--probes N] [--fixed N] [--threads T] [--list] "
                            "[--only=17|1000|polish|sweep|grow|grow-small|grow-table]\n");
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
    if (!only || !strcmp(mode, "grow") || !strcmp(mode, "grow-small")) {
        int small = !strcmp(mode, "grow-small");
        if (!small)
            run_rescost(a);
        const int sizes[4] = {12, 16, 20, 1000};
        for (int i = 0; i < (small ? 3 : 4); i++)
            rc |= run_grow(a, sizes[i], base_starts, probes >= 0 ? probes : sizes[i] / 100 + 1,
                           fixed, threads, list && sizes[i] <= 20);
    }
    if (!only || !strcmp(mode, "grow-table"))
        for (int M1 = 20; M1 <= 100; M1 += 40)
            rc |= run_grow_table(a, M1);
    scm_ansatz_free(a);
    return rc;
}
