/* fpsweep.h: all k1 instances of an ansatz at one (K, M), each seeded with
 * the solutions of its neighbours in k1 (issue 11).
 *
 * The block residual's cost does not depend on K or M, but its number of
 * random Newton starts does decide the cost of an enumeration: at
 * K = M = 1000 the k1 ansatz has 1001 instances, and 200 random starts
 * each took a minute.  A family at k1 usually has a neighbour at k1 +- 1
 * (the same structure with one student moved between the groups), so the
 * solutions of the neighbour, mapped scalar by scalar name, are starts a
 * few Newton steps from a solution.  The sweep runs up in k1 (seeds from
 * k1 - 1, plus the guess and n_random random starts per instance) and then
 * down (seeds from k1 + 1) until nothing new turns up, so a family born at
 * any k1 is carried to every k1 where it exists.  It is a continuation, not
 * a proof of completeness: a family that exists at a single k1 and is not
 * hit by that instance's random starts is missed; bench/bench_fixedpoint.c
 * compares the sweep with plain random starts. */
#ifndef SCM_FPSWEEP_H
#define SCM_FPSWEEP_H

#include "scm/fixedpoint.h"

typedef struct {
    int k1_min, k1_max, n;   /* n = k1_max - k1_min + 1 instances */
    scm_ansatz_inst **inst;  /* [n], owned */
    scm_fp_set *set;         /* [n]: the solutions of instance k1_min + i */
    int *seeds;              /* [n]: neighbour starts tried */
    int *nothing_new;        /* [n]: starts (any kind) that found no new solution */
    int passes;              /* sweeps run (up, down, up, ...) */
} scm_fp_sweep;

/* Enumerate every k1 of ansatz a at (K, M) as above: o->n_random random
 * starts per instance (on the first pass only), full checks as o says.
 * max_passes bounds the alternating sweeps (>= 2; they stop early when a
 * pass finds nothing new).  SCM_EINVAL if the ansatz does not apply;
 * otherwise errors only for bad options or no memory. */
scm_status scm_fp_sweep_k1(const scm_ansatz *a, int K, int M, const scm_activation *act,
                           const scm_fp_opts *o, int max_passes, scm_fp_sweep *sw,
                           scm_error *err);
void scm_fp_sweep_free(scm_fp_sweep *sw);

/* A solution found elsewhere (another (K, M), e.g. M - 1: continuation in
 * M; or another run), used as a Newton start: its instance's k1 and its
 * scalars by name (the names of ansatz.h, which do not depend on K, M). */
typedef struct {
    int k1;
    int n;                  /* scalars */
    const char *const *names;
    const double *values;
} scm_fp_seed;

/* The seeds with k1 mapped onto instance in (by scalar name, as below):
 * *out gets n_ext x nscalars(in) values (caller frees; NULL when none).
 * Returns 0, or -1 for no memory. */
int scm_fp_seed_starts(const scm_fp_seed *seeds, int n_seeds, const scm_ansatz_inst *in, int k1,
                       double **out, int *n_ext);

/* scm_fp_sweep_k1 with starts from elsewhere: after the sweep, each
 * instance k1 tries the seeds with that k1 (mapped by scalar name; a
 * scalar the seed lacks starts at 1 for a diagonal of Q, else 0), and if
 * they found anything new the neighbour passes run again.  Tried last, the
 * seeds only add to what scm_fp_sweep_k1 lists.  *seeds_tried (n entries,
 * caller frees; may be NULL) gets how many seeds each instance tried; they
 * count in nothing_new as well when they found nothing new. */
scm_status scm_fp_sweep_k1_seeded(const scm_ansatz *a, int K, int M, const scm_activation *act,
                                  const scm_fp_opts *o, int max_passes, const scm_fp_seed *seeds,
                                  int n_seeds, scm_fp_sweep *sw, int **seeds_tried,
                                  scm_error *err);

/* The chain in M (continuation seeds from every smaller M): the k1 sweep
 * at (M0 + dK, M0), then at each M0 < m <= M the sweep at (m + dK, m)
 * seeded (scm_fp_sweep_k1_seeded) with every solution of the previous
 * link, the n_seeds seeds added at the last.  A link where the ansatz does
 * not apply, or has a single k1, is skipped (the next link is seeded from
 * the last one run).  The seeds of a link are tried after its sweep, so
 * the result holds every solution of scm_fp_sweep_k1 at (M + dK, M), and
 * what the families of smaller M continue to.
 * *steps gets the links run, *seeds_tried the seeds tried per instance at
 * M (as scm_fp_sweep_k1_seeded).  SCM_EINVAL unless 1 <= M0 <= M or if
 * the ansatz does not apply at M; otherwise errors only for bad options or
 * no memory. */
scm_status scm_fp_sweep_k1_chain(const scm_ansatz *a, int dK, int M0, int M,
                                 const scm_activation *act, const scm_fp_opts *o, int max_passes,
                                 const scm_fp_seed *seeds, int n_seeds, scm_fp_sweep *sw,
                                 int **seeds_tried, int *steps, scm_error *err);

/* All k1 at a large M1 by continuation in M from a small base M0 (K - M =
 * dK throughout), block level (issue 11):
 *  1. the base: every k1 at M0 by scm_fp_sweep_k1 (o->n_random random
 *     starts per instance plus the neighbours' solutions);
 *  2. continuation in M: each base solution of instance j is followed
 *     from M0 to M1 along a path in (M, k1) with real group sizes: the
 *     first two and last two k1 keep k1 (or K - k1) fixed, so that their
 *     groups of size 0 or 1 keep their scalars; the others follow the
 *     straight line to the integer nearest j M1 / M0 (both groups grow in
 *     proportion).  With fixed_max >= 2, base instances k1 <= fixed_max
 *     also follow the path with k1 fixed, and k1 >= K - fixed_max the one
 *     with K - k1 fixed (the families of a few anti-aligned students at
 *     every M: at K = M = 1000, fixed_max = 3 adds the k1 = 3 point of
 *     loss 0.0232123 that the other paths miss, for 0.5 s more CPU).
 *     Natural-parameter steps in M (ratio 1.25, adapted),
 *     secant predictor, a chord-Newton corrector that keeps the Jacobian
 *     of the previous point (GSL's hybrids where it fails), and where the
 *     step fails, leaves the PSD cone or jumps, GSL's hybrids again from
 *     the predictor with a fresh Jacobian before the step is halved (near
 *     a crossing branch the kept Jacobian can lead onto it); a branch ends
 *     where no step of 1e-3 M succeeds (a fold in M, or the cone left);
 *  3. probes: o->n_random random starts (block level) at n_probe
 *     instances spread evenly over k1 at M1 (0: none), for branches born
 *     between M0 and M1 that no path reaches;
 *  4. the closure in k1 at M1: every anchor and probe solution, and every
 *     specialised solution found from them (no group with its own overlap
 *     equal to its other overlap), is continued once to each neighbouring
 *     k1 (secant predictor, then the point itself, then, where a group of
 *     one student grows to two, its new off-diagonal overlaps from its
 *     overlaps with the other groups, then through real k1 in steps of
 *     1/4 down to 1/64; a solution outside the PSD cone is tried again by
 *     hybrids with a fresh Jacobian), until nothing new is found.
 *     Unspecialised solutions met are listed but not continued.
 * The paths and the probes run on o->threads threads; the result does not
 * depend on their number.  It is not a proof of completeness: a branch
 * in k1 that no path reaches and no probe hits is missed, and paths end
 * early (at K = M = 1000 from M0 = 8, 45 of 215; bench_fixedpoint
 * --only=grow and --only=grow-table compare it with random starts and
 * with the plateau table).  Points are deduplicated
 * per instance as in scm_fp_sweep_k1 (scalars within o->dedup_tol, or an
 * equal loss); their full-space fields are NaN (block level only).
 * sw->seeds counts the k1 continuation steps tried into each instance,
 * sw->nothing_new those that ended a branch there.  gs (may be NULL) gets
 * the counts below.  SCM_EINVAL if the ansatz does not apply at M0 or M1,
 * M0 has fewer than 4 k1 instances (when M1 > M0), n_probe is not in
 * 0 .. the number of instances at M1, or an instance has more than 256
 * scalars; otherwise errors for bad options, no memory, or the probes'
 * errors. */
typedef struct {
    int base;       /* solutions at M0 */
    int reached;    /* paths continued to M1 (a base solution has one, or with
                       fixed_max >= 2 up to three) */
    int anchors;    /* distinct end points at M1 */
    long steps_M;   /* corrector calls in the continuation in M */
    long steps_k1;  /* corrector calls in the closure in k1 at M1 */
    long evals;     /* block residual evaluations of both by the chord corrector (the
                       base's not counted) */
    long hybrids;   /* corrector calls that fell back to scm_fp_solve */
    int probed;     /* new solutions found by the probes' random starts */
} scm_fp_grow_stats;

scm_status scm_fp_sweep_grow(const scm_ansatz *a, int dK, int M0, int M1, int n_probe,
                             int fixed_max, const scm_activation *act, const scm_fp_opts *o,
                             scm_fp_sweep *sw, scm_fp_grow_stats *gs, scm_error *err);

/* scm_fp_classify (fixedpoint.h) at block level: the same structure,
 * counts and invariants, bit for bit, from the ansatz scalars alone (the
 * greedy pairing of scm_model_align run level by level of |cosine| over
 * the entry classes of R), in O(K (number of entry classes) + M) time and
 * O(K + M) memory instead of the full state, an O(M^3) model and a sort
 * of the K M pairs: the classification of the points of a continuation
 * to K = M = 1000.  SCM_ENOMEM (counts NaN) is the only failure. */
scm_status scm_fp_classify_block(const scm_ansatz_inst *in, const double *x,
                                 scm_fp_structure *s);

#endif
