/* stabpoint_text.h: the report of `scm stability` as text (landscape;
 * stabpoint_text.c), so that the library does not print and the CLI and
 * Python print the same thing: the point (with its family, the chosen
 * point marked), the loss and residual, smoothness, the spectra (the
 * symmetric ones, or the dense Hessian and Jacobian), the perturbation
 * test's rows and the two verdicts (docs/stability.md). */
#ifndef SCM_STABPOINT_TEXT_H
#define SCM_STABPOINT_TEXT_H

#include "scm/stabpoint.h"

/* The report of the analysis r of sp (scm_stabpoint_analyse with options o
 * and activation act), NUL-terminated, malloc'ed: the caller frees it.
 * NULL if out of memory. */
char *scm_stabpoint_text(const scm_stabpoint *sp, const scm_activation *act,
                         const scm_stab_opts *o, const scm_stab_result *r);

#endif
