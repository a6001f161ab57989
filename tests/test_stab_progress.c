/* test_stab_progress.c: the progress callback of the perturbation test
 * (scm_stab_opts.progress, stability.h), in both of its forms:
 * scm_stab_analyse (GD steps in weight space) and scm_stab_perturb_qr (the
 * flow in (Q, R)).  Checked: one call per trial, done = 1, 2, ..., total in
 * order with total = n_sigma n_trials and the caller's ctx; and the
 * result with a callback equal, byte for byte, to the result without one
 * (the callback only watches). */
#include <gsl/gsl_errno.h>
#include <string.h>

#include "scm/stability.h"
#include "scm/stabpoint.h"
#include "testutil.h"

typedef struct {
    int calls, in_order, total, bad_total;
} counter;

static void count(void *ctx, int done, int total)
{
    counter *c = ctx;
    c->calls++;
    c->in_order &= done == c->calls;
    if (c->total == 0)
        c->total = total;
    c->bad_total |= total != c->total;
}

typedef scm_status (*stab_fn)(const scm_model *, const double *, const double *,
                              const scm_stab_opts *, scm_stab_result *, scm_error *);

/* Analyse (Q, R) with fn twice, without and with the callback. */
static void check_progress(const char *what, stab_fn fn, const scm_model *m, const double *Q,
                           const double *R, double eps)
{
    scm_stab_opts o;
    scm_stab_opts_default(&o);
    o.n_trials = 3;
    o.n_sigma = 3; /* 1e-4, 1e-3, 1e-2 */
    o.t_max = 100.0;
    scm_stab_result r0, r1;
    scm_error err;
    memset(&r0, 0, sizeof r0);
    memset(&r1, 0, sizeof r1);
    r0.eps = r1.eps = eps; /* scm_stab_perturb_qr reads the point's loss from r */
    scm_status s0 = fn(m, Q, R, &o, &r0, &err);
    CHECK(s0 == SCM_OK, "%s without progress: %s", what, err.msg);
    counter c = {0, 1, 0, 0};
    o.progress = count;
    o.progress_ctx = &c;
    scm_status s1 = fn(m, Q, R, &o, &r1, &err);
    CHECK(s1 == SCM_OK, "%s with progress: %s", what, err.msg);
    CHECK(c.calls == o.n_sigma * o.n_trials, "%s: %d calls, want %d", what, c.calls,
          o.n_sigma * o.n_trials);
    CHECK(c.in_order && !c.bad_total && c.total == o.n_sigma * o.n_trials,
          "%s: done not 1..%d in order (total %d)", what, o.n_sigma * o.n_trials, c.total);
    CHECK(r0.n_rows == 3 && memcmp(r0.rows, r1.rows, sizeof r0.rows) == 0 &&
              r0.verdict == r1.verdict,
          "%s: the callback changed the result", what);
}

int main(void)
{
    gsl_set_error_handler_off();
    scm_error err;
    /* the global minimum of K = M = 2 ReLU units, T = I: Q = R = I */
    scm_model *m = scm_model_alloc(2, 2, scm_activation_find("relu"), NULL, NULL, NULL, &err);
    CHECK(m != NULL, "model: %s", err.msg);
    if (!m)
        return TEST_SUMMARY();
    const double Q[4] = {1, 0, 0, 1}, R[4] = {1, 0, 0, 1};
    check_progress("weights", scm_stab_analyse, m, Q, R, 0.0);
    check_progress("qr", scm_stab_perturb_qr, m, Q, R, 0.0);
    /* no callback, the default */
    scm_stab_opts o;
    scm_stab_opts_default(&o);
    CHECK(o.progress == NULL && o.progress_ctx == NULL, "the default has a callback");
    scm_model_free(m);
    return TEST_SUMMARY();
}
