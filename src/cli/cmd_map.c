/* cmd_map.c: `scm map`: the map of global convergence over (M, K - M), one
 * sweep per cell as `scm compare` runs it (scm_map_run, map.h); here are
 * the options, the files PREFIX.json and PREFIX.csv, the table on stdout
 * (scm_map_text) and the figures (scripts/plot_map.py); its events are
 * printed by cli_compare_event. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_opts.h"
#include "cli_plot.h"
#include "cli_util.h"
#include "commands.h"
#include "scm/map.h"
#include "scm/map_text.h"
#include "scm/output.h"
#include "sweep_exec.h"

#define ME "scm map"
#define MAX_SETS 200

static const char map_head[] =
    "usage: scm map --M LIST --dK LIST --runs N [CONFIG.json] [--law LAW] [--seed S]\n"
    "               [--threads T] [--set key=value]... [--ansatz FILE]...\n"
    "               [--no-stability] [--certify | --certify-global] [--no-plots]\n"
    "               [-o PREFIX] [--quiet]\n"
    "\n"
    "The map of global convergence: for every M of --M and dK of --dK one sweep\n"
    "of N random starts with K = M + dK students, run as `scm compare --M M --K\n"
    "M+dK,... -o PREFIX.M<M>` runs it (config, families enumerated once per cell,\n"
    "runs file PREFIX.M<M>.K<K>.runs.jsonl resumed when the command is run again,\n"
    "summary; the same files whatever --threads or the MPI ranks).  LIST: integers\n"
    "and ranges lo:hi[:step], comma-separated (6:40:2,50).  Writes PREFIX.json and\n"
    "PREFIX.csv: per cell the fraction reaching the global minimum, per family\n"
    "reached (k1, plateau loss, stability verdict) and not converged, with 95%\n"
    "Wilson intervals, the median time to convergence; per M the smallest dK\n"
    "with a global fraction >= 0.99.  Then the figures PREFIX.heatmap.png,\n"
    "PREFIX.global.png, PREFIX.families.png, PREFIX.time.png (plot_map.py;\n"
    "--no-plots skips them).  --ansatz FILE: each cell's families include those\n"
    "of that ansatz file where it applies (examples/ansatz/k1_shared*.json hold\n"
    "the traps of K = M + 2, 3, 4 from M = 36 on: docs/map.md).\n";

static const char map_tail[] =
    "exit status: 0 done, 1 a failure while running (the cells done stay and\n"
    "the command resumes), 2 bad input (refused before any file is written),\n"
    "4 a file could not be written.\n";

typedef struct {
    const char *config, *Ms, *dKs, *law;
    const char *sets[MAX_SETS];
    const char *ansatz[SCM_COMPARE_MAX_ANSATZ];
    long seed, threads;
    int quiet, no_plots, certify, certify_global;
} map_cli;

/* Parse argv into o and c: -1 to go on, 0 after --help, or the exit
 * status 2. */
static int map_parse(int argc, char **argv, scm_map_opts *o, map_cli *c)
{
    cli_strs pos = {&c->config, 0, 1};
    cli_strs sets = {c->sets, 0, MAX_SETS};
    cli_strs ans = {c->ansatz, 0, SCM_COMPARE_MAX_ANSATZ};
    const cli_opt opts[] = {
        CLI_O("--M", CLI_STR, &c->Ms, 0, 0, "LIST", "the widths M (e.g. 6:40:2)"),
        CLI_O("--dK", CLI_STR, &c->dKs, 0, 0, "LIST", "the over-parameterisations K - M (e.g. 0:4)"),
        CLI_O("--runs", CLI_LONG, &o->runs, 1, 1000000000L, "N", "random starts per cell"),
        CLI_O("--law", CLI_STR, &c->law, 0, 0, "LAW",
              "the initialisation law (init.law): gaussian\n(default: N(0, sigma^2 I_d), d = "
              "init.d), xavier\n(d = M, w ~ N(0, I/d) in the weight-space convention),\n"
              "xavier_uniform (d = M, uniform coordinates of the same\nvariance); init.d is set "
              "to M under the xavier laws;\ninit.scale (--set init.scale=0.01) gives a "
              "small-scale\nstart under any law"),
        CLI_O("--seed", CLI_LONG, &c->seed, 0, 9007199254740991L, "S",
              "the base seed of every cell's sweep (default: the\nconfig's init.seed)"),
        CLI_O("--threads", CLI_LONG, &c->threads, 1, 1024, "T",
              "threads (default: the processors online, at most 16);\nwith T >= 2 one more enumerates the next row's families\nwhile a row's sweeps run; the files do not depend on T"),
        CLI_OPT_SET(&sets),
        CLI_O("--ansatz", CLI_STRS, &ans, 0, 0, "FILE",
              "an ansatz file each cell's enumeration takes\nbesides the built-in ones, where "
              "it applies\n(repeatable)"),
        CLI_F("--no-stability", &o->no_stability, "no stability verdicts"),
        CLI_F("--certify", &c->certify, "the sweeps' early stop (scm sweep --help)"),
        CLI_F("--certify-global", &c->certify_global, "its loss rule only"),
        CLI_F("--no-plots", &c->no_plots, "no figures"),
        CLI_O("-o", CLI_STR, &o->prefix, 0, 0, "PREFIX", "the files' prefix (default map)"),
        CLI_OPT_QUIET(&c->quiet, "no table, no progress"),
        CLI_OPT_END};
    const cli_cmd cmd = {ME, map_head, opts, map_tail, &pos, 1};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc >= 0)
        return rc;
    o->nsets = sets.n;
    o->ansatz_files = c->ansatz;
    o->n_ansatz = ans.n;
    if (c->certify && c->certify_global)
        return cli_usage_error(ME, "--certify and --certify-global exclude each other");
    o->certify = c->certify ? 1 : c->certify_global ? 2 : 0;
    if (!c->Ms || !c->dKs || o->runs < 0)
        return cli_usage_error(ME, "--M, --dK and --runs are required");
    scm_error err;
    if (scm_map_parse_list(c->Ms, "--M", 1, 100000, o->M, SCM_MAP_MAX_M, &o->nM, &err) ||
        scm_map_parse_list(c->dKs, "--dK", 0, SCM_COMPARE_MAX_K, o->dK, SCM_MAP_MAX_DK, &o->ndK,
                           &err))
        return cli_fail(ME, &err, 2);
    o->law_given = c->law != NULL;
    if (c->law && scm_init_law_find(c->law, &o->law)) {
        fprintf(stderr, ME ": --law must be gaussian, xavier or xavier_uniform, got '%s'\n", c->law);
        return 2;
    }
    return -1;
}

/* PREFIX.json and PREFIX.csv: 0 or the exit status. */
static int write_outputs(const scm_map_result *res, const char *prefix, char *path, size_t len)
{
    scm_error err;
    char csv[4200];
    snprintf(csv, sizeof csv, "%s.csv", prefix);
    snprintf(path, len, "%s.json", prefix);
    if (scm_output_write_json(path, res->map, 0, &err) ||
        scm_output_write_atomic(csv, res->csv, strlen(res->csv), &err))
        return cli_fail(ME, &err, CLI_EXIT_IO);
    return 0;
}

int scm_cmd_map(int argc, char **argv, const cli_executor *ex)
{
    scm_map_opts o;
    scm_map_opts_default(&o);
    map_cli c;
    memset(&c, 0, sizeof c);
    c.seed = -1;
    int rc = map_parse(argc, argv, &o, &c);
    if (rc >= 0)
        return rc;
    const int nthreads = cli_exec_threads(ME, ex, (int)c.threads);
    const long seed = c.seed;
    if (nthreads < 0)
        return 2;
    if (!o.prefix)
        o.prefix = "map";
    char *text = NULL;
    size_t tlen = 0;
    if (c.config && !(text = cli_config_text(ME, c.config, NULL, 0, &tlen)))
        return 2;
    char path[4200];
    const char *ins[1] = {c.config};
    snprintf(path, sizeof path, "%s.json", o.prefix);
    int bad = cli_check_output(ME, path, ins, 1);
    snprintf(path, sizeof path, "%s.csv", o.prefix);
    if (bad || cli_check_output(ME, path, ins, 1)) {
        free(text);
        return 2;
    }
    o.config_text = text;
    o.config_name = c.config;
    o.sets = c.sets;
    o.have_seed = seed >= 0;
    o.seed = (uint64_t)(seed >= 0 ? seed : 0);
    o.threads = (int)nthreads;
    o.exec = ex->sweep_fn;
    o.jobs = ex->jobs_fn;
    o.ahead = !ex->one_thread; /* scm-mpi's ranks take the enumerations as jobs */
    cli_compare_printer pr = {ME, ME, c.quiet, !c.quiet && isatty(2), 0, (int)nthreads, ex,
                              {0, 0.0, 0.0}};
    o.event = cli_compare_event;
    o.event_user = &pr;
    scm_map_result res;
    scm_error err;
    if (scm_map_run(&o, &res, &err)) {
        fprintf(stderr, ME ": %s\n", err.msg);
        if (res.failed_M >= 0)
            fprintf(stderr, ME ": the row M = %ld failed\n", res.failed_M);
        rc = res.failed_input ? 2 : err.code == SCM_EIO ? CLI_EXIT_IO : 1;
    } else if (!(rc = write_outputs(&res, o.prefix, path, sizeof path))) {
        cli_put(stdout, c.quiet ? NULL : scm_map_text(res.map));
        if (!c.quiet)
            fprintf(stderr, ME ": wrote %s.json and %s.csv\n", o.prefix, o.prefix);
        rc = c.no_plots ? 0 : cli_plot(ME, "plot_map.py", path, NULL, c.quiet);
    }
    scm_map_result_free(&res);
    free(text);
    return rc;
}
