/* ansatz_inst.c: an ansatz instantiated at (K, M, k1): its group sizes
 * and free scalars (names, entry classes), the accessors of scm/ansatz.h
 * on an instance, and the maps between the scalars and full (Q, R)
 * (scm_ansatz_to_full, scm_ansatz_project); see ansatz.h and MATH.md
 * section 5.  The parsing of ansatz files is ansatz.c. */
#include "scm/ansatz.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"

void scm_ansatz_inst_free(scm_ansatz_inst *in)
{
    if (!in)
        return;
    free(in->ssize);
    free(in->tsize);
    free(in->spair);
    free(in->tpair);
    free(in->sname);
    free(in->tname);
    free(in->sc);
    free(in->qd);
    free(in->qo);
    free(in->qc);
    free(in->rd);
    free(in->ro);
    free(in->rc);
    free(in->soff);
    free(in->toff);
    free(in);
}

static void add_scalar(scm_ansatz_inst *in, char mat, int i, int j, int cls)
{
    scm_scalar_info *s = &in->sc[in->nsc];
    s->mat = mat;
    s->i = i;
    s->j = j;
    s->cls = cls;
    const char *b = mat == 'Q' ? in->sname[j] : in->tname[j];
    const char *suf = cls == SCM_CLS_DIAG ? ".diag" : cls == SCM_CLS_OFF ? ".off" : "";
    snprintf(s->name, sizeof s->name, "%c[%s,%s]%s", mat, in->sname[i], b, suf);
    in->nsc++;
}

/* A zeroed instance of a's group counts with its arrays, or NULL. */
static scm_ansatz_inst *inst_alloc(const scm_ansatz *a)
{
    scm_ansatz_inst *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    int ns = a->ns, nt = a->nt;
    in->ns = ns;
    in->nt = nt;
    size_t nsc_max = (size_t)(2 * ns + ns * ns + 2 * ns * nt + 1);
    in->ssize = calloc((size_t)ns, sizeof *in->ssize);
    in->tsize = calloc((size_t)nt, sizeof *in->tsize);
    in->spair = calloc((size_t)ns, sizeof *in->spair);
    in->tpair = calloc((size_t)nt, sizeof *in->tpair);
    in->sname = calloc((size_t)ns, sizeof *in->sname);
    in->tname = calloc((size_t)nt, sizeof *in->tname);
    in->sc = calloc(nsc_max, sizeof *in->sc);
    in->qd = calloc((size_t)ns, sizeof(int));
    in->qo = calloc((size_t)ns, sizeof(int));
    in->qc = calloc((size_t)(ns * ns), sizeof(int));
    in->rd = calloc((size_t)(ns * nt), sizeof(int));
    in->ro = calloc((size_t)(ns * nt), sizeof(int));
    in->rc = calloc((size_t)(ns * nt), sizeof(int));
    in->soff = calloc((size_t)ns + 1, sizeof(int));
    in->toff = calloc((size_t)nt + 1, sizeof(int));
    if (!in->ssize || !in->tsize || !in->spair || !in->tpair || !in->sname || !in->tname ||
        !in->sc || !in->qd || !in->qo || !in->qc || !in->rd || !in->ro || !in->rc || !in->soff ||
        !in->toff) {
        scm_ansatz_inst_free(in);
        return NULL;
    }
    return in;
}

/* The group sizes of a at (K, M, k1) (a size within SCM_SIZE_TINY of 0 is
 * 0), their names and pairs, and whether all are integers; SCM_EINVAL if a
 * size is negative, the sizes do not add up to K and M, paired groups
 * differ in size, or K or M is below 1. */
static scm_status inst_sizes(scm_ansatz_inst *in, const scm_ansatz *a, double K, double M,
                             double k1, scm_error *err)
{
    int ns = a->ns, nt = a->nt;
    double ssum = 0.0, tsum = 0.0;
    in->integral = 1;
    for (int g = 0; g < ns + nt; g++) {
        int st = g < ns;
        int i = st ? g : g - ns;
        const char *e = st ? a->sexpr[i] : a->texpr[i];
        double v = 0.0;
        scm_ansatz_expr_eval(e, K, M, k1, &v, NULL); /* syntax was checked at parse time */
        if (v < -SCM_SIZE_TINY)
            return scm_error_set(err, SCM_EINVAL,
                                 "ansatz '%s': %s group '%s' has size %s = %g < 0 at K = %g, "
                                 "M = %g, k1 = %g",
                                 a->name, st ? "student" : "teacher",
                                 st ? a->sname[i] : a->tname[i], e, v, K, M, k1);
        if (v < SCM_SIZE_TINY)
            v = 0.0;
        if (v != floor(v))
            in->integral = 0;
        if (st) {
            in->ssize[i] = v;
            ssum += v;
            snprintf(in->sname[i], sizeof in->sname[i], "%s", a->sname[i]);
            in->spair[i] = a->spair[i];
        } else {
            in->tsize[i] = v;
            tsum += v;
            snprintf(in->tname[i], sizeof in->tname[i], "%s", a->tname[i]);
            in->tpair[i] = a->tpair[i];
        }
    }
    if (fabs(ssum - K) > 1e-9 * fmax(1.0, fabs(K)) || fabs(tsum - M) > 1e-9 * fmax(1.0, fabs(M)))
        return scm_error_set(err, SCM_EINVAL,
                             "ansatz '%s': group sizes do not add up at K = %g, M = %g, k1 = %g: "
                             "students sum to %g (want K), teachers to %g (want M)",
                             a->name, K, M, k1, ssum, tsum);
    for (int i = 0; i < ns; i++) {
        int t = in->spair[i];
        if (t >= 0 && fabs(in->ssize[i] - in->tsize[t]) > 1e-12)
            return scm_error_set(err, SCM_EINVAL,
                                 "ansatz '%s': paired groups '%s' (size %g) and '%s' (size %g) "
                                 "differ in size at K = %g, M = %g, k1 = %g",
                                 a->name, a->sname[i], in->ssize[i], a->tname[t], in->tsize[t],
                                 K, M, k1);
    }
    if (K < 1.0 || M < 1.0)
        return scm_error_set(err, SCM_EINVAL, "ansatz '%s': K and M must be >= 1 (got %g, %g)",
                             a->name, K, M);
    return SCM_OK;
}

/* The scalars: Q first (diagonal blocks, then constant blocks), then R;
 * the index of each entry class, -1 where absent. */
static void inst_scalars(scm_ansatz_inst *in)
{
    int ns = in->ns, nt = in->nt;
    for (int i = 0; i < ns; i++) {
        in->qd[i] = in->qo[i] = -1;
        for (int j = 0; j < ns; j++)
            in->qc[i * ns + j] = -1;
        for (int t = 0; t < nt; t++)
            in->rd[i * nt + t] = in->ro[i * nt + t] = in->rc[i * nt + t] = -1;
    }
    for (int i = 0; i < ns; i++) {
        if (scm_size_zero(in->ssize[i]))
            continue;
        in->qd[i] = in->nsc;
        add_scalar(in, 'Q', i, i, SCM_CLS_DIAG);
        if (scm_size_has_off(in->ssize[i])) {
            in->qo[i] = in->nsc;
            add_scalar(in, 'Q', i, i, SCM_CLS_OFF);
        }
    }
    for (int i = 0; i < ns; i++)
        for (int j = i + 1; j < ns; j++) {
            if (scm_size_zero(in->ssize[i]) || scm_size_zero(in->ssize[j]))
                continue;
            in->qc[i * ns + j] = in->qc[j * ns + i] = in->nsc;
            add_scalar(in, 'Q', i, j, SCM_CLS_CONST);
        }
    for (int i = 0; i < ns; i++)
        for (int t = 0; t < nt; t++) {
            if (scm_size_zero(in->ssize[i]) || scm_size_zero(in->tsize[t]))
                continue;
            if (in->spair[i] == t) {
                in->rd[i * nt + t] = in->nsc;
                add_scalar(in, 'R', i, t, SCM_CLS_DIAG);
                if (scm_size_has_off(in->ssize[i])) {
                    in->ro[i * nt + t] = in->nsc;
                    add_scalar(in, 'R', i, t, SCM_CLS_OFF);
                }
            } else {
                in->rc[i * nt + t] = in->nsc;
                add_scalar(in, 'R', i, t, SCM_CLS_CONST);
            }
        }
}

scm_ansatz_inst *scm_ansatz_instantiate(const scm_ansatz *a, double K, double M, double k1,
                                        scm_error *err)
{
    if (!(isfinite(K) && isfinite(M) && isfinite(k1))) {
        scm_error_set(err, SCM_EINVAL, "ansatz '%s': K, M, k1 must be finite", a->name);
        return NULL;
    }
    scm_ansatz_inst *in = inst_alloc(a);
    if (!in) {
        scm_error_set(err, SCM_ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(in->name, sizeof in->name, "%s", a->name);
    in->K = K;
    in->M = M;
    in->k1 = k1;
    if (inst_sizes(in, a, K, M, k1, err)) {
        scm_ansatz_inst_free(in);
        return NULL;
    }
    inst_scalars(in);
    /* the groups' first indices in the full matrices */
    if (in->integral) {
        in->Ki = (int)lround(K);
        in->Mi = (int)lround(M);
        for (int i = 0; i < in->ns; i++)
            in->soff[i + 1] = in->soff[i] + (int)lround(in->ssize[i]);
        for (int t = 0; t < in->nt; t++)
            in->toff[t + 1] = in->toff[t] + (int)lround(in->tsize[t]);
    }
    return in;
}

int scm_ansatz_inst_nscalars(const scm_ansatz_inst *in) { return in->nsc; }
const char *scm_ansatz_inst_scalar_name(const scm_ansatz_inst *in, int i)
{
    return (i >= 0 && i < in->nsc) ? in->sc[i].name : NULL;
}
const char *scm_ansatz_inst_name(const scm_ansatz_inst *in) { return in->name; }
int scm_ansatz_inst_integral(const scm_ansatz_inst *in) { return in->integral; }
double scm_ansatz_inst_K(const scm_ansatz_inst *in) { return in->K; }
double scm_ansatz_inst_M(const scm_ansatz_inst *in) { return in->M; }
double scm_ansatz_inst_k1(const scm_ansatz_inst *in) { return in->k1; }

int scm_ansatz_inst_find(const scm_ansatz_inst *in, const char *name)
{
    for (int i = 0; i < in->nsc; i++)
        if (strcmp(in->sc[i].name, name) == 0)
            return i;
    return -1;
}

int scm_ansatz_guess(const scm_ansatz *a, const scm_ansatz_inst *in, int i, double *value)
{
    if (i < 0 || i >= in->nsc)
        return 0;
    for (int g = 0; g < a->nguess; g++)
        if (strcmp(a->gname[g], in->sc[i].name) == 0) {
            *value = a->gval[g];
            return 1;
        }
    return 0;
}

/* ---- full maps ---- */

/* The scalar index of full entry Q[k][l] (kg, lg its groups), or of R. */
static int q_class(const scm_ansatz_inst *in, int kg, int lg, int same_index)
{
    if (kg == lg)
        return same_index ? in->qd[kg] : in->qo[kg];
    return in->qc[kg * in->ns + lg];
}

static int r_class(const scm_ansatz_inst *in, int kg, int tg, int same_pos)
{
    int c = kg * in->nt + tg;
    if (in->spair[kg] == tg)
        return same_pos ? in->rd[c] : in->ro[c];
    return in->rc[c];
}

scm_status scm_ansatz_to_full(const scm_ansatz_inst *in, const double *x, double *Q,
                              double *R)
{
    if (!in->integral)
        return SCM_EINVAL;
    int K = in->Ki, M = in->Mi;
    for (int i = 0; i < in->ns; i++)
        for (int k = in->soff[i]; k < in->soff[i + 1]; k++) {
            for (int j = 0; j < in->ns; j++)
                for (int l = in->soff[j]; l < in->soff[j + 1]; l++) {
                    int c = q_class(in, i, j, k - in->soff[i] == l - in->soff[j]);
                    Q[k * K + l] = x[c];
                }
            for (int t = 0; t < in->nt; t++)
                for (int n = in->toff[t]; n < in->toff[t + 1]; n++) {
                    int c = r_class(in, i, t, k - in->soff[i] == n - in->toff[t]);
                    R[k * M + n] = x[c];
                }
        }
    return SCM_OK;
}

scm_status scm_ansatz_project(const scm_ansatz_inst *in, const double *Q, const double *R,
                              double *x, double *dev)
{
    if (!in->integral)
        return SCM_EINVAL;
    int K = in->Ki, M = in->Mi, n = in->nsc;
    double *cnt = calloc((size_t)n + 1, sizeof *cnt);
    if (!cnt)
        return SCM_ENOMEM;
    for (int c = 0; c < n; c++)
        x[c] = 0.0;
    for (int pass = 0; pass < 2; pass++) {
        double d = 0.0;
        for (int i = 0; i < in->ns; i++)
            for (int k = in->soff[i]; k < in->soff[i + 1]; k++) {
                for (int j = 0; j < in->ns; j++)
                    for (int l = in->soff[j]; l < in->soff[j + 1]; l++) {
                        int c = q_class(in, i, j, k - in->soff[i] == l - in->soff[j]);
                        if (pass == 0) {
                            x[c] += Q[k * K + l];
                            cnt[c] += 1.0;
                        } else {
                            d = fmax(d, fabs(Q[k * K + l] - x[c]));
                        }
                    }
                for (int t = 0; t < in->nt; t++)
                    for (int m = in->toff[t]; m < in->toff[t + 1]; m++) {
                        int c = r_class(in, i, t, k - in->soff[i] == m - in->toff[t]);
                        if (pass == 0) {
                            x[c] += R[k * M + m];
                            cnt[c] += 1.0;
                        } else {
                            d = fmax(d, fabs(R[k * M + m] - x[c]));
                        }
                    }
            }
        if (pass == 0)
            for (int c = 0; c < n; c++)
                x[c] /= cnt[c];
        else if (dev)
            *dev = d;
    }
    free(cnt);
    return SCM_OK;
}
