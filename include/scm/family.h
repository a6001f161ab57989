/* family.h: the points of one k1 family, and which of them a researcher
 * means by "the k1 = N family".
 *
 * A family is every specialised fixed point (each paired student
 * anti-aligned or aligned, K - M extra students) with k1 anti-aligned
 * students in the sense of scm_model_align (model.h), found by
 * enumerating the given ansätze at (K, M) (fixedpoint.h), keeping points
 * whose full-flow residual is below 1e-12, merging those found in several
 * ansätze or instances by (loss, tr Q, ||R||_F^2), and sorting by loss.
 * Each point carries its identity (the ansatz and k1 instance where it was
 * first found, its scalars) and a stability class from the Jacobian of the
 * flow:
 *   SCM_FAM_SADDLE_BLOCK   a block-level eigenvalue > SCM_FAM_EIG_TOL
 *                          (an unstable direction inside the ansatz);
 *   SCM_FAM_SADDLE         a full (F_Q, F_R) eigenvalue > SCM_FAM_EIG_TOL;
 *   SCM_FAM_MIN_CANDIDATE  no eigenvalue of the full Jacobian above it;
 *   SCM_FAM_BLOCK_STABLE   block level checked only (the full check is
 *                          made on demand: it costs O(n^3), n = K(K+1)/2+KM).
 * The tolerance and the classes are those of the plateau table
 * (docs/fixed-points.md).  Setting: T = I, v = v* = 1, as fixedpoint.h. */
#ifndef SCM_FAMILY_H
#define SCM_FAMILY_H

#include <cjson/cJSON.h>

#include "scm/fixedpoint.h"

#define SCM_FAM_EIG_TOL 1e-6
#define SCM_FAM_RES_TOL 1e-12

typedef enum {
    SCM_FAM_BLOCK_STABLE,
    SCM_FAM_SADDLE_BLOCK,
    SCM_FAM_SADDLE,
    SCM_FAM_MIN_CANDIDATE
} scm_fam_class;

/* "block_stable (full not checked)", "saddle (block)", "saddle",
 * "min_candidate". */
const char *scm_fam_class_str(scm_fam_class c);

typedef struct {
    double eps;           /* loss (of the polished point if polished) */
    double res;           /* full residual (polished if polished) */
    double trQ, normR2;   /* permutation invariants used to merge */
    double block_re_max;  /* largest real part, block Jacobian */
    double full_re_max;   /* largest real part, full Jacobian (NaN: not checked) */
    scm_fam_class cls;
    char ansatz[64];      /* where it was first found */
    int instance;         /* its instance label (not its k1: the ansatz's k1 group
                             need not be the anti-aligned one) */
    int n_anti;           /* anti-aligned students (== the family's k1) */
    int nsc;              /* number of ansatz scalars */
    char (*names)[80];    /* their names */
    double *x;            /* their values */
    double *Q, *R;        /* the full state, K x K and K x M */
    int hits;             /* Newton starts (all instances) that found it */
} scm_fam_point;

typedef struct {
    int K, M, k1;
    int n_instances;      /* ansatz instances enumerated */
    int n;
    scm_fam_point *pt;    /* sorted by loss */
} scm_family;

/* Enumerate the family (K, M, k1) in the n_ans ansätze (each at its
 * instance k1 and, at K = M, the mirror K - k1, which holds the same points
 * with the groups swapped), classify each point at block level.  fam is
 * filled even when empty; SCM_EINVAL when no ansatz applies (err says
 * so). */
scm_status scm_family_find(int K, int M, int k1, scm_ansatz *const *ans, int n_ans,
                           const scm_activation *act, const scm_fp_opts *o, scm_family *fam,
                           scm_error *err);

/* The full-Jacobian check of point i (a no-op if done or a block saddle). */
scm_status scm_family_check_full(scm_family *fam, int i, const scm_activation *act,
                                 scm_error *err);

/* The point a researcher means by the family: the lowest-loss minimum
 * candidate, checking points in loss order.  *index = -1 when none is. */
scm_status scm_family_default(scm_family *fam, const scm_activation *act, int *index,
                              scm_error *err);

/* The point whose loss equals eps to rtol (relative), the closest if
 * several; -1 if none. */
int scm_family_by_loss(const scm_family *fam, double eps, double rtol);

void scm_family_free(scm_family *fam);

/* ---- picking the point of a family (`scm stability --K --M --k1`) ---- */

typedef struct {
    int K, M, k1;                /* the family (no default: -1) */
    const scm_activation *act;   /* NULL: relu */
    const char *ansatz_file;     /* NULL: the built-in ansätze */
    long starts;                 /* random Newton starts per instance (100) */
    int threads;                 /* of the enumeration, 1 .. 64 (0: the processors
                                    online, at most 16); the family does not depend
                                    on it */
    long index;                  /* >= 0: the point of this index (-1) */
    double loss;                 /* finite: the point of this loss, 1e-6 relative (NaN) */
} scm_family_pick_opts;

void scm_family_pick_opts_default(scm_family_pick_opts *o);

typedef struct {
    scm_family fam;     /* every point of the family */
    int index;          /* the chosen point (-1: none) */
    const char *how;    /* the rule that chose it: "--index", "--loss" or
                           "lowest-loss minimum candidate" (static) */
    char *why;          /* after a failure with a list (a --loss that matches no
                           point, no minimum candidate): the whole message,
                           several lines, which err holds cut to its size
                           (owned; NULL otherwise) */
} scm_family_pick;

/* Enumerate the family o describes (scm_family_find with o->starts random
 * starts) and choose its point: o->index, else o->loss, else the default
 * (the lowest-loss minimum candidate); the chosen point is checked in the
 * full space.  The full-space checks use the symmetric spectrum of the
 * point's ansatz instance (scm_stab_symmetric_jacobian, symstab.h: cost
 * independent of K), scm_family_check_full where that is refused.  On SCM_OK p->fam.pt[p->index] is the point.
 * Errors (err says which, in the words of `scm stability`): SCM_EINVAL or
 * SCM_EIO for bad input (an ansatz file that cannot be read, a family out
 * of range or no ansatz applying, an index or loss that selects no
 * point); SCM_ENOCONV when the family is empty or none of its points is a
 * minimum candidate; SCM_ENOMEM or another status when a computation
 * failed.  p is filled as far as it got; free it with
 * scm_family_pick_free in every case. */
scm_status scm_family_pick_run(const scm_family_pick_opts *o, scm_family_pick *p,
                               scm_error *err);

/* The one-line description of the chosen point:
 * "family k1 = 1 [0] (--index): ansatz NAME at k1 = 1, loss L, CLASS". */
void scm_family_pick_describe(const scm_family_pick *p, char *buf, size_t len);

/* The "family" object of the `scm stability` result: the chosen point
 * (index, selection rule, ansatz, loss, class, Jacobian real parts,
 * scalars) and the list of every point.  The caller frees it; NULL on no
 * memory. */
cJSON *scm_family_pick_json(const scm_family_pick *p);

void scm_family_pick_free(scm_family_pick *p);

#endif
