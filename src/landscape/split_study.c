/* split_study.c: the study behind `scm split` (split.h, second half): the
 * parent fixed point read from a file or chosen among the enumerated ones,
 * the samples of its split line, the checks of each sample against the
 * larger network (split.c) with the optional perturbation test, and the
 * result object.  Messages are those the command prints after its
 * "scm split: " prefix; SCM_EINVAL and SCM_EIO mark bad input, so that the
 * command can tell exit status 2 from 1 without knowing the causes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/fixedpoint.h"
#include "scm/fplist.h"
#include "scm/output.h"
#include "scm/split.h"
#include "scm_version.h"

void scm_split_parent_free(scm_split_parent *p)
{
    if (!p)
        return;
    free(p->Q);
    free(p->R);
    free(p->v);
    free(p->vs);
    free(p->T);
    p->Q = p->R = p->v = p->vs = p->T = NULL;
}

/* ---- the parent from a file ---- */

/* An optional array of n numbers: absent (*x stays NULL) or read. */
static scm_status read_vec(const cJSON *o, const char *key, int n, double **x, const char *path,
                           scm_error *err)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key), *e;
    if (!j)
        return SCM_OK;
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != n)
        return scm_error_set(err, SCM_EINVAL, "'%s': %s must be an array of %d numbers", path,
                             key, n);
    if (!(*x = calloc((size_t)n, sizeof **x)))
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    int i = 0;
    cJSON_ArrayForEach(e, j)
    {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble))
            return scm_error_set(err, SCM_EINVAL, "'%s': %s[%d] is not a finite number", path,
                                 key, i);
        (*x)[i++] = e->valuedouble;
    }
    return SCM_OK;
}

/* The point object pt (of root) into p: Q, R, and root's activation, T, v,
 * vs. */
static scm_status read_point(const cJSON *root, const cJSON *pt, const char *path,
                             scm_split_parent *p, scm_error *err)
{
    scm_error e;
    const cJSON *ja = cJSON_GetObjectItemCaseSensitive(root, "activation");
    const cJSON *jQ = cJSON_GetObjectItemCaseSensitive(pt, "Q"),
                *jR = cJSON_GetObjectItemCaseSensitive(pt, "R");
    if (!cJSON_IsArray(jQ) || !cJSON_IsArray(jR) || cJSON_GetArraySize(jQ) < 1 ||
        !cJSON_IsArray(cJSON_GetArrayItem(jR, 0)))
        return scm_error_set(err, SCM_EINVAL,
                             "'%s': the point needs matrices Q (K x K) and R (K x M)", path);
    p->K = cJSON_GetArraySize(jQ);
    p->M = cJSON_GetArraySize(cJSON_GetArrayItem(jR, 0));
    if (p->K > 1000 || p->M < 1 || p->M > 1000)
        return scm_error_set(err, SCM_EINVAL, "'%s': K = %ld, M = %ld out of range", path, p->K,
                             p->M);
    snprintf(p->act, sizeof p->act, "%s", cJSON_IsString(ja) ? ja->valuestring : "erf");
    p->Q = calloc((size_t)(p->K * p->K), sizeof *p->Q);
    p->R = calloc((size_t)(p->K * p->M), sizeof *p->R);
    if (!p->Q || !p->R)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (scm_output_read_matrix(jQ, "Q", (int)p->K, (int)p->K, p->Q, &e) ||
        scm_output_read_matrix(jR, "R", (int)p->K, (int)p->M, p->R, &e))
        return scm_error_set(err, SCM_EINVAL, "'%s': %s", path, e.msg);
    const cJSON *jT = cJSON_GetObjectItemCaseSensitive(root, "T");
    if (jT) {
        p->T = calloc((size_t)(p->M * p->M), sizeof *p->T);
        if (!p->T)
            return scm_error_set(err, SCM_EINVAL, "'%s': out of memory", path);
        if (scm_output_read_matrix(jT, "T", (int)p->M, (int)p->M, p->T, &e))
            return scm_error_set(err, SCM_EINVAL, "'%s': %s", path, e.msg);
    }
    scm_status st = read_vec(root, "v", (int)p->K, &p->v, path, err);
    return st ? st : read_vec(root, "vs", (int)p->M, &p->vs, path, err);
}

scm_status scm_split_parent_load(const char *path, long index, scm_split_parent *p,
                                 scm_error *err)
{
    size_t len = 0;
    char *text = scm_output_read_file(path, (size_t)64 << 20, &len, err);
    if (!text)
        return err ? err->code : SCM_EIO;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root)
        return scm_error_set(err, SCM_EINVAL, "'%s' is not valid JSON", path);
    scm_status st = SCM_EINVAL;
    const cJSON *pt = root, *fps = cJSON_GetObjectItemCaseSensitive(root, "fixed_points");
    if (fps) {
        if (!cJSON_IsArray(fps) || index < 0 || index >= cJSON_GetArraySize(fps)) {
            scm_error_set(err, st, "'%s' is a fixed-points result: --index in [0, %d) needed",
                          path, cJSON_IsArray(fps) ? cJSON_GetArraySize(fps) : 0);
            goto out;
        }
        pt = cJSON_GetArrayItem(fps, (int)index);
    } else if (index >= 0) {
        scm_error_set(err, st, "'%s' has no fixed_points array, --index does not apply", path);
        goto out;
    }
    if ((st = read_point(root, pt, path, p, err)))
        goto out;
    snprintf(p->desc, sizeof p->desc, "%s%s", path, fps ? "" : " (Q, R given)");
    if (fps)
        snprintf(p->desc + strlen(p->desc), sizeof p->desc - strlen(p->desc), "[%ld]", index);
out:
    cJSON_Delete(root);
    return st;
}

/* ---- the parent among the enumerated points ---- */

/* The index of the chosen point in the list c[0..n-1], or -1 with err set. */
static int pick_point(const scm_fplist_point *c, int n, long K, long M, long k1, long index,
                      double loss, scm_status *st, scm_error *err)
{
    int pick = -1;
    if (index >= 0) {
        if (index >= n)
            *st = scm_error_set(err, SCM_EINVAL,
                                "--index %ld out of range: %d fixed points at K = %ld, M = %ld",
                                index, n, K, M);
        else
            pick = (int)index;
    } else if (k1 >= 0) {
        for (int i = 0; i < n && pick < 0; i++)
            if (c[i].n_anti == (double)k1)
                pick = i;
        if (pick < 0)
            *st = scm_error_set(err, SCM_ENOCONV,
                                "no fixed point with %ld anti-aligned students at K = %ld, "
                                "M = %ld",
                                k1, K, M);
    } else {
        pick = 0;
        for (int i = 1; i < n; i++)
            if (fabs(c[i].eps - loss) < fabs(c[pick].eps - loss))
                pick = i;
    }
    return pick;
}

scm_status scm_split_parent_choose(long K, long M, const scm_activation *act, long starts,
                                   int threads, long k1, long index, double loss,
                                   scm_split_parent *p, scm_error *err)
{
    scm_fplist_point *c = NULL;
    int n = 0, pick = -1;
    p->K = K;
    p->M = M;
    snprintf(p->act, sizeof p->act, "%s", act->name);
    scm_status st = scm_fplist_find((int)K, (int)M, act, starts, threads, &c, &n, NULL);
    if (st)
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the enumeration");
    else if (n == 0)
        st = scm_error_set(err, SCM_ENOCONV, "no fixed point enumerated at K = %ld, M = %ld (%s)",
                           K, M, act->name);
    else
        pick = pick_point(c, n, K, M, k1, index, loss, &st, err);
    if (pick >= 0) {
        p->Q = c[pick].Q;
        p->R = c[pick].R;
        c[pick].Q = c[pick].R = NULL;
        snprintf(p->desc, sizeof p->desc, "enumerated point %d of %d (by loss), %s, loss %.12g",
                 pick, n, c[pick].ansatz, c[pick].eps);
    }
    scm_fplist_free(c, n);
    return st;
}

/* ---- the samples ---- */

scm_status scm_split_samples(const double *lam, int nl, long grid, const double *w, int nw,
                             scm_split_sample **s, int *ns, scm_error *err)
{
    *ns = nw ? 1 : nl ? nl : (int)grid;
    *s = NULL;
    if (*ns < 1 || nw > SCM_SPLIT_MAX_DAUGHTERS || nw == 1)
        return scm_error_set(err, SCM_EINVAL, "no split to sample (%d weights, %d lambdas, "
                             "grid %ld)", nw, nl, grid);
    *s = calloc((size_t)*ns, sizeof **s);
    if (!*s)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    for (int i = 0; i < *ns; i++) {
        scm_split_sample *q = &(*s)[i];
        if (nw) {
            q->n = nw;
            double sum = 0.0;
            for (int j = 0; j < nw; j++) {
                if (!(fabs(w[j]) <= SCM_SPLIT_MU_MAX))
                    return scm_error_set(err, SCM_EINVAL,
                                         "--weights: weight %d = %g is out of range: |mu| must "
                                         "be <= %g (the weights cancel to 1 and would lose "
                                         "about 2 log10|mu| digits of the split point's Hessian)",
                                         j, w[j], SCM_SPLIT_MU_MAX);
                sum += q->mu[j] = w[j];
            }
            if (!(fabs(sum - 1.0) <= 1e-12))
                return scm_error_set(err, SCM_EINVAL,
                                     "--weights must sum to 1, they sum to %.17g", sum);
            continue;
        }
        double l = nl ? lam[i] : grid > 1 ? -0.5 + 2.0 * i / (double)(grid - 1) : 0.5;
        if (!(fabs(l) <= SCM_SPLIT_MU_MAX))
            return scm_error_set(err, SCM_EINVAL,
                                 "--lambda %g is out of range: |lambda| must be <= %g (the "
                                 "daughters' weights lambda and 1 - lambda cancel to 1 and "
                                 "would lose about 2 log10|lambda| digits of the split point's "
                                 "Hessian)",
                                 l, SCM_SPLIT_MU_MAX);
        q->n = 2;
        q->mu[0] = l;
        q->mu[1] = 1.0 - l;
    }
    return SCM_OK;
}

/* ---- the study ---- */

void scm_split_study_opts_default(scm_split_study_opts *o)
{
    memset(o, 0, sizeof *o);
    o->rel_tol = 1e-6;
}

void scm_split_study_free(scm_split_study *st)
{
    if (!st)
        return;
    scm_split_inner_free(&st->inner);
    scm_model_free(st->model);
    st->model = NULL;
}

/* The perturbation test (no spectra) at the split point of s. */
static scm_status perturb(const scm_split_study *st, scm_split_sample *s, scm_error *err)
{
    const scm_model *m = st->model;
    const scm_split_parent *p = st->parent;
    const int Kc = (int)p->K + s->n - 1, M = (int)p->M;
    double *vc = calloc((size_t)Kc, sizeof *vc), *Qc = calloc((size_t)Kc * Kc, sizeof *Qc),
           *Rc = calloc((size_t)Kc * M, sizeof *Rc);
    scm_error e;
    scm_error_clear(&e);
    scm_model *mc = NULL;
    scm_status rc = SCM_ENOMEM;
    if (!vc || !Qc || !Rc) {
        scm_error_set(err, rc, "out of memory");
        goto out;
    }
    if ((rc = scm_split_embed(m, p->Q, p->R, st->inner.r, s->n, s->mu, vc, Qc, Rc, &e)) ||
        !(mc = scm_split_model(m, s->n, vc, &e))) {
        /* The split was embedded already by scm_split_check: not bad input. */
        rc = scm_error_set(err, SCM_ESOLVER, "perturbation test: %s", e.msg);
        goto out;
    }
    scm_stab_opts o;
    scm_stab_opts_three_sigma(&o);
    o.d = st->d;
    o.hessian = 0;
    o.jacobian = 0;
    scm_stab_result r;
    if ((rc = scm_stab_analyse(mc, Qc, Rc, &o, &r, &e))) {
        /* The point was checked as valid input already: a failure here is
         * one of the computation, whatever its status. */
        rc = scm_error_set(err, rc == SCM_EINVAL ? SCM_ESOLVER : rc, "perturbation test: %s",
                           e.msg);
        goto out;
    }
    s->perturbed = 1;
    s->pverdict = r.verdict;
out:
    scm_model_free(mc);
    free(vc);
    free(Qc);
    free(Rc);
    return rc;
}

/* The parent must be a fixed point: max |F_Q|, |F_R| <= 1e-9. */
static scm_status check_fixed_point(scm_split_study *st, scm_flow *fl, scm_error *err)
{
    const int K = st->model->K, M = st->model->M;
    scm_split_parent *p = st->parent;
    double *FQ = calloc((size_t)K * K, sizeof *FQ), *FR = calloc((size_t)K * M, sizeof *FR), eps;
    scm_status rc = SCM_OK;
    scm_status s = FQ && FR ? scm_flow_rhs(fl, p->Q, p->R, FQ, FR, &eps) : SCM_ENOMEM;
    if (s) {
        rc = scm_error_set(err, s == SCM_ENOMEM ? s : SCM_EINVAL,
                           "the flow cannot be evaluated at the point (%s)", scm_status_str(s));
    } else {
        double res = 0.0;
        for (int i = 0; i < K * K; i++)
            res = fmax(res, fabs(FQ[i]));
        for (int i = 0; i < K * M; i++)
            res = fmax(res, fabs(FR[i]));
        st->residual = res;
        if (!(res <= 1e-9))
            rc = scm_error_set(err, SCM_EINVAL,
                               "the point is not a fixed point: flow residual %.3g > 1e-9 (try "
                               "--polish)",
                               res);
        size_t l = strlen(p->desc);
        snprintf(p->desc + l, sizeof p->desc - l, "; residual %.2g", res);
    }
    free(FQ);
    free(FR);
    return rc;
}

/* The model of the parent and the checks of its state; EINVAL for bad
 * input. */
static scm_status parent_model(scm_split_study *st, const scm_split_study_opts *o,
                               scm_error *err)
{
    scm_split_parent *p = st->parent;
    scm_error e;
    const scm_activation *act = scm_activation_find(p->act);
    if (!act)
        return scm_error_set(err, SCM_EINVAL, "unknown activation '%s' (relu, erf, linear)",
                             p->act);
    if (o->neuron < 0 || o->neuron >= p->K)
        return scm_error_set(err, SCM_EINVAL,
                             "--neuron %d out of range: the point has K = %ld students",
                             o->neuron, p->K);
    st->d = o->d > 0 ? o->d : p->K + p->M + 1;
    if (!(st->model = scm_model_alloc((int)p->K, (int)p->M, act, p->T, p->v, p->vs, &e)))
        return scm_error_set(err, SCM_EINVAL, "%s", e.msg);
    if (scm_model_check_state(st->model, p->Q, p->R, 1e-9, &e))
        return scm_error_set(err, SCM_EINVAL, "the point is not a valid state: %s", e.msg);
    return SCM_OK;
}

/* The inner Hessian, the parent's Hessian and every sample's check. */
static scm_status spectra(scm_split_study *st, const scm_split_study_opts *o, scm_error *err)
{
    const scm_split_parent *p = st->parent;
    const long Kd = p->K * st->d;
    double *ev = calloc((size_t)Kd, sizeof *ev);
    if (!ev)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    scm_error e;
    scm_status s =
        scm_split_inner_hessian(st->model, p->Q, p->R, o->neuron, o->rel_tol, &st->inner, &e);
    if (!s) {
        int closed;
        s = scm_split_hessian(st->model, p->Q, p->R, st->d, o->rel_tol, ev, &st->parent_counts,
                              &st->parent_zero, &closed, &e);
    }
    for (int i = 0; i < st->n_samples && !s; i++) {
        scm_split_sample *q = st->samples + i;
        s = scm_split_check(st->model, p->Q, p->R, &st->inner, q->n, q->mu, st->d, o->rel_tol,
                            &st->parent_counts, st->parent_zero.total, &q->pt, &e);
    }
    free(ev);
    return s ? scm_error_set(err, s, "%s", e.msg) : SCM_OK;
}

scm_status scm_split_study_run(scm_split_parent *p, const scm_split_study_opts *o,
                               scm_split_sample *s, int ns, scm_split_study *out,
                               scm_error *err)
{
    memset(out, 0, sizeof *out);
    out->parent = p;
    out->samples = s;
    out->n_samples = ns;
    scm_status st = parent_model(out, o, err);
    if (st)
        return st;
    scm_flow *fl = scm_flow_alloc(out->model);
    if (!fl)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (o->polish) {
        double res;
        scm_error e;
        if (scm_fp_polish(fl, p->Q, p->R, 100, 1e-13, &res, &e)) {
            st = scm_error_set(err, SCM_ENOCONV, "Newton polish did not converge (residual %.3g)",
                               res);
            goto done;
        }
        size_t l = strlen(p->desc);
        snprintf(p->desc + l, sizeof p->desc - l, ", Newton-polished");
    }
    if ((st = check_fixed_point(out, fl, err)) || (st = spectra(out, o, err)))
        goto done;
    for (int i = 0; i < ns && o->perturb && !st; i++)
        st = perturb(out, &s[i], err);
done:
    scm_flow_free(fl);
    return st;
}

/* ---- the result ---- */

static cJSON *num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

static cJSON *sample_json(const scm_split_sample *s, long d)
{
    const scm_split_point *q = &s->pt;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "mu", scm_output_vector(s->mu, s->n));
    cJSON_AddItemToObject(j, "loss", num(q->eps));
    cJSON_AddItemToObject(j, "residual", num(q->residual));
    cJSON_AddStringToObject(j, "hessian_method", q->closed ? "closed_form" : "central_differences");
    cJSON_AddNumberToObject(j, "negative", q->counts.n_neg);
    cJSON_AddNumberToObject(j, "zero", q->counts.n_zero);
    cJSON_AddNumberToObject(j, "positive", q->counts.n_pos);
    cJSON_AddNumberToObject(j, "predicted_negative", (double)q->pred.n_neg);
    cJSON_AddNumberToObject(j, "predicted_zero", (double)q->pred.n_zero);
    cJSON_AddNumberToObject(j, "predicted_positive", (double)q->pred.n_pos);
    cJSON_AddBoolToObject(j, "inertia_matches", q->match);
    cJSON_AddNumberToObject(j, "explained_zero_modes", (double)q->explained_zero);
    cJSON_AddItemToObject(j, "min_eigenvalue_times_d", num(q->eval_min * (double)d));
    cJSON_AddStringToObject(j, "verdict", scm_hverdict_str(q->verdict));
    cJSON_AddStringToObject(j, "predicted_verdict", scm_hverdict_str(q->pred_verdict));
    if (s->perturbed)
        cJSON_AddStringToObject(j, "perturbation_verdict", scm_verdict_str(s->pverdict));
    return j;
}

cJSON *scm_split_study_json(const scm_split_study *st)
{
    const scm_split_parent *p = st->parent;
    const scm_split_inner *h = &st->inner;
    const scm_stab_counts *pc = &st->parent_counts;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "split");
    cJSON_AddNumberToObject(root, "K", (double)p->K);
    cJSON_AddNumberToObject(root, "M", (double)p->M);
    cJSON_AddStringToObject(root, "activation", st->model->act->name);
    cJSON_AddStringToObject(root, "point", p->desc);
    cJSON_AddNumberToObject(root, "neuron", h->r);
    cJSON_AddNumberToObject(root, "d", (double)st->d);
    cJSON_AddItemToObject(root, "Q", scm_output_matrix(p->Q, (int)p->K, (int)p->K));
    cJSON_AddItemToObject(root, "R", scm_output_matrix(p->R, (int)p->K, (int)p->M));
    cJSON_AddItemToObject(root, "v", scm_output_vector(st->model->v, (int)p->K));
    cJSON *ph = cJSON_AddObjectToObject(root, "parent_hessian");
    cJSON_AddNumberToObject(ph, "negative", pc->n_neg);
    cJSON_AddNumberToObject(ph, "zero", pc->n_zero);
    cJSON_AddNumberToObject(ph, "positive", pc->n_pos);
    cJSON_AddNumberToObject(ph, "symmetry_zero_modes", (double)st->parent_zero.total);
    cJSON *in = cJSON_AddObjectToObject(root, "inner_hessian");
    cJSON_AddNumberToObject(in, "span_dimension", h->rank);
    cJSON_AddItemToObject(in, "span_eigenvalues", scm_output_vector(h->eval, h->rank));
    cJSON_AddItemToObject(in, "complement_eigenvalue", num(h->h_perp));
    cJSON_AddBoolToObject(in, "complement_flat", h->perp_flat);
    cJSON_AddStringToObject(in, "class", scm_split_class_str(h->cls));
    cJSON_AddStringToObject(in, "units", "d * H_r");
    cJSON *rows = cJSON_AddArrayToObject(root, "points");
    for (int i = 0; i < st->n_samples; i++)
        cJSON_AddItemToArray(rows, sample_json(st->samples + i, st->d));
    return root;
}
