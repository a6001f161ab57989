/* pycall.c: the commands' computations as JSON-in/JSON-out calls for the
 * Python front (abi.h, scm_abi_call): the arguments are the command-line
 * options by name (underscores for dashes), with the command's defaults and
 * ranges, passed to the same library entry points the CLI calls, and the
 * reply holds the object the command writes with -o.  This file: the
 * dispatch, `fixed-points`, `stability` and `crosscheck`; pycall_runs.c:
 * sweep, merge, simulate and compare. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bindings/pyargs.h"
#include "bindings/pycall.h"
#include "scm/abi.h"
#include "scm/crosscheck.h"
#include "scm/fptable.h"
#include "scm/output.h"
#include "scm/stabpoint.h"

/* ---- fixed-points ------------------------------------------------------- */

static const char *const fp_keys[] = {
    "K", "M", "k1", "activation", "starts", "seed", "sweep_passes", "deflate", "polish_max_K",
    "chain_from", "continue_to", "grow_from", "probes", "fixed_k1", "all", "stability",
    "max_residual", "threads", "ansatz", "seed_from", NULL};

/* The options of `scm fixed-points` from a (its ranges); files and seed
 * files point into a's object. */
static scm_status fp_read(const py_args *a, scm_fp_table_opts *o, const char **files,
                          scm_fp_table_seeds *seeds)
{
    const char *act = "relu", *sf[SCM_FP_TABLE_MAX_FILES];
    long threads = -1;
    int nsf = 0;
    scm_status st;
    if ((st = py_args_check_keys(a, fp_keys)))
        return st;
    if ((st = py_args_long(a, "K", 1, 100000, &o->K)) ||
        (st = py_args_long(a, "M", 1, 100000, &o->M)) ||
        (st = py_args_long(a, "k1", 0, 100000, &o->k1)) ||
        (st = py_args_long(a, "starts", 0, 1000000, &o->starts)) ||
        (st = py_args_long(a, "seed", 0, 2147483647L, &o->seed)) ||
        (st = py_args_long(a, "sweep_passes", 0, 1000, &o->sweep_passes)) ||
        (st = py_args_long(a, "deflate", 0, 1000, &o->deflate)) ||
        (st = py_args_long(a, "polish_max_K", 0, 100000, &o->polish_max_K)) ||
        (st = py_args_long(a, "chain_from", 1, 100000, &o->chain_from)) ||
        (st = py_args_long(a, "continue_to", 1, 1000000, &o->continue_to)) ||
        (st = py_args_long(a, "grow_from", 1, 100000, &o->grow_from)) ||
        (st = py_args_long(a, "probes", 0, 100000, &o->probes)) ||
        (st = py_args_long(a, "fixed_k1", 1, 100000, &o->fixed_k1)) ||
        (st = py_args_long(a, "threads", 1, 64, &threads)) ||
        (st = py_args_bool(a, "all", &o->all)) || (st = py_args_bool(a, "stability", &o->stability)) ||
        (st = py_args_str(a, "activation", &act)) ||
        (st = py_args_strs(a, "ansatz", files, SCM_FP_TABLE_MAX_FILES, &o->n_ansatz)) ||
        (st = py_args_strs(a, "seed_from", sf, SCM_FP_TABLE_MAX_FILES, &nsf)))
        return st;
    if (py_args_has(a, "max_residual")) {
        if ((st = py_args_double(a, "max_residual", 0.0, 1.0, &o->max_residual)))
            return st;
        if (!(o->max_residual > 0.0 && o->max_residual < 1.0))
            return scm_error_set(a->err, SCM_EINVAL, "%s: max_residual must be in (0, 1), got %g",
                                 a->cmd, o->max_residual);
    }
    if (threads > 0)
        o->threads = (int)threads;
    if ((st = scm_fp_table_opts_named(o, act, a->err)))
        return py_args_prefix(a, st);
    for (int i = 0; i < nsf; i++)
        if ((st = scm_fp_table_seeds_read(seeds, sf[i], a->err)))
            return st;
    o->ansatz_files = files;
    o->seeds = seeds;
    return scm_fp_table_opts_check(o, a->err);
}

static scm_status call_fixed_points(const py_args *a, char **out)
{
    scm_fp_table_opts o;
    scm_fp_table_opts_default(&o);
    const char *files[SCM_FP_TABLE_MAX_FILES];
    scm_fp_table_seeds *seeds = scm_fp_table_seeds_alloc();
    scm_fp_table *t = NULL;
    scm_error deferred;
    if (!seeds)
        return scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    scm_status st = fp_read(a, &o, files, seeds);
    if (!st)
        st = scm_fp_table_run(&o, &t, a->err);
    if (!st) {
        scm_status ds = scm_fp_table_status(t, &deferred);
        char *text = scm_fp_table_text(t);
        const char *names[] = {"result", "text", "residual_ok", "n_above", "solutions",
                               "deferred_error"};
        cJSON *items[] = {scm_fp_table_json(t), text ? cJSON_CreateString(text) : NULL,
                          cJSON_CreateBool(scm_fp_table_residual_ok(t)),
                          cJSON_CreateNumber(scm_fp_table_n_above(t)),
                          cJSON_CreateNumber(scm_fp_table_n_solutions(t)),
                          ds ? cJSON_CreateString(deferred.msg) : NULL};
        free(text);
        if (!items[0])
            st = scm_error_set(a->err, SCM_ENOMEM, "out of memory");
        for (int i = 0; st && i < 6; i++)
            cJSON_Delete(items[i]);
        if (!st)
            st = py_args_reply(out, 6, names, items, a->err);
    }
    scm_fp_table_free(t);
    scm_fp_table_seeds_free(seeds);
    return st;
}

/* ---- stability ---------------------------------------------------------- */

static const char *const st_keys[] = {
    "point", "index", "K", "M", "k1", "loss", "ansatz", "activation", "starts", "threads", "d",
    "steps", "trials", "seed", "eta", "t_max", "verdict_sigma_max", "sigma", "flow", "hessian",
    "dense", "perturb", NULL};

/* --sigma as a list of positive numbers. */
static scm_status st_sigma(const py_args *a, scm_stab_opts *o)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(a->obj, "sigma"), *it;
    if (!s || cJSON_IsNull(s))
        return SCM_OK;
    if (!cJSON_IsArray(s) || cJSON_GetArraySize(s) < 1 ||
        cJSON_GetArraySize(s) > SCM_STAB_MAX_SIGMA)
        return scm_error_set(a->err, SCM_EINVAL, "%s: sigma must be a list of 1 to %d numbers > 0",
                             a->cmd, SCM_STAB_MAX_SIGMA);
    o->n_sigma = 0;
    cJSON_ArrayForEach(it, s)
    {
        if (!cJSON_IsNumber(it) || !(it->valuedouble > 0.0) || !isfinite(it->valuedouble))
            return scm_error_set(a->err, SCM_EINVAL, "%s: sigma must be a list of numbers > 0",
                                 a->cmd);
        o->sigma[o->n_sigma++] = it->valuedouble;
    }
    return SCM_OK;
}

/* The options of `scm stability` (its defaults, scm_stabpoint_args_default)
 * and the point's choice, checked by the command's rules. */
static scm_status st_read(const py_args *a, scm_stabpoint_args *sa, scm_stab_opts *o, int *dense,
                          int *perturb)
{
    static const char *const modes[] = {"auto", "weights", "qr", "none"};
    const char *mode = "auto";
    scm_status st;
    scm_stabpoint_args_default(sa);
    scm_stab_opts_default(o);
    if ((st = py_args_check_keys(a, st_keys)) || (st = py_args_str(a, "point", &sa->point)) ||
        (st = py_args_long(a, "index", 0, 1000000, &sa->index)) ||
        (st = py_args_long(a, "K", 1, 10000, &sa->K)) ||
        (st = py_args_long(a, "M", 1, 10000, &sa->M)) ||
        (st = py_args_long(a, "k1", 0, 10000, &sa->k1)) ||
        (st = py_args_double(a, "loss", 0.0, INFINITY, &sa->loss)) ||
        (st = py_args_str(a, "ansatz", &sa->ansatz)) ||
        (st = py_args_str(a, "activation", &sa->actname)) ||
        (st = py_args_long(a, "starts", 0, 1000000, &sa->starts)) ||
        (st = py_args_long(a, "threads", 1, 64, &sa->threads)) ||
        (st = py_args_long(a, "d", 1, 100000, &sa->d)) ||
        (st = py_args_long(a, "steps", 0, 100000000, &sa->steps)) ||
        (st = py_args_long(a, "trials", 1, 100000, &sa->trials)) ||
        (st = py_args_long(a, "seed", 0, 2147483647L, &sa->seed)) ||
        (st = py_args_double(a, "eta", 1e-300, INFINITY, &o->eta)) ||
        (st = py_args_double(a, "t_max", 1e-300, INFINITY, &o->t_max)) ||
        (st = py_args_double(a, "verdict_sigma_max", 1e-300, INFINITY, &o->verdict_sigma_max)) ||
        (st = st_sigma(a, o)) || (st = py_args_bool(a, "flow", &sa->flow)) ||
        (st = py_args_bool(a, "hessian", &sa->hessian)) || (st = py_args_bool(a, "dense", dense)) ||
        (st = py_args_str(a, "perturb", &mode)))
        return st;
    *perturb = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(mode, modes[i]) == 0)
            *perturb = i; /* SCM_STABPOINT_PERTURB_AUTO, _WEIGHTS, _QR, _NONE */
    if (*perturb < 0)
        return scm_error_set(a->err, SCM_EINVAL,
                             "%s: perturb must be auto, weights, qr or none, got '%s'", a->cmd, mode);
    if ((st = scm_stabpoint_args_check(sa, a->err)))
        return py_args_prefix(a, st);
    return scm_stabpoint_args_opts(sa, o, a->err);
}

static scm_status call_stability(const py_args *a, char **out)
{
    scm_stab_opts o;
    scm_stabpoint_args sa;
    scm_stabpoint sp;
    memset(&sp, 0, sizeof sp);
    const scm_activation *act = NULL;
    scm_stab_result r;
    int dense = 0, perturb = SCM_STABPOINT_PERTURB_AUTO;
    scm_status st = st_read(a, &sa, &o, &dense, &perturb);
    if (!st)
        st = scm_stabpoint_args_get(&sa, &sp, &act, a->err);
    if (!st)
        st = scm_stabpoint_analyse(&sp, act, &o, dense, perturb, sa.ansatz, &r, a->err);
    if (!st) {
        const char *names[] = {"result"};
        cJSON *items[] = {scm_stabpoint_json(&sp, act, &o, &r)};
        st = items[0] ? py_args_reply(out, 1, names, items, a->err)
                      : scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    }
    scm_stabpoint_free(&sp);
    return st;
}

/* ---- crosscheck --------------------------------------------------------- */

static const char *const xc_keys[] = {
    "K", "M", "runs", "seed", "first", "starts", "fp_seed", "deflate", "sweep_passes",
    "gd_max_iter", "threads", "method", "activation", "ansatz", NULL};

static scm_status xc_read(const py_args *a, scm_xc_check_opts *o, const char **files)
{
    long K = -1, M = -1, threads = 0;
    const char *method = "both", *act = "relu";
    scm_status st;
    scm_xc_check_opts_default(o);
    o->deflate = SCM_FP_TABLE_DEFLATE;
    o->sweep_passes = SCM_FP_TABLE_SWEEP_PASSES;
    if ((st = py_args_check_keys(a, xc_keys)) || (st = py_args_long(a, "K", 1, 1000, &K)) ||
        (st = py_args_long(a, "M", 1, 1000, &M)) ||
        (st = py_args_long(a, "runs", 0, 100000000L, &o->runs)) ||
        (st = py_args_long(a, "seed", 0, 2147483647L, &o->seed)) ||
        (st = py_args_long(a, "first", 0, 2147483647L, &o->first)) ||
        (st = py_args_long(a, "starts", 0, 1000000, &o->starts)) ||
        (st = py_args_long(a, "fp_seed", 0, 2147483647L, &o->fp_seed)) ||
        (st = py_args_long(a, "deflate", 0, 1000, &o->deflate)) ||
        (st = py_args_long(a, "sweep_passes", 0, 1000, &o->sweep_passes)) ||
        (st = py_args_long(a, "gd_max_iter", 1, 100000000L, &o->run.gd_max_iter)) ||
        (st = py_args_long(a, "threads", 1, 64, &threads)) ||
        (st = py_args_str(a, "method", &method)) || (st = py_args_str(a, "activation", &act)) ||
        (st = py_args_strs(a, "ansatz", files, SCM_XC_MAX_ANSATZ, &o->n_ansatz)))
        return st;
    if (strcmp(method, "ode") && strcmp(method, "gd") && strcmp(method, "both"))
        return scm_error_set(a->err, SCM_EINVAL, "%s: method must be ode, gd or both, got '%s'",
                             a->cmd, method);
    if ((st = scm_xc_check_opts_named(o, K, M, act, !strcmp(method, "ode") ? 0
                                                    : !strcmp(method, "gd") ? 1 : 2, a->err)))
        return py_args_prefix(a, st);
    o->threads = (int)threads; /* 0: the processors online, as the command */
    o->ansatz_files = files;
    return SCM_OK;
}

static scm_status call_crosscheck(const py_args *a, char **out)
{
    scm_xc_check_opts o;
    const char *files[SCM_XC_MAX_ANSATZ];
    scm_xc_check *c = NULL;
    scm_status st = xc_read(a, &o, files);
    if (!st)
        st = scm_xc_check_new(&o, &c, a->err);
    if (!st)
        st = scm_xc_check_compute(c, NULL, NULL, a->err);
    if (!st) {
        char *text = scm_xc_check_text(c, 0);
        const char *names[] = {"result", "text", "unmatched"};
        cJSON *items[] = {scm_xc_check_json(c), text ? cJSON_CreateString(text) : NULL,
                          cJSON_CreateNumber((double)scm_xc_check_unmatched(c))};
        free(text);
        if (!items[0]) {
            cJSON_Delete(items[1]);
            cJSON_Delete(items[2]);
            st = scm_error_set(a->err, SCM_ENOMEM, "out of memory");
        } else {
            st = py_args_reply(out, 3, names, items, a->err);
        }
    }
    scm_xc_check_free(c);
    return st;
}

/* ---- the dispatch ------------------------------------------------------- */

static const struct {
    const char *name;
    scm_status (*fn)(const py_args *a, char **out);
} py_commands[] = {
    {"fixed_points", call_fixed_points}, {"stability", call_stability},
    {"crosscheck", call_crosscheck},     {"sweep", py_call_sweep},
    {"merge", py_call_merge},            {"simulate", py_call_simulate},
    {"compare", py_call_compare},        {"symstab", py_call_symstab},
    {"lintarget", py_call_lintarget},    {"staircase", py_call_staircase},
    {"split", py_call_split},            {"certify", py_call_certify},
};

scm_status scm_abi_call(const char *cmd, const char *args, char **out, scm_error *err)
{
    scm_error_clear(err);
    if (!out)
        return scm_error_set(err, SCM_EINVAL, "scm_abi_call: out is NULL");
    *out = NULL;
    if (!cmd || !args)
        return scm_error_set(err, SCM_EINVAL, "scm_abi_call: command and arguments are required");
    for (size_t i = 0; i < sizeof py_commands / sizeof py_commands[0]; i++) {
        if (strcmp(cmd, py_commands[i].name) != 0)
            continue;
        cJSON *obj = cJSON_Parse(args);
        if (!obj)
            return scm_error_set(err, SCM_EINVAL, "%s: the arguments are not JSON", cmd);
        py_args a = {cmd, obj, err};
        scm_status st = py_commands[i].fn(&a, out);
        cJSON_Delete(obj);
        if (st && !err->msg[0])
            scm_error_set(err, st, "%s failed", cmd);
        return st;
    }
    return scm_error_set(err, SCM_EINVAL, "unknown command '%s'", cmd);
}

void scm_abi_free(char *s)
{
    free(s);
}
