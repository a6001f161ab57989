/* test_config_edit.c: the config calls the CLI's --unset and `scm run` rest
 * on (config.h).  scm_config_unset against a configuration written without
 * the key (the same used configuration, every number read back exactly),
 * its refusals; scm_config_read against scm_config_unset on the same text
 * and each of its refusals (a directory, a missing file, a NUL byte, more
 * than 64 MiB); scm_config_load_unset with --set after --unset; and
 * scm_config_run against the steps done by hand (model, initial state,
 * scm_traj_run), bit for bit. */
#include <gsl/gsl_errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scm/config.h"
#include "testutil.h"

/* 0.1 + 0.2 is not 0.3: a number that a 15-digit print would change. */
static const char *with_key =
    "{\"model\": {\"K\": 2, \"M\": 2, \"activation\": \"erf\"},"
    " \"init\": {\"type\": \"random\", \"d\": 300, \"sigma\": 0.30000000000000004, \"seed\": 5},"
    " \"integrator\": {\"t_max\": 7, \"rtol\": 1e-7}}";
static const char *without_key =
    "{\"model\": {\"K\": 2, \"M\": 2, \"activation\": \"erf\"},"
    " \"init\": {\"type\": \"random\", \"d\": 300, \"sigma\": 0.30000000000000004, \"seed\": 5},"
    " \"integrator\": {\"rtol\": 1e-7}}";

static char *dup_text(const char *s)
{
    size_t n = strlen(s) + 1;
    char *t = malloc(n);
    if (t)
        memcpy(t, s, n);
    return t;
}

/* A temporary file holding n bytes of data: its malloc'ed name. */
static char *temp_file(const char *data, size_t n)
{
    char *name = dup_text("/tmp/scm_test_config_XXXXXX");
    int fd = name ? mkstemp(name) : -1;
    if (fd < 0 || write(fd, data, n) != (ssize_t)n) {
        free(name);
        name = NULL;
    }
    if (fd >= 0)
        close(fd);
    return name;
}

static void test_unset(void)
{
    scm_error err;
    size_t len = strlen(with_key);
    char *text = dup_text(with_key);
    const char *keys[] = {"integrator.t_max"};
    CHECK(scm_config_unset(&text, &len, "(a)", keys, 1, &err) == SCM_OK, "unset: %s", err.msg);
    CHECK(len == strlen(text) && !strstr(text, "t_max"), "the key is still there: %s", text);
    scm_config *a = NULL, *b = NULL;
    scm_status sa = scm_config_parse(text, "(a)", NULL, 0, &a, &err);
    scm_status sb = scm_config_parse(without_key, "(b)", NULL, 0, &b, &err);
    CHECK(!sa && !sb, "parse: %s", err.msg);
    if (!sa && !sb) {
        CHECK(cJSON_Compare(a->used, b->used, 1), "unset is not the config without the key");
        CHECK(a->traj.t_max == b->traj.t_max && a->sigma == b->sigma &&
                  a->sigma == strtod("0.30000000000000004", NULL),
              "numbers changed: t_max %g vs %g, sigma %.17g", a->traj.t_max, b->traj.t_max,
              a->sigma);
    }
    scm_config_free(a);
    scm_config_free(b);

    /* refusals leave the text alone */
    char *before = text;
    const char *missing[] = {"integrator.rtol", "model.nope"};
    CHECK(scm_config_unset(&text, &len, "(a)", missing, 2, &err) == SCM_EINVAL &&
              text == before && strstr(err.msg, "--unset model.nope") &&
              strstr(err.msg, "'(a)' has no such key"),
          "a missing key: %s", err.msg);
    const char *deep[] = {"integrator.rtol.x"};
    CHECK(scm_config_unset(&text, &len, "(a)", deep, 1, &err) == SCM_EINVAL,
          "a key below a number is no key");
    free(text);
    text = dup_text("[1, 2]");
    len = strlen(text);
    CHECK(scm_config_unset(&text, &len, "(arr)", keys, 1, &err) == SCM_EINVAL &&
              strstr(err.msg, "'(arr)' is not a JSON object"),
          "an array: %s", err.msg);
    CHECK(scm_config_unset(&text, &len, "(arr)", keys, 0, &err) == SCM_OK &&
              !strcmp(text, "[1, 2]"),
          "no keys: the text untouched");
    free(text);
}

static void test_read(void)
{
    scm_error err;
    const char *keys[] = {"integrator.t_max"};
    char *path = temp_file(with_key, strlen(with_key));
    CHECK(path != NULL, "temporary file");
    if (!path)
        return;
    char *t1 = NULL, *t2 = dup_text(with_key);
    size_t l1 = 0, l2 = strlen(with_key);
    CHECK(scm_config_read(path, keys, 1, &t1, &l1, &err) == SCM_OK, "read: %s", err.msg);
    scm_config_unset(&t2, &l2, path, keys, 1, &err);
    CHECK(t1 && l1 == l2 && !strcmp(t1, t2), "read + unset differs from unset of the text");
    free(t1);
    free(t2);

    /* --set applies after --unset */
    scm_config *c = NULL;
    const char *sets[] = {"integrator.t_max=3"};
    CHECK(scm_config_load_unset(path, sets, 1, keys, 1, &c, &err) == SCM_OK && c &&
              c->traj.t_max == 3.0,
          "load_unset with a set: %s", err.msg);
    scm_config_free(c);
    CHECK(scm_config_load_unset(path, NULL, 0, (const char *[]){"model.nope"}, 1, &c, &err) ==
                  SCM_EINVAL &&
              c == NULL,
          "load_unset of a missing key");
    unlink(path);
    free(path);

    char *t = NULL;
    size_t l = 0;
    CHECK(scm_config_read("/tmp", NULL, 0, &t, &l, &err) == SCM_EIO && !t &&
              strstr(err.msg, "cannot read config '/tmp': it is a directory"),
          "a directory: %s", err.msg);
    CHECK(scm_config_read("/nonexistent/c.json", NULL, 0, &t, &l, &err) == SCM_EIO &&
              strstr(err.msg, "cannot open config '/nonexistent/c.json'"),
          "a missing file: %s", err.msg);
    path = temp_file("{\"a\": 1}\0x", 10);
    CHECK(path && scm_config_read(path, NULL, 0, &t, &l, &err) == SCM_EINVAL && !t &&
              strstr(err.msg, "contains a NUL byte"),
          "a NUL byte: %s", err.msg);
    if (path)
        unlink(path);
    free(path);
    CHECK(scm_config_read("/dev/zero", NULL, 0, &t, &l, &err) == SCM_EINVAL && !t &&
              strstr(err.msg, "is larger than 64 MiB"),
          "an endless file: %s", err.msg);
}

static void test_run(void)
{
    scm_error err;
    scm_config *c = NULL;
    CHECK(scm_config_parse(with_key, "(run)", NULL, 0, &c, &err) == SCM_OK, "%s", err.msg);
    if (!c)
        return;
    scm_traj_result a, b;
    memset(&b, 0, sizeof b);
    scm_status sa = scm_config_run(c, &a, &err);
    CHECK(sa == SCM_OK && a.n_out > 2, "scm_config_run: %s", err.msg);
    scm_model *m = scm_config_model(c, &err);
    double Q0[4], R0[4];
    scm_status sb = m ? scm_config_initial_state(c, m, Q0, R0, &err) : SCM_EINVAL;
    if (!sb)
        sb = scm_traj_run(m, c->rule, Q0, R0, &c->traj, &b, &err);
    CHECK(sb == SCM_OK, "by hand: %s", err.msg);
    if (!sa && !sb) {
        int same = a.n_out == b.n_out && a.eps == b.eps && a.t == b.t && a.stop == b.stop;
        for (long i = 0; same && i < a.n_out; i++)
            same = a.out_t[i] == b.out_t[i] && a.out_eps[i] == b.out_eps[i];
        CHECK(same, "scm_config_run differs from the steps by hand (%ld vs %ld points)",
              a.n_out, b.n_out);
    }
    scm_traj_result_free(&a);
    scm_traj_result_free(&b);
    scm_model_free(m);
    scm_config_free(c);
}

int main(void)
{
    gsl_set_error_handler_off();
    test_unset();
    test_read();
    test_run();
    return TEST_SUMMARY();
}
