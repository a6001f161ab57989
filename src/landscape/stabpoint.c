/* stabpoint.c: the point of `scm stability` (stabpoint.h): read from a
 * fixed-points result file or chosen in a k1 family, and the JSON record
 * of its analysis. */
#include "scm/stabpoint.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/output.h"
#include "scm_version.h"

void scm_stabpoint_free(scm_stabpoint *sp)
{
    free(sp->Q);
    free(sp->R);
    sp->Q = sp->R = NULL;
    scm_family_pick_free(&sp->pick);
    scm_symstab_result_free(&sp->sym.hess);
    scm_symstab_result_free(&sp->sym.jac);
}

/* K, M and the activation of a fixed-points result, and its point list. */
static scm_status read_header(const cJSON *root, const char *path, scm_stabpoint *sp,
                              const cJSON **fps, scm_error *err)
{
    const cJSON *jK = cJSON_GetObjectItemCaseSensitive(root, "K"),
                *jM = cJSON_GetObjectItemCaseSensitive(root, "M"),
                *ja = cJSON_GetObjectItemCaseSensitive(root, "activation");
    *fps = cJSON_GetObjectItemCaseSensitive(root, "fixed_points");
    if (!cJSON_IsNumber(jK) || !cJSON_IsNumber(jM) || !cJSON_IsArray(*fps) ||
        jK->valuedouble < 1 || jM->valuedouble < 1 ||
        jK->valuedouble != floor(jK->valuedouble) || jM->valuedouble != floor(jM->valuedouble) ||
        jK->valuedouble > 10000 || jM->valuedouble > 10000)
        return scm_error_set(err, SCM_EINVAL,
                             "'%s' is not a `scm fixed-points` result (needs integer K, M and "
                             "an array fixed_points)",
                             path);
    sp->K = (long)jK->valuedouble;
    sp->M = (long)jM->valuedouble;
    snprintf(sp->activation, sizeof sp->activation, "%s",
             cJSON_IsString(ja) ? ja->valuestring : "relu");
    return SCM_OK;
}

/* Q, R and the description of point index of the list fps. */
static scm_status read_point(const cJSON *fps, const char *path, long index, scm_stabpoint *sp,
                             scm_error *err)
{
    int n = cJSON_GetArraySize(fps);
    if (index < 0 || index >= n)
        return scm_error_set(err, SCM_EINVAL, "--index %ld out of range: '%s' has %d fixed "
                                              "points", index, path, n);
    const cJSON *p = cJSON_GetArrayItem(fps, (int)index);
    const cJSON *jQ = cJSON_GetObjectItemCaseSensitive(p, "Q"),
                *jR = cJSON_GetObjectItemCaseSensitive(p, "R"),
                *jl = cJSON_GetObjectItemCaseSensitive(p, "loss"),
                *jn = cJSON_GetObjectItemCaseSensitive(p, "ansatz"),
                *ji = cJSON_GetObjectItemCaseSensitive(p, "instance");
    /* the ansatz's instance label, which "k1" (the anti-aligned count) is
     * not when the ansatz's k1 group is not the anti-aligned one; files
     * written before issue 25 have only "k1" */
    const cJSON *jk = cJSON_IsNumber(ji) ? ji : cJSON_GetObjectItemCaseSensitive(p, "k1");
    if (cJSON_IsString(jn) && cJSON_IsNumber(jk) && jk->valuedouble == floor(jk->valuedouble) &&
        jk->valuedouble >= 0 && jk->valuedouble <= (double)sp->K) {
        snprintf(sp->ansatz, sizeof sp->ansatz, "%s", jn->valuestring);
        sp->instance = (int)jk->valuedouble;
    }
    sp->Q = calloc((size_t)(sp->K * sp->K), sizeof *sp->Q);
    sp->R = calloc((size_t)(sp->K * sp->M), sizeof *sp->R);
    if (!sp->Q || !sp->R)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (cJSON_IsNull(jQ) || !jQ)
        return scm_error_set(err, SCM_EINVAL, "fixed point %ld of '%s' has no full state (Q "
                                              "is null)", index, path);
    scm_error e;
    if (scm_output_read_matrix(jQ, "Q", (int)sp->K, (int)sp->K, sp->Q, &e) ||
        scm_output_read_matrix(jR, "R", (int)sp->K, (int)sp->M, sp->R, &e))
        return scm_error_set(err, SCM_EINVAL, "fixed point %ld of '%s': %s", index, path,
                             e.msg);
    snprintf(sp->desc, sizeof sp->desc, "%s[%ld] ansatz %s, loss %.12g", path, index,
             cJSON_IsString(jn) ? jn->valuestring : "?",
             cJSON_IsNumber(jl) ? jl->valuedouble : NAN);
    return SCM_OK;
}

scm_status scm_stabpoint_load(const char *path, long index, scm_stabpoint *sp, scm_error *err)
{
    memset(sp, 0, sizeof *sp);
    size_t len = 0;
    /* a fixed-points file, bounded like the families files sweeps read */
    char *text = scm_output_read_file(path, (size_t)256 << 20, &len, err);
    if (!text)
        return err ? err->code : SCM_EIO;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root)
        return scm_error_set(err, SCM_EINVAL, "'%s' is not valid JSON", path);
    const cJSON *fps = NULL;
    scm_status st = read_header(root, path, sp, &fps, err);
    if (!st)
        st = read_point(fps, path, index, sp, err);
    cJSON_Delete(root);
    return st;
}

scm_status scm_stabpoint_family(const scm_family_pick_opts *o, scm_stabpoint *sp,
                                scm_error *err)
{
    memset(sp, 0, sizeof *sp);
    sp->K = o->K;
    sp->M = o->M;
    sp->from_family = 1;
    scm_status st = scm_family_pick_run(o, &sp->pick, err);
    if (st)
        return st;
    const scm_fam_point *p = &sp->pick.fam.pt[sp->pick.index];
    sp->Q = malloc(sizeof *sp->Q * (size_t)(sp->K * sp->K));
    sp->R = malloc(sizeof *sp->R * (size_t)(sp->K * sp->M));
    if (!sp->Q || !sp->R)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    memcpy(sp->Q, p->Q, sizeof *sp->Q * (size_t)(sp->K * sp->K));
    memcpy(sp->R, p->R, sizeof *sp->R * (size_t)(sp->K * sp->M));
    scm_family_pick_describe(&sp->pick, sp->desc, sizeof sp->desc);
    snprintf(sp->ansatz, sizeof sp->ansatz, "%s", p->ansatz);
    sp->instance = p->instance;
    return SCM_OK;
}

static cJSON *num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

/* The "smoothness", "hessian", "zero_modes_predicted" and "jacobian"
 * objects. */
static void add_spectra(cJSON *root, const scm_stab_result *r, int sym)
{
    cJSON *sm = cJSON_AddObjectToObject(root, "smoothness");
    cJSON_AddBoolToObject(sm, "hessian_exists", r->smooth.smooth);
    cJSON_AddBoolToObject(sm, "closed_form", r->smooth.closed_form);
    cJSON_AddNumberToObject(sm, "dead_students", r->smooth.n_dead);
    cJSON_AddNumberToObject(sm, "parallel_student_pairs", r->smooth.n_par_ss);
    cJSON_AddNumberToObject(sm, "aligned_student_teacher_pairs", r->smooth.n_par_st);
    cJSON_AddStringToObject(sm, "what", r->smooth.what);
    cJSON *h = cJSON_AddObjectToObject(root, "hessian");
    cJSON_AddBoolToObject(h, "computed", r->hessian_done);
    if (r->hessian_done) {
        cJSON_AddStringToObject(h, "method", sym                 ? "symmetric"
                                             : r->hessian_closed ? "closed_form"
                                                                 : "central_differences");
        cJSON_AddItemToObject(h, "closed_vs_fd", num(r->hessian_fd_diff));
        cJSON_AddNumberToObject(h, "n", r->counts.n);
        cJSON_AddNumberToObject(h, "negative", r->counts.n_neg);
        cJSON_AddNumberToObject(h, "zero", r->counts.n_zero);
        cJSON_AddNumberToObject(h, "positive", r->counts.n_pos);
        cJSON_AddItemToObject(h, "zero_threshold", num(r->counts.zero_tol));
        cJSON_AddItemToObject(h, "smallest", scm_output_vector(r->eval_small, r->n_small));
        cJSON_AddItemToObject(h, "largest", num(r->eval_max));
    }
    cJSON_AddStringToObject(h, "verdict", scm_hverdict_str(r->hverdict));
    cJSON *z = cJSON_AddObjectToObject(root, "zero_modes_predicted");
    cJSON_AddNumberToObject(z, "total", (double)r->zm.total);
    cJSON_AddNumberToObject(z, "rotations", (double)r->zm.rotation);
    cJSON_AddNumberToObject(z, "students_outside_teacher_span_rank", r->zm.p);
    cJSON_AddNumberToObject(z, "teacher_rank", r->zm.rank_T);
    cJSON_AddNumberToObject(z, "relu_homogeneity", (double)r->zm.homogeneity);
    cJSON_AddNumberToObject(z, "linear", (double)r->zm.linear);
    cJSON *jj = cJSON_AddObjectToObject(root, "jacobian");
    cJSON_AddBoolToObject(jj, "computed", r->jacobian_done);
    cJSON_AddItemToObject(jj, "re_max",
                          r->jacobian_done ? num(r->jac_re_max) : cJSON_CreateNull());
    cJSON_AddItemToObject(jj, "re_min",
                          r->jacobian_done ? num(r->jac_re_min) : cJSON_CreateNull());
}

/* One symmetric spectrum: its counts and every distinct eigenvalue. */
static cJSON *sym_json(const scm_symstab_result *h)
{
    static const char *const irrep[] = {"[n]", "[n-1,1]", "[n-2,2]", "[n-2,1,1]",
                                        "[n-1,1]x[n'-1,1]"};
    static const char *const part[] = {"span", "perp", "flow"};
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", (double)h->total);
    cJSON_AddNumberToObject(o, "negative", (double)h->n_neg);
    cJSON_AddNumberToObject(o, "zero", (double)h->n_zero);
    cJSON_AddNumberToObject(o, "positive", (double)h->n_pos);
    cJSON_AddItemToObject(o, "zero_threshold", num(h->zero_tol));
    cJSON_AddNumberToObject(o, "blocks", h->n_blocks);
    cJSON_AddNumberToObject(o, "largest_block", h->max_block);
    cJSON *a = cJSON_AddArrayToObject(o, "eigenvalues");
    for (int i = 0; i < h->n; i++) {
        const scm_symstab_eig *e = &h->eig[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "value", num(e->value));
        if (e->part == SCM_SYMSTAB_FLOW)
            cJSON_AddItemToObject(j, "imag", num(e->imag));
        cJSON_AddNumberToObject(j, "multiplicity", (double)e->mult);
        cJSON_AddStringToObject(j, "part", e->part >= 0 && e->part < 3 ? part[e->part] : "?");
        cJSON_AddStringToObject(j, "irrep",
                                e->irrep >= 0 && e->irrep < 5 ? irrep[e->irrep] : "?");
        cJSON_AddStringToObject(j, "unit", e->unit >= 0 && e->unit < h->n_units
                                               ? h->unit_name[e->unit] : "");
        if (e->unit2 >= 0 && e->unit2 < h->n_units)
            cJSON_AddStringToObject(j, "unit2", h->unit_name[e->unit2]);
        cJSON_AddBoolToObject(j, "zero", e->zero);
        if (e->zero)
            cJSON_AddStringToObject(j, "cause", e->cause);
        cJSON_AddItemToArray(a, j);
    }
    return o;
}

/* The "spectrum_method" and "symmetric_spectrum" entries. */
static void add_sym(cJSON *root, const scm_stabpoint *sp, const scm_stab_result *r)
{
    const scm_stabpoint_sym *s = &sp->sym;
    cJSON_AddStringToObject(root, "spectrum_method", s->done ? "symmetric" : "dense");
    if (!s->done) {
        cJSON_AddStringToObject(root, "dense_because", s->why_dense);
        return;
    }
    cJSON *o = cJSON_AddObjectToObject(root, "symmetric_spectrum");
    cJSON_AddStringToObject(o, "ansatz", sp->ansatz);
    cJSON_AddNumberToObject(o, "instance", sp->instance);
    cJSON_AddNumberToObject(o, "predicted_zeros", (double)s->predicted_zeros);
    cJSON_AddItemToObject(o, "hessian", sym_json(&s->hess));
    cJSON_AddItemToObject(o, "jacobian", r->jacobian_done ? sym_json(&s->jac)
                                                          : cJSON_CreateNull());
}

static cJSON *row_json(const scm_stab_row *w)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "sigma", w->sigma);
    cJSON_AddNumberToObject(j, "trials", w->n);
    cJSON_AddItemToObject(j, "dist0_median", num(w->dist0_med));
    cJSON_AddItemToObject(j, "dist0_max", num(w->dist0_max));
    cJSON_AddItemToObject(j, "dist_median", num(w->dist_med));
    cJSON_AddItemToObject(j, "dist_max", num(w->dist_max));
    cJSON_AddItemToObject(j, "loss_change_median", num(w->deps_med));
    cJSON_AddItemToObject(j, "loss_change_max", num(w->deps_max));
    cJSON_AddNumberToObject(j, "distance_grew", w->n_grew);
    cJSON_AddNumberToObject(j, "dest_same", w->n_same);
    cJSON_AddNumberToObject(j, "dest_global_min", w->n_global);
    cJSON_AddNumberToObject(j, "dest_other", w->n_other);
    cJSON_AddNumberToObject(j, "dest_failed", w->n_failed);
    cJSON_AddNumberToObject(j, "flow_unsettled", w->n_unsettled);
    cJSON_AddItemToObject(j, "other_loss_min", num(w->other_eps_min));
    cJSON_AddItemToObject(j, "other_loss_max", num(w->other_eps_max));
    cJSON_AddItemToObject(j, "flow_loss_median", num(w->flow_eps_med));
    cJSON_AddStringToObject(j, "verdict", scm_verdict_str(w->verdict));
    return j;
}

cJSON *scm_stabpoint_json(const scm_stabpoint *sp, const scm_activation *act,
                          const scm_stab_opts *o, const scm_stab_result *r)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "stability");
    cJSON_AddNumberToObject(root, "K", (double)sp->K);
    cJSON_AddNumberToObject(root, "M", (double)sp->M);
    cJSON_AddStringToObject(root, "activation", act->name);
    cJSON_AddStringToObject(root, "point", sp->desc);
    if (sp->from_family && sp->pick.fam.n)
        cJSON_AddItemToObject(root, "family", scm_family_pick_json(&sp->pick));
    cJSON_AddItemToObject(root, "loss", num(r->eps));
    cJSON_AddItemToObject(root, "residual", num(r->residual));
    cJSON_AddNumberToObject(root, "d", (double)r->d);
    cJSON_AddItemToObject(root, "Q", scm_output_matrix(sp->Q, (int)sp->K, (int)sp->K));
    cJSON_AddItemToObject(root, "R", scm_output_matrix(sp->R, (int)sp->K, (int)sp->M));
    add_spectra(root, r, sp->sym.done);
    add_sym(root, sp, r);
    cJSON *pt = cJSON_AddObjectToObject(root, "perturbation");
    static const char *const space[] = {"weights", "weights", "qr", "none"};
    cJSON_AddStringToObject(pt, "space", space[sp->sym.perturb & 3]);
    cJSON_AddNumberToObject(pt, "steps", o->n_steps);
    cJSON_AddNumberToObject(pt, "eta", o->eta);
    cJSON_AddNumberToObject(pt, "seed", (double)o->seed);
    cJSON_AddBoolToObject(pt, "flow", o->run_flow);
    cJSON_AddNumberToObject(pt, "t_max", o->t_max);
    cJSON_AddNumberToObject(pt, "verdict_sigma_max", o->verdict_sigma_max);
    cJSON *rows = cJSON_AddArrayToObject(pt, "rows");
    for (int i = 0; i < r->n_rows; i++)
        cJSON_AddItemToArray(rows, row_json(&r->rows[i]));
    cJSON_AddStringToObject(root, "verdict", scm_verdict_str(r->verdict));
    cJSON_AddStringToObject(root, "tests_agree",
                            r->agree == 1 ? "yes" : r->agree == 0 ? "no" : "not_comparable");
    return root;
}
