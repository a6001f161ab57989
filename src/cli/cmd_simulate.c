/* cmd_simulate.c (CLI): `scm simulate`, a finite-d network trained in weight
 * space beside the ODE from the same realised initial overlaps, for several
 * seeds (the study of include/scm/simulate.h, scm_simulate_study_*); writes
 * PREFIX.json, PREFIX.csv and, when python3 with matplotlib is there,
 * PREFIX.png (docs/simulate.md).  The command parses its options, reads the
 * config, calls the library, prints the summary, writes the files and runs
 * the plot script. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "scm/output.h"
#include "scm/simulate.h"

#define ME "scm simulate"
#define MAX_SETS 64

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

static void print_summary(const scm_simulate_study *st, const scm_simulate_result *res)
{
    const scm_config *c = st->config;
    const scm_simulate_study_opts *p = &st->opts;
    const int S = p->seeds;
    const scm_simulate_seed *runs = res->runs;
    printf("model      K = %d, M = %d, %s, rule %s\n", c->K, c->M, c->act->name, c->rule->name);
    printf("simulate   %s, d = %ld, eta = %g, %d seed%s from %lu, t_max = %g\n",
           p->sim.mode == SCM_SIM_BATCH ? "full-batch GD" : "online SGD", p->sim.d, p->sim.eta,
           S, S > 1 ? "s" : "", runs[0].init_seed, p->t_max);
    if (p->sim.mode == SCM_SIM_BATCH)
        printf("batch      n = %ld samples\n", p->sim.n);
    for (int s = 0; s < S; s++) {
        const scm_simulate_seed *r = runs + s;
        if (r->n > 0)
            printf("seed %-5lu eps sim %.6g  ode %.6g  at t = %.4g%s%s\n", r->init_seed,
                   r->eps_sim[r->n - 1], r->eps_ode[r->n - 1], r->t[r->n - 1],
                   r->error[0] ? "  FAILED: " : "", r->error);
    }
    const long last = runs[0].n - 1;
    if (last >= 0 && res->stats[last].seeds) {
        const scm_simulate_stat *f = res->stats + last;
        printf("final      eps_sim - eps_ode = %.3g", f->eps_diff_mean);
        if (isfinite(f->eps_diff_se))
            printf(" +- %.2g (s.e.)", f->eps_diff_se);
        printf(", rms max|dQ, dR, dv| = %.3g\n", f->state_dev_rms);
    }
    printf("time       simulation %.2f s, ODE %.3f s\n", res->secs_sim, res->secs_ode);
}

/* Options: -1 after a message, 0 to go on, 1 for --help. */
static int parse_args(int argc, char **argv, const char **config, const char **prefix,
                      const char **sets, int *nsets, scm_simulate_study_opts *cli, int *quiet,
                      int *noplot)
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
            cli->sim.d = l, cli->given |= SCM_SIMULATE_GIVEN_D;
        } else if (strcmp(a, "--seeds") == 0) {
            if (cli_opt_long(ME, a, v, 1, SCM_SIMULATE_MAX_SEEDS, &l))
                return -1;
            cli->seeds = (int)l, cli->given |= SCM_SIMULATE_GIVEN_SEEDS;
        } else if (strcmp(a, "--mode") == 0) {
            if (strcmp(v, "online") && strcmp(v, "batch"))
                return fprintf(stderr, "%s: --mode must be online or batch, got '%s'\n", ME, v),
                       -1;
            cli->sim.mode = v[0] == 'b' ? SCM_SIM_BATCH : SCM_SIM_ONLINE;
            cli->given |= SCM_SIMULATE_GIVEN_MODE;
        } else if (strcmp(a, "--n") == 0) {
            if (cli_opt_long(ME, a, v, 1, 1000000000L, &l))
                return -1;
            cli->sim.n = l, cli->given |= SCM_SIMULATE_GIVEN_N;
        } else if (strcmp(a, "--eta") == 0) {
            if (cli_opt_positive(ME, a, v, &cli->sim.eta))
                return -1;
            cli->given |= SCM_SIMULATE_GIVEN_ETA;
        } else if (strcmp(a, "--threads") == 0) {
            if (cli_opt_long(ME, a, v, 1, 256, &l))
                return -1;
            cli->threads = (int)l;
        } else if (strcmp(a, "--t-max") == 0) {
            if (cli_opt_positive(ME, a, v, &cli->t_max))
                return -1;
            cli->given |= SCM_SIMULATE_GIVEN_T_MAX;
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

/* Write PREFIX.json and PREFIX.csv; 0, or 1 after a message. */
static int write_files(const scm_simulate_study *st, const scm_simulate_result *res,
                       const char *json_path, const char *csv_path)
{
    scm_error err;
    scm_error_clear(&err);
    cJSON *json = scm_simulate_study_json(st, res);
    if (!json) {
        fprintf(stderr, "%s: out of memory building the result\n", ME);
        return 1;
    }
    size_t len = 0;
    char *csv = NULL;
    scm_status s = scm_output_write_json(json_path, json, 1, &err);
    if (!s)
        s = (csv = scm_simulate_study_csv(st, res, &len))
                ? scm_output_write_atomic(csv_path, csv, len, &err)
                : scm_error_set(&err, SCM_ENOMEM, "out of memory writing '%s'", csv_path);
    if (s)
        fprintf(stderr, "%s: %s\n", ME, err.msg);
    free(csv);
    cJSON_Delete(json);
    return s ? 1 : 0;
}

int scm_cmd_simulate(int argc, char **argv)
{
    const char *config = NULL, *prefix = NULL, *sets[MAX_SETS];
    int nsets = 0, quiet = 0, noplot = 0;
    scm_simulate_study_opts cli;
    scm_simulate_study_opts_default(&cli);
    int a = parse_args(argc, argv, &config, &prefix, sets, &nsets, &cli, &quiet, &noplot);
    if (a)
        return a > 0 ? (usage(stdout), 0) : 2;
    scm_simulate_study st;
    scm_simulate_result res;
    memset(&st, 0, sizeof st);
    memset(&res, 0, sizeof res);
    char *pfx = NULL, *json_path = NULL, *csv_path = NULL, *png_path = NULL;
    scm_error err;
    scm_error_clear(&err);
    size_t len = 0;
    char *text = cli_read_all(config, &len);
    int rc = 2;
    if (!text) {
        fprintf(stderr, "%s: cannot read '%s' as JSON\n", ME, config);
        goto done;
    }
    if (scm_simulate_study_setup(text, len, config, sets, nsets, &cli, &st, &err)) {
        fprintf(stderr, "%s: %s\n", ME, err.msg);
        goto done;
    }
    pfx = prefix ? NULL : cli_output_name(config, ".sim");
    prefix = prefix ? prefix : pfx;
    if (!prefix || !(json_path = with_ext(prefix, ".json")) ||
        !(csv_path = with_ext(prefix, ".csv")) || !(png_path = with_ext(prefix, ".png"))) {
        fprintf(stderr, "%s: out of memory\n", ME);
        goto done;
    }
    scm_status s = scm_simulate_study_run(&st, &res, &err);
    if (s) {
        fprintf(stderr, "%s: %s\n", ME, err.msg);
        rc = s == SCM_ENOMEM ? 1 : 2;
        goto done;
    }
    if ((rc = write_files(&st, &res, json_path, csv_path)))
        goto done;
    if (!quiet)
        print_summary(&st, &res);
    const int plotted = noplot ? 0 : plot(csv_path, png_path, quiet);
    if (!quiet)
        printf("wrote      %s, %s%s%s\n", json_path, csv_path, plotted ? ", " : "",
               plotted ? png_path : "");
    if (res.failed)
        fprintf(stderr, "%s: a run failed (the result file says which and why)\n", ME);
    rc = res.failed ? 1 : 0;
done:
    scm_simulate_result_free(&res);
    scm_simulate_study_free(&st);
    free(text);
    free(pfx);
    free(json_path);
    free(csv_path);
    free(png_path);
    return rc;
}
