/* config_run.c: the trajectory a configuration describes (config.h): its
 * model, its initial state and the flow integrated from there, the whole
 * computation of `scm run` as one call. */
#include <stdlib.h>
#include <string.h>

#include "scm/config.h"

scm_status scm_config_run(const scm_config *c, scm_traj_result *r, scm_error *err)
{
    scm_model *m = scm_config_model(c, err);
    double *Q0 = malloc(sizeof(double) * (size_t)c->K * (size_t)c->K);
    double *R0 = malloc(sizeof(double) * (size_t)c->K * (size_t)c->M);
    scm_status st = SCM_OK;
    memset(r, 0, sizeof *r);
    if (!m)
        st = err->code ? err->code : scm_error_set(err, SCM_ENOMEM, "out of memory");
    else if (!Q0 || !R0)
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    if (!st)
        st = scm_config_initial_state(c, m, Q0, R0, err);
    if (!st)
        st = scm_traj_run(m, c->rule, Q0, R0, &c->traj, r, err);
    free(Q0);
    free(R0);
    scm_model_free(m);
    return st;
}
