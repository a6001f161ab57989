/* pycall_split.c: `scm split` and `scm certify` as JSON-in/JSON-out calls
 * (pycall.h, abi.h): the command's options by name with its defaults and
 * ranges, the same library entry points (scm_split_samples,
 * scm_split_parent_load / _choose, scm_split_study_run; scm_certify_family,
 * scm_certify_fpfile) and the object the command writes with -o. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bindings/pycall.h"
#include "core/parallel.h"
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

typedef struct {
    long K, M, k1, index, r, grid, d, starts, threads;
    double loss, lam[SCM_SPLIT_MAX_SAMPLES], w[SCM_SPLIT_MAX_DAUGHTERS];
    int nl, nw, polish, perturb;
    const char *point, *act;
} sp_args;

/* The options of `scm split`, checked as the command checks them. */
static scm_status sp_read(const py_args *a, sp_args *s)
{
    scm_status st;
    *s = (sp_args){.K = -1, .M = -1, .k1 = -1, .index = -1, .r = -1, .starts = 100, .loss = NAN};
    if ((st = py_args_check_keys(a, sp_keys)) || (st = py_args_long(a, "K", 1, 1000, &s->K)) ||
        (st = py_args_long(a, "M", 1, 1000, &s->M)) ||
        (st = py_args_long(a, "k1", 0, 1000, &s->k1)) ||
        (st = py_args_long(a, "index", 0, 1000000, &s->index)) ||
        (st = py_args_long(a, "neuron", 0, 999, &s->r)) ||
        (st = py_args_long(a, "lambda_grid", 1, SCM_SPLIT_MAX_SAMPLES, &s->grid)) ||
        (st = py_args_long(a, "d", 1, 2000, &s->d)) ||
        (st = py_args_long(a, "starts", 0, 1000000, &s->starts)) ||
        (st = py_args_long(a, "threads", 1, 64, &s->threads)) ||
        (st = py_args_double(a, "loss", -INFINITY, INFINITY, &s->loss)) ||
        (st = num_list(a, "lambda", s->lam, SCM_SPLIT_MAX_SAMPLES, &s->nl)) ||
        (st = num_list(a, "weights", s->w, SCM_SPLIT_MAX_DAUGHTERS, &s->nw)) ||
        (st = py_args_bool(a, "polish", &s->polish)) ||
        (st = py_args_bool(a, "perturb", &s->perturb)) ||
        (st = py_args_str(a, "point", &s->point)) || (st = py_args_str(a, "activation", &s->act)))
        return st;
    int nsel = (s->k1 >= 0) + (s->index >= 0 && !s->point) + !isnan(s->loss);
    const char *why = NULL;
    if (s->r < 0)
        why = "neuron is required";
    else if (s->point ? (s->K >= 0 || s->M >= 0 || s->k1 >= 0 || !isnan(s->loss))
                      : (s->K < 0 || s->M < 0 || nsel != 1))
        why = "give K, M and one of k1, index, loss; or point [and index] (without K, M, k1, "
              "loss)";
    else if (!!s->nl + !!s->grid + !!s->nw > 1)
        why = "give one of lambda, lambda_grid, weights";
    else if (s->nw == 1)
        why = "weights needs at least 2 daughters";
    else if (s->polish && !s->point)
        why = "polish applies to point only";
    if (why)
        return scm_error_set(a->err, SCM_EINVAL, "%s: %s", a->cmd, why);
    if (!s->nl && !s->nw && !s->grid)
        s->grid = 9;
    return SCM_OK;
}

/* The parent: read from the point file, or chosen among the enumerated
 * points (activation relu by default, as the command). */
static scm_status sp_parent(const py_args *a, const sp_args *s, scm_split_parent *p)
{
    if (s->point) {
        scm_status st = scm_split_parent_load(s->point, s->index, p, a->err);
        if (!st && s->act)
            snprintf(p->act, sizeof p->act, "%s", s->act);
        return st;
    }
    const char *an = s->act ? s->act : "relu";
    const scm_activation *act = scm_activation_find(an);
    if (!act)
        return scm_error_set(a->err, SCM_EINVAL, "%s: unknown activation '%s' (relu, erf, linear)",
                             a->cmd, an);
    int threads = s->threads > 0 ? (int)s->threads : scm_threads_online();
    return scm_split_parent_choose(s->K, s->M, act, s->starts, threads, s->k1, s->index, s->loss,
                                   p, a->err);
}

scm_status py_call_split(const py_args *a, char **out)
{
    sp_args s;
    scm_status st = sp_read(a, &s);
    if (st)
        return st;
    scm_split_sample *smp = NULL;
    scm_split_parent p;
    memset(&p, 0, sizeof p);
    scm_split_study study;
    memset(&study, 0, sizeof study);
    int ns = 0, ran = 0;
    st = scm_split_samples(s.lam, s.nl, s.grid, s.w, s.nw, &smp, &ns, a->err);
    if (!st)
        st = sp_parent(a, &s, &p);
    if (!st) {
        scm_split_study_opts o;
        scm_split_study_opts_default(&o);
        o.neuron = (int)s.r;
        o.d = s.d;
        o.polish = s.polish;
        o.perturb = s.perturb;
        st = scm_split_study_run(&p, &o, smp, ns, &study, a->err);
        ran = 1;
    }
    if (!st) {
        const char *names[] = {"result"};
        cJSON *items[] = {scm_split_study_json(&study)};
        st = items[0] ? py_args_reply(out, 1, names, items, a->err)
                      : scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    }
    if (ran)
        scm_split_study_free(&study);
    scm_split_parent_free(&p);
    free(smp);
    return st;
}

/* ---- certify ------------------------------------------------------------ */

static const char *const ce_keys[] = {"K",      "M",     "k1",     "all",        "every",
                                      "point",  "index", "starts", "max_radius", NULL};

scm_status py_call_certify(const py_args *a, char **out)
{
    long K = -1, M = -1, k1 = -1, index = -1, starts = 40;
    int all = 0, every = 0;
    const char *point = NULL;
    scm_certify_opts o;
    scm_certify_opts_default(&o);
    scm_status st;
    if ((st = py_args_check_keys(a, ce_keys)) || (st = py_args_long(a, "K", 1, 10000, &K)) ||
        (st = py_args_long(a, "M", 1, 10000, &M)) ||
        (st = py_args_long(a, "k1", 0, 10000, &k1)) ||
        (st = py_args_long(a, "index", 0, 1000000, &index)) ||
        (st = py_args_long(a, "starts", 1, 100000, &starts)) ||
        (st = py_args_bool(a, "all", &all)) || (st = py_args_bool(a, "every", &every)) ||
        (st = py_args_str(a, "point", &point)) ||
        (st = py_args_double(a, "max_radius", 0.0, 1.0, &o.max_radius)))
        return st;
    if (!(o.max_radius > 0.0 && o.max_radius < 1.0))
        return scm_error_set(a->err, SCM_EINVAL, "%s: max_radius must be in (0, 1), got %g",
                             a->cmd, o.max_radius);
    if (point ? (K >= 0 || M >= 0 || all || k1 >= 0 || index < 0)
              : (K < 0 || M < 0 || index >= 0 || (all && k1 >= 0)))
        return scm_error_set(a->err, SCM_EINVAL,
                             "%s: give K, M [and k1 or all], or point and index", a->cmd);
    if (!point && k1 > K)
        return scm_error_set(a->err, SCM_EINVAL, "%s: k1 %ld exceeds K = %ld", a->cmd, k1, K);
    scm_certify_list l = {0};
    st = point ? scm_certify_fpfile(point, index, &o, &l, a->err)
               : scm_certify_family((int)K, (int)M, all ? -1 : (k1 < 0 ? 1 : (int)k1), every,
                                    starts, &o, &l, a->err);
    if (!st) {
        const char *names[] = {"result"};
        cJSON *items[] = {scm_certify_list_json(&l, &o)};
        st = items[0] ? py_args_reply(out, 1, names, items, a->err)
                      : scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    }
    scm_certify_list_free(&l);
    return st;
}
