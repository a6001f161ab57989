/* pycall_split.c: `scm split` and `scm certify` as JSON-in/JSON-out calls
 * (pycall.h, abi.h): the command's options by name with its defaults and
 * ranges, the same library entry points (scm_split_args_check and _run;
 * scm_certify_args_check and _run) and the object the command writes with -o. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bindings/pycall.h"
#include "scm/certify.h"
#include "scm/split.h"

/* A list of 1 to max finite numbers into x (*n of them); absent: *n = 0. */
static scm_status num_list(const py_args *a, const char *key, double *x, int max, int *n)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(a->obj, key), *it;
    *n = 0;
    if (!l || cJSON_IsNull(l))
        return SCM_OK;
    if (!cJSON_IsArray(l) || cJSON_GetArraySize(l) < 1 || cJSON_GetArraySize(l) > max)
        return scm_error_set(a->err, SCM_EINVAL, "%s: %s must be a list of 1 to %d numbers",
                             a->cmd, key, max);
    cJSON_ArrayForEach(it, l)
    {
        double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
        if (!isfinite(v))
            return scm_error_set(a->err, SCM_EINVAL, "%s: %s must be a list of finite numbers",
                                 a->cmd, key);
        x[(*n)++] = v;
    }
    return SCM_OK;
}

/* ---- split -------------------------------------------------------------- */

static const char *const sp_keys[] = {"K", "M", "k1", "index", "loss", "point", "neuron",
                                      "lambda", "lambda_grid", "weights", "d", "starts",
                                      "polish", "perturb", "activation", "threads", NULL};

/* The options of `scm split`, checked by the command's rules. */
static scm_status sp_read(const py_args *a, scm_split_args *s)
{
    scm_status st;
    scm_split_args_default(s);
    if ((st = py_args_check_keys(a, sp_keys)) || (st = py_args_long(a, "K", 1, 1000, &s->K)) ||
        (st = py_args_long(a, "M", 1, 1000, &s->M)) ||
        (st = py_args_long(a, "k1", 0, 1000, &s->k1)) ||
        (st = py_args_long(a, "index", 0, 1000000, &s->index)) ||
        (st = py_args_long(a, "neuron", 0, 999, &s->neuron)) ||
        (st = py_args_long(a, "lambda_grid", 1, SCM_SPLIT_MAX_SAMPLES, &s->grid)) ||
        (st = py_args_long(a, "d", 1, 2000, &s->d)) ||
        (st = py_args_long(a, "starts", 0, 1000000, &s->starts)) ||
        (st = py_args_long(a, "threads", 1, 64, &s->threads)) ||
        (st = py_args_double(a, "loss", -INFINITY, INFINITY, &s->loss)) ||
        (st = num_list(a, "lambda", s->lam, SCM_SPLIT_MAX_SAMPLES, &s->nl)) ||
        (st = num_list(a, "weights", s->w, SCM_SPLIT_MAX_DAUGHTERS, &s->nw)) ||
        (st = py_args_bool(a, "polish", &s->polish)) ||
        (st = py_args_bool(a, "perturb", &s->perturb)) ||
        (st = py_args_str(a, "point", &s->point)) ||
        (st = py_args_str(a, "activation", &s->actname)))
        return st;
    if ((st = scm_split_args_check(s, a->err)))
        return py_args_prefix(a, st);
    return SCM_OK;
}

scm_status py_call_split(const py_args *a, char **out)
{
    scm_split_args s;
    scm_status st = sp_read(a, &s);
    if (st)
        return st;
    scm_split_run r;
    st = scm_split_args_run(&s, &r, a->err);
    if (!st) {
        const char *names[] = {"result"};
        cJSON *items[] = {scm_split_study_json(&r.study)};
        st = items[0] ? py_args_reply(out, 1, names, items, a->err)
                      : scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    }
    scm_split_run_free(&r);
    return st;
}

/* ---- certify ------------------------------------------------------------ */

static const char *const ce_keys[] = {"K",      "M",     "k1",     "all",        "every",
                                      "point",  "index", "starts", "max_radius", NULL};

scm_status py_call_certify(const py_args *a, char **out)
{
    scm_certify_args ca;
    scm_certify_args_default(&ca);
    scm_certify_opts o;
    scm_certify_opts_default(&o);
    scm_status st;
    if ((st = py_args_check_keys(a, ce_keys)) || (st = py_args_long(a, "K", 1, 10000, &ca.K)) ||
        (st = py_args_long(a, "M", 1, 10000, &ca.M)) ||
        (st = py_args_long(a, "k1", 0, 10000, &ca.k1)) ||
        (st = py_args_long(a, "index", 0, 1000000, &ca.index)) ||
        (st = py_args_long(a, "starts", 1, 100000, &ca.starts)) ||
        (st = py_args_bool(a, "all", &ca.all)) || (st = py_args_bool(a, "every", &ca.every)) ||
        (st = py_args_str(a, "point", &ca.point)) ||
        (st = py_args_double(a, "max_radius", 0.0, 1.0, &o.max_radius)))
        return st;
    if (!(o.max_radius > 0.0 && o.max_radius < 1.0))
        return scm_error_set(a->err, SCM_EINVAL, "%s: max_radius must be in (0, 1), got %g",
                             a->cmd, o.max_radius);
    if ((st = scm_certify_args_check(&ca, a->err)))
        return py_args_prefix(a, st);
    scm_certify_list l = {0};
    st = scm_certify_args_run(&ca, &o, NULL, NULL, &l, a->err);
    if (!st) {
        const char *names[] = {"result"};
        cJSON *items[] = {scm_certify_list_json(&l, &o)};
        st = items[0] ? py_args_reply(out, 1, names, items, a->err)
                      : scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    }
    scm_certify_list_free(&l);
    return st;
}
