/* traj_opts.c: the options of scm_traj_run (traj.h): their defaults, their
 * check, and the names of the stopping reasons (apart from traj.c, the
 * CVODE driver, to keep it one concept). */
#include <math.h>

#include "scm/traj.h"

void scm_traj_opts_default(scm_traj_opts *o)
{
    o->method = SCM_METHOD_BDF;
    o->linsol = SCM_LINSOL_AUTO;
    o->rtol = 1e-8;
    o->atol = 1e-10;
    o->t_max = 1e5;
    o->t_first = 1e-2;
    o->n_out = 100;
    o->eps_stop = 1e-12;
    o->grad_stop = 1e-10;
    o->max_steps = 1000000;
    o->psd_tol = 1e-6;
    o->dead_tol = 1e-10;
    o->dead_fail = 0;
    o->record = 1;
    o->loose_rtol = 1e-6;
    o->loose_atol = 1e-8;
    o->loose_until = 0.0;
    scm_rule_params_default(&o->rule_params);
    o->v0 = NULL;
    o->analytic_jv = 0;
    o->precond = 0;
    o->krylov_dim = 5;
    o->eps_lin = 0.05;
    o->sundials_vec_ops = 0;
    o->certify = NULL;
    o->certify_user = NULL;
    o->certify_from = 0.0;
    o->tail_eps = 0.0;
    o->tail_rtol = 1e-11;
}

scm_status scm_traj_opts_check(const scm_traj_opts *o, scm_error *err)
{
    if (!(o->rtol > 0.0 && o->rtol < 1.0))
        return scm_error_set(err, SCM_EINVAL, "integrator.rtol must be in (0, 1), got %g", o->rtol);
    if (!(o->atol > 0.0 && isfinite(o->atol)))
        return scm_error_set(err, SCM_EINVAL, "integrator.atol must be > 0, got %g", o->atol);
    if (!(o->t_max > 0.0 && isfinite(o->t_max)))
        return scm_error_set(err, SCM_EINVAL, "integrator.t_max must be > 0 and finite, got %g", o->t_max);
    if (!(o->t_first > 0.0 && o->t_first <= o->t_max))
        return scm_error_set(err, SCM_EINVAL, "integrator.t_first must be in (0, t_max], got %g", o->t_first);
    if (o->n_out < 1 || o->n_out > 1000000)
        return scm_error_set(err, SCM_EINVAL, "integrator.n_out must be in [1, 1000000], got %d", o->n_out);
    if (o->analytic_jv < 0 || o->analytic_jv > 2)
        return scm_error_set(err, SCM_EINVAL, "analytic_jv must be 0, 1 or 2, got %d", o->analytic_jv);
    if (o->precond < 0 || o->precond > 1)
        return scm_error_set(err, SCM_EINVAL, "precond must be 0 or 1, got %d", o->precond);
    if (o->krylov_dim < 1 || o->krylov_dim > 500)
        return scm_error_set(err, SCM_EINVAL, "integrator.krylov_dim must be in [1, 500], got %d",
                             o->krylov_dim);
    if (!(o->eps_lin > 0.0 && o->eps_lin < 1.0))
        return scm_error_set(err, SCM_EINVAL, "integrator.eps_lin must be in (0, 1), got %g",
                             o->eps_lin);
    if (!(o->eps_stop >= 0.0))
        return scm_error_set(err, SCM_EINVAL, "integrator.eps_stop must be >= 0, got %g", o->eps_stop);
    if (!(o->grad_stop >= 0.0))
        return scm_error_set(err, SCM_EINVAL, "integrator.grad_stop must be >= 0, got %g", o->grad_stop);
    if (o->max_steps < 1)
        return scm_error_set(err, SCM_EINVAL, "integrator.max_steps must be >= 1, got %ld", o->max_steps);
    if (!(o->psd_tol >= 0.0 && o->psd_tol < 1.0))
        return scm_error_set(err, SCM_EINVAL, "integrator.psd_tol must be in [0, 1), got %g", o->psd_tol);
    if (!(o->dead_tol >= 0.0))
        return scm_error_set(err, SCM_EINVAL, "integrator.dead_tol must be >= 0, got %g", o->dead_tol);
    if (!(o->loose_until >= 0.0 && isfinite(o->loose_until)))
        return scm_error_set(err, SCM_EINVAL, "integrator.loose_until must be >= 0, got %g",
                             o->loose_until);
    if (!(o->certify_from >= 0.0 && isfinite(o->certify_from)))
        return scm_error_set(err, SCM_EINVAL, "certify_from must be >= 0, got %g",
                             o->certify_from);
    if (!(o->tail_eps >= 0.0 && o->tail_eps < 1.0))
        return scm_error_set(err, SCM_EINVAL, "tail_eps must be in [0, 1), got %g", o->tail_eps);
    if (!(o->tail_rtol >= 1e-14 && o->tail_rtol < 1e-2))
        return scm_error_set(err, SCM_EINVAL, "tail_rtol must be in [1e-14, 1e-2), got %g",
                             o->tail_rtol);
    if (o->loose_until > 0.0) {
        if (!(o->loose_until > o->grad_stop))
            return scm_error_set(err, SCM_EINVAL,
                                 "integrator.loose_until (%g) must exceed integrator.grad_stop (%g)",
                                 o->loose_until, o->grad_stop);
        if (!(o->loose_rtol >= o->rtol && o->loose_rtol < 1.0))
            return scm_error_set(err, SCM_EINVAL,
                                 "integrator.loose_rtol must be in [rtol, 1), got %g", o->loose_rtol);
        if (!(o->loose_atol >= o->atol && isfinite(o->loose_atol)))
            return scm_error_set(err, SCM_EINVAL, "integrator.loose_atol must be >= atol, got %g",
                                 o->loose_atol);
    }
    return SCM_OK;
}

const char *scm_stop_reason_str(scm_stop_reason r)
{
    switch (r) {
    case SCM_STOP_T_MAX: return "t_max";
    case SCM_STOP_EPS: return "eps_threshold";
    case SCM_STOP_FIXED_POINT: return "fixed_point";
    case SCM_STOP_MAX_STEPS: return "max_steps";
    case SCM_STOP_FAILED: return "failed";
    case SCM_STOP_CERTIFIED: return "certified";
    }
    return "unknown";
}
