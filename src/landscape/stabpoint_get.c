/* stabpoint_get.c: the point `scm stability` (and the Python call) analyses,
 * from either source (stabpoint.h): entry index of a fixed-points result
 * file, or the chosen point of a k1 family; and the activation it is
 * analysed with (the one named, else the file's, else relu). */
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
