/* test_cmd_args.c: the library functions that took over the command
 * line's rules and text (issue 24: a thin CLI), against what the commands
 * said before they moved (the messages of tests/golden, and the rules
 * written out here case by case) and against numbers recomputed from the
 * inputs: scm_stabpoint_args_*, scm_certify_args_check and
 * scm_certify_list_text, scm_split_args_check, scm_stair_study_opts_named,
 * scm_lintarget_study_opts_check, scm_xc_check_opts_named,
 * scm_fp_table_opts_named, scm_traj_out_check_paths, scm_output_check_out,
 * scm_simulate_study_opts_given and _paths, scm_sweep_summary_text_timed,
 * scm_compare_failure. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/certify.h"
#include "scm/compare.h"
#include "scm/crosscheck.h"
#include "scm/fptable.h"
#include "scm/lintarget.h"
#include "scm/output.h"
#include "scm/simulate.h"
#include "scm/split.h"
#include "scm/stabpoint.h"
#include "scm/staircase.h"
#include "scm/sweep_text.h"
#include "scm/trajout.h"
#include "testutil.h"

/* st is SCM_EINVAL with exactly want as the message (want NULL: SCM_OK). */
#define CHECK_MSG(st, err, want, what)                                         \
  CHECK((want)                                                                 \
            ? (st) == SCM_EINVAL && !strcmp((err).msg, (want) ? (want) : "")   \
            : (st) == SCM_OK,                                                  \
        "%s: status %d, '%s'", (what), (int)(st), (err).msg)

static void test_stabpoint(void) {
  scm_stabpoint_args a;
  scm_error err;
  scm_stabpoint_args_default(&a);
  CHECK(a.K == -1 && a.index == -1 && isnan(a.loss) && a.starts == 100 &&
            a.steps == 1000 && a.trials == 10 && a.seed == 1 && a.flow &&
            a.hessian && a.threads == 0,
        "defaults");
  CHECK_MSG(scm_stabpoint_args_check(&a, &err), err,
            "--K, --M and --k1 are required (or --point FILE --index I)",
            "nothing");
  a.K = 3, a.M = 3, a.k1 = 4;
  CHECK_MSG(scm_stabpoint_args_check(&a, &err), err, "--k1 4 exceeds K = 3",
            "k1 > K");
  a.k1 = 1;
  CHECK_MSG(scm_stabpoint_args_check(&a, &err), err, NULL, "a family");
  a.index = 0, a.loss = 0.1;
  CHECK_MSG(scm_stabpoint_args_check(&a, &err), err,
            "give --index or --loss, not both", "index and loss");
  a.point = "fp.json";
  CHECK_MSG(scm_stabpoint_args_check(&a, &err), err,
            "give either --point FILE --index I or --K --M --k1, not both",
            "both forms");
  a.K = a.M = a.k1 = -1;
  CHECK_MSG(scm_stabpoint_args_check(&a, &err), err,
            "--loss selects in a family (--K --M --k1), not in --point files",
            "point, loss");
  a.loss = NAN, a.index = -1;
  CHECK_MSG(scm_stabpoint_args_check(&a, &err), err, "--point needs --index",
            "no index");
  a.index = 2;
  CHECK_MSG(scm_stabpoint_args_check(&a, &err), err, NULL, "point and index");
  scm_stab_opts o;
  scm_stab_opts_default(&o);
  o.eta = 0.02;
  a.d = 7, a.steps = 5, a.trials = 3, a.seed = 9, a.flow = 0, a.hessian = 0;
  CHECK(scm_stabpoint_args_opts(&a, &o, &err) == SCM_OK && o.d == 7 &&
            o.n_steps == 5 && o.n_trials == 3 && o.seed == 9 && !o.run_flow &&
            !o.hessian && o.eta == 0.02,
        "the options: %s", err.msg);
  a.trials = 0;
  CHECK(scm_stabpoint_args_opts(&a, &o, &err) == SCM_EINVAL,
        "0 trials refused");
}

static void test_certify(void) {
  scm_certify_args a;
  scm_error err;
  scm_certify_args_default(&a);
  CHECK(a.k1 == -1 && a.starts == 40 && a.M_min == 1 && a.M_max == 1000000,
        "defaults");
  const char *form =
      "give --K K --M M [--k1 N | --all], or --point FILE --index I | --every "
      "| --minima";
  CHECK_MSG(scm_certify_args_check(&a, &err), err, form, "nothing");
  a.K = 3, a.M = 3, a.k1 = 4;
  CHECK_MSG(scm_certify_args_check(&a, &err), err, "--k1 4 exceeds K = 3",
            "k1 > K");
  a.all = 1;
  CHECK_MSG(scm_certify_args_check(&a, &err), err, form, "k1 and all");
  a.k1 = -1;
  CHECK_MSG(scm_certify_args_check(&a, &err), err, NULL, "all");
  a.dK = 2;
  CHECK_MSG(scm_certify_args_check(&a, &err), err,
            "--M-min, --M-max, --dK and --rows go with --table",
            "dK without a table");
  scm_certify_args_default(&a);
  a.point = "fp.json", a.every = 1;
  CHECK_MSG(scm_certify_args_check(&a, &err), err, NULL, "point, every");
  a.index = 1;
  CHECK_MSG(scm_certify_args_check(&a, &err), err, form,
            "point, every and index");
  a.every = 0, a.minima = 1;
  CHECK_MSG(scm_certify_args_check(&a, &err), err,
            "--minima goes with --point FILE, without --index or --every",
            "minima, index");
  scm_certify_args_default(&a);
  a.table = "t.csv", a.M_min = 9, a.M_max = 4;
  CHECK_MSG(scm_certify_args_check(&a, &err), err,
            "--M-min 9 exceeds --M-max 4", "M range");
  a.M_max = 40, a.point = "fp.json";
  CHECK_MSG(
      scm_certify_args_check(&a, &err), err,
      "--table goes without --point, --index, --all, --every and --minima",
      "table, point");

  /* the table: one certified strict minimum, one saddle, one refused */
  scm_certify_entry e[3];
  memset(e, 0, sizeof e);
  for (int i = 0; i < 3; i++) {
    e[i].K = 4, e[i].M = 3, e[i].k1 = i == 2 ? -1 : i, e[i].index = i;
    snprintf(e[i].ansatz, sizeof e[i].ansatz, "perm");
  }
  e[0].r.certified = e[1].r.certified = 1;
  e[0].r.strict = 1, e[0].r.lambda_lo = 0.03125;
  e[1].r.strict = -1, e[1].r.lambda_neg_hi = -0.5;
  e[0].r.loss_lo = 0.1234567890123456, e[0].r.loss_hi = 0.25,
  e[0].r.radius = 2.5e-9;
  snprintf(e[0].r.verdict, sizeof e[0].r.verdict, "strict minimum");
  snprintf(e[1].r.verdict, sizeof e[1].r.verdict, "saddle");
  snprintf(e[2].r.verdict, sizeof e[2].r.verdict, "not certified");
  snprintf(e[2].r.reason, sizeof e[2].r.reason, "an angle at pi");
  scm_certify_list l = {3, 3, e};
  char *t = scm_certify_list_text(&l);
  CHECK(t != NULL, "no text");
  if (!t)
    return;
  char *line[4] = {t, NULL, NULL, NULL};
  for (int i = 1; i < 4; i++)
    line[i] = strchr(line[i - 1], '\n') + 1;
  CHECK(!strncmp(t, "    K     M   k1  idx ansatz", 28) &&
            strstr(t, "eig(dH)       verdict\n"),
        "header: %s", t);
  CHECK(strstr(line[1], " >0.03125 ") && strstr(line[1], "strict minimum\n") &&
            strstr(line[1], "2.5e-09") &&
            strstr(line[1], "perm       0.123456789012346      0.25   "),
        "minimum row: %s", line[1]);
  CHECK(strstr(line[2], " <-0.5 ") &&
            !strncmp(line[2], "    4     3    1    1 perm", 26),
        "saddle row: %s", line[2]);
  CHECK(!strncmp(line[3], "    4     3    -    2 perm", 26) &&
            strstr(line[3], "not certified: an angle at pi\n"),
        "refused row: %s", line[3]);
  free(t);
}

static void test_split_stair_lintarget(void) {
  scm_split_args a;
  scm_error err;
  scm_split_args_default(&a);
  CHECK_MSG(scm_split_args_check(&a, &err), err, "--neuron r is required",
            "no neuron");
  a.neuron = 0, a.K = 3, a.M = 2;
  CHECK_MSG(scm_split_args_check(&a, &err), err,
            "give --K, --M and one of --k1, --index, --loss; or --point FILE "
            "[--index I] "
            "(without --K, --M, --k1, --loss)",
            "no choice");
  a.k1 = 0;
  CHECK(scm_split_args_check(&a, &err) == SCM_OK && a.grid == 9,
        "grid 9 by default");
  a.nw = 1;
  a.grid = 0;
  CHECK_MSG(scm_split_args_check(&a, &err), err,
            "--weights needs at least 2 daughters", "nw");
  a.nw = 2, a.nl = 1;
  CHECK_MSG(scm_split_args_check(&a, &err), err,
            "give one of --lambda, --lambda-grid, --weights",
            "two sample forms");
  a.nl = 0, a.polish = 1;
  CHECK_MSG(scm_split_args_check(&a, &err), err,
            "--polish applies to --point only", "polish");

  scm_stair_study_opts o;
  scm_stair_study_opts_default(&o);
  CHECK_MSG(scm_stair_study_opts_named(&o, "relu", "gd", 0, 0, 1, &err), err,
            "--K, --M and --alpha are required", "nothing");
  o.K = 2, o.M = 3, o.n_alpha = 1, o.alpha[0] = 1e-3, o.d = 2;
  CHECK_MSG(scm_stair_study_opts_named(&o, "relu", "gd", 0, 0, 1, &err), err,
            "--d 2 is below M = 3", "d < M");
  o.d = 100;
  CHECK_MSG(scm_stair_study_opts_named(&o, "tanh", "gd", 0, 0, 1, &err), err,
            "unknown activation 'tanh' (relu, erf, linear)", "activation");
  CHECK_MSG(scm_stair_study_opts_named(&o, "relu", "stiefel", 0, 0, 1, &err),
            err, "--rule 'stiefel': gd or two_layer", "rule");
  CHECK_MSG(scm_stair_study_opts_named(&o, "relu", "gd", 2, 0, 1, &err), err,
            "--T-diag and --vstar need M = 3 entries (got 2, 0)", "T entries");
  CHECK(scm_stair_study_opts_named(&o, "relu", "two_layer", 3, 0, 5, &err) ==
                SCM_OK &&
            o.act == scm_activation_find("relu") &&
            o.rule == &scm_rule_two_layer && o.threads == 5 &&
            o.vstar[2] == 1.0,
        "named: %s", err.msg);

  scm_lintarget_study_opts lo;
  scm_lintarget_study_opts_default(&lo);
  CHECK(scm_lintarget_study_opts_check(&lo, &err) == SCM_OK, "the defaults");
  lo.alpha[1] = 1.0;
  CHECK_MSG(scm_lintarget_study_opts_check(&lo, &err), err,
            "--alpha values must be in (0, 1) (small initialisation), got 1",
            "alpha 1");
}

static void test_named(void) {
  scm_error err;
  scm_xc_check_opts x;
  scm_xc_check_opts_default(&x);
  CHECK_MSG(scm_xc_check_opts_named(&x, 3, -1, "relu", 2, &err), err,
            "--K and --M are required", "xc: no M");
  CHECK_MSG(scm_xc_check_opts_named(&x, 3, 3, "tanh", 2, &err), err,
            "unknown activation 'tanh' (relu, erf, linear)", "xc: activation");
  for (int m = 0; m < 3; m++)
    CHECK(scm_xc_check_opts_named(&x, 3, 2, "erf", m, &err) == SCM_OK &&
              x.K == 3 && x.M == 2 && x.ode == (m != 1) && x.gd == (m != 0) &&
              x.act == scm_activation_find("erf"),
          "xc: method %d", m);
  scm_fp_table_opts f;
  scm_fp_table_opts_default(&f);
  CHECK_MSG(scm_fp_table_opts_named(&f, "relu", &err), err,
            "--K and --M are required", "fp: no K");
  f.K = f.M = 2;
  CHECK(scm_fp_table_opts_named(&f, "linear", &err) == SCM_OK &&
            f.act == scm_activation_find("linear"),
        "fp: linear");
}

static void test_outputs(void) {
  scm_error err;
  CHECK_MSG(scm_traj_out_check_paths("c.json", "c.json", NULL, &err), err,
            "-o 'c.json' is the config file; name another output",
            "-o = config");
  CHECK_MSG(scm_traj_out_check_paths("c.json", "r.json", "c.json", &err), err,
            "--csv 'c.json' is the config file; name another output",
            "--csv = config");
  CHECK_MSG(scm_traj_out_check_paths("c.json", "r.json", "r.json", &err), err,
            "-o and --csv name the same file 'r.json'", "-o = --csv");
  CHECK(scm_traj_out_check_paths("c.json", "r.json", "t.csv", &err) == SCM_OK,
        "%s", err.msg);
  CHECK(scm_traj_out_check_paths("c.json", "/", NULL, &err) == SCM_EINVAL &&
            !strncmp(err.msg, "-o: ", 4),
        "a directory: %s", err.msg);
  const char *in[] = {"a.json", NULL, "b.json"};
  CHECK_MSG(
      scm_output_check_out("b.json", in, 3, &err), err,
      "the output 'b.json' is also an input or output ('b.json'); refused",
      "out = in");
  CHECK(scm_output_check_out(NULL, in, 3, &err) == SCM_OK &&
            scm_output_check_out("c.json", in, 3, &err) == SCM_OK,
        "no output, another output");

  scm_simulate_study_opts o, d;
  scm_simulate_study_opts_default(&o);
  d = o;
  scm_simulate_study_opts_given(&o, -1, -1, -1, -1, -1.0, -1.0);
  CHECK(o.given == 0 && o.sim.d == d.sim.d && o.seeds == d.seeds &&
            o.t_max == d.t_max,
        "nothing given");
  scm_simulate_study_opts_given(&o, 50, 3, 1, 200, 0.5, 4.0);
  CHECK(o.given == (SCM_SIMULATE_GIVEN_D | SCM_SIMULATE_GIVEN_SEEDS |
                    SCM_SIMULATE_GIVEN_MODE | SCM_SIMULATE_GIVEN_N |
                    SCM_SIMULATE_GIVEN_ETA | SCM_SIMULATE_GIVEN_T_MAX) &&
            o.sim.d == 50 && o.seeds == 3 && o.sim.mode == SCM_SIM_BATCH &&
            o.sim.n == 200 && o.sim.eta == 0.5 && o.t_max == 4.0,
        "everything given");
  char *p[3];
  CHECK(scm_simulate_study_paths("out/x.sim", p, &err) == SCM_OK &&
            !strcmp(p[0], "out/x.sim.json") && !strcmp(p[1], "out/x.sim.csv") &&
            !strcmp(p[2], "out/x.sim.png"),
        "paths");
  for (int i = 0; i < 3; i++)
    free(p[i]);
}

static void test_texts(void) {
  scm_sweep_summary *sum = scm_sweep_summary_alloc(40);
  CHECK(sum != NULL, "no summary");
  if (!sum)
    return;
  const long runs = 37;
  const double secs = 2.96;
  char *plain = scm_sweep_summary_text(sum, 40), *t;
  t = scm_sweep_summary_text_timed(sum, 40, runs, secs, 4, "thread");
  CHECK(plain && t && !strncmp(t, plain, strlen(plain)), "the summary first");
  double rate = 0, per = 0, s = 0;
  long n = 0;
  int w = 0;
  char unit[32] = "";
  CHECK(t && sscanf(t + strlen(plain),
                    "timing %ld runs in %lf s on %d %31[a-z]: %lf runs/s, %lf",
                    &n, &s, &w, unit, &rate, &per) == 6,
        "the timing line: %s", t ? t + strlen(plain) : "");
  CHECK(n == runs && w == 4 && !strcmp(unit, "threads"), "counts: %ld %d %s", n,
        w, unit);
  CHECK_CLOSE(rate, runs / secs, 1e-3, 0.0, "runs per second");
  CHECK_CLOSE(per, secs * 4 / runs, 1e-3, 0.0, "seconds per run (of a unit)");
  free(plain);
  free(t);
  t = scm_sweep_summary_text_timed(sum, 40, 0, 0.0, 1, "rank");
  CHECK(t && strstr(t, "timing     0 runs in 0.000 s on 1 rank: 0.000 runs/s, "
                       "0.0000 s per run\n"),
        "no runs: %s", t);
  free(t);
  scm_sweep_summary_free(sum);

  scm_compare_result res;
  memset(&res, 0, sizeof res);
  scm_error err;
  scm_error_set(&err, SCM_ENOCONV, "no root");
  char buf[600];
  CHECK(!strcmp(scm_compare_failure(&res, &err, buf, sizeof buf), "no root"),
        "a failure");
  res.failed_part = SCM_COMPARE_PART_ENUMERATION;
  res.failed_K = 5;
  CHECK(!strcmp(scm_compare_failure(&res, &err, buf, sizeof buf),
                "K = 5: the family enumeration failed: no root"),
        "the enumeration's: %s", buf);
}

int main(void) {
  gsl_set_error_handler_off();
  test_stabpoint();
  test_certify();
  test_split_stair_lintarget();
  test_named();
  test_outputs();
  test_texts();
  return TEST_SUMMARY();
}
