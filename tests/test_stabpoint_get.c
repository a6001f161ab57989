/* test_stabpoint_get.c: scm_stabpoint_get, the point `scm stability`
 * analyses, against the two calls it stands for: scm_stabpoint_load on a
 * golden `scm fixed-points` result (the same Q and R, the file's activation
 * unless one is named, an unknown name refused) and scm_stabpoint_family
 * on the same family (the same point, bit for bit; a failed pick's list as
 * the message). */
#include <gsl/gsl_errno.h>
#include <string.h>

#include "scm/stabpoint.h"
#include "testutil.h"

static const char *gold = "golden/expected/fp_K4_M3.json";

static void test_file(void)
{
    scm_stabpoint a, b;
    scm_family_pick_opts fo;
    scm_family_pick_opts_default(&fo);
    const scm_activation *act = NULL;
    scm_error err;
    CHECK(scm_stabpoint_get(gold, 1, NULL, &fo, &a, &act, &err) == SCM_OK, "%s", err.msg);
    CHECK(scm_stabpoint_load(gold, 1, &b, &err) == SCM_OK, "%s", err.msg);
    CHECK(act == scm_activation_find("relu"), "the file's activation");
    CHECK(a.Q && b.Q && a.K == b.K && a.M == b.M &&
              !memcmp(a.Q, b.Q, sizeof(double) * (size_t)(a.K * a.K)) &&
              !memcmp(a.R, b.R, sizeof(double) * (size_t)(a.K * a.M)),
          "not the loaded point");
    scm_stabpoint_free(&a);
    scm_stabpoint_free(&b);
    CHECK(scm_stabpoint_get(gold, 1, "erf", &fo, &a, &act, &err) == SCM_OK &&
              act == scm_activation_find("erf"),
          "a named activation: %s", err.msg);
    scm_stabpoint_free(&a);
    CHECK(scm_stabpoint_get(gold, 1, "tanh", &fo, &a, &act, &err) == SCM_EINVAL && !act &&
              strstr(err.msg, "unknown activation 'tanh'"),
          "an unknown activation: %s", err.msg);
    scm_stabpoint_free(&a);
    CHECK(scm_stabpoint_get(gold, 38, NULL, &fo, &a, &act, &err) == SCM_EINVAL &&
              strstr(err.msg, "38 fixed"),
          "index out of range: %s", err.msg);
    scm_stabpoint_free(&a);
    CHECK(scm_stabpoint_get("/nonexistent/fp.json", 0, NULL, &fo, &a, &act, &err) == SCM_EIO,
          "no file");
    scm_stabpoint_free(&a);
}

static void test_family(void)
{
    scm_family_pick_opts fo, fo2;
    scm_family_pick_opts_default(&fo);
    fo.K = fo.M = 3;
    fo.k1 = 1;
    fo.index = 0;
    fo.threads = 1;
    fo2 = fo;
    fo2.act = scm_activation_find("relu");
    scm_stabpoint a, b;
    const scm_activation *act = NULL;
    scm_error err;
    CHECK(scm_stabpoint_get(NULL, -1, NULL, &fo, &a, &act, &err) == SCM_OK, "%s", err.msg);
    CHECK(scm_stabpoint_family(&fo2, &b, &err) == SCM_OK, "%s", err.msg);
    CHECK(act == fo2.act && fo.act == act, "relu by default, passed to the pick");
    CHECK(a.Q && b.Q && !memcmp(a.Q, b.Q, sizeof(double) * 9) &&
              !memcmp(a.R, b.R, sizeof(double) * 9) && a.pick.index == b.pick.index,
          "not the family's point");
    scm_stabpoint_free(&a);
    scm_stabpoint_free(&b);
    fo.loss = 123.0; /* no point has it: the pick's list is the message */
    fo.index = -1;
    scm_status st = scm_stabpoint_get(NULL, -1, NULL, &fo, &a, &act, &err);
    CHECK(st != SCM_OK && a.pick.why && !strcmp(err.msg, a.pick.why),
          "a loss no point has: %s", err.msg);
    scm_stabpoint_free(&a);
}

int main(void)
{
    gsl_set_error_handler_off();
    test_file();
    test_family();
    return TEST_SUMMARY();
}
