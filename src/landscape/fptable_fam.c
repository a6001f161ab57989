/* fptable_fam.c: the answer `scm fixed-points` leads with (issue 25): the
 * families table.  Each distinct specialised point (every teacher paired
 * with an anti-aligned or aligned student, K - M extra students) is
 * classified once by the exact spectrum of the weight-space Hessian from
 * its symmetry (symstab.h: scm_stab_symmetric on its ansatz instance and
 * scalars, a cost independent of K), a strict minimum when no eigenvalue
 * is negative beyond the zero tolerance; with --stability every distinct
 * point, with the flow Jacobian's spectrum too.  A family is k1 (the
 * anti-aligned count) and, when K > M, the pattern of the extra students;
 * its entry gives the lowest-loss minimum, its loss and smallest Hessian
 * eigenvalue, and the numbers of minima and saddles.  Points whose
 * residual is not below max_residual stay out of it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/fptable_internal.h"
#include "scm/model.h"
#include "scm/symstab.h"

const char *scm_fp_class_str(scm_fp_class c)
{
    switch (c) {
    case SCM_FP_CLASS_MINIMUM:
        return "minimum";
    case SCM_FP_CLASS_SADDLE:
        return "saddle";
    case SCM_FP_CLASS_REFUSED:
        return "refused";
    default:
        return "-";
    }
}

/* The pattern of the extra (unpaired) students of the point x of
 * instance in: how many are dead (Q_kk <= 1e-9), and of the others how
 * many have their largest overlap with a teacher positive ("aligned"),
 * negative ("anti") or none beyond round-off ("orthogonal", cosine within
 * SCM_ALIGN_COS_TOL).  "" when K = M.  SCM_ENOMEM is the only failure. */
static scm_status extra_pattern(const scm_ansatz_inst *in, const double *x, char *buf,
                                size_t len)
{
    buf[0] = '\0';
    const int K = in->Ki, M = in->Mi;
    if (K <= M)
        return SCM_OK;
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_linear, NULL, NULL, NULL, &e);
    double *Q = malloc(sizeof(double) * ((size_t)K * K + (size_t)K * M));
    scm_alignment *kind = malloc(sizeof *kind * (size_t)K);
    int *partner = malloc(sizeof *partner * (size_t)K);
    scm_status st = m && Q && kind && partner ? SCM_OK : SCM_ENOMEM;
    if (!st)
        st = scm_ansatz_to_full(in, x, Q, Q + (size_t)K * K);
    if (!st)
        st = scm_model_align(m, Q, Q + (size_t)K * K, 1e-9, kind, partner, NULL);
    int n_al = 0, n_anti = 0, n_orth = 0, n_dead = 0;
    for (int k = 0; !st && k < K; k++) {
        if (kind[k] == SCM_ALIGN_DEAD) {
            n_dead++;
            continue;
        }
        if (kind[k] != SCM_ALIGN_UNPAIRED)
            continue;
        const double *R = Q + (size_t)K * K + (size_t)k * M;
        double best = 0.0;
        for (int n = 0; n < M; n++)
            if (fabs(R[n]) > fabs(best))
                best = R[n];
        double c = best / sqrt(Q[(size_t)k * K + k]);
        if (c > SCM_ALIGN_COS_TOL)
            n_al++;
        else if (c < -SCM_ALIGN_COS_TOL)
            n_anti++;
        else
            n_orth++;
    }
    if (!st) {
        const int cnt[4] = {n_al, n_anti, n_orth, n_dead};
        const char *const name[4] = {"aligned", "anti", "orthogonal", "dead"};
        size_t used = 0;
        for (int i = 0; i < 4; i++)
            if (cnt[i] && used < len)
                used += (size_t)snprintf(buf + used, len - used, "%s%d %s", used ? ", " : "",
                                         cnt[i], name[i]);
    }
    scm_model_free(m);
    free(Q);
    free(kind);
    free(partner);
    return st;
}

/* The symmetric Hessian spectrum of solution so (and with --stability the
 * Jacobian's): its class.  A refusal is recorded, not an error; only
 * SCM_ENOMEM stops the run. */
static scm_status classify_one(const scm_fp_table *t, fpt_solution *so, scm_error *err)
{
    scm_symstab_opts o;
    scm_symstab_opts_default(&o);
    scm_symstab_result r;
    scm_error e;
    scm_status st = scm_stab_symmetric(so->in, t->act, so->pt->x, &o, &r, &e);
    if (st == SCM_ENOMEM) {
        scm_symstab_result_free(&r);
        return scm_error_set(err, st, "out of memory in the symmetric stability");
    }
    if (st) {
        so->cls = SCM_FP_CLASS_REFUSED;
        snprintf(so->stab_err, sizeof so->stab_err, "%.250s", e.msg);
    } else {
        so->cls = r.n_neg > 0 ? SCM_FP_CLASS_SADDLE : SCM_FP_CLASS_MINIMUM;
        /* the smallest eigenvalue that is not a zero (the zeros are the
         * symmetries' modes): the curvature of a minimum, the most negative
         * of a saddle */
        for (int i = 0; i < r.n && isnan(so->hmin); i++)
            if (!r.eig[i].zero)
                so->hmin = r.eig[i].value;
        so->h_neg = r.n_neg;
        so->h_zero = r.n_zero;
        so->h_pos = r.n_pos;
        so->h_total = r.total;
    }
    scm_symstab_result_free(&r);
    if (!t->stability)
        return SCM_OK;
    st = scm_stab_symmetric_jacobian(so->in, t->act, so->pt->x, &o, &r, &e);
    if (st == SCM_ENOMEM) {
        scm_symstab_result_free(&r);
        return scm_error_set(err, st, "out of memory in the symmetric stability");
    }
    if (!st) {
        so->jac_done = 1;
        so->j_pos = r.n_pos;
        so->j_re_max = r.n > 0 ? r.eig[r.n - 1].value : NAN;
    }
    scm_symstab_result_free(&r);
    return SCM_OK;
}

/* The families of the classified points, by k1 then pattern. */
static int cmp_family(const void *pa, const void *pb)
{
    const fpt_family *a = pa, *b = pb;
    if (a->k1 != b->k1)
        return a->k1 - b->k1;
    return strcmp(a->pattern, b->pattern);
}

static scm_status families_collect(scm_fp_table *t, scm_error *err)
{
    t->fam = calloc((size_t)t->nrows + 1, sizeof *t->fam);
    if (!t->fam)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    /* in display order (by loss), so that a family's first minimum is its
     * lowest-loss one */
    int row = 0;
    for (int si = 0; si < t->nview; si++) {
        int s = t->order[si];
        const fpt_solution *so = &t->sol[s];
        if (so->merged_into >= 0)
            continue;
        int this_row = row++;
        if (!so->specialised || !so->res_ok)
            continue;
        int f = 0;
        while (f < t->nfam &&
               !(t->fam[f].k1 == so->family && strcmp(t->fam[f].pattern, so->pattern) == 0))
            f++;
        fpt_family *F = &t->fam[f];
        if (f == t->nfam) {
            t->nfam++;
            F->k1 = so->family;
            snprintf(F->pattern, sizeof F->pattern, "%s", so->pattern);
            F->best = F->best_row = -1;
        }
        F->n_points++;
        F->n_minima += so->cls == SCM_FP_CLASS_MINIMUM;
        F->n_saddles += so->cls == SCM_FP_CLASS_SADDLE;
        F->n_refused += so->cls == SCM_FP_CLASS_REFUSED;
        if (so->cls == SCM_FP_CLASS_MINIMUM && F->best < 0) {
            F->best = s;
            F->best_row = this_row;
        }
    }
    if (t->nfam > 1)
        qsort(t->fam, (size_t)t->nfam, sizeof *t->fam, cmp_family);
    return SCM_OK;
}

scm_status fpt_families_build(scm_fp_table *t, scm_error *err)
{
    int total = 0, done = 0;
    for (int s = 0; s < t->nsol; s++)
        total += t->sol[s].merged_into < 0 && (t->sol[s].specialised || t->stability);
    if (t->progress)
        t->progress(t->progress_ctx, 0, total);
    for (int s = 0; s < t->nsol; s++) {
        fpt_solution *so = &t->sol[s];
        if (so->merged_into >= 0)
            continue;
        if (so->specialised &&
            extra_pattern(so->in, so->pt->x, so->pattern, sizeof so->pattern))
            return scm_error_set(err, SCM_ENOMEM, "out of memory");
        if (!so->specialised && !t->stability)
            continue;
        scm_status st = classify_one(t, so, err);
        if (st)
            return st;
        if (t->progress)
            t->progress(t->progress_ctx, ++done, total);
    }
    return families_collect(t, err);
}

/* Under MINIMA a point of loss below SCM_FP_STATES_ZERO_LOSS is shown
 * too: it is the global minimum up to the round-off of an unpolished
 * point (a teacher split among aligned students, classed a saddle by
 * eigenvalues of order -1e-8), and `scm compare` can tell it from a
 * plateau only by its state (docs/map.md). */
int fpt_state_shown(const scm_fp_table *t, int s)
{
    return t->states == SCM_FP_STATES_ALL ||
           (t->states == SCM_FP_STATES_MINIMA &&
            (t->sol[s].cls == SCM_FP_CLASS_MINIMUM || t->sol[s].pt->eps < SCM_FP_STATES_ZERO_LOSS));
}

/* The solution behind row i (rows skip merged solutions, in display order). */
static const fpt_solution *row_solution(const scm_fp_table *t, int i)
{
    for (int si = 0, row = 0; si < t->nview; si++) {
        int s = t->order[si];
        if (t->sol[s].merged_into >= 0)
            continue;
        if (row++ == i)
            return &t->sol[s];
    }
    return NULL;
}

scm_fp_class scm_fp_table_row_class(const scm_fp_table *t, int i, double *hmin)
{
    const fpt_solution *so = t->grow_from > 0 ? NULL : row_solution(t, i);
    if (hmin)
        *hmin = so ? so->hmin : NAN;
    return so ? (scm_fp_class)so->cls : SCM_FP_CLASS_NONE;
}

int scm_fp_table_family_count(const scm_fp_table *t)
{
    return t ? t->nfam : 0;
}

scm_status scm_fp_table_family_get(const scm_fp_table *t, int i, scm_fp_table_family *f)
{
    if (i < 0 || i >= t->nfam)
        return SCM_EINVAL;
    const fpt_family *F = &t->fam[i];
    const fpt_solution *b = F->best >= 0 ? &t->sol[F->best] : NULL;
    *f = (scm_fp_table_family){F->k1,        F->pattern,     F->n_points, F->n_minima,
                               F->n_saddles, F->n_refused,   F->best_row, b ? b->pt->eps : NAN,
                               b ? b->hmin : NAN};
    return SCM_OK;
}
