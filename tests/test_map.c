/* test_map.c: the initialisation laws (init.h) against their known moments,
 * by seeded Monte Carlo with an error bar; the list parser and the median
 * times of `scm map` (map.h).  The map against `scm compare`, its resume
 * and its threads: tests/test_map.sh.
 *
 * Moments, for students w in R^d with iid coordinates of variance sigma^2
 * (in our convention Q = W W^T / d, R = W W*^T / d, w*_m = sqrt(d) L_m):
 *   E Q_kk = sigma^2, Var Q_kk = (E u^4 / sigma^4 - 1) sigma^4 / d, that is
 *   2 sigma^4 / d (Gaussian) and 0.8 sigma^4 / d (uniform: E u^4 = 9/5 s^4);
 *   E Q_kl = 0, E Q_kl^2 = sigma^4 / d;
 *   E R_km R_kn = sigma^2 T_mn / d; with T = I, E R_km^4 = 3 sigma^4 / d^2
 *   (Gaussian) and 1.8 sigma^4 / d^2 (uniform), and the uniform bounds
 *   |R_km| <= sqrt(3 / d) sigma. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scm/init.h"
#include "scm/map.h"
#include "testutil.h"

#define NS 20000

/* A running sample of a scalar: mean and its standard error. */
typedef struct {
    double s, s2;
    long n;
} acc;

static void add(acc *a, double x)
{
    a->s += x;
    a->s2 += x * x;
    a->n++;
}

static double mean(const acc *a)
{
    return a->s / (double)a->n;
}

static double se(const acc *a)
{
    double m = mean(a), v = a->s2 / (double)a->n - m * m;
    return sqrt((v > 0 ? v : 0) / (double)a->n);
}

/* want within 5 standard errors of the sample mean (fails with probability
 * below 1e-6 per check when the law is right) */
static void check_moment(const acc *a, double want, const char *what)
{
    double m = mean(a), e = se(a);
    CHECK(fabs(m - want) <= 5.0 * e && e > 0.0, "%s: sample %.6g +- %.2g, want %.6g", what, m, e,
          want);
}

/* Sample NS states of law and check the moments above. */
static void moments(scm_init_law law, int K, int M, long d, double sigma, double fourth,
                    const double *T)
{
    scm_error err;
    scm_model *m = scm_model_alloc(K, M, scm_activation_find("relu"), T, NULL, NULL, &err);
    CHECK(m != NULL, "model: %s", err.msg);
    if (!m)
        return;
    double Q[64], R[64];
    acc qkk = {0}, qkk2 = {0}, qkl = {0}, qkl2 = {0}, r2 = {0}, r4 = {0}, r01 = {0};
    double rmax = 0.0, s2 = sigma * sigma, s4 = s2 * s2;
    int ok = 1;
    for (long s = 1; s <= NS; s++) {
        if (scm_init_sample(m, law, d, sigma, (unsigned long)s, Q, R, &err)) {
            ok = 0;
            break;
        }
        add(&qkk, Q[0]);
        add(&qkk2, (Q[0] - s2) * (Q[0] - s2));
        add(&qkl, Q[1]);
        add(&qkl2, Q[1] * Q[1]);
        add(&r2, R[0] * R[0]);
        add(&r4, R[0] * R[0] * R[0] * R[0]);
        if (M > 1)
            add(&r01, R[0] * R[1]);
        for (int i = 0; i < K * M; i++)
            rmax = fmax(rmax, fabs(R[i]));
    }
    CHECK(ok, "sampling %s: %s", scm_init_law_name(law), err.msg);
    char what[128];
    const char *name = scm_init_law_name(law);
    snprintf(what, sizeof what, "%s d=%ld E Q_kk", name, d);
    check_moment(&qkk, s2, what);
    snprintf(what, sizeof what, "%s d=%ld Var Q_kk", name, d);
    check_moment(&qkk2, (fourth - 1.0) * s4 / (double)d, what);
    snprintf(what, sizeof what, "%s d=%ld E Q_kl", name, d);
    check_moment(&qkl, 0.0, what);
    snprintf(what, sizeof what, "%s d=%ld E Q_kl^2", name, d);
    check_moment(&qkl2, s4 / (double)d, what);
    const double T00 = T ? T[0] : 1.0, T01 = T && M > 1 ? T[1] : 0.0;
    snprintf(what, sizeof what, "%s d=%ld E R_k0^2", name, d);
    check_moment(&r2, s2 * T00 / (double)d, what);
    if (M > 1) {
        snprintf(what, sizeof what, "%s d=%ld E R_k0 R_k1", name, d);
        check_moment(&r01, s2 * T01 / (double)d, what);
    }
    if (!T) {
        snprintf(what, sizeof what, "%s d=%ld E R_k0^4", name, d);
        check_moment(&r4, fourth * s4 / ((double)d * d), what);
        if (law == SCM_INIT_LAW_XAVIER_UNIFORM)
            CHECK(rmax <= sqrt(3.0 / (double)d) * sigma * (1 + 1e-12),
                  "uniform: |R| = %.6g beyond sqrt(3/d) sigma = %.6g", rmax,
                  sqrt(3.0 / (double)d) * sigma);
    }
    scm_model_free(m);
}

static void test_laws(void)
{
    /* the laws are told apart by the fourth moments (2 against 0.8 and 3
     * against 1.8): a uniform law sampled as a Gaussian fails */
    moments(SCM_INIT_LAW_GAUSSIAN, 3, 3, 3, 1.0, 3.0, NULL);
    moments(SCM_INIT_LAW_XAVIER, 3, 3, 3, 1.0, 3.0, NULL);
    moments(SCM_INIT_LAW_XAVIER_UNIFORM, 3, 3, 3, 1.0, 1.8, NULL);
    moments(SCM_INIT_LAW_XAVIER_UNIFORM, 4, 2, 2, 0.5, 1.8, NULL);
    moments(SCM_INIT_LAW_GAUSSIAN, 3, 2, 40, 0.7, 3.0, NULL);
    const double T[4] = {1.0, 0.5, 0.5, 2.0}; /* not diagonal: rows of L */
    moments(SCM_INIT_LAW_XAVIER_UNIFORM, 3, 2, 2, 1.0, 1.8, T);
    moments(SCM_INIT_LAW_GAUSSIAN, 3, 2, 5, 1.0, 3.0, T);

    /* xavier is the Gaussian law at d = M, draw for draw; it refuses d != M */
    scm_error err;
    scm_model *m = scm_model_alloc(4, 4, scm_activation_find("relu"), NULL, NULL, NULL, &err);
    double Q1[16], R1[16], Q2[16], R2[16];
    CHECK(scm_init_sample(m, SCM_INIT_LAW_XAVIER, 4, 1.0, 7, Q1, R1, &err) == SCM_OK, "%s",
          err.msg);
    CHECK(scm_init_random(m, 4, 1.0, 7, Q2, R2, &err) == SCM_OK, "%s", err.msg);
    CHECK(memcmp(Q1, Q2, sizeof Q1) == 0 && memcmp(R1, R2, sizeof R1) == 0,
          "xavier differs from gaussian at d = M");
    CHECK(scm_init_sample(m, SCM_INIT_LAW_XAVIER, 5, 1.0, 7, Q1, R1, &err) == SCM_EINVAL &&
              strstr(err.msg, "init.d") != NULL,
          "xavier with d != M: %s", err.msg);
    CHECK(scm_init_sample(m, SCM_INIT_LAW_XAVIER_UNIFORM, 3, 1.0, 7, Q1, R1, &err) == SCM_EINVAL,
          "xavier_uniform with d < M accepted");
    /* reproducible: same seed, same bits */
    CHECK(scm_init_sample(m, SCM_INIT_LAW_XAVIER_UNIFORM, 4, 1.0, 9, Q1, R1, &err) == SCM_OK &&
              scm_init_sample(m, SCM_INIT_LAW_XAVIER_UNIFORM, 4, 1.0, 9, Q2, R2, &err) == SCM_OK &&
              memcmp(Q1, Q2, sizeof Q1) == 0 && memcmp(R1, R2, sizeof R1) == 0,
          "uniform law not reproducible");
    scm_model_free(m);
    scm_init_law law;
    CHECK(scm_init_law_find("xavier_uniform", &law) == 0 && law == SCM_INIT_LAW_XAVIER_UNIFORM,
          "find xavier_uniform");
    CHECK(scm_init_law_find("Xavier", &law) == -1, "an unknown law found");
}

static void test_lists(void)
{
    long v[256];
    int n;
    scm_error err;
    CHECK(scm_map_parse_list("6:40:2", "--M", 1, 1000, v, 256, &n, &err) == SCM_OK && n == 18 &&
              v[0] == 6 && v[17] == 40,
          "6:40:2: n = %d", n);
    CHECK(scm_map_parse_list("3,5:7,10", "--M", 1, 1000, v, 256, &n, &err) == SCM_OK && n == 5 &&
              v[1] == 5 && v[3] == 7 && v[4] == 10,
          "3,5:7,10");
    CHECK(scm_map_parse_list("0:4", "--dK", 0, 64, v, 256, &n, &err) == SCM_OK && n == 5 &&
              v[0] == 0 && v[4] == 4,
          "0:4");
    static const char *const bad[] = {"5:3", "a", "1:5:0", "3,3", "", "-1", "1:2:3:4", "2,", "1:70"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(scm_map_parse_list(bad[i], "--dK", 0, 64, v, 256, &n, &err) == SCM_EINVAL &&
                  strstr(err.msg, "--dK") != NULL,
              "'%s' accepted (n = %d)", bad[i], n);
    CHECK(scm_map_parse_list("1:300", "--M", 1, 1000, v, 256, &n, &err) == SCM_EINVAL,
          "more than max values accepted");
}

static void test_median(void)
{
    char path[] = "/tmp/test_map_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"scm_sweep\": 1}\n"
               "{\"index\":0,\"converged\":true,\"t\":5,\"class\":\"global_minimum/k1=0\"}\n"
               "{\"index\":1,\"converged\":true,\"t\":1,\"class\":\"k1/k1=1\"}\n"
               "{\"index\":2,\"converged\":false,\"t\":1000,\"class\":\"not_converged\"}\n"
               "{\"index\":3,\"converged\":true,\"t\":3,\"class\":\"global_minimum/k1=0\"}\n"
               "{\"index\":4,\"converged\":true,\"t\":9,\"class\":\"global_minimum/k1=0\"}\n");
    fclose(f);
    double tc, tg;
    scm_error err;
    CHECK(scm_map_median_times(path, &tc, &tg, &err) == SCM_OK, "%s", err.msg);
    CHECK(tc == 4.0 && tg == 5.0, "medians %g %g, want 4 (of 1 3 5 9) and 5 (of 3 5 9)", tc, tg);
    unlink(path);
    CHECK(scm_map_median_times(path, &tc, &tg, &err) == SCM_EIO, "a missing file read");
}

int main(void)
{
    test_laws();
    test_lists();
    test_median();
    return TEST_SUMMARY();
}
