/* test_trajout.c: the outputs of one run (trajout.h) read back against the
 * trajectory they were built from, for a rule with and without v (gd,
 * two_layer): the CSV's header and every number (strtod of 17 digits gives
 * the double back exactly), the JSON's final state and trajectory, and the
 * summary's eps line. */
#include <gsl/gsl_errno.h>
#include <stdlib.h>
#include <string.h>

#include "scm/trajout.h"
#include "testutil.h"

static const char *cfg_text =
    "{\"model\": {\"K\": 3, \"M\": 2, \"activation\": \"erf\"},"
    " \"init\": {\"type\": \"random\", \"d\": 500, \"sigma\": 1.0, \"seed\": 7},"
    " \"integrator\": {\"t_max\": 5}}";

/* The CSV row by row against r: count the columns, compare every value. */
static void check_csv(const scm_config *c, const scm_traj_result *r, const char *csv)
{
    const int K = c->K, M = c->M, tv = c->rule->trains_v;
    const int ncol = 2 + K * (K + 1) / 2 + K * M + (tv ? K : 0);
    const char *p = strchr(csv, '\n');
    int commas = 0;
    for (const char *q = csv; q < p; q++)
        commas += *q == ',';
    CHECK(commas + 1 == ncol, "%s: header has %d columns, want %d", c->rule->name, commas + 1,
          ncol);
    CHECK(strncmp(csv, "t,eps,Q_1_1,Q_1_2", 17) == 0, "%s: header '%.40s'", c->rule->name, csv);
    long rows = 0, bad = 0;
    for (p = p + 1; *p; rows++) {
        double want[64];
        const double *Q = r->out_Q + rows * K * K, *R = r->out_R + rows * K * M;
        int n = 0;
        want[n++] = r->out_t[rows];
        want[n++] = r->out_eps[rows];
        for (int k = 0; k < K; k++)
            for (int l = k; l < K; l++)
                want[n++] = Q[k * K + l];
        for (int k = 0; k < K * M; k++)
            want[n++] = R[k];
        for (int k = 0; tv && k < K; k++)
            want[n++] = r->out_v[rows * K + k];
        for (int i = 0; i < n; i++) {
            char *end;
            double x = strtod(p, &end);
            bad += x != want[i] || end == p || *end != (i + 1 < n ? ',' : '\n');
            p = *end ? end + 1 : end;
        }
    }
    CHECK(rows == r->n_out && r->n_out > 2, "%s: %ld rows, want %ld", c->rule->name, rows,
          r->n_out);
    CHECK(bad == 0, "%s: %ld values differ from the trajectory", c->rule->name, bad);
}

static void check_rule(const char *rule)
{
    scm_error err;
    const char *sets[1] = {rule};
    scm_config *c = NULL;
    scm_status st = scm_config_parse(cfg_text, "(test)", sets, 1, &c, &err);
    CHECK(st == SCM_OK, "%s: config: %s", rule, err.msg);
    if (st)
        return;
    scm_model *m = scm_config_model(c, &err);
    double Q0[9], R0[6];
    scm_traj_result r;
    memset(&r, 0, sizeof r);
    st = m ? scm_config_initial_state(c, m, Q0, R0, &err) : SCM_EINVAL;
    if (!st)
        st = scm_traj_run(m, c->rule, Q0, R0, &c->traj, &r, &err);
    CHECK(st == SCM_OK, "%s: run: %s", rule, err.msg);
    size_t len = 0;
    char *csv = st ? NULL : scm_traj_out_csv(c, &r, &len);
    cJSON *js = st ? NULL : scm_traj_out_json(c, &r);
    char *text = st ? NULL : scm_traj_out_text(c, &r, 0.5);
    CHECK(csv && js && text && strlen(csv) == len, "%s: no outputs", rule);
    if (csv && js && text) {
        check_csv(c, &r, csv);
        const cJSON *fin = cJSON_GetObjectItemCaseSensitive(js, "final");
        const cJSON *tr = cJSON_GetObjectItemCaseSensitive(js, "trajectory");
        CHECK(cJSON_GetObjectItemCaseSensitive(fin, "eps")->valuedouble == r.eps &&
                  cJSON_GetArraySize(tr) == r.n_out &&
                  cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tr, 1), "eps")
                          ->valuedouble == r.out_eps[1],
              "%s: the JSON's losses are not the trajectory's", rule);
        CHECK((cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tr, 0), "v") != NULL) ==
                  c->rule->trains_v,
              "%s: v in the trajectory iff the rule trains it", rule);
        char line[200];
        snprintf(line, sizeof line, "eps        %.10g at t = 0  ->  %.10g at t = %.6g\n",
                 r.out_eps[0], r.eps, r.t);
        CHECK(strstr(text, line) && strstr(text, ", 0.500 s\n"),
              "%s: summary lacks the eps line or the time:\n%s", rule, text);
    }
    free(csv);
    free(text);
    cJSON_Delete(js);
    scm_traj_result_free(&r);
    scm_model_free(m);
    scm_config_free(c);
}

int main(void)
{
    gsl_set_error_handler_off();
    check_rule("rule=gd");
    check_rule("rule=two_layer");
    return TEST_SUMMARY();
}
