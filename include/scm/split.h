/* split.h: splitting a neuron of a fixed point (docs/split.md).
 *
 * A fixed point (Q, R) of the K-student flow (first layer trained, second
 * layer v fixed) embeds into K + n - 1 students by replacing neuron r with
 * n identical daughters w_r whose output weights are mu_j v_r, sum_j mu_j =
 * 1: the network function, the loss and the gradient are unchanged, so the
 * embedded point is a fixed point of the larger flow for every mu (n = 2:
 * mu = (lambda, 1 - lambda), the "lambda line").
 *
 * Its weight-space Hessian decouples (by a congruence) into the parent's
 * Hessian and the form sum_j mu_j e_j^T H_r e_j on the daughters'
 * differences (sum_j mu_j e_j = 0), where the parent's inner Hessian is
 *
 *   H_r = v_r E[(phi - phi*)(x) g''(lambda_r) x x^T] / d,
 *
 * the residual-weighted second derivative of neuron r's feature.  In the
 * order-parameter representation, with u = (w_1..w_K, w*_1..w*_M) and
 * U the (K + M) x d matrix of these rows,
 *
 *   d H_r = 2 c0 I + U^T C U / d,
 *
 * C ((K + M) x (K + M)) and c0 built from first and second derivatives of
 * the pair kernels; so d H_r is 2 c0 on the orthogonal complement of the
 * students' and teachers' span and 2 c0 + eig(L^T C L) on the span, G =
 * [[Q, R], [R^T, T]] = L L^T.  Sylvester's law of inertia then predicts the
 * inertia of the split point's Hessian (scm_split_predict).
 *
 * Nothing here prints, exits or uses global state. */
#ifndef SCM_SPLIT_H
#define SCM_SPLIT_H

#include <cjson/cJSON.h>

#include "scm/stability.h"

typedef enum {
    SCM_SPLIT_PD,         /* d H_r positive definite */
    SCM_SPLIT_ND,         /* negative definite */
    SCM_SPLIT_INDEFINITE, /* eigenvalues of both signs */
    SCM_SPLIT_SEMIDEF     /* a zero eigenvalue on the span and no two signs (e.g. zero
                             residual) */
} scm_split_class;
const char *scm_split_class_str(scm_split_class c); /* "PD", "ND", "indefinite", "semidefinite" */

typedef struct {
    int K, M, r;
    int n;           /* K + M */
    double *C;       /* n x n, symmetric: d H_r = 2 c0 I + U^T C U / d */
    double c0;
    int rank;        /* numerical rank of G = [[Q, R], [R^T, T]] (the span) */
    double *eval;    /* rank eigenvalues of d H_r on the span, ascending */
    double h_perp;   /* d H_r on the complement of the span: 2 c0 */
    double zero_tol; /* |h| <= zero_tol counts as zero: rel_tol * max |h| */
    int n_pos, n_neg, n_zero; /* counts over the span eigenvalues */
    int perp_flat;   /* |h_perp| <= zero_tol: always so for erf at a fixed point */
    int homog_zero;  /* ReLU: 1 span zero (H_r w_r = 0, homogeneity) is explained */
    scm_split_class cls;      /* over the span and, unless it is flat, the complement */
} scm_split_inner;

/* The inner Hessian of neuron r at (Q, R) of model m (K students), with
 * zero threshold max(rel_tol * largest |eigenvalue|, 1e-12) (rel_tol e.g.
 * 1e-6; the floor makes H_r = 0, at zero loss, semidefinite).
 * The activation must have second derivatives here (erf, relu, linear).
 * ReLU: neuron r's own term vanishes (g(0) g''(0) = 0: the kink of
 * E[g(lambda_r) delta(lambda_r) ...] carries g(0) = 0), and H_r w_r = 0
 * (lambda delta(lambda) = 0: the homogeneity of the daughters, one span
 * zero that the class ignores: homog_zero); another student or
 * a teacher parallel to w_r gives SCM_ESINGULAR, a dead neuron r
 * SCM_EDEAD.  SCM_EINVAL for r out of range; SCM_ENOMEM; SCM_ESOLVER
 * (eigensolver).  h is owned by the caller: scm_split_inner_free. */
scm_status scm_split_inner_hessian(const scm_model *m, const double *Q, const double *R, int r,
                                   double rel_tol, scm_split_inner *h, scm_error *err);
void scm_split_inner_free(scm_split_inner *h);

/* The d x d weight-space matrix H_r (not times d) at a realisation W (K x
 * d), Ws (M x d) of the (Q, R) that h was computed at. */
void scm_split_inner_weights(const scm_split_inner *h, long d, const double *W, const double *Ws,
                             double *Hr);

/* Embed (Q, R) of model m into K + n - 1 students: neuron r becomes
 * daughter 0 (output weight mu[0] v_r) and daughters 1..n-1 are appended as
 * students K..K + n - 2.  Fills vc (K + n - 1), Qc ((K + n - 1)^2) and Rc
 * ((K + n - 1) x M).  SCM_EINVAL (names the problem) when n < 2, r is out
 * of range, a mu is not finite or |sum mu - 1| > 1e-12. */
scm_status scm_split_embed(const scm_model *m, const double *Q, const double *R, int r, int n,
                           const double *mu, double *vc, double *Qc, double *Rc, scm_error *err);

/* The inertia of the split point's Hessian in dimension d (> rank) that
 * Sylvester's law predicts from the parent's Hessian counts and the inner
 * Hessian: the daughters' difference form sum_j mu_j e_j^T H_r e_j on
 * sum_j mu_j e_j = 0 has the inertia of (diag(mu) restricted to mu^T y =
 * 0) (x) H_r, i.e. (n_+ - 1, n_-, n_0) (x) (p, q, z) with n_+/-/0 the
 * numbers of positive, negative and zero mu_j and p, q, z those of d H_r
 * over R^d (the span's eigenvalues plus d - rank copies of h_perp). */
typedef struct {
    long n_neg, n_zero, n_pos;        /* the whole Hessian */
    long diff_neg, diff_zero, diff_pos; /* the daughters' difference block alone */
    long diff_zero_explained; /* of diff_zero: daughters of zero weight (n_0 d), a flat
                                 complement ((n_+ - 1 + n_-) (d - rank)) and ReLU's
                                 homogeneity (n_+ - 1 + n_-); other zeros of H_r on the
                                 span are not explained */
} scm_split_inertia;

void scm_split_predict(const scm_stab_counts *parent, const scm_split_inner *h, long d, int n,
                       const double *mu, scm_split_inertia *out);

/* The verdict the inertia implies: a minimum to second order (no negative
 * eigenvalue and only the explained zero modes, n_explained of them: the
 * parent's symmetry modes plus the predicted zeros of the difference
 * block, i.e. a daughter of zero weight, a flat complement, a zero of
 * H_r), a saddle (a negative eigenvalue), degenerate (more zero modes) or
 * inconsistent (fewer). */
scm_hverdict scm_split_verdict(const scm_split_inertia *p, long n_explained);

/* ---- the split point's checks ---- */

/* The Hessian of model m at (Q, R) realised in dimension d (> K + M - 1 is
 * safe): closed form, or central differences where the closed form does
 * not evaluate (ReLU, parallel neurons); its eigenvalues (ascending, into
 * eval[K d]) and counts (zero threshold rel_tol), and the symmetry zero
 * modes (scm_stab_predict_zero_modes, tolerance 1e-9).  *closed is set to
 * 1 for the closed form.  Status of the realisation or of the Hessian. */
scm_status scm_split_hessian(const scm_model *m, const double *Q, const double *R, long d,
                             double rel_tol, double *eval, scm_stab_counts *c,
                             scm_stab_zero_modes *zm, int *closed, scm_error *err);

/* One point of a split line, checked against the larger network. */
typedef struct {
    double eps;          /* loss of the split point (= the parent's) */
    double residual;     /* max |F_Q|, |F_R| of the K + n - 1 flow there */
    int closed;          /* the Hessian in closed form (else central differences) */
    scm_stab_counts counts;     /* of its Hessian */
    scm_split_inertia pred;     /* predicted */
    long explained_zero; /* parent's symmetry zero modes + pred.diff_zero_explained */
    double eval_min;     /* smallest eigenvalue once the explained_zero eigenvalues
                            nearest zero are removed (NaN if none is left) */
    int match;           /* 1 if counts agree with pred exactly */
    scm_hverdict verdict;      /* from the measured counts (zeros vs explained_zero) */
    scm_hverdict pred_verdict; /* from pred (scm_split_verdict) */
} scm_split_point;

/* Embed with scm_split_embed and check: residual, loss, Hessian spectrum at
 * dimension d, predicted inertia from parent (the parent's Hessian counts
 * at the same d and its symmetry zero modes parent_zero_sym) and h.
 * Status of the embedding, the flow or the Hessian. */
scm_status scm_split_check(const scm_model *m, const double *Q, const double *R,
                           const scm_split_inner *h, int n, const double *mu, long d,
                           double rel_tol, const scm_stab_counts *parent, long parent_zero_sym,
                           scm_split_point *out, scm_error *err);

/* The model of the split point: K + n - 1 students, v = vc, the same
 * activation, teachers, T and v*.  NULL with err filled on failure. */
scm_model *scm_split_model(const scm_model *m, int n, const double *vc, scm_error *err);

/* ---- the study of `scm split`: a parent, its split line, the table ----
 *
 * A study takes a parent fixed point (read from a file or chosen among the
 * enumerated ones), checks that it is one, computes its inner Hessian and
 * its own Hessian, then checks every sample of the split line with
 * scm_split_check (and optionally the perturbation test).  Error statuses:
 * SCM_EINVAL and SCM_EIO mean bad input (`scm split` exits 2), any other a
 * failed computation (exit 1); messages are what the command prints after
 * its "scm split: " prefix. */

/* Most daughters of one split, most samples of a line. */
#define SCM_SPLIT_MAX_DAUGHTERS 16
#define SCM_SPLIT_MAX_SAMPLES 1000
/* The largest |mu_j| (|lambda|) accepted: the daughters' output weights
 * cancel to v_r (sum 1), so at |mu| = L their sum keeps 16 - log10 L digits
 * and the split point's loss and Hessian lose about 2 log10 L digits; at
 * 1e3 the Hessian's smallest eigenvalues keep about 1e-10. */
#define SCM_SPLIT_MU_MAX 1e3

/* The point that is split.  Arrays owned (scm_split_parent_free); v, vs, T
 * NULL: the defaults (ones, ones, identity). */
typedef struct {
    long K, M;
    char act[32];            /* activation name */
    double *Q, *R, *v, *vs, *T;
    char desc[1200];         /* where it came from, for the table and the result */
} scm_split_parent;

void scm_split_parent_free(scm_split_parent *p);

/* Read the parent from the JSON file at path: a `scm fixed-points -o`
 * result (its fixed_points[index]; index >= 0 required) or an object with
 * Q (K x K), R (K x M) and optionally v, vs, T, activation (index must be
 * < 0).  K, M <= 1000.  p is filled (act "erf" unless the file names one).
 * SCM_EIO (cannot read), SCM_EINVAL (not JSON, a missing or malformed
 * field, index out of range), SCM_ENOMEM.  On failure p may hold arrays:
 * free it anyway. */
scm_status scm_split_parent_load(const char *path, long index, scm_split_parent *p,
                                 scm_error *err);

/* Choose the parent among the fixed points scm_fplist_find enumerates at
 * (K, M) for act (starts Newton starts, threads threads): the one with
 * index `index` in the list sorted by loss if index >= 0, else the lowest
 * loss with k1 anti-aligned students if k1 >= 0, else the loss nearest to
 * `loss`.  Fills p (K, M, act, Q, R, desc).  SCM_ENOMEM; SCM_ENOCONV when
 * the enumeration finds no point or none with k1 anti-aligned students;
 * SCM_EINVAL for an index out of range. */
scm_status scm_split_parent_choose(long K, long M, const scm_activation *act, long starts,
                                   int threads, long k1, long index, double loss,
                                   scm_split_parent *p, scm_error *err);

/* One sample of a split line: the daughters' weights and what was found. */
typedef struct {
    int n;                              /* daughters */
    double mu[SCM_SPLIT_MAX_DAUGHTERS]; /* their weights, sum 1 */
    scm_split_point pt;                 /* scm_split_check's result */
    int perturbed;                      /* the perturbation test ran */
    scm_verdict pverdict;               /* its verdict */
} scm_split_sample;

/* The samples of a line into *s (*ns of them; the caller frees *s with
 * free(), also on failure): one split into nw >= 2 daughters of weights w
 * (sum 1 to 1e-12) if nw > 0; else two daughters (lambda, 1 - lambda) for
 * each of the nl lambdas lam if nl > 0; else grid lambdas evenly in
 * [-0.5, 1.5] (0.5 alone for grid 1).  SCM_EINVAL (weights that do not sum
 * to 1, a weight or lambda that is not finite or above SCM_SPLIT_MU_MAX in
 * size, named; nw > SCM_SPLIT_MAX_DAUGHTERS, no sample), SCM_ENOMEM. */
scm_status scm_split_samples(const double *lam, int nl, long grid, const double *w, int nw,
                             scm_split_sample **s, int *ns, scm_error *err);

typedef struct {
    int neuron;     /* r, 0-based (required) */
    long d;         /* dimension of the realisation; 0: K + M + 1 */
    int polish;     /* Newton-polish the parent first (100 steps to 1e-13) */
    int perturb;    /* the perturbation test at each sample (three sigmas, GD then CVODE) */
    double rel_tol; /* zero threshold of the spectra (1e-6) */
} scm_split_study_opts;

/* neuron 0, d 0, no polish, no perturbation test, rel_tol 1e-6. */
void scm_split_study_opts_default(scm_split_study_opts *o);

/* What a study found.  parent and samples are the caller's (borrowed: they
 * must outlive the study); the rest is owned (scm_split_study_free). */
typedef struct {
    scm_split_parent *parent;
    scm_split_sample *samples;
    int n_samples;
    scm_model *model;            /* the parent's model */
    long d;                      /* dimension used */
    scm_split_inner inner;       /* of neuron r */
    scm_stab_counts parent_counts; /* the parent's Hessian at d */
    scm_stab_zero_modes parent_zero; /* its symmetry zero modes */
    double residual;             /* the parent's flow residual, max |F_Q|, |F_R| */
} scm_split_study;

/* Run the study of parent p (polished in place when o->polish; its desc
 * gets ", Newton-polished" and "; residual R") with the samples s[0..ns-1],
 * whose pt, perturbed and pverdict are filled.  out is set even on failure
 * (free it with scm_split_study_free).  SCM_EINVAL: an unknown activation,
 * neuron out of range, a bad model (e.g. T not PSD), a state that is not
 * valid or not a fixed point (residual > 1e-9), or an invalid split;
 * otherwise the status of the failing computation (the polish: SCM_ENOCONV,
 * the spectra, the perturbation test, SCM_ENOMEM). */
scm_status scm_split_study_run(scm_split_parent *p, const scm_split_study_opts *o,
                               scm_split_sample *s, int ns, scm_split_study *out,
                               scm_error *err);
void scm_split_study_free(scm_split_study *st);

/* The result file of `scm split` (version, parent, its Hessian counts, the
 * inner Hessian, one object per sample); NULL on no memory.  The caller
 * frees it (cJSON_Delete). */
cJSON *scm_split_study_json(const scm_split_study *st);

/* The table `scm split` prints: the parent, its inner Hessian and the class
 * of the split line, one row per sample (split_text.c).  NUL-terminated,
 * malloc'ed (the caller frees); NULL if out of memory. */
char *scm_split_study_text(const scm_split_study *st);

/* The arguments of `scm split` (and of the Python call) as the command line
 * gives them: the parent chosen among the enumerated points by k1, index or
 * loss at (K, M), or read from point (entry index of a fixed-points result,
 * or a state file); the neuron split; the samples (lam, grid or w); the
 * realisation's d, polish and perturbation test.  scm_split_args_default:
 * K, M, k1, index, neuron -1 and loss NaN (not given), grid 0, d 0 (K + M
 * + 1), starts 100, threads 0 (the processors online), actname NULL (the
 * file's, else relu). */
typedef struct {
    const char *point, *actname;
    long K, M, k1, index, neuron, grid, d, starts, threads;
    double loss, lam[SCM_SPLIT_MAX_SAMPLES], w[SCM_SPLIT_MAX_DAUGHTERS];
    int nl, nw, polish, perturb;
} scm_split_args;
void scm_split_args_default(scm_split_args *a);

/* The rules of a's options among themselves (split_args.c), then grid 9
 * when no samples are given: SCM_EINVAL naming the rule broken in the
 * words of `scm split` ("--neuron r is required"; the caller adds its
 * prefix), else SCM_OK. */
scm_status scm_split_args_check(scm_split_args *a, scm_error *err);

/* A run of `scm split`: the parent, the samples and the study of them. */
typedef struct {
    scm_split_parent parent;
    scm_split_sample *samples;
    int n_samples;
    scm_split_study study;
} scm_split_run;

/* The run a (checked) asks for: scm_split_samples, the parent
 * (scm_split_parent_load with a's activation, or scm_split_parent_choose;
 * SCM_EINVAL for an unknown activation), scm_split_study_run; their
 * errors.  Free r with scm_split_run_free in every case. */
scm_status scm_split_args_run(const scm_split_args *a, scm_split_run *r, scm_error *err);
void scm_split_run_free(scm_split_run *r);

#endif
