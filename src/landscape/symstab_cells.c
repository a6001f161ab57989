/* symstab_cells.c: the block-level Hessian of symstab.c on a refinement of
 * an ansatz instance.
 *
 * The isotypic blocks of the Hessian are read off the subspaces fixed by
 * Young subgroups of the symmetry group (docs/symmetric-stability.md,
 * section 4): splitting one or two members off a unit ("singletons")
 * refines the groups into cells, and the vectors fixed by the permutations
 * inside every cell are the block-constant patterns of the refined
 * ansatz.  The Hessian maps such a pattern to another one, and this file
 * computes that map with the cell sizes as multiplicities, as blockflow.c
 * does for the flow: its cost depends on the number of cells only.
 *
 * In the coordinates U = W / sqrt(d), X = dU in the teacher basis
 * (T = I, v = v* = 1), the Hessian acts as (section 2 of the note)
 *
 *   H X = S X + dS R + dB,  dQ = X R^T + R X^T,  dR = X,
 *
 * with S = A + A^T and B of flow.h and (dS, dB) their derivatives along
 * (dQ, dR); on the complement of the teacher span it is S alone.  Out
 * of the span, "ghost" teacher cells mirror the student cells and carry
 * the rows of Z = (Q - R R^T)^(1/2) (section 5): no kernel, no dB. */
#include "landscape/symstab_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "scm/hessian.h"

/* Here rather than in symstab.c because the refusals are found here (the
 * kernels), and symstab.c calls this file, not the other way round. */
const char *scm_symstab_refusal_str(scm_symstab_refusal r)
{
    switch (r) {
    case SCM_SYMSTAB_ACCEPTED: return "accepted";
    case SCM_SYMSTAB_NOT_BLOCK_SYMMETRIC: return "not block-symmetric";
    case SCM_SYMSTAB_OUT_OF_SPAN: return "students outside the teacher span";
    case SCM_SYMSTAB_PARALLEL: return "parallel neurons";
    case SCM_SYMSTAB_DEAD: return "dead student";
    case SCM_SYMSTAB_BAD_INPUT: return "bad input";
    }
    return "unknown";
}

/* acc += X Y summed over a cell of size n (the block algebra of
 * blockflow.h: one formula for structured and constant blocks). */
static inline void blk_fma(sym_blk *acc, sym_blk X, sym_blk Y, double n)
{
    acc->d += X.d * Y.d + (n - 1.0) * X.o * Y.o;
    acc->o += X.d * Y.o + X.o * Y.d + (n - 2.0) * X.o * Y.o;
}

/* blk_fma with n1 = n - 1, n2 = n - 2 given (the same bits). */
static inline void blk_fma2(sym_blk *restrict acc, sym_blk X, sym_blk Y, double n1, double n2)
{
    acc->d += X.d * Y.d + n1 * X.o * Y.o;
    acc->o += X.d * Y.o + X.o * Y.d + n2 * X.o * Y.o;
}

/* h''(a) for h(a) = f(a, a, a), the self term (as hessian.c). */
static double self2(const scm_activation *act, double a)
{
    if (act == &scm_act_erf)
        return -(2.0 / M_PI) * (2.0 + 3.0 * a) / ((1.0 + a) * (1.0 + a) * pow(1.0 + 2.0 * a, 1.5));
    return 0.0; /* ReLU: f(a, a, a) = a / 2; linear: a */
}

void sym_cells_free(sym_cells *c)
{
    if (!c)
        return;
    free(c->mem);
    free(c);
}

/* Carve the arrays of c out of one allocation: a first pass measures
 * (base NULL), the second assigns. */
static size_t cells_carve(sym_cells *c, char *base, int ms, int mt)
{
    size_t ss = (size_t)ms * ms, st = (size_t)ms * mt, off = 0;
#define CARVE(field, type, count)                                          \
    do {                                                                   \
        if (base)                                                          \
            c->field = (type *)(void *)(base + off);                       \
        off += ((sizeof(type) * (size_t)(count) + 15) / 16) * 16;          \
    } while (0)
    CARVE(s_unit, int, ms);
    CARVE(s_piece, int, ms);
    CARVE(sp, int, ms);
    CARVE(gp, int, ms);
    CARVE(t_unit, int, mt);
    CARVE(t_piece, int, mt);
    CARVE(t_ghost, int, mt);
    CARVE(t_mirror, int, mt);
    CARVE(s_n, double, ms);
    CARVE(t_n, double, mt);
    CARVE(h1, double, ms);
    CARVE(h2, double, ms);
    CARVE(Q, sym_blk, ss);
    CARVE(S, sym_blk, ss);
    CARVE(P, sym_blk, ss);
    CARVE(dQ, sym_blk, ss);
    CARVE(dS, sym_blk, ss);
    CARVE(R, sym_blk, st);
    CARVE(X, sym_blk, st);
    CARVE(B, sym_blk, st);
    CARVE(dB, sym_blk, st);
    CARVE(Rt, sym_blk, st);
    CARVE(Xt, sym_blk, st);
    CARVE(pq, scm_pair, ss);
    CARVE(q2, scm_pair2, ss);
    CARVE(prd, scm_pair, st);
    CARVE(pro, scm_pair, st);
    CARVE(r2d, scm_pair2, st);
    CARVE(r2o, scm_pair2, st);
    CARVE(cls_c, int, 2 * st);
    CARVE(cls_t, int, 2 * st);
    CARVE(cls_type, int, 2 * st);
#undef CARVE
    return off;
}

/* ms student cells at most, mt teacher cells plus ms ghost cells. */
static int cells_alloc_arrays(sym_cells *c, int ms, int mt)
{
    mt += ms;
    char *p = calloc(1, cells_carve(c, NULL, ms, mt));
    if (!p)
        return 0;
    c->mem = p;
    cells_carve(c, p, ms, mt);
    return 1;
}

/* Cells of the refinement nsing[u] (0, 1 or 2 singletons split off unit
 * u), and the classes of the R patterns on them. */
static void cells_layout(sym_cells *c, const sym_units *un, const int *nsing, int ghost)
{
    c->ns = c->nt = 0;
    for (int u = 0; u < un->n; u++) {
        double n = un->n_u[u];
        for (int p = 0; p < 3; p++) {
            double size = p < nsing[u] ? 1.0 : (p == 2 ? n - nsing[u] : 0.0);
            if (!(size > 0.5))
                continue;
            int s = -1;
            if (un->sg[u] >= 0) {
                s = c->ns++;
                c->s_unit[s] = u;
                c->s_piece[s] = p;
                c->s_n[s] = size;
                c->sp[s] = -1;
            }
            if (un->tg[u] >= 0) {
                int t = c->nt++;
                c->t_unit[t] = u;
                c->t_piece[t] = p;
                c->t_n[t] = size;
                c->t_ghost[t] = 0;
                c->t_mirror[t] = -1;
                if (s >= 0)
                    c->sp[s] = t;
            }
        }
    }
    for (int s = 0; s < c->ns; s++) {
        c->gp[s] = -1;
        if (!ghost)
            continue;
        int t = c->nt++;
        c->t_unit[t] = c->s_unit[s];
        c->t_piece[t] = c->s_piece[s];
        c->t_n[t] = c->s_n[s];
        c->t_ghost[t] = 1;
        c->t_mirror[t] = s;
        c->gp[s] = t;
    }
    c->ncls = 0;
    for (int s = 0; s < c->ns; s++)
        for (int t = 0; t < c->nt; t++) {
            int pr = sym_paired(c, s, t);
            int types[2] = {pr ? SYM_DIAG : SYM_CONST, SYM_OFF};
            int ntypes = (pr && c->s_n[s] > 1.5) ? 2 : 1;
            for (int k = 0; k < ntypes; k++) {
                c->cls_c[c->ncls] = s;
                c->cls_t[c->ncls] = t;
                c->cls_type[c->ncls] = types[k];
                c->ncls++;
            }
        }
}

/* The entry of Z (the out-of-span parts) between student cell a and the
 * ghost cell t: laid out as Q is. */
static sym_blk ghost_value(const sym_cells *c, const sym_ctx *cx, int a, int t)
{
    const sym_units *un = cx->units;
    int b = c->t_mirror[t], ns = cx->in->ns;
    int gi = un->sg[c->s_unit[a]], gj = un->sg[c->s_unit[b]];
    if (a == b)
        return (sym_blk){cx->zd[gi], cx->zo[gi]};
    if (gi == gj)
        return (sym_blk){cx->zo[gi], cx->zo[gi]};
    return (sym_blk){cx->zc[gi * ns + gj], cx->zc[gi * ns + gj]};
}

/* The point's Q and R patterns (and Z's on the ghost cells) on the cells. */
static void cells_load(sym_cells *c, const sym_ctx *cx)
{
    const scm_ansatz_inst *in = cx->in;
    const sym_units *un = cx->units;
    const double *x = cx->x;
    for (int a = 0; a < c->ns; a++) {
        int gi = un->sg[c->s_unit[a]];
        for (int b = 0; b < c->ns; b++) {
            int gj = un->sg[c->s_unit[b]];
            sym_blk v;
            if (a == b)
                v = (sym_blk){x[in->qd[gi]], in->qo[gi] >= 0 ? x[in->qo[gi]] : 0.0};
            else if (gi == gj)
                v = (sym_blk){x[in->qo[gi]], x[in->qo[gi]]};
            else
                v = (sym_blk){x[in->qc[gi * in->ns + gj]], x[in->qc[gi * in->ns + gj]]};
            c->Q[a * c->ns + b] = v;
        }
        for (int t = 0; t < c->nt; t++) {
            if (c->t_ghost[t]) {
                c->R[a * c->nt + t] = ghost_value(c, cx, a, t);
                continue;
            }
            int tj = un->tg[c->t_unit[t]], k = gi * in->nt + tj;
            sym_blk v;
            if (in->spair[gi] == tj && c->sp[a] == t)
                v = (sym_blk){x[in->rd[k]], in->ro[k] >= 0 ? x[in->ro[k]] : 0.0};
            else if (in->spair[gi] == tj)
                v = (sym_blk){x[in->ro[k]], x[in->ro[k]]};
            else
                v = (sym_blk){x[in->rc[k]], x[in->rc[k]]};
            c->R[a * c->nt + t] = v;
        }
    }
    for (int a = 0; a < c->ns; a++)
        for (int t = 0; t < c->nt; t++)
            c->Rt[t * c->ns + a] = c->R[a * c->nt + t];
}

/* The limit of the ReLU Hessian at parallel neurons (section 6 of the
 * note): near angle 0 the pair term is |u||v| J(alpha) / (2 pi) with
 * J = pi cos alpha + alpha^3 / 3 + ..., so f = c / 2 + O(alpha^3); near
 * alpha = pi, f = O((pi - alpha)^3).  Both have the Hessian of c / 2 (resp.
 * 0) at the parallel point, which the first derivatives (f_c = 1/2 or 0,
 * f_a = f_b = 0, from the clamped closed form) and zero second
 * derivatives give; nearby the error is O(alpha). */
static int parallel_limit(const sym_ctx *cx, double a, double b, double cv, int students,
                          const scm_pair *p, scm_pair2 *q)
{
    if (!cx->parallel_limit || cx->act != &scm_act_relu || !(a > 0.0 && b > 0.0))
        return 0;
    double srel = sqrt(fmax(a * b - cv * cv, 0.0) / (a * b));
    if (!(srel < SCM_STAB_SREL_MIN) || !isfinite(p->fc))
        return 0;
    memset(q, 0, sizeof *q);
    scm_symstab_result *res = cx->res;
    res->parallel = 1;
    res->parallel_students |= students && cv > 0.0;
    res->parallel_srel = fmax(res->parallel_srel, srel);
    return 1;
}

/* The cache slot of (a, b, c, students): a hit, or the free slot to fill
 * (NULL when there is no cache or it is full). */
static sym_kc_entry *kc_slot(const sym_ctx *cx, double a, double b, double cv, int students)
{
    sym_kc_entry *kc = cx->units->kc;
    if (!kc)
        return NULL;
    double v[3] = {a, b, cv};
    unsigned long long h = (unsigned long long)students * 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 3; i++) {
        unsigned long long bits;
        memcpy(&bits, &v[i], sizeof bits);
        h = (h ^ bits) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    for (int k = 0; k < SYM_KC_CAP; k++) {
        sym_kc_entry *e = &kc[(h + (unsigned)k) % SYM_KC_CAP];
        if (!e->used || (e->a == a && e->b == b && e->c == cv && e->students == students))
            return e;
    }
    return NULL;
}

/* One kernel evaluation with its second derivatives (cached per point:
 * the same function of the same arguments) for a student of unit ua and
 * a student (students = 1) or a teacher of unit ub; on failure the
 * refusal and the message name the pair (the message is only formatted
 * then: the kernels of one point are evaluated thousands of times). */
static scm_status kern(const sym_ctx *cx, double a, double b, double cv, int students, int ua,
                       int ub, scm_pair *p, scm_pair2 *q)
{
    sym_kc_entry *e = kc_slot(cx, a, b, cv, students);
    if (e && e->used) {
        *p = e->p;
        *q = e->q;
        return SCM_OK;
    }
    scm_status st = cx->act->pair(a, b, cv, p);
    if (!st)
        st = scm_kernel_pair2(cx->act, SCM_STAB_SREL_MIN, a, b, cv, q);
    if (st == SCM_ESINGULAR && parallel_limit(cx, a, b, cv, students, p, q))
        st = SCM_OK;
    /* every operator entry is a sum of these: the block loops skip exact
     * zeros, so a non-finite value must stop here rather than spread */
    if (!st && !(isfinite(p->f) && isfinite(p->fa) && isfinite(p->fb) && isfinite(p->fc) &&
                 isfinite(q->aa) && isfinite(q->ab) && isfinite(q->ac) && isfinite(q->bb) &&
                 isfinite(q->bc) && isfinite(q->cc)))
        st = SCM_ENAN;
    if (!st && e)
        *e = (sym_kc_entry){a, b, cv, students, 1, *p, *q};
    if (!st)
        return SCM_OK;
    scm_symstab_refusal r = st == SCM_ESINGULAR ? SCM_SYMSTAB_PARALLEL
                            : st == SCM_EDEAD   ? SCM_SYMSTAB_DEAD
                                                : SCM_SYMSTAB_BAD_INPUT;
    *cx->refusal = r;
    char what[160];
    if (students)
        snprintf(what, sizeof what, "students of '%s' and '%s'", cx->units->name[ua],
                 cx->units->name[ub]);
    else
        snprintf(what, sizeof what, "a student of '%s' and a teacher of '%s'",
                 cx->units->name[ua], cx->units->name[ub]);
    return scm_error_set(cx->err, st,
                         "%s: %s at (a, b, c) = (%.17g, %.17g, %.17g)%s",
                         scm_symstab_refusal_str(r), what, a, b, cv,
                         r == SCM_SYMSTAB_PARALLEL
                             ? " (the closed-form second derivatives diverge there)"
                             : "");
}

/* Kernels of every class and the blocks of S. */
static scm_status cells_kernels(sym_cells *c, const sym_ctx *cx)
{
    scm_status st;
    int ns = c->ns, nt = c->nt;
    for (int a = 0; a < ns; a++) {
        double qa = c->Q[a * ns + a].d;
        scm_pair p;
        if ((st = cx->act->pair(qa, qa, qa, &p))) {
            *cx->refusal = st == SCM_EDEAD ? SCM_SYMSTAB_DEAD : SCM_SYMSTAB_BAD_INPUT;
            return scm_error_set(cx->err, st, "%s: student group '%s' (Q_kk = %.17g)",
                                 scm_symstab_refusal_str(*cx->refusal),
                                 cx->units->name[c->s_unit[a]], qa);
        }
        c->h1[a] = p.fa + p.fb + p.fc;
        c->h2[a] = self2(cx->act, qa);
        for (int b = 0; b < ns; b++) {
            if (a == b && c->s_n[a] < 1.5)
                continue;
            if ((st = kern(cx, qa, c->Q[b * ns + b].d, c->Q[a * ns + b].o, 1, c->s_unit[a],
                           c->s_unit[b], &c->pq[a * ns + b], &c->q2[a * ns + b])))
                return st;
        }
        for (int t = 0; t < nt; t++) {
            int k = a * nt + t;
            if (c->t_ghost[t])
                continue;
            int ua = c->s_unit[a], ut = c->t_unit[t];
            if ((st = kern(cx, qa, 1.0, c->R[k].d, 0, ua, ut, &c->prd[k], &c->r2d[k])))
                return st;
            if (c->sp[a] == t && c->s_n[a] > 1.5 &&
                (st = kern(cx, qa, 1.0, c->R[k].o, 0, ua, ut, &c->pro[k], &c->r2o[k])))
                return st;
        }
    }
    /* S = A + A^T: S_kl = f_c off the diagonal; S_kk = h' + 2 sum_l f_a - 2 sum_m f_a */
    for (int a = 0; a < ns; a++) {
        double Skk = c->h1[a], na = c->s_n[a];
        for (int b = 0; b < ns; b++) {
            double mult = a == b ? na - 1.0 : c->s_n[b];
            if (mult > 0.5)
                Skk += 2.0 * mult * c->pq[a * ns + b].fa;
            if (a != b)
                c->S[a * ns + b] = (sym_blk){c->pq[a * ns + b].fc, c->pq[a * ns + b].fc};
        }
        for (int t = 0; t < nt; t++) {
            int k = a * nt + t;
            if (c->t_ghost[t])
                continue;
            if (c->sp[a] == t) {
                Skk -= 2.0 * c->prd[k].fa;
                if (na > 1.5)
                    Skk -= 2.0 * (c->t_n[t] - 1.0) * c->pro[k].fa;
            } else {
                Skk -= 2.0 * c->t_n[t] * c->prd[k].fa;
            }
        }
        c->S[a * ns + a] = (sym_blk){Skk, na > 1.5 ? c->pq[a * ns + a].fc : 0.0};
    }
    return SCM_OK;
}

sym_cells *sym_cells_build(const sym_ctx *cx, const int *nsing, int with_kernels, scm_status *st)
{
    const sym_units *un = cx->units;
    int ms = 0, mt = 0;
    for (int u = 0; u < un->n; u++) {
        ms += un->sg[u] >= 0 ? 3 : 0;
        mt += un->tg[u] >= 0 ? 3 : 0;
    }
    sym_cells *c = calloc(1, sizeof *c);
    if (!c || !cells_alloc_arrays(c, ms ? ms : 1, mt ? mt : 1)) {
        free(c);
        *st = scm_error_set(cx->err, SCM_ENOMEM, "out of memory in the symmetric Hessian");
        return NULL;
    }
    cells_layout(c, un, nsing, cx->zd != NULL);
    cells_load(c, cx);
    if (with_kernels && (*st = cells_kernels(c, cx))) {
        sym_cells_free(c);
        return NULL;
    }
    *st = SCM_OK;
    return c;
}

double sym_cells_span_defect(const sym_cells *c, sym_blk *P)
{
    int ns = c->ns, nt = c->nt;
    double dev = 0.0;
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < ns; b++) {
            sym_blk acc = {0.0, 0.0};
            for (int t = 0; t < nt; t++)
                if (!c->t_ghost[t])
                    blk_fma(&acc, c->R[a * nt + t], c->R[b * nt + t], c->t_n[t]);
            if (P)
                P[a * ns + b] = (sym_blk){c->Q[a * ns + b].d - acc.d, c->Q[a * ns + b].o - acc.o};
            dev = fmax(dev, fabs(acc.d - c->Q[a * ns + b].d));
            if (a != b || c->s_n[a] > 1.5)
                dev = fmax(dev, fabs(acc.o - c->Q[a * ns + b].o));
        }
    return dev;
}

/* dS: the derivative of S along (dQ = W, dR = X) (section 2 of the note). */
static void cells_dS(sym_cells *c, sym_blk *dS)
{
    int ns = c->ns, nt = c->nt;
    const sym_blk *dQ = c->dQ, *X = c->X;
    for (int a = 0; a < ns; a++) {
        double dqa = dQ[a * ns + a].d, diag = c->h2[a] * dqa;
        for (int b = 0; b < ns; b++) {
            double mult = a == b ? c->s_n[a] - 1.0 : c->s_n[b];
            if (!(mult > 0.5))
                continue;
            const scm_pair2 *q = &c->q2[a * ns + b];
            double dqb = dQ[b * ns + b].d, dqab = dQ[a * ns + b].o;
            double off = q->ac * dqa + q->bc * dqb + q->cc * dqab;
            diag += 2.0 * mult * (q->aa * dqa + q->ab * dqb + q->ac * dqab);
            if (a != b)
                dS[a * ns + b] = (sym_blk){off, off};
            else
                dS[a * ns + a].o = off;
        }
        for (int t = 0; t < nt; t++) {
            int k = a * nt + t;
            if (c->t_ghost[t])
                continue;
            if (c->sp[a] == t) {
                diag -= 2.0 * (c->r2d[k].aa * dqa + c->r2d[k].ac * X[k].d);
                if (c->s_n[a] > 1.5)
                    diag -= 2.0 * (c->t_n[t] - 1.0) * (c->r2o[k].aa * dqa + c->r2o[k].ac * X[k].o);
            } else {
                diag -= 2.0 * c->t_n[t] * (c->r2d[k].aa * dqa + c->r2d[k].ac * X[k].d);
            }
        }
        dS[a * ns + a].d = diag;
        if (c->s_n[a] < 1.5)
            dS[a * ns + a].o = 0.0;
    }
}

/* HX = S X + dS R + dB from c->dQ and c->X (= dR); keeps dS and dB.
 * Every entry of HX is summed over b in the same order as entry by
 * entry; the loop over t inside lets the entries of a row accumulate side
 * by side instead of one chain at a time. */
static void cells_core(sym_cells *c, sym_blk *restrict HX)
{
    int ns = c->ns, nt = c->nt;
    cells_dS(c, c->dS);
    for (int a = 0; a < ns; a++) {
        double dqa = c->dQ[a * ns + a].d;
        sym_blk *restrict h = HX + a * nt;
        for (int t = 0; t < nt; t++) {
            int k = a * nt + t;
            sym_blk acc = {0.0, 0.0};
            if (c->t_ghost[t]) {
                /* no loss term: dB = 0 on the ghost coordinates */
            } else if (c->sp[a] == t) {
                acc.d = -(c->r2d[k].ac * dqa + c->r2d[k].cc * c->X[k].d);
                acc.o = c->s_n[a] > 1.5 ? -(c->r2o[k].ac * dqa + c->r2o[k].cc * c->X[k].o) : 0.0;
            } else {
                double v = -(c->r2d[k].ac * dqa + c->r2d[k].cc * c->X[k].d);
                acc = (sym_blk){v, v};
            }
            c->dB[k] = acc;
            h[t] = acc;
        }
        for (int b = 0; b < ns; b++) {
            sym_blk S = c->S[a * ns + b], dS = c->dS[a * ns + b];
            double n1 = c->s_n[b] - 1.0, n2 = c->s_n[b] - 2.0;
            const sym_blk *restrict X = c->X + b * nt, *restrict R = c->R + b * nt;
            for (int t = 0; t < nt; t++) {
                blk_fma2(&h[t], S, X[t], n1, n2);
                blk_fma2(&h[t], dS, R[t], n1, n2);
            }
        }
    }
}

void sym_cells_apply(sym_cells *c, sym_blk *HX)
{
    int ns = c->ns, nt = c->nt;
    sym_blk *P = c->P, *dQ = c->dQ;
    /* P = X R^T, row by row: each entry summed over t in order */
    for (int a = 0; a < ns; a++) {
        sym_blk *restrict p = P + a * ns;
        for (int b = 0; b < ns; b++)
            p[b] = (sym_blk){0.0, 0.0};
        for (int t = 0; t < nt; t++) {
            sym_blk x = c->X[a * nt + t];
            double n1 = c->t_n[t] - 1.0, n2 = c->t_n[t] - 2.0;
            const sym_blk *restrict R = c->Rt + t * ns;
            for (int b = 0; b < ns; b++)
                blk_fma2(&p[b], x, R[b], n1, n2);
        }
    }
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < ns; b++)
            dQ[a * ns + b] = (sym_blk){P[a * ns + b].d + P[b * ns + a].d,
                                       P[a * ns + b].o + P[b * ns + a].o};
    cells_core(c, HX);
}

/* Row a of Y of sym_cells_jacobian: dS Q + S dQ + dB R^T + B dR^T, each
 * entry summed over e, then t, in the order of one entry at a time; the
 * entries of the row side by side (R^T, X^T: c->Rt, c->Xt). */
static void jac_row(const sym_cells *c, int a, sym_blk *restrict y)
{
    int ns = c->ns, nt = c->nt;
    for (int b = 0; b < ns; b++)
        y[b] = (sym_blk){0.0, 0.0};
    for (int e = 0; e < ns; e++) {
        sym_blk dS = c->dS[a * ns + e], S = c->S[a * ns + e];
        double n1 = c->s_n[e] - 1.0, n2 = c->s_n[e] - 2.0;
        const sym_blk *restrict Q = c->Q + e * ns, *restrict dQ = c->dQ + e * ns;
        for (int b = 0; b < ns; b++) {
            blk_fma2(&y[b], dS, Q[b], n1, n2);
            blk_fma2(&y[b], S, dQ[b], n1, n2);
        }
    }
    for (int t = 0; t < nt; t++) {
        sym_blk dB = c->dB[a * nt + t], B = c->B[a * nt + t];
        double n1 = c->t_n[t] - 1.0, n2 = c->t_n[t] - 2.0;
        const sym_blk *restrict R = c->Rt + t * ns, *restrict X = c->Xt + t * ns;
        for (int b = 0; b < ns; b++) {
            blk_fma2(&y[b], dB, R[b], n1, n2);
            blk_fma2(&y[b], B, X[b], n1, n2);
        }
    }
}

void sym_cells_jacobian(sym_cells *c, sym_blk *JQ, sym_blk *JR)
{
    int ns = c->ns, nt = c->nt;
    cells_core(c, JR);
    for (int k = 0; k < ns * nt; k++)
        JR[k] = (sym_blk){-JR[k].d, -JR[k].o};
    /* B = -f_c at every student-teacher class */
    for (int a = 0; a < ns; a++)
        for (int t = 0; t < nt; t++) {
            int k = a * nt + t;
            if (c->t_ghost[t])
                c->B[k] = (sym_blk){0.0, 0.0};
            else if (c->sp[a] == t)
                c->B[k] = (sym_blk){-c->prd[k].fc, c->s_n[a] > 1.5 ? -c->pro[k].fc : 0.0};
            else
                c->B[k] = (sym_blk){-c->prd[k].fc, -c->prd[k].fc};
        }
    /* Y = dS Q + S dQ + dB R^T + B dR^T,  J_Q = -(Y + Y^T) */
    sym_blk *Y = c->P;
    for (int b = 0; b < ns; b++)
        for (int t = 0; t < nt; t++)
            c->Xt[t * ns + b] = c->X[b * nt + t];
    for (int a = 0; a < ns; a++)
        jac_row(c, a, Y + a * ns);
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < ns; b++)
            JQ[a * ns + b] = (sym_blk){-(Y[a * ns + b].d + Y[b * ns + a].d),
                                       -(Y[a * ns + b].o + Y[b * ns + a].o)};
}
