/* rule.h: training rules as ODEs on a flat state vector y.
 *
 * A rule says how the state is laid out (which order parameters it holds)
 * and how to evaluate dy/dtau; the trajectory integrator only sees this
 * table, so a new rule is a new table, not a change to the integrator.
 * The rules (MATH.md sections 3 and 8; derivations in docs/rules.md), with
 * F_Q, F_R the plain flow of flow.h and P = S Q + B R^T (so that
 * F_Q = -(P + P^T)):
 *
 *   gd          population gradient flow of the first layer.
 *               State: upper triangle of Q, then R.
 *   normalised  each row's gradient projected off w_k, so Q_kk = 1:
 *               dQ = F_Q + (l_k + l_l) Q_kl, dR = F_R + l_k R_km with
 *               l_k = P_kk / Q_kk = -F_Q,kk / (2 Q_kk).
 *               State: strict upper triangle of Q (Q_kk = 1 exactly), R.
 *   stiefel     Riemannian gradient on W W^T = d I (embedded metric),
 *               so Q = I: dR = F_R + sym(P) R = F_R - F_Q R / 2.
 *               State: R (Q = I exactly).
 *   two_layer   both layers: the flow of W at the current v, and
 *               dv_k/dtau = -(eta_v / eta) d eps / dv_k.
 *               State: upper triangle of Q, R, then v.
 *   sgd         one-pass online SGD at a finite learning rate eta with
 *               label noise of variance sigma^2 (sgd.h): two_layer's flow
 *               (v trained when lr_v_ratio > 0, fixed when it is 0) plus
 *               eta G in dQ, G_kl = E[delta_k delta_l]; eta = 0 is gd
 *               (two_layer when lr_v_ratio > 0).  State: as two_layer.
 *
 * The manifold rules start on their manifold: retract maps a start onto it
 * (normalised: each student rescaled to unit norm; stiefel: the polar
 * retraction W -> (W W^T / d)^(-1/2) W, i.e. Q -> I, R -> Q^(-1/2) R). */
#ifndef SCM_RULE_H
#define SCM_RULE_H

#include "scm/flow.h"

/* Parameters of the rules that have any. */
typedef struct {
    double lr_v_ratio; /* two_layer: eta_v / eta (> 0); sgd: >= 0, 0 = v fixed */
    double eta;        /* sgd: learning rate (>= 0); 0 for the other rules */
    double noise;      /* sgd: label-noise variance sigma^2 (>= 0); 0 for the others */
} scm_rule_params;

/* lr_v_ratio = 1, eta = noise = 0. */
void scm_rule_params_default(scm_rule_params *p);

typedef struct scm_rule {
    const char *name;
    /* Length of the state vector. */
    long (*dim)(const scm_model *m);
    /* Length of the scratch buffer rhs needs (doubles). */
    long (*scratch)(const scm_model *m);
    /* (Q, R, v) -> y, and back (Q filled symmetric, the fixed entries of a
     * manifold rule filled in).  v is used only by rules with trains_v:
     * pack takes the model's v when v is NULL, unpack skips a NULL v. */
    void (*pack)(const scm_model *m, const double *Q, const double *R, const double *v,
                 double *y);
    void (*unpack)(const scm_model *m, const double *y, double *Q, double *R, double *v);
    /* dy/dtau at y, and the loss there (eps may be NULL); status as
     * scm_flow_rhs.  fl must be a flow of the model that packed y.  The
     * loss must be scm_flow_loss at the unpacked (Q, R) with the unpacked v
     * of a rule that trains v (the model's otherwise): scm_traj_run
     * evaluates it alone that way where it needs no dy/dtau. */
    scm_status (*rhs)(const scm_rule_params *p, scm_flow *fl, const double *y, double *ydot,
                      double *eps, double *scratch);
    /* 1 if v is part of the state. */
    int trains_v;
    /* Map (Q, R) onto the rule's manifold in place, or NULL (no
     * constraint).  SCM_ESINGULAR (err names the student) when the start
     * has no direction to keep (a zero student, or K students spanning
     * fewer than K dimensions for stiefel). */
    scm_status (*retract)(const scm_model *m, double *Q, double *R, scm_error *err);
    /* Optional (NULL: the integrator uses difference quotients of rhs):
     * Jv = (d rhs / dy)(y) v, with a scratch buffer of 2 scratch(m)
     * doubles.  A status other than SCM_OK (e.g. SCM_ESINGULAR, see
     * scm_flow_jvp) means "not available here": the caller falls back to
     * difference quotients. */
    scm_status (*jtimes)(const scm_rule_params *p, scm_flow *fl, const double *y,
                         const double *v, double *Jv, double *scratch);
    /* Optional (NULL: none): a preconditioner of the Newton matrix
     * I - gamma (d rhs / dy) for Krylov solvers.  psetup builds it at y and
     * keeps it in fl; psolve applies its inverse to r (z may alias r).
     * Both take a scratch buffer of 2 scratch(m) doubles; a status other
     * than SCM_OK means "not available here" (the caller uses none). */
    scm_status (*psetup)(const scm_rule_params *p, scm_flow *fl, const double *y,
                         double *scratch);
    scm_status (*psolve)(const scm_rule_params *p, scm_flow *fl, double gamma, const double *r,
                         double *z, double *scratch);
} scm_rule;

extern const scm_rule scm_rule_gd, scm_rule_normalised, scm_rule_stiefel, scm_rule_two_layer,
    scm_rule_sgd;

/* The rule named name ("gd", "normalised", "stiefel", "two_layer", "sgd"), or
 * NULL. */
const scm_rule *scm_rule_find(const char *name);

/* The names of every rule, comma-separated, for messages. */
const char *scm_rule_names(void);

/* Check p for rule r: SCM_EINVAL naming the field. */
scm_status scm_rule_params_check(const scm_rule *r, const scm_rule_params *p, scm_error *err);

#endif
