/* pycall_studies.c: `scm lintarget` and `scm staircase` as JSON-in/JSON-out
 * calls (pycall.h, abi.h): the command's options by name with its defaults
 * and ranges, the same library entry points (scm_lintarget_study_run,
 * scm_stair_study_run), and what they write. */
#include <math.h>
#include <string.h>

#include "bindings/pycall.h"
#include "scm/lintarget.h"
#include "scm/staircase.h"

static const char *const lt_keys[] = {"alpha", "c", "t", "t_max", "d", "seed", "n_out", NULL};

/* A list of at most max finite numbers (> 0 when positive) into x. */
static scm_status lt_list(const py_args *a, const char *key, int positive, double *x, int max,
                          int *n)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(a->obj, key), *it;
    if (!l || cJSON_IsNull(l))
        return SCM_OK;
    int k = 0;
    if (!cJSON_IsArray(l) || cJSON_GetArraySize(l) < 1 || cJSON_GetArraySize(l) > max)
        return scm_error_set(a->err, SCM_EINVAL, "%s: %s must be a list of 1 to %d numbers",
                             a->cmd, key, max);
    cJSON_ArrayForEach(it, l)
    {
        double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
        if (!isfinite(v) || (positive && !(v > 0.0)))
            return scm_error_set(a->err, SCM_EINVAL, "%s: %s must be a list of %snumbers", a->cmd,
                                 key, positive ? "positive " : "finite ");
        x[k++] = v;
    }
    *n = k;
    return SCM_OK;
}

scm_status py_call_lintarget(const py_args *a, char **out)
{
    scm_lintarget_study_opts o;
    scm_lintarget_study_opts_default(&o);
    long d = o.d, seed = (long)o.seed, n_out = o.n_out;
    scm_status st;
    if ((st = py_args_check_keys(a, lt_keys)) ||
        (st = lt_list(a, "alpha", 1, o.alpha, SCM_LINTARGET_STUDY_MAX, &o.n_alpha)) ||
        (st = lt_list(a, "c", 0, o.c, SCM_LINTARGET_STUDY_MAX, &o.n_c)) ||
        (st = py_args_double(a, "t", 1e-300, 1e300, &o.t)) ||
        (st = py_args_double(a, "t_max", 1e-300, 1e300, &o.t_max)) ||
        (st = py_args_long(a, "d", 3, 100000000, &d)) ||
        (st = py_args_long(a, "seed", 0, 2147483647L, &seed)) ||
        (st = py_args_long(a, "n_out", 3, 1000000, &n_out)))
        return st;
    if ((st = scm_lintarget_study_opts_check(&o, a->err)))
        return py_args_prefix(a, st);
    o.d = d;
    o.seed = (unsigned long)seed;
    o.n_out = (int)n_out;
    scm_lintarget_study s;
    memset(&s, 0, sizeof s);
    st = scm_lintarget_study_run(&o, &s, a->err);
    if (!st) {
        const char *names[] = {"result", "phases_csv", "traces_csv"};
        cJSON *items[] = {cJSON_Duplicate(s.json, 1), cJSON_CreateString(s.phases_csv),
                          cJSON_CreateString(s.traces_csv)};
        if (!items[0] || !items[1] || !items[2]) {
            for (int i = 0; i < 3; i++)
                cJSON_Delete(items[i]);
            st = scm_error_set(a->err, SCM_ENOMEM, "out of memory");
        } else {
            st = py_args_reply(out, 3, names, items, a->err);
        }
    }
    scm_lintarget_study_free(&s);
    return st;
}

/* ---- staircase ---------------------------------------------------------- */

static const char *const sc_keys[] = {"K", "M", "d", "seed", "n_out", "starts", "t_max",
                                      "rate_tol", "min_dur", "match_tol", "activation", "rule",
                                      "lr_v_ratio", "T_diag", "vstar", "alpha", "threads", NULL};

/* The options of `scm staircase` (K, M and alpha required). */
static scm_status sc_read(const py_args *a, scm_stair_study_opts *o)
{
    const char *act = "relu", *rule = "gd";
    int nT = 0, nvs = 0;
    long threads = 0;
    scm_status st;
    if ((st = py_args_check_keys(a, sc_keys)) || (st = py_args_long(a, "K", 1, 200, &o->K)) ||
        (st = py_args_long(a, "M", 1, 200, &o->M)) ||
        (st = py_args_long(a, "d", 1, 100000000, &o->d)) ||
        (st = py_args_long(a, "seed", 0, 2147483647L, &o->seed)) ||
        (st = py_args_long(a, "n_out", 10, 1000000, &o->n_out)) ||
        (st = py_args_long(a, "starts", 0, 1000000, &o->starts)) ||
        (st = py_args_double(a, "t_max", 1e-300, 1e300, &o->t_max)) ||
        (st = py_args_double(a, "rate_tol", 1e-300, 1e300, &o->so.rate_tol)) ||
        (st = py_args_double(a, "min_dur", 1e-300, 1e300, &o->so.min_dur)) ||
        (st = py_args_double(a, "match_tol", 1e-300, 1e300, &o->match_tol)) ||
        (st = py_args_str(a, "activation", &act)) || (st = py_args_str(a, "rule", &rule)) ||
        (st = py_args_double(a, "lr_v_ratio", 1e-300, 1e300, &o->rp.lr_v_ratio)) ||
        (st = lt_list(a, "T_diag", 1, o->T_diag, SCM_STAIR_STUDY_MAX_M, &nT)) ||
        (st = lt_list(a, "vstar", 0, o->vstar, SCM_STAIR_STUDY_MAX_M, &nvs)) ||
        (st = lt_list(a, "alpha", 1, o->alpha, SCM_STAIR_STUDY_MAX_ALPHA, &o->n_alpha)) ||
        (st = py_args_long(a, "threads", 1, 64, &threads)))
        return st;
    if ((st = scm_stair_study_opts_named(o, act, rule, nT, nvs, (int)threads, a->err)))
        return py_args_prefix(a, st);
    return SCM_OK;
}

scm_status py_call_staircase(const py_args *a, char **out)
{
    scm_stair_study_opts o;
    scm_stair_study_opts_default(&o);
    scm_status st = sc_read(a, &o);
    if (st)
        return st;
    scm_stair_study s;
    memset(&s, 0, sizeof s);
    st = scm_stair_study_run(&o, &s, a->err);
    if (!st) {
        const char *names[] = {"result"};
        cJSON *items[] = {scm_stair_study_json(&o, &s)};
        st = items[0] ? py_args_reply(out, 1, names, items, a->err)
                      : scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    }
    scm_stair_study_free(&s);
    return st;
}
