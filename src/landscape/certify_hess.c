/* certify_hess.c: strictness of a certified critical point (certify.h,
 * docs/certify.md section 5).
 *
 * The weight-space Hessian at a block-symmetric point in the teacher span
 * splits into isotypic blocks (symstab.c, docs/symmetric-stability.md).
 * Every block is the Hessian restricted to the vectors fixed by a Young
 * subgroup (a refinement of the groups into cells), less the coarser
 * patterns.  The coarser patterns carry Hessian eigenvalues too, so the
 * Hessian on the WHOLE pattern space of a refinement has as eigenvalues
 * the union of those of the blocks it contains, and proving it positive
 * definite on the pattern space of every refinement symstab.c uses proves
 * every block positive definite, without the floating-point null spaces
 * symstab.c needs to split them.  Here that operator is assembled in
 * balls (Arb) over the whole box of the existence proof: the cells of
 * symstab_cells.c (their layout only), the kernels' second derivatives
 * from the closed forms of certify_ball.c, and symstab_cells.c's block
 * algebra H X = S X + dS R + dB redone in balls.  In the orthonormal basis
 * of normalised class indicators (weights: the class sizes, exact
 * integers) it is a symmetric matrix Hs at the true zero, where
 * Q = R R^T was proved; its lower triangle (intersected with the upper
 * one) encloses that matrix.
 *
 * Per pattern space: a floating-point eigen-decomposition of the
 * midpoints gives lambda_min and its vector v.  If lambda_min > 0, a ball
 * Cholesky of Hs - t I with t slightly below lambda_min (then t =
 * lambda_min / 2, / 8) proves every eigenvalue > t.  If lambda_min < 0,
 * the Rayleigh quotient v^T Hs v / v^T v in balls with upper bound < 0
 * proves a negative eigenvalue (a saddle).  The same for the complement of
 * the teacher span, where the Hessian is S (x) I_(d - M), on the student
 * cells. */
#include <arb.h>
#include <arb_mat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/certify_internal.h"
#include "landscape/symstab_internal.h"

/* A block d I + o (J - I) (or c J) in balls. */
typedef struct {
    arb_t d, o;
} hb;

typedef struct {
    const sym_cells *c;
    int ns, nt, kind;
    slong prec;
    double mutate, mutate_d2;
    hb *Q, *R, *S, *X, *dQ, *dS, *P, *HX;
    scm_cert_pair2 *pq, *prd, *pro;
    arb_ptr h1, h2;
    arb_t t, u;
    double sin2_min;
    char why[200];
} hcell;

static hb *hb_new(int n)
{
    hb *v = malloc(sizeof *v * (size_t)(n + 1));
    for (int i = 0; v && i <= n; i++) {
        arb_init(v[i].d);
        arb_init(v[i].o);
    }
    return v;
}

static void hb_free(hb *v, int n)
{
    for (int i = 0; v && i <= n; i++) {
        arb_clear(v[i].d);
        arb_clear(v[i].o);
    }
    free(v);
}

static scm_cert_pair2 *p2_new(int n)
{
    scm_cert_pair2 *v = malloc(sizeof *v * (size_t)(n + 1));
    for (int i = 0; v && i <= n; i++)
        scm_cert_pair2_init(&v[i]);
    return v;
}

static void p2_free(scm_cert_pair2 *v, int n)
{
    for (int i = 0; v && i <= n; i++)
        scm_cert_pair2_clear(&v[i]);
    free(v);
}

static void hcell_clear(hcell *h)
{
    int ss = h->ns * h->ns, st = h->ns * h->nt;
    hb_free(h->Q, ss);
    hb_free(h->S, ss);
    hb_free(h->dQ, ss);
    hb_free(h->dS, ss);
    hb_free(h->P, ss);
    hb_free(h->R, st);
    hb_free(h->X, st);
    hb_free(h->HX, st);
    p2_free(h->pq, ss);
    p2_free(h->prd, st);
    p2_free(h->pro, st);
    _arb_vec_clear(h->h1, h->ns + 1);
    _arb_vec_clear(h->h2, h->ns + 1);
    arb_clear(h->t);
    arb_clear(h->u);
}

static int hcell_alloc(hcell *h)
{
    int ss = h->ns * h->ns, st = h->ns * h->nt;
    h->Q = hb_new(ss);
    h->S = hb_new(ss);
    h->dQ = hb_new(ss);
    h->dS = hb_new(ss);
    h->P = hb_new(ss);
    h->R = hb_new(st);
    h->X = hb_new(st);
    h->HX = hb_new(st);
    h->pq = p2_new(ss);
    h->prd = p2_new(st);
    h->pro = p2_new(st);
    h->h1 = _arb_vec_init(h->ns + 1);
    h->h2 = _arb_vec_init(h->ns + 1);
    arb_init(h->t);
    arb_init(h->u);
    return h->Q && h->S && h->dQ && h->dS && h->P && h->R && h->X && h->HX && h->pq && h->prd &&
           h->pro;
}

/* z = v +- r */
static void ball_box(arb_t z, double v, double r)
{
    arb_set_d(z, v);
    if (r > 0.0)
        mag_set_d(arb_radref(z), r);
}

/* acc += X Y summed over a cell of size n (blockflow.h's block algebra). */
static void hb_fma(hcell *h, hb *acc, const hb *X, const hb *Y, double n)
{
    arb_mul(h->t, X->d, Y->d, h->prec);
    arb_add(acc->d, acc->d, h->t, h->prec);
    arb_mul(h->t, X->o, Y->o, h->prec);
    arb_mul_si(h->u, h->t, (slong)(n - 1.0), h->prec);
    arb_add(acc->d, acc->d, h->u, h->prec);
    arb_mul_si(h->u, h->t, (slong)(n - 2.0), h->prec);
    arb_add(acc->o, acc->o, h->u, h->prec);
    arb_mul(h->t, X->d, Y->o, h->prec);
    arb_add(acc->o, acc->o, h->t, h->prec);
    arb_mul(h->t, X->o, Y->d, h->prec);
    arb_add(acc->o, acc->o, h->t, h->prec);
}

/* One kernel with second derivatives; mutate_d2 (test only) scales f_cc. */
static scm_status kern(hcell *h, const arb_t a, const arb_t b, const arb_t cv, scm_cert_pair2 *p,
                       const char *what)
{
    scm_status st = scm_cert_kernel2(h->kind, a, b, cv, h->prec, h->mutate, p, &h->sin2_min);
    if (st) {
        snprintf(h->why, sizeof h->why,
                 st == SCM_ESINGULAR ? "the angle of %s is not provably away from 0 and pi over "
                                       "the box (the Hessian's kernel is not smooth there)"
                                     : "the kernel of %s is undefined over the box",
                 what);
        return st;
    }
    if (h->mutate_d2 != 0.0) {
        arb_set_d(h->t, 1.0 + h->mutate_d2);
        arb_mul(p->cc, p->cc, h->t, h->prec);
    }
    return SCM_OK;
}

/* Kernels of every class, and S (symstab_cells.c's cells_kernels). */
static scm_status hcell_kernels(hcell *h, const char (*uname)[72])
{
    const sym_cells *c = h->c;
    int ns = h->ns, nt = h->nt;
    arb_t one;
    arb_init(one);
    arb_one(one);
    scm_status st = SCM_OK;
    char what[200];
    for (int a = 0; a < ns && !st; a++) {
        arb_srcptr qa = h->Q[a * ns + a].d;
        if ((st = scm_cert_self2(h->kind, qa, h->prec, h->h1 + a, h->h2 + a))) {
            snprintf(h->why, sizeof h->why, "a student of '%s' has a norm not provably positive",
                     uname[c->s_unit[a]]);
            break;
        }
        for (int b = 0; b < ns && !st; b++) {
            if (a == b && c->s_n[a] < 1.5)
                continue;
            snprintf(what, sizeof what, "students of '%s' and '%s'", uname[c->s_unit[a]],
                     uname[c->s_unit[b]]);
            st = kern(h, qa, h->Q[b * ns + b].d, h->Q[a * ns + b].o, &h->pq[a * ns + b], what);
        }
        for (int t = 0; t < nt && !st; t++) {
            int k = a * nt + t;
            snprintf(what, sizeof what, "a student of '%s' and a teacher of '%s'",
                     uname[c->s_unit[a]], uname[c->t_unit[t]]);
            st = kern(h, qa, one, h->R[k].d, &h->prd[k], what);
            if (!st && c->sp[a] == t && c->s_n[a] > 1.5)
                st = kern(h, qa, one, h->R[k].o, &h->pro[k], what);
        }
    }
    arb_clear(one);
    if (st)
        return st;
    /* S_kl = f_c off the diagonal; S_kk = h' + 2 sum_l f_a - 2 sum_m f_a */
    for (int a = 0; a < ns; a++) {
        double na = c->s_n[a];
        hb *Sa = &h->S[a * ns + a];
        arb_set(Sa->d, h->h1 + a);
        for (int b = 0; b < ns; b++) {
            double mult = a == b ? na - 1.0 : c->s_n[b];
            if (mult > 0.5) {
                arb_mul_si(h->t, h->pq[a * ns + b].fa, 2 * (slong)mult, h->prec);
                arb_add(Sa->d, Sa->d, h->t, h->prec);
            }
            if (a != b) {
                arb_set(h->S[a * ns + b].d, h->pq[a * ns + b].fc);
                arb_set(h->S[a * ns + b].o, h->pq[a * ns + b].fc);
            }
        }
        for (int t = 0; t < nt; t++) {
            int k = a * nt + t;
            slong m = c->sp[a] == t ? 1 : (slong)c->t_n[t];
            arb_mul_si(h->t, h->prd[k].fa, 2 * m, h->prec);
            arb_sub(Sa->d, Sa->d, h->t, h->prec);
            if (c->sp[a] == t && na > 1.5) {
                arb_mul_si(h->t, h->pro[k].fa, 2 * (slong)(c->t_n[t] - 1.0), h->prec);
                arb_sub(Sa->d, Sa->d, h->t, h->prec);
            }
        }
        if (na > 1.5)
            arb_set(Sa->o, h->pq[a * ns + a].fc);
        else
            arb_zero(Sa->o);
    }
    return SCM_OK;
}

/* acc += s (p x + q y) */
static void lin2(hcell *h, arb_t acc, const arb_t p, const arb_t x, const arb_t q, const arb_t y,
                 slong s)
{
    arb_mul(h->t, p, x, h->prec);
    arb_addmul(h->t, q, y, h->prec);
    arb_mul_si(h->t, h->t, s, h->prec);
    arb_add(acc, acc, h->t, h->prec);
}

/* dS along (dQ, dR = X) (symstab_cells.c's cells_dS). */
static void hcell_dS(hcell *h)
{
    const sym_cells *c = h->c;
    int ns = h->ns, nt = h->nt;
    arb_t diag, off;
    arb_init(diag);
    arb_init(off);
    for (int a = 0; a < ns; a++) {
        arb_srcptr dqa = h->dQ[a * ns + a].d;
        arb_mul(diag, h->h2 + a, dqa, h->prec);
        for (int b = 0; b < ns; b++) {
            double mult = a == b ? c->s_n[a] - 1.0 : c->s_n[b];
            if (!(mult > 0.5))
                continue;
            const scm_cert_pair2 *q = &h->pq[a * ns + b];
            arb_srcptr dqb = h->dQ[b * ns + b].d, dqab = h->dQ[a * ns + b].o;
            arb_zero(off);
            lin2(h, off, q->ac, dqa, q->bc, dqb, 1);
            arb_addmul(off, q->cc, dqab, h->prec);
            lin2(h, diag, q->aa, dqa, q->ab, dqb, 2 * (slong)mult);
            arb_mul(h->t, q->ac, dqab, h->prec);
            arb_mul_si(h->t, h->t, 2 * (slong)mult, h->prec);
            arb_add(diag, diag, h->t, h->prec);
            if (a != b) {
                arb_set(h->dS[a * ns + b].d, off);
                arb_set(h->dS[a * ns + b].o, off);
            } else
                arb_set(h->dS[a * ns + a].o, off);
        }
        for (int t = 0; t < nt; t++) {
            int k = a * nt + t;
            if (c->sp[a] == t) {
                lin2(h, diag, h->prd[k].aa, dqa, h->prd[k].ac, h->X[k].d, -2);
                if (c->s_n[a] > 1.5)
                    lin2(h, diag, h->pro[k].aa, dqa, h->pro[k].ac, h->X[k].o,
                         -2 * (slong)(c->t_n[t] - 1.0));
            } else {
                lin2(h, diag, h->prd[k].aa, dqa, h->prd[k].ac, h->X[k].d, -2 * (slong)c->t_n[t]);
            }
        }
        arb_set(h->dS[a * ns + a].d, diag);
        if (c->s_n[a] < 1.5)
            arb_zero(h->dS[a * ns + a].o);
    }
    arb_clear(diag);
    arb_clear(off);
}

/* HX = S X + dS R + dB with dQ = X R^T + R X^T, dR = X
 * (symstab_cells.c's sym_cells_apply and cells_core). */
static void hcell_apply(hcell *h)
{
    const sym_cells *c = h->c;
    int ns = h->ns, nt = h->nt;
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < ns; b++) {
            hb *acc = &h->P[a * ns + b];
            arb_zero(acc->d);
            arb_zero(acc->o);
            for (int t = 0; t < nt; t++)
                hb_fma(h, acc, &h->X[a * nt + t], &h->R[b * nt + t], c->t_n[t]);
        }
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < ns; b++) {
            arb_add(h->dQ[a * ns + b].d, h->P[a * ns + b].d, h->P[b * ns + a].d, h->prec);
            arb_add(h->dQ[a * ns + b].o, h->P[a * ns + b].o, h->P[b * ns + a].o, h->prec);
        }
    hcell_dS(h);
    for (int a = 0; a < ns; a++)
        for (int t = 0; t < nt; t++) {
            int k = a * nt + t;
            arb_srcptr dqa = h->dQ[a * ns + a].d;
            hb *acc = &h->HX[k];
            arb_zero(acc->d);
            arb_zero(acc->o);
            lin2(h, acc->d, h->prd[k].ac, dqa, h->prd[k].cc, h->X[k].d, -1);
            if (c->sp[a] != t)
                arb_set(acc->o, acc->d);
            else if (c->s_n[a] > 1.5)
                lin2(h, acc->o, h->pro[k].ac, dqa, h->pro[k].cc, h->X[k].o, -1);
            for (int b = 0; b < ns; b++) {
                hb_fma(h, acc, &h->S[a * ns + b], &h->X[b * nt + t], c->s_n[b]);
                hb_fma(h, acc, &h->dS[a * ns + b], &h->R[b * nt + t], c->s_n[b]);
            }
        }
}

/* ---- one pattern space ---- */

/* Hs (nf x nf balls) from the class-value matrix M (in place) and the
 * class sizes w: Hs_ij = sqrt(w_i / w_j) M_ij. */
static void symmetrise(arb_ptr A, const double *w, int nf, slong prec)
{
    arb_t si, sj;
    arb_init(si);
    arb_init(sj);
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < nf; j++) {
            if (i == j)
                continue;
            arb_set_d(si, w[i]);
            arb_sqrt(si, si, prec);
            arb_set_d(sj, w[j]);
            arb_sqrt(sj, sj, prec);
            arb_mul(A + i * nf + j, A + i * nf + j, si, prec);
            arb_div(A + i * nf + j, A + i * nf + j, sj, prec);
        }
    arb_clear(si);
    arb_clear(sj);
}

/* The teacher-span operator on the R patterns of the cells: nf classes. */
static int span_matrix(hcell *h, arb_ptr *A, double **w)
{
    const sym_cells *c = h->c;
    int nf = c->ncls, ns = h->ns, nt = h->nt;
    *A = _arb_vec_init(nf * nf + 1);
    *w = malloc(sizeof **w * (size_t)(nf + 1));
    if (!*w)
        return -1;
    for (int i = 0; i < nf; i++) {
        int a = c->cls_c[i], ty = c->cls_type[i];
        double na = c->s_n[a];
        (*w)[i] = ty == SYM_DIAG ? na : ty == SYM_OFF ? na * (na - 1.0) : na * c->t_n[c->cls_t[i]];
    }
    for (int j = 0; j < nf; j++) {
        for (int k = 0; k < ns * nt; k++) {
            arb_zero(h->X[k].d);
            arb_zero(h->X[k].o);
        }
        int ty = c->cls_type[j], k = c->cls_c[j] * nt + c->cls_t[j];
        if (ty != SYM_OFF)
            arb_one(h->X[k].d);
        if (ty != SYM_DIAG)
            arb_one(h->X[k].o);
        hcell_apply(h);
        for (int i = 0; i < nf; i++) {
            const hb *v = &h->HX[c->cls_c[i] * nt + c->cls_t[i]];
            arb_set(*A + i * nf + j, c->cls_type[i] == SYM_OFF ? v->o : v->d);
        }
    }
    symmetrise(*A, *w, nf, h->prec);
    return nf;
}

/* The complement's operator S on the student cells: ns classes. */
static int perp_matrix(hcell *h, arb_ptr *A, double **w)
{
    const sym_cells *c = h->c;
    int ns = h->ns;
    *A = _arb_vec_init(ns * ns + 1);
    *w = malloc(sizeof **w * (size_t)(ns + 1));
    if (!*w)
        return -1;
    for (int i = 0; i < ns; i++) {
        (*w)[i] = c->s_n[i];
        for (int j = 0; j < ns; j++) {
            const hb *s = &h->S[i * ns + j];
            if (i == j) {
                arb_mul_si(h->t, s->o, (slong)(c->s_n[j] - 1.0), h->prec);
                arb_add(*A + i * ns + j, s->d, h->t, h->prec);
            } else
                arb_mul_si(*A + i * ns + j, s->d, (slong)c->s_n[j], h->prec);
        }
    }
    symmetrise(*A, *w, ns, h->prec);
    return ns;
}

/* What one pattern space proved. */
typedef struct {
    int sign;       /* 1: positive definite, -1: a negative eigenvalue, 0: neither */
    double lo;      /* sign 1: every eigenvalue > lo */
    double hi;      /* sign -1: some eigenvalue < hi < 0 */
    double fmin;    /* floating-point smallest eigenvalue of the midpoints */
} hproof;

/* Is A - t I positive definite (lower triangle, intersected with the upper)? */
static int shifted_pd(arb_srcptr A, int n, double t, slong prec)
{
    arb_mat_t B, L;
    arb_mat_init(B, n, n);
    arb_mat_init(L, n, n);
    arb_t s;
    arb_init(s);
    arb_set_d(s, t);
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
            arb_ptr e = arb_mat_entry(B, i, j);
            if (!arb_intersection(e, A + i * n + j, A + j * n + i, prec))
                arb_set(e, A + i * n + j);
            if (i == j)
                arb_sub(e, e, s, prec);
            arb_set(arb_mat_entry(B, j, i), e);
        }
    int ok = arb_mat_cho(L, B, prec);
    arb_clear(s);
    arb_mat_clear(B);
    arb_mat_clear(L);
    return ok;
}

/* An upper bound of v^T A v / v^T v in balls. */
static double rayleigh_hi(arb_srcptr A, const double *v, int n, slong prec)
{
    arb_t num, den, t, t2;
    arb_init(num);
    arb_init(den);
    arb_init(t);
    arb_init(t2);
    for (int i = 0; i < n; i++) {
        arb_set_d(t, v[i]);
        arb_addmul(den, t, t, prec);
        for (int j = 0; j < n; j++) {
            arb_set_d(t2, v[j]);
            arb_mul(t2, t2, t, prec); /* exact: 106 bits */
            arb_addmul(num, t2, A + i * n + j, prec);
        }
    }
    arb_div(num, num, den, prec);
    arf_t u;
    arf_init(u);
    arb_get_ubound_arf(u, num, 64);
    double hi = arf_get_d(u, ARF_RND_UP);
    arf_clear(u);
    arb_clear(num);
    arb_clear(den);
    arb_clear(t);
    arb_clear(t2);
    return hi;
}

/* Prove the symmetric ball matrix A (n x n) positive definite with a
 * shift, or find a negative Rayleigh quotient. */
static scm_status prove_space(arb_srcptr A, int n, slong prec, hproof *pf)
{
    memset(pf, 0, sizeof *pf);
    pf->lo = pf->hi = NAN;
    pf->fmin = INFINITY;
    if (n == 0) {
        pf->sign = 1;
        pf->lo = INFINITY;
        return SCM_OK;
    }
    double *M = malloc(sizeof *M * (size_t)(n * n)), *ev = malloc(sizeof *ev * (size_t)n);
    double *V = malloc(sizeof *V * (size_t)(n * n));
    if (!M || !ev || !V) {
        free(M);
        free(ev);
        free(V);
        return SCM_ENOMEM;
    }
    double amax = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            M[i * n + j] = 0.5 * (arf_get_d(arb_midref(A + i * n + j), ARF_RND_NEAR) +
                                  arf_get_d(arb_midref(A + j * n + i), ARF_RND_NEAR));
            amax = fmax(amax, fabs(M[i * n + j]));
        }
    scm_status st = sym_eig_sym(M, n, ev, V);
    int imin = 0;
    for (int i = 1; !st && i < n; i++)
        if (ev[i] < ev[imin])
            imin = i;
    if (!st) {
        double lam = ev[imin];
        pf->fmin = lam;
        if (lam > 0.0) {
            /* just below lambda_min first: the bound is then nearly sharp */
            double gap = fmax(lam * 0x1p-20, amax * 1e-13);
            for (int k = 0; k < 4 && !pf->sign; k++, gap *= 64.0)
                if (lam - gap > 0.0 && shifted_pd(A, n, lam - gap, prec)) {
                    pf->sign = 1;
                    pf->lo = lam - gap;
                }
            for (double t = 0.5 * lam; !pf->sign && t > lam * 1e-3; t *= 0.125)
                if (shifted_pd(A, n, t, prec)) {
                    pf->sign = 1;
                    pf->lo = t;
                }
        } else {
            double *v = ev; /* reuse: the eigenvector of lambda_min */
            for (int i = 0; i < n; i++)
                v[i] = V[i * n + imin];
            double hi = rayleigh_hi(A, v, n, prec);
            if (hi < 0.0) {
                pf->sign = -1;
                pf->hi = hi;
            }
        }
    }
    free(M);
    free(ev);
    free(V);
    return st;
}

/* ---- the refinements ---- */

/* The pattern space of refinement nsing (and, with perp, the complement's
 * student cells) over the box x +- r: proved into *pf; *pf->sign = 0 with
 * why set when a kernel is not smooth over the box. */
static scm_status run_space(const sym_ctx *cx, const int *nsing, int perp, double r,
                            const scm_certify_opts *o, int kind, hproof *pf, char *why, size_t nwhy)
{
    scm_status st = SCM_OK;
    sym_cells *c = sym_cells_build(cx, nsing, 0, &st);
    if (!c)
        return st;
    hcell h;
    memset(&h, 0, sizeof h);
    h.c = c;
    h.ns = c->ns;
    h.nt = c->nt;
    h.kind = kind;
    h.prec = o->prec;
    h.mutate = o->mutate_dc;
    h.mutate_d2 = o->mutate_d2;
    h.sin2_min = 1.0;
    if (!hcell_alloc(&h)) {
        hcell_clear(&h);
        sym_cells_free(c);
        return SCM_ENOMEM;
    }
    for (int k = 0; k < h.ns * h.ns; k++) {
        ball_box(h.Q[k].d, c->Q[k].d, r);
        ball_box(h.Q[k].o, c->Q[k].o, r);
    }
    for (int k = 0; k < h.ns * h.nt; k++) {
        ball_box(h.R[k].d, c->R[k].d, r);
        ball_box(h.R[k].o, c->R[k].o, r);
    }
    memset(pf, 0, sizeof *pf);
    pf->lo = pf->hi = NAN;
    if (hcell_kernels(&h, (const char(*)[72])cx->units->name)) {
        snprintf(why, nwhy, "%s", h.why);
    } else {
        arb_ptr A = NULL;
        double *w = NULL;
        int n = perp ? perp_matrix(&h, &A, &w) : span_matrix(&h, &A, &w);
        st = n < 0 ? SCM_ENOMEM : prove_space(A, n, o->prec, pf);
        if (A)
            _arb_vec_clear(A, (perp ? h.ns * h.ns : c->ncls * c->ncls) + 1);
        free(w);
    }
    hcell_clear(&h);
    sym_cells_free(c);
    return st;
}

/* Fold one space's proof into the result. */
static void fold(scm_certify_result *res, const hproof *pf, int perp, const char *label,
                 const char *why)
{
    double *lo = perp ? &res->lambda_perp_lo : &res->lambda_span_lo;
    res->hess_spaces++;
    res->lambda_float = fmin(res->lambda_float, pf->fmin);
    if (pf->sign > 0) {
        *lo = fmin(*lo, pf->lo);
        return;
    }
    if (pf->sign < 0) {
        if (!(res->lambda_neg_hi <= pf->hi)) {
            res->lambda_neg_hi = pf->hi;
            snprintf(res->hess_where, sizeof res->hess_where, "%s, %s",
                     perp ? "complement of the teacher span" : "teacher span", label);
        }
        return;
    }
    res->hess_open++;
    if (res->hess_why[0])
        return;
    char buf[512];
    if (why && why[0])
        snprintf(buf, sizeof buf, "%.200s: %.200s", label, why);
    else
        snprintf(buf, sizeof buf,
                 "%.200s (%s): smallest eigenvalue %.3g neither proved positive nor negative",
                 label, perp ? "complement" : "span", pf->fmin);
    size_t len = strlen(buf) < sizeof res->hess_why ? strlen(buf) : sizeof res->hess_why - 1;
    memcpy(res->hess_why, buf, len); /* a truncated reason is still a reason */
    res->hess_why[len] = '\0';
}

/* Every refinement symstab.c uses in the span (sym_run_all without
 * ghosts): none; {1} | rest of each unit of size >= 2; {1} | {2} | rest of
 * each paired unit of size >= 3; {1} | rest of two units, one with
 * students and the other with teachers.  The complement: none, and
 * {1} | rest of each unit with students. */
static scm_status run_all(const sym_ctx *cx, double r, const scm_certify_opts *o, int kind,
                          scm_certify_result *res)
{
    const sym_units *un = cx->units;
    int nu = un->n;
    int *ns = calloc((size_t)nu + 1, sizeof *ns);
    if (!ns)
        return SCM_ENOMEM;
    scm_status st = SCM_OK;
    hproof pf;
    char why[200], label[200];
    for (int u = -1; u < nu && !st; u++)
        for (int u2 = u; u2 < nu && !st; u2++) {
            for (int split = 1; split <= 2 && !st; split++) {
                memset(ns, 0, sizeof *ns * (size_t)nu);
                if (u < 0 && (u2 >= 0 || split > 1))
                    continue;
                if (u >= 0) {
                    int paired = un->sg[u] >= 0 && un->tg[u] >= 0;
                    if (un->n_u[u] < 1.5 || (u2 != u && un->n_u[u2] < 1.5))
                        continue;
                    if (u2 != u && (split > 1 || !((un->sg[u] >= 0 && un->tg[u2] >= 0) ||
                                                   (un->tg[u] >= 0 && un->sg[u2] >= 0))))
                        continue;
                    if (split == 2 && !(paired && un->n_u[u] > 2.5))
                        continue;
                    ns[u] = split;
                    ns[u2] = split;
                }
                if (u < 0)
                    snprintf(label, sizeof label, "the trivial block");
                else if (u2 != u)
                    snprintf(label, sizeof label, "the refinement {1} | rest of %s and of %s",
                             un->name[u], un->name[u2]);
                else
                    snprintf(label, sizeof label, "the refinement %s of %s",
                             split == 1 ? "{1} | rest" : "{1} | {2} | rest", un->name[u]);
                for (int perp = 0; perp <= 1 && !st; perp++) {
                    if (perp && (u2 != u || split > 1 || (u >= 0 && un->sg[u] < 0)))
                        continue;
                    why[0] = '\0';
                    st = run_space(cx, ns, perp, r, o, kind, &pf, why, sizeof why);
                    if (!st)
                        fold(res, &pf, perp, label, why);
                }
            }
        }
    free(ns);
    return st;
}

/* ---- the verdict ---- */

scm_status scm_cert_strictness(const scm_ansatz_inst *in, const scm_activation *act,
                               const double *x, double r, const scm_certify_opts *o,
                               scm_certify_result *res)
{
    res->lambda_lo = res->lambda_neg_hi = NAN;
    res->lambda_span_lo = res->lambda_perp_lo = res->lambda_float = INFINITY;
    int kind = scm_cert_kind(act);
    if (kind < 0) {
        snprintf(res->hess_why, sizeof res->hess_why, "no ball kernel for activation %s",
                 act->name);
        return SCM_OK;
    }
    sym_units un;
    scm_status st = sym_units_build(in, &un);
    scm_symstab_refusal refusal = SCM_SYMSTAB_ACCEPTED;
    scm_symstab_result dummy;
    memset(&dummy, 0, sizeof dummy);
    scm_error err;
    sym_ctx cx = {in, act, x, &un, &refusal, &err, NULL, NULL, NULL, 0, &dummy};
    if (!st)
        st = run_all(&cx, r, o, kind, res);
    sym_units_free(&un);
    if (st)
        return st;
    double *v[3] = {&res->lambda_float, &res->lambda_span_lo, &res->lambda_perp_lo};
    for (int i = 0; i < 3; i++)
        if (!(*v[i] < INFINITY))
            *v[i] = NAN;
    if (res->lambda_neg_hi < 0.0) {
        res->strict = -1;
        snprintf(res->verdict, sizeof res->verdict, "certified saddle");
        return SCM_OK;
    }
    if (res->hess_open) {
        memcpy(res->reason, res->hess_why, sizeof res->reason - 1);
        res->reason[sizeof res->reason - 1] = '\0';
        return SCM_OK;
    }
    res->strict = 1;
    res->lambda_lo = fmin(res->lambda_span_lo, res->lambda_perp_lo);
    snprintf(res->verdict, sizeof res->verdict, "certified strict local minimum");
    return SCM_OK;
}
