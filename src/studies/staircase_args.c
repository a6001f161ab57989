/* staircase_args.c: the options of `scm staircase` and of the Python call
 * given by name (scm_stair_study_opts_named, staircase.h): the rules they
 * follow, in the command's words. */
#include "core/parallel.h"
#include "scm/staircase.h"

scm_status scm_stair_study_opts_named(scm_stair_study_opts *o,
                                      const char *actname, const char *rulename,
                                      int nT, int nvs, int threads,
                                      scm_error *err) {
  if (o->K < 0 || o->M < 0 || o->n_alpha == 0)
    return scm_error_set(err, SCM_EINVAL, "--K, --M and --alpha are required");
  if (o->d < o->M)
    return scm_error_set(err, SCM_EINVAL, "--d %ld is below M = %ld", o->d,
                         o->M);
  if (!(o->act = scm_activation_find(actname)))
    return scm_error_set(err, SCM_EINVAL,
                         "unknown activation '%s' (relu, erf, linear)",
                         actname);
  o->rule = scm_rule_find(rulename);
  if (!o->rule || (o->rule != &scm_rule_gd && o->rule != &scm_rule_two_layer))
    return scm_error_set(err, SCM_EINVAL, "--rule '%s': gd or two_layer",
                         rulename);
  if ((nT && nT != o->M) || (nvs && nvs != o->M))
    return scm_error_set(
        err, SCM_EINVAL,
        "--T-diag and --vstar need M = %ld entries (got %d, %d)", o->M, nT,
        nvs);
  for (long i = 0; i < o->M; i++) {
    if (!nT)
      o->T_diag[i] = 1.0;
    if (!nvs)
      o->vstar[i] = 1.0;
  }
  /* the processors online by default; the list does not depend on it */
  o->threads = threads > 0 ? threads : scm_threads_online();
  return SCM_OK;
}
