/* cmd_split.c: `scm split`: split neuron r of a K-student fixed point into
 * daughters with output weights mu_j v_r (sum mu_j = 1), classify the
 * split line by the parent's inner Hessian and check each sample point
 * against the full Hessian of the larger network (and optionally the
 * perturbation test).  Prints a table, writes a JSON result atomically
 * (docs/split.md). */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "fp_list.h"
#include "scm/fixedpoint.h"
#include "scm/output.h"
#include "scm/split.h"
#include "scm_version.h"

#define ME "scm split"
#define MAX_LAMBDA 1000
#define MAX_DAUGHTERS 16

static void sp_usage(FILE *f)
{
    fprintf(f,
            "usage: scm split --K K --M M [--k1 N | --index I | --loss L] --neuron r\n"
            "                 [--lambda a,b,... | --lambda-grid N | --weights mu1,mu2,...]\n"
            "       scm split --point FILE [--index I] --neuron r [...]\n"
            "\n"
            "Split student r (0-based) of a fixed point into daughters with output\n"
            "weights mu_j v_r, sum mu_j = 1 (two daughters: lambda, 1 - lambda).  Prints\n"
            "the parent's inner Hessian (residual-weighted second derivative of its\n"
            "feature: eigenvalues of d H_r on the span of students and teachers and on\n"
            "the complement) and its class, then for each split point the residual of\n"
            "the larger flow, the Hessian's inertia (measured and predicted), its\n"
            "smallest eigenvalue without the explained zero modes, and the verdict.\n"
            "The fixed point is enumerated (T = I, v = v* = 1, built-in ansatze) and\n"
            "chosen by --k1 (lowest loss with N anti-aligned students), --index (in the\n"
            "list sorted by loss) or --loss (nearest); or read from FILE: a `scm\n"
            "fixed-points -o` result (with --index) or an object with Q, R and\n"
            "optionally v, vs, T, activation.\n"
            "\n"
            "  --activation NAME   erf (default), relu, linear\n"
            "  --lambda a,b,...    split weights lambda of two daughters\n"
            "  --lambda-grid N     N lambdas evenly in [-0.5, 1.5] (default 9)\n"
            "  --weights m1,m2,..  one split into several daughters (sum 1)\n"
            "  --d D               dimension of the realisation (default K + M + 1)\n"
            "  --starts N          Newton starts of the enumeration (default 100)\n"
            "  --polish            Newton-polish a point read from FILE first\n"
            "  --perturb           also the perturbation test at each point (3 trials at\n"
            "                      sigma 1e-4, 1e-3, 1e-2, GD then the CVODE flow)\n"
            "  -o FILE             JSON result file\n"
            "  -q, --quiet         no table\n"
            "\n"
            "exit status: 0 done, 1 a computation failed, 2 bad input.\n");
}

static cJSON *num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

/* ---- the parent ---- */

typedef struct {
    long K, M;
    char act[32];
    double *Q, *R, *v, *vs, *T; /* v, vs, T NULL: defaults */
    char desc[1200];
} parent;

static void parent_free(parent *p)
{
    free(p->Q);
    free(p->R);
    free(p->v);
    free(p->vs);
    free(p->T);
}

/* An optional array of n numbers: 0 (absent: *x stays NULL, or read), 2
 * on a bad one, 1 out of memory. */
static int read_vec(const cJSON *o, const char *key, int n, double **x, const char *path)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key), *e;
    if (!j)
        return 0;
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != n) {
        fprintf(stderr, ME ": '%s': %s must be an array of %d numbers\n", path, key, n);
        return 2;
    }
    if (!(*x = calloc((size_t)n, sizeof **x)))
        return 1;
    int i = 0;
    cJSON_ArrayForEach(e, j)
    {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) {
            fprintf(stderr, ME ": '%s': %s[%d] is not a finite number\n", path, key, i);
            return 2;
        }
        (*x)[i++] = e->valuedouble;
    }
    return 0;
}

/* A point from FILE: a `scm fixed-points` result (entry index) or {Q, R, ...}. */
static int load_point(const char *path, long index, parent *p)
{
    size_t len = 0;
    scm_error err;
    char *text = scm_output_read_file(path, (size_t)64 << 20, &len, &err);
    if (!text) {
        fprintf(stderr, ME ": %s\n", err.msg);
        return err.code == SCM_ENOMEM ? 1 : 2;
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root) {
        fprintf(stderr, ME ": '%s' is not valid JSON\n", path);
        return 2;
    }
    int rc = 2;
    const cJSON *pt = root, *fps = cJSON_GetObjectItemCaseSensitive(root, "fixed_points");
    if (fps) {
        if (!cJSON_IsArray(fps) || index < 0 || index >= cJSON_GetArraySize(fps)) {
            fprintf(stderr, ME ": '%s' is a fixed-points result: --index in [0, %d) needed\n",
                    path, cJSON_IsArray(fps) ? cJSON_GetArraySize(fps) : 0);
            goto out;
        }
        pt = cJSON_GetArrayItem(fps, (int)index);
    } else if (index >= 0) {
        fprintf(stderr, ME ": '%s' has no fixed_points array, --index does not apply\n", path);
        goto out;
    }
    const cJSON *ja = cJSON_GetObjectItemCaseSensitive(root, "activation");
    const cJSON *jQ = cJSON_GetObjectItemCaseSensitive(pt, "Q"),
                *jR = cJSON_GetObjectItemCaseSensitive(pt, "R");
    if (!cJSON_IsArray(jQ) || !cJSON_IsArray(jR) || cJSON_GetArraySize(jQ) < 1 ||
        !cJSON_IsArray(cJSON_GetArrayItem(jR, 0))) {
        fprintf(stderr, ME ": '%s': the point needs matrices Q (K x K) and R (K x M)\n", path);
        goto out;
    }
    p->K = cJSON_GetArraySize(jQ);
    p->M = cJSON_GetArraySize(cJSON_GetArrayItem(jR, 0));
    if (p->K > 1000 || p->M < 1 || p->M > 1000) {
        fprintf(stderr, ME ": '%s': K = %ld, M = %ld out of range\n", path, p->K, p->M);
        goto out;
    }
    snprintf(p->act, sizeof p->act, "%s", cJSON_IsString(ja) ? ja->valuestring : "erf");
    p->Q = calloc((size_t)(p->K * p->K), sizeof *p->Q);
    p->R = calloc((size_t)(p->K * p->M), sizeof *p->R);
    if (!p->Q || !p->R) {
        rc = 1;
        goto out;
    }
    if (scm_output_read_matrix(jQ, "Q", (int)p->K, (int)p->K, p->Q, &err) ||
        scm_output_read_matrix(jR, "R", (int)p->K, (int)p->M, p->R, &err)) {
        fprintf(stderr, ME ": '%s': %s\n", path, err.msg);
        goto out;
    }
    const cJSON *jT = cJSON_GetObjectItemCaseSensitive(root, "T");
    if (jT) {
        p->T = calloc((size_t)(p->M * p->M), sizeof *p->T);
        if (!p->T || scm_output_read_matrix(jT, "T", (int)p->M, (int)p->M, p->T, &err)) {
            fprintf(stderr, ME ": '%s': %s\n", path, p->T ? err.msg : "out of memory");
            goto out;
        }
    }
    if ((rc = read_vec(root, "v", (int)p->K, &p->v, path)) ||
        (rc = read_vec(root, "vs", (int)p->M, &p->vs, path)))
        goto out;
    rc = 2;
    snprintf(p->desc, sizeof p->desc, "%s%s", path, fps ? "" : " (Q, R given)");
    if (fps)
        snprintf(p->desc + strlen(p->desc), sizeof p->desc - strlen(p->desc), "[%ld]", index);
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

/* Choose the parent among the enumerated points: by k1, index or loss. */
static int choose(parent *p, const scm_activation *act, long starts, long k1, long index,
                  double loss)
{
    scm_cli_fp *c = NULL;
    int n = 0, rc = scm_cli_fp_list((int)p->K, (int)p->M, act, starts, &c, &n), pick = -1;
    if (rc)
        fprintf(stderr, ME ": out of memory in the enumeration\n");
    else if (n == 0) {
        fprintf(stderr, ME ": no fixed point enumerated at K = %ld, M = %ld (%s)\n", p->K, p->M,
                act->name);
        rc = 1;
    } else if (index >= 0) {
        if (index >= n) {
            fprintf(stderr, ME ": --index %ld out of range: %d fixed points at K = %ld, M = %ld\n",
                    index, n, p->K, p->M);
            rc = 2;
        } else
            pick = (int)index;
    } else if (k1 >= 0) {
        for (int i = 0; i < n && pick < 0; i++)
            if (c[i].n_anti == (double)k1)
                pick = i;
        if (pick < 0) {
            fprintf(stderr,
                    ME ": no fixed point with %ld anti-aligned students at K = %ld, M = %ld\n", k1,
                    p->K, p->M);
            rc = 1;
        }
    } else {
        pick = 0;
        for (int i = 1; i < n; i++)
            if (fabs(c[i].eps - loss) < fabs(c[pick].eps - loss))
                pick = i;
    }
    if (pick >= 0) {
        p->Q = c[pick].Q;
        p->R = c[pick].R;
        c[pick].Q = c[pick].R = NULL;
        snprintf(p->desc, sizeof p->desc, "enumerated point %d of %d (by loss), %s, loss %.12g",
                 pick, n, c[pick].ansatz, c[pick].eps);
    }
    scm_cli_fp_free(c, n);
    return rc;
}

/* ---- one split point ---- */

typedef struct {
    int n;
    double mu[MAX_DAUGHTERS];
    scm_split_point pt;
    int perturbed;
    scm_verdict pverdict;
} sample;

/* The perturbation test (no spectra) at the split point of s. */
static int perturb(const scm_model *m, const parent *p, const scm_split_inner *h, long d,
                   sample *s)
{
    const int Kc = (int)p->K + s->n - 1, M = (int)p->M;
    double *vc = calloc((size_t)Kc, sizeof *vc), *Qc = calloc((size_t)Kc * Kc, sizeof *Qc),
           *Rc = calloc((size_t)Kc * M, sizeof *Rc);
    scm_error err;
    scm_model *mc = NULL;
    int rc = 1;
    if (!vc || !Qc || !Rc || scm_split_embed(m, p->Q, p->R, h->r, s->n, s->mu, vc, Qc, Rc, &err) ||
        !(mc = scm_split_model(m, s->n, vc, &err)))
        goto out;
    scm_stab_opts o;
    scm_stab_opts_three_sigma(&o);
    o.d = d;
    o.hessian = 0;
    o.jacobian = 0;
    scm_stab_result r;
    if (scm_stab_analyse(mc, Qc, Rc, &o, &r, &err)) {
        fprintf(stderr, ME ": perturbation test: %s\n", err.msg);
        goto out;
    }
    s->perturbed = 1;
    s->pverdict = r.verdict;
    rc = 0;
out:
    scm_model_free(mc);
    free(vc);
    free(Qc);
    free(Rc);
    return rc;
}

static void print_table(const parent *p, const scm_model *m, const scm_split_inner *h,
                        const scm_stab_counts *pc, const scm_stab_zero_modes *pz, long d,
                        const sample *s, int ns)
{
    printf("scm split: K = %ld -> %ld, M = %ld, %s, d = %ld, neuron %d (v_r = %g)\n", p->K,
           p->K + s[0].n - 1, p->M, m->act->name, d, h->r, m->v[h->r]);
    printf("parent     %s\n", p->desc);
    printf("           Hessian (K d = %ld): %d negative, %d zero, %d positive; symmetry zero "
           "modes %ld\n",
           p->K * d, pc->n_neg, pc->n_zero, pc->n_pos, pz->total);
    printf("inner Hessian d H_r: on the %d-dim span of students and teachers:", h->rank);
    for (int i = 0; i < h->rank; i++)
        printf(" %.6g", h->eval[i]);
    printf("\n           on the complement (multiplicity d - %d): %.6g%s\n", h->rank, h->h_perp,
           h->perp_flat ? " (flat: explained zero modes of the split point)" : "");
    printf("           class %s: %s\n", scm_split_class_str(h->cls),
           h->cls == SCM_SPLIT_PD   ? "minima for lambda in (0, 1), saddles outside"
           : h->cls == SCM_SPLIT_ND ? "saddles for lambda in (0, 1), minima outside"
           : h->cls == SCM_SPLIT_INDEFINITE ? "saddles for every lambda"
                                            : "degenerate (a zero eigenvalue on the span)");
    if (pc->n_neg > 0)
        printf("           (the parent is itself a saddle: every split point is a saddle)\n");
    printf("%-24s %-10s %-14s %-14s %-9s %-9s %-10s %-12s %s\n", "mu", "residual",
           "neg/zero/pos", "predicted", "expl.zero", "d*minev", "verdict", "predicted", "perturb");
    for (int i = 0; i < ns; i++) {
        const scm_split_point *q = &s[i].pt;
        char mu[64] = "", a[32], b[32];
        int k = 0;
        for (int j = 0; j < s[i].n && k < (int)sizeof mu - 12; j++)
            k += snprintf(mu + k, sizeof mu - (size_t)k, j ? ",%.4g" : "%.4g", s[i].mu[j]);
        snprintf(a, sizeof a, "%d/%d/%d", q->counts.n_neg, q->counts.n_zero, q->counts.n_pos);
        snprintf(b, sizeof b, "%ld/%ld/%ld", q->pred.n_neg, q->pred.n_zero, q->pred.n_pos);
        printf("%-24s %-10.2e %-14s %-14s %-9ld %-9.3g %-10s %-12s %s\n", mu, q->residual, a, b,
               q->explained_zero, q->eval_min * (double)d, scm_hverdict_str(q->verdict),
               scm_hverdict_str(q->pred_verdict),
               s[i].perturbed ? scm_verdict_str(s[i].pverdict) : "-");
    }
}

static cJSON *result_json(const parent *p, const scm_model *m, const scm_split_inner *h,
                          const scm_stab_counts *pc, const scm_stab_zero_modes *pz, long d,
                          const sample *s, int ns)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "split");
    cJSON_AddNumberToObject(root, "K", (double)p->K);
    cJSON_AddNumberToObject(root, "M", (double)p->M);
    cJSON_AddStringToObject(root, "activation", m->act->name);
    cJSON_AddStringToObject(root, "point", p->desc);
    cJSON_AddNumberToObject(root, "neuron", h->r);
    cJSON_AddNumberToObject(root, "d", (double)d);
    cJSON_AddItemToObject(root, "Q", scm_output_matrix(p->Q, (int)p->K, (int)p->K));
    cJSON_AddItemToObject(root, "R", scm_output_matrix(p->R, (int)p->K, (int)p->M));
    cJSON_AddItemToObject(root, "v", scm_output_vector(m->v, (int)p->K));
    cJSON *ph = cJSON_AddObjectToObject(root, "parent_hessian");
    cJSON_AddNumberToObject(ph, "negative", pc->n_neg);
    cJSON_AddNumberToObject(ph, "zero", pc->n_zero);
    cJSON_AddNumberToObject(ph, "positive", pc->n_pos);
    cJSON_AddNumberToObject(ph, "symmetry_zero_modes", (double)pz->total);
    cJSON *in = cJSON_AddObjectToObject(root, "inner_hessian");
    cJSON_AddNumberToObject(in, "span_dimension", h->rank);
    cJSON_AddItemToObject(in, "span_eigenvalues", scm_output_vector(h->eval, h->rank));
    cJSON_AddItemToObject(in, "complement_eigenvalue", num(h->h_perp));
    cJSON_AddBoolToObject(in, "complement_flat", h->perp_flat);
    cJSON_AddStringToObject(in, "class", scm_split_class_str(h->cls));
    cJSON_AddStringToObject(in, "units", "d * H_r");
    cJSON *rows = cJSON_AddArrayToObject(root, "points");
    for (int i = 0; i < ns; i++) {
        const scm_split_point *q = &s[i].pt;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "mu", scm_output_vector(s[i].mu, s[i].n));
        cJSON_AddItemToObject(j, "loss", num(q->eps));
        cJSON_AddItemToObject(j, "residual", num(q->residual));
        cJSON_AddStringToObject(j, "hessian_method",
                                q->closed ? "closed_form" : "central_differences");
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
        if (s[i].perturbed)
            cJSON_AddStringToObject(j, "perturbation_verdict", scm_verdict_str(s[i].pverdict));
        cJSON_AddItemToArray(rows, j);
    }
    return root;
}

/* The samples of the split line: --weights (one), --lambda or the grid. */
static int make_samples(const double *lam, int nl, long grid, const double *w, int nw, sample **s,
                        int *ns)
{
    *ns = nw ? 1 : nl ? nl : (int)grid;
    *s = calloc((size_t)*ns, sizeof **s);
    if (!*s)
        return 1;
    for (int i = 0; i < *ns; i++) {
        sample *q = &(*s)[i];
        if (nw) {
            q->n = nw;
            double sum = 0.0;
            for (int j = 0; j < nw; j++)
                sum += q->mu[j] = w[j];
            if (!(fabs(sum - 1.0) <= 1e-12)) {
                fprintf(stderr, ME ": --weights must sum to 1, they sum to %.17g\n", sum);
                return 2;
            }
            continue;
        }
        double l = nl ? lam[i] : grid > 1 ? -0.5 + 2.0 * i / (double)(grid - 1) : 0.5;
        q->n = 2;
        q->mu[0] = l;
        q->mu[1] = 1.0 - l;
    }
    return 0;
}

/* The parent must be a fixed point: max |F_Q|, |F_R| <= 1e-9. */
static int check_fixed_point(const scm_model *m, scm_flow *fl, parent *p)
{
    const int K = m->K, M = m->M;
    double *FQ = calloc((size_t)K * K, sizeof *FQ), *FR = calloc((size_t)K * M, sizeof *FR), eps;
    int rc = 0;
    scm_status st = FQ && FR ? scm_flow_rhs(fl, p->Q, p->R, FQ, FR, &eps) : SCM_ENOMEM;
    if (st) {
        fprintf(stderr, ME ": the flow cannot be evaluated at the point (%s)\n",
                scm_status_str(st));
        rc = st == SCM_ENOMEM ? 1 : 2;
    } else {
        double res = 0.0;
        for (int i = 0; i < K * K; i++)
            res = fmax(res, fabs(FQ[i]));
        for (int i = 0; i < K * M; i++)
            res = fmax(res, fabs(FR[i]));
        if (!(res <= 1e-9)) {
            fprintf(stderr,
                    ME ": the point is not a fixed point: flow residual %.3g > 1e-9 (try "
                       "--polish)\n",
                    res);
            rc = 2;
        }
        size_t l = strlen(p->desc);
        snprintf(p->desc + l, sizeof p->desc - l, "; residual %.2g", res);
    }
    free(FQ);
    free(FR);
    return rc;
}

static int run(parent *p, long r, long d, int do_polish, int do_perturb, const char *out,
               int quiet, sample *s, int ns)
{
    scm_error err;
    const scm_activation *act = scm_activation_find(p->act);
    if (!act) {
        fprintf(stderr, ME ": unknown activation '%s' (relu, erf, linear)\n", p->act);
        return 2;
    }
    if (r >= p->K) {
        fprintf(stderr, ME ": --neuron %ld out of range: the point has K = %ld students\n", r,
                p->K);
        return 2;
    }
    if (d <= 0)
        d = p->K + p->M + 1;
    scm_model *m = scm_model_alloc((int)p->K, (int)p->M, act, p->T, p->v, p->vs, &err);
    if (!m) {
        fprintf(stderr, ME ": %s\n", err.msg);
        return 2;
    }
    int rc = 0;
    scm_split_inner h = {0};
    scm_stab_counts pc;
    scm_stab_zero_modes pz;
    const long Kd = p->K * d;
    double *ev = calloc((size_t)Kd, sizeof *ev);
    scm_flow *fl = scm_flow_alloc(m);
    if (!ev || !fl) {
        rc = 1;
        goto done;
    }
    if (scm_model_check_state(m, p->Q, p->R, 1e-9, &err)) {
        fprintf(stderr, ME ": the point is not a valid state: %s\n", err.msg);
        rc = 2;
        goto done;
    }
    if (do_polish) {
        double res;
        if (scm_fp_polish(fl, p->Q, p->R, 100, 1e-13, &res, &err)) {
            fprintf(stderr, ME ": Newton polish did not converge (residual %.3g)\n", res);
            rc = 1;
            goto done;
        }
        size_t l = strlen(p->desc);
        snprintf(p->desc + l, sizeof p->desc - l, ", Newton-polished");
    }
    if ((rc = check_fixed_point(m, fl, p)))
        goto done;
    scm_status st = scm_split_inner_hessian(m, p->Q, p->R, (int)r, 1e-6, &h, &err);
    if (!st) {
        int closed;
        st = scm_split_hessian(m, p->Q, p->R, d, 1e-6, ev, &pc, &pz, &closed, &err);
    }
    for (int i = 0; i < ns && !st; i++)
        st = scm_split_check(m, p->Q, p->R, &h, s[i].n, s[i].mu, d, 1e-6, &pc, pz.total, &s[i].pt,
                             &err);
    if (st) {
        fprintf(stderr, ME ": %s\n", err.msg);
        rc = st == SCM_EINVAL ? 2 : 1;
        goto done;
    }
    for (int i = 0; i < ns && do_perturb && !rc; i++)
        rc = perturb(m, p, &h, d, &s[i]);
    if (rc)
        goto done;
    if (!quiet)
        print_table(p, m, &h, &pc, &pz, d, s, ns);
    if (out) {
        cJSON *root = result_json(p, m, &h, &pc, &pz, d, s, ns);
        if (!root || scm_output_write_json(out, root, 0, &err)) {
            fprintf(stderr, ME ": %s\n", root ? err.msg : "out of memory");
            rc = 1;
        }
        cJSON_Delete(root);
    }
done:
    scm_split_inner_free(&h);
    scm_flow_free(fl);
    free(ev);
    scm_model_free(m);
    return rc;
}

int scm_cmd_split(int argc, char **argv)
{
    long K = -1, M = -1, k1 = -1, index = -1, r = -1, grid = 0, d = 0, starts = 100;
    double loss = NAN, lam[MAX_LAMBDA], w[MAX_DAUGHTERS];
    int nl = 0, nw = 0, quiet = 0, do_polish = 0, do_perturb = 0;
    const char *point = NULL, *out = NULL, *actname = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            sp_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet") || !strcmp(a, "--polish") ||
            !strcmp(a, "--perturb")) {
            quiet |= a[1] == 'q' || !strcmp(a, "--quiet");
            do_polish |= !strcmp(a, "--polish");
            do_perturb |= !strcmp(a, "--perturb");
            continue;
        }
        if (!v) {
            fprintf(stderr, ME ": unknown option or missing value: '%s'\n", a);
            sp_usage(stderr);
            return 2;
        }
        int bad = 0;
        if (!strcmp(a, "--K"))
            bad = cli_opt_long(ME, a, v, 1, 1000, &K);
        else if (!strcmp(a, "--M"))
            bad = cli_opt_long(ME, a, v, 1, 1000, &M);
        else if (!strcmp(a, "--k1"))
            bad = cli_opt_long(ME, a, v, 0, 1000, &k1);
        else if (!strcmp(a, "--index"))
            bad = cli_opt_long(ME, a, v, 0, 1000000, &index);
        else if (!strcmp(a, "--neuron"))
            bad = cli_opt_long(ME, a, v, 0, 999, &r);
        else if (!strcmp(a, "--lambda-grid"))
            bad = cli_opt_long(ME, a, v, 1, MAX_LAMBDA, &grid);
        else if (!strcmp(a, "--d"))
            bad = cli_opt_long(ME, a, v, 1, 2000, &d);
        else if (!strcmp(a, "--starts"))
            bad = cli_opt_long(ME, a, v, 0, 1000000, &starts);
        else if (!strcmp(a, "--lambda"))
            bad = cli_opt_list(ME, a, v, 0, lam, MAX_LAMBDA, &nl);
        else if (!strcmp(a, "--weights"))
            bad = cli_opt_list(ME, a, v, 0, w, MAX_DAUGHTERS, &nw);
        else if (!strcmp(a, "--loss")) {
            char *end;
            loss = strtod(v, &end);
            if (*end || !isfinite(loss)) {
                fprintf(stderr, ME ": --loss needs a finite number, got '%s'\n", v);
                bad = 1;
            }
        } else if (!strcmp(a, "--point"))
            point = v;
        else if (!strcmp(a, "--activation"))
            actname = v;
        else if (!strcmp(a, "-o"))
            out = v;
        else {
            fprintf(stderr, ME ": unknown option '%s'\n", a);
            sp_usage(stderr);
            return 2;
        }
        if (bad)
            return 2;
        i++;
    }
    int nsel = (k1 >= 0) + (index >= 0 && !point) + !isnan(loss);
    if (r < 0) {
        fprintf(stderr, ME ": --neuron r is required\n");
        return 2;
    }
    if (point ? (K >= 0 || M >= 0 || k1 >= 0 || !isnan(loss)) : (K < 0 || M < 0 || nsel != 1)) {
        fprintf(stderr, ME ": give --K, --M and one of --k1, --index, --loss; or --point FILE "
                           "[--index I] (without --K, --M, --k1, --loss)\n");
        return 2;
    }
    if (!!nl + !!grid + !!nw > 1) {
        fprintf(stderr, ME ": give one of --lambda, --lambda-grid, --weights\n");
        return 2;
    }
    if (nw == 1) {
        fprintf(stderr, ME ": --weights needs at least 2 daughters\n");
        return 2;
    }
    if (!nl && !nw && !grid)
        grid = 9;
    if (do_polish && !point) {
        fprintf(stderr, ME ": --polish applies to --point only\n");
        return 2;
    }
    gsl_set_error_handler_off();
    sample *s = NULL;
    int ns = 0, rc = make_samples(lam, nl, grid, w, nw, &s, &ns);
    parent p = {0};
    p.K = K;
    p.M = M;
    snprintf(p.act, sizeof p.act, "%s", actname ? actname : "erf");
    if (!rc && point) {
        rc = load_point(point, index, &p);
        if (!rc && actname)
            snprintf(p.act, sizeof p.act, "%s", actname);
    } else if (!rc) {
        const scm_activation *act = scm_activation_find(p.act);
        if (!act) {
            fprintf(stderr, ME ": unknown activation '%s' (relu, erf, linear)\n", p.act);
            rc = 2;
        } else
            rc = choose(&p, act, starts, k1, index, loss);
    }
    if (!rc)
        rc = run(&p, r, d, do_polish, do_perturb, out, quiet, s, ns);
    parent_free(&p);
    free(s);
    return rc;
}
