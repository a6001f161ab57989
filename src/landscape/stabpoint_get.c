/* stabpoint_get.c: the point `scm stability` (and the Python call) analyses,
 * from either source (stabpoint.h): entry index of a fixed-points result
 * file, or the chosen point of a k1 family; and the activation it is
 * analysed with (the one named, else the file's, else relu); and the
 * command's arguments (scm_stabpoint_args): their rules, the options of the
 * analysis, the point they choose. */
#include <math.h>
#include <string.h>

#include "scm/stabpoint.h"

scm_status scm_stabpoint_get(const char *point, long index, const char *actname,
                             scm_family_pick_opts *fo, scm_stabpoint *sp,
                             const scm_activation **act, scm_error *err)
{
    scm_status st;
    memset(sp, 0, sizeof *sp);
    *act = NULL;
    if (point && (st = scm_stabpoint_load(point, index, sp, err)))
        return st;
    const char *an = actname ? actname : point ? sp->activation : "relu";
    if (!(*act = scm_activation_find(an)))
        return scm_error_set(err, SCM_EINVAL, "unknown activation '%s' (relu, erf, linear)", an);
    if (point)
        return SCM_OK;
    fo->act = *act;
    if ((st = scm_stabpoint_family(fo, sp, err)) && sp->pick.why)
        scm_error_set(err, st, "%s", sp->pick.why);
    return st;
}

void scm_stabpoint_args_default(scm_stabpoint_args *a)
{
    memset(a, 0, sizeof *a);
    a->K = a->M = a->k1 = a->index = -1;
    a->loss = NAN;
    a->starts = 100;
    a->steps = 1000;
    a->trials = 10;
    a->seed = 1;
    a->flow = a->hessian = 1;
}

scm_status scm_stabpoint_args_check(const scm_stabpoint_args *a, scm_error *err)
{
    int family = a->K >= 0 || a->M >= 0 || a->k1 >= 0;
    if (a->point && family)
        return scm_error_set(err, SCM_EINVAL,
                             "give either --point FILE --index I or --K --M --k1, not both");
    if (a->point && isfinite(a->loss))
        return scm_error_set(err, SCM_EINVAL,
                             "--loss selects in a family (--K --M --k1), not in --point files");
    if (a->index >= 0 && isfinite(a->loss))
        return scm_error_set(err, SCM_EINVAL, "give --index or --loss, not both");
    if (a->point && a->index < 0)
        return scm_error_set(err, SCM_EINVAL, "--point needs --index");
    if (!a->point && (a->K < 0 || a->M < 0 || a->k1 < 0))
        return scm_error_set(err, SCM_EINVAL,
                             "--K, --M and --k1 are required (or --point FILE --index I)");
    if (!a->point && a->k1 > a->K)
        return scm_error_set(err, SCM_EINVAL, "--k1 %ld exceeds K = %ld", a->k1, a->K);
    return SCM_OK;
}

scm_status scm_stabpoint_args_opts(const scm_stabpoint_args *a, scm_stab_opts *o,
                                   scm_error *err)
{
    o->d = a->d;
    o->n_steps = (int)a->steps;
    o->n_trials = (int)a->trials;
    o->seed = (unsigned long)a->seed;
    o->run_flow = a->flow;
    o->hessian = a->hessian;
    return scm_stab_opts_check(o, err);
}

scm_status scm_stabpoint_args_get(const scm_stabpoint_args *a, scm_stabpoint *sp,
                                  const scm_activation **act, scm_error *err)
{
    scm_family_pick_opts fo;
    scm_family_pick_opts_default(&fo);
    fo.K = (int)a->K;
    fo.M = (int)a->M;
    fo.k1 = (int)a->k1;
    fo.ansatz_file = a->ansatz;
    fo.starts = a->starts;
    fo.threads = (int)a->threads;
    fo.index = a->index;
    fo.loss = a->loss;
    return scm_stabpoint_get(a->point, a->index, a->actname, &fo, sp, act, err);
}
