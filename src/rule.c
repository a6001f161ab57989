/* rule.c: the training-rule tables.  gd packs the upper triangle of Q
 * row by row (so Q stays exactly symmetric), then R row-major. */
#include "scm/rule.h"

#include <string.h>

static long gd_dim(const scm_model *m)
{
    return (long)m->K * (m->K + 1) / 2 + (long)m->K * m->M;
}

static long gd_scratch(const scm_model *m)
{
    return 2L * m->K * m->K + 2L * m->K * m->M;
}

static void gd_pack(const scm_model *m, const double *Q, const double *R, double *y)
{
    const int K = m->K;
    long i = 0;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            y[i++] = Q[k * K + l];
    memcpy(y + i, R, sizeof(double) * (size_t)K * (size_t)m->M);
}

static void gd_unpack(const scm_model *m, const double *y, double *Q, double *R)
{
    const int K = m->K;
    long i = 0;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++, i++)
            Q[k * K + l] = Q[l * K + k] = y[i];
    memcpy(R, y + i, sizeof(double) * (size_t)K * (size_t)m->M);
}

static scm_status gd_rhs(scm_flow *fl, const double *y, double *ydot, double *eps,
                         double *scratch)
{
    const scm_model *m = scm_flow_model(fl);
    const long KK = (long)m->K * m->K, KM = (long)m->K * m->M;
    double *Q = scratch, *R = Q + KK, *FQ = R + KM, *FR = FQ + KK;
    gd_unpack(m, y, Q, R);
    scm_status st = scm_flow_rhs(fl, Q, R, FQ, FR, eps);
    if (st)
        return st;
    gd_pack(m, FQ, FR, ydot);
    return SCM_OK;
}

static scm_status gd_jtimes(scm_flow *fl, const double *y, const double *v, double *Jv,
                            double *scratch)
{
    const scm_model *m = scm_flow_model(fl);
    const long KK = (long)m->K * m->K, KM = (long)m->K * m->M;
    double *Q = scratch, *R = Q + KK, *dQ = R + KM, *dR = dQ + KK, *JQ = dR + KM, *JR = JQ + KK;
    gd_unpack(m, y, Q, R);
    gd_unpack(m, v, dQ, dR);
    scm_status st = scm_flow_jvp(fl, Q, R, dQ, dR, JQ, JR);
    if (st)
        return st;
    gd_pack(m, JQ, JR, Jv);
    return SCM_OK;
}

const scm_rule scm_rule_gd = {.name = "gd",
                              .dim = gd_dim,
                              .scratch = gd_scratch,
                              .pack = gd_pack,
                              .unpack = gd_unpack,
                              .rhs = gd_rhs,
                              .jtimes = gd_jtimes};

const scm_rule *scm_rule_find(const char *name)
{
    static const scm_rule *const all[] = {&scm_rule_gd};
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}
