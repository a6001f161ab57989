/* simulate_study_out.c: what a study of `scm simulate` writes (simulate.h):
 * the result object (parameters, each seed's network and ODE records side
 * by side, the statistics across seeds) and the CSV that
 * scripts/plot_simulate.py draws, and their names.  Kept apart from the running of the
 * seeds (simulate_study.c): the formats change for readers, the runs for
 * the numerics. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/output.h"
#include "scm/simulate.h"
#include "scm_version.h"

static cJSON *side_json(double t, double eps, const double *Q, const double *R, const double *v,
                        int K, int M)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "t", t);
    cJSON_AddNumberToObject(o, "eps", eps);
    cJSON_AddItemToObject(o, "Q", scm_output_matrix(Q, K, K));
    cJSON_AddItemToObject(o, "R", scm_output_matrix(R, K, M));
    if (v)
        cJSON_AddItemToObject(o, "v", scm_output_vector(v, K));
    return o;
}

static cJSON *params_json(const scm_simulate_study_opts *p, const char *rule)
{
    static const char *const cons[] = {"none", "sphere", "stiefel"};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "rule", rule);
    cJSON_AddStringToObject(o, "mode", p->sim.mode == SCM_SIM_BATCH ? "batch" : "online");
    cJSON_AddNumberToObject(o, "d", (double)p->sim.d);
    cJSON_AddNumberToObject(o, "seeds", p->seeds);
    if (p->sim.mode == SCM_SIM_BATCH)
        cJSON_AddNumberToObject(o, "n", (double)p->sim.n);
    cJSON_AddNumberToObject(o, "eta", p->sim.eta);
    cJSON_AddNumberToObject(o, "eta_v_ratio", p->sim.eta_v_ratio);
    cJSON_AddNumberToObject(o, "noise", p->sim.noise);
    cJSON_AddStringToObject(o, "constraint", cons[p->sim.constraint]);
    cJSON_AddNumberToObject(o, "t_max", p->t_max);
    return o;
}

static cJSON *seed_json(const scm_simulate_seed *r, int K, int M)
{
    const long KK = (long)K * K, KM = (long)K * M;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "init_seed", (double)r->init_seed);
    cJSON_AddNumberToObject(o, "sample_seed", (double)scm_simulate_sample_seed(r->init_seed));
    cJSON_AddNumberToObject(o, "steps", (double)r->steps);
    cJSON_AddStringToObject(o, "ode_stop_reason", scm_stop_reason_str(r->ode_stop));
    if (r->error[0])
        cJSON_AddStringToObject(o, "error", r->error);
    else
        cJSON_AddNullToObject(o, "error");
    cJSON *tr = cJSON_AddArrayToObject(o, "trajectory");
    for (long i = 0; i < r->n; i++) {
        cJSON *pt = cJSON_CreateObject();
        cJSON_AddItemToObject(pt, "sim", side_json(r->t_sim[i], r->eps_sim[i], r->Q_sim + i * KK,
                                                   r->R_sim + i * KM, r->v_sim + i * K, K, M));
        cJSON_AddItemToObject(pt, "ode", side_json(r->t[i], r->eps_ode[i], r->Q_ode + i * KK,
                                                   r->R_ode + i * KM, r->v_ode + i * K, K, M));
        cJSON_AddItemToArray(tr, pt);
    }
    return o;
}

cJSON *scm_simulate_study_json(const scm_simulate_study *s, const scm_simulate_result *res)
{
    const scm_config *c = s->config;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "simulate");
    cJSON_AddStringToObject(root, "status", res->failed ? "failed" : "ok");
    cJSON_AddItemToObject(root, "config", cJSON_Duplicate(c->used, 1));
    cJSON_AddItemToObject(root, "simulate", params_json(&s->opts, c->rule->name));
    cJSON *seeds = cJSON_AddArrayToObject(root, "seeds");
    for (int i = 0; i < res->seeds; i++)
        cJSON_AddItemToArray(seeds, seed_json(res->runs + i, res->K, res->M));
    cJSON *sum = cJSON_AddArrayToObject(root, "summary");
    for (long i = 0; i < res->n_stats; i++) {
        const scm_simulate_stat *st = res->stats + i;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "t", st->t);
        cJSON_AddNumberToObject(o, "seeds", st->seeds);
        cJSON_AddNumberToObject(o, "eps_diff_mean", st->eps_diff_mean);
        cJSON_AddNumberToObject(o, "eps_diff_se", st->eps_diff_se);
        cJSON_AddNumberToObject(o, "state_dev_rms", st->state_dev_rms);
        cJSON_AddItemToArray(sum, o);
    }
    return root;
}

/* ------------------------------------------------------------------ the CSV */

/* Append printf output to the growing buffer *b (*len used of *cap); 0 on
 * no memory. */
static int buf_printf(char **b, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*b + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return 0;
        if ((size_t)n < *cap - *len) {
            *len += (size_t)n;
            return 1;
        }
        size_t nc = *cap * 2 + (size_t)n;
        char *nb = realloc(*b, nc);
        if (!nb)
            return 0;
        *b = nb;
        *cap = nc;
    }
}

/* One CSV row: seed,source,t,eps, upper triangle of Q, R row by row, v. */
static int csv_row(char **b, size_t *len, size_t *cap, unsigned long seed, const char *src,
                   double t, double eps, const double *Q, const double *R, const double *v,
                   int K, int M)
{
    int ok = buf_printf(b, len, cap, "%lu,%s,%.17g,%.17g", seed, src, t, eps);
    for (int k = 0; ok && k < K; k++)
        for (int l = k; ok && l < K; l++)
            ok = buf_printf(b, len, cap, ",%.17g", Q[k * K + l]);
    for (int j = 0; ok && j < K * M; j++)
        ok = buf_printf(b, len, cap, ",%.17g", R[j]);
    for (int k = 0; ok && k < K; k++)
        ok = buf_printf(b, len, cap, ",%.17g", v[k]);
    return ok && buf_printf(b, len, cap, "\n");
}

char *scm_simulate_study_csv(const scm_simulate_study *s, const scm_simulate_result *res,
                             size_t *len)
{
    (void)s;
    const int K = res->K, M = res->M;
    const long KK = (long)K * K, KM = (long)K * M;
    size_t cap = 1 << 16;
    *len = 0;
    char *b = malloc(cap);
    int ok = b && buf_printf(&b, len, &cap, "seed,source,t,eps");
    for (int k = 0; ok && k < K; k++)
        for (int l = k; ok && l < K; l++)
            ok = buf_printf(&b, len, &cap, ",Q_%d_%d", k + 1, l + 1);
    for (int k = 0; ok && k < K; k++)
        for (int n = 0; ok && n < M; n++)
            ok = buf_printf(&b, len, &cap, ",R_%d_%d", k + 1, n + 1);
    for (int k = 0; ok && k < K; k++)
        ok = buf_printf(&b, len, &cap, ",v_%d", k + 1);
    ok = ok && buf_printf(&b, len, &cap, "\n");
    for (int i = 0; ok && i < res->seeds; i++) {
        const scm_simulate_seed *r = res->runs + i;
        for (long j = 0; ok && j < r->n; j++)
            ok = csv_row(&b, len, &cap, r->init_seed, "sim", r->t_sim[j], r->eps_sim[j],
                         r->Q_sim + j * KK, r->R_sim + j * KM, r->v_sim + j * K, K, M) &&
                 csv_row(&b, len, &cap, r->init_seed, "ode", r->t[j], r->eps_ode[j],
                         r->Q_ode + j * KK, r->R_ode + j * KM, r->v_ode + j * K, K, M);
    }
    if (!ok) {
        free(b);
        return NULL;
    }
    return b;
}

scm_status scm_simulate_study_paths(const char *prefix, char *paths[3], scm_error *err)
{
    static const char *const ext[3] = {".json", ".csv", ".png"};
    size_t n = strlen(prefix);
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        size_t e = strlen(ext[i]);
        if ((paths[i] = malloc(n + e + 1))) {
            memcpy(paths[i], prefix, n);
            memcpy(paths[i] + n, ext[i], e + 1);
        }
        ok = ok && paths[i];
    }
    for (int i = 0; !ok && i < 3; i++) {
        free(paths[i]);
        paths[i] = NULL;
    }
    return ok ? SCM_OK : scm_error_set(err, SCM_ENOMEM, "out of memory");
}
