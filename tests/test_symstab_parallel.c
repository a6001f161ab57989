/* test_symstab_parallel.c: the weight-space Hessian where ReLU neurons are
 * parallel (issue 30's defect: the (Q, R) second derivatives diverge
 * there, the weight-space Hessian does not; docs/symmetric-stability.md
 * section 6), three ways:
 *  - the pair kernel along an angle t: f - c/2 against |u||v| t^3 / (6 pi)
 *    near t = 0 and f against |u||v| s^3 / (6 pi), s = pi - t, near t = pi
 *    (the jet the limit rests on);
 *  - the weight-space Hessian of one pair term by central differences of
 *    its closed-form gradient at exactly parallel and anti-parallel
 *    vectors: that of u.v / 2, resp. 0;
 *  - every row of data/plateau_table.csv with K <= 8 whose block Jacobian
 *    is not finite (parallel students at K = M + 2, students parallel to
 *    a teacher, the k1_one rows at K = M = 3): scm_stab_symmetric with the
 *    parallel limit against the dense Hessian by finite differences of
 *    the weight-space gradient (scm_stab_hessian_fd), every eigenvalue
 *    expanded by multiplicity, and the row's class against the verdict
 *    (scm_symstab_verdict). */
#include <gsl/gsl_errno.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/plateau_row.h"
#include "scm/hessian.h"
#include "scm/symstab.h"
#include "scm/weights.h"
#include "testutil.h"

/* ---- the jet of the pair kernel ---- */

static void test_jet(void)
{
    const double nu = 1.3, nv = 0.7, a = nu * nu, b = nv * nv;
    const double ts[3] = {0.2, 0.05, 0.01};
    printf("pair kernel near parallel (|u| = 1.3, |v| = 0.7):\n");
    for (int i = 0; i < 3; i++) {
        double t = ts[i];
        scm_pair p, q;
        CHECK(scm_act_relu.pair(a, b, nu * nv * cos(t), &p) == SCM_OK, "pair at t = %g", t);
        CHECK(scm_act_relu.pair(a, b, -nu * nv * cos(t), &q) == SCM_OK, "pair at pi - %g", t);
        /* f - c/2 = |u||v| (sin t - t cos t) / (2 pi) = |u||v| (t^3/3 - t^5/30 ...) / (2 pi) */
        double r0 = (p.f - 0.5 * nu * nv * cos(t)) / (nu * nv * t * t * t / (6.0 * M_PI));
        double r1 = q.f / (nu * nv * t * t * t / (6.0 * M_PI));
        printf("  t = %-5g (f - c/2) / (|u||v| t^3/(6 pi)) = %.9f; at pi - t: "
               "f / (|u||v| s^3/(6 pi)) = %.9f\n",
               t, r0, r1);
        CHECK(fabs(r0 - 1.0) <= 0.11 * t * t, "t = %g: ratio %.12g", t, r0);
        CHECK(fabs(r1 - 1.0) <= 0.11 * t * t, "pi - t, t = %g: ratio %.12g", t, r1);
    }
}

/* ---- the Hessian of one pair term in weight space ---- */

/* The gradient of F(u, v) = f(|u|^2, |v|^2, u.v) (n = 3 each) from the
 * kernel's first derivatives, finite at parallel vectors. */
static void pair_grad(const double *w, double *g)
{
    const double *u = w, *v = w + 3;
    double a = 0, b = 0, c = 0;
    for (int i = 0; i < 3; i++) {
        a += u[i] * u[i];
        b += v[i] * v[i];
        c += u[i] * v[i];
    }
    scm_pair p;
    scm_act_relu.pair(a, b, c, &p);
    for (int i = 0; i < 3; i++) {
        g[i] = 2.0 * p.fa * u[i] + p.fc * v[i];
        g[3 + i] = 2.0 * p.fb * v[i] + p.fc * u[i];
    }
}

/* The loss is C^2 but not C^3 there: the t^3 term makes the gradient's
 * error term |delta| delta, odd, so central differences of step h miss
 * the Hessian by O(h), not O(h^2).  Both steps must show that. */
static void test_pair_hessian(void)
{
    printf("one pair term, weight-space Hessian by central differences of the gradient:\n");
    for (int anti = 0; anti <= 1; anti++) {
        double dh[2];
        for (int k = 0; k < 2; k++) {
            /* u = 1.3 e, v = +-0.7 e with e a generic unit vector */
            double e[3] = {0.48, -0.6, 0.64}, w[6], H[36], gp[6], gm[6], diff = 0.0;
            double h = k ? 1e-5 : 1e-4;
            for (int i = 0; i < 3; i++) {
                w[i] = 1.3 * e[i];
                w[3 + i] = (anti ? -0.7 : 0.7) * e[i];
            }
            for (int j = 0; j < 6; j++) {
                double s = w[j];
                w[j] = s + h;
                pair_grad(w, gp);
                w[j] = s - h;
                pair_grad(w, gm);
                w[j] = s;
                for (int i = 0; i < 6; i++)
                    H[i * 6 + j] = (gp[i] - gm[i]) / (2.0 * h);
            }
            /* the limit: the Hessian of u.v / 2 ([[0, I/2], [I/2, 0]]), or 0 */
            for (int i = 0; i < 6; i++)
                for (int j = 0; j < 6; j++) {
                    double want = !anti && (i % 3 == j % 3) && (i / 3 != j / 3) ? 0.5 : 0.0;
                    diff = fmax(diff, fabs(H[i * 6 + j] - want));
                }
            dh[k] = diff;
            printf("  %-13s h = %g: max |H_fd - H_limit| = %.3e\n",
                   anti ? "anti-parallel" : "parallel", h, diff);
            CHECK(diff <= 0.5 * h, "%s, h = %g: the finite-difference Hessian differs from the "
                  "limit by %.3g", anti ? "anti-parallel" : "parallel", h, diff);
        }
        CHECK(dh[0] / dh[1] > 5.0 && dh[0] / dh[1] < 20.0,
              "%s: the error falls by %.3g from h = 1e-4 to 1e-5, not like h",
              anti ? "anti-parallel" : "parallel", dh[0] / dh[1]);
    }
}

/* ---- table rows against the dense finite-difference Hessian ---- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The sorted spectrum of the Hessian by finite differences of the
 * weight-space gradient at the point x of in, realised in d. */
static int fd_spectrum(const scm_ansatz_inst *in, const double *x, long d, double *eval)
{
    int K = (int)scm_ansatz_inst_K(in), M = (int)scm_ansatz_inst_M(in);
    long Kd = (long)K * d;
    scm_error e;
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, &e);
    scm_flow *fl = m ? scm_flow_alloc(m) : NULL;
    double *Q = malloc(sizeof *Q * (size_t)(K * K)), *R = malloc(sizeof *R * (size_t)(K * M));
    double *W = malloc(sizeof *W * (size_t)Kd), *Ws = malloc(sizeof *Ws * (size_t)(M * d));
    double *H = malloc(sizeof *H * (size_t)(Kd * Kd));
    scm_stab_counts c;
    int ok = fl && Q && R && W && Ws && H && scm_ansatz_to_full(in, x, Q, R) == SCM_OK &&
             scm_weights_realise(m, Q, R, d, W, Ws, &e) == SCM_OK &&
             scm_stab_hessian_fd(fl, d, W, Ws, 0.0, H, &e) == SCM_OK &&
             scm_stab_spectrum(H, (int)Kd, 1e-9, eval, &c) == SCM_OK;
    if (!ok)
        fprintf(stderr, "finite-difference Hessian failed: %s\n", e.msg);
    else
        qsort(eval, (size_t)Kd, sizeof *eval, cmp_d);
    free(Q);
    free(R);
    free(W);
    free(Ws);
    free(H);
    scm_flow_free(fl);
    scm_model_free(m);
    return ok;
}

/* The point of a table row (its ansatz, k1 and scalars). */
static scm_ansatz_inst *row_inst(pt_row *r, double *x, int nmax)
{
    scm_ansatz *a = pt_load_builtin(r->ansatz);
    scm_error e;
    scm_ansatz_inst *in = a ? scm_ansatz_instantiate(a, r->K, r->M, r->instance, &e) : NULL;
    scm_ansatz_free(a);
    int got = 0, n = in ? scm_ansatz_inst_nscalars(in) : 0;
    for (char *tok = strtok(r->scalars, ";"); in && tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        int c = eq ? (*eq = '\0', scm_ansatz_inst_find(in, tok)) : -1;
        if (c >= 0 && c < nmax) {
            x[c] = strtod(eq + 1, NULL);
            got++;
        }
    }
    if (in && got != n) {
        scm_ansatz_inst_free(in);
        in = NULL;
    }
    return in;
}

typedef struct {
    int rows, par_students, par_teacher, out_of_span, saddles, degenerate;
    double worst, min_margin;
} row_stats;

/* One row: symmetric (parallel limit) against finite differences. */
static void check_row(pt_row *r, row_stats *s)
{
    double x[256];
    char label[256];
    snprintf(label, sizeof label, "K=%d M=%d n_anti=%g loss %s (%s k1=%d)", r->K, r->M,
             r->n_anti, r->loss_s, r->ansatz, r->instance);
    scm_ansatz_inst *in = row_inst(r, x, 256);
    CHECK(in != NULL, "%s: cannot rebuild the point", label);
    if (!in)
        return;
    scm_symstab_result h;
    scm_error e;
    scm_status st = scm_stab_symmetric(in, &scm_act_relu, x, NULL, &h, &e);
    /* (h.parallel may be 0: a pair just outside the limit's threshold is
     * evaluated in closed form, with large second derivatives) */
    CHECK(st == SCM_OK, "%s: %s", label, e.msg);
    long Kd = (long)r->K * h.d;
    double *sym = malloc(sizeof *sym * (size_t)Kd), *fd = malloc(sizeof *fd * (size_t)Kd);
    if (st == SCM_OK && scm_symstab_expand(&h, sym, Kd) == SCM_OK &&
        fd_spectrum(in, x, h.d, fd)) {
        double vmax = 0.0, diff = 0.0;
        for (long i = 0; i < Kd; i++) {
            vmax = fmax(vmax, fabs(fd[i]));
            diff = fmax(diff, fabs(fd[i] - sym[i]));
        }
        /* the step error of the finite differences, ~1e-5 relative */
        CHECK(diff <= 1e-4 * vmax, "%s: max |fd - symmetric| / max |lambda| = %.3g", label,
              diff / vmax);
        s->worst = fmax(s->worst, diff / vmax);
        const char *v = scm_symstab_verdict(&h);
        CHECK(!strcmp(v, r->cls), "%s: class %s in the table, %s by the Hessian", label, r->cls,
              v);
        /* a saddle by a margin the finite differences resolve too */
        if (!strcmp(v, "saddle")) {
            s->min_margin = fmin(s->min_margin, -sym[0] / vmax);
            if (-sym[0] > 1e-3 * vmax)
                CHECK(fd[0] < -1e-3 * vmax, "%s: smallest eigenvalue %.3g (symmetric), %.3g "
                      "(finite differences)", label, sym[0], fd[0]);
        }
        s->rows++;
        s->par_students += h.parallel_students;
        s->par_teacher += h.parallel && !h.parallel_students;
        s->out_of_span += h.out_of_span;
        s->saddles += !strcmp(v, "saddle");
        s->degenerate += !strcmp(v, "degenerate");
    } else {
        CHECK(0, "%s: no comparison", label);
    }
    free(sym);
    free(fd);
    scm_symstab_result_free(&h);
    scm_ansatz_inst_free(in);
}

static void test_table_rows(void)
{
    FILE *f = fopen("../data/plateau_table.csv", "r");
    if (!f)
        f = fopen("data/plateau_table.csv", "r");
    CHECK(f != NULL, "data/plateau_table.csv not found");
    if (!f)
        return;
    static char line[8192];
    row_stats s = {0, 0, 0, 0, 0, 0, 0.0, INFINITY};
    CHECK(fgets(line, sizeof line, f) != NULL, "header");
    while (fgets(line, sizeof line, f)) {
        pt_row r;
        if (!pt_row_parse(line, &r) || r.K > 8 || isfinite(r.block_eig) ||
            !strcmp(r.cls, "global_min"))
            continue;
        check_row(&r, &s);
    }
    fclose(f);
    printf("table rows with K <= 8 and a non-finite block Jacobian: %d (%d with parallel "
           "students, %d with students parallel only to teachers, %d outside the span): %d "
           "saddles (smallest margin %.2e of max |lambda|), %d degenerate; largest difference "
           "to the finite-difference Hessian %.2e of max |lambda|\n",
           s.rows, s.par_students, s.par_teacher, s.out_of_span, s.saddles, s.min_margin,
           s.degenerate, s.worst);
    CHECK(s.rows >= 40, "only %d rows compared", s.rows);
    CHECK(s.par_students > 0 && s.par_teacher > 0 && s.out_of_span > 0,
          "want parallel students, students parallel to teachers and points outside the span");
}

int main(void)
{
    gsl_set_error_handler_off();
    test_jet();
    test_pair_hessian();
    test_table_rows();
    return TEST_SUMMARY();
}
