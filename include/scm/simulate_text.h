/* simulate_text.h: the summary of `scm simulate` as text (dynamics;
 * simulate_study_text.c), so that the library does not print and the CLI
 * only prints it. */
#ifndef SCM_SIMULATE_TEXT_H
#define SCM_SIMULATE_TEXT_H

#include "scm/simulate.h"

/* The summary of the study s with result res (scm_simulate_study_run):
 * model, set-up, per seed the final eps of the network and of the ODE
 * (and why a seed failed), the final mean eps_sim - eps_ode with its
 * standard error and the rms state deviation, the times.  NUL-terminated,
 * malloc'ed (the caller frees); NULL if out of memory. */
char *scm_simulate_study_text(const scm_simulate_study *s, const scm_simulate_result *res);

#endif
