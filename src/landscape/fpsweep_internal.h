/* fpsweep_internal.h (internal): what the files of the k1 sweep and of the
 * continuation in M (scm_fp_sweep_grow) share.  fpsweep.c holds the sweeps
 * in k1 and the chain in M and the mapping of a solution between
 * instances; fpsweep_path.c the chord corrector and the steps of a path
 * (predictor, jump test, bookkeeping of a block solution);
 * fpsweep_close.c the closure in k1 at one M; fpsweep_grow.c the
 * continuation in M that drives them.  Each calls only files listed
 * before it. */
#ifndef SCM_FPSWEEP_INTERNAL_H
#define SCM_FPSWEEP_INTERNAL_H

#include <gsl/gsl_matrix.h>
#include <gsl/gsl_permutation.h>
#include <gsl/gsl_vector.h>

#include "scm/fpsweep.h"

/* ---- fpsweep.c ---- */

/* Map the scalars of solution x of instance from onto instance to (y,
 * nscalars(to) values) by name; a scalar that from lacks (a group of size
 * 0 or 1 there) starts at 1 for a diagonal of Q and at 0 otherwise. */
void scm_fp_map_point(const scm_ansatz_inst *from, const double *x, const scm_ansatz_inst *to,
                      double *y);

/* scm_fp_map_point, except that an off-diagonal scalar that from lacks (a
 * group of size 1 there) starts at the group's overlap with another group
 * when from has one. */
void scm_fp_map_point_fill(const scm_ansatz_inst *from, const double *x,
                           const scm_ansatz_inst *to, double *y);

/* ---- fpsweep_path.c ---- */

/* A chord-Newton corrector for solutions a small step from the last one:
 * the Jacobian (forward differences, n residual evaluations) is kept from
 * the previous point of the branch and refreshed only when it stops
 * contracting, so a step costs a few residual evaluations.  Zero it to
 * start; its storage follows the number of scalars of the last solve;
 * free with scm_fp_chord_free (which keeps the counters). */
typedef struct {
    int n, valid, fresh; /* fresh: computed at the current iterate */
    gsl_matrix *J;
    gsl_permutation *perm;
    gsl_vector *F, *dx;
    double *xt, *Ft;
    long evals;          /* residual evaluations, for the bench */
    long hybrids;        /* fallbacks to scm_fp_solve */
} scm_fp_chord;

void scm_fp_chord_free(scm_fp_chord *c);

/* Correct x (overwritten; at most 256 scalars) to a solution of bf's block
 * residual by the chord iteration, and where it fails by GSL's hybrids
 * (scm_fp_solve, 30 iterations) from the same start.  0 with *res (max
 * |F|) and *eps (the loss) on success, -1 on failure (or no memory). */
int scm_fp_chord_correct(scm_fp_chord *c, scm_blockflow *bf, double *x, const scm_fp_opts *o,
                         double *res, double *eps);

/* Is x (n scalars, loss eps) already in s: scalars within tol (max norm),
 * or the same loss to 1e-10 relative (see fpsweep.c's merge_new)? */
int scm_fp_set_has(const scm_fp_set *s, const double *x, int n, double eps, double tol);

/* Append a block-level solution x of instance in to s (the full-space
 * fields NaN, hits 1).  0, or -1 for no memory. */
int scm_fp_set_add_block(scm_fp_set *s, const scm_ansatz_inst *in, const double *x, double eps,
                         double res, double gmin);

/* Is the solution x of bf acceptable: its Gram matrix's least eigenvalue
 * (*gmin) at least -o->psd_tol? */
int scm_fp_psd_ok(scm_blockflow *bf, const double *x, const scm_fp_opts *o, double *gmin);

/* The secant predictor of a path in a parameter p: x at p_next (out, n
 * values) from the current point xc (at pc) and the previous one xp (at
 * pp; NaN: none, the prediction is xc itself). */
void scm_fp_path_predict(const double *xc, const double *xp, double pc, double pp,
                         double p_next, int n, double *out);

/* Did the corrector stay on the branch?  A correction xt of the
 * prediction much larger than the last step (0.05 + twice it, max norm)
 * is a jump to another branch.  At most 256 scalars. */
int scm_fp_path_no_jump(const double *xc, const double *xp, double pc, double pp,
                        double p_next, int n, const double *xt);

/* ---- fpsweep_close.c ---- */

/* An item of the closure's queue: point p of instance i, reached from
 * point from_p of instance from (-1: a start). */
typedef struct {
    int i, p, from, from_p;
} scm_fp_grow_item;

/* Append it to the queue (*queue grows as needed; the caller frees it);
 * -1 for no memory. */
int scm_fp_grow_queue_push(scm_fp_grow_item **queue, int *n_queue, int *cap_queue,
                           scm_fp_grow_item it);

/* The closure in k1 at one M: every solution, once, is continued to each
 * neighbouring instance (k1 +- 1) of sw by the corrector, from its
 * scalars mapped by name, plus the last step again (secant) when the
 * solution was itself reached from the other side; every new solution is
 * queued in turn.  So every branch in k1 that holds one solution of the
 * queue is carried to all k1 it reaches, and branches that cross or touch
 * are all followed (a branch that ends at a point another branch found
 * goes on from there in both directions).  bfs holds a blockflow per
 * instance of sw; the queue's first *n_queue items are the starts.  buf
 * holds 1024 doubles; *steps counts the corrector calls.  Returns 0, or
 * -1 for no memory. */
int scm_fp_close_k1(const scm_ansatz *a, const scm_activation *act, scm_fp_sweep *sw,
                    scm_blockflow **bfs, scm_fp_grow_item **queue, int *n_queue,
                    int *cap_queue, const scm_fp_opts *o, scm_fp_chord *ch, double *buf,
                    long *steps);

#endif
