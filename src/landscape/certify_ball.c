/* certify_ball.c: the block-level residual of blockflow.c in ball
 * arithmetic.  Every quantity is a "dual ball": its value and its
 * derivatives with respect to the n ansatz scalars, each an Arb ball, so
 * that one evaluation over a box X encloses both F(X) and the Jacobian
 * J(X) that the Krawczyk operator of certify.c needs (forward-mode
 * automatic differentiation; the chain rule is applied to balls, so the
 * enclosures are rigorous).  The kernels are the closed forms of MATH.md
 * section 2 written with Arb's rigorous sqrt, acos and atan; the group
 * sizes are exact integers (or exact binary reals); the bookkeeping of the
 * kernel derivatives, the block products and the scatter onto the scalars
 * follow blockflow.c line by line, so the midpoint of a point evaluation is
 * blockflow.c's floating-point residual up to round-off (test_certify). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/certify_internal.h"

/* n + 1 balls: the value, then the derivatives. */
typedef arb_ptr dv;

typedef struct {
    slong n, prec;
    double mutate;
    int kind;         /* 0 relu, 1 erf, 2 linear */
    arb_t pi;
    double sin2_min;
    char *why;
} cbx;

typedef struct {
    dv d, o;
} dblk;

static dv dv_new(const cbx *c) { return _arb_vec_init(c->n + 1); }
static void dv_free(const cbx *c, dv x) { _arb_vec_clear(x, c->n + 1); }
static void dv_set(const cbx *c, dv z, const dv x) { _arb_vec_set(z, x, c->n + 1); }
static void dv_add(const cbx *c, dv z, const dv x, const dv y)
{
    _arb_vec_add(z, x, y, c->n + 1, c->prec);
}
static void dv_sub(const cbx *c, dv z, const dv x, const dv y)
{
    _arb_vec_sub(z, x, y, c->n + 1, c->prec);
}
/* z = s x for an exact double s */
static void dv_scale(const cbx *c, dv z, const dv x, double s)
{
    arb_t t;
    arb_init(t);
    arb_set_d(t, s);
    _arb_vec_scalar_mul(z, x, c->n + 1, t, c->prec);
    arb_clear(t);
}
static void dv_scale_arb(const cbx *c, dv z, const dv x, const arb_t s)
{
    _arb_vec_scalar_mul(z, x, c->n + 1, s, c->prec);
}
/* z = x y (z may alias x or y) */
static void dv_mul(const cbx *c, dv z, const dv x, const dv y)
{
    dv t = dv_new(c);
    arb_mul(t, x, y, c->prec);
    for (slong i = 1; i <= c->n; i++) {
        arb_mul(t + i, x, y + i, c->prec);
        arb_addmul(t + i, x + i, y, c->prec);
    }
    dv_set(c, z, t);
    dv_free(c, t);
}
/* z += s x y, s an exact double */
static void dv_addmul(const cbx *c, dv z, const dv x, const dv y, double s)
{
    dv t = dv_new(c);
    dv_mul(c, t, x, y);
    dv_scale(c, t, t, s);
    dv_add(c, z, z, t);
    dv_free(c, t);
}
/* z = x / y */
static void dv_div(const cbx *c, dv z, const dv x, const dv y)
{
    dv t = dv_new(c);
    arb_div(t, x, y, c->prec);
    for (slong i = 1; i <= c->n; i++) {
        arb_mul(t + i, t, y + i, c->prec);
        arb_sub(t + i, x + i, t + i, c->prec);
        arb_div(t + i, t + i, y, c->prec);
    }
    dv_set(c, z, t);
    dv_free(c, t);
}
/* z = sqrt(x); x must be provably positive (the caller checks) */
static void dv_sqrt(const cbx *c, dv z, const dv x)
{
    arb_t s, h;
    arb_init(s);
    arb_init(h);
    arb_sqrt(s, x, c->prec);
    arb_mul_2exp_si(h, s, 1);
    for (slong i = 1; i <= c->n; i++)
        arb_div(z + i, x + i, h, c->prec);
    arb_set(z, s);
    arb_clear(s);
    arb_clear(h);
}
/* z = acos(x), d acos = -dx / sqrt(1 - x^2); |x| < 1 checked by the caller */
static void dv_acos(const cbx *c, dv z, const dv x)
{
    arb_t v, w;
    arb_init(v);
    arb_init(w);
    arb_acos(v, x, c->prec);
    arb_mul(w, x, x, c->prec);
    arb_sub_ui(w, w, 1, c->prec);
    arb_neg(w, w);
    arb_sqrt(w, w, c->prec);
    for (slong i = 1; i <= c->n; i++) {
        arb_div(z + i, x + i, w, c->prec);
        arb_neg(z + i, z + i);
    }
    arb_set(z, v);
    arb_clear(v);
    arb_clear(w);
}
/* z = atan(x), d atan = dx / (1 + x^2) */
static void dv_atan(const cbx *c, dv z, const dv x)
{
    arb_t v, w;
    arb_init(v);
    arb_init(w);
    arb_atan(v, x, c->prec);
    arb_mul(w, x, x, c->prec);
    arb_add_ui(w, w, 1, c->prec);
    for (slong i = 1; i <= c->n; i++)
        arb_div(z + i, x + i, w, c->prec);
    arb_set(z, v);
    arb_clear(v);
    arb_clear(w);
}
static void dv_const(const cbx *c, dv z, double v)
{
    _arb_vec_zero(z, c->n + 1);
    arb_set_d(z, v);
}

/* The pair kernel and its gradient, as dual balls. */
typedef struct {
    dv f, fa, fb, fc;
} dpair;

static void dpair_init(const cbx *c, dpair *p)
{
    p->f = dv_new(c);
    p->fa = dv_new(c);
    p->fb = dv_new(c);
    p->fc = dv_new(c);
}
static void dpair_clear(const cbx *c, dpair *p)
{
    dv_free(c, p->f);
    dv_free(c, p->fa);
    dv_free(c, p->fb);
    dv_free(c, p->fc);
}

/* Record the smallest lower bound of D / (ab) (a sin^2 of the angle). */
static void note_sin2(cbx *c, const arb_t D, const arb_t ab)
{
    arb_t q;
    arf_t lo;
    arb_init(q);
    arf_init(lo);
    arb_div(q, D, ab, c->prec);
    arb_get_lbound_arf(lo, q, c->prec);
    double v = arf_get_d(lo, ARF_RND_DOWN);
    if (v < c->sin2_min)
        c->sin2_min = v;
    arf_clear(lo);
    arb_clear(q);
}

/* Generic pair kernel f(a, b, c) off the self term (MATH.md section 2). */
static scm_status kern_pair(cbx *c, const dv a, const dv b, const dv cc, dpair *p)
{
    if (c->kind == 2) { /* linear: f = c */
        dv_set(c, p->f, cc);
        dv_const(c, p->fa, 0.0);
        dv_const(c, p->fb, 0.0);
        dv_const(c, p->fc, 1.0);
        return SCM_OK;
    }
    scm_status st = SCM_OK;
    dv a1 = dv_new(c), b1 = dv_new(c), ab = dv_new(c), D = dv_new(c), s = dv_new(c),
       t = dv_new(c);
    dv_set(c, a1, a);
    dv_set(c, b1, b);
    if (c->kind == 1) { /* erf: shift a, b by 1 */
        arb_add_ui(a1, a1, 1, c->prec);
        arb_add_ui(b1, b1, 1, c->prec);
    }
    if (!arb_is_positive(a1) || !arb_is_positive(b1)) {
        st = SCM_EDEAD;
        goto out;
    }
    dv_mul(c, ab, a1, b1);
    dv_mul(c, t, cc, cc);
    dv_sub(c, D, ab, t);
    if (!arb_is_positive(D)) {
        st = SCM_ESINGULAR;
        goto out;
    }
    note_sin2(c, D, ab);
    dv_sqrt(c, s, D);
    if (c->kind == 0) {
        /* f = (s + c (pi - acos rho)) / 2pi, fc = (pi - acos rho) / 2pi,
         * fa = s / (4 pi a), fb = s / (4 pi b), rho = c / sqrt(ab) */
        dv sab = dv_new(c), th = dv_new(c);
        arb_t inv2pi;
        arb_init(inv2pi);
        arb_mul_2exp_si(inv2pi, c->pi, 1);
        arb_inv(inv2pi, inv2pi, c->prec);
        dv_sqrt(c, sab, ab);
        dv_div(c, th, cc, sab);
        dv_acos(c, th, th);
        _arb_vec_neg(th, th, c->n + 1);
        arb_add(th, th, c->pi, c->prec);           /* pi - acos rho */
        dv_scale_arb(c, p->fc, th, inv2pi);
        dv_mul(c, t, cc, th);
        dv_add(c, t, t, s);
        dv_scale_arb(c, p->f, t, inv2pi);
        dv_div(c, p->fa, s, a1);
        dv_scale_arb(c, p->fa, p->fa, inv2pi);
        dv_scale(c, p->fa, p->fa, 0.5);
        dv_div(c, p->fb, s, b1);
        dv_scale_arb(c, p->fb, p->fb, inv2pi);
        dv_scale(c, p->fb, p->fb, 0.5);
        if (c->mutate != 0.0)
            dv_scale(c, p->fc, p->fc, 1.0 + c->mutate);
        arb_clear(inv2pi);
        dv_free(c, sab);
        dv_free(c, th);
    } else {
        /* erf: f = (2/pi) atan(c / sqrt(D)), fc = (2/pi) / sqrt(D),
         * fa = -(1/pi) c / ((1 + a) sqrt(D)), D = (1 + a)(1 + b) - c^2 */
        arb_t k;
        arb_init(k);
        arb_inv(k, c->pi, c->prec);
        dv_div(c, t, cc, s);
        dv_atan(c, p->f, t);
        dv_scale_arb(c, p->f, p->f, k);
        dv_scale(c, p->f, p->f, 2.0);
        dv_const(c, p->fc, 1.0);
        dv_div(c, p->fc, p->fc, s);
        dv_scale_arb(c, p->fc, p->fc, k);
        dv_scale(c, p->fc, p->fc, 2.0);
        dv_div(c, p->fa, t, a1);
        dv_scale_arb(c, p->fa, p->fa, k);
        dv_scale(c, p->fa, p->fa, -1.0);
        dv_div(c, p->fb, t, b1);
        dv_scale_arb(c, p->fb, p->fb, k);
        dv_scale(c, p->fb, p->fb, -1.0);
        arb_clear(k);
    }
out:
    dv_free(c, a1);
    dv_free(c, b1);
    dv_free(c, ab);
    dv_free(c, D);
    dv_free(c, s);
    dv_free(c, t);
    return st;
}

/* The self term f(a, a, a) and 1/2 d/da of it (= fa + fc / 2, what A_kk
 * collects from it): ReLU a/2 and 1/4; erf (2/pi) atan(a / sqrt(1 + 2a))
 * and 1 / (pi (1 + a) sqrt(1 + 2a)); linear a and 1/2. */
static scm_status kern_self(cbx *c, const dv a, dv f, dv ad)
{
    if (c->kind == 0) {
        if (!arb_is_positive(a))
            return SCM_EDEAD;
        dv_scale(c, f, a, 0.5);
        dv_const(c, ad, 0.25);
    } else if (c->kind == 2) {
        dv_set(c, f, a);
        dv_const(c, ad, 0.5);
    } else {
        dv w = dv_new(c), s = dv_new(c);
        arb_t k;
        arb_init(k);
        arb_inv(k, c->pi, c->prec);
        dv_scale(c, w, a, 2.0);
        arb_add_ui(w, w, 1, c->prec);
        scm_status st = arb_is_positive(w) ? SCM_OK : SCM_ENOTPSD;
        if (!st) {
            dv_sqrt(c, s, w);
            dv_div(c, f, a, s);
            dv_atan(c, f, f);
            dv_scale_arb(c, f, f, k);
            dv_scale(c, f, f, 2.0);
            dv_set(c, w, a);
            arb_add_ui(w, w, 1, c->prec);
            dv_mul(c, w, w, s);
            dv_const(c, ad, 1.0);
            dv_div(c, ad, ad, w);
            dv_scale_arb(c, ad, ad, k);
        }
        arb_clear(k);
        dv_free(c, w);
        dv_free(c, s);
        return st;
    }
    return SCM_OK;
}

/* ---- the block residual (blockflow.c in dual balls) ---- */

typedef struct {
    cbx c;
    const scm_ansatz_inst *in;
    int ns, nt;
    dblk *Q, *R, *S, *B, *P, *FR;
    dv *xs;  /* the scalars as duals: value X[i], gradient e_i */
    dv e;
    int *live_s, *live_t;
} bres;

static void blks_init(bres *b, dblk **p, int n)
{
    *p = calloc((size_t)n, sizeof(dblk));
    for (int i = 0; i < n; i++) {
        (*p)[i].d = dv_new(&b->c);
        (*p)[i].o = dv_new(&b->c);
    }
}
static void blks_clear(bres *b, dblk *p, int n)
{
    for (int i = 0; i < n; i++) {
        dv_free(&b->c, p[i].d);
        dv_free(&b->c, p[i].o);
    }
    free(p);
}

static void bres_init(bres *b, const scm_ansatz_inst *in, arb_srcptr X)
{
    int ns = in->ns, nt = in->nt;
    b->in = in;
    b->ns = ns;
    b->nt = nt;
    blks_init(b, &b->Q, ns * ns);
    blks_init(b, &b->S, ns * ns);
    blks_init(b, &b->P, ns * ns);
    blks_init(b, &b->R, ns * nt);
    blks_init(b, &b->B, ns * nt);
    blks_init(b, &b->FR, ns * nt);
    b->xs = calloc((size_t)in->nsc, sizeof(dv));
    for (int i = 0; i < in->nsc; i++) {
        b->xs[i] = dv_new(&b->c);
        arb_set(b->xs[i], X + i);
        arb_one(b->xs[i] + 1 + i);
    }
    b->e = dv_new(&b->c);
    b->live_s = calloc((size_t)ns, sizeof(int));
    b->live_t = calloc((size_t)nt, sizeof(int));
    for (int i = 0; i < ns; i++)
        b->live_s[i] = !scm_size_zero(in->ssize[i]);
    for (int t = 0; t < nt; t++)
        b->live_t[t] = !scm_size_zero(in->tsize[t]);
}

static void bres_clear(bres *b)
{
    int ns = b->ns, nt = b->nt;
    blks_clear(b, b->Q, ns * ns);
    blks_clear(b, b->S, ns * ns);
    blks_clear(b, b->P, ns * ns);
    blks_clear(b, b->R, ns * nt);
    blks_clear(b, b->B, ns * nt);
    blks_clear(b, b->FR, ns * nt);
    for (int i = 0; i < b->in->nsc; i++)
        dv_free(&b->c, b->xs[i]);
    free(b->xs);
    dv_free(&b->c, b->e);
    free(b->live_s);
    free(b->live_t);
}

/* Blocks of Q and R from the scalars (blockflow.c's load_blocks). */
static void load_blocks(bres *b)
{
    const scm_ansatz_inst *in = b->in;
    cbx *c = &b->c;
    int ns = b->ns, nt = b->nt;
    for (int i = 0; i < ns; i++) {
        if (!b->live_s[i])
            continue;
        for (int j = 0; j < ns; j++) {
            if (!b->live_s[j])
                continue;
            dblk *q = &b->Q[i * ns + j];
            if (i == j) {
                dv_set(c, q->d, b->xs[in->qd[i]]);
                if (in->qo[i] >= 0)
                    dv_set(c, q->o, b->xs[in->qo[i]]);
                else
                    dv_const(c, q->o, 0.0);
            } else {
                dv_set(c, q->d, b->xs[in->qc[i * ns + j]]);
                dv_set(c, q->o, b->xs[in->qc[i * ns + j]]);
            }
        }
        for (int t = 0; t < nt; t++) {
            if (!b->live_t[t])
                continue;
            int k = i * nt + t;
            if (in->spair[i] == t) {
                dv_set(c, b->R[k].d, b->xs[in->rd[k]]);
                if (in->ro[k] >= 0)
                    dv_set(c, b->R[k].o, b->xs[in->ro[k]]);
                else
                    dv_const(c, b->R[k].o, 0.0);
            } else {
                dv_set(c, b->R[k].d, b->xs[in->rc[k]]);
                dv_set(c, b->R[k].o, b->xs[in->rc[k]]);
            }
        }
    }
}

/* A kernel failure's reason in c->why. */
static scm_status pair_fail(bres *b, scm_status st, int i, const char *other, const char *what)
{
    const char *g = b->in->sname[i];
    if (st == SCM_EDEAD)
        snprintf(b->c.why, 200, "a student of group %s has a norm not provably positive over the box",
                 g);
    else if (st == SCM_ESINGULAR)
        snprintf(b->c.why, 200,
                 "the angle between a student of group %s and %s %s is not provably away from 0 "
                 "and pi over the box (the kernel is not smooth there)",
                 g, what, other);
    else
        snprintf(b->c.why, 200, "the kernel of group %s and %s %s is undefined over the box", g,
                 what, other);
    return st;
}

/* e += s n f, and Ad += s2 fa, with exact weights s, s2 */
static void accum(bres *b, dv Ad, const dpair *p, double s, double s2)
{
    dv t = dv_new(&b->c);
    dv_scale(&b->c, t, p->f, s);
    dv_add(&b->c, b->e, b->e, t);
    dv_scale(&b->c, t, p->fa, s2);
    dv_add(&b->c, Ad, Ad, t);
    dv_free(&b->c, t);
}

/* Student group i's terms of the loss and its rows of S and B
 * (blockflow.c's group_terms). */
static scm_status group_terms(bres *b, int i, dpair *p, dv one, dv Ad)
{
    const scm_ansatz_inst *in = b->in;
    cbx *c = &b->c;
    int ns = b->ns, nt = b->nt;
    double n = in->ssize[i];
    dv xi = b->Q[i * ns + i].d;
    scm_status st;
    if ((st = kern_self(c, xi, p->f, Ad)))
        return pair_fail(b, st, i, "itself", "");
    dv_scale(c, p->f, p->f, 0.5 * n);
    dv_add(c, b->e, b->e, p->f);
    if (in->qo[i] >= 0) {
        if ((st = kern_pair(c, xi, xi, b->Q[i * ns + i].o, p)))
            return pair_fail(b, st, i, "its own group", "another student of");
        accum(b, Ad, p, 0.5 * n * (n - 1.0), n - 1.0);
        dv_set(c, b->S[i * ns + i].o, p->fc);
    } else {
        dv_const(c, b->S[i * ns + i].o, 0.0);
    }
    for (int j = 0; j < ns; j++) {
        if (j == i || !b->live_s[j])
            continue;
        if ((st = kern_pair(c, xi, b->Q[j * ns + j].d, b->Q[i * ns + j].d, p)))
            return pair_fail(b, st, i, in->sname[j], "a student of group");
        accum(b, Ad, p, 0.5 * n * in->ssize[j], in->ssize[j]);
        dv_set(c, b->S[i * ns + j].d, p->fc);
        dv_set(c, b->S[i * ns + j].o, p->fc);
    }
    for (int t = 0; t < nt; t++) {
        if (!b->live_t[t])
            continue;
        int k = i * nt + t;
        double m = in->tsize[t];
        int paired = in->spair[i] == t;
        if ((st = kern_pair(c, xi, one, b->R[k].d, p)))
            return pair_fail(b, st, i, in->tname[t], "a teacher of group");
        accum(b, Ad, p, paired ? -n : -n * m, paired ? -1.0 : -m);
        dv_scale(c, b->B[k].d, p->fc, -1.0);
        dv_set(c, b->B[k].o, b->B[k].d);
        if (paired) {
            dv_const(c, b->B[k].o, 0.0);
            if (in->ro[k] >= 0) {
                if ((st = kern_pair(c, xi, one, b->R[k].o, p)))
                    return pair_fail(b, st, i, in->tname[t], "another teacher of group");
                accum(b, Ad, p, -n * (m - 1.0), -(m - 1.0));
                dv_scale(c, b->B[k].o, p->fc, -1.0);
            }
        }
    }
    dv_scale(c, b->S[i * ns + i].d, Ad, 2.0);
    return SCM_OK;
}

/* acc += X Y with n the size of the summed-over group (blockflow.h) */
static void blk_fma(bres *b, dblk *acc, const dblk *X, const dblk *Y, double n)
{
    cbx *c = &b->c;
    dv_addmul(c, acc->d, X->d, Y->d, 1.0);
    dv_addmul(c, acc->d, X->o, Y->o, n - 1.0);
    dv_addmul(c, acc->o, X->d, Y->o, 1.0);
    dv_addmul(c, acc->o, X->o, Y->d, 1.0);
    dv_addmul(c, acc->o, X->o, Y->o, n - 2.0);
}

/* P = S Q + B R^T and FR = S R + B (blockflow.c's block_products). */
static void block_products(bres *b)
{
    const scm_ansatz_inst *in = b->in;
    cbx *c = &b->c;
    int ns = b->ns, nt = b->nt;
    for (int i = 0; i < ns; i++) {
        if (!b->live_s[i])
            continue;
        for (int j = 0; j < ns; j++) {
            if (!b->live_s[j])
                continue;
            dblk *acc = &b->P[i * ns + j];
            dv_const(c, acc->d, 0.0);
            dv_const(c, acc->o, 0.0);
            for (int k = 0; k < ns; k++)
                if (b->live_s[k])
                    blk_fma(b, acc, &b->S[i * ns + k], &b->Q[k * ns + j], in->ssize[k]);
            for (int t = 0; t < nt; t++)
                if (b->live_t[t])
                    blk_fma(b, acc, &b->B[i * nt + t], &b->R[j * nt + t], in->tsize[t]);
        }
        for (int t = 0; t < nt; t++) {
            if (!b->live_t[t])
                continue;
            dblk *acc = &b->FR[i * nt + t];
            dv_set(c, acc->d, b->B[i * nt + t].d);
            dv_set(c, acc->o, b->B[i * nt + t].o);
            for (int k = 0; k < ns; k++)
                if (b->live_s[k])
                    blk_fma(b, acc, &b->S[i * ns + k], &b->R[k * nt + t], in->ssize[k]);
        }
    }
}

/* Scalar k of the residual: value into e->F[k], gradient into row k of J. */
static void put(bres *b, scm_cert_eval *e, int k, const dv v, double s)
{
    arb_mul_si(e->F + k, v, (slong)s, b->c.prec);
    for (slong j = 0; j < b->c.n; j++)
        arb_mul_si(arb_mat_entry(e->J, k, j), v + 1 + j, (slong)s, b->c.prec);
}

/* F_Q = -(P + P^T), F_R = -FR onto the scalars (blockflow.c's scatter). */
static void scatter(bres *b, scm_cert_eval *e)
{
    const scm_ansatz_inst *in = b->in;
    cbx *c = &b->c;
    int ns = b->ns, nt = b->nt;
    dv t = dv_new(c);
    for (int i = 0; i < ns; i++) {
        if (!b->live_s[i])
            continue;
        put(b, e, in->qd[i], b->P[i * ns + i].d, -2.0);
        if (in->qo[i] >= 0)
            put(b, e, in->qo[i], b->P[i * ns + i].o, -2.0);
        for (int j = i + 1; j < ns; j++)
            if (b->live_s[j]) {
                dv_add(c, t, b->P[i * ns + j].d, b->P[j * ns + i].d);
                put(b, e, in->qc[i * ns + j], t, -1.0);
            }
        for (int u = 0; u < nt; u++) {
            if (!b->live_t[u])
                continue;
            int k = i * nt + u;
            if (in->spair[i] == u) {
                put(b, e, in->rd[k], b->FR[k].d, -1.0);
                if (in->ro[k] >= 0)
                    put(b, e, in->ro[k], b->FR[k].o, -1.0);
            } else {
                put(b, e, in->rc[k], b->FR[k].d, -1.0);
            }
        }
    }
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < ns; j++) {
            arb_set(e->Sd + i * ns + j, b->S[i * ns + j].d);
            arb_set(e->So + i * ns + j, b->S[i * ns + j].o);
        }
    dv_free(c, t);
}

void scm_cert_eval_init(scm_cert_eval *e, const scm_ansatz_inst *in)
{
    memset(e, 0, sizeof *e);
    e->n = in->nsc;
    e->ns = in->ns;
    e->F = _arb_vec_init(e->n);
    arb_mat_init(e->J, e->n, e->n);
    arb_init(e->eps);
    e->deps = _arb_vec_init(e->n);
    e->Sd = _arb_vec_init(e->ns * e->ns);
    e->So = _arb_vec_init(e->ns * e->ns);
}

void scm_cert_eval_clear(scm_cert_eval *e)
{
    _arb_vec_clear(e->F, e->n);
    arb_mat_clear(e->J);
    arb_clear(e->eps);
    _arb_vec_clear(e->deps, e->n);
    _arb_vec_clear(e->Sd, e->ns * e->ns);
    _arb_vec_clear(e->So, e->ns * e->ns);
}

/* The loss's teacher-teacher term (T = I): M f(1,1,1) + M (M - 1) f(1,1,0), halved. */
static scm_status teacher_terms(bres *b, dpair *p, dv one, dv zero, dv tmp)
{
    double Mt = 0.0;
    for (int t = 0; t < b->nt; t++)
        Mt += b->in->tsize[t];
    scm_status st = kern_self(&b->c, one, p->f, tmp);
    if (st)
        return st;
    dv_scale(&b->c, p->f, p->f, 0.5 * Mt);
    dv_add(&b->c, b->e, b->e, p->f);
    if ((st = kern_pair(&b->c, one, one, zero, p)))
        return st;
    dv_scale(&b->c, p->f, p->f, 0.5 * Mt * (Mt - 1.0));
    dv_add(&b->c, b->e, b->e, p->f);
    return SCM_OK;
}

scm_status scm_cert_eval_box(const scm_ansatz_inst *in, const scm_activation *act, arb_srcptr X,
                             slong prec, double mutate, scm_cert_eval *e)
{
    bres b;
    memset(&b, 0, sizeof b);
    b.c.n = in->nsc;
    b.c.prec = prec;
    b.c.mutate = mutate;
    b.c.sin2_min = 1.0;
    b.c.why = e->why;
    e->why[0] = '\0';
    if (strcmp(act->name, "relu") == 0)
        b.c.kind = 0;
    else if (strcmp(act->name, "erf") == 0)
        b.c.kind = 1;
    else if (strcmp(act->name, "linear") == 0)
        b.c.kind = 2;
    else {
        snprintf(e->why, sizeof e->why, "no ball kernel for activation %s", act->name);
        return SCM_EINVAL;
    }
    arb_init(b.c.pi);
    arb_const_pi(b.c.pi, prec);
    bres_init(&b, in, X);
    load_blocks(&b);
    dpair p;
    dpair_init(&b.c, &p);
    dv one = dv_new(&b.c), zero = dv_new(&b.c), Ad = dv_new(&b.c);
    dv_const(&b.c, one, 1.0);
    dv_const(&b.c, zero, 0.0);
    _arb_vec_zero(b.e, b.c.n + 1);
    scm_status st = teacher_terms(&b, &p, one, zero, Ad);
    for (int i = 0; i < in->ns && !st; i++)
        if (b.live_s[i])
            st = group_terms(&b, i, &p, one, Ad);
    if (!st) {
        block_products(&b);
        _arb_vec_indeterminate(e->F, e->n);
        scatter(&b, e);
        arb_set(e->eps, b.e);
        _arb_vec_set(e->deps, b.e + 1, e->n);
    }
    e->sin2_min = b.c.sin2_min;
    dv_free(&b.c, one);
    dv_free(&b.c, zero);
    dv_free(&b.c, Ad);
    dpair_clear(&b.c, &p);
    bres_clear(&b);
    arb_clear(b.c.pi);
    return st;
}

/* ---- the kernels with their second derivatives (the Hessian) ---- */

int scm_cert_kind(const scm_activation *act)
{
    if (strcmp(act->name, "relu") == 0)
        return 0;
    if (strcmp(act->name, "erf") == 0)
        return 1;
    return strcmp(act->name, "linear") == 0 ? 2 : -1;
}

void scm_cert_pair2_init(scm_cert_pair2 *p)
{
    arb_ptr v[10] = {p->f, p->fa, p->fb, p->fc, p->aa, p->ab, p->ac, p->bb, p->bc, p->cc};
    for (int i = 0; i < 10; i++)
        arb_init(v[i]);
}

void scm_cert_pair2_clear(scm_cert_pair2 *p)
{
    arb_ptr v[10] = {p->f, p->fa, p->fb, p->fc, p->aa, p->ab, p->ac, p->bb, p->bc, p->cc};
    for (int i = 0; i < 10; i++)
        arb_clear(v[i]);
}

/* The same closed forms as the residual's (kern_pair), differentiated once
 * more by forward mode with respect to (a, b, c) themselves: a dual ball
 * with three derivatives per first derivative gives the second ones. */
scm_status scm_cert_kernel2(int kind, const arb_t a, const arb_t b, const arb_t cv, slong prec,
                            double mutate, scm_cert_pair2 *out, double *sin2_min)
{
    cbx c;
    memset(&c, 0, sizeof c);
    c.n = 3;
    c.prec = prec;
    c.mutate = mutate;
    c.kind = kind;
    c.sin2_min = 1.0;
    arb_init(c.pi);
    arb_const_pi(c.pi, prec);
    dv va = dv_new(&c), vb = dv_new(&c), vc = dv_new(&c);
    arb_set(va, a);
    arb_one(va + 1);
    arb_set(vb, b);
    arb_one(vb + 2);
    arb_set(vc, cv);
    arb_one(vc + 3);
    dpair p;
    dpair_init(&c, &p);
    scm_status st = kern_pair(&c, va, vb, vc, &p);
    if (!st) {
        arb_set(out->f, p.f);
        arb_set(out->fa, p.fa);
        arb_set(out->fb, p.fb);
        arb_set(out->fc, p.fc);
        arb_set(out->aa, p.fa + 1);
        /* f_ab from both orders: two enclosures of one number */
        if (!arb_intersection(out->ab, p.fa + 2, p.fb + 1, prec))
            arb_set(out->ab, p.fa + 2);
        if (!arb_intersection(out->ac, p.fa + 3, p.fc + 1, prec))
            arb_set(out->ac, p.fa + 3);
        arb_set(out->bb, p.fb + 2);
        if (!arb_intersection(out->bc, p.fb + 3, p.fc + 2, prec))
            arb_set(out->bc, p.fb + 3);
        arb_set(out->cc, p.fc + 3);
    }
    if (sin2_min && c.sin2_min < *sin2_min)
        *sin2_min = c.sin2_min;
    dpair_clear(&c, &p);
    dv_free(&c, va);
    dv_free(&c, vb);
    dv_free(&c, vc);
    arb_clear(c.pi);
    return st;
}

/* h(a) = f(a, a, a): kern_self gives h'/2 in closed form; its derivative
 * (one dual) gives h''/2. */
scm_status scm_cert_self2(int kind, const arb_t a, slong prec, arb_t h1, arb_t h2)
{
    cbx c;
    memset(&c, 0, sizeof c);
    c.n = 1;
    c.prec = prec;
    c.kind = kind;
    c.sin2_min = 1.0;
    arb_init(c.pi);
    arb_const_pi(c.pi, prec);
    dv va = dv_new(&c), f = dv_new(&c), ad = dv_new(&c);
    arb_set(va, a);
    arb_one(va + 1);
    scm_status st = kern_self(&c, va, f, ad);
    if (!st) {
        arb_mul_2exp_si(h1, ad, 1);
        arb_mul_2exp_si(h2, ad + 1, 1);
    }
    dv_free(&c, va);
    dv_free(&c, f);
    dv_free(&c, ad);
    arb_clear(c.pi);
    return st;
}

/* Shared by certify.c and certify_real.c (kept here so neither calls the
 * other back). */
double scm_cert_ubound(const arb_t v)
{
    arf_t u;
    arf_init(u);
    arb_get_abs_ubound_arf(u, v, 64);
    double d = arf_get_d(u, ARF_RND_UP);
    arf_clear(u);
    return d;
}

void scm_cert_refuse(scm_certify_result *res, const char *why)
{
    res->certified = 0;
    snprintf(res->verdict, sizeof res->verdict, "not certified");
    snprintf(res->reason, sizeof res->reason, "%s", why);
}
