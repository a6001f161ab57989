/* test_crosscheck.c: the cross-check of the enumeration (crosscheck.h),
 * against computations of another kind:
 *  - GD in weight space stops on a residual computed from the weight
 *    gradient (F_R = -sqrt(M) G, F_Q = -(G W^T + W G^T)); unpolished, the
 *    end point's residual from scm_flow_rhs at its overlaps is below the
 *    same bound;
 *  - at K = M = 5 every converged end point of both methods matches an
 *    enumerated point, and its loss agrees with the point's to 1e-8;
 *  - with the enumeration restricted (the k1 ansatz with k1 = 0 only, a
 *    parsed file), the spurious end points at K = M = 8 must come out
 *    unmatched, and the same end points match the full enumeration (a test
 *    that fails if unmatched points were dropped or matched loosely);
 *  - the groups of equal overlaps of an enumerated point against the
 *    scalars of its ansatz (group sizes k1 and K - k1, Q_kk, own overlap);
 *  - at K = M + 1, every GD and ODE run either matches or is not converged
 *    with a reason, and no dead student is kept in a live state;
 *  - the whole check of `scm crosscheck` (scm_xc_check_*): its counts equal
 *    the per-run records summed here, its list scm_xc_enumerate's, a run
 *    scm_xc_run_one's, its text and JSON its counts. */
#include <gsl/gsl_errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scm/crosscheck.h"
#include "testutil.h"

static scm_ansatz *builtin(const char *name)
{
    for (int i = 0; i < scm_ansatz_builtin_count(); i++) {
        const char *t = scm_ansatz_builtin_text(i, NULL);
        scm_error e;
        scm_ansatz *a = scm_ansatz_parse(t, strlen(t), "builtin", &e);
        if (a && strcmp(scm_ansatz_name(a), name) == 0)
            return a;
        scm_ansatz_free(a);
    }
    return NULL;
}

static void fp_opts(scm_fp_opts *o)
{
    scm_fp_opts_default(o);
    o->n_random = 60;
    o->polish_defer = 1;
    o->deflate = 2;
}

/* GD's own stopping residual against the flow's, no polish. */
static void test_gd_residual(void)
{
    scm_xc_opts o;
    scm_xc_opts_default(&o);
    o.polish_max_K = 0;
    o.gd_tol = 1e-9;
    int n_conv = 0;
    for (long i = 0; i < 40; i++) {
        scm_xc_run r;
        scm_error e;
        CHECK(scm_xc_run_one(8, 8, &scm_act_relu, SCM_XC_GD, 3, i, &o, &r, &e) == SCM_OK, "%s",
              e.msg);
        CHECK(!r.polished, "polished with polish_max_K = 0");
        if (r.converged && r.eps > o.global_eps) {
            /* the flow residual at the overlaps, computed by flow.c */
            CHECK(r.res < o.gd_tol, "run %ld: GD stopped, flow residual %g", i, r.res);
            n_conv++;
        }
        scm_xc_run_free(&r);
    }
    CHECK(n_conv > 0, "no GD run converged away from the global minimum (the test needs one)");
    printf("# GD: %d of 40 runs at K = M = 8 converged away from the global minimum\n", n_conv);
}

static int count_unmatched(int K, int M, scm_xc_method meth, long runs, const scm_xc_list *l,
                           const scm_xc_list *full, int *n_spurious)
{
    scm_xc_opts o;
    scm_xc_opts_default(&o);
    int um = 0;
    *n_spurious = 0;
    for (long i = 0; i < runs; i++) {
        scm_xc_run r;
        scm_error e;
        CHECK(scm_xc_run_one(K, M, &scm_act_relu, meth, 3, i, &o, &r, &e) == SCM_OK, "%s",
              e.msg);
        CHECK(r.converged, "%s run %ld at K = %d, M = %d: %s", scm_xc_method_str(meth), i, K, M,
              r.why);
        CHECK(r.K_live == K, "a dead student at K = M");
        scm_xc_match(&r, l, &o);
        if (r.converged && r.match < 0 && !r.global)
            um++;
        if (r.converged && !r.global) {
            (*n_spurious)++;
            if (full) {
                /* the restricted list holds only the global minimum: the
                 * full one must hold this point */
                CHECK(r.match < 0, "run %ld matched the restricted list at loss %.12g", i,
                      r.eps);
                scm_xc_match(&r, full, &o);
            }
            CHECK(r.match >= 0, "%s run %ld: loss %.12g not in the full enumeration",
                  scm_xc_method_str(meth), i, r.eps);
            if (r.match >= 0) {
                CHECK_CLOSE(r.eps, full ? full->pt[r.match].eps : l->pt[r.match].eps, 1e-8,
                            1e-10, "matched loss");
                CHECK(r.polished && r.polish_ok && r.res < 1e-12, "run %ld: polish %d %d, %g",
                      i, r.polished, r.polish_ok, r.res);
            }
        }
        scm_xc_run_free(&r);
    }
    return um;
}

static void test_complete_small(void)
{
    scm_ansatz *a = builtin("k1");
    scm_fp_opts fo;
    fp_opts(&fo);
    scm_xc_list l;
    scm_error e;
    CHECK(scm_xc_enumerate(5, 5, &a, 1, &scm_act_relu, &fo, 8, &l, &e) == SCM_OK, "%s", e.msg);
    CHECK(l.n > 10 && l.n_instances == 6, "%d points, %d instances", l.n, l.n_instances);
    for (int i = 1; i < l.n; i++)
        CHECK(l.pt[i].eps >= l.pt[i - 1].eps, "list not sorted by loss");
    CHECK(l.pt[0].eps < 1e-12, "no global minimum first (loss %g)", l.pt[0].eps);
    int sp;
    CHECK(count_unmatched(5, 5, SCM_XC_ODE, 8, &l, NULL, &sp) == 0, "ODE unmatched at K = 5");
    CHECK(count_unmatched(5, 5, SCM_XC_GD, 30, &l, NULL, &sp) == 0, "GD unmatched at K = 5");
    scm_xc_list_free(&l);
    scm_ansatz_free(a);
}

/* Restrict the enumeration to the global minimum: spurious end points must
 * be reported unmatched. */
static void test_restricted(void)
{
    const char *text =
        "{\"name\": \"k1_only0\", \"require\": [\"K - M\"], \"k1\": [\"0\", \"0\"],"
        " \"students\": {\"anti\": \"k1\", \"al\": \"K - k1\"},"
        " \"teachers\": {\"tanti\": \"k1\", \"tal\": \"M - k1\"},"
        " \"pairs\": {\"anti\": \"tanti\", \"al\": \"tal\"}}";
    scm_error e;
    scm_ansatz *r0 = scm_ansatz_parse(text, strlen(text), "test", &e);
    CHECK(r0 != NULL, "%s", e.msg);
    scm_ansatz *a = builtin("k1");
    scm_fp_opts fo;
    fp_opts(&fo);
    scm_xc_list lr, lf;
    CHECK(scm_xc_enumerate(8, 8, &r0, 1, &scm_act_relu, &fo, 8, &lr, &e) == SCM_OK, "%s", e.msg);
    CHECK(scm_xc_enumerate(8, 8, &a, 1, &scm_act_relu, &fo, 8, &lf, &e) == SCM_OK, "%s", e.msg);
    CHECK(lr.n_instances == 1 && lf.n_instances == 9, "instances %d, %d", lr.n_instances,
          lf.n_instances);
    int sp;
    int um = count_unmatched(8, 8, SCM_XC_GD, 40, &lr, &lf, &sp);
    CHECK(sp > 0, "no spurious GD end point in 40 runs at K = M = 8 (the test needs one)");
    CHECK(um == sp, "%d unmatched of %d spurious end points", um, sp);
    printf("# restricted enumeration, K = M = 8: %d of 40 GD runs unmatched\n", um);
    scm_xc_list_free(&lr);
    scm_xc_list_free(&lf);
    scm_ansatz_free(a);
    scm_ansatz_free(r0);
}

/* Groups of an enumerated point against its ansatz scalars. */
static void test_groups(void)
{
    scm_ansatz *a = builtin("k1");
    scm_error e;
    const int K = 6, k1 = 2;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, K, k1, &e);
    scm_fp_opts fo;
    fp_opts(&fo);
    fo.polish_max_K = 0;
    scm_fp_set s;
    scm_fp_set_init(&s);
    CHECK(scm_fp_enumerate(a, in, &scm_act_relu, &fo, NULL, 0, &s, &e) == SCM_OK, "%s", e.msg);
    int tested = 0;
    int qa = scm_ansatz_inst_find(in, "Q[anti,anti].diag");
    int ra = scm_ansatz_inst_find(in, "R[anti,tanti].diag");
    int ql = scm_ansatz_inst_find(in, "Q[al,al].diag");
    int rl = scm_ansatz_inst_find(in, "R[al,tal].diag");
    CHECK(qa >= 0 && ra >= 0 && ql >= 0 && rl >= 0, "scalar names");
    for (int p = 0; p < s.n && qa >= 0; p++) {
        scm_fp_structure st;
        scm_fp_classify(in, s.pt[p].x, &st);
        const double *x = s.pt[p].x;
        /* a specialised point with distinct groups */
        if (st.n_anti != k1 || st.n_aligned != K - k1 || !(fabs(x[qa] - x[ql]) > 1e-3))
            continue;
        scm_xc_groups g;
        CHECK(scm_xc_group_students(K, K, s.pt[p].Q, s.pt[p].R, 1e-6, &g) == SCM_OK, "groups");
        CHECK(g.n == 2, "%d groups, want 2 (loss %.12g)", g.n, s.pt[p].eps);
        if (g.n == 2) {
            /* by decreasing size: the aligned group first */
            CHECK(g.g[0].size == K - k1 && g.g[0].kind == SCM_ALIGN_ALIGNED, "aligned group");
            CHECK(g.g[1].size == k1 && g.g[1].kind == SCM_ALIGN_ANTI, "anti group");
            CHECK_CLOSE(g.g[0].q, x[ql], 1e-12, 1e-14, "aligned Q_kk");
            CHECK_CLOSE(g.g[1].q, x[qa], 1e-12, 1e-14, "anti Q_kk");
            CHECK_CLOSE(g.g[0].own, x[rl], 1e-12, 1e-14, "aligned own overlap");
            CHECK_CLOSE(g.g[1].own, x[ra], 1e-12, 1e-14, "anti own overlap");
            int cnt = 0;
            for (int v = 0; v < g.g[1].n_values; v++)
                cnt += g.g[1].count[v];
            CHECK(cnt == K - 1, "anti: %d other overlaps", cnt);
        }
        scm_xc_groups_free(&g);
        tested++;
    }
    CHECK(tested > 0, "no specialised k1 = 2 point at K = M = 6");
    scm_fp_set_free(&s);
    scm_ansatz_inst_free(in);
    scm_ansatz_free(a);
}

/* K = M + 1: matched, or not converged with a reason. */
static void test_overparam(void)
{
    scm_ansatz *ans[2] = {builtin("k1"), builtin("k1_extra")};
    scm_fp_opts fo;
    fp_opts(&fo);
    scm_xc_list l9, l8;
    scm_error e;
    CHECK(scm_xc_enumerate(7, 6, ans, 2, &scm_act_relu, &fo, 8, &l9, &e) == SCM_OK, "%s", e.msg);
    CHECK(scm_xc_enumerate(6, 6, ans, 2, &scm_act_relu, &fo, 8, &l8, &e) == SCM_OK, "%s", e.msg);
    scm_xc_opts o;
    scm_xc_opts_default(&o);
    int nc = 0, small = 0;
    for (long i = 0; i < 38; i++) {
        scm_xc_run r;
        scm_xc_method me = i < 30 ? SCM_XC_GD : SCM_XC_ODE;
        CHECK(scm_xc_run_one(7, 6, &scm_act_relu, me, 1, i % 30, &o, &r, &e) == SCM_OK, "%s",
              e.msg);
        small += r.n_small > 0;
        for (int k = 0; k < r.K_live; k++)
            CHECK(r.Q[k * r.K_live + k] > o.traj.dead_tol, "a dead student kept");
        if (!r.converged) {
            CHECK(r.why[0] != '\0', "run %ld: not converged without a reason", i);
            nc++;
        } else {
            scm_xc_match(&r, r.K_live == 7 ? &l9 : &l8, &o);
            CHECK(r.match >= 0 || r.global, "K = 7, M = 6, %s run %ld: loss %.12g unmatched",
                  scm_xc_method_str(me), i % 30, r.eps);
        }
        scm_xc_run_free(&r);
    }
    printf("# K = 7, M = 6: %d of 30 GD and 8 ODE runs not converged, %d with a small "
           "student\n", nc, small);
    scm_xc_list_free(&l9);
    scm_xc_list_free(&l8);
    scm_ansatz_free(ans[0]);
    scm_ansatz_free(ans[1]);
}

static void test_errors(void)
{
    scm_xc_opts o;
    scm_xc_opts_default(&o);
    scm_error e;
    CHECK(scm_xc_opts_check(&o, &e) == SCM_OK, "defaults rejected: %s", e.msg);
    o.gd_tol = 0.0;
    CHECK(scm_xc_opts_check(&o, &e) == SCM_EINVAL, "gd_tol 0 accepted");
    scm_xc_opts_default(&o);
    scm_xc_run r;
    CHECK(scm_xc_run_one(3, 3, &scm_act_relu, SCM_XC_GD, 1, -1, &o, &r, &e) == SCM_EINVAL,
          "index -1 accepted");
}

/* scm_xc_run_many: on 1 and 3 threads the runs of scm_xc_run_one, field
 * by field and bit for bit (ODE and GD, K = M + 1 so that some runs lose
 * a student); a bad option reports the lowest failing index. */
static void test_run_many(void)
{
    scm_xc_opts o;
    scm_xc_opts_default(&o);
    scm_error e;
    enum { N = 6 };
    for (int meth = 0; meth < 2; meth++) {
        scm_xc_method m = meth ? SCM_XC_GD : SCM_XC_ODE;
        scm_xc_run one[N], many[2][N];
        for (int i = 0; i < N; i++)
            CHECK(scm_xc_run_one(4, 3, &scm_act_relu, m, 7, 10 + i, &o, &one[i], &e) == SCM_OK,
                  "%s", e.msg);
        for (int t = 0; t < 2; t++) {
            long failed = 0;
            CHECK(scm_xc_run_many(4, 3, &scm_act_relu, m, 7, 10, N, &o, 1 + 2 * t, many[t],
                                  &failed, &e) == SCM_OK && failed == -1,
                  "%s", e.msg);
            for (int i = 0; i < N; i++) {
                const scm_xc_run *a = &one[i], *b = &many[t][i];
                size_t nq = (size_t)a->K_live * (size_t)a->K_live, nr = (size_t)a->K_live * 3;
                CHECK(a->index == b->index && a->converged == b->converged &&
                          a->K_live == b->K_live && a->work == b->work &&
                          memcmp(&a->eps, &b->eps, sizeof a->eps) == 0 &&
                          memcmp(&a->res, &b->res, sizeof a->res) == 0 &&
                          a->n_anti == b->n_anti && strcmp(a->why, b->why) == 0 &&
                          (!a->Q || (memcmp(a->Q, b->Q, nq * sizeof(double)) == 0 &&
                                     memcmp(a->R, b->R, nr * sizeof(double)) == 0)),
                      "%s run %d on %d threads differs from scm_xc_run_one",
                      scm_xc_method_str(m), 10 + i, 1 + 2 * t);
                scm_xc_run_free(&many[t][i]);
            }
        }
        for (int i = 0; i < N; i++)
            scm_xc_run_free(&one[i]);
    }
    scm_xc_run r[3];
    long failed = 0;
    CHECK(scm_xc_run_many(3, 3, &scm_act_relu, SCM_XC_GD, 1, 0, 3, &o, 0, r, &failed, &e) ==
              SCM_EINVAL,
          "threads 0 accepted");
    o.gd_tol = 0.0;
    CHECK(scm_xc_run_many(3, 3, &scm_act_relu, SCM_XC_GD, 1, 5, 3, &o, 2, r, &failed, &e) ==
                  SCM_EINVAL &&
              failed == 5 && strstr(e.msg, "gd_tol"),
          "bad options: failed %ld, '%s'", failed, e.msg);
    for (int i = 0; i < 3; i++)
        scm_xc_run_free(&r[i]);
}

/* The whole check (scm_xc_check_*): its counts against the per-run
 * records summed here, its list against scm_xc_enumerate, its runs
 * against scm_xc_run_one, its JSON against its counts, and the errors of
 * its steps.  K = 5, M = 4 with few starts and the k1 sweep off, so that
 * runs end at the global minimum, at listed points and possibly unmatched
 * or not converged (a GD budget of 300 iterations). */
static void test_check(void)
{
    scm_xc_check_opts o;
    scm_xc_check_opts_default(&o);
    o.K = 5;
    o.M = 4;
    o.runs = 5;
    o.first = 2;
    o.seed = 7;
    o.starts = 20;
    o.sweep_passes = 0;
    o.threads = 2;
    o.run.gd_max_iter = 300;
    scm_error err;
    scm_xc_check *c = NULL;
    CHECK(scm_xc_check_new(&o, &c, &err) == SCM_OK && c, "check_new: %s", err.msg);
    if (!c)
        return;
    CHECK(scm_xc_check_run(c, SCM_XC_ODE, &err) == SCM_EINVAL, "run before the enumeration");
    CHECK(scm_xc_check_enumerate(c, &err) == SCM_OK, "enumerate: %s", err.msg);
    CHECK(scm_xc_check_run(c, SCM_XC_ODE, &err) == SCM_OK, "ode: %s", err.msg);
    CHECK(scm_xc_check_run(c, SCM_XC_GD, &err) == SCM_OK, "gd: %s", err.msg);
    CHECK(scm_xc_check_run(c, SCM_XC_GD, &err) == SCM_EINVAL, "gd twice");

    /* the list: scm_xc_enumerate with the same options */
    scm_ansatz *ans[16];
    int na = 0;
    for (int i = 0; i < scm_ansatz_builtin_count() && na < 16; i++) {
        const char *t = scm_ansatz_builtin_text(i, NULL);
        ans[na++] = scm_ansatz_parse(t, strlen(t), "builtin", NULL);
    }
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    fo.n_random = 20;
    fo.threads = 1;
    fo.polish_defer = 1;
    fo.deflate = 2;
    scm_xc_list l;
    CHECK(scm_xc_enumerate(5, 4, ans, na, &scm_act_relu, &fo, 0, &l, &err) == SCM_OK, "%s",
          err.msg);
    const scm_xc_list *cl = scm_xc_check_list(c);
    CHECK(cl->n == l.n && cl->n_instances == l.n_instances, "list: %d points, want %d", cl->n,
          l.n);
    for (int i = 0; i < l.n && i < cl->n; i++)
        CHECK(cl->pt[i].eps == l.pt[i].eps, "list point %d: loss %.17g, want %.17g", i,
              cl->pt[i].eps, l.pt[i].eps);

    /* the counts, summed here from the records */
    long n = 0;
    const scm_xc_run *r = scm_xc_check_runs(c, &n);
    CHECK(n == 10, "%ld runs", n);
    long conv[2] = {0}, nc[2] = {0}, glob[2] = {0}, um[2] = {0}, match[2] = {0}, work[2] = {0};
    for (long j = 0; j < n; j++) {
        int me = r[j].method == SCM_XC_GD;
        CHECK(r[j].index == o.first + j % 5 && me == (j >= 5), "run %ld: index %ld method %d", j,
              r[j].index, me);
        work[me] += r[j].work;
        conv[me] += r[j].converged;
        nc[me] += !r[j].converged;
        glob[me] += r[j].converged && r[j].global;
        match[me] += r[j].converged && (r[j].match >= 0 || r[j].global);
        um[me] += r[j].converged && r[j].match < 0 && !r[j].global;
    }
    for (int me = 0; me < 2; me++) {
        const scm_xc_tally *t = scm_xc_check_tally(c, (scm_xc_method)me);
        CHECK(t->runs == 5 && t->converged == conv[me] && t->not_converged == nc[me] &&
                  t->global == glob[me] && t->matched == match[me] && t->unmatched == um[me] &&
                  t->work == work[me],
              "method %d: tally %ld %ld %ld %ld %ld vs records %ld %ld %ld %ld %ld", me,
              t->converged, t->not_converged, t->global, t->matched, t->unmatched, conv[me],
              nc[me], glob[me], match[me], um[me]);
    }
    CHECK(scm_xc_check_unmatched(c) == um[0] + um[1], "unmatched");
    printf("# scm_xc_check K = 5, M = 4: ode %ld/%ld/%ld, gd %ld/%ld/%ld converged/matched/"
           "unmatched, %d listed points\n",
           conv[0], match[0], um[0], conv[1], match[1], um[1], cl->n);

    /* a run again on its own: the same end point */
    scm_xc_run one;
    CHECK(scm_xc_run_one(5, 4, &scm_act_relu, SCM_XC_GD, 7, 4, &o.run, &one, &err) == SCM_OK,
          "%s", err.msg);
    CHECK(one.eps == r[7].eps && one.work == r[7].work && one.converged == r[7].converged,
          "gd run 4: loss %.17g, want %.17g", r[7].eps, one.eps);
    scm_xc_run_free(&one);

    /* the JSON and the text say the same */
    cJSON *js = scm_xc_check_json(c);
    const cJSON *sm = cJSON_GetObjectItem(js, "summary");
    for (int me = 0; me < 2; me++) {
        const cJSON *m = cJSON_GetObjectItem(sm, me ? "gd" : "ode");
        const cJSON *x = cJSON_GetObjectItem(m, "converged"), *y = cJSON_GetObjectItem(m, "unmatched");
        CHECK(x && y && x->valuedouble == conv[me] && y->valuedouble == um[me],
              "JSON summary of method %d", me);
    }
    const cJSON *ua = cJSON_GetObjectItem(js, "unmatched_points"),
                *na_ = cJSON_GetObjectItem(js, "not_converged");
    CHECK(cJSON_GetArraySize(ua) == um[0] + um[1] && cJSON_GetArraySize(na_) == nc[0] + nc[1],
          "JSON lists: %d unmatched, %d not converged", cJSON_GetArraySize(ua),
          cJSON_GetArraySize(na_));
    cJSON_Delete(js);
    char *text = scm_xc_check_text(c, 0);
    CHECK(text && strstr(text, um[0] + um[1] ? "INCOMPLETE: " : "complete: 0 unmatched"),
          "text: %s", text ? text : "(null)");
    free(text);
    scm_xc_list_free(&l);
    for (int i = 0; i < na; i++)
        scm_ansatz_free(ans[i]);
    scm_xc_check_free(c);

    /* errors of the first step */
    o.K = 0;
    CHECK(scm_xc_check_new(&o, &c, &err) == SCM_EINVAL && !c, "K = 0");
    o.K = 3;
    const char *bad[1] = {"/nonexistent/ansatz.json"};
    o.ansatz_files = bad;
    o.n_ansatz = 1;
    CHECK(scm_xc_check_new(&o, &c, &err) == SCM_EIO && !c && strstr(err.msg, "nonexistent"),
          "a missing ansatz file: %s", err.msg);
}

/* The whole check with the enumeration restricted to an ansatz file (the
 * k1 ansatz with k1 = 0 only) at K = M = 8, GD only: some end points come
 * out unmatched; the check's count, its distinct-loss table in the text,
 * its exit condition and its JSON list all agree with the records. */
static void test_check_restricted(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/test_xc_only0_%ld.json", (long)getpid());
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("{\"name\": \"k1_only0\", \"require\": [\"K - M\"], \"k1\": [\"0\", \"0\"],"
              " \"students\": {\"anti\": \"k1\", \"al\": \"K - k1\"},"
              " \"teachers\": {\"tanti\": \"k1\", \"tal\": \"M - k1\"},"
              " \"pairs\": {\"anti\": \"tanti\", \"al\": \"tal\"}}",
              f);
        fclose(f);
    }
    const char *files[1] = {path};
    scm_xc_check_opts o;
    scm_xc_check_opts_default(&o);
    o.K = o.M = 8;
    o.runs = 12;
    o.seed = 3;
    o.ode = 0;
    o.threads = 2;
    o.ansatz_files = files;
    o.n_ansatz = 1;
    scm_error err;
    scm_xc_check *c = NULL;
    CHECK(scm_xc_check_new(&o, &c, &err) == SCM_OK && scm_xc_check_enumerate(c, &err) == SCM_OK &&
              scm_xc_check_run(c, SCM_XC_ODE, &err) == SCM_EINVAL &&
              scm_xc_check_run(c, SCM_XC_GD, &err) == SCM_OK,
          "restricted check: %s", err.msg);
    remove(path);
    if (!c)
        return;
    long n = 0, um = 0;
    const scm_xc_run *r = scm_xc_check_runs(c, &n);
    for (long j = 0; j < n; j++)
        um += r[j].converged && r[j].match < 0 && !r[j].global;
    CHECK(n == 12 && um > 0 && scm_xc_check_unmatched(c) == um &&
              scm_xc_check_tally(c, SCM_XC_GD)->unmatched == um,
          "restricted: %ld unmatched of %ld, the check says %ld", um, n,
          scm_xc_check_unmatched(c));
    char *text = scm_xc_check_text(c, 0);
    CHECK(text && strstr(text, "unmatched losses") && strstr(text, "INCOMPLETE: ") &&
              strstr(text, "groups of students with equal overlaps") && !strstr(text, "\node "),
          "restricted text: %s", text ? text : "(null)");
    free(text);
    cJSON *js = scm_xc_check_json(c);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(js, "unmatched_points")) == um &&
              cJSON_GetObjectItem(js, "unmatched")->valuedouble == um &&
              !cJSON_GetObjectItem(cJSON_GetObjectItem(js, "summary"), "ode"),
          "restricted JSON");
    cJSON_Delete(js);
    printf("# scm_xc_check restricted, K = M = 8: %ld of 12 GD runs unmatched\n", um);
    scm_xc_check_free(c);
}

int main(void)
{
    gsl_set_error_handler_off();
    test_errors();
    test_run_many();
    test_gd_residual();
    test_groups();
    test_complete_small();
    test_restricted();
    test_overparam();
    test_check();
    test_check_restricted();
    return TEST_SUMMARY();
}
