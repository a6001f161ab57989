/* cmd_run.c: `scm run CONFIG.json`: one trajectory of the (Q, R) flow,
 * a short summary on the terminal and a JSON result file (plus a CSV of
 * the trajectory on request), both written atomically. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_opts.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/config.h"
#include "scm/output.h"
#include "scm/traj.h"
#include "scm_version.h"

#define MAX_SETS 256

static cJSON *result_json(const scm_config *c, const scm_traj_result *r)
{
    const int K = c->K, M = c->M;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "run");
    cJSON_AddStringToObject(root, "status", r->stop == SCM_STOP_FAILED ? "failed" : "ok");
    cJSON_AddStringToObject(root, "stop_reason", scm_stop_reason_str(r->stop));
    if (r->stop == SCM_STOP_FAILED)
        cJSON_AddStringToObject(root, "error", r->err.msg);
    else
        cJSON_AddNullToObject(root, "error");
    cJSON_AddItemToObject(root, "config", cJSON_Duplicate(c->used, 1));
    cJSON *fin = cJSON_AddObjectToObject(root, "final");
    cJSON_AddNumberToObject(fin, "t", r->t);
    cJSON_AddNumberToObject(fin, "eps", r->eps);
    cJSON_AddNumberToObject(fin, "max_abs_F", r->max_F);
    cJSON_AddItemToObject(fin, "Q", scm_output_matrix(r->Q, K, K));
    cJSON_AddItemToObject(fin, "R", scm_output_matrix(r->R, K, M));
    cJSON_AddItemToObject(fin, "v", scm_output_vector(r->v, K));
    cJSON *dead = cJSON_AddArrayToObject(fin, "dead_neurons");
    for (int k = 0; k < K; k++)
        if (r->dead && r->dead[k])
            cJSON_AddItemToArray(dead, cJSON_CreateNumber(k));
    cJSON *st = cJSON_AddObjectToObject(root, "solver");
    cJSON_AddNumberToObject(st, "steps", (double)r->n_steps);
    cJSON_AddNumberToObject(st, "rhs_evals", (double)r->n_rhs);
    cJSON_AddNumberToObject(st, "jac_evals", (double)r->n_jac_evals);
    cJSON_AddNumberToObject(st, "lin_iters", (double)r->n_lin_iters);
    cJSON *tr = cJSON_AddArrayToObject(root, "trajectory");
    for (long i = 0; i < r->n_out; i++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "t", r->out_t[i]);
        cJSON_AddNumberToObject(p, "eps", r->out_eps[i]);
        cJSON_AddItemToObject(p, "Q", scm_output_matrix(r->out_Q + i * K * K, K, K));
        cJSON_AddItemToObject(p, "R", scm_output_matrix(r->out_R + i * K * M, K, M));
        if (c->rule->trains_v)
            cJSON_AddItemToObject(p, "v", scm_output_vector(r->out_v + i * K, K));
        cJSON_AddItemToArray(tr, p);
    }
    return root;
}

/* The trajectory as CSV (*len bytes), NULL on no memory; the caller frees. */
static char *csv_text(const scm_config *c, const scm_traj_result *r, size_t *len_out)
{
    const int K = c->K, M = c->M;
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    int ok = buf != NULL;
    if (ok)
        buf[0] = '\0';
    ok = ok && cli_buf_printf(&buf, &len, &cap, "t,eps");
    for (int k = 0; ok && k < K; k++)
        for (int l = k; ok && l < K; l++)
            ok = cli_buf_printf(&buf, &len, &cap, ",Q_%d_%d", k + 1, l + 1);
    for (int k = 0; ok && k < K; k++)
        for (int n = 0; ok && n < M; n++)
            ok = cli_buf_printf(&buf, &len, &cap, ",R_%d_%d", k + 1, n + 1);
    for (int k = 0; ok && c->rule->trains_v && k < K; k++)
        ok = cli_buf_printf(&buf, &len, &cap, ",v_%d", k + 1);
    ok = ok && cli_buf_printf(&buf, &len, &cap, "\n");
    for (long i = 0; ok && i < r->n_out; i++) {
        const double *Q = r->out_Q + i * K * K, *R = r->out_R + i * K * M;
        ok = cli_buf_printf(&buf, &len, &cap, "%.17g,%.17g", r->out_t[i], r->out_eps[i]);
        for (int k = 0; ok && k < K; k++)
            for (int l = k; ok && l < K; l++)
                ok = cli_buf_printf(&buf, &len, &cap, ",%.17g", Q[k * K + l]);
        for (int k = 0; ok && k < K * M; k++)
            ok = cli_buf_printf(&buf, &len, &cap, ",%.17g", R[k]);
        for (int k = 0; ok && c->rule->trains_v && k < K; k++)
            ok = cli_buf_printf(&buf, &len, &cap, ",%.17g", r->out_v[i * K + k]);
        ok = ok && cli_buf_printf(&buf, &len, &cap, "\n");
    }
    if (!ok) {
        free(buf);
        return NULL;
    }
    *len_out = len;
    return buf;
}

static void summary(const scm_config *c, const scm_traj_result *r, double secs,
                    const char *out, const char *csv)
{
    printf("model      K = %d students, M = %d teachers, %s, T = %s, rule %s\n", c->K, c->M,
           c->act->name, c->T ? "given" : "identity", c->rule->name);
    if (c->init == SCM_INIT_RANDOM)
        printf("init       random: d = %ld, sigma = %g, seed = %lu, scale = %g\n", c->d,
               c->sigma, c->seed, c->scale);
    else
        printf("init       given Q(0), R(0), scale = %g\n", c->scale);
    if (r->n_out > 0)
        printf("eps        %.10g at t = 0  ->  %.10g at t = %.6g\n", r->out_eps[0], r->eps, r->t);
    if (r->stop == SCM_STOP_FAILED)
        printf("stopped    FAILED: %s\n", r->err.msg);
    else
        printf("stopped    %s at t = %.6g (max |dQ/dt, dR/dt| = %.3g)\n",
               scm_stop_reason_str(r->stop), r->t, r->max_F);
    if (r->n_dead > 0)
        printf("dead       %d ReLU student%s fell below dead_tol (final.dead_neurons)\n", r->n_dead,
               r->n_dead > 1 ? "s" : "");
    printf("solver     %ld steps, %ld rhs evaluations, %ld Jacobians, %.3f s\n", r->n_steps,
           r->n_rhs, r->n_jac_evals, secs);
    int show = c->K <= 6 && c->M <= 6;
    if (show) {
        printf("final R   ");
        for (int k = 0; k < c->K; k++) {
            printf(k ? "          " : "");
            for (int n = 0; n < c->M; n++)
                printf(" %9.5f", r->R[k * c->M + n]);
            printf("\n");
        }
        if (c->rule->trains_v) {
            printf("final v   ");
            for (int k = 0; k < c->K; k++)
                printf(" %9.5f", r->v[k]);
            printf("\n");
        }
    }
    printf("wrote      %s%s%s\n", out, csv ? ", " : "", csv ? csv : "");
}

/* The outputs checked before anything is computed: each one a path that
 * may be written (scm_output_check_path), none of them the config or the
 * other output.  1 after printing the reason. */
static int output_conflict(const char *config, const char *out, const char *csv)
{
    scm_error err;
    const char *paths[2] = {out, csv}, *opts[2] = {"-o", "--csv"};
    for (int i = 0; i < 2; i++) {
        if (!paths[i])
            continue;
        if (scm_output_check_path(paths[i], &err)) {
            fprintf(stderr, "scm run: %s: %s\n", opts[i], err.msg);
            return 1;
        }
        if (scm_output_same_file(paths[i], config)) {
            fprintf(stderr, "scm run: %s '%s' is the config file; name another output\n",
                    opts[i], paths[i]);
            return 1;
        }
    }
    if (csv && scm_output_same_file(out, csv)) {
        fprintf(stderr, "scm run: -o and --csv name the same file '%s'\n", out);
        return 1;
    }
    return 0;
}

int scm_cmd_run(int argc, char **argv)
{
    const char *config = NULL, *out = NULL, *csv = NULL, *sets[MAX_SETS], *unsets[MAX_SETS];
    cli_strs pos = {&config, 0, 1}, set = {sets, 0, MAX_SETS}, unset = {unsets, 0, MAX_SETS};
    int quiet = 0;
    const cli_opt opts[] = {
        CLI_O("-o", CLI_STR, &out, 0, 0, "FILE",
              "result file (default: CONFIG's name with .result.json,\nin the current directory)"),
        CLI_O("--csv", CLI_STR, &csv, 0, 0, "FILE", "also write the trajectory as CSV"),
        CLI_OPT_SET(&set), CLI_OPT_UNSET(&unset), CLI_OPT_QUIET(&quiet, "no summary on the terminal"),
        CLI_OPT_END};
    const cli_cmd cmd = {
        "scm run",
        "usage: scm run CONFIG.json [-o RESULT.json] [--csv TRAJ.csv] [--set key=value]...\n"
        "\n"
        "Integrate the order-parameter flow of the configured model from its\n"
        "initial condition until t_max, eps < eps_stop or a fixed point.\n",
        opts, CLI_EXIT_TEXT("0 the run finished, 1 it failed numerically (the result\nfile says why)"),
        &pos, 0};
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    if (!config)
        return cli_usage_error(cmd.me, "CONFIG.json is required");

    scm_error err;
    scm_error_clear(&err);
    scm_config *c = NULL;
    scm_model *m = NULL;
    double *Q0 = NULL, *R0 = NULL;
    char *out_alloc = NULL;
    cJSON *res_json = NULL;
    scm_traj_result r;
    memset(&r, 0, sizeof r);
    int rc = 2;

    if (cli_config_load(cmd.me, config, sets, set.n, unsets, unset.n, &c))
        goto done;
    if (!out)
        out = out_alloc = cli_output_name(config, ".result.json");
    if (out && output_conflict(config, out, csv))
        goto done;
    m = scm_config_model(c, &err);
    Q0 = malloc(sizeof(double) * (size_t)c->K * (size_t)c->K);
    R0 = malloc(sizeof(double) * (size_t)c->K * (size_t)c->M);
    if (!m || !Q0 || !R0 || !out) {
        fprintf(stderr, "scm run: %s: %s\n", config, m ? "out of memory" : err.msg);
        goto done;
    }
    if (scm_config_initial_state(c, m, Q0, R0, &err)) {
        fprintf(stderr, "scm run: %s: %s\n", config, err.msg);
        goto done;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (scm_traj_run(m, c->rule, Q0, R0, &c->traj, &r, &err)) {
        fprintf(stderr, "scm run: %s: %s\n", config, err.msg);
        goto done;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);

    res_json = result_json(c, &r);
    if (!res_json) {
        fprintf(stderr, "scm run: out of memory building the result\n");
        rc = 1;
        goto done;
    }
    const char *paths[2] = {out, csv};
    size_t lens[2] = {0, 0};
    char *texts[2] = {cli_json_text(res_json, 0, &lens[0]), csv ? csv_text(c, &r, &lens[1]) : NULL};
    if (!texts[0] || (csv && !texts[1])) {
        fprintf(stderr, "scm run: out of memory\n");
        rc = 1;
    } else {
        rc = cli_write_files(cmd.me, csv ? 2 : 1, paths, (const char *const *)texts, lens);
    }
    free(texts[0]);
    free(texts[1]);
    if (rc)
        goto done;
    if (!quiet)
        summary(c, &r, secs, out, csv);
    if (r.stop == SCM_STOP_FAILED) {
        fprintf(stderr, "scm run: the run failed: %s (result in %s)\n", r.err.msg, out);
        rc = 1;
    } else {
        rc = 0;
    }
done:
    cJSON_Delete(res_json);
    scm_traj_result_free(&r);
    free(Q0);
    free(R0);
    free(out_alloc);
    scm_model_free(m);
    scm_config_free(c);
    return rc;
}
