/* bench_compare.c: runs per second per K of the sweeps of `scm compare`
 * (issue 12, item 4), and where a run's work goes.
 *
 * The configuration is scm compare's base config (ReLU, T = I, d = 1000,
 * sigma = 1, GMRES, loose_until 1e-6, grad_stop 1e-10, eps_stop 1e-10,
 * max_steps 1e5, base seed 1) with model.K and model.M set; runs 0..N-1 of
 * each K are swept through scm_sweep_exec on the given threads, exactly the
 * runs of `scm compare --runs N`.  Each K is run in several configurations
 * in the same process (the table cfgs below), the first the baseline of
 * every ratio: the settings before issue 12 (CVODE's difference-quotient
 * Jacobian-vector products, analytic_jv 0, the first stage at rtol 1e-6,
 * atol 1e-8, no early stop, SUNDIALS's vector operations).  Then the
 * analytic product; and with --families K=FILE (the families file of `scm
 * compare`, e.g. PREFIX.K17.families.json), which classifies the runs: the
 * early stop (scm_sweep_opts.certify: docs/sweeps.md "Early stop"), first
 * paying for the certificates of the points on first need (as the first
 * runs of a sweep do: "cold"), then with them made, with either product;
 * scm compare's looser first stage (rtol 1e-4, atol 1e-6; `scm compare
 * --certify` as of the start of 2026-12-04); that with scm's vector
 * operations (nvecops.c); and that with the lagged analytic product,
 * today's `scm compare --certify`.  The runs whose class differs from the
 * first configuration's are counted.  Rates are given per wall-clock
 * second and per CPU second of the process (steadier on a shared machine);
 * the ratios, not absolute rates, compare across a shared machine.
 * --configs i,j,... runs those rows of cfgs in that order (the first given
 * is then the baseline of the ratios; a row may repeat: "7,7,8" makes the
 * certificates in the first row 7 and times the second with them made).
 *
 * The profile columns come from CVODE's counters of the first P runs, rerun
 * one by one through scm_traj_run: steps, rhs evaluations of the integrator
 * proper, Krylov (GMRES) iterations and the rhs evaluations spent in the
 * difference-quotient Jacobian-vector products (one per Krylov iteration
 * with CVODE's default jtimes), the share of flow evaluations that go to
 * those products.
 *
 * Usage: bench_compare [--runs N] [--M M] [--K K1,K2,...] [--threads T] [--profile P]
 *                      [--families K=FILE]... [--configs i,j,...] [--certify-rmax R]
 *                      [--certify-global F]
 * Exit status 0, or 1 on an error (printed). */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/config.h"
#include "scm/init.h"
#include "scm/sweep.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the process (all threads): on a machine shared with other
 * jobs the ratios of runs per CPU second are steadier than wall-clock ones. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    double steps, rhs;
    long conv;
    scm_sweep_record *keep; /* every record, by position */
    long n;
} tally;

static int count(const scm_sweep_record *r, void *user)
{
    tally *t = user;
    t->keep[t->n++] = *r;
    t->steps += (double)r->steps;
    t->rhs += (double)r->rhs;
    t->conv += r->converged;
    return 0;
}

static scm_config *config_for(int K, int M)
{
    char text[640];
    snprintf(text, sizeof text,
             "{\"model\": {\"K\": %d, \"M\": %d, \"activation\": \"relu\"},"
             " \"init\": {\"type\": \"random\", \"d\": 1000, \"sigma\": 1, \"seed\": 1},"
             " \"integrator\": {\"linear_solver\": \"gmres\", \"grad_stop\": 1e-10,"
             " \"loose_until\": 1e-6, \"eps_stop\": 1e-10, \"max_steps\": 100000}}",
             K, M);
    scm_config *c = NULL;
    scm_error err;
    if (scm_config_parse(text, "bench_compare", NULL, 0, &c, &err)) {
        fprintf(stderr, "bench_compare: %s\n", err.msg);
        return NULL;
    }
    return c;
}

static scm_status load_families(const char *path, scm_sweep_families *f, scm_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return scm_error_set(err, SCM_EIO, "cannot read '%s'", path);
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 > cap) {
            char *nt = realloc(text, cap = 2 * cap + 65536);
            if (!nt) {
                free(text);
                fclose(fp);
                return scm_error_set(err, SCM_ENOMEM, "out of memory reading '%s'", path);
            }
            text = nt;
        }
        size_t got = fread(text + len, 1, cap - len - 1, fp);
        len += got;
        if (got == 0)
            break;
    }
    fclose(fp);
    text[len] = '\0';
    scm_status st = scm_sweep_families_parse(text, path, f, err);
    free(text);
    return st;
}

/* CVODE's counters of runs 0..P-1, integrated one by one. */
static int profile(const scm_config *c, long P)
{
    scm_error err;
    scm_model *m = scm_config_model(c, &err);
    if (!m) {
        fprintf(stderr, "bench_compare: %s\n", err.msg);
        return 1;
    }
    double *Q = malloc(sizeof(double) * (size_t)c->K * (size_t)c->K);
    double *R = malloc(sizeof(double) * (size_t)c->K * (size_t)c->M);
    double steps = 0, rhs = 0, lin = 0, secs = 0, jac = 0;
    int rc = Q && R ? 0 : 1;
    for (long i = 0; i < P && !rc; i++) {
        scm_traj_opts o = c->traj;
        o.record = 0;
        scm_traj_result res;
        if (scm_init_random(m, c->d, c->sigma, scm_sweep_seed(c->seed, i), Q, R, &err)) {
            fprintf(stderr, "bench_compare: %s\n", err.msg);
            rc = 1;
            break;
        }
        double t0 = now();
        if (scm_traj_run(m, c->rule, Q, R, &o, &res, &err)) {
            fprintf(stderr, "bench_compare: %s\n", err.msg);
            rc = 1;
            break;
        }
        secs += now() - t0;
        steps += (double)res.n_steps;
        rhs += (double)res.n_rhs;
        lin += (double)res.n_lin_iters;
        jac += (double)res.n_jac_evals;
        scm_traj_result_free(&res);
    }
    if (!rc && P > 0) {
        double p = (double)P, evals = rhs + lin;
        printf("    profile of runs 0..%ld (1 thread): per run %.3f s, %.0f steps, %.0f rhs, %.0f "
               "Krylov iterations (%.2f per step)",
               P - 1, secs / p, steps / p, rhs / p, lin / p, lin / steps);
        if (c->traj.analytic_jv == 2)
            printf(", %.0f linearisations\n", jac / p);
        else if (c->traj.analytic_jv)
            printf("\n");
        else /* one rhs evaluation per difference-quotient product */
            printf(", %.0f%% of %.0f flow evaluations in Jv products\n", 100.0 * lin / evals,
                   evals / p);
    }
    free(Q);
    free(R);
    scm_model_free(m);
    return rc;
}

/* The configurations, in the order run; the first is the baseline of
 * every ratio.  Settings before issue 12: difference-quotient Jv, the
 * first stage at rtol 1e-6, atol 1e-8, no early stop, SUNDIALS's vectors. */
typedef struct {
    const char *name;
    int jv;      /* scm_traj_opts.analytic_jv */
    int loose;   /* 1: scm compare's first stage since issue 12 (1e-4, 1e-6) */
    int certify; /* the early stop (needs --families) */
    int vec_ops; /* scm's vector operations (else SUNDIALS's) */
    int profile; /* print CVODE's counters of the first runs */
    int krylov_dim;  /* scm_traj_opts.krylov_dim (0: the default, 5) */
    double eps_lin;  /* scm_traj_opts.eps_lin (0: the default, 0.05) */
    int precond;     /* scm_traj_opts.precond: the frozen-S preconditioner */
} bench_cfg;

enum { NCFG = 14, MAXRUN = 32 };
static const bench_cfg cfgs[NCFG] = {
    {"DQ Jv", 0, 0, 0, 0, 1, 0, 0.0, 0},
    {"analytic Jv", 1, 0, 0, 0, 1, 0, 0.0, 0},
    /* with families: the early stop, paying for the certificates on first
     * need (as the first runs of a sweep do), then with them made */
    {"DQ + cert cold", 0, 0, 1, 0, 0, 0, 0.0, 0},
    {"DQ + certify", 0, 0, 1, 0, 0, 0, 0.0, 0},
    {"an. + certify", 1, 0, 1, 0, 0, 0, 0.0, 0},
    /* scm compare --certify as of the start of 2026-12-04 */
    {"DQ+cert+loose", 0, 1, 1, 0, 0, 0, 0.0, 0},
    {"+ scm vec ops", 0, 1, 1, 1, 0, 0, 0.0, 0},
    {"+ lagged Jv", 2, 1, 1, 1, 1, 0, 0.0, 0},
    /* GMRES's dimension and tolerance (2026-12-04, second session) */
    {"+ Krylov 10", 2, 1, 1, 1, 1, 10, 0.0, 0},
    {"+ Krylov 10 .02", 2, 1, 1, 1, 1, 10, 0.02, 0},
    {"+ Krylov 20", 2, 1, 1, 1, 1, 20, 0.0, 0},
    /* the preconditioner with S frozen, with the products it could pay
     * for most (difference quotients) and with the lagged ones */
    {"lag. K20 + PC", 2, 1, 1, 1, 1, 20, 0.0, 1},
    {"DQ Krylov 20", 0, 1, 1, 1, 1, 20, 0.0, 0},
    {"DQ K20 + PC", 0, 1, 1, 1, 1, 20, 0.0, 1},
};

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    long n = 8, P = 4;
    int M = 17, threads = 2;
    const char *Ks = "17,18,19";
    const char *only = NULL; /* --configs: a comma list of indices into cfgs */
    double rmax = 0.05, cglobal = 1e-3;
    const char *fam_path[64] = {0};
    long fam_K[64];
    int nfam = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--runs") == 0)
            n = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--M") == 0)
            M = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--K") == 0)
            Ks = argv[i + 1];
        else if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--profile") == 0)
            P = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--configs") == 0)
            only = argv[i + 1];
        else if (strcmp(argv[i], "--certify-rmax") == 0)
            rmax = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--certify-global") == 0)
            cglobal = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--families") == 0 && nfam < 64 && strchr(argv[i + 1], '=')) {
            fam_K[nfam] = atol(argv[i + 1]);
            fam_path[nfam++] = strchr(argv[i + 1], '=') + 1;
        }
        else {
            fprintf(stderr, "bench_compare: unknown option %s\n", argv[i]);
            return 1;
        }
    }
    if (n < 1 || M < 1 || threads < 1 || P < 0) {
        fprintf(stderr, "bench_compare: --runs, --M, --threads must be >= 1, --profile >= 0\n");
        return 1;
    }
    long *idx = malloc(sizeof *idx * (size_t)n);
    if (!idx)
        return 1;
    for (long i = 0; i < n; i++)
        idx[i] = i;
    printf("scm compare's sweeps, M = %d, runs 0..%ld, %d threads\n",
           M, n - 1, threads);
    int rc = 0;
    for (const char *p = Ks; *p && !rc;) {
        char *end;
        long K = strtol(p, &end, 10);
        if (end == p || K < 1) {
            fprintf(stderr, "bench_compare: bad --K list '%s'\n", Ks);
            rc = 1;
            break;
        }
        p = *end == ',' ? end + 1 : end;
        scm_config *c = config_for((int)K, M);
        if (!c) {
            rc = 1;
            break;
        }
        scm_sweep_families fams = {0, NULL, NULL};
        for (int q = 0; q < nfam; q++)
            if (fam_K[q] == K) {
                scm_error err;
                if (load_families(fam_path[q], &fams, &err)) {
                    fprintf(stderr, "bench_compare: %s\n", err.msg);
                    rc = 1;
                }
            }
        scm_sweep_opts o;
        scm_sweep_opts_default(&o);
        o.certify_rmax = rmax;
        o.certify_global = cglobal;
        double base = 0.0, base_cpu = 0.0;
        const int ncfg = fams.n > 0 ? NCFG : 2;
        const double base_lr = c->traj.loose_rtol, base_la = c->traj.loose_atol;
        /* the rows in the order run: --configs's (a row may repeat, e.g.
         * first to make the certificates, then timed with them made) */
        int ord[MAXRUN], nord = 0;
        if (only) {
            for (const char *q = only; *q && nord < MAXRUN;) {
                char *qe;
                long v = strtol(q, &qe, 10);
                if (qe == q || v < 0 || v >= ncfg) {
                    fprintf(stderr, "bench_compare: bad --configs '%s' (rows 0..%d)\n", only,
                            ncfg - 1);
                    rc = 1;
                    break;
                }
                ord[nord++] = (int)v;
                q = *qe == ',' ? qe + 1 : qe;
            }
        } else {
            for (int q = 0; q < ncfg; q++)
                ord[nord++] = q;
        }
        scm_sweep_record *rec[MAXRUN] = {NULL};
        for (int q = 0; q < nord; q++)
            rec[q] = malloc(sizeof(scm_sweep_record) * (size_t)n);
        if (!rc && fams.n > 0) {
            scm_model *m = scm_config_model(c, NULL);
            scm_error err;
            if (!m || scm_sweep_families_prepare(&fams, m, &err)) /* shared by the configs */
                rc = 1;
            scm_model_free(m);
        }
        int pos_dq = -1, pos_an = -1; /* rows 0 and 1, compared below */
        for (int q = 0; q < nord && !rc; q++) {
            const int cfg = ord[q];
            const bench_cfg *g = &cfgs[cfg];
            if (cfg == 0 && pos_dq < 0)
                pos_dq = q;
            if (cfg == 1 && pos_an < 0)
                pos_an = q;
            c->traj.analytic_jv = g->jv;
            c->traj.loose_rtol = g->loose ? 1e-4 : base_lr;
            c->traj.loose_atol = g->loose ? 1e-6 : base_la;
            c->traj.sundials_vec_ops = !g->vec_ops;
            c->traj.krylov_dim = g->krylov_dim ? g->krylov_dim : 5;
            c->traj.eps_lin = g->eps_lin > 0.0 ? g->eps_lin : 0.05;
            c->traj.precond = g->precond;
            o.certify = g->certify;
            tally t = {0, 0, 0, rec[q], 0};
            if (!rec[q]) {
                rc = 1;
                break;
            }
            scm_error err;
            double t0 = now(), c0 = cpu_now();
            if (scm_sweep_exec(c, c->seed, idx, n, threads, &fams, &o, count, &t, &err)) {
                fprintf(stderr, "bench_compare: %s\n", err.msg);
                rc = 1;
                break;
            }
            double s = now() - t0, rate = (double)n / s, cpu = cpu_now() - c0;
            if (q == 0) {
                base = rate;
                base_cpu = (double)n / cpu;
            }
            long cert = 0, cls = 0;
            for (long i = 0; i < n; i++) {
                cert += rec[q][i].stop == SCM_STOP_CERTIFIED;
                cls += strcmp(rec[q][i].cls, rec[0][i].cls) != 0;
            }
            printf("  K = %2ld %-13s: %7.2f runs/s (x%.2f), %6.2f runs per CPU s (x%.2f)  (%.1f s, "
                   "mean %.0f steps, %.0f rhs, %ld of %ld converged",
                   K, g->name, rate, rate / base, (double)n / cpu, (double)n / cpu / base_cpu, s,
                   t.steps / (double)n, t.rhs / (double)n, t.conv, n);
            if (g->certify)
                printf(", %ld certified, %ld in another class than the baseline", cert, cls);
            printf(")\n");
            if (g->profile)
                rc = profile(c, P < n ? P : n);
        }
        if (!rc && pos_dq >= 0 && pos_an >= 0) {
            /* the same runs must end the same way */
            long diff = 0;
            for (long i = 0; i < n; i++) {
                const scm_sweep_record *x = &rec[pos_dq][i], *y = &rec[pos_an][i];
                int both_min = x->stop == SCM_STOP_EPS &&
                               y->stop == SCM_STOP_EPS; /* eps < eps_stop */
                diff += x->converged != y->converged || x->n_anti != y->n_anti ||
                        x->n_dead != y->n_dead ||
                        !(both_min || fabs(x->eps - y->eps) <= 1e-8 * fabs(x->eps) + 1e-10);
            }
            printf("    analytic vs DQ Jv: %ld of %ld runs end differently (convergence, "
                   "anti-aligned or dead count, loss beyond 1e-8 relative unless both below "
                   "eps_stop)\n",
                   diff, n);
        }
        for (int q = 0; q < MAXRUN; q++)
            free(rec[q]);
        scm_sweep_families_free(&fams);
        scm_config_free(c);
    }
    free(idx);
    return rc;
}
