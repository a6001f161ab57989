/* config.c: parsing, overriding and validating a run configuration; see
 * config.h.  Validation reads the JSON tree section by section; every
 * rejection names the full key ("integrator.rtol").  The configuration
 * actually used is rebuilt from the validated values, so it always holds
 * every default. */
#include "scm/config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scm/init.h"
#include "scm/output.h"

#define MAX_SIZE 100000

void scm_config_free(scm_config *c)
{
    if (!c)
        return;
    free(c->T);
    free(c->v);
    free(c->vs);
    free(c->Q0);
    free(c->R0);
    cJSON_Delete(c->used);
    free(c);
}

/* Every key of obj must be in allowed (NULL-terminated). */
static scm_status check_keys(const cJSON *obj, const char *path, const char *const *allowed,
                             scm_error *err)
{
    for (const cJSON *it = obj ? obj->child : NULL; it; it = it->next) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            ok |= strcmp(*a, it->string) == 0;
        if (!ok) {
            char list[256] = "";
            for (const char *const *a = allowed; *a; a++) {
                strncat(list, *a, sizeof list - strlen(list) - 1);
                if (a[1])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            return scm_error_set(err, SCM_EINVAL, "unknown key '%s%s%s' (allowed: %s)", path,
                                 *path ? "." : "", it->string, list);
        }
    }
    return SCM_OK;
}

/* The object at key in parent, or NULL if absent; an error if not an object. */
static scm_status get_section(const cJSON *parent, const char *key, const cJSON **out,
                              scm_error *err)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(parent, key);
    if (s && !cJSON_IsObject(s))
        return scm_error_set(err, SCM_EINVAL, "'%s' must be an object", key);
    *out = s;
    return SCM_OK;
}

static scm_status get_number(const cJSON *obj, const char *path, const char *key, double def,
                             double *out, scm_error *err)
{
    const cJSON *x = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!x) {
        *out = def;
        return SCM_OK;
    }
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
        return scm_error_set(err, SCM_EINVAL, "'%s.%s' must be a finite number", path, key);
    *out = x->valuedouble;
    return SCM_OK;
}

static scm_status get_integer(const cJSON *obj, const char *path, const char *key, double def,
                              double lo, double hi, double *out, scm_error *err)
{
    scm_status st = get_number(obj, path, key, def, out, err);
    if (st)
        return st;
    if (*out != floor(*out) || *out < lo || *out > hi)
        return scm_error_set(err, SCM_EINVAL, "'%s.%s' must be an integer in [%.0f, %.0f], got %.17g",
                             path, key, lo, hi, *out);
    return SCM_OK;
}

static scm_status get_string(const cJSON *obj, const char *path, const char *key,
                             const char *def, const char **out, scm_error *err)
{
    const cJSON *x = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!x) {
        *out = def;
        return SCM_OK;
    }
    if (!cJSON_IsString(x))
        return scm_error_set(err, SCM_EINVAL, "'%s.%s' must be a string", path, key);
    *out = x->valuestring;
    return SCM_OK;
}

/* A number (all entries equal) or an array of n numbers. */
static scm_status get_weights(const cJSON *obj, const char *path, const char *key, int n,
                              double *out, scm_error *err)
{
    const cJSON *x = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!x || cJSON_IsNumber(x)) {
        double w = x ? x->valuedouble : 1.0;
        if (!isfinite(w))
            return scm_error_set(err, SCM_EINVAL, "'%s.%s' must be finite", path, key);
        for (int i = 0; i < n; i++)
            out[i] = w;
        return SCM_OK;
    }
    if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) != n)
        return scm_error_set(err, SCM_EINVAL, "'%s.%s' must be a number or an array of %d numbers",
                             path, key, n);
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(x, i);
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble))
            return scm_error_set(err, SCM_EINVAL, "'%s.%s[%d]' must be a finite number", path, key, i);
        out[i] = e->valuedouble;
    }
    return SCM_OK;
}

/* The first key that appears twice in one object below obj (JSON allows
 * it, cJSON keeps both and reads the first: a silent surprise), written
 * as a dotted path into buf; 0 if there is none. */
static int find_duplicate_key(const cJSON *obj, const char *path, char *buf, size_t len)
{
    for (const cJSON *a = obj->child; a; a = a->next) {
        if (cJSON_IsObject(obj) && a->string)
            for (const cJSON *b = a->next; b; b = b->next)
                if (b->string && strcmp(a->string, b->string) == 0) {
                    snprintf(buf, len, "%s%s%s", path, *path ? "." : "", a->string);
                    return 1;
                }
        if (cJSON_IsObject(a) || cJSON_IsArray(a)) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s%s%s", path, *path && a->string ? "." : "",
                     a->string ? a->string : "");
            if (find_duplicate_key(a, sub, buf, len))
                return 1;
        }
    }
    return 0;
}

/* The value of a --set: the whole text as JSON, else the text as a string.
 * A text that starts like a number but is not all one ("3,4", "1e-8x",
 * "0x10") is refused rather than cut short or read as a word. */
static scm_status set_value(const char *set, const char *text, cJSON **val, scm_error *err)
{
    const char *end = NULL;
    *val = cJSON_ParseWithOpts(text, &end, 1);
    if (*val) {
        char dup[256];
        if (!find_duplicate_key(*val, "", dup, sizeof dup))
            return SCM_OK;
        cJSON_Delete(*val);
        *val = NULL;
        return scm_error_set(err, SCM_EINVAL, "--set '%s': key '%s' appears twice", set, dup);
    }
    if (text[0] != '\0' && strchr("+-.0123456789", text[0]))
        return scm_error_set(err, SCM_EINVAL, "--set '%s': '%s' is not a number", set, text);
    *val = cJSON_CreateString(text);
    return *val ? SCM_OK : scm_error_set(err, SCM_ENOMEM, "out of memory");
}

/* Apply one "a.b.c=value" override to root.  Every segment of the key must
 * be non-empty ("model..K", ".K" and "K." are refused). */
static scm_status apply_set(cJSON *root, const char *set, scm_error *err)
{
    const char *eq = strchr(set, '=');
    if (!eq || eq == set)
        return scm_error_set(err, SCM_EINVAL, "--set '%s' is not of the form key=value", set);
    size_t klen = (size_t)(eq - set);
    char *key = malloc(klen + 1);
    if (!key)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    memcpy(key, set, klen);
    key[klen] = '\0';
    if (key[0] == '.' || key[klen - 1] == '.' || strstr(key, "..")) {
        free(key);
        return scm_error_set(err, SCM_EINVAL, "--set '%s' has an empty key segment", set);
    }
    cJSON *val = NULL;
    scm_status vst = set_value(set, eq + 1, &val, err);
    if (vst) {
        free(key);
        return vst;
    }
    cJSON *node = root;
    scm_status st = SCM_OK;
    char *save = NULL, *part = strtok_r(key, ".", &save);
    while (part) {
        char *next = strtok_r(NULL, ".", &save);
        if (!next) {
            if (cJSON_GetObjectItemCaseSensitive(node, part))
                cJSON_ReplaceItemInObjectCaseSensitive(node, part, val);
            else
                cJSON_AddItemToObject(node, part, val);
            val = NULL;
            break;
        }
        cJSON *child = cJSON_GetObjectItemCaseSensitive(node, part);
        if (!child) {
            child = cJSON_AddObjectToObject(node, part);
        } else if (!cJSON_IsObject(child)) {
            st = scm_error_set(err, SCM_EINVAL, "--set '%s': '%s' is not an object", set, part);
            break;
        }
        node = child;
        part = next;
    }
    if (!part && st == SCM_OK)
        st = scm_error_set(err, SCM_EINVAL, "--set '%s' has an empty key", set);
    cJSON_Delete(val);
    free(key);
    return st;
}

static scm_status parse_model(const cJSON *root, scm_config *c, scm_error *err)
{
    static const char *const keys[] = {"K", "M", "activation", "T", "v", "v_star", NULL};
    const cJSON *s = NULL;
    scm_status st;
    double x;
    if ((st = get_section(root, "model", &s, err)))
        return st;
    if (!s)
        return scm_error_set(err, SCM_EINVAL, "missing section 'model' (with at least K and M)");
    if ((st = check_keys(s, "model", keys, err)))
        return st;
    if (!cJSON_GetObjectItemCaseSensitive(s, "K") || !cJSON_GetObjectItemCaseSensitive(s, "M"))
        return scm_error_set(err, SCM_EINVAL, "'model.K' and 'model.M' are required");
    if ((st = get_integer(s, "model", "K", 0, 1, MAX_SIZE, &x, err)))
        return st;
    c->K = (int)x;
    if ((st = get_integer(s, "model", "M", 0, 1, MAX_SIZE, &x, err)))
        return st;
    c->M = (int)x;
    const char *name = NULL;
    if ((st = get_string(s, "model", "activation", "relu", &name, err)))
        return st;
    c->act = scm_activation_find(name);
    if (!c->act)
        return scm_error_set(err, SCM_EINVAL,
                             "'model.activation' must be \"relu\", \"erf\" or \"linear\", got \"%s\"", name);
    const cJSON *T = cJSON_GetObjectItemCaseSensitive(s, "T");
    if (T && !(cJSON_IsString(T) && strcmp(T->valuestring, "identity") == 0)) {
        static const char tname[] = "'model.T' (\"identity\" or an M x M matrix)";
        /* Shape first: a large M with a small T must not allocate M^2. */
        if ((st = scm_output_read_matrix(T, tname, c->M, c->M, NULL, err)))
            return st;
        c->T = malloc(sizeof(double) * (size_t)c->M * (size_t)c->M);
        if (!c->T)
            return scm_error_set(err, SCM_ENOMEM, "out of memory");
        if ((st = scm_output_read_matrix(T, tname, c->M, c->M, c->T, err)))
            return st;
    }
    c->v = malloc(sizeof(double) * (size_t)c->K);
    c->vs = malloc(sizeof(double) * (size_t)c->M);
    if (!c->v || !c->vs)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    if ((st = get_weights(s, "model", "v", c->K, c->v, err)))
        return st;
    return get_weights(s, "model", "v_star", c->M, c->vs, err);
}

static scm_status parse_init(const cJSON *root, scm_config *c, scm_error *err)
{
    static const char *const keys[] = {"type", "law", "d", "sigma", "seed", "scale", "Q", "R", NULL};
    const cJSON *s = NULL;
    scm_status st;
    double x;
    if ((st = get_section(root, "init", &s, err)) || (st = check_keys(s, "init", keys, err)))
        return st;
    const char *type = NULL;
    if ((st = get_string(s, "init", "type", "random", &type, err)))
        return st;
    if ((st = get_number(s, "init", "scale", 1.0, &c->scale, err)))
        return st;
    if (!(c->scale > 0.0))
        return scm_error_set(err, SCM_EINVAL, "'init.scale' must be > 0, got %g", c->scale);
    if (strcmp(type, "random") == 0) {
        c->init = SCM_INIT_RANDOM;
        if (s && (cJSON_GetObjectItemCaseSensitive(s, "Q") || cJSON_GetObjectItemCaseSensitive(s, "R")))
            return scm_error_set(err, SCM_EINVAL, "'init.Q' and 'init.R' are only for init.type \"given\"");
        const char *law = NULL;
        if ((st = get_string(s, "init", "law", "gaussian", &law, err)))
            return st;
        if (scm_init_law_find(law, &c->law))
            return scm_error_set(err, SCM_EINVAL, "'init.law' must be \"gaussian\", \"xavier\" or "
                                 "\"xavier_uniform\", got \"%s\"", law);
        const int d_eq_M = scm_init_law_needs_d_eq_M(c->law);
        if ((st = get_integer(s, "init", "d", d_eq_M ? c->M : 1000, 1, 1e9, &x, err)))
            return st;
        c->d = (long)x;
        if (d_eq_M && c->d != c->M)
            return scm_error_set(err, SCM_EINVAL, "'init.d' = %ld must equal model.M = %d under "
                                 "init.law \"%s\" (d = M)", c->d, c->M, law);
        if (c->d < c->M)
            return scm_error_set(err, SCM_EINVAL, "'init.d' = %ld must be >= model.M = %d", c->d, c->M);
        if ((st = get_number(s, "init", "sigma", 1.0, &c->sigma, err)))
            return st;
        if (!(c->sigma > 0.0))
            return scm_error_set(err, SCM_EINVAL, "'init.sigma' must be > 0, got %g", c->sigma);
        /* GSL's Mersenne twister keeps 32 bits of its seed and takes 0 for
         * 4357: accept only seeds that give runs of their own */
        if ((st = get_integer(s, "init", "seed", 1, 1, 4294967295.0, &x, err)))
            return st;
        c->seed = (unsigned long)x;
        return SCM_OK;
    }
    if (strcmp(type, "given") != 0)
        return scm_error_set(err, SCM_EINVAL, "'init.type' must be \"random\" or \"given\", got \"%s\"", type);
    c->init = SCM_INIT_GIVEN;
    static const char *const unused[] = {"d", "sigma", "seed", "law"};
    for (int i = 0; i < 4; i++)
        if (cJSON_GetObjectItemCaseSensitive(s, unused[i]))
            return scm_error_set(err, SCM_EINVAL, "'init.%s' is only for init.type \"random\"", unused[i]);
    const cJSON *Q = cJSON_GetObjectItemCaseSensitive(s, "Q");
    const cJSON *R = cJSON_GetObjectItemCaseSensitive(s, "R");
    if (!Q || !R)
        return scm_error_set(err, SCM_EINVAL, "init.type \"given\" needs 'init.Q' (K x K) and 'init.R' (K x M)");
    if ((st = scm_output_read_matrix(Q, "'init.Q'", c->K, c->K, NULL, err)) ||
        (st = scm_output_read_matrix(R, "'init.R'", c->K, c->M, NULL, err)))
        return st; /* shapes before allocating K^2 and K M doubles */
    c->Q0 = malloc(sizeof(double) * (size_t)c->K * (size_t)c->K);
    c->R0 = malloc(sizeof(double) * (size_t)c->K * (size_t)c->M);
    if (!c->Q0 || !c->R0)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    if ((st = scm_output_read_matrix(Q, "'init.Q'", c->K, c->K, c->Q0, err)) ||
        (st = scm_output_read_matrix(R, "'init.R'", c->K, c->M, c->R0, err)))
        return st;
    for (int k = 0; k < c->K; k++)
        for (int l = 0; l < k; l++)
            if (fabs(c->Q0[k * c->K + l] - c->Q0[l * c->K + k]) >
                1e-12 * (fabs(c->Q0[k * c->K + l]) + fabs(c->Q0[l * c->K + k])))
                return scm_error_set(err, SCM_EINVAL, "'init.Q' is not symmetric at [%d][%d]", k, l);
    return SCM_OK;
}

/* integrator.jtimes, by scm_traj_opts.analytic_jv */
static const char *const jtimes_names[3] = {"dq", "analytic", "lagged"};
/* integrator.precond, by scm_traj_opts.precond */
static const char *const precond_names[2] = {"none", "frozen_s"};

/* The index of name in names[0..n-1], or -1. */
static int name_index(const char *name, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

static scm_status parse_integrator(const cJSON *root, scm_config *c, scm_error *err)
{
    static const char *const keys[] = {"method", "linear_solver", "rtol", "atol", "t_max",
                                       "t_first", "n_out", "eps_stop", "grad_stop",
                                       "max_steps", "psd_tol", "dead_tol", "dead_fail",
                                       "loose_rtol", "loose_atol", "loose_until", "jtimes",
                                       "precond", "krylov_dim", "eps_lin", "tail_eps",
                                       "tail_rtol", NULL};
    const cJSON *s = NULL;
    scm_status st;
    scm_traj_opts *o = &c->traj;
    scm_traj_opts_default(o);
    if ((st = get_section(root, "integrator", &s, err)) ||
        (st = check_keys(s, "integrator", keys, err)))
        return st;
    const char *method = NULL, *ls = NULL, *jt = NULL, *pc = NULL;
    if ((st = get_string(s, "integrator", "method", "bdf", &method, err)) ||
        (st = get_string(s, "integrator", "linear_solver", "auto", &ls, err)) ||
        (st = get_string(s, "integrator", "jtimes", "dq", &jt, err)) ||
        (st = get_string(s, "integrator", "precond", "none", &pc, err)))
        return st;
    if ((o->analytic_jv = name_index(jt, jtimes_names, 3)) < 0)
        return scm_error_set(err, SCM_EINVAL,
                             "'integrator.jtimes' must be \"dq\", \"analytic\" or \"lagged\", got \"%s\"", jt);
    if ((o->precond = name_index(pc, precond_names, 2)) < 0)
        return scm_error_set(err, SCM_EINVAL,
                             "'integrator.precond' must be \"none\" or \"frozen_s\", got \"%s\"", pc);
    if (strcmp(method, "bdf") == 0)
        o->method = SCM_METHOD_BDF;
    else if (strcmp(method, "adams") == 0)
        o->method = SCM_METHOD_ADAMS;
    else
        return scm_error_set(err, SCM_EINVAL, "'integrator.method' must be \"bdf\" or \"adams\", got \"%s\"", method);
    if (strcmp(ls, "auto") == 0)
        o->linsol = SCM_LINSOL_AUTO;
    else if (strcmp(ls, "dense") == 0)
        o->linsol = SCM_LINSOL_DENSE;
    else if (strcmp(ls, "gmres") == 0)
        o->linsol = SCM_LINSOL_GMRES;
    else
        return scm_error_set(err, SCM_EINVAL,
                             "'integrator.linear_solver' must be \"auto\", \"dense\" or \"gmres\", got \"%s\"", ls);
    double x;
    if ((st = get_number(s, "integrator", "rtol", o->rtol, &o->rtol, err)) ||
        (st = get_number(s, "integrator", "atol", o->atol, &o->atol, err)) ||
        (st = get_number(s, "integrator", "t_max", o->t_max, &o->t_max, err)) ||
        (st = get_number(s, "integrator", "t_first", o->t_first, &o->t_first, err)) ||
        (st = get_number(s, "integrator", "eps_stop", o->eps_stop, &o->eps_stop, err)) ||
        (st = get_number(s, "integrator", "grad_stop", o->grad_stop, &o->grad_stop, err)) ||
        (st = get_number(s, "integrator", "psd_tol", o->psd_tol, &o->psd_tol, err)) ||
        (st = get_number(s, "integrator", "dead_tol", o->dead_tol, &o->dead_tol, err)) ||
        (st = get_number(s, "integrator", "loose_rtol", o->loose_rtol, &o->loose_rtol, err)) ||
        (st = get_number(s, "integrator", "loose_atol", o->loose_atol, &o->loose_atol, err)) ||
        (st = get_number(s, "integrator", "loose_until", o->loose_until, &o->loose_until, err)) ||
        (st = get_number(s, "integrator", "eps_lin", o->eps_lin, &o->eps_lin, err)) ||
        (st = get_number(s, "integrator", "tail_eps", o->tail_eps, &o->tail_eps, err)) ||
        (st = get_number(s, "integrator", "tail_rtol", o->tail_rtol, &o->tail_rtol, err)))
        return st;
    const cJSON *df = s ? cJSON_GetObjectItemCaseSensitive(s, "dead_fail") : NULL;
    if (df && !cJSON_IsBool(df))
        return scm_error_set(err, SCM_EINVAL, "'integrator.dead_fail' must be true or false");
    o->dead_fail = df ? cJSON_IsTrue(df) : 0;
    if ((st = get_integer(s, "integrator", "n_out", o->n_out, 1, 1000000, &x, err)))
        return st;
    o->n_out = (int)x;
    if ((st = get_integer(s, "integrator", "max_steps", (double)o->max_steps, 1, 1e12, &x, err)))
        return st;
    o->max_steps = (long)x;
    if ((st = get_integer(s, "integrator", "krylov_dim", o->krylov_dim, 1, 500, &x, err)))
        return st;
    o->krylov_dim = (int)x;
    /* beyond 1e20 CVODE's first step probes states far outside the PSD cone
     * and fails at t = 0, below 1e-20 it takes the final time for one
     * behind t = 0; a dead_tol near Q_kk's own scale calls every student
     * dead */
    if (!(o->t_max >= 1e-20 && o->t_max <= 1e20))
        return scm_error_set(err, SCM_EINVAL,
                             "'integrator.t_max' must be in [1e-20, 1e20], got %g", o->t_max);
    if (!(o->dead_tol <= 1e-3))
        return scm_error_set(err, SCM_EINVAL,
                             "'integrator.dead_tol' (the Q_kk below which a ReLU student is "
                             "dead) must be in [0, 1e-3], got %g", o->dead_tol);
    return scm_traj_opts_check(o, err);
}

/* The training rule, its parameters, and the combinations it cannot run. */
static scm_status parse_rule(const cJSON *root, scm_config *c, scm_error *err)
{
    static const char *const keys[] = {"lr_v_ratio", "eta", "noise", NULL};
    const char *rule = NULL;
    scm_status st;
    if ((st = get_string(root, "", "rule", "gd", &rule, err)))
        return scm_error_set(err, st, "'rule' must be a string");
    c->rule = scm_rule_find(rule);
    if (!c->rule)
        return scm_error_set(err, SCM_EINVAL, "'rule' must be one of %s, got \"%s\"",
                             scm_rule_names(), rule);
    const cJSON *s = NULL;
    scm_rule_params *p = &c->traj.rule_params;
    if ((st = get_section(root, "rule_params", &s, err)) ||
        (st = check_keys(s, "rule_params", keys, err)))
        return st;
    const int sgd = c->rule == &scm_rule_sgd;
    if (s && cJSON_GetObjectItemCaseSensitive(s, "lr_v_ratio") && !c->rule->trains_v)
        return scm_error_set(err, SCM_EINVAL,
                             "'rule_params.lr_v_ratio' applies to rules two_layer and sgd only "
                             "(rule is \"%s\")",
                             c->rule->name);
    for (int i = 1; i <= 2; i++)
        if (s && cJSON_GetObjectItemCaseSensitive(s, keys[i]) && !sgd)
            return scm_error_set(err, SCM_EINVAL,
                                 "'rule_params.%s' applies to rule sgd only (rule is \"%s\")",
                                 keys[i], c->rule->name);
    if (sgd && !(s && cJSON_GetObjectItemCaseSensitive(s, "eta")))
        return scm_error_set(err, SCM_EINVAL,
                             "rule sgd needs 'rule_params.eta' (the learning rate, >= 0)");
    /* sgd trains v only when asked: its default ratio is 0 */
    if ((st = get_number(s, "rule_params", "lr_v_ratio", sgd ? 0.0 : 1.0, &p->lr_v_ratio, err)) ||
        (st = get_number(s, "rule_params", "eta", 0.0, &p->eta, err)) ||
        (st = get_number(s, "rule_params", "noise", 0.0, &p->noise, err)))
        return st;
    if ((st = scm_rule_params_check(c->rule, p, err)))
        return st;
    if (c->traj.precond && !(c->rule->psetup && c->rule->psolve))
        return scm_error_set(err, SCM_EINVAL,
                             "'integrator.precond' = \"%s\" is for rule gd (rule is \"%s\")",
                             precond_names[1], c->rule->name);
    if (c->traj.precond && c->traj.linsol == SCM_LINSOL_DENSE)
        return scm_error_set(err, SCM_EINVAL,
                             "'integrator.precond' = \"%s\" is for GMRES "
                             "('integrator.linear_solver' is \"dense\")",
                             precond_names[1]);
    if (c->rule->retract && c->scale != 1.0)
        return scm_error_set(err, SCM_EINVAL,
                             "'init.scale' = %g has no effect with rule %s (the start is "
                             "retracted onto the manifold): leave it at 1",
                             c->scale, c->rule->name);
    if (c->rule == &scm_rule_stiefel && c->init == SCM_INIT_RANDOM && c->d < c->K)
        return scm_error_set(err, SCM_EINVAL,
                             "rule stiefel needs K = %d orthonormal students, but 'init.d' = %ld "
                             "< K",
                             c->K, c->d);
    return SCM_OK;
}

/* The validated configuration as JSON, every default explicit. */
static cJSON *used_json(const scm_config *c)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(root, "model");
    cJSON_AddNumberToObject(m, "K", c->K);
    cJSON_AddNumberToObject(m, "M", c->M);
    cJSON_AddStringToObject(m, "activation", c->act->name);
    if (c->T)
        cJSON_AddItemToObject(m, "T", scm_output_matrix(c->T, c->M, c->M));
    else
        cJSON_AddStringToObject(m, "T", "identity");
    cJSON_AddItemToObject(m, "v", scm_output_vector(c->v, c->K));
    cJSON_AddItemToObject(m, "v_star", scm_output_vector(c->vs, c->M));
    cJSON_AddStringToObject(root, "rule", c->rule->name);
    if (c->rule->trains_v) {
        cJSON *rp = cJSON_AddObjectToObject(root, "rule_params");
        cJSON_AddNumberToObject(rp, "lr_v_ratio", c->traj.rule_params.lr_v_ratio);
        if (c->rule == &scm_rule_sgd) {
            cJSON_AddNumberToObject(rp, "eta", c->traj.rule_params.eta);
            cJSON_AddNumberToObject(rp, "noise", c->traj.rule_params.noise);
        }
    }
    cJSON *i = cJSON_AddObjectToObject(root, "init");
    if (c->init == SCM_INIT_RANDOM) {
        cJSON_AddStringToObject(i, "type", "random");
        if (c->law != SCM_INIT_LAW_GAUSSIAN) /* absent: gaussian (files of before the key) */
            cJSON_AddStringToObject(i, "law", scm_init_law_name(c->law));
        cJSON_AddNumberToObject(i, "d", (double)c->d);
        cJSON_AddNumberToObject(i, "sigma", c->sigma);
        cJSON_AddNumberToObject(i, "seed", (double)c->seed);
    } else {
        cJSON_AddStringToObject(i, "type", "given");
        cJSON_AddItemToObject(i, "Q", scm_output_matrix(c->Q0, c->K, c->K));
        cJSON_AddItemToObject(i, "R", scm_output_matrix(c->R0, c->K, c->M));
    }
    cJSON_AddNumberToObject(i, "scale", c->scale);
    const scm_traj_opts *o = &c->traj;
    cJSON *g = cJSON_AddObjectToObject(root, "integrator");
    cJSON_AddStringToObject(g, "method", o->method == SCM_METHOD_ADAMS ? "adams" : "bdf");
    cJSON_AddStringToObject(g, "linear_solver", o->linsol == SCM_LINSOL_GMRES  ? "gmres"
                                                : o->linsol == SCM_LINSOL_DENSE ? "dense"
                                                                                : "auto");
    cJSON_AddNumberToObject(g, "rtol", o->rtol);
    cJSON_AddNumberToObject(g, "atol", o->atol);
    cJSON_AddNumberToObject(g, "t_max", o->t_max);
    cJSON_AddNumberToObject(g, "t_first", o->t_first);
    cJSON_AddNumberToObject(g, "n_out", o->n_out);
    cJSON_AddNumberToObject(g, "eps_stop", o->eps_stop);
    cJSON_AddNumberToObject(g, "grad_stop", o->grad_stop);
    cJSON_AddNumberToObject(g, "max_steps", (double)o->max_steps);
    cJSON_AddNumberToObject(g, "psd_tol", o->psd_tol);
    cJSON_AddNumberToObject(g, "dead_tol", o->dead_tol);
    cJSON_AddBoolToObject(g, "dead_fail", o->dead_fail);
    cJSON_AddNumberToObject(g, "loose_rtol", o->loose_rtol);
    cJSON_AddNumberToObject(g, "loose_atol", o->loose_atol);
    cJSON_AddNumberToObject(g, "loose_until", o->loose_until);
    cJSON_AddStringToObject(g, "jtimes",
                            jtimes_names[o->analytic_jv >= 0 && o->analytic_jv <= 2 ? o->analytic_jv : 0]);
    cJSON_AddStringToObject(g, "precond", precond_names[o->precond == 1]);
    cJSON_AddNumberToObject(g, "krylov_dim", o->krylov_dim);
    cJSON_AddNumberToObject(g, "eps_lin", o->eps_lin);
    if (o->tail_eps > 0.0) { /* echoed only when on: configs without it read as before */
        cJSON_AddNumberToObject(g, "tail_eps", o->tail_eps);
        cJSON_AddNumberToObject(g, "tail_rtol", o->tail_rtol);
    }
    return root;
}

/* The deepest nesting of arrays and objects in text, strings skipped: cJSON
 * refuses more than CJSON_NESTING_LIMIT levels with the same error as a
 * syntax error, so the depth is told apart here. */
static long json_depth(const char *text)
{
    long depth = 0, deepest = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '"') {
            while (*++p && *p != '"')
                if (*p == '\\' && p[1])
                    p++;
            if (!*p)
                break;
        } else if (*p == '[' || *p == '{') {
            deepest = ++depth > deepest ? depth : deepest;
        } else if (*p == ']' || *p == '}') {
            depth--;
        }
    }
    return deepest;
}

scm_status scm_config_parse(const char *text, const char *source, const char *const *sets,
                            int nsets, scm_config **out, scm_error *err)
{
    static const char *const keys[] = {"model", "rule", "rule_params", "init", "integrator", NULL};
    *out = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        if (json_depth(text) > CJSON_NESTING_LIMIT)
            return scm_error_set(err, SCM_EINVAL, "%s: JSON nested deeper than %d levels", source,
                                 CJSON_NESTING_LIMIT);
        long line = 1;
        for (const char *p = text; end && p < end; p++)
            line += *p == '\n';
        return scm_error_set(err, SCM_EINVAL, "%s: invalid JSON near line %ld", source, line);
    }
    scm_config *c = calloc(1, sizeof *c);
    scm_status st = SCM_OK;
    if (!c) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        st = scm_error_set(err, SCM_EINVAL, "%s: the configuration must be a JSON object", source);
        goto out;
    }
    char dup[256];
    if (find_duplicate_key(root, "", dup, sizeof dup)) {
        st = scm_error_set(err, SCM_EINVAL, "%s: key '%s' appears twice", source, dup);
        goto out;
    }
    for (int i = 0; i < nsets; i++)
        if ((st = apply_set(root, sets[i], err)))
            goto out;
    scm_error e;
    scm_error_clear(&e);
    if ((st = check_keys(root, "", keys, &e)) || (st = parse_model(root, c, &e)) ||
        (st = parse_init(root, c, &e)) || (st = parse_integrator(root, c, &e))) {
        scm_error_set(err, st, "%s: %s", source, e.msg);
        goto out;
    }
    if ((st = parse_rule(root, c, &e))) {
        scm_error_set(err, st, "%s: %s", source, e.msg);
        goto out;
    }
    c->used = used_json(c);
    if (!c->used) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
        goto out;
    }
    *out = c;
    c = NULL;
out:
    scm_config_free(c);
    cJSON_Delete(root);
    return st;
}

/* The key "a.b.c" removed from root: 0, or -1 when root has no such key. */
static int unset_key(cJSON *root, const char *path_key)
{
    char key[512];
    snprintf(key, sizeof key, "%s", path_key);
    cJSON *obj = root;
    char *dot, *k = key;
    while ((dot = strchr(k, '.')) && obj) {
        *dot = '\0';
        obj = cJSON_GetObjectItemCaseSensitive(obj, k);
        k = dot + 1;
    }
    if (!cJSON_IsObject(obj) || !cJSON_GetObjectItemCaseSensitive(obj, k))
        return -1;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, k);
    return 0;
}

scm_status scm_config_unset(char **text, size_t *len, const char *source,
                            const char *const *unset, int nunset, scm_error *err)
{
    if (nunset == 0)
        return SCM_OK;
    cJSON *root = cJSON_ParseWithLength(*text, *len);
    scm_status st = SCM_OK;
    if (!cJSON_IsObject(root))
        st = scm_error_set(err, SCM_EINVAL, "--unset: '%s' is not a JSON object", source);
    for (int i = 0; !st && i < nunset; i++)
        if (unset_key(root, unset[i]))
            st = scm_error_set(err, SCM_EINVAL, "--unset %s: '%s' has no such key", unset[i],
                               source);
    char *t = st ? NULL : scm_output_print(root, 1); /* every number exact */
    cJSON_Delete(root);
    if (!st && !t)
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (!st) {
        free(*text);
        *text = t;
        *len = strlen(t);
    }
    return st;
}

scm_status scm_config_read(const char *path, const char *const *unset, int nunset, char **text,
                           size_t *len, scm_error *err)
{
    /* the directory and the open failure told apart, as they always were */
    struct stat sb;
    *text = NULL;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return scm_error_set(err, SCM_EIO, "cannot read config '%s': it is a directory", path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return scm_error_set(err, SCM_EIO, "cannot open config '%s': %s", path, strerror(errno));
    fclose(f);
    scm_error e;
    char *buf = scm_output_read_file(path, SCM_CONFIG_MAX_BYTES, len, &e);
    if (!buf)
        return e.code == SCM_EINVAL
                   ? scm_error_set(err, SCM_EINVAL, "config '%s' is larger than 64 MiB", path)
                   : scm_error_set(err, e.code, "config: %s", e.msg);
    scm_status st = strlen(buf) != *len ? scm_error_set(err, SCM_EINVAL,
                                                        "config '%s' contains a NUL byte", path)
                                        : scm_config_unset(&buf, len, path, unset, nunset, err);
    if (st)
        free(buf);
    else
        *text = buf;
    return st;
}

scm_status scm_config_load_unset(const char *path, const char *const *sets, int nsets,
                                 const char *const *unset, int nunset, scm_config **out,
                                 scm_error *err)
{
    char *text;
    size_t len;
    *out = NULL;
    scm_status st = scm_config_read(path, unset, nunset, &text, &len, err);
    if (!st)
        st = scm_config_parse(text, path, sets, nsets, out, err);
    free(text);
    return st;
}

scm_status scm_config_load(const char *path, const char *const *sets, int nsets,
                           scm_config **out, scm_error *err)
{
    return scm_config_load_unset(path, sets, nsets, NULL, 0, out, err);
}

scm_model *scm_config_model(const scm_config *c, scm_error *err)
{
    return scm_model_alloc(c->K, c->M, c->act, c->T, c->v, c->vs, err);
}

scm_status scm_config_initial_state(const scm_config *c, const scm_model *m, double *Q,
                                    double *R, scm_error *err)
{
    if (c->init == SCM_INIT_RANDOM) {
        scm_status st = scm_init_sample(m, c->law, c->d, c->sigma, c->seed, Q, R, err);
        if (st)
            return st;
    } else {
        memcpy(Q, c->Q0, sizeof(double) * (size_t)c->K * (size_t)c->K);
        memcpy(R, c->R0, sizeof(double) * (size_t)c->K * (size_t)c->M);
    }
    scm_init_scale(m, c->scale, Q, R);
    return SCM_OK;
}
