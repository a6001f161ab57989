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
#include "scm/symstab.h"

/* The symmetric spectra of a point (symstab.h) and how its perturbation
 * test ran: filled by scm_stabpoint_analyse. */
typedef struct {
    int done;               /* 1: the Hessian's and the Jacobian's spectra are symmetric */
    scm_symstab_result hess, jac;
    long predicted_zeros;   /* rotations outside the teacher span + ReLU homogeneity */
    int perturb;            /* the perturbation test that ran (SCM_STABPOINT_PERTURB_*) */
    char why_dense[256];    /* when not done: why the dense path ran ("" if asked) */
} scm_stabpoint_sym;

/* The perturbation test: AUTO is WEIGHTS (GD steps in weight space, then
 * the flow; scm_stab_analyse) for K d <= SCM_STABPOINT_WEIGHTS_MAX, else
 * QR (the perturbation drawn in weight space, mapped to (Q, R), then only
 * the CVODE flow: scm_stab_perturb_qr) for K <= SCM_STABPOINT_QR_AUTO_MAX_K,
 * else NONE (a run costs about 1 s of CPU at K = 100: the symmetric
 * spectrum decides alone, QR on request); NONE skips it. */
enum {
    SCM_STABPOINT_PERTURB_AUTO = 0,
    SCM_STABPOINT_PERTURB_WEIGHTS,
    SCM_STABPOINT_PERTURB_QR,
    SCM_STABPOINT_PERTURB_NONE
};
#define SCM_STABPOINT_WEIGHTS_MAX 800
#define SCM_STABPOINT_QR_AUTO_MAX_K 30

typedef struct {
    long K, M;
    char activation[64];   /* from a file: its "activation" ("relu" when absent);
                              from a family: empty (the caller's) */
    double *Q, *R;         /* the point, K x K and K x M (owned) */
    char desc[1200];       /* one line: where it comes from, its ansatz and loss */
    int from_family;       /* 1: pick holds the family and the choice */
    scm_family_pick pick;
    char ansatz[64];       /* the ansatz the point belongs to ("": unknown) */
    int instance;          /* its instance label (not the point's k1) */
    scm_stabpoint_sym sym; /* the symmetric analysis (scm_stabpoint_analyse) */
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

/* The point to analyse and its activation (stabpoint_get.c): entry index of
 * the result file point (scm_stabpoint_load), or, when point is NULL, the
 * chosen point of the family fo describes (scm_stabpoint_family; fo->act
 * is set here, a failure's message is its list sp->pick.why when there is
 * one).  The activation is actname, else the file's, else relu; an
 * unknown name is SCM_EINVAL.  Free sp with scm_stabpoint_free in every
 * case. */
scm_status scm_stabpoint_get(const char *point, long index, const char *actname,
                             scm_family_pick_opts *fo, scm_stabpoint *sp,
                             const scm_activation **act, scm_error *err);

/* The point `scm stability` (and the Python call) analyses and the options
 * of its analysis, as the command line gives them: K, M, k1, index -1 and
 * loss NaN when not given.  scm_stabpoint_args_default: nothing chosen,
 * starts 100, threads 0 (the processors online; the family does not depend
 * on it), d 0 (K + M), steps 1000, trials 10, seed 1, flow and Hessian on. */
typedef struct {
    const char *point, *ansatz, *actname; /* NULL: not given */
    long K, M, k1, index, starts, threads, d, steps, trials, seed;
    double loss;
    int flow, hessian;
} scm_stabpoint_args;
void scm_stabpoint_args_default(scm_stabpoint_args *a);

/* The choice a makes: either point and index, or the family K, M, k1 (k1
 * <= K) with at most one of index and loss.  SCM_EINVAL naming the rule
 * broken in the words of `scm stability` ("give --index or --loss, not
 * both"; the caller adds its prefix), else SCM_OK. */
scm_status scm_stabpoint_args_check(const scm_stabpoint_args *a, scm_error *err);

/* a's d, steps, trials, seed, flow and Hessian into o (o's other fields as
 * they are), then scm_stab_opts_check(o). */
scm_status scm_stabpoint_args_opts(const scm_stabpoint_args *a, scm_stab_opts *o,
                                   scm_error *err);

/* The point a chooses and its activation: scm_stabpoint_get with the file
 * (point, index) or the family a describes (its ansatz file, starts,
 * threads, index, loss).  Free sp with scm_stabpoint_free in every case. */
scm_status scm_stabpoint_args_get(const scm_stabpoint_args *a, scm_stabpoint *sp,
                                  const scm_activation **act, scm_error *err);

/* The result object of `scm stability`: the point (desc, the family when
 * there is one, Q, R), the options o of the analysis and its result r for
 * activation act.  The caller frees it; NULL on no memory. */
cJSON *scm_stabpoint_json(const scm_stabpoint *sp, const scm_activation *act,
                          const scm_stab_opts *o, const scm_stab_result *r);

/* The analysis of sp for activation act: with dense = 0 and a point whose
 * ansatz is known (sp->ansatz, looked up in ansatz_file or else the
 * built-in ansätze, instantiated at (K, M, sp->instance), the point
 * projected onto it), the spectra are the symmetric ones
 * (scm_stab_symmetric_full, scm_stab_symmetric_jacobian; sp->sym.done =
 * 1): r's Hessian fields hold their counts (n = K d), smallest and
 * largest eigenvalues, and the verdict: a saddle with a negative
 * eigenvalue, else a minimum when the zeros are exactly the predicted
 * ones (sp->sym.predicted_zeros), degenerate with more, inconsistent with
 * fewer; r's Jacobian fields the largest and smallest real parts.  The
 * perturbation test is o's, run as perturb says (SCM_STABPOINT_PERTURB_*).
 * With dense = 1, or no ansatz, or a point the symmetric path refuses
 * (sp->sym.why_dense says why), the spectra are scm_stab_analyse's dense
 * ones and the perturbation test runs as perturb says, AUTO meaning
 * WEIGHTS there.  Errors
 * those of scm_stab_analyse, and SCM_EINVAL for an ansatz that cannot be
 * found or instantiated (naming it). */
scm_status scm_stabpoint_analyse(scm_stabpoint *sp, const scm_activation *act,
                                 const scm_stab_opts *o, int dense, int perturb,
                                 const char *ansatz_file, scm_stab_result *r, scm_error *err);

/* The perturbation test in (Q, R), for large K: for each sigma of o,
 * o->n_trials perturbations xi ~ N(0, sigma^2) of the realisation W (d =
 * o->d or K + M) mapped to (Q, R) by scm_weights_overlaps, then the CVODE
 * flow of (Q, R) to o->t_max (no GD steps: dist and deps are those of the
 * perturbed start; the cost of a run does not depend on d).  Fills
 * r->rows, r->n_rows and r->verdict (and r->agree against r->hverdict);
 * needs r->eps, the point's loss.  Errors: bad options, a point that
 * cannot be realised, no memory. */
scm_status scm_stab_perturb_qr(const scm_model *m, const double *Q, const double *R,
                               const scm_stab_opts *o, scm_stab_result *r, scm_error *err);

void scm_stabpoint_free(scm_stabpoint *sp);

#endif
