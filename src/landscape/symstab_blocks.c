/* symstab_blocks.c: the isotypic blocks of symstab.c, one by one.
 *
 * Every block is found the same way (docs/symmetric-stability.md,
 * section 4): refine the groups by splitting one or two members off one or
 * two units (symstab_cells.c gives the operator on the patterns of the
 * refinement, at a cost set by the number of cells), and remove the
 * patterns of the coarser refinements, which carry the representations
 * already counted; what is left carries exactly one fixed vector of each
 * copy of the wanted irreducible representation, and the operator
 * restricted to it is the block.  [n-2,2] and [n-2,1,1] share a
 * refinement and are told apart by the swap of the two singletons (even
 * and odd).  The operator is the Hessian (its teacher-span part on R
 * patterns, its complement part S on student patterns) or the flow's
 * Jacobian (on Q and R patterns; not symmetric, so its blocks have complex
 * eigenvalues in general). */
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_matrix.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/symstab_internal.h"

/* Below this (relative to the unit columns) a direction is in the span of
 * the coarser patterns; the smallest genuine singular value squared is
 * about 1 / n for a unit of size n. */
#define SYM_NULL_TOL 1e-9

/* ---- the result list ---- */

static scm_status push_eig(scm_symstab_result *res, int *cap, double value, double imag,
                           long mult, int part, int irrep, int u, int u2)
{
    if (res->n == *cap) {
        int nc = *cap ? 2 * *cap : 64;
        scm_symstab_eig *e = realloc(res->eig, sizeof *e * (size_t)nc);
        if (!e)
            return SCM_ENOMEM;
        res->eig = e;
        *cap = nc;
    }
    scm_symstab_eig *e = &res->eig[res->n++];
    memset(e, 0, sizeof *e);
    e->value = value;
    e->imag = imag;
    e->mult = mult;
    e->part = part;
    e->irrep = irrep;
    e->unit = u;
    e->unit2 = u2;
    return SCM_OK;
}

/* ---- small dense linear algebra ---- */

/* Eigen-decomposition of the symmetric n x n matrix A (destroyed):
 * eigenvalues into ev, eigenvectors (columns) into Vec if not NULL. */
scm_status sym_eig_sym(double *A, int n, double *ev, double *Vec)
{
    if (n == 0)
        return SCM_OK;
    if (n == 1 && !Vec) { /* what GSL returns, without its workspace */
        ev[0] = A[0];
        return SCM_OK;
    }
    gsl_matrix_view Av = gsl_matrix_view_array(A, (size_t)n, (size_t)n);
    gsl_vector_view evv = gsl_vector_view_array(ev, (size_t)n);
    int g;
    if (Vec) {
        gsl_matrix_view Vv = gsl_matrix_view_array(Vec, (size_t)n, (size_t)n);
        gsl_eigen_symmv_workspace *w = gsl_eigen_symmv_alloc((size_t)n);
        if (!w)
            return SCM_ENOMEM;
        g = gsl_eigen_symmv(&Av.matrix, &evv.vector, &Vv.matrix, w);
        gsl_eigen_symmv_free(w);
    } else {
        gsl_eigen_symm_workspace *w = gsl_eigen_symm_alloc((size_t)n);
        if (!w)
            return SCM_ENOMEM;
        g = gsl_eigen_symm(&Av.matrix, &evv.vector, w);
        gsl_eigen_symm_free(w);
    }
    return g ? SCM_ESOLVER : SCM_OK;
}

/* Eigenvalues (re, im) of the general n x n matrix A (destroyed). */
static scm_status eig_gen(double *A, int n, double *re, double *im)
{
    if (n == 0)
        return SCM_OK;
    if (n == 1) { /* what GSL returns, without its workspace */
        re[0] = A[0];
        im[0] = 0.0;
        return SCM_OK;
    }
    gsl_matrix_view Av = gsl_matrix_view_array(A, (size_t)n, (size_t)n);
    gsl_vector_complex *ev = gsl_vector_complex_alloc((size_t)n);
    gsl_eigen_nonsymm_workspace *w = gsl_eigen_nonsymm_alloc((size_t)n);
    int g = 1;
    if (ev && w)
        g = gsl_eigen_nonsymm(&Av.matrix, ev, w);
    for (int i = 0; !g && i < n; i++) {
        re[i] = GSL_REAL(gsl_vector_complex_get(ev, (size_t)i));
        im[i] = GSL_IMAG(gsl_vector_complex_get(ev, (size_t)i));
    }
    if (w)
        gsl_eigen_nonsymm_free(w);
    if (ev)
        gsl_vector_complex_free(ev);
    return !ev || !w ? SCM_ENOMEM : g ? SCM_ESOLVER : SCM_OK;
}

/* A pattern space: nf classes with sizes w, the operator in symmetric
 * coordinates Hs = D^1/2 M D^-1/2 (M the action on class values), given
 * by what it does to a few vectors (apply: HN = Hs N, nf x k, both of
 * stride nf), the coarser patterns F (columns over the nf classes,
 * scaled by D^1/2 and normalised; a class lies in one coarse class of
 * each of the nq coarsenings, so F is stored by rows: class i has value
 * fval[q nf + i] in column fcol[q nf + i]), and optionally the swap of
 * two singletons (perm, a permutation of the classes) whose eigenspace
 * of sign is kept. */
typedef struct {
    int nf, nq;
    void (*apply)(void *ctx, int nf, const double *N, int k, double *HN);
    void *ctx;
    const int *fcol;
    const double *fval;
    const int *perm;
    int sign;
    int general;     /* 1: Hs is not symmetric (the Jacobian) */
} sym_space;

/* Orthonormal basis of the swap's eigenspace of sign (or of everything):
 * vector i has value vv[2 i + e] at class vr[2 i + e] (e = 0, 1; vr = -1:
 * none); *dv vectors.  A class is in one vector at most. */
static void parity_basis(const sym_space *sp, int *vr, double *vv, int *dv)
{
    int k = 0;
    for (int i = 0; i < sp->nf; i++) {
        int j = sp->perm ? sp->perm[i] : i;
        if (j == i && sp->sign < 0)
            continue;
        if (j < i)
            continue;
        vr[2 * k] = i;
        vv[2 * k] = j == i ? 1.0 : M_SQRT1_2;
        vr[2 * k + 1] = j == i ? -1 : j;
        vv[2 * k + 1] = j == i ? 0.0 : sp->sign * M_SQRT1_2;
        k++;
    }
    *dv = k;
}

/* Row i of A = V^T F (nonzeros: at most 2 classes x nq coarsenings) into
 * (ac, av), its count. */
static int a_row(const sym_space *sp, const int *vr, const double *vv, int i, int *ac, double *av)
{
    int n = 0;
    for (int e = 0; e < 2; e++) {
        int r = vr[2 * i + e];
        if (r < 0)
            continue;
        for (int q = 0; q < sp->nq; q++) {
            int col = sp->fcol[q * sp->nf + r], m = 0;
            double v = vv[2 * i + e] * sp->fval[q * sp->nf + r];
            while (m < n && ac[m] != col)
                m++;
            if (m == n) {
                ac[n] = col;
                av[n++] = v;
            } else {
                av[m] += v;
            }
        }
    }
    return n;
}

/* Swap rows and columns r < p of the symmetric n x n matrix C, of which
 * only the lower triangle is kept. */
static void swap_lower(double *C, int n, int r, int p)
{
    double t;
    for (int m = 0; m < r; m++) {
        t = C[r * n + m];
        C[r * n + m] = C[p * n + m];
        C[p * n + m] = t;
    }
    for (int i = r + 1; i < p; i++) {
        t = C[i * n + r];
        C[i * n + r] = C[p * n + i];
        C[p * n + i] = t;
    }
    for (int i = p + 1; i < n; i++) {
        t = C[i * n + r];
        C[i * n + r] = C[i * n + p];
        C[i * n + p] = t;
    }
    t = C[r * n + r];
    C[r * n + r] = C[p * n + p];
    C[p * n + p] = t;
}

/* The scratch of null_basis for n x n: y (n doubles), the supports of
 * the basis vectors (n bit sets), piv, nz, lstart (n + 1) and lrow
 * (n (n - 1) / 2 + 1) ints. */
typedef struct {
    double *y;
    unsigned long long *sup;
    int *piv, *nz, *lstart, *lrow;
} sym_nbwork;

/* An orthonormal basis of the null space of the positive semidefinite
 * n x n matrix C (its lower triangle; destroyed) into the rows of E
 * (stride n); their count.  Pivoted Cholesky P^T C P = L L^T stops at
 * the rank r, where every diagonal entry of the rest is below
 * SYM_NULL_TOL (the genuine ones are about 1 / n for a unit of size n,
 * section 4 of the note); the null space is then spanned by
 * x = P [y; e_t] with L11^T y = -L21^T e_t, made orthonormal by
 * Gram-Schmidt (twice).
 *
 * C and L are sparse (most classes meet few others), and the loops skip
 * exact zeros: the updates and the back-substitution pass over the
 * nonzeros of L's columns, Gram-Schmidt over pairs of vectors whose
 * supports meet (n <= 64).  No nonzero changes by a bit (x - 0 y = x; a
 * sum from +0 is the same without its zero terms); a zero may change its
 * sign, which no eigenvalue sees (B = N^T H N sums from +0). */
static int null_basis(double *C, int n, double *E, const sym_nbwork *w)
{
    int r = 0, *piv = w->piv, *nz = w->nz;
    double *y = w->y;
    for (int i = 0; i < n; i++)
        piv[i] = i;
    for (; r < n; r++) {
        int p = r;
        for (int i = r + 1; i < n; i++)
            if (C[i * n + i] > C[p * n + p])
                p = i;
        if (!(C[p * n + p] > SYM_NULL_TOL))
            break;
        if (p != r) {
            swap_lower(C, n, r, p);
            int t = piv[r];
            piv[r] = piv[p];
            piv[p] = t;
        }
        double l = sqrt(C[r * n + r]);
        int nnz = 0;
        C[r * n + r] = l;
        for (int i = r + 1; i < n; i++)
            if (C[i * n + r] != 0.0) {
                C[i * n + r] /= l;
                nz[nnz++] = i;
            }
        for (int a = 0; a < nnz; a++) {
            int i = nz[a];
            double ci = C[i * n + r];
            for (int b = 0; b <= a; b++)
                C[i * n + nz[b]] -= ci * C[nz[b] * n + r];
        }
    }
    int k = n - r, masks = n <= 64;
    /* the nonzeros of L11's columns (rows i + 1 .. r - 1), for the
     * back-substitutions */
    int *ls = w->lstart, *lr = w->lrow;
    ls[0] = 0;
    for (int i = 0; i < r; i++) {
        ls[i + 1] = ls[i];
        for (int m = i + 1; m < r; m++)
            if (C[m * n + i] != 0.0)
                lr[ls[i + 1]++] = m;
    }
    for (int t = 0; t < k; t++) {
        double *et = E + (size_t)t * (size_t)n;
        for (int i = r - 1; i >= 0; i--) {
            double s = -C[(r + t) * n + i];
            for (int x = ls[i]; x < ls[i + 1]; x++)
                s -= C[lr[x] * n + i] * y[lr[x]];
            y[i] = s / C[i * n + i];
        }
        unsigned long long st = 0;
        for (int i = 0; i < n; i++) {
            double v = i < r ? y[i] : (i == r + t ? 1.0 : 0.0);
            et[piv[i]] = v;
            if (masks && v != 0.0)
                st |= 1ULL << piv[i];
        }
        for (int pass = 0; pass < 2; pass++)
            for (int q = 0; q < t; q++) {
                if (masks && !(w->sup[q] & st))
                    continue;
                const double *eq = E + (size_t)q * (size_t)n;
                double d = 0.0;
                for (int i = 0; i < n; i++)
                    d += eq[i] * et[i];
                for (int i = 0; i < n; i++)
                    et[i] -= d * eq[i];
                st |= w->sup[q];
            }
        w->sup[t] = st;
        if (r == 0)
            continue; /* e_t: already of unit norm */
        double nrm = 0.0;
        for (int i = 0; i < n; i++)
            nrm += et[i] * et[i];
        nrm = sqrt(nrm);
        for (int i = 0; i < n; i++)
            et[i] /= nrm;
    }
    return k;
}

/* The eigenvalues of the operator on the part of the space orthogonal to
 * the coarser patterns (and of the given parity): (ev, evi) get *k
 * values (evi zero for a symmetric operator).  The part is invariant
 * also when the operator is not symmetric: it is a sum of isotypic
 * components, which any operator commuting with the group preserves.
 * w: scratch of space_block_size(nf) doubles. */
static scm_status space_block(const sym_space *sp, double *w, double *ev, double *evi, int *k)
{
    int nf = sp->nf, dv = 0, na = 2 * sp->nq, nF = 0;
    size_t nn = (size_t)nf * (size_t)nf;
    double *C = w, *E = C + nn, *N = E + nn, *lam = N + nn, *vv = lam + nf;
    double *av = vv + 2 * nf;
    unsigned long long *sup = (unsigned long long *)(void *)(av + (size_t)na * (size_t)nf);
    int *vr = (int *)(void *)(sup + nf);
    int *ac = vr + 2 * nf, *an = ac + (size_t)na * (size_t)nf, *nz = an + nf;
    int *mark = nz + nf, *cstart = mark + nf, *crow = cstart + (size_t)na * (size_t)nf + 1;
    int *lstart = crow + (size_t)na * (size_t)nf;
    sym_nbwork nbw = {lam, sup, an, nz, lstart, lstart + nf + 1};
    *k = 0;
    parity_basis(sp, vr, vv, &dv);
    /* C = A A^T (dv x dv, lower triangle), A = V^T F sparse: its null
     * space is the wanted part.  Only the pairs of rows that share a
     * column are summed (the rows of each column listed first); each sum
     * in the order of row i's columns, as over all pairs. */
    for (int i = 0; i < dv; i++) {
        an[i] = a_row(sp, vr, vv, i, ac + (size_t)i * (size_t)na, av + (size_t)i * (size_t)na);
        for (int p = 0; p < an[i]; p++)
            if (ac[(size_t)i * (size_t)na + (size_t)p] >= nF)
                nF = ac[(size_t)i * (size_t)na + (size_t)p] + 1;
    }
    memset(cstart, 0, sizeof *cstart * (size_t)(nF + 1));
    for (int i = 0; i < dv; i++)
        for (int p = 0; p < an[i]; p++)
            cstart[ac[(size_t)i * (size_t)na + (size_t)p] + 1]++;
    for (int c = 0; c < nF; c++)
        cstart[c + 1] += cstart[c];
    for (int i = 0; i < dv; i++) {
        mark[i] = -1;
        for (int p = 0; p < an[i]; p++)
            crow[cstart[ac[(size_t)i * (size_t)na + (size_t)p]]++] = i;
    }
    for (int c = nF; c > 0; c--)
        cstart[c] = cstart[c - 1];
    cstart[0] = 0;
    for (int i = 0; i < dv; i++)
        memset(C + (size_t)i * (size_t)dv, 0, sizeof *C * (size_t)(i + 1));
    for (int i = 0; i < dv; i++) {
        const int *ci = ac + (size_t)i * (size_t)na;
        const double *vi = av + (size_t)i * (size_t)na;
        for (int p0 = 0; p0 < an[i]; p0++)
            for (int x = cstart[ci[p0]]; x < cstart[ci[p0] + 1]; x++) {
                int j = crow[x];
                if (j < i || mark[j] == i)
                    continue;
                mark[j] = i;
                const int *cj = ac + (size_t)j * (size_t)na;
                const double *vj = av + (size_t)j * (size_t)na;
                double s = 0.0;
                for (int p = 0; p < an[i]; p++)
                    for (int q = 0; q < an[j]; q++)
                        if (ci[p] == cj[q])
                            s += vi[p] * vj[q];
                C[j * dv + i] = s;
            }
    }
    /* N = V * (an orthonormal basis of C's null space), nf x k */
    *k = null_basis(C, dv, E, &nbw);
    for (int r = 0; r < nf; r++)
        for (int q = 0; q < *k; q++)
            N[r * nf + q] = 0.0;
    for (int q = 0; q < *k; q++) {
        const double *eq = E + (size_t)q * (size_t)dv;
        for (int i = 0; i < dv; i++)
            for (int e = 0; e < 2; e++)
                if (vr[2 * i + e] >= 0)
                    N[vr[2 * i + e] * nf + q] = vv[2 * i + e] * eq[i];
    }
    /* no copy of the wanted representation here: nothing to apply */
    if (*k == 0)
        return SCM_OK;
    /* B = N^T (Hs N): Hs N once into E (nf x k, stride nf; E's eigenvectors
     * are no longer needed) */
    sp->apply(sp->ctx, nf, N, *k, E);
    for (int i = 0; i < *k; i++) {
        /* over the nonzeros of N's column i (a sum from +0 is the same
         * without its zero terms) */
        int cnt = 0;
        for (int r = 0; r < nf; r++)
            if (N[r * nf + i] != 0.0)
                nz[cnt++] = r;
        for (int j = 0; j < *k; j++) {
            double s = 0.0;
            for (int x = 0; x < cnt; x++)
                s += N[nz[x] * nf + i] * E[nz[x] * nf + j];
            C[i * *k + j] = s;
        }
    }
    if (sp->general)
        return eig_gen(C, *k, ev, evi);
    for (int i = 0; i < *k; i++) {
        evi[i] = 0.0;
        for (int j = 0; j < i; j++)
            C[i * *k + j] = C[j * *k + i] = 0.5 * (C[i * *k + j] + C[j * *k + i]);
    }
    return sym_eig_sym(C, *k, ev, NULL);
}

/* Doubles of space_block's scratch for nf classes and nq <= 2 coarsenings:
 * 3 nf^2 + 8 nf doubles and bit sets, then ints: 6 nf + 6 nq nf + 3 +
 * nf (nf - 1) / 2 <= nf^2 / 2 + 18 nf + 3 of them. */
static size_t space_block_size(int nf)
{
    return 4 * (size_t)nf * (size_t)nf + 22 * (size_t)nf + 4;
}

/* ---- the fine classes of a pattern space ---- */

enum { CL_R = 0, CL_Q = 1, CL_CELL = 2 };

/* The entry classes of the patterns the operator acts on: R classes
 * (student cell a, teacher cell b), Q classes (student cells a <= b), or
 * student cells alone (the complement), with their types and sizes. */
typedef struct {
    int n;
    int *kind, *a, *b, *type;
    double *w;
} sym_classes;

static void classes_free(sym_classes *cl)
{
    free(cl->kind);
    free(cl->a);
    free(cl->b);
    free(cl->type);
    free(cl->w);
}

static int classes_build(const sym_cells *c, int mode, sym_classes *cl)
{
    int cap = c->ncls + c->ns * (c->ns + 1) + 1;
    cl->n = 0;
    cl->kind = malloc(sizeof(int) * (size_t)cap);
    cl->a = malloc(sizeof(int) * (size_t)cap);
    cl->b = malloc(sizeof(int) * (size_t)cap);
    cl->type = malloc(sizeof(int) * (size_t)cap);
    cl->w = malloc(sizeof(double) * (size_t)cap);
    if (!cl->kind || !cl->a || !cl->b || !cl->type || !cl->w)
        return 0;
#define ADD(k_, a_, b_, t_, w_)                                                            \
    do {                                                                                   \
        cl->kind[cl->n] = k_, cl->a[cl->n] = a_, cl->b[cl->n] = b_, cl->type[cl->n] = t_; \
        cl->w[cl->n++] = w_;                                                               \
    } while (0)
    if (mode == SYM_MODE_PERP)
        for (int a = 0; a < c->ns; a++)
            ADD(CL_CELL, a, -1, SYM_DIAG, c->s_n[a]);
    if (mode == SYM_MODE_JAC)
        for (int a = 0; a < c->ns; a++)
            for (int b = a; b < c->ns; b++) {
                double na = c->s_n[a], nb = c->s_n[b];
                if (a < b)
                    ADD(CL_Q, a, b, SYM_CONST, 2.0 * na * nb);
                else {
                    ADD(CL_Q, a, a, SYM_DIAG, na);
                    if (na > 1.5)
                        ADD(CL_Q, a, a, SYM_OFF, na * (na - 1.0));
                }
            }
    if (mode != SYM_MODE_PERP)
        for (int i = 0; i < c->ncls; i++) {
            int a = c->cls_c[i], t = c->cls_t[i], ty = c->cls_type[i];
            double na = c->s_n[a];
            ADD(CL_R, a, t, ty,
                ty == SYM_DIAG ? na : ty == SYM_OFF ? na * (na - 1.0) : na * c->t_n[t]);
        }
#undef ADD
    return 1;
}

/* ---- coarser patterns ---- */

/* The class of fine class i in the coarsening pm (pm[3 u + piece] = the
 * coarse piece), as one integer. */
static long coarse_key(const sym_cells *c, int nu, const int *pm, const sym_classes *cl, int i)
{
    int a = cl->a[i], b = cl->b[i];
    long ka = (long)c->s_unit[a] * 3 + pm[3 * c->s_unit[a] + c->s_piece[a]];
    if (cl->kind[i] == CL_CELL)
        return ka;
    if (cl->kind[i] == CL_Q) {
        long kb = (long)c->s_unit[b] * 3 + pm[3 * c->s_unit[b] + c->s_piece[b]];
        int type = ka == kb ? (cl->type[i] == SYM_DIAG ? SYM_DIAG : SYM_OFF) : SYM_CONST;
        long lo = ka < kb ? ka : kb, hi = ka < kb ? kb : ka;
        return -1 - ((lo * (3L * nu) + hi) * 3 + type);
    }
    int su = c->s_unit[a], tu = c->t_unit[b];
    int sp = pm[3 * su + c->s_piece[a]], tp = pm[3 * tu + c->t_piece[b]];
    int type = (su == tu && sp == tp) ? (cl->type[i] == SYM_DIAG ? SYM_DIAG : SYM_OFF)
                                      : SYM_CONST;
    long tkey = ((long)tu * 2 + c->t_ghost[b]) * 3 + tp;
    return (((long)su * 3 + sp) * (6L * nu) + tkey) * 3 + type;
}

/* The columns of coarsening pm, numbered from *nF on: one per coarse
 * class, the indicator of its fine classes scaled by sqrt(w) and
 * normalised; fine class i's column and value into fcol[i], fval[i]. */
static void add_coarse(const sym_cells *c, int nu, const int *pm, const sym_classes *cl,
                       const double *sw, int *fcol, double *fval, int *nF, long *key,
                       double *nrm, int *tab, int tcap)
{
    int nf = cl->n, first = *nF;
    /* the first class of each key, by open addressing (tcap a power of
     * two above 2 nf) */
    for (int h = 0; h < tcap; h++)
        tab[h] = -1;
    for (int i = 0; i < nf; i++) {
        key[i] = coarse_key(c, nu, pm, cl, i);
        fcol[i] = -1;
        unsigned long h = ((unsigned long)key[i] * 0x9e3779b97f4a7c15UL) >> 20;
        for (;; h++) {
            int j = tab[h & (unsigned long)(tcap - 1)];
            if (j < 0) {
                tab[h & (unsigned long)(tcap - 1)] = i;
                break;
            }
            if (key[j] == key[i]) {
                fcol[i] = fcol[j];
                break;
            }
        }
        if (fcol[i] < 0) {
            fcol[i] = (*nF)++;
            nrm[fcol[i] - first] = 0.0;
        }
        nrm[fcol[i] - first] += cl->w[i];
    }
    for (int c2 = 0; c2 < *nF - first; c2++)
        nrm[c2] = sqrt(nrm[c2]);
    for (int i = 0; i < nf; i++)
        fval[i] = sw[i] / nrm[fcol[i] - first];
}

/* ---- one isotypic block ---- */

/* What to solve: the refinement, the coarsenings to remove (up to two,
 * each a piece map), the parity, and how to label and count the result. */
typedef struct {
    int *nsing;        /* [units] */
    int n_coarse;
    int *pm[2];        /* [3 units] each */
    int swap_unit;     /* -1, or the unit whose singletons the parity swaps */
    int sign;
    int mode;          /* SYM_MODE_* */
    int irrep, u, u2;
    long mult;
    int irrep2;        /* -1, or the irrep of the other parity (solved second) */
    long mult2;
} sym_job;

/* Read class i of the operator's output (JQ: Q blocks; OR: R blocks). */
static double class_value(const sym_cells *c, const sym_classes *cl, int i, const sym_blk *JQ,
                          const sym_blk *OR)
{
    sym_blk h = cl->kind[i] == CL_Q ? JQ[cl->a[i] * c->ns + cl->b[i]]
                                    : OR[cl->a[i] * c->nt + cl->b[i]];
    return cl->type[i] == SYM_OFF ? h.o : h.d;
}

/* The complement's Hs (nf x nf; the operator is S on student cells). */
static void perp_matrix(const sym_cells *c, const double *sw, double *Hs)
{
    int nf = c->ns, ns = c->ns;
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < nf; j++) {
            sym_blk s = c->S[i * ns + j];
            double m = i == j ? s.d + (c->s_n[j] - 1.0) * s.o : c->s_n[j] * s.d;
            Hs[i * nf + j] = sw[i] * m / sw[j];
        }
}

/* apply of a space with a stored Hs: HN = Hs N. */
static void apply_matrix(void *ctx, int nf, const double *N, int k, double *HN)
{
    const double *Hs = ctx;
    for (int r = 0; r < nf; r++)
        for (int j = 0; j < k; j++) {
            double h = 0.0;
            for (int q = 0; q < nf; q++)
                h += Hs[r * nf + q] * N[q * nf + j];
            HN[r * nf + j] = h;
        }
}

/* What apply_op needs: the cells, their classes, sqrt of the class sizes
 * and the output blocks. */
typedef struct {
    sym_cells *c;
    const sym_classes *cl;
    int mode;
    const double *sw;
    sym_blk *OR, *JQ;
} sym_op;

/* Add value v of class i to the pattern (c->dQ for a Q class, c->X for
 * an R class). */
static void class_put(sym_cells *c, const sym_classes *cl, int i, double v)
{
    int a = cl->a[i], b = cl->b[i], ty = cl->type[i];
    sym_blk *e = cl->kind[i] == CL_Q ? &c->dQ[a * c->ns + b] : &c->X[a * c->nt + b];
    if (ty != SYM_OFF)
        e->d = v;
    if (ty != SYM_DIAG)
        e->o = v;
    if (cl->kind[i] == CL_Q && a != b)
        c->dQ[b * c->ns + a] = *e;
}

/* apply of a space of the operator (Hessian or Jacobian) on the cells'
 * patterns: column j of N, unscaled to class values D^-1/2 N, is laid
 * out as a pattern (it lies on every class), the operator applied to it
 * and its image read class by class and
 * scaled by D^1/2.  k operator calls per space instead of nf. */
static void apply_op(void *ctx, int nf, const double *N, int k, double *HN)
{
    const sym_op *op = ctx;
    sym_cells *c = op->c;
    const sym_classes *cl = op->cl;
    int ns = c->ns, nt = c->nt;
    for (int j = 0; j < k; j++) {
        memset(c->X, 0, sizeof *c->X * (size_t)(ns * nt));
        memset(c->dQ, 0, sizeof *c->dQ * (size_t)(ns * ns));
        for (int i = 0; i < nf; i++)
            class_put(c, cl, i, N[i * nf + j] / op->sw[i]);
        if (op->mode == SYM_MODE_JAC)
            sym_cells_jacobian(c, op->JQ, op->OR);
        else
            sym_cells_apply(c, op->OR);
        for (int i = 0; i < nf; i++)
            HN[i * nf + j] = op->sw[i] * class_value(c, cl, i, op->JQ, op->OR);
    }
}

/* The cell that piece-swapped cell s becomes (student or teacher side). */
static int swap_cell(const sym_cells *c, int u, int s, int teacher)
{
    const int *unit = teacher ? c->t_unit : c->s_unit, *piece = teacher ? c->t_piece : c->s_piece;
    int n = teacher ? c->nt : c->ns;
    int p = unit[s] == u && piece[s] < 2 ? 1 - piece[s] : piece[s];
    for (int a = 0; a < n; a++)
        if (unit[a] == unit[s] && piece[a] == p && (!teacher || c->t_ghost[a] == c->t_ghost[s]))
            return a;
    return s;
}

/* The index of class (kind, a, b, type) in swap_perm's table. */
static size_t class_slot(const sym_cells *c, int kind, int a, int b, int type)
{
    size_t ns = (size_t)c->ns, nt = (size_t)c->nt;
    size_t cell = kind == CL_CELL ? (size_t)a
                  : kind == CL_Q  ? ns + (size_t)a * ns + (size_t)b
                                  : ns + ns * ns + (size_t)a * nt + (size_t)b;
    return 3 * cell + (size_t)type;
}

/* The swap of the singletons of unit u on the fine classes (0 if out of
 * memory). */
static int swap_perm(const sym_cells *c, int u, const sym_classes *cl, int *perm)
{
    size_t ncell = 3 * ((size_t)c->ns * (size_t)(1 + c->ns + c->nt));
    int *slot = malloc(sizeof *slot * (ncell + 1));
    if (!slot)
        return 0;
    for (size_t x = 0; x < ncell; x++)
        slot[x] = -1;
    for (int j = 0; j < cl->n; j++) /* the last class of a slot, as a scan would find */
        slot[class_slot(c, cl->kind[j], cl->a[j], cl->b[j], cl->type[j])] = j;
    for (int i = 0; i < cl->n; i++) {
        int a2 = swap_cell(c, u, cl->a[i], 0), b2 = -1;
        if (cl->kind[i] == CL_R)
            b2 = swap_cell(c, u, cl->b[i], 1);
        else if (cl->kind[i] == CL_Q) {
            b2 = swap_cell(c, u, cl->b[i], 0);
            if (b2 < a2) {
                int t = a2;
                a2 = b2;
                b2 = t;
            }
        }
        int j = slot[class_slot(c, cl->kind[i], a2, b2, cl->type[i])];
        perm[i] = j >= 0 ? j : i;
    }
    free(slot);
    return 1;
}

/* The coarse columns of the job (space_block's fcol, fval: nq nf each). */
static int job_coarse(const sym_cells *c, int nu, const sym_job *jb, const sym_classes *cl,
                      const double *sw, int *fcol, double *fval)
{
    int nf = cl->n, nF = 0, tcap = 16;
    while (tcap < 2 * nf)
        tcap *= 2;
    long *key = malloc(sizeof *key * (size_t)(nf + 1));
    double *nrm = malloc(sizeof *nrm * (size_t)(nf + 1));
    int *tab = malloc(sizeof *tab * (size_t)tcap);
    if (!key || !nrm || !tab) {
        free(key);
        free(nrm);
        free(tab);
        return 0;
    }
    for (int q = 0; q < jb->n_coarse; q++)
        add_coarse(c, nu, jb->pm[q], cl, sw, fcol + q * nf, fval + q * nf, &nF, key, nrm, tab,
                   tcap);
    free(key);
    free(nrm);
    free(tab);
    return 1;
}

/* Solve the block of space sp (ev: scratch of 2 nf + 2, w: of
 * space_block_size) and append its eigenvalues as irrep with
 * multiplicity mult (the Hessian's scaled to H_W = H_U / d). */
static scm_status solve_push(const sym_ctx *cx, const sym_job *jb, const sym_space *sp, int irrep,
                             long mult, long d, double *ev, double *w, scm_symstab_result *res,
                             int *cap)
{
    int nf = sp->nf, k = 0;
    scm_status st = space_block(sp, w, ev, ev + nf + 1, &k);
    if (st)
        return scm_error_set(cx->err, st, "the eigensolver failed on an isotypic block");
    if (k > 0) {
        res->n_blocks++;
        res->max_block = k > res->max_block ? k : res->max_block;
    }
    double scale = jb->mode == SYM_MODE_JAC ? 1.0 : 1.0 / (double)d;
    int part = jb->mode == SYM_MODE_JAC ? SCM_SYMSTAB_FLOW
               : jb->mode == SYM_MODE_PERP ? SCM_SYMSTAB_PERP
                                           : SCM_SYMSTAB_SPAN;
    for (int i = 0; i < k && !st; i++)
        if ((st = push_eig(res, cap, ev[i] * scale, ev[nf + 1 + i] * scale, mult, part, irrep,
                           jb->u, jb->u2)))
            scm_error_set(cx->err, st, "out of memory in the symmetric spectrum");
    return st;
}

/* Solve one block (or, with jb->irrep2, both parities of a refinement)
 * and append its eigenvalues. */
static scm_status run_job(const sym_ctx *cx, const sym_job *jb, long d, scm_symstab_result *res,
                          int *cap)
{
    scm_status st = SCM_OK;
    sym_cells *c = sym_cells_build(cx, jb->nsing, 1, &st);
    if (!c)
        return st;
    sym_classes cl;
    memset(&cl, 0, sizeof cl);
    int ok = classes_build(c, jb->mode, &cl), nu = cx->units->n, nf = cl.n;
    int perp = jb->mode == SYM_MODE_PERP, ns = c->ns, nt = c->nt;
    /* one allocation: Hs (the complement only), ev, sqrt(w), fval, the
     * output blocks, space_block's scratch, then the ints perm and fcol */
    size_t nhs = perp ? (size_t)nf * (size_t)nf : 0, nsb = space_block_size(nf);
    size_t nd = nhs + (size_t)(2 * nf + 2) + (size_t)nf + 2 * (size_t)nf +
                2 * (size_t)(ns * nt + ns * ns) + nsb;
    double *mem = ok ? malloc(sizeof *mem * nd + sizeof(int) * (size_t)(3 * nf + 1)) : NULL;
    if (!mem) {
        st = scm_error_set(cx->err, SCM_ENOMEM, "out of memory in the symmetric spectrum");
        goto out;
    }
    double *Hs = mem, *ev = Hs + nhs, *sw = ev + 2 * nf + 2, *fval = sw + nf;
    sym_blk *OR = (sym_blk *)(void *)(fval + 2 * nf), *JQ = OR + ns * nt;
    double *wsb = (double *)(void *)(JQ + ns * ns);
    int *perm = (int *)(void *)(wsb + nsb), *fcol = perm + nf;
    for (int j = 0; j < nf; j++)
        sw[j] = sqrt(cl.w[j]);
    if (!job_coarse(c, nu, jb, &cl, sw, fcol, fval)) {
        st = scm_error_set(cx->err, SCM_ENOMEM, "out of memory in the symmetric spectrum");
        goto out;
    }
    if (perp)
        perp_matrix(c, sw, Hs);
    if (jb->swap_unit >= 0 && !swap_perm(c, jb->swap_unit, &cl, perm)) {
        st = scm_error_set(cx->err, SCM_ENOMEM, "out of memory in the symmetric spectrum");
        goto out;
    }
    sym_op op = {c, &cl, jb->mode, sw, OR, JQ};
    sym_space sp = {nf, jb->n_coarse, perp ? apply_matrix : apply_op,
                    perp ? (void *)Hs : (void *)&op, fcol, fval,
                    jb->swap_unit >= 0 ? perm : NULL, jb->sign, jb->mode == SYM_MODE_JAC};
    st = solve_push(cx, jb, &sp, jb->irrep, jb->mult, d, ev, wsb, res, cap);
    if (!st && jb->irrep2 >= 0) {
        /* the other parity of the same refinement: the same operator and F */
        sp.sign = -sp.sign;
        st = solve_push(cx, jb, &sp, jb->irrep2, jb->mult2, d, ev, wsb, res, cap);
    }
out:
    classes_free(&cl);
    free(mem);
    sym_cells_free(c);
    return st;
}

/* ---- units ---- */

void sym_units_free(sym_units *u)
{
    free(u->sg);
    free(u->tg);
    free(u->n_u);
    free(u->name);
    free(u->kc);
}

scm_status sym_units_build(const scm_ansatz_inst *in, sym_units *u)
{
    int cap = in->ns + in->nt;
    memset(u, 0, sizeof *u);
    u->sg = malloc(sizeof *u->sg * (size_t)(cap + 1));
    u->tg = malloc(sizeof *u->tg * (size_t)(cap + 1));
    u->n_u = malloc(sizeof *u->n_u * (size_t)(cap + 1));
    u->name = malloc(sizeof *u->name * (size_t)(cap + 1));
    if (!u->sg || !u->tg || !u->n_u || !u->name)
        return SCM_ENOMEM;
    for (int i = 0; i < in->ns; i++) {
        if (scm_size_zero(in->ssize[i]))
            continue;
        int t = in->spair[i];
        u->sg[u->n] = i;
        u->tg[u->n] = t;
        u->n_u[u->n] = in->ssize[i];
        if (t >= 0)
            snprintf(u->name[u->n], sizeof u->name[0], "%s/%s (n = %.0f)", in->sname[i],
                     in->tname[t], in->ssize[i]);
        else
            snprintf(u->name[u->n], sizeof u->name[0], "%s (n = %.0f)", in->sname[i],
                     in->ssize[i]);
        u->n++;
    }
    for (int t = 0; t < in->nt; t++) {
        if (scm_size_zero(in->tsize[t]) || in->tpair[t] >= 0)
            continue;
        u->sg[u->n] = -1;
        u->tg[u->n] = t;
        u->n_u[u->n] = in->tsize[t];
        snprintf(u->name[u->n], sizeof u->name[0], "%s (n = %.0f)", in->tname[t], in->tsize[t]);
        u->n++;
    }
    return SCM_OK;
}

/* ---- the jobs ---- */

static long irrep_dim(int irrep, long n, long n2)
{
    switch (irrep) {
    case SCM_SYMSTAB_STD: return n - 1;
    case SCM_SYMSTAB_TWO_ROW: return n * (n - 3) / 2;
    case SCM_SYMSTAB_HOOK: return (n - 1) * (n - 2) / 2;
    case SCM_SYMSTAB_STD_STD: return (n - 1) * (n2 - 1);
    default: return 1;
    }
}

/* Run one job family: irrep on unit u (and u2), both parts as they apply. */
static scm_status run_irrep(const sym_ctx *cx, int mode, int irrep, int u, int u2, long d,
                            long perp_dim, int *work, scm_symstab_result *res, int *cap)
{
    const sym_units *un = cx->units;
    int nu = un->n;
    int *nsing = work, *pmA = work + nu, *pmB = work + 4 * nu;
    memset(nsing, 0, sizeof *nsing * (size_t)nu);
    for (int i = 0; i < 3 * nu; i++)
        pmA[i] = pmB[i] = i % 3;
    long n = u >= 0 ? lround(un->n_u[u]) : 1, n2 = u2 >= 0 ? lround(un->n_u[u2]) : 1;
    sym_job jb = {nsing, 0, {pmA, pmB}, -1, 1, mode, irrep, u, u2, irrep_dim(irrep, n, n2),
                  -1, 0};
    switch (irrep) {
    case SCM_SYMSTAB_STD: /* {1} | rest, minus the unrefined patterns */
        nsing[u] = 1;
        jb.n_coarse = 1;
        pmA[3 * u] = 2;
        break;
    case SCM_SYMSTAB_TWO_ROW: /* {1} | {2} | rest, minus {1} | rest and {2} | rest: */
        nsing[u] = 2;         /* even, then [n-2,1,1] odd on the same patterns */
        jb.n_coarse = 2;
        pmA[3 * u + 1] = 2;
        pmB[3 * u] = 2;
        jb.swap_unit = u;
        jb.sign = 1;
        jb.irrep2 = SCM_SYMSTAB_HOOK;
        jb.mult2 = irrep_dim(SCM_SYMSTAB_HOOK, n, n2);
        break;
    case SCM_SYMSTAB_STD_STD: /* both split, minus each split alone */
        nsing[u] = nsing[u2] = 1;
        jb.n_coarse = 2;
        pmA[3 * u2] = 2;
        pmB[3 * u] = 2;
        break;
    default:
        break;
    }
    scm_status st = run_job(cx, &jb, d, res, cap);
    int has_students = irrep == SCM_SYMSTAB_TRIV || (irrep == SCM_SYMSTAB_STD && un->sg[u] >= 0);
    if (st || mode != SYM_MODE_SPAN || perp_dim == 0 || !has_students)
        return st;
    jb.mode = SYM_MODE_PERP;
    jb.mult *= perp_dim;
    return run_job(cx, &jb, d, res, cap);
}

/* Every block: trivial; [n-1,1] of each unit; [n-2,2] and [n-2,1,1] of
 * each unit whose students meet themselves (paired teachers; the ghost
 * coordinates out of the span; Q in the Jacobian); [n-1,1] x [n'-1,1] of
 * each pair of units of which one has students and the other teachers (or
 * students, in those same cases).  A block that does not occur comes out
 * empty anyway: the conditions only save work. */
scm_status sym_run_all(const sym_ctx *cx, int mode, long d, long perp_dim,
                       scm_symstab_result *res)
{
    const sym_units *un = cx->units;
    int nu = un->n, cap = 0, self = cx->zd != NULL || mode == SYM_MODE_JAC;
    int *work = malloc(sizeof *work * (size_t)(7 * nu + 1));
    if (!work)
        return scm_error_set(cx->err, SCM_ENOMEM, "out of memory in the symmetric spectrum");
    scm_status st = run_irrep(cx, mode, SCM_SYMSTAB_TRIV, -1, -1, d, perp_dim, work, res, &cap);
    for (int u = 0; u < nu && !st; u++) {
        if (un->n_u[u] < 1.5)
            continue;
        st = run_irrep(cx, mode, SCM_SYMSTAB_STD, u, -1, d, perp_dim, work, res, &cap);
        if (!st && un->sg[u] >= 0 && (un->tg[u] >= 0 || self) && un->n_u[u] > 2.5) {
            /* [n-2,2] and [n-2,1,1] together: one refinement, two parities */
            st = run_irrep(cx, mode, SCM_SYMSTAB_TWO_ROW, u, -1, d, perp_dim, work, res, &cap);
        }
        for (int u2 = u + 1; u2 < nu && !st; u2++) {
            if (un->n_u[u2] < 1.5)
                continue;
            int tu = un->tg[u] >= 0 || (self && un->sg[u] >= 0);
            int tu2 = un->tg[u2] >= 0 || (self && un->sg[u2] >= 0);
            if ((un->sg[u] >= 0 && tu2) || (tu && un->sg[u2] >= 0))
                st = run_irrep(cx, mode, SCM_SYMSTAB_STD_STD, u, u2, d, perp_dim, work, res,
                               &cap);
        }
    }
    free(work);
    return st;
}
