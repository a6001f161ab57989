/* test_ansatz.c: the ansatz engine (parsing, named errors, scalar <-> full
 * maps) and the block-level flow, each checked against something computed
 * another way: the block residual (blockflow.c, group algebra) against the
 * full flow (flow.c) projected onto the ansatz; the block Gram spectrum
 * against GSL's eigenvalues of the full Gram matrix; the real-multiplicity
 * residual against an ansatz with the groups merged. */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>
#include <string.h>

#include "scm/ansatz.h"
#include "scm/blockflow.h"
#include "scm/flow.h"
#include "testutil.h"

static const char *three_groups =
    "{\"name\": \"three\", \"students\": {\"a\": \"k1\", \"b\": \"2\", \"c\": \"K - k1 - 2\"},"
    " \"teachers\": {\"ta\": \"k1\", \"tb\": \"1\", \"tc\": \"M - k1 - 1\"},"
    " \"pairs\": {\"a\": \"ta\", \"c\": \"tc\"}}";

static scm_ansatz *parse(const char *s)
{
    scm_error e;
    scm_ansatz *a = scm_ansatz_parse(s, strlen(s), "test", &e);
    CHECK(a != NULL, "parse failed: %s", e.msg);
    return a;
}

/* A PSD random ansatz point: random R scalars, Q = R R^T + q0 I. */
static void random_point(scm_blockflow *bf, const scm_ansatz_inst *in, gsl_rng *r, double *x)
{
    int n = scm_ansatz_inst_nscalars(in);
    for (int c = 0; c < n; c++) {
        const char *nm = scm_ansatz_inst_scalar_name(in, c);
        x[c] = nm[0] == 'R' ? (strstr(nm, ".diag") ? -0.9 + 1.8 * gsl_rng_uniform(r)
                                                    : 0.3 * (gsl_rng_uniform(r) - 0.4))
                            : 0.0;
    }
    scm_blockflow_set_q_from_r(bf, x, 0.2 + 0.4 * gsl_rng_uniform(r));
}

/* (a) vs (b) at random points of an instance; also the loss, the
 * invariance defect and the Gram spectrum. */
static void check_instance(const scm_ansatz *a, int K, int M, int k1,
                           const scm_activation *act, gsl_rng *r)
{
    scm_error e;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, M, k1, &e);
    CHECK(in != NULL, "instantiate %s at K=%d M=%d k1=%d: %s", scm_ansatz_name(a), K, M, k1,
          e.msg);
    if (!in)
        return;
    int n = scm_ansatz_inst_nscalars(in);
    scm_model *m = scm_model_alloc(K, M, act, NULL, NULL, NULL, &e);
    scm_flow *fl = scm_flow_alloc(m);
    scm_blockflow *bf = scm_blockflow_alloc(in, act);
    double *x = malloc(sizeof(double) * (size_t)n * 4);
    double *Fb = x + n, *Fp = x + 2 * n, *y = x + 3 * n;
    double *Q = malloc(sizeof(double) * (size_t)(K * K + K * M) * 2);
    double *R = Q + K * K, *FQ = R + K * M, *FR = FQ + K * K;
    int N = K + M;
    double *G = malloc(sizeof(double) * (size_t)(N * N));
    gsl_vector *ev = gsl_vector_alloc((size_t)N);
    gsl_eigen_symm_workspace *ws = gsl_eigen_symm_alloc((size_t)N);
    for (int trial = 0; trial < 5; trial++) {
        random_point(bf, in, r, x);
        double eb, ef, dev, devx;
        scm_status st = scm_blockflow_residual(bf, x, Fb, &eb);
        CHECK(st == SCM_OK, "block residual: %s", scm_status_str(st));
        CHECK(scm_ansatz_to_full(in, x, Q, R) == SCM_OK, "to_full");
        /* round trip */
        scm_ansatz_project(in, Q, R, y, &devx);
        double rt = 0.0;
        for (int c = 0; c < n; c++)
            rt = fmax(rt, fabs(y[c] - x[c]));
        CHECK(rt <= 1e-15 && devx <= 1e-15, "project(to_full(x)) != x: %g, dev %g", rt, devx);
        st = scm_flow_rhs(fl, Q, R, FQ, FR, &ef);
        CHECK(st == SCM_OK, "full rhs: %s", scm_status_str(st));
        scm_ansatz_project(in, FQ, FR, Fp, &dev);
        double scale = 0.0, diff = 0.0;
        for (int c = 0; c < n; c++) {
            scale = fmax(scale, fabs(Fp[c]));
            diff = fmax(diff, fabs(Fp[c] - Fb[c]));
        }
        CHECK(dev <= 1e-14 * fmax(1.0, scale), "%s K=%d M=%d k1=%d: not invariant, dev %g",
              scm_ansatz_name(a), K, M, k1, dev);
        CHECK(diff <= 1e-13 * fmax(1.0, scale),
              "%s K=%d M=%d k1=%d %s: block vs full residual differ by %g (scale %g)",
              scm_ansatz_name(a), K, M, k1, act->name, diff, scale);
        CHECK_CLOSE(eb, ef, 1e-13, 1e-14, "block vs full loss");
        /* Gram spectrum */
        double lb;
        CHECK(scm_blockflow_gram_min_eig(bf, x, &lb) == SCM_OK, "gram_min_eig");
        gsl_matrix_view Gv = gsl_matrix_view_array(G, (size_t)N, (size_t)N);
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                G[i * N + j] = i < M && j < M ? (i == j)
                               : i < M       ? R[(j - M) * M + i]
                               : j < M       ? R[(i - M) * M + j]
                                             : Q[(i - M) * K + (j - M)];
        gsl_eigen_symm(&Gv.matrix, ev, ws);
        double lf = INFINITY;
        for (int i = 0; i < N; i++)
            lf = fmin(lf, gsl_vector_get(ev, (size_t)i));
        CHECK_CLOSE(lb, lf, 1e-12, 1e-12, "block vs full min Gram eigenvalue");
    }
    gsl_vector_free(ev);
    gsl_eigen_symm_free(ws);
    free(G);
    free(Q);
    free(x);
    scm_blockflow_free(bf);
    scm_flow_free(fl);
    scm_model_free(m);
    scm_ansatz_inst_free(in);
}

static void check_bad(const char *text, const char *want)
{
    scm_error e;
    scm_error_clear(&e);
    scm_ansatz *a = scm_ansatz_parse(text, strlen(text), "bad", &e);
    CHECK(a == NULL && e.code == SCM_EINVAL && strstr(e.msg, want),
          "want an error mentioning '%s', got '%s'", want, e.msg);
    scm_ansatz_free(a);
}

static void check_bad_inst(const char *text, int K, int M, int k1, const char *want)
{
    scm_ansatz *a = parse(text);
    if (!a)
        return;
    scm_error e;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, M, k1, &e);
    CHECK(in == NULL && e.code == SCM_EINVAL && strstr(e.msg, want),
          "want an instantiation error mentioning '%s', got '%s'", want, in ? "none" : e.msg);
    scm_ansatz_inst_free(in);
    scm_ansatz_free(a);
}

static void test_errors(void)
{
    check_bad("{", "not valid JSON");
    check_bad("[1]", "must be a JSON object");
    check_bad("{\"name\": \"x\", \"students\": {\"a\": \"K\"}, \"teachers\": {\"t\": \"M\"},"
              " \"pairs\": {}, \"colour\": 1}",
              "unknown key \"colour\"");
    check_bad("{\"name\": \"x\", \"students\": {\"a\": \"K +\"}, \"teachers\": {\"t\": \"M\"},"
              " \"pairs\": {}}",
              "cannot parse expression 'K +'");
    check_bad("{\"name\": \"x\", \"students\": {\"a\": \"sqrt(K)\"}, \"teachers\": {\"t\": \"M\"},"
              " \"pairs\": {}}",
              "cannot parse");
    check_bad("{\"name\": \"x\", \"students\": {\"a\": \"K\"}, \"teachers\": {\"t\": \"M\"},"
              " \"pairs\": {\"a\": \"u\"}}",
              "'u' is not a teacher group");
    check_bad("{\"name\": \"x\", \"students\": {\"a\": \"1\", \"b\": \"K - 1\"},"
              " \"teachers\": {\"t\": \"M\"}, \"pairs\": {\"a\": \"t\", \"b\": \"t\"}}",
              "paired with both");
    check_bad("{\"name\": \"x\", \"students\": {\"a\": \"K\", \"a\": \"1\"},"
              " \"teachers\": {\"t\": \"M\"}, \"pairs\": {}}",
              "appears twice");
    check_bad("{\"name\": \"x\", \"students\": {\"a\": \"K\"}, \"teachers\": {\"t\": \"M\"},"
              " \"pairs\": {\"a\": \"t\"}, \"guess\": {\"R[a,t].dia\": 1}}",
              "guess 'R[a,t].dia' is not a scalar");
    check_bad("{\"name\": \"x\", \"students\": {\"a\": \"K\"}, \"teachers\": {\"t\": \"M\"}}",
              "\"pairs\" must be an object");
    check_bad("{\"students\": {\"a\": \"K\"}, \"teachers\": {\"t\": \"M\"}, \"pairs\": {}}",
              "\"name\"");
    check_bad("{\"name\": \"x\", \"require_positive\": \"K - M\", \"students\": {\"a\": \"K\"},"
              " \"teachers\": {\"t\": \"M\"}, \"pairs\": {}}",
              "\"require_positive\" must be an array of expressions that are at least 1");
    check_bad("{\"name\": \"x\", \"require_positive\": [\"K >= M\"], \"students\": {\"a\": \"K\"},"
              " \"teachers\": {\"t\": \"M\"}, \"pairs\": {}}",
              "\"require_positive\" entry: cannot parse expression 'K >= M'");
    check_bad("{\"name\": \"x\", \"require\": [true], \"students\": {\"a\": \"K\"},"
              " \"teachers\": {\"t\": \"M\"}, \"pairs\": {}}",
              "\"require\" entry must be a string expression");
    const char *ok2 = "{\"name\": \"x\", \"students\": {\"a\": \"k1\", \"b\": \"K - k1 + 1\"},"
                      " \"teachers\": {\"t\": \"k1\", \"u\": \"M - k1\"},"
                      " \"pairs\": {\"a\": \"t\"}}";
    check_bad_inst(ok2, 5, 5, 2, "do not add up");
    const char *neg = "{\"name\": \"x\", \"students\": {\"a\": \"k1\", \"b\": \"K - k1\"},"
                      " \"teachers\": {\"t\": \"k1\", \"u\": \"M - k1\"},"
                      " \"pairs\": {\"a\": \"t\"}}";
    check_bad_inst(neg, 3, 3, 4, "< 0");
    const char *mism = "{\"name\": \"x\", \"students\": {\"a\": \"2\", \"b\": \"K - 2\"},"
                       " \"teachers\": {\"t\": \"1\", \"u\": \"M - 1\"},"
                       " \"pairs\": {\"a\": \"t\"}}";
    check_bad_inst(mism, 4, 4, 0, "differ in size");
}

/* Structure: names, size-0 and size-1 groups. */
static void test_structure(void)
{
    scm_ansatz *a = parse(three_groups);
    if (!a)
        return;
    scm_error e;
    /* k1 = 1: a has size 1 (no .off scalars); c has size K - 3 */
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, 6, 5, 1, &e);
    CHECK(in != NULL, "%s", e.msg);
    if (in) {
        /* Q: a.diag, b.diag, b.off, c.diag, c.off, [a,b], [a,c], [b,c] = 8;
         * R: [a,ta].diag, [a,tb], [a,tc], [b,ta], [b,tb], [b,tc], [c,ta], [c,tb],
         *    [c,tc].diag, [c,tc].off = 10 */
        CHECK(scm_ansatz_inst_nscalars(in) == 18, "got %d scalars",
              scm_ansatz_inst_nscalars(in));
        CHECK(scm_ansatz_inst_find(in, "Q[a,a].off") < 0, "size-1 group has no .off");
        CHECK(scm_ansatz_inst_find(in, "R[c,tc].off") >= 0, "R[c,tc].off missing");
        CHECK(scm_ansatz_inst_find(in, "R[b,tb]") >= 0, "R[b,tb] missing");
        scm_ansatz_inst_free(in);
    }
    /* k1 = 0: group a and ta have size 0 and no scalars */
    in = scm_ansatz_instantiate(a, 6, 5, 0, &e);
    CHECK(in != NULL, "%s", e.msg);
    if (in) {
        for (int c = 0; c < scm_ansatz_inst_nscalars(in); c++)
            CHECK(!strstr(scm_ansatz_inst_scalar_name(in, c), "a,") &&
                      !strstr(scm_ansatz_inst_scalar_name(in, c), ",ta]"),
                  "scalar %s of an empty group", scm_ansatz_inst_scalar_name(in, c));
        CHECK(scm_ansatz_inst_nscalars(in) == 10, "got %d", scm_ansatz_inst_nscalars(in));
        scm_ansatz_inst_free(in);
    }
    int lo, hi;
    CHECK(scm_ansatz_applies(a, 6, 5, &lo, &hi) == 1 && lo == 0 && hi == 0, "applies");
    scm_ansatz_free(a);
}

/* "require" and "require_positive": where an ansatz applies.  k1_extra
 * (built in) at every K > M, k1 at K = M only; an ansatz with both kinds
 * of condition applies where all hold. */
static void test_applies(void)
{
    scm_ansatz *extra = NULL, *k1 = NULL;
    for (int i = 0; i < scm_ansatz_builtin_count(); i++) {
        scm_ansatz *a = parse(scm_ansatz_builtin_text(i, NULL));
        if (a && !strcmp(scm_ansatz_name(a), "k1_extra") && !extra)
            extra = a;
        else if (a && !strcmp(scm_ansatz_name(a), "k1") && !k1)
            k1 = a;
        else
            scm_ansatz_free(a);
    }
    CHECK(extra && k1, "built-in k1_extra and k1 not found");
    if (extra && k1)
        for (int M = 1; M <= 40; M += 13)
            for (int K = M - 2; K <= M + 6; K++) {
                int lo = -1, hi = -1;
                int want = K > M;
                CHECK(scm_ansatz_applies(extra, K, M, &lo, &hi) == want &&
                          (!want || (lo == 0 && hi == M)),
                      "k1_extra at K = %d, M = %d: want %d, k1 in [%d, %d]", K, M, want, lo,
                      hi);
                CHECK(scm_ansatz_applies(k1, K, M, NULL, NULL) == (K == M),
                      "k1 at K = %d, M = %d", K, M);
            }
    scm_ansatz_free(extra);
    scm_ansatz_free(k1);
    scm_ansatz *b = parse("{\"name\": \"both\", \"require\": [\"M - 3\"],"
                          " \"require_positive\": [\"K - M - 1\", \"7 - K\"],"
                          " \"students\": {\"a\": \"K\"}, \"teachers\": {\"t\": \"M\"},"
                          " \"pairs\": {}}");
    if (b)
        for (int K = 1; K <= 9; K++)
            for (int M = 2; M <= 4; M++)
                CHECK(scm_ansatz_applies(b, K, M, NULL, NULL) == (M == 3 && K >= 5 && K <= 6),
                      "both at K = %d, M = %d", K, M);
    scm_ansatz_free(b);
}

/* Merging: ansatz "two" with groups a (size k1) and b (size K - k1) of
 * equal statistics must give the residual of ansatz "one" with one group,
 * also at real sizes (k1 = 2.5): the multiplicity algebra is linear in the
 * sizes in the right way. */
static void test_merge(void)
{
    const char *one = "{\"name\": \"one\", \"students\": {\"s\": \"K\"},"
                      " \"teachers\": {\"t\": \"M - 1\", \"u\": \"1\"}, \"pairs\": {\"s\": \"t\"}}";
    const char *two = "{\"name\": \"two\", \"students\": {\"a\": \"k1\", \"b\": \"K - k1\"},"
                      " \"teachers\": {\"ta\": \"k1\", \"tb\": \"M - 1 - k1\", \"u\": \"1\"},"
                      " \"pairs\": {\"a\": \"ta\", \"b\": \"tb\"}}";
    /* K = M - 1 students paired with M - 1 teachers, one teacher left */
    scm_ansatz *a1 = parse(one), *a2 = parse(two);
    if (!a1 || !a2)
        return;
    double sizes[][2] = {{7.0, 3.0}, {7.5, 2.5}, {40.25, 10.5}};
    for (int s = 0; s < 3; s++) {
        double M = sizes[s][0], K = M - 1.0, k1 = sizes[s][1];
        scm_error e;
        scm_ansatz_inst *i1 = scm_ansatz_instantiate(a1, K, M, 0, &e);
        scm_ansatz_inst *i2 = scm_ansatz_instantiate(a2, K, M, k1, &e);
        CHECK(i1 && i2, "instantiate: %s", e.msg);
        if (!i1 || !i2)
            continue;
        /* one: Q[s,s].diag, .off, R[s,t].diag, .off, R[s,u] */
        double qd = 0.83, qo = 0.017, rd = 0.71, ro = 0.023, ru = 0.061;
        double x1[5] = {qd, qo, rd, ro, ru};
        double x2[32];
        const char *nm[] = {"Q[a,a].diag", "Q[a,a].off", "Q[b,b].diag", "Q[b,b].off", "Q[a,b]",
                            "R[a,ta].diag", "R[a,ta].off", "R[a,tb]", "R[a,u]", "R[b,ta]",
                            "R[b,tb].diag", "R[b,tb].off", "R[b,u]"};
        double vl[] = {qd, qo, qd, qo, qo, rd, ro, ro, ru, ro, rd, ro, ru};
        CHECK(scm_ansatz_inst_nscalars(i2) == 13, "got %d", scm_ansatz_inst_nscalars(i2));
        for (int c = 0; c < 13; c++) {
            int id = scm_ansatz_inst_find(i2, nm[c]);
            CHECK(id >= 0, "missing %s", nm[c]);
            if (id >= 0)
                x2[id] = vl[c];
        }
        scm_blockflow *b1 = scm_blockflow_alloc(i1, &scm_act_relu);
        scm_blockflow *b2 = scm_blockflow_alloc(i2, &scm_act_relu);
        double F1[5], F2[32], e1, e2;
        CHECK(scm_blockflow_residual(b1, x1, F1, &e1) == SCM_OK, "one");
        CHECK(scm_blockflow_residual(b2, x2, F2, &e2) == SCM_OK, "two");
        CHECK_CLOSE(e2, e1, 1e-13, 1e-15, "merged loss");
        for (int c = 0; c < 13; c++) {
            int id = scm_ansatz_inst_find(i2, nm[c]);
            int map[] = {0, 1, 0, 1, 1, 2, 3, 3, 4, 3, 2, 3, 4};
            CHECK_CLOSE(F2[id], F1[map[c]], 1e-12, 1e-14, nm[c]);
        }
        scm_blockflow_free(b1);
        scm_blockflow_free(b2);
        scm_ansatz_inst_free(i1);
        scm_ansatz_inst_free(i2);
    }
    scm_ansatz_free(a1);
    scm_ansatz_free(a2);
}

/* A teacher that breaks the symmetry: the full flow is not invariant and
 * the projection defect says so. */
static void test_not_invariant(void)
{
    scm_ansatz *a = parse(three_groups);
    if (!a)
        return;
    scm_error e;
    int K = 6, M = 5;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, M, 2, &e);
    double T[25] = {0};
    for (int i = 0; i < M; i++)
        T[i * M + i] = 1.0;
    T[0 * M + 1] = T[1 * M + 0] = 0.3; /* couples two teachers of group ta */
    T[0 * M + 0] = 1.4;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, T, NULL, NULL, &e);
    scm_flow *fl = scm_flow_alloc(m);
    scm_blockflow *bf = scm_blockflow_alloc(in, &scm_act_relu);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    double x[64], y[64], Q[36], R[30], FQ[36], FR[30], dev;
    random_point(bf, in, r, x);
    scm_ansatz_to_full(in, x, Q, R);
    CHECK(scm_flow_rhs(fl, Q, R, FQ, FR, NULL) == SCM_OK, "rhs");
    scm_ansatz_project(in, FQ, FR, y, &dev);
    CHECK(dev > 1e-3, "a symmetry-breaking teacher must show a defect, got %g", dev);
    gsl_rng_free(r);
    scm_blockflow_free(bf);
    scm_flow_free(fl);
    scm_model_free(m);
    scm_ansatz_inst_free(in);
    scm_ansatz_free(a);
}

/* Every shipped file parses and equals its built-in copy byte for byte. */
static void test_builtin(void)
{
    int n = scm_ansatz_builtin_count();
    CHECK(n >= 1, "no built-in ansatz");
    for (int i = 0; i < n; i++) {
        const char *file;
        const char *text = scm_ansatz_builtin_text(i, &file);
        char path[256];
        snprintf(path, sizeof path, "../%s", file);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL, "cannot open %s", path);
        if (!f)
            continue;
        static char buf[1 << 16];
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        CHECK(strcmp(buf, text) == 0,
              "%s differs from its built-in copy: run scripts/gen_builtin.sh", file);
        scm_error e;
        scm_ansatz *a = scm_ansatz_load(path, &e);
        CHECK(a != NULL, "%s", a ? "" : e.msg);
        scm_ansatz_free(a);
    }
    scm_error e;
    CHECK(scm_ansatz_load("no/such/file.json", &e) == NULL && e.code == SCM_EIO, "missing file");
}

int main(void)
{
    gsl_set_error_handler_off();
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 2385);
    test_errors();
    test_structure();
    test_applies();
    test_merge();
    test_not_invariant();
    test_builtin();
    scm_ansatz *three = parse(three_groups);
    int nb = scm_ansatz_builtin_count();
    for (int i = 0; i < nb; i++) {
        const char *t = scm_ansatz_builtin_text(i, NULL);
        scm_ansatz *a = parse(t);
        if (!a)
            continue;
        int sizes[][2] = {{3, 3}, {7, 7}, {9, 8}, {10, 8}, {12, 12}, {11, 8}, {9, 5}};
        for (int s = 0; s < 7; s++) {
            int K = sizes[s][0], M = sizes[s][1], lo, hi;
            if (scm_ansatz_applies(a, K, M, &lo, &hi) != 1)
                continue;
            for (int k1 = lo; k1 <= hi; k1++)
                check_instance(a, K, M, k1, &scm_act_relu, r);
            check_instance(a, K, M, lo, &scm_act_erf, r);
        }
        scm_ansatz_free(a);
    }
    if (three) {
        for (int k1 = 0; k1 <= 3; k1++)
            check_instance(three, 7, 6, k1, &scm_act_relu, r);
        check_instance(three, 8, 7, 2, &scm_act_erf, r);
        check_instance(three, 8, 7, 1, &scm_act_linear, r);
        scm_ansatz_free(three);
    }
    gsl_rng_free(r);
    return TEST_SUMMARY();
}
