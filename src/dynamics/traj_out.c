/* traj_out.c: what `scm run` prints and writes for one trajectory
 * (trajout.h): the result object of its JSON file, the trajectory as CSV
 * and the summary, built here so that the CLI and Python only print and
 * write; and the check of its output paths. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/strbuf.h"
#include "scm/output.h"
#include "scm/trajout.h"
#include "scm_version.h"

cJSON *scm_traj_out_json(const scm_config *c, const scm_traj_result *r)
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
    if (r->eps_zeroed) { /* as a sweep record says it (docs/sweeps.md, "Reported losses") */
        cJSON_AddStringToObject(fin, "eps_of", "global_minimum");
        cJSON_AddNumberToObject(fin, "psd_gap", r->eps_proj);
    }
    if (r->max_proj > 0.0) /* a recorded point's loss is that of its realisable state */
        cJSON_AddNumberToObject(fin, "max_psd_gap", r->max_proj);
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
    if (!isnan(r->tail_t)) { /* the tail stage ran (integrator.tail_eps) */
        cJSON_AddNumberToObject(st, "tail_t", r->tail_t);
        cJSON_AddNumberToObject(st, "tail_steps", (double)r->tail_steps);
    }
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

char *scm_traj_out_csv(const scm_config *c, const scm_traj_result *r, size_t *len)
{
    const int K = c->K, M = c->M;
    strbuf b = {NULL, 0, 0, 0};
    sb_printf(&b, "t,eps");
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            sb_printf(&b, ",Q_%d_%d", k + 1, l + 1);
    for (int k = 0; k < K; k++)
        for (int n = 0; n < M; n++)
            sb_printf(&b, ",R_%d_%d", k + 1, n + 1);
    for (int k = 0; c->rule->trains_v && k < K; k++)
        sb_printf(&b, ",v_%d", k + 1);
    sb_printf(&b, "\n");
    for (long i = 0; i < r->n_out && !b.failed; i++) {
        const double *Q = r->out_Q + i * K * K, *R = r->out_R + i * K * M;
        sb_printf(&b, "%.17g,%.17g", r->out_t[i], r->out_eps[i]);
        for (int k = 0; k < K; k++)
            for (int l = k; l < K; l++)
                sb_printf(&b, ",%.17g", Q[k * K + l]);
        for (int k = 0; k < K * M; k++)
            sb_printf(&b, ",%.17g", R[k]);
        for (int k = 0; c->rule->trains_v && k < K; k++)
            sb_printf(&b, ",%.17g", r->out_v[i * K + k]);
        sb_printf(&b, "\n");
    }
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    *len = b.n;
    return b.s;
}

char *scm_traj_out_text(const scm_config *c, const scm_traj_result *r, double secs)
{
    strbuf sb = {NULL, 0, 0, 0};
    strbuf *b = &sb;
    sb_printf(b, "model      K = %d students, M = %d teachers, %s, T = %s, rule %s\n", c->K, c->M,
              c->act->name, c->T ? "given" : "identity", c->rule->name);
    if (c->init == SCM_INIT_RANDOM)
        sb_printf(b, "init       random: d = %ld, sigma = %g, seed = %lu, scale = %g\n", c->d,
                  c->sigma, c->seed, c->scale);
    else
        sb_printf(b, "init       given Q(0), R(0), scale = %g\n", c->scale);
    if (r->n_out > 0)
        sb_printf(b, "eps        %.10g at t = 0  ->  %.10g at t = %.6g\n", r->out_eps[0], r->eps,
                  r->t);
    if (r->stop == SCM_STOP_FAILED)
        sb_printf(b, "stopped    FAILED: %s\n", r->err.msg);
    else
        sb_printf(b, "stopped    %s at t = %.6g (max |dQ/dt, dR/dt| = %.3g)\n",
                  scm_stop_reason_str(r->stop), r->t, r->max_F);
    if (r->n_dead > 0)
        sb_printf(b, "dead       %d ReLU student%s fell below dead_tol (final.dead_neurons)\n",
                  r->n_dead, r->n_dead > 1 ? "s" : "");
    sb_printf(b, "solver     %ld steps, %ld rhs evaluations, %ld Jacobians, %.3f s\n", r->n_steps,
              r->n_rhs, r->n_jac_evals, secs);
    int show = c->K <= 6 && c->M <= 6;
    if (show) {
        sb_printf(b, "final R   ");
        for (int k = 0; k < c->K; k++) {
            sb_printf(b, "%s", k ? "          " : "");
            for (int n = 0; n < c->M; n++)
                sb_printf(b, " %9.5f", r->R[k * c->M + n]);
            sb_printf(b, "\n");
        }
        if (c->rule->trains_v) {
            sb_printf(b, "final v   ");
            for (int k = 0; k < c->K; k++)
                sb_printf(b, " %9.5f", r->v[k]);
            sb_printf(b, "\n");
        }
    }
    if (sb.failed) {
        free(sb.s);
        return NULL;
    }
    return sb.s;
}

scm_status scm_traj_out_check_paths(const char *config, const char *out, const char *csv,
                                    scm_error *err)
{
    const char *paths[2] = {out, csv}, *opts[2] = {"-o", "--csv"};
    for (int i = 0; i < 2; i++) {
        if (!paths[i])
            continue;
        if (scm_output_check_path(paths[i], err)) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            return scm_error_set(err, SCM_EINVAL, "%s: %s", opts[i], why);
        }
        if (scm_output_same_file(paths[i], config))
            return scm_error_set(err, SCM_EINVAL,
                                 "%s '%s' is the config file; name another output", opts[i],
                                 paths[i]);
    }
    if (csv && scm_output_same_file(out, csv))
        return scm_error_set(err, SCM_EINVAL, "-o and --csv name the same file '%s'", out);
    return SCM_OK;
}
