/* pyargs.c: the checked arguments of scm_abi_call (pyargs.h). */
#include "bindings/pyargs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/output.h"

scm_status py_args_check_keys(const py_args *a, const char *const *keys)
{
    if (!cJSON_IsObject(a->obj))
        return scm_error_set(a->err, SCM_EINVAL, "%s: the arguments must be a JSON object",
                             a->cmd);
    for (const cJSON *it = a->obj->child; it; it = it->next) {
        int known = 0;
        for (int i = 0; keys[i] && !known; i++)
            known = it->string && strcmp(it->string, keys[i]) == 0;
        if (!known) {
            char list[1024] = "";
            size_t len = 0;
            for (int i = 0; keys[i] && len < sizeof list - 80; i++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                        keys[i]);
            return scm_error_set(a->err, SCM_EINVAL, "%s: unknown argument '%s' (known: %s)",
                                 a->cmd, it->string ? it->string : "?", list);
        }
    }
    return SCM_OK;
}

static const cJSON *get(const py_args *a, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(a->obj, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

int py_args_has(const py_args *a, const char *key)
{
    return get(a, key) != NULL;
}

/* A short rendering of a value for a message. */
static void show(const cJSON *v, char *buf, size_t len)
{
    char *s = cJSON_PrintUnformatted(v);
    snprintf(buf, len, "%.60s", s ? s : "?");
    cJSON_free(s);
}

scm_status py_args_long(const py_args *a, const char *key, long lo, long hi, long *v)
{
    const cJSON *j = get(a, key);
    if (!j)
        return SCM_OK;
    double x = cJSON_IsNumber(j) ? j->valuedouble : NAN;
    if (!(x >= (double)lo && x <= (double)hi && x == floor(x))) {
        char buf[80];
        show(j, buf, sizeof buf);
        return scm_error_set(a->err, SCM_EINVAL, "%s: %s must be an integer in [%ld, %ld], got %s",
                             a->cmd, key, lo, hi, buf);
    }
    *v = (long)x;
    return SCM_OK;
}

scm_status py_args_double(const py_args *a, const char *key, double lo, double hi, double *v)
{
    const cJSON *j = get(a, key);
    if (!j)
        return SCM_OK;
    double x = cJSON_IsNumber(j) ? j->valuedouble : NAN;
    if (!(x >= lo && x <= hi && isfinite(x))) {
        char buf[80];
        show(j, buf, sizeof buf);
        return scm_error_set(a->err, SCM_EINVAL, "%s: %s must be a number in [%g, %g], got %s",
                             a->cmd, key, lo, hi, buf);
    }
    *v = x;
    return SCM_OK;
}

scm_status py_args_bool(const py_args *a, const char *key, int *v)
{
    const cJSON *j = get(a, key);
    if (!j)
        return SCM_OK;
    if (!cJSON_IsBool(j)) {
        char buf[80];
        show(j, buf, sizeof buf);
        return scm_error_set(a->err, SCM_EINVAL, "%s: %s must be true or false, got %s", a->cmd,
                             key, buf);
    }
    *v = cJSON_IsTrue(j) ? 1 : 0;
    return SCM_OK;
}

scm_status py_args_str(const py_args *a, const char *key, const char **v)
{
    const cJSON *j = get(a, key);
    if (!j)
        return SCM_OK;
    if (!cJSON_IsString(j)) {
        char buf[80];
        show(j, buf, sizeof buf);
        return scm_error_set(a->err, SCM_EINVAL, "%s: %s must be a string, got %s", a->cmd, key,
                             buf);
    }
    *v = j->valuestring;
    return SCM_OK;
}

scm_status py_args_strs(const py_args *a, const char *key, const char **v, int max, int *n)
{
    const cJSON *j = get(a, key);
    if (!j)
        return SCM_OK;
    int k = 0;
    const cJSON *it;
    if (!cJSON_IsArray(j))
        return scm_error_set(a->err, SCM_EINVAL, "%s: %s must be a list of strings", a->cmd, key);
    cJSON_ArrayForEach(it, j)
    {
        if (!cJSON_IsString(it))
            return scm_error_set(a->err, SCM_EINVAL, "%s: %s must be a list of strings", a->cmd,
                                 key);
        if (k == max)
            return scm_error_set(a->err, SCM_EINVAL, "%s: %s: at most %d entries", a->cmd, key,
                                 max);
        v[k++] = it->valuestring;
    }
    *n = k;
    return SCM_OK;
}

scm_status py_args_reply(char **out, int n, const char *const *names, cJSON *const *items,
                         scm_error *err)
{
    cJSON *root = cJSON_CreateObject();
    int ok = root != NULL;
    for (int i = 0; i < n; i++) {
        if (!items[i])
            continue;
        if (ok && cJSON_AddItemToObject(root, names[i], items[i]))
            continue;
        cJSON_Delete(items[i]);
        ok = 0;
    }
    *out = ok ? scm_output_print(root, 1) : NULL;
    cJSON_Delete(root);
    return *out ? SCM_OK : scm_error_set(err, SCM_ENOMEM, "out of memory");
}

scm_status py_args_prefix(const py_args *a, scm_status st)
{
    char msg[sizeof a->err->msg];
    snprintf(msg, sizeof msg, "%s", a->err->msg);
    return scm_error_set(a->err, st, "%s: %s", a->cmd, msg);
}
