/* family_pick.c: which point of a k1 family `scm stability --K --M --k1`
 * analyses (family.h): the family enumerated in the built-in ansätze or an
 * ansatz file, the point chosen by index, by loss or by default (the
 * lowest-loss minimum candidate), and its description and JSON record. */
#include "scm/family.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "scm/symstab.h"

#define PICK_MAX_ANSATZ 16

/* The full-Jacobian check of point i (family.h's classes) from the
 * symmetric spectrum of its ansatz instance (scm_stab_symmetric_jacobian,
 * cost independent of K); where that is refused (parallel ReLU neurons) or
 * the ansatz is not among ans, the dense scm_family_check_full. */
static scm_status check_point(scm_family *fam, int i, const scm_activation *act,
                              scm_ansatz *const *ans, int nans, scm_error *err)
{
    scm_fam_point *p = &fam->pt[i];
    if (p->cls != SCM_FAM_BLOCK_STABLE)
        return SCM_OK;
    const scm_ansatz *a = NULL;
    for (int j = 0; j < nans && !a; j++)
        if (!strcmp(scm_ansatz_name(ans[j]), p->ansatz))
            a = ans[j];
    scm_error e;
    scm_ansatz_inst *in =
        a ? scm_ansatz_instantiate(a, fam->K, fam->M, p->instance, &e) : NULL;
    scm_symstab_result r;
    memset(&r, 0, sizeof r);
    scm_status st = in && scm_ansatz_inst_nscalars(in) == p->nsc
                        ? scm_stab_symmetric_jacobian(in, act, p->x, NULL, &r, &e)
                        : SCM_EINVAL;
    if (st == SCM_OK && r.n > 0) {
        p->full_re_max = r.eig[r.n - 1].value;
        p->cls = p->full_re_max > SCM_FAM_EIG_TOL ? SCM_FAM_SADDLE : SCM_FAM_MIN_CANDIDATE;
    }
    scm_symstab_result_free(&r);
    scm_ansatz_inst_free(in);
    return p->cls == SCM_FAM_BLOCK_STABLE ? scm_family_check_full(fam, i, act, err) : SCM_OK;
}

/* scm_family_default with check_point. */
static scm_status family_default(scm_family *fam, const scm_activation *act,
                                 scm_ansatz *const *ans, int nans, int *index, scm_error *err)
{
    *index = -1;
    for (int i = 0; i < fam->n; i++) {
        scm_status st = check_point(fam, i, act, ans, nans, err);
        if (st)
            return st;
        if (fam->pt[i].cls == SCM_FAM_MIN_CANDIDATE) {
            *index = i;
            return SCM_OK;
        }
    }
    return SCM_OK;
}

void scm_family_pick_opts_default(scm_family_pick_opts *o)
{
    memset(o, 0, sizeof *o);
    o->K = o->M = o->k1 = -1;
    o->starts = 100;
    o->index = -1;
    o->loss = NAN;
}

void scm_family_pick_free(scm_family_pick *p)
{
    scm_family_free(&p->fam);
    free(p->why);
    p->why = NULL;
}

/* A message of several lines: in p->why whole, in err cut to its size. */
static scm_status fail_list(scm_family_pick *p, scm_status st, char *why, scm_error *err)
{
    p->why = why;
    return why ? scm_error_set(err, st, "%s", why)
               : scm_error_set(err, SCM_ENOMEM, "out of memory");
}

/* Append piece to the heap string *s (NULL after a failure). */
static void append(char **s, size_t *len, const char *piece)
{
    if (!*s)
        return;
    size_t n = strlen(piece);
    char *ns = realloc(*s, *len + n + 1);
    if (!ns) {
        free(*s);
        *s = NULL;
        return;
    }
    memcpy(ns + *len, piece, n + 1);
    *len += n;
    *s = ns;
}

static char *str_dup(const char *t)
{
    size_t n = strlen(t) + 1;
    char *s = malloc(n);
    if (s)
        memcpy(s, t, n);
    return s;
}

/* The point of loss o->loss, or the message listing the family's losses. */
static scm_status pick_by_loss(const scm_family_pick_opts *o, scm_family_pick *p, scm_error *err)
{
    p->index = scm_family_by_loss(&p->fam, o->loss, 1e-6);
    p->how = "--loss";
    if (p->index >= 0)
        return SCM_OK;
    char head[160];
    snprintf(head, sizeof head, "--loss %.12g: no point of the family has that loss (to 1e-6 "
                                "relative); its losses:", o->loss);
    char *s = str_dup(head);
    size_t len = s ? strlen(s) : 0;
    for (int i = 0; i < p->fam.n; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, " %.12g", p->fam.pt[i].eps);
        append(&s, &len, buf);
    }
    return fail_list(p, SCM_EINVAL, s, err);
}

/* The lowest-loss minimum candidate, or the message listing the points. */
static scm_status pick_default(const scm_family_pick_opts *o, scm_family_pick *p,
                               const scm_activation *act, scm_ansatz *const *ans, int nans,
                               scm_error *err)
{
    p->how = "lowest-loss minimum candidate";
    scm_status st = family_default(&p->fam, act, ans, nans, &p->index, err);
    if (st || p->index >= 0)
        return st;
    char head[320];
    snprintf(head, sizeof head,
             "no point of the k1 = %d family at K = %d, M = %d is a minimum candidate (all %d "
             "have a positive Jacobian eigenvalue); pick one with --index or --loss:",
             o->k1, o->K, o->M, p->fam.n);
    char *s = str_dup(head);
    size_t len = s ? strlen(s) : 0;
    for (int i = 0; i < p->fam.n; i++) {
        char buf[128];
        snprintf(buf, sizeof buf, "\n  [%d] loss %.12g %s", i, p->fam.pt[i].eps,
                 scm_fam_class_str(p->fam.pt[i].cls));
        append(&s, &len, buf);
    }
    return fail_list(p, SCM_ENOCONV, s, err);
}

/* The ansätze of the enumeration: the file, or the built-in ones. */
static scm_status load_ansatze(const char *file, scm_ansatz **ans, int *nans, scm_error *err)
{
    *nans = 0;
    if (file) {
        ans[0] = scm_ansatz_load(file, err);
        if (!ans[0])
            return err ? err->code : SCM_EINVAL;
        *nans = 1;
        return SCM_OK;
    }
    for (int i = 0; i < scm_ansatz_builtin_count() && *nans < PICK_MAX_ANSATZ; i++) {
        const char *name, *text = scm_ansatz_builtin_text(i, &name);
        scm_error e;
        ans[*nans] = scm_ansatz_parse(text, strlen(text), name, &e);
        if (!ans[*nans])
            return scm_error_set(err, e.code, "built-in %s", e.msg);
        (*nans)++;
    }
    return SCM_OK;
}

scm_status scm_family_pick_run(const scm_family_pick_opts *o, scm_family_pick *p,
                               scm_error *err)
{
    memset(p, 0, sizeof *p);
    p->index = -1;
    const scm_activation *act = o->act ? o->act : &scm_act_relu;
    scm_ansatz *ans[PICK_MAX_ANSATZ];
    int nans = 0;
    scm_status st = load_ansatze(o->ansatz_file, ans, &nans, err);
    if (!st) {
        scm_fp_opts fo;
        scm_fp_opts_default(&fo);
        fo.n_random = (int)o->starts;
        fo.threads = o->threads > 0 ? o->threads : scm_threads_online();
        st = scm_family_find(o->K, o->M, o->k1, ans, nans, act, &fo, &p->fam, err);
    }
    if (!st && p->fam.n == 0)
        st = scm_error_set(err, SCM_ENOCONV,
                           "no specialised fixed point with %d anti-aligned students found at "
                           "K = %d, M = %d",
                           o->k1, o->K, o->M);
    if (!st && o->index >= 0) {
        p->how = "--index";
        if (o->index >= p->fam.n)
            st = scm_error_set(err, SCM_EINVAL, "--index %ld: the family has points 0 .. %d",
                               o->index, p->fam.n - 1);
        else
            p->index = (int)o->index;
    } else if (!st && isfinite(o->loss))
        st = pick_by_loss(o, p, err);
    else if (!st)
        st = pick_default(o, p, act, ans, nans, err);
    if (!st)
        st = check_point(&p->fam, p->index, act, ans, nans, err);
    for (int i = 0; i < nans; i++)
        scm_ansatz_free(ans[i]);
    return st;
}

void scm_family_pick_describe(const scm_family_pick *p, char *buf, size_t len)
{
    const scm_fam_point *q = &p->fam.pt[p->index];
    snprintf(buf, len, "family k1 = %d [%d] (%s): ansatz %s instance %d, loss %.12g, %s",
             p->fam.k1, p->index, p->how, q->ansatz, q->instance, q->eps,
             scm_fam_class_str(q->cls));
}

static cJSON *num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

cJSON *scm_family_pick_json(const scm_family_pick *p)
{
    const scm_family *f = &p->fam;
    const scm_fam_point *q = &f->pt[p->index];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "k1", f->k1);
    cJSON_AddNumberToObject(o, "index", p->index);
    cJSON_AddStringToObject(o, "selection", p->how);
    cJSON_AddStringToObject(o, "ansatz", q->ansatz);
    cJSON_AddNumberToObject(o, "instance", q->instance);
    cJSON_AddNumberToObject(o, "n_anti", q->n_anti);
    cJSON_AddItemToObject(o, "loss", num(q->eps));
    cJSON_AddStringToObject(o, "class", scm_fam_class_str(q->cls));
    cJSON_AddItemToObject(o, "block_jacobian_re_max", num(q->block_re_max));
    cJSON_AddItemToObject(o, "full_jacobian_re_max", num(q->full_re_max));
    cJSON *sc = cJSON_AddObjectToObject(o, "scalars");
    for (int c = 0; c < q->nsc; c++)
        cJSON_AddItemToObject(sc, q->names[c], num(q->x[c]));
    cJSON *all = cJSON_AddArrayToObject(o, "points");
    for (int i = 0; i < f->n; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "index", i);
        cJSON_AddItemToObject(j, "loss", num(f->pt[i].eps));
        cJSON_AddStringToObject(j, "class", scm_fam_class_str(f->pt[i].cls));
        cJSON_AddStringToObject(j, "ansatz", f->pt[i].ansatz);
        cJSON_AddNumberToObject(j, "instance", f->pt[i].instance);
        cJSON_AddItemToArray(all, j);
    }
    return o;
}
