/* sweep_record.c: a sweep's runs file as JSON lines: the header that
 * records how the runs were made, and one record per run, written and
 * parsed back; see sweep.h and docs/sweeps.md. */
#include "scm/sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/output.h"

/* ---- JSON lines -------------------------------------------------------- */

char *scm_sweep_record_json(const scm_sweep_record *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "index", (double)r->index);
    cJSON_AddNumberToObject(o, "seed", (double)r->seed);
    cJSON_AddStringToObject(o, "stop", scm_stop_reason_str(r->stop));
    cJSON_AddBoolToObject(o, "converged", r->converged);
    if (r->converged)
        cJSON_AddNullToObject(o, "why");
    else
        cJSON_AddStringToObject(o, "why", r->why);
    cJSON_AddNumberToObject(o, "t", r->t);
    cJSON_AddNumberToObject(o, "eps", r->eps);
    if (r->eps_zeroed) {
        cJSON_AddStringToObject(o, "eps_of", "global_minimum");
        if (isfinite(r->psd_gap))
            cJSON_AddNumberToObject(o, "psd_gap", r->psd_gap);
        else
            cJSON_AddNullToObject(o, "psd_gap");
    }
    cJSON_AddNumberToObject(o, "max_F", r->max_F);
    cJSON_AddNumberToObject(o, "steps", (double)r->steps);
    cJSON_AddNumberToObject(o, "rhs", (double)r->rhs);
    if (r->loose_retries)
        cJSON_AddNumberToObject(o, "loose_retries", r->loose_retries);
    cJSON_AddStringToObject(o, "class", r->cls);
    if (r->matched) {
        cJSON_AddStringToObject(o, "family", r->family);
        cJSON_AddNumberToObject(o, "k1", r->k1);
    } else {
        cJSON_AddNullToObject(o, "family");
        cJSON_AddNullToObject(o, "k1");
    }
    cJSON_AddNumberToObject(o, "anti", r->n_anti);
    cJSON_AddNumberToObject(o, "dead", r->n_dead);
    cJSON_AddNumberToObject(o, "shared", r->n_shared);
    if (r->stop == SCM_STOP_CERTIFIED) {
        cJSON *c = cJSON_AddObjectToObject(o, "cert");
        cJSON_AddNumberToObject(c, "loss", r->cert_loss);
        if (r->cert_point >= 0) {
            cJSON_AddNumberToObject(c, "point", r->cert_point);
            cJSON_AddNumberToObject(c, "dist", r->cert_dist);
            cJSON_AddNumberToObject(c, "radius", r->cert_radius);
        } else {
            cJSON_AddNullToObject(c, "point");
            cJSON_AddStringToObject(c, "rule", "global");
        }
    }
    if (!r->converged && r->near >= 0) {
        cJSON *c = cJSON_AddObjectToObject(o, "near");
        cJSON_AddNumberToObject(c, "point", r->near);
        cJSON_AddStringToObject(c, "family", r->near_family);
        cJSON_AddNumberToObject(c, "k1", r->near_k1);
        cJSON_AddNumberToObject(c, "loss", r->near_loss);
        if (isfinite(r->near_dist))
            cJSON_AddNumberToObject(c, "dist", r->near_dist);
        else
            cJSON_AddNullToObject(c, "dist");
        cJSON_AddStringToObject(c, "stability", r->near_stability);
    }
    char *s = scm_output_print(o, 1);
    cJSON_Delete(o);
    return s;
}

static int get_num(const cJSON *o, const char *key, int nullable, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (nullable && cJSON_IsNull(x)) {
        *v = NAN;
        return 1;
    }
    if (!cJSON_IsNumber(x))
        return 0;
    *v = x->valuedouble;
    return 1;
}

static int get_int(const cJSON *o, const char *key, double lo, double hi, long *v)
{
    double x;
    if (!get_num(o, key, 0, &x) || x != floor(x) || x < lo || x > hi)
        return 0;
    *v = (long)x;
    return 1;
}

/* The parts of a record, in the order of its fields; each returns the name
 * of the first missing or invalid field, or NULL. */
static const char *parse_outcome(const cJSON *o, scm_sweep_record *r)
{
    long x;
    if (!cJSON_IsObject(o))
        return "(not an object)";
    if (!get_int(o, "index", 0, 9007199254740992.0, &r->index))
        return "index";
    if (!get_int(o, "seed", 0, 4294967295.0, &x))
        return "seed";
    r->seed = (unsigned long)x;
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(o, "stop");
    int found = 0;
    for (int s = SCM_STOP_T_MAX; cJSON_IsString(stop) && s <= SCM_STOP_CERTIFIED; s++)
        if (strcmp(stop->valuestring, scm_stop_reason_str((scm_stop_reason)s)) == 0) {
            r->stop = (scm_stop_reason)s;
            found = 1;
        }
    if (!found)
        return "stop";
    const cJSON *conv = cJSON_GetObjectItemCaseSensitive(o, "converged");
    if (!cJSON_IsBool(conv) ||
        (cJSON_IsTrue(conv) != (r->stop == SCM_STOP_FIXED_POINT || r->stop == SCM_STOP_EPS ||
                                r->stop == SCM_STOP_CERTIFIED)))
        return "converged";
    r->converged = cJSON_IsTrue(conv);
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(o, "why");
    if (r->converged ? !cJSON_IsNull(why) : !cJSON_IsString(why))
        return "why";
    if (!r->converged)
        snprintf(r->why, sizeof r->why, "%s", why->valuestring);
    return NULL;
}

static const char *parse_numbers(const cJSON *o, scm_sweep_record *r)
{
    if (!get_num(o, "t", 1, &r->t))
        return "t";
    if (!get_num(o, "eps", 1, &r->eps))
        return "eps";
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(o, "eps_of");
    r->eps_zeroed = of != NULL;
    r->psd_gap = 0.0;
    if (of && (!cJSON_IsString(of) || strcmp(of->valuestring, "global_minimum") != 0 ||
               !(r->eps == 0.0)))
        return "eps_of";
    if (of && !get_num(o, "psd_gap", 1, &r->psd_gap))
        return "psd_gap";
    if (!get_num(o, "max_F", 1, &r->max_F))
        return "max_F";
    if (!get_int(o, "steps", 0, 9e15, &r->steps))
        return "steps";
    if (!get_int(o, "rhs", 0, 9e15, &r->rhs))
        return "rhs";
    long retries = 0;
    if (cJSON_GetObjectItemCaseSensitive(o, "loose_retries") &&
        !get_int(o, "loose_retries", 1, 1, &retries))
        return "loose_retries";
    r->loose_retries = (int)retries;
    return NULL;
}

static const char *parse_class(const cJSON *o, scm_sweep_record *r)
{
    long x;
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(o, "class");
    if (!cJSON_IsString(cls) || strlen(cls->valuestring) >= sizeof r->cls)
        return "class";
    snprintf(r->cls, sizeof r->cls, "%s", cls->valuestring);
    const cJSON *fam = cJSON_GetObjectItemCaseSensitive(o, "family");
    if (cJSON_IsString(fam) && strlen(fam->valuestring) < sizeof r->family) {
        r->matched = 1;
        snprintf(r->family, sizeof r->family, "%s", fam->valuestring);
        if (!get_int(o, "k1", 0, 1e6, &x))
            return "k1";
        r->k1 = (int)x;
    } else if (cJSON_IsNull(fam)) {
        r->k1 = -1;
        if (!cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "k1")))
            return "k1";
    } else {
        return "family";
    }
    if (!get_int(o, "anti", 0, 1e6, &x))
        return "anti";
    r->n_anti = (int)x;
    if (!get_int(o, "dead", 0, 1e6, &x))
        return "dead";
    r->n_dead = (int)x;
    if (!get_int(o, "shared", 0, 1e6, &x))
        return "shared";
    r->n_shared = (int)x;
    return NULL;
}

static const char *parse_cert(const cJSON *o, scm_sweep_record *r)
{
    long x;
    r->cert_point = -1;
    r->cert_dist = r->cert_radius = r->cert_loss = NAN;
    const cJSON *cert = cJSON_GetObjectItemCaseSensitive(o, "cert");
    if ((r->stop == SCM_STOP_CERTIFIED) != cJSON_IsObject(cert) ||
        (cert && !get_num(cert, "loss", 0, &r->cert_loss)))
        return "cert";
    if (cert && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cert, "point"))) {
        if (!get_int(cert, "point", 0, 1e9, &x) || !get_num(cert, "dist", 0, &r->cert_dist) ||
            !get_num(cert, "radius", 0, &r->cert_radius))
            return "cert";
        r->cert_point = (int)x;
    }
    return NULL;
}

static const char *parse_near(const cJSON *o, scm_sweep_record *r)
{
    long x;
    r->near = -1;
    r->near_dist = r->near_loss = NAN;
    const cJSON *near = cJSON_GetObjectItemCaseSensitive(o, "near");
    if (!near)
        return NULL;
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(near, "family"),
                *ns = cJSON_GetObjectItemCaseSensitive(near, "stability");
    if (r->converged || !cJSON_IsObject(near) || !get_int(near, "point", 0, 1e9, &x) ||
        !get_num(near, "loss", 0, &r->near_loss) || !get_num(near, "dist", 1, &r->near_dist) ||
        !cJSON_IsString(nf) || strlen(nf->valuestring) >= sizeof r->near_family ||
        !cJSON_IsString(ns) || strlen(ns->valuestring) >= sizeof r->near_stability)
        return "near";
    r->near = (int)x;
    long k1n;
    if (!get_int(near, "k1", 0, 1e6, &k1n))
        return "near";
    r->near_k1 = (int)k1n;
    snprintf(r->near_family, sizeof r->near_family, "%s", nf->valuestring);
    snprintf(r->near_stability, sizeof r->near_stability, "%s", ns->valuestring);
    return NULL;
}

scm_status scm_sweep_record_parse(const char *line, scm_sweep_record *r, scm_error *err)
{
    memset(r, 0, sizeof *r);
    cJSON *o = cJSON_Parse(line);
    if (!o)
        return scm_error_set(err, SCM_EINVAL, "not valid JSON");
    scm_status st = SCM_OK;
    const char *bad = parse_outcome(o, r);
    if (!bad)
        bad = parse_numbers(o, r);
    if (!bad)
        bad = parse_class(o, r);
    if (!bad)
        bad = parse_cert(o, r);
    if (!bad)
        bad = parse_near(o, r);
    if (bad)
        st = scm_error_set(err, SCM_EINVAL, "missing or invalid field '%s'", bad);
    cJSON_Delete(o);
    return st;
}

char *scm_sweep_header_json(const scm_config *c, uint64_t base, long runs, int shard_i,
                            int shard_n, const scm_sweep_families *fams)
{
    return scm_sweep_header_json_opts(c, base, runs, shard_i, shard_n, fams, NULL);
}

char *scm_sweep_header_json_opts(const scm_config *c, uint64_t base, long runs, int shard_i,
                                 int shard_n, const scm_sweep_families *fams,
                                 const scm_sweep_opts *so)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "scm_sweep", 1);
    cJSON_AddItemToObject(o, "config", cJSON_Duplicate(c->used, 1));
    cJSON_AddNumberToObject(o, "seed", (double)base);
    cJSON_AddNumberToObject(o, "runs", (double)runs);
    cJSON *sh = cJSON_AddArrayToObject(o, "shard");
    cJSON_AddItemToArray(sh, cJSON_CreateNumber(shard_i));
    cJSON_AddItemToArray(sh, cJSON_CreateNumber(shard_n));
    cJSON *fa = cJSON_AddArrayToObject(o, "families");
    for (int i = 0; fams && i < fams->n; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "family", fams->f[i].name);
        cJSON_AddNumberToObject(f, "k1", fams->f[i].k1);
        cJSON_AddNumberToObject(f, "loss", fams->f[i].eps);
        cJSON_AddItemToArray(fa, f);
    }
    if (so) { /* every option that changes a record */
        cJSON *cl = cJSON_AddObjectToObject(o, "classify");
        cJSON_AddNumberToObject(cl, "match_rtol", so->match_rtol);
        cJSON_AddNumberToObject(cl, "match_atol", so->match_atol);
        cJSON_AddNumberToObject(cl, "dead_q", so->dead_q);
        cJSON_AddNumberToObject(cl, "loose_grad_stop", so->loose_grad_stop);
    }
    if (so && so->certify) {
        cJSON *ce = cJSON_AddObjectToObject(o, "certify");
        cJSON_AddNumberToObject(ce, "grad", so->certify_grad);
        cJSON_AddNumberToObject(ce, "global", so->certify_global);
        cJSON_AddNumberToObject(ce, "rmax", so->certify_rmax);
        if (so->certify == 2)
            cJSON_AddBoolToObject(ce, "basin", 0);
        else /* the radii from the Hessian's Lipschitz bound (basin.h) */
            cJSON_AddStringToObject(ce, "basin", "proved");
    }
    char *s = scm_output_print(o, 1);
    cJSON_Delete(o);
    return s;
}

