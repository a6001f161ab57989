/* fplist.h: a short list of the fixed points the built-in ansätze give at
 * (K, M) for an activation (T = I, v = v* = 1).
 *
 * Every enumerated point (scm_fp_enumerate with the default options but
 * `starts` random Newton starts) of every built-in ansatz and k1 instance
 * that applies, with a full state and a full residual below 1e-12, is kept
 * once: points of equal loss (to 1e-10), tr Q and ||R||_F^2 (to 1e-6)
 * found in several ansätze or instances are one point, listed under the
 * first (ansatz order, then k1).  The list is sorted by loss.  It is what
 * `scm split` chooses a parent from and what `scm staircase` matches its
 * plateaus against.  Nothing here prints or exits; GSL's error handler
 * must be set by the program. */
#ifndef SCM_FPLIST_H
#define SCM_FPLIST_H

#include "scm/fixedpoint.h"

typedef struct {
    double eps;      /* loss (polished if polished) */
    double trQ;      /* tr Q */
    double normR2;   /* ||R||_F^2 */
    double n_anti;   /* anti-aligned students (scm_fp_classify) */
    double *Q, *R;   /* the full state, K x K and K x M (owned) */
    double jac_re_max; /* the largest real part of the flow Jacobian's
                          eigenvalues, by symmetry (scm_stab_symmetric_jacobian
                          at the ansatz point; NaN where it refuses): the cost
                          does not grow with K */
    char ansatz[64]; /* where first found: "name k1 = N" */
} scm_fplist_point;

/* Fill *out with the *n_out points of the list at (K, M) for act, starts
 * random Newton starts per instance, enumerated on threads threads (1 ..
 * 64; the list does not depend on it).  The caller frees *out with
 * scm_fplist_free (also on failure: *out then holds the points listed so
 * far).  An instance whose enumeration fails is skipped, as one with no
 * point.  Errors: SCM_ENOMEM. */
scm_status scm_fplist_find(int K, int M, const scm_activation *act, long starts, int threads,
                           scm_fplist_point **out, int *n_out, scm_error *err);

/* Free the n points of fp and the array (fp may be NULL). */
void scm_fplist_free(scm_fplist_point *fp, int n);

#endif
