/* cmd_simulate.c (CLI): `scm simulate`, a finite-d network trained in weight
 * space (scm_sim) beside the ODE (scm_traj_run) from the same realised
 * initial overlaps, for several seeds; writes PREFIX.json, PREFIX.csv and,
 * when python3 with matplotlib is there, PREFIX.png (docs/simulate.md).
 *
 * The config is that of `scm run` plus an optional "simulate" section, which
 * is taken out before the rest is parsed by scm_config_parse. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "scm/config.h"
#include "scm/output.h"
#include "scm/simulate.h"
#include "scm/traj.h"
#include "scm_version.h"

#define ME "scm simulate"
#define MAX_SETS 64
#define MAX_SEEDS 1000

typedef struct {
    scm_sim_opts o;
    int seeds;
    double t_max;
    int have_eta; /* eta given (else the mode's default) */
} sim_params;

/* One seed's records at the n output times: sim and ODE side by side. */
typedef struct {
    unsigned long init_seed;
    long n;
    double *t, *t_sim;
    double *eps_sim, *Q_sim, *R_sim, *v_sim;
    double *eps_ode, *Q_ode, *R_ode, *v_ode;
    scm_stop_reason ode_stop;
    char error[600];  /* empty when both sides ran to the end */
    double secs_sim, secs_ode;
    long steps;
} seed_run;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: scm simulate CONFIG.json [--d D] [--seeds S] [--mode online|batch] [--n N]\n"
            "                    [--eta ETA] [--t-max T] [-o PREFIX] [--set key=value]...\n"
            "                    [--threads T] [--no-plot] [-q]\n"
            "\n"
            "Train a real network of dimension D (one-pass SGD on fresh Gaussian samples, or\n"
            "full-batch GD on N fixed samples) with the config's rule from S seeds, and the\n"
            "ODE from each seed's realised Q(0), R(0); write PREFIX.json, PREFIX.csv and\n"
            "PREFIX.png (the plot needs python3 with matplotlib).  The options override the\n"
            "config's \"simulate\" section: d (1000), seeds (4), mode (online), n, eta\n"
            "(online 0.05, batch 0.02 d), t_max (10).  Time is tau = eta t / d.  Seeds run\n"
            "on T threads (default 1); the output does not depend on T.\n");
}

/* ------------------------------------------------------------ the simulate section */

static int bad(const char *what, const char *key, const char *need)
{
    fprintf(stderr, "%s: %s: 'simulate.%s' must be %s\n", ME, what, key, need);
    return -1;
}

/* Parse the "simulate" section (may be NULL) into p; -1 after a message. */
static int parse_section(const cJSON *sec, const char *path, sim_params *p)
{
    if (!sec)
        return 0;
    if (!cJSON_IsObject(sec))
        return fprintf(stderr, "%s: %s: 'simulate' must be an object\n", ME, path), -1;
    for (const cJSON *it = sec->child; it; it = it->next) {
        const char *k = it->string;
        const double x = it->valuedouble;
        const int num = cJSON_IsNumber(it), integral = num && x == floor(x);
        if (strcmp(k, "d") == 0) {
            if (!integral || x < 1 || x > 1e8)
                return bad(path, k, "an integer in [1, 1e8]");
            p->o.d = (long)x;
        } else if (strcmp(k, "seeds") == 0) {
            if (!integral || x < 1 || x > MAX_SEEDS)
                return bad(path, k, "an integer in [1, 1000]");
            p->seeds = (int)x;
        } else if (strcmp(k, "n") == 0) {
            if (!integral || x < 1 || x > 1e9)
                return bad(path, k, "an integer in [1, 1e9]");
            p->o.n = (long)x;
        } else if (strcmp(k, "eta") == 0) {
            if (!num || !(x > 0.0) || !isfinite(x))
                return bad(path, k, "a positive number");
            p->o.eta = x;
            p->have_eta = 1;
        } else if (strcmp(k, "t_max") == 0) {
            if (!num || !(x > 0.0) || !isfinite(x))
                return bad(path, k, "a positive number");
            p->t_max = x;
        } else if (strcmp(k, "mode") == 0) {
            const char *s = cJSON_GetStringValue(it);
            if (s && strcmp(s, "online") == 0)
                p->o.mode = SCM_SIM_ONLINE;
            else if (s && strcmp(s, "batch") == 0)
                p->o.mode = SCM_SIM_BATCH;
            else
                return bad(path, k, "\"online\" or \"batch\"");
        } else {
            fprintf(stderr, "%s: %s: unknown key 'simulate.%s' (known: d, seeds, mode, n, eta, "
                    "t_max)\n", ME, path, k);
            return -1;
        }
    }
    return 0;
}

/* The weight-space form of the config's rule: its constraint and trained
 * layers (docs/simulate.md, section 1).  -1 after a message for a rule the
 * simulator does not know. */
static int rule_params(const scm_config *c, sim_params *p)
{
    const char *r = c->rule->name;
    p->o.constraint = SCM_SIM_FREE;
    p->o.eta_v_ratio = 0.0;
    if (strcmp(r, "gd") == 0)
        return 0;
    if (strcmp(r, "normalised") == 0) {
        p->o.constraint = SCM_SIM_SPHERE;
        return 0;
    }
    if (strcmp(r, "stiefel") == 0) {
        p->o.constraint = SCM_SIM_STIEFEL;
        return 0;
    }
    if (strcmp(r, "two_layer") == 0) {
        p->o.eta_v_ratio = c->traj.rule_params.lr_v_ratio;
        return 0;
    }
    if (strcmp(r, "sgd") == 0) {
        /* The ODE is that of the simulation's own learning rate. */
        const scm_rule_params *rp = &c->traj.rule_params;
        if (p->o.mode == SCM_SIM_BATCH) {
            fprintf(stderr, "%s: rule sgd is one-pass online SGD: --mode batch does not follow "
                    "it (full-batch GD follows gd or two_layer)\n", ME);
            return -1;
        }
        if (!(rp->eta > 0.0)) {
            fprintf(stderr, "%s: rule sgd needs 'rule_params.eta' > 0 to be simulated (eta = 0 "
                    "is the gradient flow: simulate rule gd or two_layer)\n", ME);
            return -1;
        }
        if (p->have_eta && p->o.eta != rp->eta) {
            fprintf(stderr, "%s: the simulation's eta = %g differs from rule_params.eta = %g "
                    "(rule sgd: give one of them)\n", ME, p->o.eta, rp->eta);
            return -1;
        }
        p->o.eta = rp->eta;
        p->o.eta_v_ratio = rp->lr_v_ratio;
        p->o.noise = rp->noise;
        return 0;
    }
    fprintf(stderr, "%s: the simulator has no weight-space form of rule '%s'\n", ME, r);
    return -1;
}

/* Load the config (with the simulate section taken out), apply the options.
 * Returns 0, or 2 after a message. */
static int load(const char *path, const char *const *sets, int nsets, const sim_params *cli,
                const int *given, sim_params *p, scm_config **c)
{
    cJSON *root = cli_read_json(path);
    if (!root) {
        fprintf(stderr, "%s: cannot read '%s' as JSON\n", ME, path);
        return 2;
    }
    cJSON *sec = cJSON_DetachItemFromObjectCaseSensitive(root, "simulate");
    /* --set simulate.KEY=VALUE goes to the section, the others to the config. */
    const char *rest[MAX_SETS];
    int nrest = 0, rc = 0;
    for (int i = 0; i < nsets && !rc; i++) {
        const char *eq = strchr(sets[i], '=');
        if (strncmp(sets[i], "simulate.", 9) != 0 || !eq) {
            rest[nrest++] = sets[i];
            continue;
        }
        char key[64];
        const size_t kl = (size_t)(eq - sets[i]) - 9;
        snprintf(key, sizeof key, "%.*s", (int)(kl < sizeof key ? kl : sizeof key - 1),
                 sets[i] + 9);
        cJSON *val = cJSON_Parse(eq + 1);
        if (!val)
            val = cJSON_CreateString(eq + 1);
        if (!sec || !cJSON_IsObject(sec)) {
            cJSON_Delete(sec);
            sec = cJSON_CreateObject();
        }
        cJSON_DeleteItemFromObjectCaseSensitive(sec, key);
        if (!sec || !val || !cJSON_AddItemToObject(sec, key, val))
            rc = 2;
    }
    rc = rc || parse_section(sec, path, p) ? 2 : 0;
    cJSON_Delete(sec);
    char *text = rc ? NULL : scm_output_print(root, 1);
    cJSON_Delete(root);
    if (rc)
        return rc;
    scm_error err;
    scm_error_clear(&err);
    if (!text || scm_config_parse(text, path, rest, nrest, c, &err)) {
        fprintf(stderr, "%s: %s\n", ME, text ? err.msg : "out of memory");
        free(text);
        return 2;
    }
    free(text);
    if (given[0])
        p->o.d = cli->o.d;
    if (given[1])
        p->seeds = cli->seeds;
    if (given[2])
        p->o.mode = cli->o.mode;
    if (given[3])
        p->o.n = cli->o.n;
    if (given[4])
        p->o.eta = cli->o.eta, p->have_eta = 1;
    if (given[5])
        p->t_max = cli->t_max;
    if (!p->have_eta)
        p->o.eta = p->o.mode == SCM_SIM_BATCH ? 0.02 * (double)p->o.d : 0.05;
    if (rule_params(*c, p))
        return 2;
    if (p->o.mode == SCM_SIM_BATCH && p->o.n < 1) {
        fprintf(stderr, "%s: batch mode needs the number of samples: --n N or 'simulate.n'\n",
                ME);
        return 2;
    }
    if ((*c)->init == SCM_INIT_RANDOM && (*c)->d != p->o.d) {
        /* The initial state is drawn in the simulation's dimension. */
        (*c)->d = p->o.d;
        cJSON *init = cJSON_GetObjectItemCaseSensitive((*c)->used, "init");
        if (init)
            cJSON_ReplaceItemInObjectCaseSensitive(init, "d", cJSON_CreateNumber((double)p->o.d));
    }
    return 0;
}

/* ------------------------------------------------------------------ one seed */

/* The sample stream's seed: a splitmix64 step of the init seed, so that the
 * samples of seed s are not the numbers that drew its initial state. */
static unsigned long sample_seed(unsigned long s)
{
    unsigned long long z = (unsigned long long)s + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (unsigned long)((z ^ (z >> 31)) & 0xffffffffUL);
}

static void seed_run_free(seed_run *r)
{
    free(r->t);
    free(r->t_sim);
    free(r->eps_sim);
    free(r->Q_sim);
    free(r->R_sim);
    free(r->v_sim);
    free(r->eps_ode);
    free(r->Q_ode);
    free(r->R_ode);
    free(r->v_ode);
}

static int seed_run_alloc(seed_run *r, long n, int K, int M)
{
    const size_t KK = (size_t)K * (size_t)K, KM = (size_t)K * (size_t)M, nn = (size_t)n;
    r->n = n;
    r->t = calloc(nn, sizeof(double));
    r->t_sim = calloc(nn, sizeof(double));
    r->eps_sim = calloc(nn, sizeof(double));
    r->eps_ode = calloc(nn, sizeof(double));
    r->Q_sim = calloc(nn * KK, sizeof(double));
    r->Q_ode = calloc(nn * KK, sizeof(double));
    r->R_sim = calloc(nn * KM, sizeof(double));
    r->R_ode = calloc(nn * KM, sizeof(double));
    r->v_sim = calloc(nn * (size_t)K, sizeof(double));
    r->v_ode = calloc(nn * (size_t)K, sizeof(double));
    return r->t && r->t_sim && r->eps_sim && r->eps_ode && r->Q_sim && r->Q_ode && r->R_sim &&
           r->R_ode && r->v_sim && r->v_ode;
}

/* Simulate seed number s and integrate its ODE.  Returns 0 (r filled; a
 * numerical failure of either side is in r->error and the records stop
 * there), 1 on no memory, 2 after a message for bad input. */
static int run_seed(const scm_config *cfg, const scm_model *m, const sim_params *p, int s,
                    seed_run *r)
{
    /* A shallow copy with this seed's init seed (threads share cfg). */
    scm_config cc = *cfg, *c = &cc;
    const int K = c->K, M = c->M;
    double *Q0 = malloc(sizeof(double) * (size_t)K * (size_t)K);
    double *R0 = malloc(sizeof(double) * (size_t)K * (size_t)M);
    scm_sim *sim = NULL;
    scm_traj_result tr;
    memset(&tr, 0, sizeof tr);
    scm_error err;
    scm_error_clear(&err);
    int rc = 2;
    r->init_seed = cfg->seed + (unsigned long)s;
    c->seed = r->init_seed;
    scm_status st = Q0 && R0 ? scm_config_initial_state(c, m, Q0, R0, &err) : SCM_ENOMEM;
    scm_sim_opts o = p->o;
    o.seed = sample_seed(r->init_seed);
    if (st || !(sim = scm_sim_alloc(m, &o, Q0, R0, &err))) {
        fprintf(stderr, "%s: seed %lu: %s\n", ME, r->init_seed, Q0 ? err.msg : "out of memory");
        goto done;
    }
    /* The ODE starts from the realised (retracted) overlaps. */
    if (scm_sim_state(sim, Q0, R0, NULL, NULL, &err)) {
        fprintf(stderr, "%s: seed %lu: %s\n", ME, r->init_seed, err.msg);
        goto done;
    }
    scm_traj_opts to = c->traj;
    to.t_max = p->t_max;
    to.eps_stop = 0.0;
    to.grad_stop = 0.0;
    to.record = 1;
    double t0 = cli_now();
    if (scm_traj_run(m, c->rule, Q0, R0, &to, &tr, &err)) {
        fprintf(stderr, "%s: seed %lu: the ODE: %s\n", ME, r->init_seed, err.msg);
        goto done;
    }
    r->secs_ode = cli_now() - t0;
    r->ode_stop = tr.stop;
    if (tr.stop == SCM_STOP_FAILED)
        snprintf(r->error, sizeof r->error, "the ODE failed at t = %g: %s", tr.t, tr.err.msg);
    rc = 1;
    if (!seed_run_alloc(r, tr.n_out, K, M))
        goto done;
    rc = 0;
    t0 = cli_now();
    for (long i = 0; i < tr.n_out; i++) {
        const size_t KK = (size_t)K * (size_t)K, KM = (size_t)K * (size_t)M;
        r->t[i] = tr.out_t[i];
        r->eps_ode[i] = tr.out_eps[i];
        memcpy(r->Q_ode + i * KK, tr.out_Q + i * KK, sizeof(double) * KK);
        memcpy(r->R_ode + i * KM, tr.out_R + i * KM, sizeof(double) * KM);
        memcpy(r->v_ode + i * K, tr.out_v + i * K, sizeof(double) * (size_t)K);
        if ((st = scm_sim_advance(sim, tr.out_t[i], &err)) ||
            (st = scm_sim_state(sim, r->Q_sim + i * KK, r->R_sim + i * KM, r->v_sim + i * K,
                                r->eps_sim + i, &err))) {
            snprintf(r->error, sizeof r->error, "the simulation failed: %s", err.msg);
            r->n = i;
            break;
        }
        r->t_sim[i] = scm_sim_time(sim);
    }
    r->secs_sim = cli_now() - t0;
    r->steps = scm_sim_steps(sim);
done:
    scm_traj_result_free(&tr);
    scm_sim_free(sim);
    free(Q0);
    free(R0);
    return rc;
}

/* Seeds t, t + T, ... of a run with T threads (the results do not depend on
 * T: every seed has its own generators). */
typedef struct {
    const scm_config *c;
    const scm_model *m;
    const sim_params *p;
    seed_run *runs;
    int *rcs;
    int t, T;
} seed_job;

static void *seed_worker(void *arg)
{
    seed_job *j = arg;
    for (int s = j->t; s < j->p->seeds; s += j->T)
        if ((j->rcs[s] = run_seed(j->c, j->m, j->p, s, j->runs + s)))
            break;
    return NULL;
}

/* All seeds on up to T threads; the first non-zero run_seed status in seed
 * order, or 0. */
static int run_seeds(const scm_config *c, const scm_model *m, const sim_params *p, int T,
                     seed_run *runs)
{
    T = T < p->seeds ? T : p->seeds;
    int *rcs = calloc((size_t)p->seeds, sizeof *rcs);
    seed_job *jobs = calloc((size_t)T, sizeof *jobs);
    pthread_t *th = calloc((size_t)T, sizeof *th);
    char *created = calloc((size_t)T, 1);
    int rc = !rcs || !jobs || !th || !created;
    for (int t = 0; !rc && t < T; t++) {
        jobs[t] = (seed_job){c, m, p, runs, rcs, t, T};
        created[t] = t > 0 && pthread_create(&th[t], NULL, seed_worker, &jobs[t]) == 0;
    }
    for (int t = 0; !rc && t < T; t++) {
        if (created[t])
            pthread_join(th[t], NULL);
        else
            seed_worker(&jobs[t]); /* thread 0, or a thread that could not start */
    }
    for (int s = 0; !rc && s < p->seeds; s++)
        rc = rcs[s];
    free(rcs);
    free(jobs);
    free(th);
    free(created);
    return rc;
}

/* ------------------------------------------------------------------ output */

/* Over the seeds that reached output i: mean and standard error of
 * eps_sim - eps_ode, and the root mean square over seeds of the largest
 * deviation of an entry of Q, R or v.  0 when no seed reached it. */
static int stats_at(const seed_run *runs, int S, long i, int K, int M, double *mean,
                    double *se, double *rms)
{
    const long KK = (long)K * K, KM = (long)K * M;
    double s1 = 0.0, s2 = 0.0, sq = 0.0;
    int n = 0;
    for (int s = 0; s < S; s++) {
        const seed_run *r = runs + s;
        if (i >= r->n)
            continue;
        const double e = r->eps_sim[i] - r->eps_ode[i];
        double dev = 0.0;
        for (long j = 0; j < KK; j++)
            dev = fmax(dev, fabs(r->Q_sim[i * KK + j] - r->Q_ode[i * KK + j]));
        for (long j = 0; j < KM; j++)
            dev = fmax(dev, fabs(r->R_sim[i * KM + j] - r->R_ode[i * KM + j]));
        for (long j = 0; j < K; j++)
            dev = fmax(dev, fabs(r->v_sim[i * K + j] - r->v_ode[i * K + j]));
        s1 += e;
        s2 += e * e;
        sq += dev * dev;
        n++;
    }
    if (n == 0)
        return 0;
    *mean = s1 / n;
    *se = n > 1 ? sqrt(fmax(s2 - s1 * s1 / n, 0.0) / (n - 1) / n) : NAN;
    *rms = sqrt(sq / n);
    return n;
}

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

static cJSON *params_json(const sim_params *p, const char *rule)
{
    static const char *const cons[] = {"none", "sphere", "stiefel"};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "rule", rule);
    cJSON_AddStringToObject(o, "mode", p->o.mode == SCM_SIM_BATCH ? "batch" : "online");
    cJSON_AddNumberToObject(o, "d", (double)p->o.d);
    cJSON_AddNumberToObject(o, "seeds", p->seeds);
    if (p->o.mode == SCM_SIM_BATCH)
        cJSON_AddNumberToObject(o, "n", (double)p->o.n);
    cJSON_AddNumberToObject(o, "eta", p->o.eta);
    cJSON_AddNumberToObject(o, "eta_v_ratio", p->o.eta_v_ratio);
    cJSON_AddNumberToObject(o, "noise", p->o.noise);
    cJSON_AddStringToObject(o, "constraint", cons[p->o.constraint]);
    cJSON_AddNumberToObject(o, "t_max", p->t_max);
    return o;
}

static cJSON *result_json(const scm_config *c, const sim_params *p, const seed_run *runs,
                          int failed)
{
    const int K = c->K, M = c->M, S = p->seeds;
    const long KK = (long)K * K, KM = (long)K * M;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "simulate");
    cJSON_AddStringToObject(root, "status", failed ? "failed" : "ok");
    cJSON_AddItemToObject(root, "config", cJSON_Duplicate(c->used, 1));
    cJSON_AddItemToObject(root, "simulate", params_json(p, c->rule->name));
    cJSON *seeds = cJSON_AddArrayToObject(root, "seeds");
    long nmax = 0;
    for (int s = 0; s < S; s++) {
        const seed_run *r = runs + s;
        nmax = r->n > nmax ? r->n : nmax;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "init_seed", (double)r->init_seed);
        cJSON_AddNumberToObject(o, "sample_seed", (double)sample_seed(r->init_seed));
        cJSON_AddNumberToObject(o, "steps", (double)r->steps);
        cJSON_AddStringToObject(o, "ode_stop_reason", scm_stop_reason_str(r->ode_stop));
        if (r->error[0])
            cJSON_AddStringToObject(o, "error", r->error);
        else
            cJSON_AddNullToObject(o, "error");
        cJSON *tr = cJSON_AddArrayToObject(o, "trajectory");
        for (long i = 0; i < r->n; i++) {
            cJSON *pt = cJSON_CreateObject();
            cJSON_AddItemToObject(pt, "sim", side_json(r->t_sim[i], r->eps_sim[i],
                                                       r->Q_sim + i * KK, r->R_sim + i * KM,
                                                       r->v_sim + i * K, K, M));
            cJSON_AddItemToObject(pt, "ode", side_json(r->t[i], r->eps_ode[i], r->Q_ode + i * KK,
                                                       r->R_ode + i * KM, r->v_ode + i * K, K, M));
            cJSON_AddItemToArray(tr, pt);
        }
        cJSON_AddItemToArray(seeds, o);
    }
    cJSON *sum = cJSON_AddArrayToObject(root, "summary");
    for (long i = 0; i < nmax; i++) {
        double mean, se, rms;
        const int n = stats_at(runs, S, i, K, M, &mean, &se, &rms);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "t", runs[0].n > i ? runs[0].t[i] : NAN);
        cJSON_AddNumberToObject(o, "seeds", n);
        cJSON_AddNumberToObject(o, "eps_diff_mean", mean);
        cJSON_AddNumberToObject(o, "eps_diff_se", se);
        cJSON_AddNumberToObject(o, "state_dev_rms", rms);
        cJSON_AddItemToArray(sum, o);
    }
    return root;
}

/* One CSV row: seed,source,t,eps, upper triangle of Q, R row by row, v. */
static int csv_row(char **b, size_t *len, size_t *cap, unsigned long seed, const char *src,
                   double t, double eps, const double *Q, const double *R, const double *v,
                   int K, int M)
{
    int ok = cli_buf_printf(b, len, cap, "%lu,%s,%.17g,%.17g", seed, src, t, eps);
    for (int k = 0; ok && k < K; k++)
        for (int l = k; ok && l < K; l++)
            ok = cli_buf_printf(b, len, cap, ",%.17g", Q[k * K + l]);
    for (int j = 0; ok && j < K * M; j++)
        ok = cli_buf_printf(b, len, cap, ",%.17g", R[j]);
    for (int k = 0; ok && k < K; k++)
        ok = cli_buf_printf(b, len, cap, ",%.17g", v[k]);
    return ok && cli_buf_printf(b, len, cap, "\n");
}

static scm_status write_csv(const char *path, const scm_config *c, const seed_run *runs, int S,
                            scm_error *err)
{
    const int K = c->K, M = c->M;
    const long KK = (long)K * K, KM = (long)K * M;
    size_t len = 0, cap = 1 << 16;
    char *b = malloc(cap);
    int ok = b && cli_buf_printf(&b, &len, &cap, "seed,source,t,eps");
    for (int k = 0; ok && k < K; k++)
        for (int l = k; ok && l < K; l++)
            ok = cli_buf_printf(&b, &len, &cap, ",Q_%d_%d", k + 1, l + 1);
    for (int k = 0; ok && k < K; k++)
        for (int n = 0; ok && n < M; n++)
            ok = cli_buf_printf(&b, &len, &cap, ",R_%d_%d", k + 1, n + 1);
    for (int k = 0; ok && k < K; k++)
        ok = cli_buf_printf(&b, &len, &cap, ",v_%d", k + 1);
    ok = ok && cli_buf_printf(&b, &len, &cap, "\n");
    for (int s = 0; ok && s < S; s++) {
        const seed_run *r = runs + s;
        for (long i = 0; ok && i < r->n; i++)
            ok = csv_row(&b, &len, &cap, r->init_seed, "sim", r->t_sim[i], r->eps_sim[i],
                         r->Q_sim + i * KK, r->R_sim + i * KM, r->v_sim + i * K, K, M) &&
                 csv_row(&b, &len, &cap, r->init_seed, "ode", r->t[i], r->eps_ode[i],
                         r->Q_ode + i * KK, r->R_ode + i * KM, r->v_ode + i * K, K, M);
    }
    scm_status st = ok ? scm_output_write_atomic(path, b, len, err)
                       : scm_error_set(err, SCM_ENOMEM, "out of memory writing '%s'", path);
    free(b);
    return st;
}

/* ------------------------------------------------------------------ the plot */

/* scripts/plot_simulate.py next to the build directory of this program
 * (build/scm -> scripts/), else under the current directory; NULL if none. */
static char *plot_script(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *path = malloc(PATH_MAX + 64);
    if (!path)
        return NULL;
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(path, PATH_MAX + 64, "%s/../scripts/plot_simulate.py", exe);
            if (access(path, R_OK) == 0)
                return path;
        }
    }
    snprintf(path, PATH_MAX + 64, "scripts/plot_simulate.py");
    if (access(path, R_OK) == 0)
        return path;
    free(path);
    return NULL;
}

/* Run PYTHON SCRIPT CSV PNG; 1 if the plot was written.  Debian's
 * /usr/bin/python3 first (where python3-matplotlib installs), then the
 * python3 on PATH. */
static int plot(const char *csv, const char *png, int quiet)
{
    static const char *const pythons[] = {"/usr/bin/python3", "python3"};
    char *script = plot_script();
    if (!script) {
        if (!quiet)
            printf("plot       skipped: scripts/plot_simulate.py not found\n");
        return 0;
    }
    int ok = 0;
    for (int i = 0; i < 2 && !ok; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            int devnull = open("/dev/null", O_WRONLY);
            if (devnull >= 0 && quiet)
                dup2(devnull, STDERR_FILENO);
            execlp(pythons[i], pythons[i], script, csv, png, (char *)NULL);
            _exit(127);
        }
        int status = 0;
        ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
             WEXITSTATUS(status) == 0;
    }
    if (!ok && !quiet)
        printf("plot       skipped: python3 %s failed (matplotlib missing?); run it by hand\n",
               script);
    free(script);
    return ok;
}

/* ------------------------------------------------------------------ the command */

static void print_summary(const scm_config *c, const sim_params *p, const seed_run *runs)
{
    const int S = p->seeds;
    printf("model      K = %d, M = %d, %s, rule %s\n", c->K, c->M, c->act->name, c->rule->name);
    printf("simulate   %s, d = %ld, eta = %g, %d seed%s from %lu, t_max = %g\n",
           p->o.mode == SCM_SIM_BATCH ? "full-batch GD" : "online SGD", p->o.d, p->o.eta, S,
           S > 1 ? "s" : "", runs[0].init_seed, p->t_max);
    if (p->o.mode == SCM_SIM_BATCH)
        printf("batch      n = %ld samples\n", p->o.n);
    double ssim = 0.0, sode = 0.0;
    for (int s = 0; s < S; s++) {
        const seed_run *r = runs + s;
        ssim += r->secs_sim;
        sode += r->secs_ode;
        if (r->n > 0)
            printf("seed %-5lu eps sim %.6g  ode %.6g  at t = %.4g%s%s\n", r->init_seed,
                   r->eps_sim[r->n - 1], r->eps_ode[r->n - 1], r->t[r->n - 1],
                   r->error[0] ? "  FAILED: " : "", r->error);
    }
    long last = runs[0].n - 1;
    double mean, se, rms;
    if (last >= 0 && stats_at(runs, S, last, c->K, c->M, &mean, &se, &rms)) {
        printf("final      eps_sim - eps_ode = %.3g", mean);
        if (isfinite(se))
            printf(" +- %.2g (s.e.)", se);
        printf(", rms max|dQ, dR, dv| = %.3g\n", rms);
    }
    printf("time       simulation %.2f s, ODE %.3f s\n", ssim, sode);
}

/* Options: -1 after a message, 0 to go on, 1 for --help. */
static int parse_args(int argc, char **argv, const char **config, const char **prefix,
                      const char **sets, int *nsets, sim_params *cli, int *given, int *quiet,
                      int *noplot, int *threads)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long l;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return 1;
        if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            *quiet = 1;
            continue;
        }
        if (strcmp(a, "--no-plot") == 0) {
            *noplot = 1;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            if (*config)
                return fprintf(stderr, "%s: more than one config file ('%s' and '%s')\n", ME,
                               *config, a), -1;
            *config = a;
            continue;
        }
        if (i + 1 >= argc)
            return fprintf(stderr, "%s: option %s needs an argument\n", ME, a), -1;
        const char *v = argv[++i];
        if (strcmp(a, "-o") == 0) {
            *prefix = v;
        } else if (strcmp(a, "--set") == 0) {
            if (*nsets >= MAX_SETS)
                return fprintf(stderr, "%s: more than %d --set options\n", ME, MAX_SETS), -1;
            sets[(*nsets)++] = v;
        } else if (strcmp(a, "--d") == 0) {
            if (cli_opt_long(ME, a, v, 1, 100000000L, &l))
                return -1;
            cli->o.d = l, given[0] = 1;
        } else if (strcmp(a, "--seeds") == 0) {
            if (cli_opt_long(ME, a, v, 1, MAX_SEEDS, &l))
                return -1;
            cli->seeds = (int)l, given[1] = 1;
        } else if (strcmp(a, "--mode") == 0) {
            if (strcmp(v, "online") && strcmp(v, "batch"))
                return fprintf(stderr, "%s: --mode must be online or batch, got '%s'\n", ME, v),
                       -1;
            cli->o.mode = v[0] == 'b' ? SCM_SIM_BATCH : SCM_SIM_ONLINE, given[2] = 1;
        } else if (strcmp(a, "--n") == 0) {
            if (cli_opt_long(ME, a, v, 1, 1000000000L, &l))
                return -1;
            cli->o.n = l, given[3] = 1;
        } else if (strcmp(a, "--eta") == 0) {
            if (cli_opt_positive(ME, a, v, &cli->o.eta))
                return -1;
            given[4] = 1;
        } else if (strcmp(a, "--threads") == 0) {
            if (cli_opt_long(ME, a, v, 1, 256, &l))
                return -1;
            *threads = (int)l;
        } else if (strcmp(a, "--t-max") == 0) {
            if (cli_opt_positive(ME, a, v, &cli->t_max))
                return -1;
            given[5] = 1;
        } else {
            return fprintf(stderr, "%s: unknown option '%s' (see scm simulate --help)\n", ME, a),
                   -1;
        }
    }
    if (!*config)
        return usage(stderr), -1;
    return 0;
}

/* PREFIX + ext (caller frees). */
static char *with_ext(const char *prefix, const char *ext)
{
    size_t n = strlen(prefix), e = strlen(ext);
    char *s = malloc(n + e + 1);
    if (s) {
        memcpy(s, prefix, n);
        memcpy(s + n, ext, e + 1);
    }
    return s;
}

int scm_cmd_simulate(int argc, char **argv)
{
    const char *config = NULL, *prefix = NULL, *sets[MAX_SETS];
    int nsets = 0, quiet = 0, noplot = 0, threads = 1, given[6] = {0};
    sim_params cli, p;
    memset(&cli, 0, sizeof cli);
    int a = parse_args(argc, argv, &config, &prefix, sets, &nsets, &cli, given, &quiet, &noplot,
                       &threads);
    if (a)
        return a > 0 ? (usage(stdout), 0) : 2;
    memset(&p, 0, sizeof p);
    scm_sim_opts_default(&p.o);
    p.seeds = 4;
    p.t_max = 10.0;
    scm_config *c = NULL;
    scm_model *m = NULL;
    seed_run *runs = NULL;
    char *pfx = NULL, *json_path = NULL, *csv_path = NULL, *png_path = NULL;
    cJSON *res = NULL;
    scm_error err;
    scm_error_clear(&err);
    int rc = load(config, sets, nsets, &cli, given, &p, &c);
    if (rc)
        goto done;
    rc = 2;
    if (!(m = scm_config_model(c, &err)) || scm_sim_opts_check(&p.o, m, &err) ||
        scm_traj_opts_check(&c->traj, &err)) {
        fprintf(stderr, "%s: %s: %s\n", ME, config, err.msg);
        goto done;
    }
    if (!(c->traj.t_first < p.t_max)) {
        fprintf(stderr, "%s: %s: integrator.t_first = %g must be below simulate.t_max = %g\n",
                ME, config, c->traj.t_first, p.t_max);
        goto done;
    }
    pfx = prefix ? NULL : cli_output_name(config, ".sim");
    prefix = prefix ? prefix : pfx;
    runs = calloc((size_t)p.seeds, sizeof *runs);
    if (!prefix || !runs || !(json_path = with_ext(prefix, ".json")) ||
        !(csv_path = with_ext(prefix, ".csv")) || !(png_path = with_ext(prefix, ".png"))) {
        fprintf(stderr, "%s: out of memory\n", ME);
        goto done;
    }
    if ((rc = run_seeds(c, m, &p, threads, runs))) {
        if (rc == 1)
            fprintf(stderr, "%s: out of memory\n", ME);
        goto done;
    }
    int failed = 0;
    for (int s = 0; s < p.seeds; s++)
        failed |= runs[s].error[0] != 0;
    rc = 1;
    if (!(res = result_json(c, &p, runs, failed))) {
        fprintf(stderr, "%s: out of memory building the result\n", ME);
        goto done;
    }
    if (scm_output_write_json(json_path, res, 1, &err) ||
        write_csv(csv_path, c, runs, p.seeds, &err)) {
        fprintf(stderr, "%s: %s\n", ME, err.msg);
        goto done;
    }
    if (!quiet)
        print_summary(c, &p, runs);
    const int plotted = noplot ? 0 : plot(csv_path, png_path, quiet);
    if (!quiet)
        printf("wrote      %s, %s%s%s\n", json_path, csv_path, plotted ? ", " : "",
               plotted ? png_path : "");
    if (failed)
        fprintf(stderr, "%s: a run failed (the result file says which and why)\n", ME);
    rc = failed ? 1 : 0;
done:
    if (runs)
        for (int s = 0; s < p.seeds; s++)
            seed_run_free(runs + s);
    free(runs);
    cJSON_Delete(res);
    free(pfx);
    free(json_path);
    free(csv_path);
    free(png_path);
    scm_model_free(m);
    scm_config_free(c);
    return rc;
}
