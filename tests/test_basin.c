/* test_basin.c: the basin certificates and the alignment of basin.h, the
 * traj certify hook, and the early stop and tagging of sweep runs
 * (issue 12).  The fixed points are those of the built-in ansaetze at
 * K = M = 7 (scm_family_find); a certified state is checked against the
 * full integration from it, a saddle must never be certified. */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <stdlib.h>
#include <string.h>

#include "scm/ansatz.h"
#include "scm/basin.h"
#include "scm/config.h"
#include "scm/family.h"
#include "scm/stability.h"
#include "scm/sweep.h"
#include "scm/traj.h"
#include "scm/weights.h"
#include "testutil.h"

#define K7 7

static scm_ansatz **builtin(int *n)
{
    static scm_ansatz *a[8];
    *n = 0;
    for (int i = 0; i < scm_ansatz_builtin_count() && i < 8; i++) {
        const char *file, *text = scm_ansatz_builtin_text(i, &file);
        a[(*n)++] = scm_ansatz_parse(text, strlen(text), file, NULL);
    }
    return a;
}

/* A deterministic pseudo-random number in [-1, 1). */
static double prand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / (double)(1u << 23) - 1.0;
}

/* (Q, R) at weight distance dist from the in-span point (Qs, Rs): R moved
 * by a random matrix, plus random components outside the span (half of
 * the squared distance each). */
static void displaced(const double *Rs, double dist, unsigned seed, double *Q, double *R)
{
    unsigned s = seed;
    double dR[K7 * K7], X[K7 * K7], nr = 0, nx = 0;
    for (int i = 0; i < K7 * K7; i++) {
        dR[i] = prand(&s);
        X[i] = prand(&s);
        nr += dR[i] * dR[i];
        nx += X[i] * X[i];
    }
    const double a = dist / sqrt(2.0 * nr), b = dist / sqrt(2.0 * nx);
    for (int i = 0; i < K7 * K7; i++)
        R[i] = Rs[i] + a * dR[i];
    for (int k = 0; k < K7; k++)
        for (int l = 0; l < K7; l++) {
            double q = 0.0;
            for (int n = 0; n < K7; n++)
                q += R[k * K7 + n] * R[l * K7 + n] + b * b * X[k * K7 + n] * X[l * K7 + n];
            Q[k * K7 + l] = q;
        }
}

/* The traj hook: stop once eps < the threshold given as user data. */
static int below(void *user, double t, const double *Q, const double *R, double eps,
                 double max_F)
{
    (void)t;
    (void)Q;
    (void)R;
    (void)max_F;
    return eps < *(const double *)user;
}

static void test_hook(const scm_model *m, const double *Rs)
{
    double Q[K7 * K7], R[K7 * K7];
    displaced(Rs, 0.3, 7, Q, R);
    scm_traj_opts o;
    scm_traj_opts_default(&o);
    o.record = 0;
    double thr = 0.05;
    o.certify = below;
    o.certify_user = &thr;
    scm_traj_result tr;
    scm_error err;
    CHECK(scm_traj_run(m, &scm_rule_gd, Q, R, &o, &tr, &err) == SCM_OK, "%s", err.msg);
    CHECK(tr.stop == SCM_STOP_CERTIFIED && tr.eps < thr,
          "the hook ends the run: stop %s, eps %g", scm_stop_reason_str(tr.stop), tr.eps);
    CHECK(strcmp(scm_stop_reason_str(SCM_STOP_CERTIFIED), "certified") == 0, "name");
    scm_traj_result_free(&tr);
    o.certify_from = -1;
    CHECK(scm_traj_opts_check(&o, &err) == SCM_EINVAL, "certify_from < 0 refused");
}

static void test_alignment(const scm_model *m, const double *Qs, const double *Rs)
{
    /* a permuted copy (students and teachers) has distance 0 */
    int sp[K7] = {3, 0, 6, 1, 5, 2, 4}, tp[K7] = {2, 5, 0, 6, 1, 4, 3};
    double Qp[K7 * K7], Rp[K7 * K7], Qc[K7 * K7], Rc[K7 * K7], Qc2[K7 * K7], Rc2[K7 * K7];
    for (int i = 0; i < K7; i++) {
        for (int j = 0; j < K7; j++)
            Qp[i * K7 + j] = Qs[sp[i] * K7 + sp[j]];
        for (int n = 0; n < K7; n++)
            Rp[i * K7 + n] = Rs[sp[i] * K7 + tp[n]];
    }
    CHECK(scm_basin_canonical(m, Qs, Rs, Qc, Rc, NULL, NULL) == SCM_OK, "canonical");
    CHECK(scm_basin_canonical(m, Qp, Rp, Qc2, Rc2, NULL, NULL) == SCM_OK, "canonical");
    CHECK(sqrt(scm_basin_dist2(m, Qc, Rc, Qc2, Rc2)) < 1e-7, "permuted copy: distance %g (round-off of the span defects)",
          sqrt(scm_basin_dist2(m, Qc, Rc, Qc2, Rc2)));
    /* the distance of a displaced state is the displacement */
    double Q[K7 * K7], R[K7 * K7];
    displaced(Rs, 1e-3, 3, Q, R);
    CHECK(scm_basin_canonical(m, Q, R, Qc2, Rc2, NULL, NULL) == SCM_OK, "canonical");
    CHECK_CLOSE(sqrt(scm_basin_dist2(m, Qc, Rc, Qc2, Rc2)), 1e-3, 1e-6, 0,
                "weight distance of a displaced state");
}

static void test_minimum(const scm_model *m, const double *Qs, const double *Rs, double eps_s)
{
    scm_basin_opts bo;
    scm_basin_opts_default(&bo);
    scm_basin_cert cert;
    scm_error err;
    CHECK(scm_basin_certify_point(m, Qs, Rs, &bo, &cert, &err) == SCM_OK, "%s", err.msg);
    CHECK(cert.ok && cert.mu > 0 && cert.radius > 0, "the k1 = 1 minimum is certified: %s",
          cert.why);
    /* the Hessian in flow units is (K + M) times that of scm_stability (d = K + M) */
    scm_stab_opts so;
    scm_stab_opts_default(&so);
    so.run_flow = 0;
    so.jacobian = 0;
    so.n_sigma = 1;
    so.sigma[0] = 1e-4;
    so.n_trials = 1;
    scm_stab_result sr;
    CHECK(scm_stab_analyse(m, Qs, Rs, &so, &sr, &err) == SCM_OK && sr.hessian_done, "%s",
          err.msg);
    CHECK_CLOSE(cert.mu, (double)(2 * K7) * sr.eval_small[0], 1e-6, 1e-12,
                "smallest Hessian eigenvalue, flow units");
    printf("k1 = 1 minimum at K = M = 7: loss %.10f, mu %.4g, lambda_max %.4g, radius %.3g "
           "(proved), |grad| %.3g\n",
           eps_s, cert.mu, cert.lam_max, cert.radius, cert.grad);
    /* the proved radius is the bound's: the Hessian moves by at most
     * (1 - curv_frac) mu on it, by more beyond; the point's residual is far
     * inside it */
    double Qin[K7 * K7];
    for (int k = 0; k < K7; k++)
        for (int l = 0; l < K7; l++) {
            Qin[k * K7 + l] = 0.0;
            for (int q = 0; q < K7; q++)
                Qin[k * K7 + l] += Rs[k * K7 + q] * Rs[l * K7 + q];
        }
    const double budget = (1.0 - bo.curv_frac) * cert.mu;
    CHECK(scm_basin_hessian_shift(m, Qin, cert.radius) <= budget * (1.0 + 1e-6) &&
              scm_basin_hessian_shift(m, Qin, 1.01 * cert.radius) > budget * (1.0 - 1e-6),
          "the proved radius is where the bound meets (1 - curv_frac) mu");
    CHECK(cert.grad < 0.25 * bo.curv_frac * cert.mu * cert.radius, "|grad| %g at the point",
          cert.grad);
    /* the sampled radius (proved = 0) is larger, and also refuses nothing here */
    scm_basin_opts bs = bo;
    bs.proved = 0;
    scm_basin_cert cs;
    CHECK(scm_basin_certify_point(m, Qs, Rs, &bs, &cs, &err) == SCM_OK && cs.ok &&
              cs.radius > cert.radius && cs.mu == cert.mu,
          "sampled radius %g against the proved %g: %s", cs.radius, cert.radius, cs.why);
    printf("k1 = 1 minimum at K = M = 7: sampled radius %.3g\n", cs.radius);

    /* States inside the radius: certified at run time, and the full
     * integration from them ends on the point. */
    double Qc[K7 * K7], Rc[K7 * K7], Qsc[K7 * K7], Rsc[K7 * K7];
    scm_basin_canonical(m, Qs, Rs, Qsc, Rsc, NULL, NULL);
    for (unsigned seed = 1; seed <= 3; seed++) {
        double Q[K7 * K7], R[K7 * K7];
        displaced(Rs, 0.8 * cert.radius, seed, Q, R);
        scm_basin_canonical(m, Q, R, Qc, Rc, NULL, NULL);
        int ok = 0;
        double dist;
        CHECK(scm_basin_check_state(m, Qsc, Rsc, &cert, Qc, Rc, bo.curv_frac, &ok, &dist, &err) ==
                  SCM_OK,
              "%s", err.msg);
        CHECK(ok && dist < cert.radius, "state %u at 0.8 radius certified (dist %g)", seed, dist);
        scm_traj_opts o;
        scm_traj_opts_default(&o);
        o.record = 0;
        scm_traj_result tr;
        CHECK(scm_traj_run(m, &scm_rule_gd, Q, R, &o, &tr, &err) == SCM_OK, "%s", err.msg);
        CHECK(tr.stop == SCM_STOP_FIXED_POINT, "full run from state %u converged (%s)", seed,
              scm_stop_reason_str(tr.stop));
        CHECK_CLOSE(tr.eps, eps_s, 1e-8, 1e-12, "the full run ends on the certified point");
        scm_traj_result_free(&tr);
        /* beyond the radius: no claim */
        displaced(Rs, 1.5 * cert.radius, seed, Q, R);
        scm_basin_canonical(m, Q, R, Qc, Rc, NULL, NULL);
        scm_basin_check_state(m, Qsc, Rsc, &cert, Qc, Rc, bo.curv_frac, &ok, &dist, &err);
        CHECK(!ok, "state %u at 1.5 radius not certified", seed);
    }
}

static void test_saddle(const scm_model *m, const double *Qs, const double *Rs)
{
    scm_basin_opts bo;
    scm_basin_opts_default(&bo);
    scm_basin_cert cert;
    scm_error err;
    CHECK(scm_basin_certify_point(m, Qs, Rs, &bo, &cert, &err) == SCM_OK, "%s", err.msg);
    CHECK(!cert.ok && cert.mu < 0 && cert.radius == 0.0, "a saddle is never certified: %s",
          cert.why);
    scm_basin_cert cs;
    bo.proved = 0;
    CHECK(scm_basin_certify_point(m, Qs, Rs, &bo, &cs, &err) == SCM_OK && !cs.ok,
          "nor with the sampled radius: %s", cs.why);
    bo.proved = 1;
    double Qsc[K7 * K7], Rsc[K7 * K7], Q[K7 * K7], R[K7 * K7], Qc[K7 * K7], Rc[K7 * K7];
    scm_basin_canonical(m, Qs, Rs, Qsc, Rsc, NULL, NULL);
    displaced(Rs, 1e-6, 5, Q, R);
    scm_basin_canonical(m, Q, R, Qc, Rc, NULL, NULL);
    int ok = 1;
    double dist;
    scm_basin_check_state(m, Qsc, Rsc, &cert, Qc, Rc, bo.curv_frac, &ok, &dist, &err);
    CHECK(!ok, "a state 1e-6 from a saddle is not certified");
}

/* The largest |eigenvalue| of the symmetric n x n A (overwritten). */
static double sym_norm(double *A, long n)
{
    gsl_matrix_view hv = gsl_matrix_view_array(A, (size_t)n, (size_t)n);
    gsl_vector *ev = gsl_vector_alloc((size_t)n);
    gsl_eigen_symm_workspace *w = gsl_eigen_symm_alloc((size_t)n);
    double out = -1.0;
    if (gsl_eigen_symm(&hv.matrix, ev, w) == GSL_SUCCESS) {
        out = 0.0;
        for (long i = 0; i < n; i++)
            out = fmax(out, fabs(gsl_vector_get(ev, (size_t)i)));
    }
    gsl_eigen_symm_free(w);
    gsl_vector_free(ev);
    return out;
}

/* H(u) - H(u*) in flow units (n x n, n = K d, symmetrised) from
 * scm_stab_hessian at two weight matrices (K x d, d = K + M); 0 where the
 * closed form does not evaluate (nearly parallel neurons). */
static int hess_diff(const scm_model *m, const double *W0, const double *W1, const double *Ws,
                     double *dH)
{
    const long d = m->K + m->M, n = (long)m->K * d;
    scm_flow *fl = scm_flow_alloc(m);
    double *H0 = malloc(sizeof(double) * (size_t)(n * n)), *H1 = malloc(sizeof(double) * (size_t)(n * n));
    scm_error err;
    int ok = scm_stab_hessian(fl, d, W0, Ws, H0, &err) == SCM_OK &&
             scm_stab_hessian(fl, d, W1, Ws, H1, &err) == SCM_OK;
    for (long i = 0; ok && i < n; i++)
        for (long j = 0; j <= i; j++)
            dH[i * n + j] = dH[j * n + i] =
                0.5 * (double)d * (H1[i * n + j] + H1[j * n + i] - H0[i * n + j] - H0[j * n + i]);
    free(H0);
    free(H1);
    scm_flow_free(fl);
    return ok;
}

/* The 2-norm of block (k, l) (d x d) of the symmetric dH: by the
 * eigenvalues of the block (k = l) or of [[0, B], [B^T, 0]] (+-sigma). */
static double block_norm(const double *dH, long n, long d, int k, int l)
{
    const long b = k == l ? d : 2 * d;
    double *A = calloc((size_t)(b * b), sizeof(double));
    for (long i = 0; i < d; i++)
        for (long j = 0; j < d; j++) {
            const double x = dH[(k * d + i) * n + l * d + j];
            if (k == l)
                A[i * b + j] = x;
            else
                A[i * b + d + j] = A[(d + j) * b + i] = x;
        }
    double out = sym_norm(A, b);
    free(A);
    return out;
}

/* scm_basin_hessian_shift against the closed-form Hessian (stability.c, a
 * different computation): at the point W0 (rows of norm sqrt(Q_kk)),
 * displacements u - u* of norm r, random, concentrated on one student, or
 * turning one student towards another (nearly parallel pairs), never move
 * the Hessian by more than the bound.  Returns the largest ratio seen. */
static double check_shift(const scm_model *m, const double *W0, const double *Ws, unsigned seed,
                          const char *what)
{
    const int K = m->K, M = m->M;
    const long d = K + M, n = (long)K * d;
    const double sd = sqrt((double)d);
    double Q0[64 * 64], R0[64 * 64];
    scm_weights_overlaps(m, d, W0, Ws, Q0, R0);
    double *W1 = malloc(sizeof(double) * (size_t)n), *U = malloc(sizeof(double) * (size_t)n);
    double *dH = malloc(sizeof(double) * (size_t)(n * n));
    double worst = 0.0, worst_ab = 0.0, worst_aa = 0.0;
    unsigned s = seed;
    int n_eval = 0;
    const double rs[4] = {1e-3, 1e-2, 0.05, 0.2};
    for (int ir = 0; ir < 4; ir++)
        for (int kind = 0; kind < 3; kind++)
            for (int rep = 0; rep < 4; rep++) {
                const double r = rs[ir];
                const double shift = scm_basin_hessian_shift(m, Q0, r);
                if (!isfinite(shift))
                    continue;
                double nu = 0.0;
                const int k = (int)((prand(&s) + 1.0) * 0.5 * K) % K, l = (k + 1) % K;
                for (long i = 0; i < n; i++) {
                    if (kind == 0)
                        U[i] = prand(&s);
                    else if (kind == 1)
                        U[i] = i / d == k ? prand(&s) : 0.0;
                    else /* student k towards student l (u space) */
                        U[i] = i / d == k ? (W0[l * d + i % d] - W0[k * d + i % d]) / sd : 0.0;
                    nu += U[i] * U[i];
                }
                nu = sqrt(nu);
                if (!(nu > 0.0))
                    continue;
                for (long i = 0; i < n; i++)
                    W1[i] = W0[i] + sd * r * U[i] / nu;
                if (!hess_diff(m, W0, W1, Ws, dH))
                    continue;
                if (K == 2 && m->vs[0] == 0.0) {
                    /* two students alone: each block against its own bound
                     * (basin.c's constants, restated): the ab block, and the
                     * aa block G(w_0; w_1) */
                    const double a0 = sqrt(Q0[0]) - r, a1 = sqrt(Q0[3]) - r, b1 = sqrt(Q0[3]) + r;
                    const double w = fabs(m->v[0] * m->v[1]);
                    const double bab = w * sqrt(3.0 / (2.0 * M_PI)) * (r / a0 + r / a1);
                    const double baa = w * ((4.0 + 2.0 / sqrt(3.0)) * b1 * r / a0 +
                                            (1.0 + 2.0 / sqrt(3.0)) * r) / (2.0 * M_PI * a0);
                    const double nab = block_norm(dH, n, d, 0, 1), naa = block_norm(dH, n, d, 0, 0);
                    worst_ab = fmax(worst_ab, nab / bab);
                    worst_aa = fmax(worst_aa, naa / baa);
                    CHECK(nab <= bab && naa <= baa,
                          "%s: r = %g kind %d: ab block %.4g (bound %.4g), aa block %.4g (bound %.4g)",
                          what, r, kind, nab, bab, naa, baa);
                }
                const double dh = sym_norm(dH, n);
                n_eval++;
                worst = fmax(worst, dh / shift);
                CHECK(dh <= shift, "%s: r = %g kind %d: |H(u) - H(u*)| = %.4g above the bound %.4g",
                      what, r, kind, dh, shift);
            }
    CHECK(n_eval >= 30, "%s: only %d displacements evaluated", what, n_eval);
    if (worst_ab > 0.0)
        printf("%s: largest block / its bound: ab %.3f, aa %.3f\n", what, worst_ab, worst_aa);
    free(W1);
    free(U);
    free(dH);
    return worst;
}

static void test_hessian_shift(const scm_model *m7, const double *Qs, const double *Rs)
{
    scm_error err;
    double worst;
    /* a student and a teacher alone (the aa block of a teacher term), and
     * two students alone (a teacher of zero weight): each bound by itself */
    {
        double vs0[1] = {0.0}, v2[2] = {1.0, -0.7};
        scm_model *m1 = scm_model_alloc(1, 1, &scm_act_relu, NULL, NULL, NULL, &err);
        scm_model *m2 = scm_model_alloc(2, 1, &scm_act_relu, NULL, v2, vs0, &err);
        CHECK(m1 && m2, "models: %s", err.msg);
        /* rows of W are sqrt(d) u: a student at angle 0.3, then 1e-3 rad from the teacher */
        const double ang[2] = {0.3, 1e-3};
        for (int a = 0; a < 2; a++) {
            double W[2], Ws[2] = {sqrt(2.0), 0.0};
            W[0] = sqrt(2.0) * 0.9 * cos(ang[a]);
            W[1] = sqrt(2.0) * 0.9 * sin(ang[a]);
            worst = check_shift(m1, W, Ws, 11u + (unsigned)a, "K = 1, M = 1");
            printf("K = 1, M = 1, angle %g: largest |dH| / bound %.3f\n", ang[a], worst);
        }
        for (int a = 0; a < 2; a++) {
            double W[6] = {0}, Ws[3] = {sqrt(3.0), 0.0, 0.0};
            W[0] = sqrt(3.0) * 1.1;
            W[1] = sqrt(3.0) * 0.2;
            W[3] = sqrt(3.0) * 0.8 * cos(ang[a]);
            W[4] = sqrt(3.0) * 0.8 * sin(ang[a]);
            W[5] = sqrt(3.0) * 0.3;
            worst = check_shift(m2, W, Ws, 21u + (unsigned)a, "K = 2, M = 1");
            printf("K = 2, M = 1 (v* = 0), angle %g: largest |dH| / bound %.3f\n", ang[a], worst);
        }
        scm_model_free(m1);
        scm_model_free(m2);
    }
    /* the k1 = 1 minimum at K = M = 7, and a random state */
    const long d = 2 * K7, n = (long)K7 * d;
    double *W = malloc(sizeof(double) * (size_t)n), *Ws = malloc(sizeof(double) * (size_t)(K7 * d));
    CHECK(scm_weights_realise(m7, Qs, Rs, d, W, Ws, &err) == SCM_OK, "%s", err.msg);
    worst = check_shift(m7, W, Ws, 31u, "k1 = 1 minimum, K = M = 7");
    printf("k1 = 1 minimum at K = M = 7: largest |dH| / bound %.3f\n", worst);
    unsigned s = 77u;
    for (long i = 0; i < n; i++)
        W[i] = prand(&s) * sqrt((double)d) * 0.6;
    worst = check_shift(m7, W, Ws, 41u, "random state, K = M = 7");
    printf("random state at K = M = 7: largest |dH| / bound %.3f\n", worst);
    free(W);
    free(Ws);
}

/* Sweeps at K = M = 7 with the family list as points: the early stop keeps
 * every class; a tiny t_max tags each run with its nearest point. */
static void test_sweep_runs(const scm_family *fam)
{
    scm_sweep_families f = {0, NULL, NULL};
    f.f = calloc((size_t)fam->n, sizeof *f.f);
    for (int i = 0; i < fam->n; i++) {
        scm_sweep_family *e = &f.f[i];
        snprintf(e->name, sizeof e->name, "k1");
        e->k1 = fam->pt[i].n_anti;
        e->eps = fam->pt[i].eps;
        e->K = e->M = K7;
        e->Q = malloc(sizeof(double) * K7 * K7);
        e->R = malloc(sizeof(double) * K7 * K7);
        memcpy(e->Q, fam->pt[i].Q, sizeof(double) * K7 * K7);
        memcpy(e->R, fam->pt[i].R, sizeof(double) * K7 * K7);
        snprintf(e->stability, sizeof e->stability, "unknown");
    }
    f.n = fam->n;
    scm_config *c = NULL;
    scm_error err;
    const char *text = "{\"model\": {\"K\": 7, \"M\": 7}, \"init\": {\"type\": \"random\", "
                       "\"d\": 500}, \"integrator\": {\"loose_until\": 1e-6, \"eps_stop\": "
                       "1e-10, \"max_steps\": 100000}}";
    CHECK(scm_config_parse(text, "test", NULL, 0, &c, &err) == SCM_OK, "%s", err.msg);
    scm_model *m = scm_config_model(c, &err);
    CHECK(scm_sweep_families_prepare(&f, m, &err) == SCM_OK, "%s", err.msg);
    scm_sweep_opts o, oc;
    scm_sweep_opts_default(&o);
    oc = o;
    oc.certify = 1;
    int ncert = 0, nsame = 0, n = 6;
    for (long i = 0; i < n; i++) {
        scm_sweep_record a, b;
        CHECK(scm_sweep_run_one(c, m, 3, i, &f, &o, &a, &err) == SCM_OK, "%s", err.msg);
        CHECK(scm_sweep_run_one(c, m, 3, i, &f, &oc, &b, &err) == SCM_OK, "%s", err.msg);
        ncert += b.stop == SCM_STOP_CERTIFIED;
        nsame += strcmp(a.cls, b.cls) == 0;
        CHECK(strcmp(a.cls, b.cls) == 0, "run %ld: %s without, %s with the early stop", i, a.cls,
              b.cls);
        CHECK(b.steps <= a.steps, "run %ld: %ld steps with the early stop, %ld without", i,
              b.steps, a.steps);
        /* the record survives its JSON */
        char *js = scm_sweep_record_json(&b);
        scm_sweep_record p;
        CHECK(js && scm_sweep_record_parse(js, &p, &err) == SCM_OK, "parse: %s", err.msg);
        CHECK(p.stop == b.stop && p.cert_point == b.cert_point &&
                  (b.stop != SCM_STOP_CERTIFIED || p.cert_loss == b.cert_loss),
              "record round trip: %s", js);
        free(js);
    }
    printf("K = M = 7: %d of %d runs certified, %d of %d in the same class\n", ncert, n, nsame, n);
    CHECK(ncert >= n / 2, "most runs are certified (%d of %d)", ncert, n);
    /* another rule: the arguments do not hold, the early stop does nothing */
    c->rule = &scm_rule_normalised;
    {
        scm_sweep_record b;
        CHECK(scm_sweep_run_one(c, m, 3, 0, &f, &oc, &b, &err) == SCM_OK, "%s", err.msg);
        CHECK(b.stop != SCM_STOP_CERTIFIED, "rule normalised: not certified (%s)",
              scm_stop_reason_str(b.stop));
    }
    c->rule = &scm_rule_gd;

    /* tagging: t_max 2 leaves every run unconverged, next to a listed point */
    c->traj.t_max = 2.0;
    c->traj.t_first = 1.0;
    scm_sweep_summary *s = scm_sweep_summary_alloc(3);
    for (long i = 0; i < 3; i++) {
        scm_sweep_record r;
        CHECK(scm_sweep_run_one(c, m, 3, i, &f, &oc, &r, &err) == SCM_OK, "%s", err.msg);
        CHECK(!r.converged && r.near >= 0 && r.near < f.n && isfinite(r.near_dist) &&
                  r.near_loss == f.f[r.near].eps && strcmp(r.near_stability, "unknown") == 0,
              "run %ld tagged: near %d dist %g", i, r.near, r.near_dist);
        /* it is the nearest listed point */
        double Qc[K7 * K7], Rc[K7 * K7];
        char *js = scm_sweep_record_json(&r);
        scm_sweep_record p;
        CHECK(js && scm_sweep_record_parse(js, &p, &err) == SCM_OK && p.near == r.near &&
                  strcmp(p.near_family, r.near_family) == 0,
              "tag round trip: %s", js ? js : "");
        free(js);
        scm_sweep_summary_add(s, &r);
        (void)Qc;
        (void)Rc;
    }
    cJSON *sj = scm_sweep_summary_json(s);
    const cJSON *near = cJSON_GetObjectItemCaseSensitive(sj, "not_converged_near");
    long tot = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, near)
    tot += (long)cJSON_GetObjectItemCaseSensitive(g, "count")->valuedouble;
    CHECK(tot == 3, "the summary groups the 3 unconverged runs by point (%ld)", tot);
    cJSON_Delete(sj);
    scm_sweep_summary_free(s);
    scm_model_free(m);
    scm_config_free(c);
    scm_sweep_families_free(&f);
}

int main(void)
{
    gsl_set_error_handler_off();
    int na;
    scm_ansatz **a = builtin(&na);
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    scm_error err;
    scm_family fam;
    CHECK(scm_family_find(K7, K7, 1, a, na, &scm_act_relu, &fo, &fam, &err) == SCM_OK, "%s",
          err.msg);
    scm_model *m = scm_model_alloc(K7, K7, &scm_act_relu, NULL, NULL, NULL, &err);
    int imin = -1, isad = -1;
    CHECK(scm_family_default(&fam, &scm_act_relu, &imin, &err) == SCM_OK && imin >= 0,
          "a k1 = 1 minimum at K = M = 7");
    for (int i = 0; i < fam.n && isad < 0; i++) {
        scm_family_check_full(&fam, i, &scm_act_relu, &err);
        double z = 0.0;
        for (int k = 0; k < K7; k++) {
            z += fam.pt[i].Q[k * K7 + k];
            for (int n = 0; n < K7; n++)
                z -= fam.pt[i].R[k * K7 + n] * fam.pt[i].R[k * K7 + n];
        }
        if ((fam.pt[i].cls == SCM_FAM_SADDLE || fam.pt[i].cls == SCM_FAM_SADDLE_BLOCK) &&
            fabs(z) < 1e-10)
            isad = i;
    }
    CHECK(isad >= 0, "a saddle in the teacher span among the k1 = 1 points");
    if (imin >= 0) {
        CHECK_CLOSE(fam.pt[imin].eps, 0.02320, 0, 5e-6, "k1 = 1 loss vs MATH.md's 0.02320");
        test_hook(m, fam.pt[imin].R);
        test_alignment(m, fam.pt[imin].Q, fam.pt[imin].R);
        test_hessian_shift(m, fam.pt[imin].Q, fam.pt[imin].R);
        test_minimum(m, fam.pt[imin].Q, fam.pt[imin].R, fam.pt[imin].eps);
    }
    if (isad >= 0)
        test_saddle(m, fam.pt[isad].Q, fam.pt[isad].R);
    scm_family_free(&fam);
    /* the sweep: every point of k1 = 0..2 listed */
    scm_family all = {0};
    for (int k1 = 0; k1 <= 2; k1++) {
        scm_family f2;
        if (scm_family_find(K7, K7, k1, a, na, &scm_act_relu, &fo, &f2, &err) != SCM_OK)
            continue;
        scm_fam_point *np = realloc(all.pt, sizeof *np * (size_t)(all.n + f2.n));
        if (!np)
            break;
        all.pt = np;
        for (int i = 0; i < f2.n; i++)
            all.pt[all.n++] = f2.pt[i];
        f2.n = 0; /* the points moved */
        free(f2.pt);
        f2.pt = NULL;
        scm_family_free(&f2);
    }
    all.K = all.M = K7;
    test_sweep_runs(&all);
    scm_family_free(&all);
    scm_model_free(m);
    for (int i = 0; i < na; i++)
        scm_ansatz_free(a[i]);
    return TEST_SUMMARY();
}
