/* fixedpoint_full.c: the full-space work on one fixed point of an ansatz:
 * its checks in the full (K, M) space (residual, invariance of the ansatz,
 * block against full residual), the damped least-squares Newton polish of
 * (Q, R) and the full-space linear stability; see fixedpoint.h.  The
 * block-level search that finds the points is fixedpoint.c. */
#include "scm/fixedpoint.h"

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_permutation.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/linalg.h"
#include "landscape/fixedpoint_internal.h"
#include "scm/model.h"

/* Unknowns: the upper triangle of Q (row by row), then R. */
static void full_pack(int K, int M, const double *Q, const double *R, double *u)
{
    long p = 0;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            u[p++] = Q[k * K + l];
    memcpy(u + p, R, sizeof(double) * (size_t)K * (size_t)M);
}

static void full_unpack(int K, int M, const double *u, double *Q, double *R)
{
    long p = 0;
    for (int k = 0; k < K; k++)
        for (int l = k; l < K; l++)
            Q[k * K + l] = Q[l * K + k] = u[p++];
    memcpy(R, u + p, sizeof(double) * (size_t)K * (size_t)M);
}

/* The polish's workspace: the unknowns u with their residual f0 and two
 * scratch residuals fp, fm (all packed like u), the unpacked state and
 * flow (Qt, Rt; FQ, FR), the dense Jacobian J and its sparse copy Js, and
 * the complete orthogonal decomposition's storage. */
typedef struct {
    scm_flow *fl;
    int K, M, fd_only, dense_step;
    long n;
    double *u, *f0, *fp, *fm;
    double *Qw, *FQ, *FR, *Qt, *Rt;
    gsl_matrix *J, *T;
    gsl_vector *tq, *tz, *work, *rhs, *du, *resid;
    gsl_permutation *perm;
    scm_csr Js;
} polish_ws;

static void polish_ws_free(polish_ws *w)
{
    scm_csr_free(&w->Js);
    free(w->u);
    free(w->Qw);
    if (w->J)
        gsl_matrix_free(w->J);
    if (w->T)
        gsl_matrix_free(w->T);
    if (w->tq)
        gsl_vector_free(w->tq);
    if (w->tz)
        gsl_vector_free(w->tz);
    if (w->work)
        gsl_vector_free(w->work);
    if (w->rhs)
        gsl_vector_free(w->rhs);
    if (w->du)
        gsl_vector_free(w->du);
    if (w->resid)
        gsl_vector_free(w->resid);
    if (w->perm)
        gsl_permutation_free(w->perm);
}

/* SCM_ENOMEM if any part is missing; w can be freed either way. */
static scm_status polish_ws_alloc(polish_ws *w, scm_flow *fl, int fd_only, int dense_step)
{
    const scm_model *m = scm_flow_model(fl);
    int K = m->K, M = m->M;
    long n = (long)K * (K + 1) / 2 + (long)K * M;
    size_t KK = (size_t)K * (size_t)K, KM = (size_t)K * (size_t)M;
    memset(w, 0, sizeof *w);
    w->fl = fl;
    w->K = K;
    w->M = M;
    w->fd_only = fd_only;
    w->dense_step = dense_step;
    w->n = n;
    w->u = malloc(sizeof(double) * (size_t)n * 4);
    w->Qw = malloc(sizeof(double) * (KK * 2 + KM * 2));
    w->J = gsl_matrix_alloc((size_t)n, (size_t)n);
    w->T = gsl_matrix_alloc((size_t)n, (size_t)n);
    w->tq = gsl_vector_alloc((size_t)n);
    w->tz = gsl_vector_alloc((size_t)n);
    w->work = gsl_vector_alloc((size_t)n);
    w->rhs = gsl_vector_alloc((size_t)n);
    w->du = gsl_vector_alloc((size_t)n);
    w->resid = gsl_vector_alloc((size_t)n);
    w->perm = gsl_permutation_alloc((size_t)n);
    if (!w->u || !w->Qw || !w->J || !w->T || !w->tq || !w->tz || !w->work || !w->rhs ||
        !w->du || !w->resid || !w->perm)
        return SCM_ENOMEM;
    w->f0 = w->u + n;
    w->fp = w->u + 2 * n;
    w->fm = w->u + 3 * n;
    w->FQ = w->Qw;
    w->FR = w->Qw + KK;
    w->Qt = w->Qw + KK + KM;
    w->Rt = w->Qt + KK;
    return SCM_OK;
}

/* The flow's residual at vec into out, both packed like the unknowns. */
static scm_status polish_eval(polish_ws *w, const double *vec, double *out)
{
    full_unpack(w->K, w->M, vec, w->Qt, w->Rt);
    scm_status st = scm_flow_rhs(w->fl, w->Qt, w->Rt, w->FQ, w->FR, NULL);
    if (!st)
        full_pack(w->K, w->M, w->FQ, w->FR, out);
    return st;
}

/* J at w->u: the closed-form Jacobian (flow.h); central differences where
 * it is not resolved (near-parallel ReLU neurons) or with fd_only; then
 * its sparse copy unless dense_step.  up is n doubles of scratch. */
static scm_status polish_jacobian(polish_ws *w, double *up, scm_error *err)
{
    long n = w->n;
    const double *u = w->u;
    scm_status st = SCM_OK;
    full_unpack(w->K, w->M, u, w->Qt, w->Rt);
    scm_status jst = w->fd_only ? SCM_EINVAL : scm_flow_jacobian(w->fl, w->Qt, w->Rt, w->J->data);
    if (jst == SCM_ENOMEM)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the polish's Jacobian");
    for (long j = 0; j < n && !st && jst; j++) {
        memcpy(up, u, sizeof(double) * (size_t)n);
        double h = 1e-6 * fmax(1.0, fabs(u[j]));
        up[j] = u[j] + h;
        st = polish_eval(w, up, w->fp);
        up[j] = u[j] - h;
        if (!st)
            st = polish_eval(w, up, w->fm);
        for (long i = 0; i < n && !st; i++)
            gsl_matrix_set(w->J, (size_t)i, (size_t)j, (w->fp[i] - w->fm[i]) / (2.0 * h));
    }
    if (st)
        return scm_error_set(err, st, "polish: the flow fails next to the iterate (%s)",
                             scm_status_str(st));
    scm_csr_free(&w->Js);
    if (!w->dense_step && scm_csr_from_dense(w->J->data, n, n, &w->Js))
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the polish's sparse Jacobian");
    return SCM_OK;
}

/* The minimum-norm least-squares Newton step J du = -f0 into w->du: LSQR
 * on the sparse J (each row has O(K + M) entries), and where it does not
 * converge (or with dense_step) a dense complete orthogonal
 * decomposition. */
static scm_status polish_step(polish_ws *w, scm_error *err)
{
    long n = w->n;
    for (long i = 0; i < n; i++)
        gsl_vector_set(w->rhs, (size_t)i, -w->f0[i]);
    scm_status lst = SCM_ENOCONV;
    if (!w->dense_step) {
        long iters = 0;
        lst = scm_linalg_lsqr(&w->Js, w->rhs->data, w->du->data, 1e-12, 4 * n, &iters);
        if (lst == SCM_ENOMEM)
            return scm_error_set(err, SCM_ENOMEM, "out of memory in the polish's LSQR");
    }
    if (lst) {
        size_t rank = 0;
        gsl_matrix_memcpy(w->T, w->J);
        double rtol = 1e-10 * fmax(1.0, gsl_matrix_max(w->J) - gsl_matrix_min(w->J));
        if (gsl_linalg_COD_decomp_e(w->T, w->tq, w->tz, w->perm, rtol, &rank, w->work) !=
                GSL_SUCCESS ||
            gsl_linalg_COD_lssolve(w->T, w->tq, w->tz, w->perm, rank, w->rhs, w->du, w->resid) !=
                GSL_SUCCESS)
            return scm_error_set(err, SCM_ESINGULAR, "polish: the least-squares solve failed");
    }
    return SCM_OK;
}

/* Damped: halve the step (at most 20 times) until the residual falls
 * below r0.  up gets u + *lam du, w->fp its residual, *r1 its max norm
 * (INFINITY, or NaN, when no step decreased it). */
static void polish_damp(polish_ws *w, double *up, double r0, double *lam, double *r1)
{
    long n = w->n;
    *lam = 1.0;
    *r1 = INFINITY;
    for (int ls = 0; ls < 20; ls++) {
        for (long i = 0; i < n; i++)
            up[i] = w->u[i] + *lam * w->du->data[i];
        if (polish_eval(w, up, w->fp) == SCM_OK) {
            *r1 = scm_fp_max_abs(w->fp, n);
            if (*r1 < r0)
                break;
        }
        *lam *= 0.5;
    }
}

/* One damped Newton iteration from w->u (residual w->f0, max norm *r0),
 * with the Jacobian of the last iteration when keep_jac: on a decrease u,
 * f0, *r0 and *last_move (the step's max norm) are updated and *moved is
 * 1; *moved is 0 when no damped step decreases the residual. */
static scm_status polish_iterate(polish_ws *w, int keep_jac, double *r0, double *last_move,
                                 int *moved, scm_error *err)
{
    long n = w->n;
    *moved = 0;
    double *up = malloc(sizeof(double) * (size_t)n);
    if (!up)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the polish");
    scm_status st = keep_jac ? SCM_OK : polish_jacobian(w, up, err);
    if (!st)
        st = polish_step(w, err);
    if (!st) {
        double lam, r1;
        polish_damp(w, up, *r0, &lam, &r1);
        if (r1 < *r0) {
            *last_move = lam * scm_linalg_max_abs(w->du->data, n);
            memcpy(w->u, up, sizeof(double) * (size_t)n);
            memcpy(w->f0, w->fp, sizeof(double) * (size_t)n);
            *r0 = r1;
            *moved = 1;
        }
    }
    free(up);
    return st;
}

static scm_status polish(scm_flow *fl, double *Q, double *R, int max_iter, double tol,
                         int fd_only, int dense_step, double *res, scm_error *err)
{
    polish_ws w;
    *res = NAN;
    scm_status st = polish_ws_alloc(&w, fl, fd_only, dense_step);
    if (st) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the full-space polish (n = %ld)",
                           w.n);
        goto done;
    }
    full_pack(w.K, w.M, Q, R, w.u);
    st = polish_eval(&w, w.u, w.f0);
    if (st) {
        scm_error_set(err, st, "polish: the flow fails at the start (%s)", scm_status_str(st));
        goto done;
    }
    double r0 = scm_fp_max_abs(w.f0, w.n), last_move = INFINITY;
    *res = r0;
    for (int it = 0; it < max_iter && r0 >= tol; it++) {
        /* The Jacobian is kept (a chord step) while the iterate moves by
         * less than 1e-8: it then changes by less than that, which leaves
         * the convergence to the round-off floor as it was, and it is most
         * of a step's cost (34 ms of 50 at K = M = 20) */
        int moved = 0;
        if ((st = polish_iterate(&w, it > 0 && last_move < 1e-8, &r0, &last_move, &moved, err)))
            goto done;
        if (!moved)
            break;
    }
    full_unpack(w.K, w.M, w.u, Q, R);
    *res = r0;
    st = r0 < tol ? SCM_OK : SCM_ENOCONV;
    if (st)
        scm_error_set(err, st, "polish: residual %.3g did not fall below %.3g", r0, tol);
done:
    polish_ws_free(&w);
    return st;
}

scm_status scm_fp_polish(scm_flow *fl, double *Q, double *R, int max_iter, double tol,
                         double *res, scm_error *err)
{
    return polish(fl, Q, R, max_iter, tol, 0, 0, res, err);
}

scm_status scm_fp_polish_fd(scm_flow *fl, double *Q, double *R, int max_iter, double tol,
                            double *res, scm_error *err)
{
    return polish(fl, Q, R, max_iter, tol, 1, 1, res, err);
}

scm_status scm_fp_full_stability(scm_flow *fl, const double *Q, const double *R,
                                 double *re_max, double *re_min)
{
    const scm_model *m = scm_flow_model(fl);
    int K = m->K, M = m->M;
    long n = (long)K * (K + 1) / 2 + (long)K * M;
    size_t KK = (size_t)K * (size_t)K, KM = (size_t)K * (size_t)M;
    double *u = malloc(sizeof(double) * (size_t)n * 4);
    double *W = malloc(sizeof(double) * (KK + KM) * 2);
    gsl_matrix *J = gsl_matrix_alloc((size_t)n, (size_t)n);
    scm_status st = SCM_OK;
    if (!u || !W || !J) {
        st = SCM_ENOMEM;
        goto done;
    }
    double *up = u + n, *fp = u + 2 * n, *fm = u + 3 * n;
    double *Qt = W, *Rt = W + KK, *FQ = W + KK + KM, *FR = FQ + KK;
    full_pack(K, M, Q, R, u);
    for (long j = 0; j < n && !st; j++) {
        memcpy(up, u, sizeof(double) * (size_t)n);
        double h = 1e-6 * fmax(1.0, fabs(u[j]));
        for (int side = 0; side < 2 && !st; side++) {
            up[j] = u[j] + (side ? -h : h);
            full_unpack(K, M, up, Qt, Rt);
            st = scm_flow_rhs(fl, Qt, Rt, FQ, FR, NULL);
            if (!st)
                full_pack(K, M, FQ, FR, side ? fm : fp);
        }
        for (long i = 0; i < n && !st; i++)
            gsl_matrix_set(J, (size_t)i, (size_t)j, (fp[i] - fm[i]) / (2.0 * h));
    }
    if (!st)
        st = scm_linalg_re_range(J, re_max, re_min);
done:
    free(u);
    free(W);
    if (J)
        gsl_matrix_free(J);
    return st;
}

/* The polish's target.  Each entry of F_Q, F_R sums O(K + M) kernel terms
 * of order one, so its roundoff floor is ~(K + M) 1e-16: Newton steps
 * below that cannot lower the residual and only cost Jacobians (at
 * K = M = 12 with target 1e-15, 184 of 278 polishes ended without any
 * decrease, all starting below 1e-14). */
static double polish_tol(const scm_model *m, const scm_fp_opts *o)
{
    return o->polish_tol > 0.0 ? o->polish_tol : fmax(1e-14, 5e-16 * (m->K + m->M));
}

scm_status scm_fp_full_polish_point(scm_fp_point *p, scm_flow *fl, const scm_fp_opts *o,
                                    scm_error *err)
{
    const scm_model *m = scm_flow_model(fl);
    size_t KK = (size_t)m->K * (size_t)m->K, KM = (size_t)m->K * (size_t)m->M;
    double *Q0 = malloc(sizeof(double) * (KK + KM));
    if (!Q0)
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the polish");
    memcpy(Q0, p->Q, sizeof(double) * KK);
    memcpy(Q0 + KK, p->R, sizeof(double) * KM);
    scm_error perr;
    p->polished = 1;
    p->polish_status = scm_fp_polish(fl, p->Q, p->R, 6, polish_tol(m, o), &p->res_polish, &perr);
    if (p->polish_status == SCM_ENOMEM) {
        free(Q0);
        return scm_error_set(err, SCM_ENOMEM, "%s", perr.msg);
    }
    double sh = 0.0;
    for (size_t i = 0; i < KK; i++)
        sh = fmax(sh, fabs(p->Q[i] - Q0[i]));
    for (size_t i = 0; i < KM; i++)
        sh = fmax(sh, fabs(p->R[i] - Q0[KK + i]));
    p->polish_shift = sh;
    if (scm_flow_loss(fl, p->Q, p->R, &p->eps_polish))
        p->eps_polish = NAN;
    free(Q0);
    return SCM_OK;
}

scm_status scm_fp_point_polish(scm_fp_point *p, const scm_activation *act,
                               const scm_fp_opts *o, scm_error *err)
{
    if (!p->full || !p->Q || !p->R || p->polished || p->K > o->polish_max_K)
        return SCM_OK;
    scm_model *m = scm_model_alloc((int)p->K, (int)p->M, act, NULL, NULL, NULL, err);
    if (!m)
        return err ? err->code : SCM_ENOMEM;
    scm_flow *fl = scm_flow_alloc(m);
    scm_status st = fl ? scm_fp_full_polish_point(p, fl, o, err)
                       : scm_error_set(err, SCM_ENOMEM, "out of memory in the polish");
    scm_flow_free(fl);
    scm_model_free(m);
    return st;
}

scm_status scm_fp_full_checks(scm_fp_point *p, const scm_ansatz_inst *in, scm_flow *fl,
                              const scm_fp_opts *o, const double *Fblock, scm_error *err)
{
    int K = in->Ki, M = in->Mi;
    size_t KK = (size_t)K * (size_t)K, KM = (size_t)K * (size_t)M;
    double *FQ = malloc(sizeof(double) * (KK + KM));
    double *y = malloc(sizeof(double) * (size_t)in->nsc);
    p->Q = malloc(sizeof(double) * KK);
    p->R = malloc(sizeof(double) * KM);
    scm_status st = SCM_OK;
    if (!FQ || !y || !p->Q || !p->R) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the full-space check");
        goto done;
    }
    double *FR = FQ + KK;
    scm_ansatz_to_full(in, p->x, p->Q, p->R);
    st = scm_flow_rhs(fl, p->Q, p->R, FQ, FR, &p->eps_full);
    if (st == SCM_OK) {
        p->full = 1;
        p->res_full = fmax(scm_fp_max_abs(FQ, (long)KK), scm_fp_max_abs(FR, (long)KM));
        scm_ansatz_project(in, FQ, FR, y, &p->inv_dev);
        double d = 0.0;
        for (int c = 0; c < in->nsc; c++)
            d = fmax(d, fabs(y[c] - Fblock[c]));
        p->block_vs_full = d;
    }
    st = SCM_OK;
    if (p->full && K <= o->polish_max_K && !o->polish_defer)
        st = scm_fp_full_polish_point(p, fl, o, err);
done:
    free(FQ);
    free(y);
    return st;
}

scm_status scm_fp_full_space_alloc(scm_fp_full_space *f, int K, int M, const scm_activation *act,
                                   scm_error *err)
{
    f->fl = NULL;
    if (!(f->m = scm_model_alloc(K, M, act, NULL, NULL, NULL, err)))
        return err ? err->code : SCM_ENOMEM;
    if (!(f->fl = scm_flow_alloc(f->m))) {
        scm_model_free(f->m);
        f->m = NULL;
        return scm_error_set(err, SCM_ENOMEM, "out of memory allocating the full flow");
    }
    return SCM_OK;
}

void scm_fp_full_space_free(scm_fp_full_space *f)
{
    scm_flow_free(f->fl);
    scm_model_free(f->m);
    f->m = NULL;
    f->fl = NULL;
}

