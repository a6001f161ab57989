/* bench_symstab.c: the symmetric spectra of symstab.h at large width, as
 * a benchmark and as the generator of data/symmetric_stability/.
 *
 *   bench_symstab [--M 1000] [--threads 2]
 *       every family of `scm fixed-points --K M --M M --grow-from 8` (the
 *       library's scm_fp_sweep_grow, the CLI's defaults: 200 starts, M/100 + 1
 *       probes, fixed k1 = 1): the time of all eigenvalues (Hessian and
 *       Jacobian) of the k1 = 1 point, of classifying every specialised
 *       point on the given threads (--repeat N: N times, the mean printed;
 *       for profiles), and (unless --dense 0) at K = M = 20, 30 the ratio of the
 *       dense Hessian's time (scm_stab_hessian + scm_stab_spectrum) to the
 *       symmetric one's.  --dump OUT.csv writes every eigenvalue of every
 *       point (Hessian and Jacobian, %.17g, by labels then value) and
 *       the verdicts; --compare OLD.csv compares them with such a file of
 *       another build (the same points, grown the same way): how many are
 *       bit for bit equal, the largest relative difference, and whether any
 *       verdict or block label differs (exit 1 beyond 1e-12 relative).
 *   bench_symstab --classify OUT.csv --Ms 10,20,... [--threads 2]
 *       every specialised point at K = M, M + 1, M + 2 for each M: M, K - M,
 *       ansatz, k1 (anti-aligned students), loss, d times the smallest
 *       nonzero Hessian eigenvalue (d = K + M), counts, the Jacobian's
 *       largest real part and the verdict: saddle (a negative eigenvalue),
 *       strict_min (none zero), min_mod_rotations (the zeros are exactly
 *       the rotations outside the teacher span), degenerate (other zeros).
 *   bench_symstab --plateau IN.csv OUT.csv [--hessian-csv H.csv]
 *       a plateau table reclassified from its stored scalars (reclassify
 *       below): block_only rows by the symmetric Jacobian, rows without a
 *       block Jacobian (parallel ReLU neurons) by the Hessian's limit.
 */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/fpsweep.h"
#include "scm/hessian.h"
#include "scm/symstab.h"
#include "scm/weights.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* CPU seconds of the process (all threads): on a shared, loaded machine
 * the wall time of a parallel phase is at least this over the threads. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

typedef struct {
    const scm_ansatz_inst *in;
    const double *x;
    char ansatz[64];
    int k1;          /* anti-aligned students */
    double eps;
    /* results */
    scm_status st;
    double lmin_d;   /* d times the smallest nonzero Hessian eigenvalue */
    long n_neg, n_zero, rot;
    double jac_max;
    const char *verdict;
} pt;

typedef struct {
    int n_ans;
    scm_ansatz *ans[16];
    scm_fp_sweep sw[16];
    int nsw;
    pt *p;
    int np;
} fams;

static void classify(pt *q)
{
    scm_symstab_result h, j;
    memset(&h, 0, sizeof h);
    memset(&j, 0, sizeof j);
    scm_error e;
    q->st = scm_stab_symmetric(q->in, &scm_act_relu, q->x, NULL, &h, &e);
    if (!q->st) {
        q->n_neg = h.n_neg;
        q->n_zero = h.n_zero;
        q->rot = h.zero_rotations;
        q->lmin_d = NAN;
        for (int i = 0; i < h.n; i++)
            if (!h.eig[i].zero && h.eig[i].value > 0.0) {
                q->lmin_d = h.eig[i].value * (double)h.d;
                break;
            }
        q->verdict = h.n_neg > 0                  ? "saddle"
                     : h.n_zero == 0              ? "strict_min"
                     : h.n_zero == h.zero_rotations ? "min_mod_rotations"
                                                  : "degenerate";
    } else {
        q->verdict = "refused";
    }
    q->jac_max = NAN;
    if (scm_stab_symmetric_jacobian(q->in, &scm_act_relu, q->x, NULL, &j, &e) == SCM_OK && j.n)
        q->jac_max = j.eig[j.n - 1].value;
    scm_symstab_result_free(&h);
    scm_symstab_result_free(&j);
}

/* The points are taken from a shared counter, one at a time, so that no
 * thread idles while another still has a queue (a static interleave
 * did); each point's result depends on the point alone. */
typedef struct {
    pt *p;
    int np;
    atomic_int next;
} job;

static void *worker(void *arg)
{
    job *jb = arg;
    for (int i; (i = atomic_fetch_add(&jb->next, 1)) < jb->np;)
        classify(&jb->p[i]);
    return NULL;
}

static void classify_all(pt *p, int np, int nt)
{
    pthread_t th[16];
    job jb = {p, np, 0};
    for (int t = 0; t < nt; t++)
        pthread_create(&th[t], NULL, worker, &jb);
    for (int t = 0; t < nt; t++)
        pthread_join(th[t], NULL);
}

static void fams_free(fams *f)
{
    for (int i = 0; i < f->nsw; i++)
        scm_fp_sweep_free(&f->sw[i]);
    for (int i = 0; i < f->n_ans; i++)
        scm_ansatz_free(f->ans[i]);
    free(f->p);
}

/* Duplicates (the same point in several ansätze or instances): keep the
 * first of each (k1, loss to 1e-9). */
static int is_dup(const pt *p, int n, const pt *q)
{
    for (int j = 0; j < n; j++)
        if (p[j].k1 == q->k1 && fabs(p[j].eps - q->eps) <= 1e-9 * fabs(q->eps) + 1e-12)
            return 1;
    return 0;
}

/* Every distinct specialised point at (M + dK, M), grown from M0. */
static int grow(int M, int dK, int M0, int threads, fams *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < scm_ansatz_builtin_count() && f->n_ans < 16; i++) {
        const char *name, *text = scm_ansatz_builtin_text(i, &name);
        scm_error e;
        f->ans[f->n_ans] = scm_ansatz_parse(text, strlen(text), name, &e);
        if (f->ans[f->n_ans])
            f->n_ans++;
    }
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.threads = threads;
    int cap = 0;
    for (int a = 0; a < f->n_ans; a++) {
        int lo, hi;
        if (scm_ansatz_applies(f->ans[a], M0 + dK, M0, &lo, &hi) != 1 ||
            scm_ansatz_applies(f->ans[a], M + dK, M, &lo, &hi) != 1)
            continue;
        int np = M / 100 + 1;
        if (np > hi - lo + 1)
            np = hi - lo + 1;
        scm_error e;
        scm_fp_sweep *sw = &f->sw[f->nsw];
        if (scm_fp_sweep_grow(f->ans[a], dK, M0 < M ? M0 : M, M, np, 1, &scm_act_relu, &o, sw,
                              NULL, &e)) {
            fprintf(stderr, "grow %s at M = %d, dK = %d: %s\n", scm_ansatz_name(f->ans[a]), M,
                    dK, e.msg);
            continue;
        }
        f->nsw++;
        for (int i = 0; i < sw->n; i++)
            for (int j = 0; j < sw->set[i].n; j++) {
                const scm_fp_point *q = &sw->set[i].pt[j];
                scm_fp_structure s;
                if (scm_fp_classify_block(sw->inst[i], q->x, &s) || s.n_other != dK)
                    continue;
                if (f->np == cap) {
                    cap = cap ? 2 * cap : 64;
                    f->p = realloc(f->p, sizeof *f->p * (size_t)cap);
                }
                pt *r = &f->p[f->np];
                memset(r, 0, sizeof *r);
                r->in = sw->inst[i];
                r->x = q->x;
                snprintf(r->ansatz, sizeof r->ansatz, "%s", scm_ansatz_name(f->ans[a]));
                r->k1 = (int)lround(s.n_anti);
                r->eps = q->eps;
                if (!is_dup(f->p, f->np, r))
                    f->np++;
            }
    }
    return f->np;
}


static int classify_csv(const char *path, const char *Ms, int threads)
{
    FILE *out = fopen(path, "w");
    if (!out) {
        fprintf(stderr, "cannot write %s\n", path);
        return 2;
    }
    fprintf(out, "M,K_minus_M,ansatz,k1,loss,lambda_min_nonzero_times_d,negative,zero,"
                 "rotation_zeros,jacobian_re_max,verdict\n");
    char buf[512];
    snprintf(buf, sizeof buf, "%s", Ms);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int M = atoi(tok);
        for (int dK = 0; dK <= 2; dK++) {
            fams f;
            double t0 = now();
            grow(M, dK, 8, threads, &f);
            double t1 = now();
            classify_all(f.p, f.np, threads);
            double t2 = now();
            for (int i = 0; i < f.np; i++) {
                const pt *q = &f.p[i];
                fprintf(out, "%d,%d,%s,%d,%.12g,%.10g,%ld,%ld,%ld,%.6g,%s\n", M, dK, q->ansatz,
                        q->k1, q->eps, q->lmin_d, q->n_neg, q->n_zero, q->rot, q->jac_max,
                        q->verdict);
            }
            fprintf(stderr, "M = %d, K - M = %d: %d distinct points, grow %.2f s, "
                            "classify %.3f s\n",
                    M, dK, f.np, t1 - t0, t2 - t1);
            fams_free(&f);
        }
        fflush(out);
    }
    fclose(out);
    return 0;
}

/* The dump's order: by labels (multiplicity, part, irrep, units), then
 * value: the order of the result (by value) swaps equal values of
 * different blocks on round-off, this one only values of one block. */
static int cmp_dump(const void *pa, const void *pb)
{
    const scm_symstab_eig *a = pa, *b = pb;
    long ka[5] = {a->mult, a->part, a->irrep, a->unit, a->unit2};
    long kb[5] = {b->mult, b->part, b->irrep, b->unit, b->unit2};
    for (int i = 0; i < 5; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    if (a->value != b->value)
        return a->value < b->value ? -1 : 1;
    return a->imag < b->imag ? -1 : a->imag > b->imag;
}

/* One part (Hessian "H" or Jacobian "J") of point i into out: a header
 * line (status, count, largest |lambda|, verdict) and one line per entry
 * (in cmp_dump's order). */
static void dump_part(FILE *out, int i, const pt *q, const char *part, scm_status st,
                      const scm_symstab_result *r)
{
    double vmax = 0.0;
    for (int e = 0; !st && e < r->n; e++)
        vmax = fmax(vmax, hypot(r->eig[e].value, r->eig[e].imag));
    fprintf(out, "%d,%d,%.17g,%s,-1,%d,%d,%.17g,%s\n", i, q->k1, q->eps, part, (int)st,
            st ? 0 : r->n, vmax, st ? "failed" : scm_symstab_verdict(r));
    scm_symstab_eig *s = st ? NULL : malloc(sizeof *s * (size_t)(r->n + 1));
    if (s) {
        memcpy(s, r->eig, sizeof *s * (size_t)r->n);
        qsort(s, (size_t)r->n, sizeof *s, cmp_dump);
    }
    for (int e = 0; s && e < r->n; e++) {
        const scm_symstab_eig *g = &s[e];
        fprintf(out, "%d,%d,%.17g,%s,%d,%.17g,%.17g,%ld,%d,%d,%d,%d\n", i, q->k1, q->eps, part,
                e, g->value, g->imag, g->mult, g->part, g->irrep, g->unit, g->unit2);
    }
    free(s);
}

/* --dump: every eigenvalue of every point of f into path. */
static int dump_points(const fams *f, const char *path)
{
    FILE *out = fopen(path, "w");
    if (!out) {
        fprintf(stderr, "cannot write %s\n", path);
        return 4;
    }
    for (int i = 0; i < f->np; i++) {
        const pt *q = &f->p[i];
        scm_symstab_result h, j;
        memset(&h, 0, sizeof h);
        memset(&j, 0, sizeof j);
        scm_error e;
        scm_status sh = scm_stab_symmetric(q->in, &scm_act_relu, q->x, NULL, &h, &e);
        scm_status sj = scm_stab_symmetric_jacobian(q->in, &scm_act_relu, q->x, NULL, &j, &e);
        dump_part(out, i, q, "H", sh, &h);
        dump_part(out, i, q, "J", sj, &j);
        scm_symstab_result_free(&h);
        scm_symstab_result_free(&j);
    }
    return fclose(out) ? 4 : 0;
}

/* Split a dump line into at most 12 fields (in place); the count. */
static int dump_fields(char *line, char **f)
{
    int n = 0;
    line[strcspn(line, "\n")] = '\0';
    f[n++] = line;
    for (char *c = line; *c && n < 12; c++)
        if (*c == ',') {
            *c = '\0';
            f[n++] = c + 1;
        }
    return n;
}

/* --compare OLD NEW (two --dump files of the same points): every line
 * must have the same labels; the values are compared relative to
 * themselves and to the largest |lambda| of their part.  0 if all agree
 * to 1e-12 relative (to the part's largest |lambda| for values below
 * 1e-12 of it, the zeros) with the same verdicts, else 1. */
static int compare_dumps(const char *old_path, const char *new_path)
{
    FILE *a = fopen(old_path, "r"), *b = fopen(new_path, "r");
    if (!a || !b) {
        fprintf(stderr, "cannot read %s or %s\n", old_path, new_path);
        if (a)
            fclose(a);
        if (b)
            fclose(b);
        return 2;
    }
    static char la[512], lb[512];
    long lines = 0, vals = 0, same = 0, bad_label = 0, bad_verdict = 0, bad_value = 0;
    double worst_rel = 0.0, worst_scaled = 0.0, vmax = 0.0;
    for (;;) {
        char *ra = fgets(la, sizeof la, a), *rb = fgets(lb, sizeof lb, b), *fa[12], *fb[12];
        if (!ra || !rb) {
            bad_label += (ra != NULL) != (rb != NULL);
            break;
        }
        lines++;
        int na = dump_fields(la, fa), nb = dump_fields(lb, fb);
        if (na != nb || strcmp(fa[0], fb[0]) || strcmp(fa[3], fb[3]) || strcmp(fa[4], fb[4])) {
            bad_label++;
            continue;
        }
        if (atoi(fa[4]) < 0) { /* header: status, count, vmax, verdict */
            bad_label += strcmp(fa[5], fb[5]) || strcmp(fa[6], fb[6]);
            bad_verdict += na < 9 || strcmp(fa[8], fb[8]);
            vmax = strtod(fa[7], NULL);
            continue;
        }
        for (int k = 7; k < na; k++)
            bad_label += strcmp(fa[k], fb[k]) != 0;
        for (int k = 5; k <= 6; k++) {
            double x = strtod(fa[k], NULL), y = strtod(fb[k], NULL), dif = fabs(x - y);
            vals++;
            same += !strcmp(fa[k], fb[k]);
            double rel = dif == 0.0 ? 0.0 : dif / fabs(x), scaled = vmax > 0.0 ? dif / vmax : dif;
            if (fabs(x) > 1e-12 * vmax)
                worst_rel = fmax(worst_rel, rel);
            worst_scaled = fmax(worst_scaled, scaled);
            bad_value += fabs(x) > 1e-12 * vmax ? !(rel <= 1e-12) : !(scaled <= 1e-12);
        }
    }
    fclose(a);
    fclose(b);
    printf("compare %s with %s: %ld lines, %ld values (real and imaginary parts), %ld bit for "
           "bit equal; largest difference %.3g relative (values above 1e-12 of their part's "
           "largest), %.3g of the part's largest |lambda|; %ld labels and %ld verdicts differ, "
           "%ld values beyond 1e-12\n",
           new_path, old_path, lines, vals, same, worst_rel, worst_scaled, bad_label,
           bad_verdict, bad_value);
    return bad_label || bad_verdict || bad_value ? 1 : 0;
}

/* Seconds of the dense Hessian and its spectrum at point q of K = M. */
static double dense_time(const pt *q, int K)
{
    int M = K;
    long d = 2 * K;
    double *Q = malloc(sizeof *Q * (size_t)(K * K)), *R = malloc(sizeof *R * (size_t)(K * M));
    double *W = malloc(sizeof *W * (size_t)(K * d)), *Ws = malloc(sizeof *Ws * (size_t)(M * d));
    long n = K * d;
    double *H = malloc(sizeof *H * (size_t)(n * n)), *ev = malloc(sizeof *ev * (size_t)n);
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, NULL);
    scm_flow *fl = scm_flow_alloc(m);
    scm_error e;
    scm_stab_counts c;
    scm_ansatz_to_full(q->in, q->x, Q, R);
    double t0 = now();
    scm_status st = scm_weights_realise(m, Q, R, d, W, Ws, &e);
    if (!st)
        st = scm_stab_hessian(fl, d, W, Ws, H, &e);
    if (!st)
        st = scm_stab_spectrum(H, (int)n, 1e-9, ev, &c);
    double t = now() - t0;
    if (st)
        fprintf(stderr, "dense at K = %d: %s\n", K, scm_status_str(st));
    scm_flow_free(fl);
    scm_model_free(m);
    free(Q);
    free(R);
    free(W);
    free(Ws);
    free(H);
    free(ev);
    return t;
}

/* The lowest-loss k1 = 1 point (-1 if none). */
static int k1_point(const fams *f, int k1)
{
    int best = -1;
    for (int i = 0; i < f->np; i++)
        if (f->p[i].k1 == k1 && (best < 0 || f->p[i].eps < f->p[best].eps))
            best = i;
    return best;
}

static double sym_time(const pt *q, int reps)
{
    double best = INFINITY;
    for (int r = 0; r < reps; r++) {
        pt c = *q;
        double t0 = now();
        classify(&c);
        best = fmin(best, now() - t0);
    }
    return best;
}

static int bench(int M, int threads, int repeat, int dense, const char *dump,
                 const char *cmp)
{
    fams f;
    double t0 = now(), g0 = cpu_now();
    grow(M, 0, 8, threads, &f);
    double t1 = now();
    printf("K = M = %d: %d distinct specialised points grown from M0 = 8 in %.2f s wall, "
           "%.2f s CPU (not timed below)\n",
           M, f.np, t1 - t0, cpu_now() - g0);
    if (dump) {
        int rc = dump_points(&f, dump);
        if (!rc && cmp)
            rc = compare_dumps(cmp, dump);
        if (rc) {
            fams_free(&f);
            return rc;
        }
    }
    int i1 = k1_point(&f, 1);
    if (i1 >= 0)
        printf("one point (k1 = 1, loss %.10g): all eigenvalues, Hessian and Jacobian: "
               "%.3f ms (best of 20)\n",
               f.p[i1].eps, 1e3 * sym_time(&f.p[i1], 20));
    t0 = now();
    double c0 = cpu_now();
    for (int r = 0; r < repeat; r++)
        classify_all(f.p, f.np, threads);
    t1 = t0 + (now() - t0) / repeat;
    double c1 = c0 + (cpu_now() - c0) / repeat;
    int nmin = 0;
    for (int i = 0; i < f.np; i++)
        nmin += strcmp(f.p[i].verdict, "saddle") != 0;
    printf("all %d points classified on %d threads: %.3f s wall, %.3f s CPU (%d not saddles)\n",
           f.np, threads, t1 - t0, c1 - c0, nmin);
    fams_free(&f);
    for (int K = 20; dense && K <= 30; K += 10) {
        grow(K, 0, 8, threads, &f);
        int i = k1_point(&f, 1);
        if (i >= 0) {
            double ts = sym_time(&f.p[i], 20), td = dense_time(&f.p[i], K);
            printf("K = M = %d, k1 = 1: symmetric (Hessian + Jacobian) %.3f ms, dense Hessian "
                   "%.3f s: ratio %.0f\n",
                   K, 1e3 * ts, td, td / ts);
        }
        fams_free(&f);
    }
    return 0;
}

/* The instance and scalars of a plateau-table row (fields f, the scalars
 * field f[15] is consumed); NULL if the ansatz or a scalar is missing. */
static scm_ansatz_inst *row_point(scm_ansatz *const *ans, int nans, char **f, double *x)
{
    int K = atoi(f[0]), M = atoi(f[1]), ak1 = atoi(f[13]);
    const scm_ansatz *a = NULL;
    for (int i = 0; i < nans && !a; i++)
        if (!strcmp(scm_ansatz_name(ans[i]), f[12]))
            a = ans[i];
    scm_error e;
    scm_ansatz_inst *inst = a ? scm_ansatz_instantiate(a, K, M, ak1, &e) : NULL;
    if (!inst)
        return NULL;
    int nsc = scm_ansatz_inst_nscalars(inst), got = 0;
    char *sc = f[15];
    sc[strcspn(sc, "\n")] = '\0';
    if (*sc == '"')
        sc++;
    sc[strcspn(sc, "\"")] = '\0';
    for (char *tok = strtok(sc, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        int c = scm_ansatz_inst_find(inst, tok);
        if (c >= 0 && c < 256) {
            x[c] = strtod(eq + 1, NULL);
            got++;
        }
    }
    if (got != nsc) {
        scm_ansatz_inst_free(inst);
        return NULL;
    }
    return inst;
}

typedef struct {
    long n_jac, nmin, nsad, nfail, ndis, nhfail; /* block_only rows, by the Jacobian */
    long n_par, par_cls[3], par_fail;            /* nan rows, by the Hessian */
} recl_counts;

/* A min_candidate_block_only row: the full Jacobian's largest real part
 * from the symmetric spectrum (NaN if it fails), and the Hessian's
 * agreement on the sign. */
static double row_jacobian(const scm_ansatz_inst *inst, const double *x, recl_counts *n)
{
    scm_symstab_result r, h;
    memset(&r, 0, sizeof r);
    memset(&h, 0, sizeof h);
    scm_error e;
    double fmax = NAN;
    if (scm_stab_symmetric_jacobian(inst, &scm_act_relu, x, NULL, &r, &e) == SCM_OK && r.n)
        fmax = r.eig[r.n - 1].value;
    /* the weight-space Hessian, another operator: a negative
     * eigenvalue where the Jacobian has an unstable direction */
    if (isfinite(fmax) && scm_stab_symmetric(inst, &scm_act_relu, x, NULL, &h, &e) == SCM_OK)
        n->ndis += (h.n_neg > 0) != (fmax > 1e-6);
    else if (isfinite(fmax))
        n->nhfail++;
    scm_symstab_result_free(&r);
    scm_symstab_result_free(&h);
    return fmax;
}

/* A row whose block Jacobian is not finite (parallel ReLU neurons, where
 * the (Q, R) Jacobian diverges but the weight-space Hessian exists): its
 * verdict from scm_stab_symmetric's parallel limit (scm_symstab_verdict),
 * or NULL if refused.  One line of evidence to hf (may be NULL). */
static const char *row_hessian(const scm_ansatz_inst *inst, const double *x, char **f, FILE *hf)
{
    scm_symstab_result h;
    memset(&h, 0, sizeof h);
    scm_error e;
    const char *v = NULL;
    if (scm_stab_symmetric(inst, &scm_act_relu, x, NULL, &h, &e) == SCM_OK && h.n) {
        v = scm_symstab_verdict(&h);
        if (hf)
            fprintf(hf, "%s,%s,%s,%s,%s,%s,%s,%.10g,%ld,%ld,%ld,%d,%.3g,%s\n", f[0], f[1], f[2],
                    f[3], f[6], f[12], f[13], h.eig[0].value * (double)h.d, h.n_neg, h.n_zero,
                    h.zero_rotations, h.parallel_students, h.parallel_srel, v);
    } else {
        fprintf(stderr, "K=%s M=%s loss %s: the symmetric Hessian refused: %s\n", f[0], f[1],
                f[6], e.msg);
    }
    scm_symstab_result_free(&h);
    return v;
}

/* --plateau IN OUT [--hessian-csv H]: the rows of a plateau table
 * (bench/gen_plateau_table) classified min_candidate_block_only get the
 * full Jacobian's largest real part from the symmetric spectrum and the
 * class min_candidate or saddle (tolerance 1e-6, the table's); the rows
 * whose block Jacobian is not finite (classed saddle without evidence)
 * get the verdict of the weight-space Hessian in its parallel limit
 * (saddle, min_candidate or degenerate), its evidence written to H.
 * Every other byte is kept. */
static int reclassify(const char *in_path, const char *out_path, const char *hess_path)
{
    FILE *in = fopen(in_path, "r"), *out = fopen(out_path, "w");
    FILE *hf = hess_path ? fopen(hess_path, "w") : NULL;
    if (!in || !out || (hess_path && !hf)) {
        fprintf(stderr, "cannot open %s, %s or %s\n", in_path, out_path,
                hess_path ? hess_path : "-");
        return 2;
    }
    if (hf)
        fprintf(hf, "K,M,dK,family_n_anti,loss,ansatz,instance,hess_min_eig_times_d,"
                    "hess_negative,hess_zero,rotation_zeros,parallel_students,parallel_srel,"
                    "classification\n");
    scm_ansatz *ans[16];
    int nans = 0;
    for (int i = 0; i < scm_ansatz_builtin_count() && nans < 16; i++) {
        const char *name, *text = scm_ansatz_builtin_text(i, &name);
        scm_error e;
        if ((ans[nans] = scm_ansatz_parse(text, strlen(text), name, &e)))
            nans++;
    }
    static char line[65536], copy[65536];
    recl_counts n;
    memset(&n, 0, sizeof n);
    while (fgets(line, sizeof line, in)) {
        char *f[16];
        int nf = 0;
        snprintf(copy, sizeof copy, "%s", line);
        f[nf++] = copy;
        for (char *c = copy; *c && nf < 16; c++)
            if (*c == ',') {
                *c = '\0';
                f[nf++] = c + 1;
            }
        int jac = nf == 16 && !strcmp(f[11], "min_candidate_block_only");
        int par = nf == 16 && !strcmp(f[11], "saddle") && !strcmp(f[9], "nan");
        double x[256];
        scm_ansatz_inst *inst = jac || par ? row_point(ans, nans, f, x) : NULL;
        double fmax = NAN;
        const char *cls = NULL;
        if (jac && inst) {
            fmax = row_jacobian(inst, x, &n);
            cls = !isfinite(fmax) ? NULL : fmax <= 1e-6 ? "min_candidate" : "saddle";
        } else if (par && inst) {
            cls = row_hessian(inst, x, f, hf);
        }
        scm_ansatz_inst_free(inst);
        n.n_jac += jac;
        n.n_par += par;
        if (!cls) {
            n.nfail += jac;
            n.par_fail += par;
            fputs(line, out);
            continue;
        }
        n.nmin += jac && fmax <= 1e-6;
        n.nsad += jac && fmax > 1e-6;
        if (par)
            n.par_cls[!strcmp(cls, "saddle") ? 0 : !strcmp(cls, "min_candidate") ? 1 : 2]++;
        /* fields 0..9 as they were, then 10 (the Jacobian's, or kept) and 11 */
        char *p10 = line;
        for (int k = 0; k < 10; k++)
            p10 = strchr(p10, ',') + 1;
        char *p11 = strchr(p10, ',') + 1, *p12 = strchr(p11, ',') + 1;
        if (jac)
            fprintf(out, "%.*s%.6e,%s,%s", (int)(p10 - line), line, fmax, cls, p12);
        else
            fprintf(out, "%.*s%s,%s", (int)(p11 - line), line, cls, p12);
    }
    fclose(in);
    fclose(out);
    if (hf)
        fclose(hf);
    for (int i = 0; i < nans; i++)
        scm_ansatz_free(ans[i]);
    fprintf(stderr, "%s: %ld block_only rows: %ld min_candidate, %ld saddle, %ld not done; the "
                    "Hessian (negative eigenvalue) disagrees on %ld, refused %ld\n",
            in_path, n.n_jac, n.nmin, n.nsad, n.nfail, n.ndis, n.nhfail);
    fprintf(stderr, "%s: %ld rows with a non-finite block Jacobian, by the Hessian: %ld saddle, "
                    "%ld min_candidate, %ld degenerate, %ld refused\n",
            in_path, n.n_par, n.par_cls[0], n.par_cls[1], n.par_cls[2], n.par_fail);
    return n.nfail || n.par_fail ? 1 : 0;
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    int M = 1000, threads = 2, repeat = 1, dense = 1;
    const char *csv = NULL, *Ms = "10,20,50,100,200,500,1000";
    const char *pl_in = NULL, *pl_out = NULL, *pl_hess = NULL, *dump = NULL, *cmp = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--M"))
            M = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--classify"))
            csv = argv[i + 1];
        else if (!strcmp(argv[i], "--Ms"))
            Ms = argv[i + 1];
        else if (!strcmp(argv[i], "--plateau") && i + 2 < argc) {
            pl_in = argv[i + 1];
            pl_out = argv[++i + 1];
        } else if (!strcmp(argv[i], "--repeat"))
            repeat = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dense"))
            dense = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dump"))
            dump = argv[i + 1];
        else if (!strcmp(argv[i], "--compare"))
            cmp = argv[i + 1];
        else if (!strcmp(argv[i], "--hessian-csv"))
            pl_hess = argv[i + 1];
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (pl_in)
        return reclassify(pl_in, pl_out, pl_hess);
    if (threads < 1 || threads > 16 || M < 8 || repeat < 1)
        return 2;
    if (cmp && !dump) {
        fprintf(stderr, "--compare OLD.csv needs --dump NEW.csv\n");
        return 2;
    }
    return csv ? classify_csv(csv, Ms, threads) : bench(M, threads, repeat, dense, dump, cmp);
}
