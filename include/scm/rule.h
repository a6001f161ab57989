/* rule.h: training rules as ODEs on a flat state vector y.
 *
 * A rule says how the state is laid out (which order parameters it holds:
 * plain gradient descent holds the upper triangle of Q and all of R; a rule
 * that also trains the second layer would append v) and how to evaluate
 * dy/dtau.  The trajectory integrator only sees this table, so a new rule
 * (normalised GD, Stiefel GD, both layers, finite-step SGD) is a new table,
 * not a change to the integrator. */
#ifndef SCM_RULE_H
#define SCM_RULE_H

#include "scm/flow.h"

typedef struct scm_rule {
    const char *name;
    /* Length of the state vector. */
    long (*dim)(const scm_model *m);
    /* Length of the scratch buffer rhs needs (doubles). */
    long (*scratch)(const scm_model *m);
    /* (Q, R) -> y, and back (Q filled symmetric). */
    void (*pack)(const scm_model *m, const double *Q, const double *R, double *y);
    void (*unpack)(const scm_model *m, const double *y, double *Q, double *R);
    /* dy/dtau at y, and the loss there; status as scm_flow_rhs. */
    scm_status (*rhs)(scm_flow *fl, const double *y, double *ydot, double *eps,
                      double *scratch);
    /* Optional (NULL: the integrator uses difference quotients of rhs):
     * Jv = (d rhs / dy)(y) v, with a scratch buffer of 2 scratch(m)
     * doubles.  A status other than SCM_OK (e.g. SCM_ESINGULAR, see
     * scm_flow_jvp) means "not available here": the caller falls back to
     * difference quotients. */
    scm_status (*jtimes)(scm_flow *fl, const double *y, const double *v, double *Jv,
                         double *scratch);
} scm_rule;

/* Plain population gradient flow of the first layer (MATH.md section 3). */
extern const scm_rule scm_rule_gd;

/* The rule named name ("gd"), or NULL. */
const scm_rule *scm_rule_find(const char *name);

#endif
