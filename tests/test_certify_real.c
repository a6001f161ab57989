/* test_certify_real.c: realisability of certified zeros when S = A + A^T
 * is not definite (certify_real.c, docs/certify.md section 4).  The
 * rigorous eigenvalue enclosure against GSL's eigenvalues of random
 * symmetric matrices inside the ball (and a mutation, the Weyl term
 * dropped, caught); points with indefinite S now certified, their
 * realisability checked in floats (W = R W*: Q against R R^T) and S's
 * indefiniteness by scm_flow_grad; an off-span point (Q - R R^T PSD and
 * nonzero in floats); constructed S with a pair sum 0 refused with it. */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort_double.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/ansatz.h"
#include "scm/blockflow.h"
#include "scm/certify.h"
#include "scm/family.h"
#include "scm/fixedpoint.h"
#include "scm/flow.h"
#include "scm/model.h"
#include "landscape/ansatz_internal.h"
#include "landscape/certify_internal.h"
#include "testutil.h"

static scm_ansatz *builtin[16];
static int n_builtin;

static void load_builtins(void)
{
    for (int i = 0; i < scm_ansatz_builtin_count() && n_builtin < 16; i++) {
        const char *t = scm_ansatz_builtin_text(i, NULL);
        scm_error e;
        scm_ansatz *a = scm_ansatz_parse(t, strlen(t), "builtin", &e);
        if (a)
            builtin[n_builtin++] = a;
    }
}

static scm_ansatz *find_builtin(const char *name)
{
    for (int i = 0; i < n_builtin; i++)
        if (strcmp(scm_ansatz_name(builtin[i]), name) == 0)
            return builtin[i];
    return NULL;
}

/* Ascending eigenvalues of the symmetric n x n a (destroyed) into ev. */
static void sym_eigs(double *a, int n, double *ev)
{
    gsl_matrix_view m = gsl_matrix_view_array(a, (size_t)n, (size_t)n);
    gsl_vector_view v = gsl_vector_view_array(ev, (size_t)n);
    gsl_eigen_symm_workspace *w = gsl_eigen_symm_alloc((size_t)n);
    gsl_eigen_symm(&m.matrix, &v.vector, w);
    gsl_eigen_symm_free(w);
    gsl_sort(ev, 1, (size_t)n);
}

/* Count of the sampled symmetric matrices inside a random ball matrix
 * whose k-th eigenvalue lies outside the k-th enclosure. */
static int enclosure_misses(gsl_rng *rng, int n, double rad, int clustered, double mutate,
                            double *width)
{
    arb_ptr A = _arb_vec_init(n * n), lam = _arb_vec_init(n);
    double mid[64 * 64], a[64 * 64], ev[64];
    /* a mid matrix with a known spectrum: Q D Q^T, D with repeats if clustered */
    for (int i = 0; i < n * n; i++)
        mid[i] = gsl_rng_uniform(rng) - 0.5;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            mid[j * n + i] = mid[i * n + j];
    if (clustered)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                mid[i * n + j] = (i == j ? 0.7 * (i % 2 ? 1.0 : -1.0) : 0.0) + 1e-7 * mid[i * n + j];
    for (int i = 0; i < n * n; i++) {
        arb_set_d(A + i, mid[i]);
        mag_set_d(arb_radref(A + i), rad);
    }
    int miss = 0;
    if (scm_cert_sym_eig(A, n, 128, mutate, lam) != 0)
        miss = -1;
    *width = 0.0;
    for (int k = 0; miss >= 0 && k < n; k++)
        *width = fmax(*width, mag_get_d(arb_radref(lam + k)));
    for (int s = 0; miss >= 0 && s < 40; s++) {
        /* a symmetric matrix in the ball; half the samples at its corners */
        for (int i = 0; i < n; i++)
            for (int j = 0; j <= i; j++) {
                double u = 2.0 * gsl_rng_uniform(rng) - 1.0;
                if (s % 2)
                    u = u < 0 ? -1.0 : 1.0;
                /* (1 - 1e-6): the sum's rounding stays inside the ball */
                a[i * n + j] = a[j * n + i] = mid[i * n + j] + (1.0 - 1e-6) * rad * u;
            }
        sym_eigs(a, n, ev);
        for (int k = 0; k < n; k++) {
            arb_t t;
            arb_init(t);
            arb_set_d(t, ev[k]);
            miss += !arb_contains(lam + k, t);
            arb_clear(t);
        }
    }
    _arb_vec_clear(A, n * n);
    _arb_vec_clear(lam, n);
    return miss;
}

static void test_enclosure(void)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 2385);
    int n_cases = 0, n_caught = 0;
    double worst = 0.0;
    for (int n = 1; n <= 9; n++)
        for (int clustered = 0; clustered <= 1; clustered++)
            for (int r = 0; r < 3; r++) {
                double rad = r == 0 ? 0.0 : r == 1 ? 1e-9 : 2.3e-6, w;
                int miss = enclosure_misses(rng, n, rad, clustered, 0.0, &w);
                CHECK(miss == 0, "n = %d clustered %d radius %g: %d eigenvalues outside", n,
                      clustered, rad, miss);
                /* Weyl: the spread of the ball is at most n rad in 2-norm */
                CHECK(w <= 2.0 * n * rad + 1e-12, "n = %d: enclosure radius %g for ball %g", n, w,
                      rad);
                worst = fmax(worst, rad > 0 ? w / rad : 0.0);
                n_cases++;
                /* the mutation (Weyl term dropped) misses the corners */
                if (rad > 0 && n >= 2) {
                    int mm = enclosure_misses(rng, n, rad, clustered, 1.0, &w);
                    n_caught += mm > 0;
                }
            }
    CHECK(n_caught >= 30, "the dropped Weyl term was caught in only %d of 32 cases", n_caught);
    printf("eigenvalue enclosure: %d cases, radius at most %.3g x the ball's, mutation caught "
           "%d times\n",
           n_cases, worst, n_caught);
    gsl_rng_free(rng);
}

/* Q - R R^T of the full state of x (K x K into X) and S = A + A^T of the
 * loss there (K x K into S, floating point, scm_flow_grad). */
static void full_x_s(const scm_ansatz_inst *in, const double *x, double *X, double *S)
{
    int K = (int)scm_ansatz_inst_K(in), M = (int)scm_ansatz_inst_M(in);
    double *Q = malloc(sizeof(double) * (size_t)(K * K)), *R = malloc(sizeof(double) * (size_t)(K * M));
    scm_error e;
    scm_ansatz_to_full(in, x, Q, R);
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) {
            double s = 0.0;
            for (int m = 0; m < M; m++)
                s += R[i * M + m] * R[j * M + m];
            X[i * K + j] = Q[i * K + j] - s;
        }
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &e);
    scm_flow *fl = scm_flow_alloc(m);
    double eps;
    scm_flow_grad(fl, Q, R, &eps, S, NULL);
    for (int i = 0; i < K; i++)
        for (int j = 0; j <= i; j++)
            S[i * K + j] = S[j * K + i] = S[i * K + j] + S[j * K + i];
    scm_flow_free(fl);
    scm_model_free(m);
    free(Q);
    free(R);
}

/* Points with indefinite S in the families at K = M = 5..7: certified by
 * the Sylvester route, and in floats Q = R R^T (W = R W* realises them)
 * with S indefinite and no pair sum of its eigenvalues near 0. */
static void test_indefinite(void)
{
    scm_certify_opts o;
    scm_certify_opts_default(&o);
    int n_syl = 0;
    for (int K = 5; K <= 7; K++)
        for (int k1 = 0; k1 <= K; k1++) {
            scm_family fam;
            scm_fp_opts fo;
            scm_fp_opts_default(&fo);
            fo.n_random = 40;
            scm_error e;
            if (scm_family_find(K, K, k1, builtin, n_builtin, &scm_act_relu, &fo, &fam, &e))
                continue;
            for (int p = 0; p < fam.n; p++) {
                scm_ansatz_inst *in = scm_ansatz_instantiate(find_builtin(fam.pt[p].ansatz), K,
                                                             K, fam.pt[p].instance, &e);
                if (!in)
                    continue;
                scm_certify_result r;
                scm_status st = scm_certify_point(in, &scm_act_relu, fam.pt[p].x, &o, &r, &e);
                CHECK(st == SCM_OK, "certify: %s", e.msg);
                if (r.certified && strstr(r.realisable, "S indefinite")) {
                    double X[64], S[64], ev[8], xmax = 0.0, pmin = INFINITY;
                    full_x_s(in, fam.pt[p].x, X, S);
                    for (int i = 0; i < K * K; i++)
                        xmax = fmax(xmax, fabs(X[i]));
                    sym_eigs(S, K, ev);
                    for (int i = 0; i < K; i++)
                        for (int j = i; j < K; j++)
                            pmin = fmin(pmin, fabs(ev[i] + ev[j]));
                    CHECK(xmax < 1e-9, "K = %d point %d: |Q - R R^T| = %g", K, p, xmax);
                    CHECK(ev[0] < -1e-6 && ev[K - 1] > 1e-6, "K = %d: S not indefinite: %g .. %g",
                          K, ev[0], ev[K - 1]);
                    CHECK(pmin > 1e-8, "K = %d: a pair sum %g of S's eigenvalues near 0", K, pmin);
                    CHECK(r.strict != 0, "K = %d: %s", K, r.reason);
                    n_syl++;
                }
                scm_ansatz_inst_free(in);
            }
            scm_family_free(&fam);
        }
    CHECK(n_syl >= 3, "only %d points certified with indefinite S", n_syl);
    printf("indefinite S: %d points certified, Q = R R^T in floats\n", n_syl);
}

/* The unspecialised k1 = 0 point at K = M = 12 (R constant, Q with a
 * large contrast): the students lie mostly outside the teacher span.
 * Certified realisable off the span; in floats Q - R R^T is PSD and not 0. */
static void test_off_span(void)
{
    scm_error e;
    scm_ansatz_inst *in = scm_ansatz_instantiate(find_builtin("k1"), 12, 12, 0, &e);
    CHECK(in != NULL, "k1 at K = 12: %s", e.msg);
    if (!in)
        return;
    int n = scm_ansatz_inst_nscalars(in);
    double x[8];
    for (int i = 0; i < n; i++) {
        const char *nm = scm_ansatz_inst_scalar_name(in, i);
        x[i] = strstr(nm, "Q[") ? (strstr(nm, ".diag") ? 0.9 : 0.02) : 0.09;
    }
    scm_blockflow *bf = scm_blockflow_alloc(in, &scm_act_relu);
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    double res;
    scm_status st = scm_fp_solve(bf, x, &fo, &res);
    CHECK(st == SCM_OK && res < 1e-12, "Newton: %d, residual %g", st, res);
    scm_certify_opts o;
    scm_certify_opts_default(&o);
    scm_certify_result r;
    st = scm_certify_point(in, &scm_act_relu, x, &o, &r, &e);
    CHECK(st == SCM_OK && r.certified && r.off_span && strstr(r.realisable, "off the span") &&
              strstr(r.reason, "rotation zero modes"),
          "off-span point: %s / %s / %s", r.verdict, r.realisable, r.reason);
    double X[144], S[144], ev[12];
    full_x_s(in, x, X, S);
    sym_eigs(X, 12, ev);
    CHECK(ev[0] > -1e-10 && ev[11] > 0.1, "Q - R R^T: eigenvalues %g .. %g, want PSD and not 0",
          ev[0], ev[11]);
    scm_blockflow_free(bf);
    scm_ansatz_inst_free(in);
}

/* Hand-made S at an instance of k1 (groups anti of 1 and al of 3): the
 * group-mean matrix [[d1, b], [b, m2]] and al's contrast d2 - o2. */
static void set_s(const scm_ansatz_inst *in, scm_cert_eval *e, double d1, double b, double m2,
                  double contrast)
{
    int ns = in->ns, ia = -1, il = -1;
    for (int i = 0; i < ns; i++) {
        if (strcmp(in->sname[i], "anti") == 0)
            ia = i;
        if (strcmp(in->sname[i], "al") == 0)
            il = i;
    }
    for (int i = 0; i < ns * ns; i++) {
        arb_zero(e->Sd + i);
        arb_zero(e->So + i);
    }
    double n2 = in->ssize[il];
    /* m2 = d2 + (n2 - 1) o2, contrast = d2 - o2 */
    double o2 = (m2 - contrast) / n2, d2 = contrast + o2;
    arb_set_d(e->Sd + ia * ns + ia, d1);
    arb_set_d(e->Sd + il * ns + il, d2);
    arb_set_d(e->So + il * ns + il, o2);
    arb_set_d(e->Sd + ia * ns + il, b / sqrt(n2));
    arb_set_d(e->Sd + il * ns + ia, b / sqrt(n2));
    for (int i = 0; i < ns * ns; i++) {
        mag_set_d(arb_radref(e->Sd + i), 1e-12);
        mag_set_d(arb_radref(e->So + i), 1e-12);
    }
}

static void test_constructed(void)
{
    scm_error err;
    scm_ansatz_inst *in = scm_ansatz_instantiate(find_builtin("k1"), 4, 4, 1, &err);
    CHECK(in != NULL, "k1 at K = 4: %s", err.msg);
    if (!in)
        return;
    int n = scm_ansatz_inst_nscalars(in);
    arb_ptr box = _arb_vec_init(n);
    for (int i = 0; i < n; i++) {
        const char *nm = scm_ansatz_inst_scalar_name(in, i);
        arb_set_d(box + i, strstr(nm, "Q[") ? (strstr(nm, ".diag") ? 0.9 : 0.1) : 0.2);
        mag_set_d(arb_radref(box + i), 1e-12);
    }
    scm_cert_eval e;
    scm_cert_eval_init(&e, in);
    scm_certify_result r;
    /* eigenvalues +-0.4 of the mean matrix: mu_1 + mu_2 = 0 */
    memset(&r, 0, sizeof r);
    r.certified = 1;
    set_s(in, &e, 0.0, 0.4, 0.0, 0.6);
    scm_cert_realisability(in, &e, box, 128, &r);
    CHECK(!r.certified && strstr(r.reason, "eigenvalues 1 and 2") && strstr(r.reason, "may sum to 0"),
          "pair sum 0: %s", r.reason);
    /* the same with d1 = 0.3: mu = 0.15 +- 0.427, sums 0.3, +-0.85 */
    memset(&r, 0, sizeof r);
    r.certified = 1;
    set_s(in, &e, 0.3, 0.4, 0.0, 0.6);
    scm_cert_realisability(in, &e, box, 128, &r);
    CHECK(r.certified && strstr(r.realisable, "S indefinite") && !r.off_span, "indefinite: %s %s",
          r.realisable, r.reason);
    /* a pair sum of 1e-9, beyond the balls' 1e-12: still proved */
    memset(&r, 0, sizeof r);
    r.certified = 1;
    set_s(in, &e, 1e-9, 0.4, 0.0, 0.6);
    scm_cert_realisability(in, &e, box, 128, &r);
    CHECK(r.certified, "pair sum 1e-9: %s", r.reason);
    /* al's contrast value 0 and Q - R R^T there 0.9 - 0.1 - 0 > 0: off the span */
    memset(&r, 0, sizeof r);
    r.certified = 1;
    set_s(in, &e, 0.3, 0.4, 0.0, 0.0);
    scm_cert_realisability(in, &e, box, 128, &r);
    CHECK(r.certified && r.off_span && strstr(r.realisable, "group al"), "contrast 0: %s %s",
          r.realisable, r.reason);
    /* the same with Q_d - Q_o = 0.8 - (R_d - R_o)^2 < 0: not realisable */
    int rd = scm_ansatz_inst_find(in, "R[al,tal].diag");
    CHECK(rd >= 0, "no R[al,tal].diag");
    if (rd >= 0) {
        arb_set_d(box + rd, 1.2);
        mag_set_d(arb_radref(box + rd), 1e-12);
        memset(&r, 0, sizeof r);
        r.certified = 1;
        scm_cert_realisability(in, &e, box, 128, &r);
        CHECK(!r.certified && strstr(r.reason, "not realisable") && strstr(r.reason, "group al"),
              "negative contrast: %s", r.reason);
    }
    /* S positive definite: the old route, its wording */
    memset(&r, 0, sizeof r);
    r.certified = 1;
    set_s(in, &e, 1.0, 0.1, 1.0, 0.5);
    scm_cert_realisability(in, &e, box, 128, &r);
    CHECK(r.certified && strstr(r.realisable, "positive definite"), "definite: %s", r.realisable);
    scm_cert_eval_clear(&e);
    _arb_vec_clear(box, n);
    scm_ansatz_inst_free(in);
}

int main(void)
{
    gsl_set_error_handler_off();
    load_builtins();
    test_enclosure();
    test_constructed();
    test_indefinite();
    test_off_span();
    for (int i = 0; i < n_builtin; i++)
        scm_ansatz_free(builtin[i]);
    return TEST_SUMMARY();
}
