/* certify.h: computer-assisted proofs that a fixed point of a
 * block-symmetric ansatz exists (docs/certify.md, issue 27).
 *
 * In ball arithmetic (Arb), with every rounding error accounted for:
 *  - existence: the Krawczyk operator of the block-level residual of
 *    blockflow.h over a box X = x +- r around the given scalars x,
 *      K(X) = x - Y F(x) + (I - Y J(X)) (X - x),
 *    Y a floating-point inverse of J(x), J(X) an enclosure of the
 *    Jacobian over X (forward-mode derivatives in balls); K(X) inside the
 *    interior of X proves a unique zero of the block residual in X.  By
 *    symmetric criticality (docs/certify.md) it is a zero of the full flow;
 *  - smoothness: every pair kernel the residual uses (student-student,
 *    student-teacher) has ab - c^2 > 0 over the whole box, i.e. no two
 *    vectors are parallel or anti-parallel, and every ReLU student norm is
 *    positive, so the closed forms and their derivatives hold;
 *  - realisability: the zero is a state of weights.  At the zero
 *    S X + X S = 0 for X = Q - R R^T (from F_R = 0 and F_Q = 0 with
 *    T = I).  If S = A + A^T is definite over the box, or (S indefinite)
 *    no two eigenvalues of S that meet on block-symmetric matrices sum to
 *    0 over the box (rigorous enclosures, certify_real.c), X = 0 and the
 *    Gram matrix [[T, R^T], [R, Q]] is [I; R][I, R^T], PSD: the students
 *    lie in the teacher span.  If only a group's contrast value of S may
 *    vanish and X is provably positive there, the Gram matrix is PSD with
 *    students partly outside the span (off_span; strictness not tried).
 * The loss is enclosed over the box.
 *  - strictness: the symmetry-adapted Hessian (symstab.h) assembled in
 *    balls over the box, on the pattern space of every refinement whose
 *    blocks make up the spectrum; each proved positive definite by a ball
 *    Cholesky of Hs - t I (lower bound t), or indefinite by a Rayleigh
 *    quotient < 0 in balls.  Verdicts: "certified strict local minimum"
 *    (for every d >= M), "certified saddle", "certified critical point,
 *    strictness unproved" (with the reason), "not certified".  Setting: T = I, v = v* = 1 as blockflow.h;
 * activations relu, erf, linear. */
#ifndef SCM_CERTIFY_H
#define SCM_CERTIFY_H

#include <cjson/cJSON.h>

#include "scm/ansatz.h"
#include "scm/kernel.h"

typedef struct {
    long prec;          /* bits of the balls (128) */
    double max_radius;  /* the largest box radius tried, max norm (1e-8): the
                           certificate states a true zero within this of x */
    double mutate_dc;   /* TEST ONLY (0): multiply the ReLU kernel's df/dc by
                           1 + mutate_dc in the ball residual */
    double mutate_d2;   /* TEST ONLY (0): multiply every kernel's d2f/dc2 by
                           1 + mutate_d2 in the ball Hessian */
} scm_certify_opts;

void scm_certify_opts_default(scm_certify_opts *o);

typedef struct {
    int certified;       /* 1: a unique zero in the box, smooth, realisable */
    char verdict[64];    /* "certified critical point, strictness unproved" or
                            "not certified" */
    char reason[240];    /* why not (empty when certified) */
    char realisable[120];/* how realisability was proved */
    int off_span;        /* 1: realisable with students partly outside the teacher
                            span (Q - R R^T PSD, not 0); strictness is not tried */
    double radius;       /* the box radius r (max norm) */
    double newton_step;  /* max |Y F(x)| (floating point) */
    double contraction;  /* max_i |K(X)_i - x_i| / r (< 1 when proved) */
    double loss_lo, loss_hi;  /* the loss over the box */
    double res_hi;       /* an upper bound of max |F(x)| at x itself */
    double sin2_min;     /* a lower bound of sin^2 of every angle over the box */
    /* strictness (when certified): the Hessian in U = W / sqrt(d), i.e.
     * d times scm_stab_hessian's, whose spectrum does not depend on d */
    int strict;          /* 1 strict local minimum (every d >= M), -1 saddle, 0 unproved */
    double lambda_lo;    /* strict: every eigenvalue of d H is > lambda_lo (no zero
                            modes in the span); NAN otherwise */
    double lambda_span_lo, lambda_perp_lo; /* the same for the teacher span and for its
                            complement (S; multiplicity d - M); NAN if unproved */
    double lambda_float; /* floating-point smallest eigenvalue of d H (the midpoints) */
    double lambda_neg_hi;/* saddle: some eigenvalue of d H is < lambda_neg_hi < 0 */
    int hess_spaces;     /* pattern spaces examined */
    int hess_open;       /* of those, neither proved positive nor negative */
    char hess_where[240];/* saddle: where the negative eigenvalue lives */
    char hess_why[240];  /* unproved: the first open space and why */
} scm_certify_result;

/* Certify the scalars x of instance in (activation act).  Fills *res with
 * the verdict; returns SCM_OK whether or not the point is certified, an
 * error only for bad options (SCM_EINVAL), an unsupported activation or
 * no memory, with err naming it. */
scm_status scm_certify_point(const scm_ansatz_inst *in, const scm_activation *act,
                             const double *x, const scm_certify_opts *o,
                             scm_certify_result *res, scm_error *err);

/* The block residual and loss over the box x +- r in balls (r >= 0): the
 * midpoints and radii of each F_i and of the loss (Fmid, Frad of length
 * nsc; eps_mid, eps_rad may be NULL).  Returns what the ball evaluation
 * returns (SCM_ESINGULAR: parallel vectors in the box, SCM_EDEAD), with
 * err naming the pair. */
scm_status scm_certify_residual(const scm_ansatz_inst *in, const scm_activation *act,
                                const double *x, double r, const scm_certify_opts *o,
                                double *Fmid, double *Frad, double *eps_mid, double *eps_rad,
                                scm_error *err);

/* The result as JSON (the caller frees it). */
cJSON *scm_certify_result_json(const scm_certify_result *res);

/* ---- the points of `scm certify` (certify_run.c) ---- */

typedef struct {
    int K, M, k1;          /* the point's family (k1 = anti-aligned students) */
    char ansatz[64];       /* its ansatz and instance */
    int instance;
    int index;             /* its index in the family (by loss) or the file */
    double eps;            /* its floating-point loss */
    char stability[40];    /* the family's floating-point class ("" from a file) */
    scm_certify_result r;
    /* a plateau table's row (scm_certify_table; table_line 0 otherwise): */
    int table_line;        /* its line in the file (the header is line 1) */
    double polish_shift;   /* max |change| of the scalars by the double Newton
                              polish (NAN: the polish failed) */
    int polished;          /* 1: the polished scalars were certified; 0: the
                              stored ones (the polish failed or moved them by
                              more than max_radius) */
} scm_certify_entry;

typedef struct {
    int n, cap;
    scm_certify_entry *e;
} scm_certify_list;

/* Certify the points of the k1 family at (K, M) (ReLU, the built-in
 * ansätze, starts random Newton starts per instance): its minimum
 * candidates (every point with every_point = 1); k1 = -1: every k1 = 0 ..
 * K.  Appends to out (zero-initialised by the caller); SCM_EINVAL when no
 * built-in ansatz applies at (K, M). */
scm_status scm_certify_family(int K, int M, int k1, int every_point, long starts,
                              const scm_certify_opts *o, scm_certify_list *out, scm_error *err);

/* Certify point index of a `scm fixed-points -o` result file: its Q and R
 * projected onto its ansatz (a built-in one; the projection defect must be
 * below 1e-9); index SCM_CERTIFY_EVERY (any index < 0 but the next): every
 * point of the file, in order (e.g. those of `scm fixed-points
 * --grow-from`); SCM_CERTIFY_MINIMA: every point whose block Jacobian has
 * no eigenvalue above SCM_FAM_EIG_TOL (the floating-point minimum
 * candidates at block level; the others are skipped).  Errors name the
 * file. */
#define SCM_CERTIFY_EVERY (-1)
#define SCM_CERTIFY_MINIMA (-2)
scm_status scm_certify_fpfile(const char *path, long index, const scm_certify_opts *o,
                              scm_certify_list *out, scm_error *err);

/* Which rows of a plateau table scm_certify_table certifies: every bound
 * -1 is "any"; M in [M_min, M_max]. */
typedef enum {
    SCM_CERTIFY_ROWS_MINIMA = 0, /* classification min_candidate, global_min or
                                    degenerate (zero modes beyond the rotations) */
    SCM_CERTIFY_ROWS_BLOCK_STABLE, /* block_max_eig <= SCM_FAM_EIG_TOL (what --minima
                                      takes from a fixed-points file) */
    SCM_CERTIFY_ROWS_EVERY       /* every row */
} scm_certify_rows;

typedef struct {
    int K, M, dK, k1;      /* k1: the family_n_anti column */
    int M_min, M_max;
    scm_certify_rows rows;
} scm_certify_table_sel;

/* Any row, minima only. */
void scm_certify_table_sel_default(scm_certify_table_sel *s);

/* Certify the selected rows of a plateau table (the CSV of
 * bench/gen_plateau_table, e.g. data/plateau_table_M100.csv; columns K, M,
 * family_n_anti, classification, ansatz, instance, scalars, and
 * block_max_eig for SCM_CERTIFY_ROWS_BLOCK_STABLE, found by the header)
 * from their stored scalars ("name=value;..." to 15 digits): each is
 * Newton-polished in double first (kept if it moves the scalars by at
 * most o->max_radius), then certified (scm_certify_point, ReLU).  The
 * whole file is checked before any row is certified; bad input
 * (SCM_EINVAL) names the file, the line and the column.  progress (may be
 * NULL) is called after each row with (done, total). */
scm_status scm_certify_table(const char *path, const scm_certify_table_sel *sel,
                             const scm_certify_opts *o,
                             void (*progress)(void *ctx, int done, int total), void *ctx,
                             scm_certify_list *out, scm_error *err);

/* The arguments of `scm certify` (and of the Python call), as the command
 * line gives them: K, M, k1, index, dK -1 when not given.  Three forms: a
 * family (K, M, k1 or all, every), a fixed-points file (point with index,
 * or every or minima: all its entries or its block-stable ones), or a
 * plateau table (table, selected by K, M, k1, dK, M_min, M_max, rows).
 * scm_certify_args_default: nothing given, starts 40, M in [1, 1000000],
 * rows SCM_CERTIFY_ROWS_MINIMA. */
typedef struct {
    const char *point, *table; /* NULL: not given */
    long K, M, k1, index, starts, dK, M_min, M_max;
    int all, every, minima, rows;
} scm_certify_args;
void scm_certify_args_default(scm_certify_args *a);

/* The rules of a's options among themselves (certify_args.c): SCM_EINVAL
 * naming the rule broken in the words of `scm certify` ("--k1 4 exceeds K
 * = 3"; the caller adds its prefix), else SCM_OK. */
scm_status scm_certify_args_check(const scm_certify_args *a, scm_error *err);

/* The run a asks for, appended to out: scm_certify_table (with progress
 * and ctx, which may be NULL), scm_certify_fpfile or scm_certify_family
 * (k1 1 by default, all: every k1); their errors. */
scm_status scm_certify_args_run(const scm_certify_args *a, const scm_certify_opts *o,
                                void (*progress)(void *ctx, int done, int total), void *ctx,
                                scm_certify_list *out, scm_error *err);

/* The table `scm certify` prints (certify_text.c): a header line, then per
 * entry K, M, k1, its index, ansatz, the loss enclosure [lo, hi], the box
 * radius, the proved bound of the smallest eigenvalue of d H (">lo" a
 * strict minimum, "<hi" a negative one, "-" none) and the verdict with its
 * reason; "-" columns for an entry not certified.  NULL on no memory; the
 * caller frees. */
char *scm_certify_list_text(const scm_certify_list *l);

/* The list as the JSON result of `scm certify`; the caller frees it. */
cJSON *scm_certify_list_json(const scm_certify_list *l, const scm_certify_opts *o);
void scm_certify_list_free(scm_certify_list *l);

#endif
