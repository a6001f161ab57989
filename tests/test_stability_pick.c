/* test_stability_pick.c: the points `scm stability`, `scm split` and
 * `scm staircase` start from, against computations of another kind:
 *  - scm_fplist_find: every listed point is a fixed point of the flow
 *    (scm_flow_rhs at its Q, R below 1e-10), its loss is scm_flow_loss's,
 *    the list is sorted and has no two points alike, and it does not
 *    depend on the number of threads;
 *  - scm_family_pick_run: the default point is scm_family_default's on a
 *    family found directly with scm_family_find, --index and --loss pick
 *    the same point as the family's own list and scm_family_by_loss, and
 *    the failures list every point of the family;
 *  - scm_stabpoint_load: Q and R of a golden `scm fixed-points` result read
 *    here with cJSON, and every input error;
 *  - scm_stabpoint_json: its numbers are those of the analysis result. */
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scm/fplist.h"
#include "scm/stabpoint.h"
#include "testutil.h"

static void test_fplist(void)
{
    scm_fplist_point *a = NULL, *b = NULL;
    int na = 0, nb = 0;
    scm_error err;
    CHECK(scm_fplist_find(3, 3, &scm_act_relu, 30, 1, &a, &na, &err) == SCM_OK && na > 1,
          "fplist K = M = 3: %d points", na);
    CHECK(scm_fplist_find(3, 3, &scm_act_relu, 30, 3, &b, &nb, &err) == SCM_OK && nb == na,
          "fplist on 3 threads: %d points, want %d", nb, na);
    scm_model *m = scm_model_alloc(3, 3, &scm_act_relu, NULL, NULL, NULL, NULL);
    scm_flow *fl = scm_flow_alloc(m);
    for (int i = 0; i < na; i++) {
        double eps, F[9 + 9], res = 0.0;
        CHECK(scm_flow_loss(fl, a[i].Q, a[i].R, &eps) == SCM_OK, "loss of point %d", i);
        CHECK_CLOSE(a[i].eps, eps, 1e-9, 1e-14, "fplist loss");
        CHECK(scm_flow_rhs(fl, a[i].Q, a[i].R, F, F + 9, NULL) == SCM_OK, "rhs of point %d", i);
        for (int j = 0; j < 18; j++)
            res = fmax(res, fabs(F[j]));
        CHECK(res < 1e-10, "point %d (%s): residual %g", i, a[i].ansatz, res);
        CHECK(i == 0 || a[i - 1].eps <= a[i].eps, "sorted at %d", i);
        for (int j = 0; j < i; j++)
            CHECK(!(fabs(a[j].eps - a[i].eps) < 1e-10 && fabs(a[j].trQ - a[i].trQ) < 1e-6),
                  "points %d and %d alike", j, i);
        if (i < nb)
            CHECK(a[i].eps == b[i].eps && strcmp(a[i].ansatz, b[i].ansatz) == 0,
                  "point %d differs on 3 threads", i);
    }
    scm_flow_free(fl);
    scm_model_free(m);
    scm_fplist_free(a, na);
    scm_fplist_free(b, nb);
}

static void builtin(scm_ansatz **a, int *n)
{
    *n = 0;
    for (int i = 0; i < scm_ansatz_builtin_count() && *n < 16; i++) {
        const char *t = scm_ansatz_builtin_text(i, NULL);
        a[(*n)++] = scm_ansatz_parse(t, strlen(t), "builtin", NULL);
    }
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; s && *s; s++)
        n += *s == c;
    return n;
}

/* The default point of the family (K, M, k1): scm_family_default's on the
 * family found directly. */
static void check_default(scm_ansatz **ans, int na, int K, int M, int k1)
{
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    fo.n_random = 100;
    fo.threads = 1;
    scm_family fam;
    scm_error err;
    int want = -1;
    CHECK(scm_family_find(K, M, k1, ans, na, &scm_act_relu, &fo, &fam, &err) == SCM_OK &&
              scm_family_default(&fam, &scm_act_relu, &want, &err) == SCM_OK,
          "family K = %d, M = %d, k1 = %d: %s", K, M, k1, err.msg);
    scm_family_pick_opts o;
    scm_family_pick_opts_default(&o);
    o.K = K;
    o.M = M;
    o.k1 = k1;
    o.threads = 2;
    scm_family_pick p;
    scm_status st = scm_family_pick_run(&o, &p, &err);
    CHECK(p.fam.n == fam.n, "K = %d, M = %d, k1 = %d: %d points, want %d", K, M, k1, p.fam.n,
          fam.n);
    if (want < 0) {
        /* none qualifies: the message lists every point */
        CHECK(st == SCM_ENOCONV && p.index == -1 && p.why && count_char(p.why, '\n') == fam.n &&
                  strstr(p.why, "[0] loss"),
              "no candidate: %s", p.why ? p.why : err.msg);
    } else {
        CHECK(st == SCM_OK && p.index == want && !p.why &&
                  p.fam.pt[want].eps == fam.pt[want].eps &&
                  memcmp(p.fam.pt[want].Q, fam.pt[want].Q, sizeof(double) * K * K) == 0 &&
                  p.fam.pt[want].cls == SCM_FAM_MIN_CANDIDATE,
              "default: index %d, want %d (%s)", p.index, want, err.msg);
        char desc[512];
        scm_family_pick_describe(&p, desc, sizeof desc);
        CHECK(strstr(desc, "lowest-loss minimum candidate") && strstr(desc, "min_candidate"),
              "%s", desc);
        cJSON *j = scm_family_pick_json(&p);
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "points")) == fam.n &&
                  cJSON_GetObjectItem(j, "index")->valueint == want,
              "family JSON");
        cJSON_Delete(j);
    }
    scm_family_pick_free(&p);
    scm_family_free(&fam);
}

static void test_family_pick(void)
{
    scm_ansatz *ans[16];
    int na;
    builtin(ans, &na);
    check_default(ans, na, 4, 4, 1);
    check_default(ans, na, 6, 6, 1);

    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    fo.n_random = 100;
    fo.threads = 1;
    scm_family fam;
    scm_error err;
    CHECK(scm_family_find(4, 4, 1, ans, na, &scm_act_relu, &fo, &fam, &err) == SCM_OK &&
              fam.n > 2,
          "family K = M = 4, k1 = 1: %d points", fam.n);
    scm_family_pick_opts o;
    scm_family_pick_opts_default(&o);
    o.K = o.M = 4;
    o.k1 = 1;
    o.index = 2;
    scm_family_pick p;
    CHECK(scm_family_pick_run(&o, &p, &err) == SCM_OK && p.index == 2 &&
              p.fam.pt[2].eps == fam.pt[2].eps && strcmp(p.how, "--index") == 0,
          "--index 2: %s", err.msg);
    CHECK(p.fam.pt[2].cls != SCM_FAM_BLOCK_STABLE, "the chosen point checked in full");
    scm_family_pick_free(&p);
    o.index = fam.n;
    CHECK(scm_family_pick_run(&o, &p, &err) == SCM_EINVAL && p.index == -1 &&
              strstr(err.msg, "--index"),
          "--index past the end: %s", err.msg);
    scm_family_pick_free(&p);
    o.index = -1;
    o.loss = fam.pt[1].eps * (1 + 3e-7);
    CHECK(scm_family_pick_run(&o, &p, &err) == SCM_OK &&
              p.index == scm_family_by_loss(&fam, o.loss, 1e-6) && p.index == 1,
          "--loss: %d", p.index);
    scm_family_pick_free(&p);
    o.loss = 0.5;
    CHECK(scm_family_pick_run(&o, &p, &err) == SCM_EINVAL && p.why &&
              count_char(p.why, ' ') >= fam.n + 10 && strstr(p.why, "its losses:"),
          "--loss 0.5: %s", p.why ? p.why : err.msg);
    scm_family_pick_free(&p);
    o.loss = NAN;
    o.k1 = 9;
    CHECK(scm_family_pick_run(&o, &p, &err) == SCM_EINVAL, "k1 > K");
    scm_family_pick_free(&p);
    o.k1 = 2;
    CHECK(scm_family_pick_run(&o, &p, &err) == SCM_ENOCONV && p.fam.n == 0 &&
              strstr(err.msg, "no specialised fixed point"),
          "an empty family: %s", err.msg);
    scm_family_pick_free(&p);
    o.k1 = 1;
    o.ansatz_file = "/nonexistent/a.json";
    CHECK(scm_family_pick_run(&o, &p, &err) == SCM_EIO, "a missing ansatz file: %s", err.msg);
    scm_family_pick_free(&p);

    scm_family_free(&fam);
    for (int i = 0; i < na; i++)
        scm_ansatz_free(ans[i]);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_load(void)
{
    const char *gold = "golden/expected/fp_K4_M3.json";
    scm_stabpoint sp;
    scm_error err;
    CHECK(scm_stabpoint_load(gold, 1, &sp, &err) == SCM_OK, "%s", err.msg);
    FILE *f = fopen(gold, "rb");
    static char buf[1 << 22];
    size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[len] = '\0';
    cJSON *root = cJSON_Parse(buf);
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "fixed_points"), 1);
    const cJSON *Q = cJSON_GetObjectItem(p, "Q"), *R = cJSON_GetObjectItem(p, "R");
    CHECK(sp.K == 4 && sp.M == 3 && strcmp(sp.activation, "relu") == 0, "K, M, activation");
    for (int a = 0; a < 4 && sp.Q && Q; a++) {
        for (int b = 0; b < 4; b++)
            CHECK(sp.Q[a * 4 + b] == cJSON_GetArrayItem(cJSON_GetArrayItem(Q, a), b)->valuedouble,
                  "Q[%d][%d]", a, b);
        for (int b = 0; b < 3; b++)
            CHECK(sp.R[a * 3 + b] == cJSON_GetArrayItem(cJSON_GetArrayItem(R, a), b)->valuedouble,
                  "R[%d][%d]", a, b);
    }
    CHECK(strstr(sp.desc, "[1] ansatz k1_extra, loss 0.0228580541224"), "%s", sp.desc);
    cJSON_Delete(root);
    scm_stabpoint_free(&sp);

    CHECK(scm_stabpoint_load(gold, 38, &sp, &err) == SCM_EINVAL && strstr(err.msg, "38 fixed"),
          "index out of range: %s", err.msg);
    scm_stabpoint_free(&sp);
    CHECK(scm_stabpoint_load("/nonexistent/fp.json", 0, &sp, &err) == SCM_EIO, "no file");
    scm_stabpoint_free(&sp);
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_stabpick_%ld.json", (long)getpid());
    const char *bad[] = {"{not json", "{\"K\": 2, \"M\": 2}",
                         "{\"K\": 2, \"M\": 1, \"fixed_points\": [{\"Q\": null}]}",
                         "{\"K\": 2, \"M\": 1, \"fixed_points\": [{\"Q\": [[1,0],[0,1]], "
                         "\"R\": [[1,0]]}]}"};
    const char *what[] = {"not valid JSON", "not a `scm fixed-points` result", "Q is null", "R"};
    for (int i = 0; i < 4; i++) {
        write_file(path, bad[i]);
        CHECK(scm_stabpoint_load(path, 0, &sp, &err) == SCM_EINVAL && strstr(err.msg, what[i]),
              "bad file %d: %s", i, err.msg);
        scm_stabpoint_free(&sp);
    }
    remove(path);
}

static void test_json(void)
{
    scm_family_pick_opts o;
    scm_family_pick_opts_default(&o);
    o.K = o.M = 3;
    o.k1 = 1;
    o.index = 0;
    o.threads = 1;
    scm_stabpoint sp;
    scm_error err;
    CHECK(scm_stabpoint_family(&o, &sp, &err) == SCM_OK, "family point: %s", err.msg);
    if (!sp.Q) {
        scm_stabpoint_free(&sp);
        return;
    }
    CHECK(memcmp(sp.Q, sp.pick.fam.pt[sp.pick.index].Q, sizeof(double) * 9) == 0, "Q copied");
    scm_stab_opts so;
    scm_stab_opts_default(&so);
    so.n_sigma = 1;
    so.sigma[0] = 1e-3;
    so.n_trials = 2;
    so.run_flow = 0;
    scm_model *m = scm_model_alloc(3, 3, &scm_act_relu, NULL, NULL, NULL, NULL);
    scm_stab_result r;
    CHECK(scm_stab_analyse(m, sp.Q, sp.R, &so, &r, &err) == SCM_OK, "%s", err.msg);
    cJSON *j = scm_stabpoint_json(&sp, &scm_act_relu, &so, &r);
    CHECK(cJSON_GetObjectItem(j, "loss")->valuedouble == r.eps, "loss");
    CHECK(strcmp(cJSON_GetObjectItem(j, "verdict")->valuestring, scm_verdict_str(r.verdict)) == 0,
          "verdict");
    CHECK(strcmp(cJSON_GetObjectItem(j, "point")->valuestring, sp.desc) == 0, "point");
    const cJSON *rows = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "perturbation"), "rows");
    CHECK(cJSON_GetArraySize(rows) == r.n_rows && r.n_rows == 1, "rows");
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "family"), "index")->valueint ==
              sp.pick.index,
          "family index");
    CHECK(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "R"), 2), 1)->valuedouble ==
              sp.R[2 * 3 + 1],
          "R[2][1]");
    cJSON_Delete(j);
    scm_model_free(m);
    scm_stabpoint_free(&sp);
}

int main(void)
{
    gsl_set_error_handler_off();
    test_fplist();
    test_family_pick();
    test_load();
    test_json();
    return TEST_SUMMARY();
}
