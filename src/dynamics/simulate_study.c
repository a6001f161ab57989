/* simulate_study.c: the study behind `scm simulate` (simulate.h, second
 * half): a config with a "simulate" section resolved into the simulation's
 * parameters, the per-seed runs of the finite-d network beside the ODE from
 * the same realised start, on threads, and the statistics across seeds at
 * each output time.  The result file and the CSV are in
 * simulate_study_out.c.  Messages are those `scm simulate` prints after its
 * "scm simulate: " prefix, so the command only relays them. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/output.h"
#include "scm/simulate.h"
#include "scm/traj.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void scm_simulate_study_opts_default(scm_simulate_study_opts *o)
{
    memset(o, 0, sizeof *o);
    scm_sim_opts_default(&o->sim);
    o->seeds = 4;
    o->t_max = 10.0;
    o->threads = 1;
}

void scm_simulate_study_opts_given(scm_simulate_study_opts *o, long d, int seeds, int mode,
                                   long n, double eta, double t_max)
{
    o->sim.d = d >= 1 ? d : o->sim.d;
    o->sim.n = n >= 1 ? n : o->sim.n;
    o->seeds = seeds >= 1 ? seeds : o->seeds;
    o->sim.mode = mode == 1 ? SCM_SIM_BATCH : mode == 0 ? SCM_SIM_ONLINE : o->sim.mode;
    o->sim.eta = eta > 0 ? eta : o->sim.eta;
    o->t_max = t_max > 0 ? t_max : o->t_max;
    o->given |= (d >= 1 ? SCM_SIMULATE_GIVEN_D : 0u) |
                (seeds >= 1 ? SCM_SIMULATE_GIVEN_SEEDS : 0u) |
                (mode >= 0 ? SCM_SIMULATE_GIVEN_MODE : 0u) | (n >= 1 ? SCM_SIMULATE_GIVEN_N : 0u) |
                (eta > 0 ? SCM_SIMULATE_GIVEN_ETA : 0u) |
                (t_max > 0 ? SCM_SIMULATE_GIVEN_T_MAX : 0u);
}

/* ------------------------------------------------------------ the simulate section */

static scm_status bad(scm_error *err, const char *what, const char *key, const char *need)
{
    return scm_error_set(err, SCM_EINVAL, "%s: 'simulate.%s' must be %s", what, key, need);
}

/* Parse the "simulate" section (may be NULL) into p; *have_eta set when it
 * gives eta. */
static scm_status parse_section(const cJSON *sec, const char *path, scm_simulate_study_opts *p,
                                int *have_eta, scm_error *err)
{
    if (!sec)
        return SCM_OK;
    if (!cJSON_IsObject(sec))
        return scm_error_set(err, SCM_EINVAL, "%s: 'simulate' must be an object", path);
    for (const cJSON *it = sec->child; it; it = it->next) {
        const char *k = it->string;
        const double x = it->valuedouble;
        const int num = cJSON_IsNumber(it), integral = num && x == floor(x);
        if (strcmp(k, "d") == 0) {
            if (!integral || x < 1 || x > 1e8)
                return bad(err, path, k, "an integer in [1, 1e8]");
            p->sim.d = (long)x;
        } else if (strcmp(k, "seeds") == 0) {
            if (!integral || x < 1 || x > SCM_SIMULATE_MAX_SEEDS)
                return bad(err, path, k, "an integer in [1, 1000]");
            p->seeds = (int)x;
        } else if (strcmp(k, "n") == 0) {
            if (!integral || x < 1 || x > 1e9)
                return bad(err, path, k, "an integer in [1, 1e9]");
            p->sim.n = (long)x;
        } else if (strcmp(k, "eta") == 0) {
            if (!num || !(x > 0.0) || !isfinite(x))
                return bad(err, path, k, "a positive number");
            p->sim.eta = x;
            *have_eta = 1;
        } else if (strcmp(k, "t_max") == 0) {
            if (!num || !(x > 0.0) || !isfinite(x))
                return bad(err, path, k, "a positive number");
            p->t_max = x;
        } else if (strcmp(k, "mode") == 0) {
            const char *s = cJSON_GetStringValue(it);
            if (s && strcmp(s, "online") == 0)
                p->sim.mode = SCM_SIM_ONLINE;
            else if (s && strcmp(s, "batch") == 0)
                p->sim.mode = SCM_SIM_BATCH;
            else
                return bad(err, path, k, "\"online\" or \"batch\"");
        } else {
            return scm_error_set(err, SCM_EINVAL,
                                 "%s: unknown key 'simulate.%s' (known: d, seeds, mode, n, eta, "
                                 "t_max)",
                                 path, k);
        }
    }
    return SCM_OK;
}

/* The weight-space form of the config's rule: its constraint and trained
 * layers (docs/simulate.md, section 1).  SCM_EINVAL for a rule the
 * simulator does not know. */
static scm_status rule_params(const scm_config *c, scm_simulate_study_opts *p, int have_eta,
                              scm_error *err)
{
    const char *r = c->rule->name;
    p->sim.constraint = SCM_SIM_FREE;
    p->sim.eta_v_ratio = 0.0;
    if (strcmp(r, "gd") == 0)
        return SCM_OK;
    if (strcmp(r, "normalised") == 0) {
        p->sim.constraint = SCM_SIM_SPHERE;
        return SCM_OK;
    }
    if (strcmp(r, "stiefel") == 0) {
        p->sim.constraint = SCM_SIM_STIEFEL;
        return SCM_OK;
    }
    if (strcmp(r, "two_layer") == 0) {
        p->sim.eta_v_ratio = c->traj.rule_params.lr_v_ratio;
        return SCM_OK;
    }
    if (strcmp(r, "sgd") == 0) {
        /* The ODE is that of the simulation's own learning rate. */
        const scm_rule_params *rp = &c->traj.rule_params;
        if (p->sim.mode == SCM_SIM_BATCH)
            return scm_error_set(err, SCM_EINVAL,
                                 "rule sgd is one-pass online SGD: --mode batch does not follow "
                                 "it (full-batch GD follows gd or two_layer)");
        if (!(rp->eta > 0.0))
            return scm_error_set(err, SCM_EINVAL,
                                 "rule sgd needs 'rule_params.eta' > 0 to be simulated (eta = 0 "
                                 "is the gradient flow: simulate rule gd or two_layer)");
        if (have_eta && p->sim.eta != rp->eta)
            return scm_error_set(err, SCM_EINVAL,
                                 "the simulation's eta = %g differs from rule_params.eta = %g "
                                 "(rule sgd: give one of them)",
                                 p->sim.eta, rp->eta);
        p->sim.eta = rp->eta;
        p->sim.eta_v_ratio = rp->lr_v_ratio;
        p->sim.noise = rp->noise;
        return SCM_OK;
    }
    return scm_error_set(err, SCM_EINVAL, "the simulator has no weight-space form of rule '%s'",
                         r);
}

/* Move the "simulate.KEY=VALUE" overrides into *sec (created when missing
 * or not an object) and the others into rest (*nrest of them). */
static scm_status split_sets(const char *const *sets, int nsets, cJSON **sec, const char **rest,
                             int *nrest, scm_error *err)
{
    for (int i = 0; i < nsets; i++) {
        const char *eq = strchr(sets[i], '=');
        if (strncmp(sets[i], "simulate.", 9) != 0 || !eq) {
            rest[(*nrest)++] = sets[i];
            continue;
        }
        char key[64];
        const size_t kl = (size_t)(eq - sets[i]) - 9;
        snprintf(key, sizeof key, "%.*s", (int)(kl < sizeof key ? kl : sizeof key - 1),
                 sets[i] + 9);
        cJSON *val = cJSON_Parse(eq + 1);
        if (!val)
            val = cJSON_CreateString(eq + 1);
        if (!*sec || !cJSON_IsObject(*sec)) {
            cJSON_Delete(*sec);
            *sec = cJSON_CreateObject();
        }
        cJSON_DeleteItemFromObjectCaseSensitive(*sec, key);
        if (!*sec || !val || !cJSON_AddItemToObject(*sec, key, val)) {
            cJSON_Delete(val);
            return scm_error_set(err, SCM_ENOMEM, "out of memory");
        }
    }
    return SCM_OK;
}

/* The config (with the simulate section taken out) into *c and the
 * section into p (*have_eta: the section gives eta). */
static scm_status load_config(const char *text, size_t len, const char *path,
                              const char *const *sets, int nsets, scm_simulate_study_opts *p,
                              int *have_eta, scm_config **c, scm_error *err)
{
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root)
        return scm_error_set(err, SCM_EINVAL, "cannot read '%s' as JSON", path);
    cJSON *sec = cJSON_DetachItemFromObjectCaseSensitive(root, "simulate");
    const char **rest = malloc(sizeof *rest * (size_t)(nsets > 0 ? nsets : 1));
    int nrest = 0;
    scm_status st = rest ? split_sets(sets, nsets, &sec, rest, &nrest, err)
                         : scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (!st)
        st = parse_section(sec, path, p, have_eta, err);
    cJSON_Delete(sec);
    char *ctext = st ? NULL : scm_output_print(root, 1);
    cJSON_Delete(root);
    if (!st && !ctext)
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (!st && scm_config_parse(ctext, path, rest, nrest, c, err))
        st = SCM_EINVAL;
    free(ctext);
    free(rest);
    return st;
}

/* The command line's fields over the section's, then the defaults and the
 * rule's form. */
static scm_status resolve(const scm_simulate_study_opts *cli, int have_eta, scm_config *c,
                          scm_simulate_study_opts *p, scm_error *err)
{
    if (cli->given & SCM_SIMULATE_GIVEN_D)
        p->sim.d = cli->sim.d;
    if (cli->given & SCM_SIMULATE_GIVEN_SEEDS)
        p->seeds = cli->seeds;
    if (cli->given & SCM_SIMULATE_GIVEN_MODE)
        p->sim.mode = cli->sim.mode;
    if (cli->given & SCM_SIMULATE_GIVEN_N)
        p->sim.n = cli->sim.n;
    if (cli->given & SCM_SIMULATE_GIVEN_ETA)
        p->sim.eta = cli->sim.eta, have_eta = 1;
    if (cli->given & SCM_SIMULATE_GIVEN_T_MAX)
        p->t_max = cli->t_max;
    p->threads = cli->threads;
    p->progress = cli->progress;
    p->progress_ctx = cli->progress_ctx;
    p->given = cli->given;
    if (!have_eta)
        p->sim.eta = p->sim.mode == SCM_SIM_BATCH ? 0.02 * (double)p->sim.d : 0.05;
    scm_status st = rule_params(c, p, have_eta, err);
    if (st)
        return st;
    if (p->sim.mode == SCM_SIM_BATCH && p->sim.n < 1)
        return scm_error_set(err, SCM_EINVAL,
                             "batch mode needs the number of samples: --n N or 'simulate.n'");
    if (c->init == SCM_INIT_RANDOM && c->d != p->sim.d) {
        /* The initial state is drawn in the simulation's dimension. */
        c->d = p->sim.d;
        cJSON *init = cJSON_GetObjectItemCaseSensitive(c->used, "init");
        if (init)
            cJSON_ReplaceItemInObjectCaseSensitive(init, "d",
                                                   cJSON_CreateNumber((double)p->sim.d));
    }
    return SCM_OK;
}

scm_status scm_simulate_study_setup(const char *text, size_t len, const char *path,
                                    const char *const *sets, int nsets,
                                    const scm_simulate_study_opts *cli, scm_simulate_study *s,
                                    scm_error *err)
{
    memset(s, 0, sizeof *s);
    scm_simulate_study_opts p;
    scm_simulate_study_opts_default(&p);
    int have_eta = 0;
    scm_status st = load_config(text, len, path, sets, nsets, &p, &have_eta, &s->config, err);
    if (!st)
        st = resolve(cli, have_eta, s->config, &p, err);
    if (st)
        goto fail;
    scm_error e;
    scm_error_clear(&e);
    if (!(s->model = scm_config_model(s->config, &e)) || scm_sim_opts_check(&p.sim, s->model, &e) ||
        scm_traj_opts_check(&s->config->traj, &e)) {
        st = scm_error_set(err, e.code ? e.code : SCM_EINVAL, "%s: %s", path, e.msg);
        goto fail;
    }
    if (!(s->config->traj.t_first < p.t_max)) {
        st = scm_error_set(err, SCM_EINVAL,
                           "%s: integrator.t_first = %g must be below simulate.t_max = %g", path,
                           s->config->traj.t_first, p.t_max);
        goto fail;
    }
    s->opts = p;
    return SCM_OK;
fail:
    scm_simulate_study_free(s);
    return st;
}

void scm_simulate_study_free(scm_simulate_study *s)
{
    if (!s)
        return;
    scm_model_free(s->model);
    scm_config_free(s->config);
    s->model = NULL;
    s->config = NULL;
}

/* ------------------------------------------------------------------ one seed */

unsigned long scm_simulate_sample_seed(unsigned long s)
{
    unsigned long long z = (unsigned long long)s + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (unsigned long)((z ^ (z >> 31)) & 0xffffffffUL);
}

static void seed_free(scm_simulate_seed *r)
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

static int seed_alloc(scm_simulate_seed *r, long n, int K, int M)
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

/* Copy the ODE's records into r and train the network to each of their
 * times.  A failure of the network ends the records (r->error). */
static void follow(scm_sim *sim, const scm_traj_result *tr, int K, int M, scm_simulate_seed *r)
{
    scm_error err;
    scm_error_clear(&err);
    double t0 = now();
    for (long i = 0; i < tr->n_out; i++) {
        const size_t KK = (size_t)K * (size_t)K, KM = (size_t)K * (size_t)M;
        r->t[i] = tr->out_t[i];
        r->eps_ode[i] = tr->out_eps[i];
        memcpy(r->Q_ode + i * KK, tr->out_Q + i * KK, sizeof(double) * KK);
        memcpy(r->R_ode + i * KM, tr->out_R + i * KM, sizeof(double) * KM);
        memcpy(r->v_ode + i * K, tr->out_v + i * K, sizeof(double) * (size_t)K);
        if (scm_sim_advance(sim, tr->out_t[i], &err) ||
            scm_sim_state(sim, r->Q_sim + i * KK, r->R_sim + i * KM, r->v_sim + i * K,
                          r->eps_sim + i, &err)) {
            snprintf(r->error, sizeof r->error, "the simulation failed: %s", err.msg);
            r->n = i;
            break;
        }
        r->t_sim[i] = scm_sim_time(sim);
    }
    r->secs_sim = now() - t0;
    r->steps = scm_sim_steps(sim);
}

/* Simulate seed number s and integrate its ODE into r.  A numerical failure
 * of either side is in r->error and the records stop there; an error
 * status when the seed cannot start. */
static scm_status run_seed(const scm_simulate_study *st, int s, scm_simulate_seed *r,
                           scm_error *err)
{
    /* A shallow copy with this seed's init seed (threads share the config). */
    scm_config cc = *st->config, *c = &cc;
    const scm_model *m = st->model;
    const int K = c->K, M = c->M;
    double *Q0 = malloc(sizeof(double) * (size_t)K * (size_t)K);
    double *R0 = malloc(sizeof(double) * (size_t)K * (size_t)M);
    scm_sim *sim = NULL;
    scm_traj_result tr;
    memset(&tr, 0, sizeof tr);
    scm_error e;
    scm_error_clear(&e);
    r->init_seed = st->config->seed + (unsigned long)s;
    c->seed = r->init_seed;
    scm_status rc = Q0 && R0 ? scm_config_initial_state(c, m, Q0, R0, &e) : SCM_ENOMEM;
    scm_sim_opts o = st->opts.sim;
    o.seed = scm_simulate_sample_seed(r->init_seed);
    if (rc || !(sim = scm_sim_alloc(m, &o, Q0, R0, &e)) ||
        /* The ODE starts from the realised (retracted) overlaps. */
        (rc = scm_sim_state(sim, Q0, R0, NULL, NULL, &e))) {
        rc = scm_error_set(err, rc ? rc : e.code ? e.code : SCM_EINVAL, "seed %lu: %s",
                           r->init_seed, Q0 ? e.msg : "out of memory");
        goto done;
    }
    scm_traj_opts to = c->traj;
    to.t_max = st->opts.t_max;
    to.eps_stop = 0.0;
    to.grad_stop = 0.0;
    to.record = 1;
    double t0 = now();
    if ((rc = scm_traj_run(m, c->rule, Q0, R0, &to, &tr, &e))) {
        scm_error_set(err, rc, "seed %lu: the ODE: %s", r->init_seed, e.msg);
        goto done;
    }
    r->secs_ode = now() - t0;
    r->ode_stop = tr.stop;
    if (tr.stop == SCM_STOP_FAILED)
        snprintf(r->error, sizeof r->error, "the ODE failed at t = %g: %s", tr.t, tr.err.msg);
    if (!seed_alloc(r, tr.n_out, K, M)) {
        rc = scm_error_set(err, SCM_ENOMEM, "out of memory");
        goto done;
    }
    follow(sim, &tr, K, M, r);
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
    const scm_simulate_study *s;
    scm_simulate_seed *runs;
    scm_status *sts;
    scm_error *errs;
    int t, T;
    pthread_mutex_t *mu; /* the progress callback's */
    int *done;
} seed_job;

static void *seed_worker(void *arg)
{
    seed_job *j = arg;
    for (int s = j->t; s < j->s->opts.seeds; s += j->T) {
        if ((j->sts[s] = run_seed(j->s, s, j->runs + s, j->errs + s)))
            break;
        if (j->s->opts.progress) {
            pthread_mutex_lock(j->mu);
            j->s->opts.progress(j->s->opts.progress_ctx, ++*j->done, j->s->opts.seeds);
            pthread_mutex_unlock(j->mu);
        }
    }
    return NULL;
}

/* All seeds on up to T threads; the first error in seed order, or OK. */
static scm_status run_seeds(const scm_simulate_study *st, scm_simulate_seed *runs,
                            scm_error *err)
{
    const int S = st->opts.seeds;
    const int T = st->opts.threads < S ? (st->opts.threads > 1 ? st->opts.threads : 1) : S;
    scm_status *sts = calloc((size_t)S, sizeof *sts);
    scm_error *errs = calloc((size_t)S, sizeof *errs);
    seed_job *jobs = calloc((size_t)T, sizeof *jobs);
    pthread_t *th = calloc((size_t)T, sizeof *th);
    char *created = calloc((size_t)T, 1);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    int done = 0;
    scm_status rc = !sts || !errs || !jobs || !th || !created ? SCM_ENOMEM : SCM_OK;
    if (rc)
        scm_error_set(err, rc, "out of memory");
    for (int t = 0; !rc && t < T; t++) {
        jobs[t] = (seed_job){st, runs, sts, errs, t, T, &mu, &done};
        created[t] = t > 0 && pthread_create(&th[t], NULL, seed_worker, &jobs[t]) == 0;
    }
    for (int t = 0; !rc && t < T; t++) {
        if (created[t])
            pthread_join(th[t], NULL);
        else
            seed_worker(&jobs[t]); /* thread 0, or a thread that could not start */
    }
    for (int s = 0; !rc && s < S; s++)
        if ((rc = sts[s]) && err)
            *err = errs[s];
    free(sts);
    free(errs);
    free(jobs);
    free(th);
    free(created);
    return rc;
}

/* ------------------------------------------------------------------ statistics */

/* The statistics of output i over the seeds that reached it (o->seeds = 0
 * when none did). */
static void stats_at(const scm_simulate_seed *runs, int S, long i, int K, int M,
                     scm_simulate_stat *o)
{
    const long KK = (long)K * K, KM = (long)K * M;
    double s1 = 0.0, s2 = 0.0, sq = 0.0;
    int n = 0;
    for (int s = 0; s < S; s++) {
        const scm_simulate_seed *r = runs + s;
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
    o->t = runs[0].n > i ? runs[0].t[i] : NAN;
    o->seeds = n;
    if (n == 0)
        return;
    o->eps_diff_mean = s1 / n;
    o->eps_diff_se = n > 1 ? sqrt(fmax(s2 - s1 * s1 / n, 0.0) / (n - 1) / n) : NAN;
    o->state_dev_rms = sqrt(sq / n);
}

scm_status scm_simulate_study_run(const scm_simulate_study *s, scm_simulate_result *res,
                                  scm_error *err)
{
    memset(res, 0, sizeof *res);
    const int S = s->opts.seeds;
    res->K = s->config->K;
    res->M = s->config->M;
    if (!(res->runs = calloc((size_t)S, sizeof *res->runs)))
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    res->seeds = S;
    scm_status st = run_seeds(s, res->runs, err);
    if (st)
        return st;
    long nmax = 0;
    for (int i = 0; i < S; i++) {
        const scm_simulate_seed *r = res->runs + i;
        res->failed |= r->error[0] != 0;
        nmax = r->n > nmax ? r->n : nmax;
        res->secs_sim += r->secs_sim;
        res->secs_ode += r->secs_ode;
    }
    if (!(res->stats = calloc((size_t)(nmax > 0 ? nmax : 1), sizeof *res->stats)))
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    res->n_stats = nmax;
    for (long i = 0; i < nmax; i++)
        stats_at(res->runs, S, i, res->K, res->M, res->stats + i);
    return SCM_OK;
}

void scm_simulate_result_free(scm_simulate_result *res)
{
    if (!res)
        return;
    for (int s = 0; res->runs && s < res->seeds; s++)
        seed_free(res->runs + s);
    free(res->runs);
    free(res->stats);
    memset(res, 0, sizeof *res);
}
