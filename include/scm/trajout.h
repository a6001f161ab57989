/* trajout.h: what `scm run` writes and prints for one trajectory (dynamics;
 * traj_out.c), so that the CLI and Python only print and write: the result
 * object of its JSON file, the trajectory as CSV and the summary lines.
 * c is the run's configuration (scm_config_load), r its trajectory
 * (scm_traj_run with c->traj).  Nothing here prints. */
#ifndef SCM_TRAJOUT_H
#define SCM_TRAJOUT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "scm/config.h"
#include "scm/traj.h"

/* The result file's object: scmode_version, command "run", status
 * ("ok" or "failed"), stop_reason, error (null or the reason), config
 * (c->used), final (t, eps and how it was reported, max_abs_F, Q, R, v,
 * dead_neurons), solver counters and the recorded trajectory.  NULL if out
 * of memory; the caller frees with cJSON_Delete. */
cJSON *scm_traj_out_json(const scm_config *c, const scm_traj_result *r);

/* The recorded trajectory as CSV: a header t,eps,Q_k_l (k <= l),R_k_n(,v_k
 * when the rule trains v), then one row per output time, every number with
 * 17 significant digits.  *len bytes, NUL-terminated; NULL if out of
 * memory; the caller frees. */
char *scm_traj_out_csv(const scm_config *c, const scm_traj_result *r, size_t *len);

/* The summary `scm run` prints (model, init, eps from t = 0 to the end,
 * why it stopped, dead students, solver work with the wall time secs, the
 * final R and v when K, M <= 6), NUL-terminated; NULL if out of memory;
 * the caller frees. */
char *scm_traj_out_text(const scm_config *c, const scm_traj_result *r, double secs);

/* The outputs of `scm run` checked before anything is computed: out (-o)
 * and csv (--csv, may be NULL) each a path that may be written
 * (scm_output_check_path), neither the config file nor the other output.
 * SCM_EINVAL naming the option and the file in the command's words (the
 * caller adds its prefix), else SCM_OK. */
scm_status scm_traj_out_check_paths(const char *config, const char *out, const char *csv,
                                    scm_error *err);

#endif
