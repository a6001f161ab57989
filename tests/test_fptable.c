/* test_fptable.c: the families table of `scm fixed-points` as a library
 * call (fptable.h), against computations of another kind:
 *  - every listed point's residual recomputed from its (Q, R) with the
 *    flow (scm_flow_rhs) and its loss with scm_flow_loss;
 *  - with each k1 enumerated alone (sweep_passes 1), the solutions before
 *    merging counted by direct scm_fp_enumerate calls over the built-in
 *    ansätze, and every enumerated loss present among the listed points;
 *  - the JSON object against the table's rows, and the JSON and text byte
 *    for byte against what the command wrote (tests/golden/expected: the
 *    families file of `scm compare`, fp_K4_M3, fp_grow);
 *  - residual_ok flipping when max_residual is made tiny, --all listing
 *    every solution, seeds read back from a result, the block-level
 *    continuation in M, and the errors of bad options and files. */
#include <gsl/gsl_errno.h>
#include <stdlib.h>
#include <string.h>

#include "scm/flow.h"
#include "scm/fptable.h"
#include "scm/hessian.h"
#include "scm/model.h"
#include "scm/output.h"
#include "scm/sweep.h"
#include "scm/weights.h"
#include "testutil.h"

static scm_fp_table *run(const scm_fp_table_opts *o)
{
    scm_fp_table *t = NULL;
    scm_error e;
    scm_status st = scm_fp_table_run(o, &t, &e);
    CHECK(st == SCM_OK && t, "scm_fp_table_run: %s", e.msg);
    return st == SCM_OK ? t : NULL;
}

/* got is the content of the golden file path (written by the command at
 * the same options; with_nl: the file has got and a newline). */
static void check_golden(const char *got, const char *path, int with_nl)
{
    size_t len = 0;
    scm_error e;
    char *want = scm_output_read_file(path, 1 << 26, &len, &e);
    CHECK(want != NULL, "%s", e.msg);
    size_t n = got ? strlen(got) : 0;
    CHECK(got && want && n + (size_t)with_nl == len && memcmp(got, want, n) == 0 &&
              (!with_nl || want[len - 1] == '\n'),
          "differs from %s", path);
    free(want);
}

/* The table's JSON as the command writes it, against a golden file. */
static void check_golden_json(const scm_fp_table *t, const char *path)
{
    cJSON *j = scm_fp_table_json(t);
    char *got = j ? scm_output_print(j, 0) : NULL;
    check_golden(got, path, 1);
    free(got);
    cJSON_Delete(j);
}

static double max_abs2(const double *a, long na, const double *b, long nb)
{
    double m = 0.0;
    for (long i = 0; i < na; i++)
        m = fmax(m, fabs(a[i]));
    for (long i = 0; i < nb; i++)
        m = fmax(m, fabs(b[i]));
    return m;
}

/* Each row's residual and loss recomputed with the flow at its (Q, R). */
static void check_rows_by_flow(const scm_fp_table *t, int K, int M)
{
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &e);
    scm_flow *fl = m ? scm_flow_alloc(m) : NULL;
    double *FQ = malloc(sizeof *FQ * (size_t)(K * K)), *FR = malloc(sizeof *FR * (size_t)(K * M));
    CHECK(fl && FQ && FR, "allocation");
    int n = scm_fp_table_count(t), with_state = 0;
    CHECK(n > 0, "no points at K = %d, M = %d", K, M);
    for (int i = 0; fl && FQ && FR && i < n; i++) {
        scm_fp_table_row r;
        CHECK(scm_fp_table_row_get(t, i, &r) == SCM_OK, "row %d", i);
        if (!r.pt->Q)
            continue;
        with_state++;
        double eps;
        CHECK(scm_flow_rhs(fl, r.pt->Q, r.pt->R, FQ, FR, NULL) == SCM_OK, "rhs row %d", i);
        double res = max_abs2(FQ, (long)K * K, FR, (long)K * M);
        CHECK_CLOSE(res, r.residual, 0.5, 4e-16, "residual by scm_flow_rhs");
        CHECK(res < 1e-12, "row %d: flow residual %g", i, res);
        CHECK(scm_flow_loss(fl, r.pt->Q, r.pt->R, &eps) == SCM_OK, "loss row %d", i);
        CHECK_CLOSE(eps, r.pt->eps, 1e-9, 1e-13, "loss by scm_flow_loss");
        if (i > 0) {
            scm_fp_table_row q;
            scm_fp_table_row_get(t, i - 1, &q);
            CHECK(q.pt->eps <= r.pt->eps, "rows not ordered by loss at %d", i);
        }
    }
    CHECK(with_state == n, "%d of %d rows with a full state at K = %d", with_state, n, K);
    CHECK(scm_fp_table_row_get(t, n, &(scm_fp_table_row){0}) == SCM_EINVAL, "row out of range");
    free(FQ);
    free(FR);
    scm_flow_free(fl);
    scm_model_free(m);
}

/* The enumeration of each k1 alone, done here with scm_fp_enumerate over
 * the built-in ansätze with the command's options: the number of solutions
 * and the set of their losses must be the table's. */
static void check_against_enumerate(int K, int M)
{
    scm_fp_table_opts o;
    scm_fp_table_opts_default(&o);
    o.K = K;
    o.M = M;
    o.sweep_passes = 1;
    o.threads = 2;
    scm_fp_table *t = run(&o);
    if (!t)
        return;
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    fo.deflate = 2;
    fo.polish_defer = 1;
    fo.threads = 2;
    int total = 0, missing = 0;
    for (int i = 0; i < scm_ansatz_builtin_count(); i++) {
        const char *text = scm_ansatz_builtin_text(i, NULL);
        scm_error e;
        scm_ansatz *a = scm_ansatz_parse(text, strlen(text), "builtin", &e);
        int lo, hi;
        if (!a || scm_ansatz_applies(a, K, M, &lo, &hi) != 1) {
            scm_ansatz_free(a);
            continue;
        }
        for (int k1 = lo; k1 <= hi; k1++) {
            scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, M, k1, &e);
            scm_fp_set set;
            scm_fp_set_init(&set);
            CHECK(in && scm_fp_enumerate(a, in, &scm_act_relu, &fo, NULL, 0, &set, &e) == SCM_OK,
                  "enumerate: %s", e.msg);
            total += set.n;
            for (int p = 0; p < set.n; p++) {
                int found = 0;
                for (int r = 0; r < scm_fp_table_count(t) && !found; r++) {
                    scm_fp_table_row row;
                    scm_fp_table_row_get(t, r, &row);
                    found = fabs(row.pt->eps - set.pt[p].eps) <= 1e-9 * fmax(1e-3, row.pt->eps);
                }
                missing += !found;
            }
            scm_fp_set_free(&set);
            scm_ansatz_inst_free(in);
        }
        scm_ansatz_free(a);
    }
    CHECK(total == scm_fp_table_n_solutions(t), "K = %d, M = %d: %d solutions by "
          "scm_fp_enumerate, %d in the table", K, M, total, scm_fp_table_n_solutions(t));
    CHECK(missing == 0, "%d enumerated losses not listed", missing);
    CHECK(scm_fp_table_count(t) < total, "nothing merged at K = %d, M = %d", K, M);
    scm_fp_table_free(t);
}

/* The JSON object against the rows; the "searches" against the count. */
static void check_json(const scm_fp_table *t)
{
    cJSON *j = scm_fp_table_json(t);
    CHECK(j != NULL, "json");
    if (!j)
        return;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "fixed_points");
    const cJSON *srch = cJSON_GetObjectItemCaseSensitive(j, "searches");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(j, "status");
    int n = scm_fp_table_count(t);
    CHECK(cJSON_GetArraySize(arr) == n, "%d JSON points, %d rows", cJSON_GetArraySize(arr), n);
    /* the work completed: "ok" also with points above the residual bound,
     * which are counted and flagged in their entries */
    CHECK(cJSON_IsString(status) && strcmp(status->valuestring, "ok") == 0, "status");
    CHECK(cJSON_GetObjectItemCaseSensitive(j, "points_above_residual")->valueint ==
              scm_fp_table_n_above(t),
          "points_above_residual");
    int distinct = 0, merged = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, srch) distinct += cJSON_GetObjectItemCaseSensitive(x, "distinct")->valueint;
    for (int i = 0; i < n && i < cJSON_GetArraySize(arr); i++) {
        scm_fp_table_row r;
        scm_fp_table_row_get(t, i, &r);
        const cJSON *p = cJSON_GetArrayItem(arr, i);
        const cJSON *an = cJSON_GetObjectItemCaseSensitive(p, "ansatz");
        CHECK(cJSON_IsString(an) && strcmp(an->valuestring, r.ansatz) == 0, "ansatz of %d", i);
        const cJSON *k1 = cJSON_GetObjectItemCaseSensitive(p, "k1");
        CHECK(r.k1 >= 0 ? cJSON_IsNumber(k1) && k1->valuedouble == r.k1 : cJSON_IsNull(k1),
              "k1 of %d", i);
        /* k1 is the family: the anti-aligned count of the structure */
        CHECK(r.k1 < 0 || r.k1 == r.st.n_anti, "k1 %d of %d is not its anti count %g", r.k1, i,
              r.st.n_anti);
        CHECK(cJSON_GetObjectItemCaseSensitive(p, "instance")->valuedouble == r.instance,
              "instance of %d", i);
        CHECK(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(p, "residual_ok")) &&
                  cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "residual_ok")) ==
                      (r.residual < cJSON_GetObjectItemCaseSensitive(j, "max_residual")->valuedouble),
              "residual_ok of %d", i);
        CHECK(cJSON_GetObjectItemCaseSensitive(p, "loss")->valuedouble == r.pt->eps, "loss %d", i);
        const cJSON *af = cJSON_GetObjectItemCaseSensitive(p, "also_found_in_other_ansatze");
        CHECK(af->valueint == r.also_found, "also_found of %d", i);
        merged += af->valueint;
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(p, "scalars");
        CHECK(cJSON_GetArraySize(sc) == r.pt->nsc, "scalars of %d", i);
    }
    CHECK(distinct == scm_fp_table_n_solutions(t), "searches: %d distinct, %d solutions",
          distinct, scm_fp_table_n_solutions(t));
    CHECK(n + merged == scm_fp_table_n_solutions(t), "%d listed + %d merged != %d", n, merged,
          scm_fp_table_n_solutions(t));
    cJSON_Delete(j);
}

/* The table's text ends with the counts the rows give. */
static void check_text(const scm_fp_table *t)
{
    char *text = scm_fp_table_text(t), want[128];
    snprintf(want, sizeof want, "%d distinct fixed points (%d solutions before merging)\n",
             scm_fp_table_count(t), scm_fp_table_n_solutions(t));
    CHECK(text && strstr(text, want) != NULL, "text lacks '%s'", want);
    CHECK(text && strncmp(text, "scm fixed-points: K = ", 22) == 0, "text head");
    free(text);
}

static void test_small(int K, int M)
{
    scm_fp_table_opts o;
    scm_fp_table_opts_default(&o);
    o.K = K;
    o.M = M;
    o.threads = 2;
    scm_fp_table *t = run(&o);
    if (!t)
        return;
    scm_error e;
    CHECK(scm_fp_table_status(t, &e) == SCM_OK, "deferred failure");
    CHECK(scm_fp_table_residual_ok(t) && scm_fp_table_n_above(t) == 0, "residuals at %d, %d",
          K, M);
    CHECK(scm_fp_table_json_fits(t, "x.json", &e) == SCM_OK, "fits: %s", e.msg);
    check_rows_by_flow(t, K, M);
    check_json(t);
    check_text(t);
    if (K == 4 && M == 3) { /* `scm fixed-points --K 4 --M 3 -o fp_K4_M3.json` */
        char *text = scm_fp_table_text(t);
        check_golden(text, "golden/expected/fp_K4_M3.out", 0);
        free(text);
        check_golden_json(t, "golden/expected/fp_K4_M3.json");
    }
    /* the same run with a tiny max_residual: every point is above it */
    o.max_residual = 1e-300;
    scm_fp_table *u = run(&o);
    if (u) {
        int above = 0;
        for (int i = 0; i < scm_fp_table_count(u); i++) {
            scm_fp_table_row r;
            scm_fp_table_row_get(u, i, &r);
            above += !(r.residual < 1e-300);
        }
        CHECK(!scm_fp_table_residual_ok(u), "residual_ok with max_residual 1e-300");
        CHECK(scm_fp_table_n_above(u) == above && above > 0, "n_above %d, counted %d",
              scm_fp_table_n_above(u), above);
        CHECK(scm_fp_table_count(u) == scm_fp_table_count(t), "count changed");
        check_json(u);
    }
    scm_fp_table_free(u);
    /* --all: every solution listed */
    o.max_residual = 1e-12;
    o.all = 1;
    scm_fp_table *a = run(&o);
    if (a)
        CHECK(scm_fp_table_count(a) == scm_fp_table_n_solutions(t) &&
                  scm_fp_table_n_solutions(a) == scm_fp_table_n_solutions(t),
              "--all: %d rows, %d solutions without", scm_fp_table_count(a),
              scm_fp_table_n_solutions(t));
    scm_fp_table_free(a);
    scm_fp_table_free(t);
}

/* What `scm compare --M 4 --K 4` had the command write (golden file). */
static void test_compare_bytes(void)
{
    scm_fp_table_opts o;
    scm_fp_table_opts_default(&o);
    o.K = 4;
    o.M = 4;
    o.act = scm_activation_find("relu");
    o.polish_max_K = 0;
    o.max_residual = 1e-9;
    o.threads = 1;
    scm_fp_table *t = run(&o);
    if (t)
        check_golden_json(t, "golden/expected/cmp.K4.families.json");
    scm_fp_table_free(t);
}

/* A result read back as seeds: one seed per listed point. */
static void test_seeds(void)
{
    scm_fp_table_opts o;
    scm_fp_table_opts_default(&o);
    o.K = 4;
    o.M = 3;
    o.threads = 2;
    scm_fp_table *t = run(&o);
    cJSON *j = t ? scm_fp_table_json(t) : NULL;
    char path[] = "/tmp/test_fptable_XXXXXX";
    int fd = mkstemp(path);
    scm_error e;
    CHECK(fd >= 0 && j && scm_output_write_json(path, j, 0, &e) == SCM_OK, "write seeds");
    scm_fp_table_seeds *s = scm_fp_table_seeds_alloc();
    CHECK(s && scm_fp_table_seeds_read(s, path, &e) == SCM_OK, "seeds_read: %s", e.msg);
    CHECK(scm_fp_table_seeds_count(s) == scm_fp_table_count(t), "%d seeds, %d points",
          scm_fp_table_seeds_count(s), scm_fp_table_count(t));
    /* seeded from M = 3 at (5, 4): at least the points of the run without */
    scm_fp_table_opts_default(&o);
    o.K = 5;
    o.M = 4;
    o.threads = 2;
    scm_fp_table *plain = run(&o);
    o.seeds = s;
    scm_fp_table *seeded = run(&o);
    if (plain && seeded)
        CHECK(scm_fp_table_n_solutions(seeded) >= scm_fp_table_n_solutions(plain),
              "seeds lost solutions: %d < %d", scm_fp_table_n_solutions(seeded),
              scm_fp_table_n_solutions(plain));
    /* errors: not a result, no such file */
    CHECK(scm_fp_table_seeds_read(s, "/nonexistent/x.json", &e) == SCM_EIO, "missing file");
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("{\"fixed_points\": [{\"ansatz\": \"k1\", \"k1\": 0.5, \"scalars\": {}}]}", f);
        fclose(f);
    }
    CHECK(scm_fp_table_seeds_read(s, path, &e) == SCM_EINVAL && strstr(e.msg, "'k1'"),
          "bad k1: %s", e.msg);
    remove(path);
    scm_fp_table_free(plain);
    scm_fp_table_free(seeded);
    scm_fp_table_seeds_free(s);
    cJSON_Delete(j);
    scm_fp_table_free(t);
}

/* The block-level continuation in M: rows are the JSON's points, block
 * residuals small, no full state. */
static void test_grow(void)
{
    scm_fp_table_opts o;
    scm_fp_table_opts_default(&o);
    o.K = 12;
    o.M = 12;
    o.grow_from = 6;
    o.threads = 2;
    scm_fp_table *t = run(&o);
    if (!t)
        return;
    cJSON *j = scm_fp_table_json(t);
    const cJSON *arr = j ? cJSON_GetObjectItemCaseSensitive(j, "fixed_points") : NULL;
    int n = scm_fp_table_count(t), bad = 0;
    CHECK(n > 0 && cJSON_GetArraySize(arr) == n, "%d rows, %d JSON points", n,
          cJSON_GetArraySize(arr));
    for (int i = 0; i < n; i++) {
        scm_fp_table_row r;
        scm_fp_table_row_get(t, i, &r);
        const cJSON *p = cJSON_GetArrayItem(arr, i);
        bad += r.pt->Q != NULL || !(r.residual < 1e-10) ||
               cJSON_GetObjectItemCaseSensitive(p, "loss")->valuedouble != r.pt->eps ||
               cJSON_GetObjectItemCaseSensitive(p, "instance")->valueint != r.instance;
    }
    CHECK(bad == 0, "%d grow rows disagree", bad);
    CHECK(scm_fp_table_residual_ok(t), "grow residual_ok");
    char *text = scm_fp_table_text(t), want[64];
    snprintf(want, sizeof want, "%d fixed points at K = 12, M = 12, block level", n);
    CHECK(text && strstr(text, want), "grow text lacks '%s'", want);
    /* `scm fixed-points --K 12 --M 12 --grow-from 6 -o fp_grow.json` */
    check_golden(text, "golden/expected/fp_grow.out", 0);
    check_golden_json(t, "golden/expected/fp_grow.json");
    free(text);
    cJSON_Delete(j);
    scm_fp_table_free(t);
}

static void expect_einval(const scm_fp_table_opts *o, const char *what)
{
    scm_fp_table *t = (scm_fp_table *)1;
    scm_error e;
    CHECK(scm_fp_table_run(o, &t, &e) == SCM_EINVAL && t == NULL, "%s: not SCM_EINVAL", what);
}

static void test_errors(void)
{
    scm_fp_table_opts o;
    scm_fp_table_opts_default(&o);
    expect_einval(&o, "no K, M");
    o.K = 4;
    o.M = 4;
    o.chain_from = 4;
    expect_einval(&o, "chain_from >= M");
    o.chain_from = 2;
    o.k1 = 1;
    expect_einval(&o, "chain_from with k1");
    scm_fp_table_opts_default(&o);
    o.K = 4;
    o.M = 4;
    o.grow_from = 2;
    o.stability = 1;
    expect_einval(&o, "grow_from with stability");
    o.grow_from = 0;
    o.stability = 0;
    o.probes = 3;
    expect_einval(&o, "probes without grow_from");
    o.probes = -1;
    o.continue_to = 4;
    expect_einval(&o, "continue_to <= M");
    o.continue_to = -1;
    const char *files[] = {"/nonexistent/ansatz.json"};
    o.ansatz_files = files;
    o.n_ansatz = 1;
    expect_einval(&o, "missing ansatz file");
    const char *k1file[] = {"../ansatz/k1_extra.json"};
    o.ansatz_files = k1file;
    expect_einval(&o, "a named ansatz that does not apply");
    scm_error e;
    CHECK(scm_fp_table_opts_check(&o, &e) == SCM_OK, "opts_check: %s", e.msg);
}

/* ---- issue 25: the families table, one meaning of k1, states ---- */

/* The dense closed-form Hessian of the point (Q, R) realised at d = K + M
 * (hessian.h): its negative count and smallest non-zero eigenvalue, the reference
 * of the symmetric spectrum.  0 when it cannot be evaluated (parallel or
 * dead ReLU neurons). */
static int dense_hessian(int K, int M, const double *Q, const double *R, int *n_neg,
                         double *hmin)
{
    scm_error e;
    long d = K + M;
    scm_model *m = scm_model_alloc(K, M, scm_activation_find("relu"), NULL, NULL, NULL, &e);
    scm_flow *fl = m ? scm_flow_alloc(m) : NULL;
    size_t n = (size_t)K * (size_t)d;
    double *W = malloc(sizeof(double) * n), *Ws = malloc(sizeof(double) * (size_t)M * d);
    double *H = malloc(sizeof(double) * n * n), *ev = malloc(sizeof(double) * n);
    int ok = fl && W && Ws && H && ev && scm_weights_realise(m, Q, R, d, W, Ws, &e) == SCM_OK &&
             scm_stab_hessian(fl, d, W, Ws, H, &e) == SCM_OK;
    scm_stab_counts c;
    if (ok && scm_stab_spectrum(H, (int)n, 1e-9, ev, &c) == SCM_OK) {
        *n_neg = c.n_neg;
        *hmin = NAN;
        for (size_t i = 0; i < n && isnan(*hmin); i++)
            if (fabs(ev[i]) > c.zero_tol)
                *hmin = ev[i];
    } else {
        ok = 0;
    }
    free(W);
    free(Ws);
    free(H);
    free(ev);
    scm_flow_free(fl);
    scm_model_free(m);
    return ok;
}

/* Each classified row's class and smallest Hessian eigenvalue against the
 * dense Hessian; each family's entry against the rows: the lowest-loss
 * minimum among its specialised rows, the counts. */
static void check_families(const scm_fp_table *t, int K, int M)
{
    int compared = 0;
    for (int i = 0; i < scm_fp_table_count(t); i++) {
        scm_fp_table_row r;
        scm_fp_table_row_get(t, i, &r);
        double hmin;
        scm_fp_class c = scm_fp_table_row_class(t, i, &hmin);
        int spec = r.k1 >= 0 && r.st.n_other == K - M;
        CHECK(!spec || c != SCM_FP_CLASS_NONE, "row %d: specialised but not classified", i);
        int nneg;
        double dmin;
        if (c == SCM_FP_CLASS_NONE || c == SCM_FP_CLASS_REFUSED || !r.pt->Q ||
            !dense_hessian(K, M, r.pt->Q, r.pt->R, &nneg, &dmin))
            continue;
        compared++;
        CHECK((c == SCM_FP_CLASS_MINIMUM) == (nneg == 0), "row %d: class %s, dense %d negative",
              i, scm_fp_class_str(c), nneg);
        CHECK(fabs(hmin - dmin) <= 1e-7 * fmax(1.0, fabs(dmin)), "row %d: hmin %.12g, dense %.12g",
              i, hmin, dmin);
    }
    CHECK(compared >= 3, "only %d rows compared with the dense Hessian", compared);
    int nf = scm_fp_table_family_count(t), listed = 0;
    CHECK(nf > 0, "no family");
    for (int f = 0; f < nf; f++) {
        scm_fp_table_family F;
        CHECK(scm_fp_table_family_get(t, f, &F) == SCM_OK, "family %d", f);
        int nmin = 0, nsad = 0, npts = 0, best = -1;
        for (int i = 0; i < scm_fp_table_count(t); i++) {
            scm_fp_table_row r;
            scm_fp_table_row_get(t, i, &r);
            if (r.k1 != F.k1 || r.st.n_other != K - M || !(r.residual < 1e-12))
                continue;
            double h;
            scm_fp_class c = scm_fp_table_row_class(t, i, &h);
            npts++;
            nmin += c == SCM_FP_CLASS_MINIMUM;
            nsad += c == SCM_FP_CLASS_SADDLE;
            if (c == SCM_FP_CLASS_MINIMUM && best < 0)
                best = i;
        }
        if (K == M) /* one pattern per k1 */
            CHECK(npts == F.n_points && nmin == F.n_minima && nsad == F.n_saddles &&
                      best == F.best_row,
                  "family k1 = %d: %d/%d points, %d/%d minima, %d/%d saddles, best %d/%d", F.k1,
                  npts, F.n_points, nmin, F.n_minima, nsad, F.n_saddles, best, F.best_row);
        listed += F.n_points;
        if (F.best_row >= 0) {
            scm_fp_table_row r;
            scm_fp_table_row_get(t, F.best_row, &r);
            CHECK(r.pt->eps == F.loss && r.k1 == F.k1, "family %d: its point", F.k1);
        } else {
            CHECK(F.n_minima == 0 && isnan(F.loss), "family %d without a minimum", F.k1);
        }
    }
    CHECK(listed > 0, "families hold no point");
}

/* --k1 N lists family N: every row has N anti-aligned students, and every
 * point of family N of the full enumeration is among them (by loss). */
static void test_family_filter(void)
{
    scm_fp_table_opts o;
    scm_fp_table_opts_default(&o);
    o.K = 6;
    o.M = 6;
    o.threads = 2;
    scm_fp_table *all = run(&o);
    o.k1 = 1;
    scm_fp_table *one = run(&o);
    if (!all || !one) {
        scm_fp_table_free(all);
        scm_fp_table_free(one);
        return;
    }
    int n1 = scm_fp_table_count(one), missing = 0, fam1 = 0;
    CHECK(n1 > 0, "--k1 1: no point");
    for (int i = 0; i < n1; i++) {
        scm_fp_table_row r;
        scm_fp_table_row_get(one, i, &r);
        CHECK(r.k1 == 1 && r.st.n_anti == 1.0, "--k1 1: row %d has k1 %d, anti %g", i, r.k1,
              r.st.n_anti);
    }
    for (int i = 0; i < scm_fp_table_count(all); i++) {
        scm_fp_table_row r;
        scm_fp_table_row_get(all, i, &r);
        if (r.k1 != 1 || r.st.n_other != 0)
            continue;
        fam1++;
        int found = 0;
        for (int u = 0; u < n1 && !found; u++) {
            scm_fp_table_row q;
            scm_fp_table_row_get(one, u, &q);
            found = fabs(q.pt->eps - r.pt->eps) <= 1e-9 * fmax(1e-3, r.pt->eps);
        }
        missing += !found;
    }
    CHECK(fam1 > 0 && missing == 0, "--k1 1 misses %d of the %d family-1 points", missing, fam1);
    CHECK(scm_fp_table_family_count(one) == 1, "--k1 1: %d families",
          scm_fp_table_family_count(one));
    check_families(one, 6, 6);
    scm_fp_table_free(all);
    scm_fp_table_free(one);
}

static void count_progress(void *ctx, int done, int total)
{
    int *c = ctx;
    c[0]++;
    c[1] = done;
    c[2] = total;
}

/* The families at K = M = 4 and K = 4, M = 3 against the dense Hessian; a
 * point above the residual bound is out of the families; the loss is never
 * negative; --states; the progress of --stability. */
/* The families table is under "families" (issue 25 item 2), and `scm
 * sweep --families` (scm_sweep_families_parse) still reads every listed
 * point of such a file, not the table's minima; a file of the old layout
 * ("family_table") and a plain "families" list still load. */
static void check_families_key(const scm_fp_table *t)
{
    cJSON *j = scm_fp_table_json(t);
    char *text = j ? scm_output_print(j, 0) : NULL;
    const cJSON *fam = cJSON_GetObjectItemCaseSensitive(j, "families");
    int nf = scm_fp_table_family_count(t), np = scm_fp_table_count(t);
    CHECK(cJSON_IsArray(fam) && cJSON_GetArraySize(fam) == nf &&
              !cJSON_GetObjectItemCaseSensitive(j, "family_table"),
          "JSON: \"families\" is not the families table (%d families)", nf);
    scm_sweep_families sf;
    scm_error e;
    scm_status st = text ? scm_sweep_families_parse(text, "fp.json", &sf, &e) : SCM_ENOMEM;
    CHECK(st == SCM_OK && sf.n == np && np > nf, "sweep reads %d entries of a result with %d "
          "points and %d families", st == SCM_OK ? sf.n : -1, np, nf);
    if (st == SCM_OK)
        scm_sweep_families_free(&sf);
    /* the layout before the rename: the same points */
    if (j && fam) {
        cJSON *old = cJSON_Duplicate(j, 1);
        cJSON_AddItemToObject(old, "family_table",
                              cJSON_DetachItemFromObjectCaseSensitive(old, "families"));
        char *otext = scm_output_print(old, 0);
        st = otext ? scm_sweep_families_parse(otext, "old.json", &sf, &e) : SCM_ENOMEM;
        CHECK(st == SCM_OK && sf.n == np, "old layout: %d entries", st == SCM_OK ? sf.n : -1);
        if (st == SCM_OK)
            scm_sweep_families_free(&sf);
        free(otext);
        cJSON_Delete(old);
    }
    st = scm_sweep_families_parse("{\"families\": [{\"k1\": 1, \"loss\": 0.5}, "
                                  "{\"k1\": 0, \"loss\": 0}]}", "list.json", &sf, &e);
    CHECK(st == SCM_OK && sf.n == 2 && sf.f[0].k1 == 1 && sf.f[0].eps == 0.5,
          "a plain families list: %s", st == SCM_OK ? "wrong entries" : e.msg);
    if (st == SCM_OK)
        scm_sweep_families_free(&sf);
    free(text);
    cJSON_Delete(j);
}

static void test_families(void)
{
    scm_fp_table_opts o;
    scm_fp_table_opts_default(&o);
    o.K = 4;
    o.M = 4;
    o.threads = 2;
    int prog[3] = {0, -1, -1};
    o.stability = 1;
    o.progress = count_progress;
    o.progress_ctx = prog;
    scm_fp_table *t = run(&o);
    if (!t)
        return;
    check_families(t, 4, 4);
    check_families_key(t);
    CHECK(prog[0] == scm_fp_table_count(t) + 1 && prog[1] == prog[2] &&
              prog[2] == scm_fp_table_count(t),
          "progress: %d calls, last %d/%d, %d rows", prog[0], prog[1], prog[2],
          scm_fp_table_count(t));
    /* the global minimum k1 = 0 is the only minimum at K = M = 4 (relu),
     * a family without a minimum is listed with loss NaN */
    scm_fp_table_family F;
    scm_fp_table_family_get(t, 0, &F);
    CHECK(F.k1 == 0 && F.loss == 0.0 && F.n_minima == 1, "k1 = 0: loss %g, %d minima", F.loss,
          F.n_minima);
    scm_fp_table_family_get(t, 1, &F);
    CHECK(F.k1 == 1 && F.n_minima == 0 && isnan(F.loss) && F.n_saddles > 0,
          "k1 = 1 at K = M = 4 is not a family of saddles only");
    for (int i = 0; i < scm_fp_table_count(t); i++) {
        scm_fp_table_row r;
        scm_fp_table_row_get(t, i, &r);
        CHECK(r.pt->eps >= 0.0 && !(r.pt->eps_polish < 0.0), "row %d: loss %g", i, r.pt->eps);
    }
    /* --states minima: Q and R only of the minima, in the list and the
     * family table; none: of no point */
    for (int states = SCM_FP_STATES_NONE; states <= SCM_FP_STATES_MINIMA; states++) {
        scm_fp_table_opts_default(&o);
        o.K = 4;
        o.M = 4;
        o.threads = 2;
        o.states = states;
        scm_fp_table *u = run(&o);
        cJSON *j = u ? scm_fp_table_json(u) : NULL;
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "fixed_points"), *p;
        int with = 0, bad = 0;
        cJSON_ArrayForEach(p, arr)
        {
            int has = cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(p, "Q"));
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "class");
            with += has;
            bad += has != (states == SCM_FP_STATES_MINIMA && strcmp(c->valuestring, "minimum") == 0);
        }
        CHECK(u && bad == 0 && with == (states == SCM_FP_STATES_MINIMA ? 1 : 0),
              "--states %d: %d with Q, %d wrong", states, with, bad);
        cJSON_Delete(j);
        scm_fp_table_free(u);
    }
    scm_fp_table_free(t);
    /* every point above the bound: the run completes, no family */
    scm_fp_table_opts_default(&o);
    o.K = 4;
    o.M = 3;
    o.threads = 2;
    o.max_residual = 1e-300;
    scm_fp_table *a = run(&o);
    if (a)
        CHECK(scm_fp_table_family_count(a) == 0 && scm_fp_table_n_above(a) == scm_fp_table_count(a),
              "points above the bound in the families: %d families",
              scm_fp_table_family_count(a));
    scm_fp_table_free(a);
    o.max_residual = 1e-12;
    a = run(&o);
    if (a) {
        check_families(a, 4, 3);
        scm_fp_table_family F0;
        scm_fp_table_family_get(a, 0, &F0);
        CHECK(strcmp(F0.pattern, "1 aligned") == 0, "K = 4, M = 3: pattern '%s'", F0.pattern);
    }
    scm_fp_table_free(a);
}

int main(void)
{
    gsl_set_error_handler_off();
    test_errors();
    test_small(4, 4);
    test_small(4, 3);
    check_against_enumerate(4, 4);
    test_compare_bytes();
    test_seeds();
    test_grow();
    test_family_filter();
    test_families();
    return TEST_SUMMARY();
}
