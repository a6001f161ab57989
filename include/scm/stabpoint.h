/* stabpoint.h: the point `scm stability` analyses, and its result record.
 *
 * A point is either entry i of a `scm fixed-points -o` result file (its K,
 * M, activation, Q and R), or the chosen point of a k1 family
 * (scm_family_pick_run, family.h).  Its stability is scm_stab_analyse's
 * (stability.h); scm_stabpoint_json gives exactly the object
 * `scm stability -o FILE` writes.  Nothing here prints or exits. */
#ifndef SCM_STABPOINT_H
#define SCM_STABPOINT_H

#include <cjson/cJSON.h>

#include "scm/family.h"
#include "scm/stability.h"

typedef struct {
    long K, M;
    char activation[64];   /* from a file: its "activation" ("relu" when absent);
                              from a family: empty (the caller's) */
    double *Q, *R;         /* the point, K x K and K x M (owned) */
    char desc[1200];       /* one line: where it comes from, its ansatz and loss */
    int from_family;       /* 1: pick holds the family and the choice */
    scm_family_pick pick;
} scm_stabpoint;

/* Fixed point index of the `scm fixed-points` result file at path.
 * Errors (err in the words of `scm stability`, naming the file): SCM_EIO
 * when it cannot be read; SCM_EINVAL when it is not JSON, not such a
 * result (integer K, M in 1 .. 10000 and an array fixed_points), the
 * index is out of range, the point has no full state (Q null) or Q, R have
 * the wrong shape; SCM_ENOMEM.  Free sp with scm_stabpoint_free in every
 * case. */
scm_status scm_stabpoint_load(const char *path, long index, scm_stabpoint *sp, scm_error *err);

/* The chosen point of the family o describes (scm_family_pick_run, whose
 * errors and p->why it passes on in sp->pick).  Free sp with
 * scm_stabpoint_free in every case. */
scm_status scm_stabpoint_family(const scm_family_pick_opts *o, scm_stabpoint *sp,
                                scm_error *err);

/* The result object of `scm stability`: the point (desc, the family when
 * there is one, Q, R), the options o of the analysis and its result r for
 * activation act.  The caller frees it; NULL on no memory. */
cJSON *scm_stabpoint_json(const scm_stabpoint *sp, const scm_activation *act,
                          const scm_stab_opts *o, const scm_stab_result *r);

void scm_stabpoint_free(scm_stabpoint *sp);

#endif
