/* test_stability_sym.c: `scm stability`'s symmetric analysis
 * (scm_stabpoint_analyse, scm_stab_perturb_qr; stabpoint.h), against
 * things computed another way:
 *  - the symmetric spectra against the dense ones (scm_stab_analyse: the
 *    closed-form weight-space Hessian and the dense (F_Q, F_R) Jacobian)
 *    at family points that are minima and saddles: counts, the eight
 *    smallest eigenvalues, the largest, the Jacobian's extreme real parts
 *    and the verdict;
 *  - the perturbation test in (Q, R) against the spectrum's verdict at K =
 *    4, 6, 8, 10 (minima return, saddles escape);
 *  - the dense path where the point names no ansatz, and the JSON record. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/stabpoint.h"
#include "testutil.h"

/* The point index (-1: the default) of the k1 family at (K, M). */
static int family_point(int K, int M, int k1, long index, scm_stabpoint *sp)
{
    scm_family_pick_opts o;
    scm_family_pick_opts_default(&o);
    o.K = K;
    o.M = M;
    o.k1 = k1;
    o.index = index;
    o.starts = 30;
    o.threads = 2;
    scm_error err;
    scm_status st = scm_stabpoint_family(&o, sp, &err);
    CHECK(st == SCM_OK, "family K = %d, M = %d, k1 = %d: %s", K, M, k1, err.msg);
    return st == SCM_OK;
}

static void quick_opts(scm_stab_opts *so, int trials)
{
    scm_stab_opts_default(so);
    so->n_sigma = 1;
    so->sigma[0] = 1e-3;
    so->n_trials = trials;
}

/* The symmetric analysis against the dense one at one point. */
static void compare_dense(int K, int M, int k1, long index, scm_hverdict want)
{
    scm_stabpoint sp;
    if (!family_point(K, M, k1, index, &sp)) {
        scm_stabpoint_free(&sp);
        return;
    }
    scm_stab_opts so;
    quick_opts(&so, 1);
    scm_stab_result rs, rd;
    scm_error err;
    CHECK(scm_stabpoint_analyse(&sp, &scm_act_relu, &so, 0, SCM_STABPOINT_PERTURB_NONE, NULL,
                                &rs, &err) == SCM_OK && sp.sym.done,
          "symmetric K = %d k1 = %d: %s", K, k1, err.msg);
    so.run_flow = 0;
    CHECK(scm_stabpoint_analyse(&sp, &scm_act_relu, &so, 1, 0, NULL, &rd, &err) == SCM_OK &&
              !sp.sym.done && rd.hessian_done && rd.hessian_closed,
          "dense K = %d k1 = %d: %s", K, k1, err.msg);
    CHECK(rs.counts.n == K * (K + M) && rs.counts.n == rd.counts.n &&
              rs.counts.n_neg == rd.counts.n_neg && rs.counts.n_zero == rd.counts.n_zero,
          "K = %d k1 = %d [%ld]: counts %d/%d/%d, dense %d/%d/%d", K, k1, index, rs.counts.n_neg,
          rs.counts.n_zero, rs.counts.n_pos, rd.counts.n_neg, rd.counts.n_zero, rd.counts.n_pos);
    CHECK(rs.hverdict == want && rd.hverdict == want, "K = %d k1 = %d: verdict %s, dense %s", K,
          k1, scm_hverdict_str(rs.hverdict), scm_hverdict_str(rd.hverdict));
    double scale = rd.eval_max;
    CHECK(rs.n_small == rd.n_small, "smallest: %d vs %d", rs.n_small, rd.n_small);
    for (int i = 0; i < rs.n_small && i < rd.n_small; i++)
        CHECK(fabs(rs.eval_small[i] - rd.eval_small[i]) <= 1e-9 * scale,
              "K = %d k1 = %d: eigenvalue %d %.15g vs dense %.15g", K, k1, i, rs.eval_small[i],
              rd.eval_small[i]);
    CHECK(fabs(rs.eval_max - rd.eval_max) <= 1e-9 * scale, "largest");
    CHECK(rs.jacobian_done && rd.jacobian_done &&
              fabs(rs.jac_re_max - rd.jac_re_max) <= 1e-9 * fabs(rd.jac_re_min) &&
              fabs(rs.jac_re_min - rd.jac_re_min) <= 1e-9 * fabs(rd.jac_re_min),
          "K = %d k1 = %d: Jacobian %.15g %.15g vs dense %.15g %.15g", K, k1, rs.jac_re_max,
          rs.jac_re_min, rd.jac_re_max, rd.jac_re_min);
    scm_stabpoint_free(&sp);
}

/* The perturbation test in (Q, R) against the spectrum's verdict. */
static void perturb_agrees(int K, int M, int k1, long index, scm_hverdict want)
{
    scm_stabpoint sp;
    if (!family_point(K, M, k1, index, &sp)) {
        scm_stabpoint_free(&sp);
        return;
    }
    scm_stab_opts so;
    quick_opts(&so, 2);
    scm_stab_result r;
    scm_error err;
    CHECK(scm_stabpoint_analyse(&sp, &scm_act_relu, &so, 0, SCM_STABPOINT_PERTURB_QR, NULL, &r,
                                &err) == SCM_OK && sp.sym.done &&
              sp.sym.perturb == SCM_STABPOINT_PERTURB_QR,
          "K = %d k1 = %d: %s", K, k1, err.msg);
    scm_verdict v = want == SCM_HVERDICT_MIN ? SCM_VERDICT_STABLE : SCM_VERDICT_UNSTABLE;
    CHECK(r.hverdict == want && r.verdict == v && r.agree == 1 && r.n_rows == 1 &&
              r.rows[0].n == 2,
          "K = %d, M = %d, k1 = %d [%ld]: spectrum %s, (Q, R) test %s (same %d, global %d, "
          "other %d, failed %d)",
          K, M, k1, index, scm_hverdict_str(r.hverdict), scm_verdict_str(r.verdict),
          r.rows[0].n_same, r.rows[0].n_global, r.rows[0].n_other, r.rows[0].n_failed);
    scm_stabpoint_free(&sp);
}

/* A point without an ansatz goes dense; the JSON record of a symmetric one. */
static void test_dense_and_json(void)
{
    scm_stabpoint sp;
    if (!family_point(6, 6, 1, -1, &sp)) {
        scm_stabpoint_free(&sp);
        return;
    }
    scm_stab_opts so;
    quick_opts(&so, 1);
    so.run_flow = 0;
    scm_stab_result r;
    scm_error err;
    CHECK(scm_stabpoint_analyse(&sp, &scm_act_relu, &so, 0, SCM_STABPOINT_PERTURB_QR, NULL, &r,
                                &err) == SCM_OK && sp.sym.done,
          "%s", err.msg);
    cJSON *j = scm_stabpoint_json(&sp, &scm_act_relu, &so, &r);
    const cJSON *h = cJSON_GetObjectItem(j, "hessian"),
                *s = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "symmetric_spectrum"), "hessian");
    CHECK(h && !strcmp(cJSON_GetObjectItem(h, "method")->valuestring, "symmetric"), "method");
    double total = 0.0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(s, "eigenvalues"))
        total += cJSON_GetObjectItem(e, "multiplicity")->valuedouble;
    CHECK(total == 6.0 * 12.0, "multiplicities sum to %g, want K d = 72", total);
    CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "perturbation"), "space")
                      ->valuestring,
                  "qr"),
          "perturbation space");
    cJSON_Delete(j);
    sp.ansatz[0] = '\0';
    CHECK(scm_stabpoint_analyse(&sp, &scm_act_relu, &so, 0, 0, NULL, &r, &err) == SCM_OK &&
              !sp.sym.done && strstr(sp.sym.why_dense, "no ansatz") && r.hessian_done &&
              r.hverdict == SCM_HVERDICT_MIN,
          "no ansatz: dense (%s)", sp.sym.why_dense);
    snprintf(sp.ansatz, sizeof sp.ansatz, "no_such_ansatz");
    CHECK(scm_stabpoint_analyse(&sp, &scm_act_relu, &so, 0, 0, NULL, &r, &err) == SCM_EINVAL &&
              strstr(err.msg, "no_such_ansatz"),
          "unknown ansatz named: %s", err.msg);
    scm_stabpoint_free(&sp);
}

int main(void)
{
    gsl_set_error_handler_off();
    compare_dense(4, 4, 1, 0, SCM_HVERDICT_SADDLE);
    compare_dense(6, 6, 1, -1, SCM_HVERDICT_MIN);
    compare_dense(8, 8, 2, -1, SCM_HVERDICT_MIN);
    perturb_agrees(4, 4, 1, 0, SCM_HVERDICT_SADDLE);
    perturb_agrees(6, 6, 1, -1, SCM_HVERDICT_MIN);
    perturb_agrees(10, 10, 2, -1, SCM_HVERDICT_MIN);
    perturb_agrees(10, 10, 1, 1, SCM_HVERDICT_SADDLE);
    test_dense_and_json();
    return TEST_SUMMARY();
}
