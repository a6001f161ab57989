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

#endif
