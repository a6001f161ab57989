/* certify_run.c: the points `scm certify` certifies (a k1 family of the
 * built-in ansätze, or an entry of a fixed-points result file) and the
 * JSON of the results; the proofs are certify.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/certify.h"
#include "scm/family.h"
#include "scm/blockflow.h"
#include "scm/output.h"

#include "landscape/certify_internal.h"

/* fixedpoint.h's default full_max_K: the family search keeps points with a full state only. */
#define SCM_CERTIFY_FULL_MAX_K 400

void scm_certify_list_free(scm_certify_list *l)
{
    free(l->e);
    l->e = NULL;
    l->n = l->cap = 0;
}

scm_certify_entry *scm_cert_list_add(scm_certify_list *l)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        scm_certify_entry *e = realloc(l->e, sizeof *e * (size_t)cap);
        if (!e)
            return NULL;
        l->e = e;
        l->cap = cap;
    }
    scm_certify_entry *e = &l->e[l->n++];
    memset(e, 0, sizeof *e);
    return e;
}

scm_status scm_cert_builtins_load(scm_cert_builtins *b, scm_error *err)
{
    b->n = 0;
    for (int i = 0; i < scm_ansatz_builtin_count() && b->n < SCM_CERT_MAX_BUILTINS; i++) {
        const char *file, *t = scm_ansatz_builtin_text(i, &file);
        scm_ansatz *a = scm_ansatz_parse(t, strlen(t), file, err);
        if (!a) {
            scm_cert_builtins_free(b);
            return err ? err->code : SCM_EINVAL;
        }
        b->a[b->n++] = a;
    }
    return SCM_OK;
}

void scm_cert_builtins_free(scm_cert_builtins *b)
{
    for (int j = 0; j < b->n; j++)
        scm_ansatz_free(b->a[j]);
    b->n = 0;
}

const scm_ansatz *scm_cert_builtin_named(const scm_cert_builtins *b, const char *name)
{
    for (int j = 0; j < b->n; j++)
        if (strcmp(scm_ansatz_name(b->a[j]), name) == 0)
            return b->a[j];
    return NULL;
}

/* Certify x of instance (ansatz, K, M, ak1) into e. */
static scm_status certify_in(const scm_cert_builtins *b, const char *ansatz, int K, int M, int ak1,
                             const double *x, const scm_certify_opts *o, scm_certify_entry *e,
                             scm_error *err)
{
    const scm_ansatz *a = scm_cert_builtin_named(b, ansatz);
    if (!a)
        return scm_error_set(err, SCM_EINVAL, "certify: no built-in ansatz named %s", ansatz);
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, K, M, ak1, err);
    if (!in)
        return err ? err->code : SCM_EINVAL;
    scm_status st = scm_certify_point(in, &scm_act_relu, x, o, &e->r, err);
    scm_ansatz_inst_free(in);
    return st;
}

static scm_status family_one(const scm_cert_builtins *b, int K, int M, int k1, int every, long starts,
                             const scm_certify_opts *o, scm_certify_list *out, scm_error *err)
{
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    fo.n_random = (int)starts;
    scm_family fam;
    scm_status st = scm_family_find(K, M, k1, b->a, b->n, &scm_act_relu, &fo, &fam, err);
    for (int i = 0; !st && i < fam.n; i++) {
        scm_fam_point *p = &fam.pt[i];
        if (!every && p->cls != SCM_FAM_MIN_CANDIDATE && p->cls != SCM_FAM_BLOCK_STABLE)
            continue;
        int full_failed = 0;
        if (!every && p->cls == SCM_FAM_BLOCK_STABLE && K <= 60) {
            /* a full spectrum that fails (e.g. a state not PSD in floating
             * point) leaves the point block-stable: it is certified anyway */
            full_failed = scm_family_check_full(&fam, i, &scm_act_relu, NULL) != SCM_OK;
            if (!full_failed && p->cls != SCM_FAM_MIN_CANDIDATE)
                continue;
        }
        scm_certify_entry *e = scm_cert_list_add(out);
        if (!e) {
            st = scm_error_set(err, SCM_ENOMEM, "certify: out of memory");
            break;
        }
        e->K = K;
        e->M = M;
        e->k1 = k1;
        e->index = i;
        e->eps = p->eps;
        e->instance = p->instance;
        snprintf(e->ansatz, sizeof e->ansatz, "%s", p->ansatz);
        snprintf(e->stability, sizeof e->stability, "%s",
                 full_failed ? "block_stable (full check failed)" : scm_fam_class_str(p->cls));
        st = certify_in(b, p->ansatz, K, M, p->instance, p->x, o, e, err);
    }
    scm_family_free(&fam);
    return st;
}

/* Continue the solution x (nsc scalars) of ansatz a at instance k1 ak1
 * from (K0, K0 - d) to (K, K - d) by Newton steps in K (step ratio 1.25,
 * halved on failure).  0 on success. */
static int continue_in_k(const scm_ansatz *a, int ak1, int K0, int K, int d, double *x, int nsc)
{
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    double y[512];
    int Kc = K0;
    while (Kc < K) {
        int step = Kc / 4 > 1 ? Kc / 4 : 1, done = 0;
        while (!done && step >= 1) {
            int Kn = Kc + step > K ? K : Kc + step;
            scm_error e;
            scm_ansatz_inst *in = scm_ansatz_instantiate(a, Kn, Kn - d, ak1, &e);
            scm_blockflow *bf = in ? scm_blockflow_alloc(in, &scm_act_relu) : NULL;
            double res = INFINITY;
            if (bf && scm_ansatz_inst_nscalars(in) == nsc) {
                memcpy(y, x, sizeof(double) * (size_t)nsc);
                if (scm_fp_solve(bf, y, &fo, &res) == SCM_OK) {
                    memcpy(x, y, sizeof(double) * (size_t)nsc);
                    Kc = Kn;
                    done = 1;
                }
            }
            scm_blockflow_free(bf);
            scm_ansatz_inst_free(in);
            if (!done)
                step /= 2;
        }
        if (!done)
            return -1;
    }
    return 0;
}

/* Starts for the block-level search at (K, M): the family's minimum
 * candidates at (K0, K0 - d), K0 = 16 + d, continued in K (what
 * `scm fixed-points --grow-from` does, in short).  Returns the number of
 * starts written to xs (cap of them, nsc each) for ansatz a. */
static int grown_starts(const scm_cert_builtins *b, const scm_ansatz *a, int K, int M, int k1, long starts,
                        double *xs, int cap, int nsc)
{
    int d = K - M, K0 = 16 + d, n = 0;
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    fo.n_random = (int)starts;
    scm_family fam;
    scm_error e;
    if (scm_family_find(K0, K0 - d, k1, b->a, b->n, &scm_act_relu, &fo, &fam, &e) == SCM_OK)
        for (int i = 0; i < fam.n && n < cap; i++) {
            scm_fam_point *p = &fam.pt[i];
            if (strcmp(p->ansatz, scm_ansatz_name(a)) != 0 || p->instance != k1 ||
                p->nsc != nsc || p->cls == SCM_FAM_SADDLE_BLOCK)
                continue;
            memcpy(xs + n * nsc, p->x, sizeof(double) * (size_t)nsc);
            if (continue_in_k(a, k1, K0, K, d, xs + n * nsc, nsc) == 0)
                n++;
        }
    scm_family_free(&fam);
    return n;
}

/* Above the full-state limit of the family search (fixedpoint.h's
 * full_max_K) the family is enumerated at block level: every specialised
 * point of every built-in ansatz instance at k1 with k1 anti-aligned
 * students, classified by the block Jacobian (a block-stable point is a
 * minimum candidate the full spectrum has not checked), merged by loss. */
static scm_status family_block(const scm_cert_builtins *b, int K, int M, int k1, int every, long starts,
                               const scm_certify_opts *o, scm_certify_list *out, scm_error *err)
{
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    fo.n_random = (int)starts;
    scm_status st = SCM_OK;
    int any = 0, first = out->n;
    for (int j = 0; j < b->n && !st; j++) {
        int lo, hi;
        if (scm_ansatz_applies(b->a[j], K, M, &lo, &hi) != 1 || k1 < lo || k1 > hi)
            continue;
        any = 1;
        scm_ansatz_inst *in = scm_ansatz_instantiate(b->a[j], K, M, k1, err);
        if (!in)
            return err ? err->code : SCM_EINVAL;
        scm_fp_set s;
        scm_fp_set_init(&s);
        scm_blockflow *bf = scm_blockflow_alloc(in, &scm_act_relu);
        int nsc = scm_ansatz_inst_nscalars(in);
        double *xs = nsc <= 512 ? malloc(sizeof(double) * (size_t)(8 * nsc)) : NULL;
        int nst = xs ? grown_starts(b, b->a[j], K, M, k1, starts, xs, 8, nsc) : 0;
        st = bf ? scm_fp_enumerate_solves(b->a[j], in, &scm_act_relu, &fo, xs, nst, &s, err)
                : scm_error_set(err, SCM_ENOMEM, "certify: out of memory");
        for (int p = 0; !st && p < s.n; p++) {
            scm_fp_structure fs;
            double re = NAN;
            scm_fp_classify(in, s.pt[p].x, &fs);
            if (!(fs.n_anti == k1 && fs.n_other == K - M))
                continue;
            scm_fp_block_stability(bf, s.pt[p].x, &re, NULL);
            if (!every && !(re <= SCM_FAM_EIG_TOL))
                continue;
            int dup = 0;
            for (int q = first; q < out->n; q++)
                dup = dup || fabs(out->e[q].eps - s.pt[p].eps) < 1e-10;
            scm_certify_entry *e = dup ? NULL : scm_cert_list_add(out);
            if (dup)
                continue;
            if (!e) {
                st = scm_error_set(err, SCM_ENOMEM, "certify: out of memory");
                break;
            }
            e->K = K;
            e->M = M;
            e->k1 = k1;
            e->index = p;
            e->eps = s.pt[p].eps;
            e->instance = k1;
            snprintf(e->ansatz, sizeof e->ansatz, "%s", scm_ansatz_name(b->a[j]));
            snprintf(e->stability, sizeof e->stability, "%s",
                     re > SCM_FAM_EIG_TOL ? "saddle (block)" : "block_stable (full not checked)");
            st = scm_certify_point(in, &scm_act_relu, s.pt[p].x, o, &e->r, err);
        }
        free(xs);
        scm_fp_set_free(&s);
        scm_blockflow_free(bf);
        scm_ansatz_inst_free(in);
    }
    if (!st && !any)
        st = scm_error_set(err, SCM_EINVAL, "certify: no built-in ansatz has k1 = %d at K = %d, M = %d",
                           k1, K, M);
    return st;
}

scm_status scm_certify_family(int K, int M, int k1, int every_point, long starts,
                              const scm_certify_opts *o, scm_certify_list *out, scm_error *err)
{
    if (K < 1 || M < 1 || k1 < -1 || k1 > K || starts < 1 || starts > 100000)
        return scm_error_set(err, SCM_EINVAL,
                             "certify: K = %d, M = %d, k1 = %d, starts = %ld out of range", K, M,
                             k1, starts);
    scm_cert_builtins b;
    scm_status st = scm_cert_builtins_load(&b, err);
    if (st)
        return st;
    int lo = k1 < 0 ? 0 : k1, hi = k1 < 0 ? K : k1, any = 0;
    for (int k = lo; k <= hi && !st; k++) {
        st = K > SCM_CERTIFY_FULL_MAX_K
                 ? family_block(&b, K, M, k, every_point, starts, o, out, err)
                 : family_one(&b, K, M, k, every_point, starts, o, out, err);
        if (st == SCM_EINVAL && k1 < 0) /* no ansatz has this k1 */
            st = SCM_OK;
        else
            any = 1;
    }
    scm_cert_builtins_free(&b);
    if (!st && !any)
        st = scm_error_set(err, SCM_EINVAL, "certify: no built-in ansatz applies at K = %d, M = %d",
                           K, M);
    return st;
}

char *scm_cert_read_file(const char *path, scm_error *err)
{
    scm_error e;
    size_t len;
    scm_error_clear(&e);
    char *text = scm_output_read_file(path, SCM_CERT_FILE_MAX, &len, &e);
    if (!text && e.code == SCM_EIO)
        scm_error_set(err, SCM_EIO, "certify: cannot read %s", path);
    else if (!text)
        scm_error_set(err, e.code ? e.code : SCM_ENOMEM, "certify: %s", e.msg);
    return text;
}

/* Entry index of a fixed-points result: its ansatz, instance and scalars
 * (by name) into *in (instantiated) and x.  Errors name the file. */
static scm_status fpfile_point(const scm_cert_builtins *b, const cJSON *root, const char *path, long index,
                               scm_ansatz_inst **in, double *x, int cap, scm_certify_entry *e,
                               scm_error *err)
{
    const cJSON *jK = cJSON_GetObjectItemCaseSensitive(root, "K"),
                *jM = cJSON_GetObjectItemCaseSensitive(root, "M"),
                *act = cJSON_GetObjectItemCaseSensitive(root, "activation"),
                *fps = cJSON_GetObjectItemCaseSensitive(root, "fixed_points");
    if (!cJSON_IsNumber(jK) || !cJSON_IsNumber(jM) || !cJSON_IsArray(fps))
        return scm_error_set(err, SCM_EINVAL,
                             "certify: %s: not a `scm fixed-points` result (K, M, fixed_points)",
                             path);
    if (cJSON_IsString(act) && strcmp(act->valuestring, "relu") != 0)
        return scm_error_set(err, SCM_EINVAL, "certify: %s: activation %s (only relu is certified)",
                             path, act->valuestring);
    int n = cJSON_GetArraySize(fps);
    if (index >= n)
        return scm_error_set(err, SCM_EINVAL, "certify: %s: --index %ld out of range (%d points)",
                             path, index, n);
    const cJSON *p = cJSON_GetArrayItem(fps, (int)index),
                *an = cJSON_GetObjectItemCaseSensitive(p, "ansatz"),
                *ik = cJSON_GetObjectItemCaseSensitive(p, "instance"),
                *sc = cJSON_GetObjectItemCaseSensitive(p, "scalars"),
                *k1 = cJSON_GetObjectItemCaseSensitive(p, "k1");
    if (!cJSON_IsString(an) || !cJSON_IsNumber(ik) || !cJSON_IsObject(sc))
        return scm_error_set(err, SCM_EINVAL,
                             "certify: %s: point %ld has no ansatz, instance or scalars", path,
                             index);
    const scm_ansatz *a = scm_cert_builtin_named(b, an->valuestring);
    if (!a)
        return scm_error_set(err, SCM_EINVAL, "certify: %s: no built-in ansatz named %s", path,
                             an->valuestring);
    *in = scm_ansatz_instantiate(a, jK->valuedouble, jM->valuedouble, ik->valuedouble, err);
    if (!*in)
        return err ? err->code : SCM_EINVAL;
    int nsc = scm_ansatz_inst_nscalars(*in);
    if (nsc > cap || cJSON_GetArraySize(sc) != nsc)
        return scm_error_set(err, SCM_EINVAL, "certify: %s: point %ld has %d scalars, its ansatz %d",
                             path, index, cJSON_GetArraySize(sc), nsc);
    for (int i = 0; i < nsc; i++) {
        const char *nm = scm_ansatz_inst_scalar_name(*in, i);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(sc, nm);
        if (!cJSON_IsNumber(v))
            return scm_error_set(err, SCM_EINVAL, "certify: %s: point %ld lacks scalar %s", path,
                                 index, nm);
        x[i] = v->valuedouble;
    }
    e->K = (int)jK->valuedouble;
    e->M = (int)jM->valuedouble;
    e->k1 = cJSON_IsNumber(k1) ? (int)k1->valuedouble : -1;
    if (e->k1 < 0) { /* the point's own count of anti-aligned students */
        scm_fp_structure fs;
        if (scm_fp_classify(*in, x, &fs) == SCM_OK && isfinite(fs.n_anti))
            e->k1 = (int)fs.n_anti;
    }
    e->index = (int)index;
    e->instance = (int)ik->valuedouble;
    snprintf(e->ansatz, sizeof e->ansatz, "%s", an->valuestring);
    return SCM_OK;
}

scm_status scm_certify_fpfile(const char *path, long index, const scm_certify_opts *o,
                              scm_certify_list *out, scm_error *err)
{
    char *text = scm_cert_read_file(path, err);
    if (!text)
        return err ? err->code : SCM_EIO;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root)
        return scm_error_set(err, SCM_EINVAL, "certify: %s: not JSON", path);
    scm_cert_builtins b;
    scm_status st = scm_cert_builtins_load(&b, err);
    if (st) {
        cJSON_Delete(root);
        return st;
    }
    const cJSON *fps = cJSON_GetObjectItemCaseSensitive(root, "fixed_points");
    long first = index, last = index;
    int minima = index == SCM_CERTIFY_MINIMA;
    if (index < 0) { /* every point of the file */
        first = 0;
        last = cJSON_IsArray(fps) ? cJSON_GetArraySize(fps) - 1 : 0;
    }
    for (long i = first; !st && i <= last; i++) {
        scm_certify_entry ent;
        memset(&ent, 0, sizeof ent);
        scm_ansatz_inst *in = NULL;
        double x[512];
        st = fpfile_point(&b, root, path, i, &in, x, 512, &ent, err);
        scm_certify_entry *e = st ? NULL : scm_cert_list_add(out);
        if (!st && !e)
            st = scm_error_set(err, SCM_ENOMEM, "certify: out of memory");
        if (!st) {
            *e = ent;
            scm_blockflow *bf = scm_blockflow_alloc(in, &scm_act_relu);
            double re = NAN;
            if (bf && minima)
                scm_fp_block_stability(bf, x, &re, NULL);
            if (minima && !(re <= SCM_FAM_EIG_TOL))
                out->n--; /* a block-level saddle: not listed */
            else {
                if (minima)
                    snprintf(e->stability, sizeof e->stability, "block_stable (full not checked)");
                st = scm_certify_point(in, &scm_act_relu, x, o, &e->r, err);
                if (bf)
                    scm_blockflow_residual(bf, x, NULL, &e->eps);
            }
            scm_blockflow_free(bf);
        }
        scm_ansatz_inst_free(in);
    }
    scm_cert_builtins_free(&b);
    cJSON_Delete(root);
    return st;
}

cJSON *scm_certify_list_json(const scm_certify_list *l, const scm_certify_opts *o)
{
    cJSON *j = cJSON_CreateObject(), *arr = j ? cJSON_AddArrayToObject(j, "points") : NULL;
    if (!arr) {
        cJSON_Delete(j);
        return NULL;
    }
    cJSON_AddStringToObject(j, "method",
                            "Krawczyk operator on the block residual in Arb balls; strictness: "
                            "ball Cholesky (shifted) or Rayleigh quotient of the "
                            "symmetry-adapted Hessian over the box");
    cJSON_AddNumberToObject(j, "prec_bits", (double)o->prec);
    cJSON_AddNumberToObject(j, "max_radius", o->max_radius);
    int nc = 0, nmin = 0, nsad = 0;
    for (int i = 0; i < l->n; i++) {
        const scm_certify_entry *e = &l->e[i];
        cJSON *p = scm_certify_result_json(&e->r);
        if (!p)
            break;
        cJSON_AddNumberToObject(p, "K", e->K);
        cJSON_AddNumberToObject(p, "M", e->M);
        if (e->k1 >= 0)
            cJSON_AddNumberToObject(p, "k1", e->k1);
        cJSON_AddNumberToObject(p, "index", e->index);
        cJSON_AddStringToObject(p, "ansatz", e->ansatz);
        cJSON_AddNumberToObject(p, "instance", e->instance);
        cJSON_AddNumberToObject(p, "eps", e->eps);
        if (e->stability[0])
            cJSON_AddStringToObject(p, "float_class", e->stability);
        if (e->table_line > 0) {
            cJSON_AddNumberToObject(p, "table_line", e->table_line);
            cJSON_AddNumberToObject(p, "polish_shift", e->polish_shift);
            cJSON_AddBoolToObject(p, "polished", e->polished);
        }
        cJSON_AddItemToArray(arr, p);
        nc += e->r.certified;
        nmin += e->r.certified && e->r.strict == 1;
        nsad += e->r.certified && e->r.strict == -1;
    }
    cJSON_AddNumberToObject(j, "n_points", l->n);
    cJSON_AddNumberToObject(j, "n_certified", nc);
    cJSON_AddNumberToObject(j, "n_strict_minima", nmin);
    cJSON_AddNumberToObject(j, "n_saddles", nsad);
    return j;
}
