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
    if (!py_args_has(a, "K") || !py_args_has(a, "M"))
        return scm_error_set(a->err, SCM_EINVAL, "%s: K and M are required", a->cmd);
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
    if (!(o->act = scm_activation_find(act)))
        return scm_error_set(a->err, SCM_EINVAL,
                             "%s: unknown activation '%s' (relu, erf, linear)", a->cmd, act);
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

/* The options of `scm stability` (its defaults: starts 100, steps 1000,
 * trials 10, seed 1) and the point's choice. */
static scm_status st_read(const py_args *a, scm_stab_opts *o, scm_family_pick_opts *fo,
                          const char **point, long *index, const char **act, int *dense,
                          int *perturb)
{
    static const char *const modes[] = {"auto", "weights", "qr", "none"};
    const char *mode = "auto";
    long K = -1, M = -1, k1 = -1, starts = 100, d = 0, steps = 1000, trials = 10, seed = 1;
    long threads = 0;
    int flow = 1, hess = 1;
    double loss = NAN;
    scm_status st;
    scm_stab_opts_default(o);
    d = o->d;
    if ((st = py_args_check_keys(a, st_keys)) || (st = py_args_str(a, "point", point)) ||
        (st = py_args_long(a, "index", 0, 1000000, index)) ||
        (st = py_args_long(a, "K", 1, 10000, &K)) || (st = py_args_long(a, "M", 1, 10000, &M)) ||
        (st = py_args_long(a, "k1", 0, 10000, &k1)) ||
        (st = py_args_double(a, "loss", 0.0, INFINITY, &loss)) ||
        (st = py_args_str(a, "ansatz", &fo->ansatz_file)) || (st = py_args_str(a, "activation", act)) ||
        (st = py_args_long(a, "starts", 0, 1000000, &starts)) ||
        (st = py_args_long(a, "threads", 1, 64, &threads)) ||
        (st = py_args_long(a, "d", 1, 100000, &d)) ||
        (st = py_args_long(a, "steps", 0, 100000000, &steps)) ||
        (st = py_args_long(a, "trials", 1, 100000, &trials)) ||
        (st = py_args_long(a, "seed", 0, 2147483647L, &seed)) ||
        (st = py_args_double(a, "eta", 1e-300, INFINITY, &o->eta)) ||
        (st = py_args_double(a, "t_max", 1e-300, INFINITY, &o->t_max)) ||
        (st = py_args_double(a, "verdict_sigma_max", 1e-300, INFINITY, &o->verdict_sigma_max)) ||
        (st = st_sigma(a, o)) || (st = py_args_bool(a, "flow", &flow)) ||
        (st = py_args_bool(a, "hessian", &hess)) || (st = py_args_bool(a, "dense", dense)) ||
        (st = py_args_str(a, "perturb", &mode)))
        return st;
    *perturb = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(mode, modes[i]) == 0)
            *perturb = i; /* SCM_STABPOINT_PERTURB_AUTO, _WEIGHTS, _QR, _NONE */
    if (*perturb < 0)
        return scm_error_set(a->err, SCM_EINVAL,
                             "%s: perturb must be auto, weights, qr or none, got '%s'", a->cmd, mode);
    int family = K >= 0 || M >= 0 || k1 >= 0;
    const char *why = NULL;
    if (*point && family)
        why = "give either point and index or K, M and k1, not both";
    else if (*point && isfinite(loss))
        why = "loss selects in a family (K, M, k1), not in a point file";
    else if (*index >= 0 && isfinite(loss))
        why = "give index or loss, not both";
    else if (*point && *index < 0)
        why = "point needs index";
    else if (!*point && (K < 0 || M < 0 || k1 < 0))
        why = "K, M and k1 are required (or point and index)";
    else if (!*point && k1 > K)
        why = "k1 exceeds K";
    if (why)
        return scm_error_set(a->err, SCM_EINVAL, "%s: %s", a->cmd, why);
    o->d = d;
    o->n_steps = (int)steps;
    o->n_trials = (int)trials;
    o->seed = (unsigned long)seed;
    o->run_flow = flow;
    o->hessian = hess;
    fo->K = (int)K, fo->M = (int)M, fo->k1 = (int)k1;
    fo->starts = starts;
    fo->threads = (int)threads; /* 0: the processors online; the family does not depend on it */
    fo->index = *index;
    fo->loss = loss;
    return scm_stab_opts_check(o, a->err);
}

static scm_status call_stability(const py_args *a, char **out)
{
    scm_stab_opts o;
    scm_family_pick_opts fo;
    scm_family_pick_opts_default(&fo);
    const char *point = NULL, *actname = NULL;
    long index = -1;
    scm_stabpoint sp;
    memset(&sp, 0, sizeof sp);
    const scm_activation *act = NULL;
    scm_stab_result r;
    int dense = 0, perturb = SCM_STABPOINT_PERTURB_AUTO;
    scm_status st = st_read(a, &o, &fo, &point, &index, &actname, &dense, &perturb);
    if (!st)
        st = scm_stabpoint_get(point, index, actname, &fo, &sp, &act, a->err);
    if (!st)
        st = scm_stabpoint_analyse(&sp, act, &o, dense, perturb, fo.ansatz_file, &r, a->err);
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
    if (K < 0 || M < 0)
        return scm_error_set(a->err, SCM_EINVAL, "%s: K and M are required", a->cmd);
    if (strcmp(method, "ode") && strcmp(method, "gd") && strcmp(method, "both"))
        return scm_error_set(a->err, SCM_EINVAL, "%s: method must be ode, gd or both, got '%s'",
                             a->cmd, method);
    o->ode = strcmp(method, "gd") != 0;
    o->gd = strcmp(method, "ode") != 0;
    if (!(o->act = scm_activation_find(act)))
        return scm_error_set(a->err, SCM_EINVAL,
                             "%s: unknown activation '%s' (relu, erf, linear)", a->cmd, act);
    o->K = (int)K;
    o->M = (int)M;
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
        st = scm_xc_check_enumerate(c, a->err);
    for (int me = SCM_XC_ODE; !st && me <= SCM_XC_GD; me++)
        if (me == SCM_XC_ODE ? o.ode : o.gd)
            st = scm_xc_check_run(c, (scm_xc_method)me, a->err);
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
