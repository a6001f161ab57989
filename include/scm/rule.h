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

/* How far a given Q may be off a rule's manifold (absolute, entries of Q). */
#define SCM_RULE_MANIFOLD_TOL 1e-10

/* Parameters of the rules that have some (docs/rules.md). */
typedef struct scm_rule_params {
    double lr_v_ratio; /* eta_v / eta: two_layer (> 0), sgd (>= 0, 0: v fixed) */
    double eta;        /* sgd: learning rate (>= 0; 0 is gd) */
    double noise;      /* sgd: label-noise variance sigma^2 (>= 0) */
} scm_rule_params;

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
    /* ---- members added with the rules of issue 9; all optional (0/NULL) ---- */
    /* The state ends with the K student second-layer weights v (the rule
     * trains them): pack/unpack handle the (Q, R) part before them, v(0) is
     * the model's v.  dim counts them. */
    int has_v;
    /* dy/dtau with the parameters of the rule r (a copy of the table with
     * params filled in, e.g. by the config); rhs is this at the default
     * params.  Use scm_rule_rhs, which picks the right one. */
    scm_status (*rhs_p)(const struct scm_rule *r, scm_flow *fl, const double *y, double *ydot,
                        double *eps, double *scratch);
    scm_rule_params params;
    /* Map a state onto the rule's manifold as the weight-space retraction
     * would (normalise each w_k; orthonormalise W); NULL: none.  SCM_EINVAL
     * if impossible (a zero or rank-deficient W). */
    scm_status (*project)(const scm_model *m, double *Q, double *R, scm_error *err);
    /* SCM_OK if (Q, R) lies on the rule's manifold to tol, else SCM_EINVAL
     * naming the entry; NULL: every state is allowed. */
    scm_status (*on_manifold)(const scm_model *m, const double *Q, double tol, scm_error *err);
} scm_rule;

/* Plain population gradient flow of the first layer (MATH.md section 3). */
extern const scm_rule scm_rule_gd;
/* GD on the sphere ||w_k||^2 = d: state holds Q off the diagonal (Q_kk = 1). */
extern const scm_rule scm_rule_normalised;
/* GD on the Stiefel manifold W W^T = d I: state holds R only (Q = I). */
extern const scm_rule scm_rule_stiefel;
/* Both layers: gd's state, then v; params.lr_v_ratio (default 1). */
extern const scm_rule scm_rule_two_layer;

/* The rule named name ("gd", "normalised", "stiefel", "two_layer"), or NULL. */
const scm_rule *scm_rule_find(const char *name);

/* "gd, normalised, ..." for messages. */
const char *scm_rule_names(void);

/* dy/dtau of rule r (with its params) at y; as the table's rhs. */
scm_status scm_rule_rhs(const scm_rule *r, scm_flow *fl, const double *y, double *ydot,
                        double *eps, double *scratch);

/* Where v sits in y (has_v rules), or the model's v. */
const double *scm_rule_v(const scm_rule *r, const scm_model *m, const double *y);

/* r->project if the rule has one, else nothing to do. */
scm_status scm_rule_project(const scm_rule *r, const scm_model *m, double *Q, double *R,
                            scm_error *err);

#endif
