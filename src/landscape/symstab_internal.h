/* symstab_internal.h (internal): what symstab.c and symstab_cells.c
 * share: the units of an instance, the cells of a refinement of it, and
 * the block-level Hessian on the cells' patterns
 * (docs/symmetric-stability.md). */
#ifndef SCM_SYMSTAB_INTERNAL_H
#define SCM_SYMSTAB_INTERNAL_H

#include "scm/ansatz.h"
#include "scm/kernel.h"
#include "scm/symstab.h"

/* A block: d I + o (J - I) (structured, a paired cell) or c J (d = o = c). */
typedef struct {
    double d, o;
} sym_blk;

/* Entry classes of an R pattern. */
enum { SYM_DIAG = 0, SYM_OFF = 1, SYM_CONST = 2 };

/* A cache of the pair kernels of one point (symstab_cells.c, kern): the
 * refinements of every isotypic block evaluate the same few (a, b, c)
 * again and again.  Open addressing on the bits of the arguments; the
 * values are those of the first evaluation, so bit for bit the same. */
typedef struct {
    double a, b, c;
    int students, used;
    scm_pair p;
    scm_pair2 q;
} sym_kc_entry;
#define SYM_KC_CAP 256

/* The units: groups permuted together (a paired student and teacher
 * group, an unpaired student group, or a teacher group without
 * students), sizes > 0 only. */
typedef struct {
    int n;
    int *sg, *tg;      /* student / teacher group of the instance, or -1 */
    double *n_u;       /* size */
    char (*name)[72];
    sym_kc_entry *kc;  /* [SYM_KC_CAP] kernel cache of the point, or NULL (none) */
} sym_units;

/* What the cell builder needs. */
typedef struct {
    const scm_ansatz_inst *in;
    const scm_activation *act;
    const double *x;
    const sym_units *units;
    scm_symstab_refusal *refusal;
    scm_error *err;
    /* Students outside the teacher span: their out-of-span parts as rows
     * of Z = (Q - R R^T)^(1/2), K "ghost" coordinates (block pattern per
     * student group of the instance: zd, zo [ns], zc [ns x ns]); NULL when
     * the students lie in the span. */
    const double *zd, *zo, *zc;
    /* 1: evaluate ReLU kernels of parallel neurons in the limit (the
     * Hessian; symstab.h, opts.parallel_limit), recorded in res */
    int parallel_limit;
    scm_symstab_result *res;
} sym_ctx;

/* A refinement: every unit split into up to three pieces (two singletons,
 * pieces 0 and 1, and the rest, piece 2), each piece a student cell and/or
 * a teacher cell; the point's patterns on them, the kernels of every entry
 * class, S, and scratch for the Hessian's action. */
typedef struct {
    void *mem;
    int ns, nt;
    int *s_unit, *s_piece, *sp; /* sp: the paired teacher cell, or -1 */
    int *t_unit, *t_piece;
    int *gp;                    /* the ghost teacher cell of a student cell, or -1 */
    int *t_ghost;               /* 1 for a ghost cell (a coordinate of Z, no kernel) */
    int *t_mirror;              /* the student cell a ghost cell mirrors, or -1 */
    double *s_n, *t_n;
    double *h1, *h2;            /* h'(Q_kk), h''(Q_kk) of the self term */
    sym_blk *Q, *S, *P, *dQ, *dS; /* ns x ns */
    sym_blk *R, *X, *B, *dB;    /* ns x nt */
    sym_blk *Rt, *Xt;           /* nt x ns: R^T, and X^T (sym_cells_jacobian's) */
    scm_pair *pq, *prd, *pro;   /* kernels: student pairs; R diagonal/constant, R off */
    scm_pair2 *q2, *r2d, *r2o;
    int ncls;                   /* classes of R patterns: cell pair and SYM_* type */
    int *cls_c, *cls_t, *cls_type;
} sym_cells;

/* The cells of refinement nsing[unit] (0, 1 or 2 singletons), the point
 * x on them and (with_kernels) every kernel and S.  NULL with *st and
 * cx->err (and *cx->refusal) set on failure. */
sym_cells *sym_cells_build(const sym_ctx *cx, const int *nsing, int with_kernels,
                           scm_status *st);

/* max |R R^T - Q| over the entry classes (0 when the students lie in the
 * teacher span, T = I); P (ns x ns, may be NULL) gets Q - R R^T. */
double sym_cells_span_defect(const sym_cells *c, sym_blk *P);

/* Is teacher cell t (real or ghost) paired with student cell s? */
static inline int sym_paired(const sym_cells *c, int s, int t)
{
    return c->sp[s] == t || c->gp[s] == t;
}
void sym_cells_free(sym_cells *c);

/* HX (ns x nt blocks) = the Hessian (in U = W / sqrt d, teacher basis)
 * applied to the pattern c->X. */
void sym_cells_apply(sym_cells *c, sym_blk *HX);

/* The flow's Jacobian (T = I) along (dQ, dR) = (c->dQ, c->X), both
 * block patterns (dQ symmetric): JQ (ns x ns) and JR (ns x nt) blocks of
 * the derivative of F_Q = -(S Q + Q S + B R^T + R B^T), F_R = -(S R + B). */
void sym_cells_jacobian(sym_cells *c, sym_blk *JQ, sym_blk *JR);

/* ---- symstab_blocks.c ---- */

scm_status sym_units_build(const scm_ansatz_inst *in, sym_units *u);
void sym_units_free(sym_units *u);

/* Eigenvalues (and, if Vec, eigenvectors as columns) of the symmetric
 * n x n matrix A (destroyed). */
scm_status sym_eig_sym(double *A, int n, double *ev, double *Vec);

enum { SYM_MODE_SPAN = 0, SYM_MODE_PERP = 1, SYM_MODE_JAC = 2 };

/* Every isotypic block of the Hessian (SYM_MODE_SPAN: the teacher span,
 * and the complement with multiplicity perp_dim per dimension of the
 * irreducible representation; eigenvalues divided by d) or of the flow's
 * Jacobian (SYM_MODE_JAC), appended to res->eig (unsorted). */
scm_status sym_run_all(const sym_ctx *cx, int mode, long d, long perp_dim,
                       scm_symstab_result *res);

#endif
