/* ansatz.h: block-symmetric ansätze for the fixed points of the flow
 * (MATH.md section 5).
 *
 * An ansatz is data: a JSON file partitions the K students and M teachers
 * into named groups whose sizes are expressions in K, M and k1, and pairs
 * some student groups with teacher groups of equal size.  Permuting
 * students and teachers group by group, Q and R become block matrices:
 *
 *   Q diagonal block of group g:  x I + y (J - I)   scalars Q[g,g].diag, .off
 *   Q block between groups g, h:  c J               scalar  Q[g,h]
 *   R block of a paired (g, t):   x I + y (J - I)   scalars R[g,t].diag, .off
 *   R any other block (g, t):     c J               scalar  R[g,t]
 *
 * A group of size 0 has no scalars; a group of size 1 has no .off scalar.
 * File format (every key but "description", "guess", "require", "k1" is
 * required; unknown keys are errors):
 *
 *   { "name": "k1", "description": "...",
 *     "require": ["K - M"],              expressions that must equal 0
 *     "k1": ["0", "M"],                  range of k1 (inclusive)
 *     "students": {"anti": "k1", "al": "K - k1"},
 *     "teachers": {"tanti": "k1", "tal": "M - k1"},
 *     "pairs": {"anti": "tanti", "al": "tal"},
 *     "guess": {"R[anti,tanti].diag": -0.6} }   optional Newton start values
 *
 * Expressions: integers, K, M, k1, + - *, unary minus and parentheses.
 *
 * An scm_ansatz is the parsed file; scm_ansatz_instantiate evaluates it at
 * given (K, M, k1), which may be real numbers (the reduced equations with
 * group sizes as multiplicities, used for continuation in M).  The
 * full-matrix maps need integer sizes.  Matrices are row-major: Q is K x K,
 * R is K x M; students and teachers are numbered group by group in file
 * order. */
#ifndef SCM_ANSATZ_H
#define SCM_ANSATZ_H

#include <stddef.h>

#include "scm/status.h"

typedef struct scm_ansatz scm_ansatz;
typedef struct scm_ansatz_inst scm_ansatz_inst;

/* Parse an ansatz from JSON text of length len; source names it in error
 * messages.  NULL on failure, with err naming the problem (a syntax error
 * in an expression, an unknown key, a pairing of an unknown group, a group
 * paired twice, ...).  The caller frees the result. */
scm_ansatz *scm_ansatz_parse(const char *text, size_t len, const char *source, scm_error *err);

/* Read and parse a file. */
scm_ansatz *scm_ansatz_load(const char *path, scm_error *err);
void scm_ansatz_free(scm_ansatz *a);

const char *scm_ansatz_name(const scm_ansatz *a);
const char *scm_ansatz_description(const scm_ansatz *a);

/* The ansätze built into the library (the same text as the files shipped in
 * ansatz/): their number, and the JSON text of number i (NULL if out of
 * range) with its file name in *file. */
int scm_ansatz_builtin_count(void);
const char *scm_ansatz_builtin_text(int i, const char **file);

/* Does the ansatz apply at (K, M), i.e. do all "require" expressions
 * vanish and all "require_positive" ones evaluate to at least 1?  If so, fill the k1 range (an ansatz without "k1" has k1 = 0
 * only).  Returns 1 if it applies, 0 if not, -1 on an evaluation error. */
int scm_ansatz_applies(const scm_ansatz *a, int K, int M, int *k1_min, int *k1_max);

/* Evaluate the ansatz at (K, M, k1): the group sizes, their sums (they
 * must equal K and M), pair sizes (must be equal), non-negativity.  NULL
 * with a named error otherwise.  The caller frees the result. */
scm_ansatz_inst *scm_ansatz_instantiate(const scm_ansatz *a, double K, double M, double k1,
                                        scm_error *err);
void scm_ansatz_inst_free(scm_ansatz_inst *in);

int scm_ansatz_inst_nscalars(const scm_ansatz_inst *in);
const char *scm_ansatz_inst_scalar_name(const scm_ansatz_inst *in, int i);
const char *scm_ansatz_inst_name(const scm_ansatz_inst *in);
/* 1 if all sizes are integers (the full maps below are available). */
int scm_ansatz_inst_integral(const scm_ansatz_inst *in);
double scm_ansatz_inst_K(const scm_ansatz_inst *in);
double scm_ansatz_inst_M(const scm_ansatz_inst *in);
double scm_ansatz_inst_k1(const scm_ansatz_inst *in);
/* Index of the scalar named name, or -1. */
int scm_ansatz_inst_find(const scm_ansatz_inst *in, const char *name);
/* The guess of the file for scalar i, if any: returns 1 and fills *value. */
int scm_ansatz_guess(const scm_ansatz *a, const scm_ansatz_inst *in, int i, double *value);

/* scalars x -> full (Q, R).  SCM_EINVAL if the sizes are not integral. */
scm_status scm_ansatz_to_full(const scm_ansatz_inst *in, const double *x, double *Q,
                              double *R);

/* Full symmetric Q (K x K) and R (K x M) -> scalars: the average of each
 * block's entry class.  If dev is not NULL it receives the largest
 * deviation of an entry from its class average (0 exactly on the ansatz).
 * Applied to (F_Q, F_R) this is the projection of the flow onto the
 * ansatz, and dev the invariance defect. */
scm_status scm_ansatz_project(const scm_ansatz_inst *in, const double *Q, const double *R,
                              double *x, double *dev);

#endif
