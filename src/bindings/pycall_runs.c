/* pycall_runs.c: `scm sweep`, `scm merge`, `scm simulate` and
 * `scm compare` as JSON-in/JSON-out calls (pycall.h, abi.h): the command's
 * options by name with its defaults and ranges, the same library entry
 * points, the objects it writes.  The sweeps run on this process's threads
 * (scm_sweep_exec). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bindings/pycall.h"
#include "scm/compare.h"
#include "scm/output.h"
#include "scm/simulate.h"
#include "scm/sweepfile.h"

#define PY_MAX_SETS 256

/* ---- sweep -------------------------------------------------------------- */

static const char *const sw_keys[] = {
    "config", "config_name", "sets", "runs", "seed", "threads", "shard_i", "shard_n",
    "families", "out", "resume", "certify", "loose_grad_stop", "dead_q", "match_rtol",
    "fsync_interval", NULL};

/* The options of `scm sweep` (runs required, threads 1, seed: init.seed). */
static scm_status sw_read(const py_args *a, scm_sweep_file_opts *fo, const char **sets,
                          int *nsets, const char **text, const char **name, const char **fam,
                          const char **out, long *seed)
{
    long threads = 1, shard_i = 0, shard_n = 1, certify = 0;
    scm_status st;
    fo->runs = -1;
    if ((st = py_args_check_keys(a, sw_keys)) || (st = py_args_str(a, "config", text)) ||
        (st = py_args_str(a, "config_name", name)) ||
        (st = py_args_strs(a, "sets", sets, PY_MAX_SETS, nsets)) ||
        (st = py_args_long(a, "runs", 1, 1000000000L, &fo->runs)) ||
        (st = py_args_long(a, "seed", 0, 9007199254740991L, seed)) ||
        (st = py_args_long(a, "threads", 1, 1024, &threads)) ||
        (st = py_args_long(a, "shard_i", 0, 1000000, &shard_i)) ||
        (st = py_args_long(a, "shard_n", 1, 1000000, &shard_n)) ||
        (st = py_args_str(a, "families", fam)) || (st = py_args_str(a, "out", out)) ||
        (st = py_args_bool(a, "resume", &fo->resume)) ||
        (st = py_args_long(a, "certify", 0, 2, &certify)) ||
        (st = py_args_double(a, "loose_grad_stop", 0.0, 1e300, &fo->sweep.loose_grad_stop)) ||
        (st = py_args_double(a, "dead_q", 0.0, 1e300, &fo->sweep.dead_q)) ||
        (st = py_args_double(a, "match_rtol", 0.0, 1e300, &fo->sweep.match_rtol)) ||
        (st = py_args_double(a, "fsync_interval", 0.0, 1e300, &fo->fsync_interval)))
        return st;
    if (!*text || !*out || fo->runs < 0)
        return scm_error_set(a->err, SCM_EINVAL, "%s: config, out and runs are required", a->cmd);
    if (shard_i >= shard_n)
        return scm_error_set(a->err, SCM_EINVAL,
                             "%s: shard must be i/n with 0 <= i < n, got %ld/%ld", a->cmd,
                             shard_i, shard_n);
    fo->threads = (int)threads;
    fo->shard_i = (int)shard_i;
    fo->shard_n = (int)shard_n;
    fo->sweep.certify = (int)certify;
    return scm_sweep_opts_check(&fo->sweep, a->err);
}

scm_status py_call_sweep(const py_args *a, char **out)
{
    scm_sweep_file_opts fo;
    scm_sweep_file_opts_default(&fo);
    const char *sets[PY_MAX_SETS], *text = NULL, *name = "python", *fam = NULL, *path = NULL;
    int nsets = 0;
    long seed = -1;
    scm_config *c = NULL;
    scm_sweep_families fams = {0, NULL, NULL};
    scm_sweep_file *f = NULL;
    scm_status st = sw_read(a, &fo, sets, &nsets, &text, &name, &fam, &path, &seed);
    if (!st)
        st = scm_config_parse(text, name, sets, nsets, &c, a->err);
    if (!st)
        st = scm_sweep_file_setup(c, name, fam, seed, &fams, &fo, a->err);
    if (!st)
        st = scm_sweep_file_open(path, c, &fams, &fo, &f, a->err);
    long resumed = st ? 0 : scm_sweep_file_resumed(f);
    long total = st ? 0 : scm_sweep_file_total(f);
    if (!st)
        st = scm_sweep_file_run(f, a->err);
    if (!st) {
        const char *names[] = {"summary", "total", "resumed"};
        cJSON *items[] = {scm_sweep_summary_json(scm_sweep_file_summary(f)),
                          cJSON_CreateNumber((double)total), cJSON_CreateNumber((double)resumed)};
        st = items[0] ? py_args_reply(out, 3, names, items, a->err)
                      : scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    }
    scm_sweep_file_free(f);
    scm_sweep_families_free(&fams);
    scm_config_free(c);
    return st;
}

/* ---- merge -------------------------------------------------------------- */

static const char *const mg_keys[] = {"files", NULL};

scm_status py_call_merge(const py_args *a, char **out)
{
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(a->obj, "files");
    int n = cJSON_IsArray(files) ? cJSON_GetArraySize(files) : 0;
    scm_status st = py_args_check_keys(a, mg_keys);
    if (st)
        return st;
    if (n < 1)
        return scm_error_set(a->err, SCM_EINVAL, "%s: files must be a list of runs files",
                             a->cmd);
    const char **paths = calloc((size_t)n, sizeof *paths);
    if (!paths)
        return scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    st = py_args_strs(a, "files", paths, n, &n);
    scm_sweep_merge_result res;
    memset(&res, 0, sizeof res);
    if (!st)
        st = scm_sweep_merge(paths, n, &res, a->err);
    if (!st) {
        const char *names[] = {"result"};
        cJSON *items[] = {cJSON_Duplicate(res.json, 1)};
        st = items[0] ? py_args_reply(out, 1, names, items, a->err)
                      : scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    }
    scm_sweep_merge_result_free(&res);
    free(paths);
    return st;
}

/* ---- simulate ----------------------------------------------------------- */

static const char *const sim_keys[] = {"config", "config_name", "sets", "d", "seeds", "mode",
                                       "n", "eta", "threads", "t_max", NULL};

/* The options of `scm simulate` given (they override the config's
 * "simulate" section, as the command line does). */
static scm_status sim_read(const py_args *a, scm_simulate_study_opts *o, const char **sets,
                           int *nsets, const char **text, const char **name)
{
    long d = -1, seeds = -1, n = -1, threads = 1;
    double eta = -1.0, t_max = -1.0;
    const char *mode = NULL;
    scm_status st;
    if ((st = py_args_check_keys(a, sim_keys)) || (st = py_args_str(a, "config", text)) ||
        (st = py_args_str(a, "config_name", name)) ||
        (st = py_args_strs(a, "sets", sets, 64, nsets)) ||
        (st = py_args_long(a, "d", 1, 100000000L, &d)) ||
        (st = py_args_long(a, "seeds", 1, SCM_SIMULATE_MAX_SEEDS, &seeds)) ||
        (st = py_args_str(a, "mode", &mode)) || (st = py_args_long(a, "n", 1, 1000000000L, &n)) ||
        (st = py_args_double(a, "eta", 1e-300, 1e300, &eta)) ||
        (st = py_args_long(a, "threads", 1, 256, &threads)) ||
        (st = py_args_double(a, "t_max", 1e-300, 1e300, &t_max)))
        return st;
    if (!*text)
        return scm_error_set(a->err, SCM_EINVAL, "%s: config is required", a->cmd);
    if (mode && strcmp(mode, "online") && strcmp(mode, "batch"))
        return scm_error_set(a->err, SCM_EINVAL, "%s: mode must be online or batch, got '%s'",
                             a->cmd, mode);
    scm_simulate_study_opts_given(o, d, (int)seeds, mode ? mode[0] == 'b' : -1, n, eta, t_max);
    o->threads = (int)threads;
    return SCM_OK;
}

scm_status py_call_simulate(const py_args *a, char **out)
{
    scm_simulate_study_opts cli;
    scm_simulate_study_opts_default(&cli);
    const char *sets[64], *text = NULL, *name = "python";
    int nsets = 0;
    scm_simulate_study s;
    scm_simulate_result res;
    memset(&s, 0, sizeof s);
    memset(&res, 0, sizeof res);
    scm_status st = sim_read(a, &cli, sets, &nsets, &text, &name);
    if (!st)
        st = scm_simulate_study_setup(text, strlen(text), name, sets, nsets, &cli, &s, a->err);
    if (!st)
        st = scm_simulate_study_run(&s, &res, a->err);
    if (!st) {
        size_t len = 0;
        char *csv = scm_simulate_study_csv(&s, &res, &len);
        const char *names[] = {"result", "csv"};
        cJSON *items[] = {scm_simulate_study_json(&s, &res), csv ? cJSON_CreateString(csv) : NULL};
        free(csv);
        if (!items[0] || !items[1]) {
            cJSON_Delete(items[0]);
            cJSON_Delete(items[1]);
            st = scm_error_set(a->err, SCM_ENOMEM, "out of memory");
        } else {
            st = py_args_reply(out, 2, names, items, a->err);
        }
    }
    scm_simulate_result_free(&res);
    scm_simulate_study_free(&s);
    return st;
}

/* ---- compare ------------------------------------------------------------ */

static const char *const cmp_keys[] = {
    "M", "K", "runs", "config", "config_name", "sets", "prefix", "families", "ansatz", "seed",
    "threads", "traces", "no_stability", "certify", NULL};

/* families: {"K": path, ...} onto o->families by K. */
static scm_status cmp_families(const py_args *a, scm_compare_opts *o)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(a->obj, "families"), *it;
    if (!f || cJSON_IsNull(f))
        return SCM_OK;
    if (!cJSON_IsObject(f))
        return scm_error_set(a->err, SCM_EINVAL, "%s: families must map K to a file", a->cmd);
    cJSON_ArrayForEach(it, f)
    {
        char *end;
        long k = strtol(it->string, &end, 10);
        int j = 0;
        while (j < o->nK && o->K[j] != k)
            j++;
        if (*end || j == o->nK || !cJSON_IsString(it))
            return scm_error_set(a->err, SCM_EINVAL,
                                 "%s: families: '%s' is not a K of the comparison with a file",
                                 a->cmd, it->string);
        o->families[j] = it->valuestring;
    }
    return SCM_OK;
}

/* The options of `scm compare` (M, K and runs required; threads 1). */
static scm_status cmp_read(const py_args *a, scm_compare_opts *o, const char **sets,
                           const char **ansatz)
{
    long seed = -1, threads = 1, traces = o->traces, certify = 0;
    int nsets = 0, nansatz = 0;
    scm_status st;
    const cJSON *K = cJSON_GetObjectItemCaseSensitive(a->obj, "K"), *it;
    if ((st = py_args_check_keys(a, cmp_keys)) || (st = py_args_long(a, "M", 1, 100000, &o->M)) ||
        (st = py_args_long(a, "runs", 1, 1000000000L, &o->runs)) ||
        (st = py_args_str(a, "config", &o->config_text)) ||
        (st = py_args_str(a, "config_name", &o->config_name)) ||
        (st = py_args_strs(a, "sets", sets, PY_MAX_SETS - 2, &nsets)) ||
        (st = py_args_strs(a, "ansatz", ansatz, SCM_COMPARE_MAX_ANSATZ, &nansatz)) ||
        (st = py_args_str(a, "prefix", &o->prefix)) ||
        (st = py_args_long(a, "seed", 0, 9007199254740991L, &seed)) ||
        (st = py_args_long(a, "threads", 1, 1024, &threads)) ||
        (st = py_args_long(a, "traces", 0, 100, &traces)) ||
        (st = py_args_bool(a, "no_stability", &o->no_stability)) ||
        (st = py_args_long(a, "certify", 0, 2, &certify)))
        return st;
    o->nK = 0;
    cJSON_ArrayForEach(it, K)
    {
        double x = cJSON_IsNumber(it) ? it->valuedouble : 0;
        if (o->nK >= SCM_COMPARE_MAX_K || !(x >= 1 && x <= 100000 && x == (long)x))
            return scm_error_set(a->err, SCM_EINVAL,
                                 "%s: K must be a list of up to 64 integers in [1, 100000]", a->cmd);
        o->K[o->nK++] = (long)x;
    }
    if (o->M < 0 || o->nK == 0 || o->runs < 0 || !o->prefix)
        return scm_error_set(a->err, SCM_EINVAL, "%s: M, K, runs and prefix are required",
                             a->cmd);
    o->sets = sets;
    o->nsets = nsets;
    o->ansatz_files = ansatz;
    o->n_ansatz = nansatz;
    o->have_seed = seed >= 0;
    o->seed = seed >= 0 ? (uint64_t)seed : 0;
    o->threads = (int)threads;
    o->traces = (int)traces;
    o->certify = (int)certify;
    return cmp_families(a, o);
}

scm_status py_call_compare(const py_args *a, char **out)
{
    scm_compare_opts o;
    scm_compare_opts_default(&o);
    const char *sets[PY_MAX_SETS], *ansatz[SCM_COMPARE_MAX_ANSATZ];
    scm_compare_result res;
    memset(&res, 0, sizeof res);
    scm_status st = cmp_read(a, &o, sets, ansatz);
    if (st)
        return st;
    st = scm_compare_run(&o, &res, a->err);
    if (!st) {
        char *md = scm_compare_markdown(&res, o.prefix);
        cJSON *sums = cJSON_CreateArray();
        for (int i = 0; sums && i < res.nK; i++)
            cJSON_AddItemToArray(sums, res.summaries[i] ? cJSON_Duplicate(res.summaries[i], 1)
                                                        : cJSON_CreateNull());
        const char *names[] = {"report", "markdown", "summaries"};
        cJSON *items[] = {cJSON_Duplicate(res.report, 1), md ? cJSON_CreateString(md) : NULL,
                          sums};
        free(md);
        if (!items[0] || !items[1] || !items[2]) {
            for (int i = 0; i < 3; i++)
                cJSON_Delete(items[i]);
            st = scm_error_set(a->err, SCM_ENOMEM, "out of memory");
        } else {
            st = py_args_reply(out, 3, names, items, a->err);
        }
    } else {
        char msg[sizeof a->err->msg];
        scm_error_set(a->err, st, "%s", scm_compare_failure(&res, a->err, msg, sizeof msg));
    }
    scm_compare_result_free(&res);
    return st;
}
