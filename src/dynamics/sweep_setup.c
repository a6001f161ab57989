/* sweep_setup.c: what `scm sweep` and the Python call do with a loaded
 * config before the runs file is opened (scm_sweep_file_setup,
 * sweepfile.h): the config's initial states must be random, the families
 * are read, the base seed resolved. */
#include <stdint.h>

#include "scm/sweepfile.h"

scm_status scm_sweep_file_setup(const scm_config *c, const char *name,
                                const char *fam_path, long seed,
                                scm_sweep_families *fams,
                                scm_sweep_file_opts *fo, scm_error *err) {
  if (c->init != SCM_INIT_RANDOM)
    return scm_error_set(err, SCM_EINVAL,
                         "%s: a sweep needs init.type = \"random\"", name);
  scm_status st =
      fam_path ? scm_sweep_families_load(fam_path, fams, err) : SCM_OK;
  fo->seed = seed >= 0 ? (uint64_t)seed : (uint64_t)c->seed;
  return st;
}
