/* fpclassify_internal.h: the parts of the structure of a fixed point
 * (scm_fp_structure) that do not depend on how students are paired with
 * teachers, shared by scm_fp_classify (fixedpoint.c: the pairing of
 * scm_model_align on the full state, the reference) and
 * scm_fp_classify_block (fpsweep_classify.c: the same pairing at block
 * level).  Defined in fpsweep_classify.c. */
#ifndef SCM_FPCLASSIFY_INTERNAL_H
#define SCM_FPCLASSIFY_INTERNAL_H

#include "scm/fixedpoint.h"
#include "scm/model.h"

/* Zero *s, then its invariants tr Q and ||R||_F^2 from the scalars. */
void scm_fp_structure_norms(const scm_ansatz_inst *in, const double *x, scm_fp_structure *s);

/* n_anti, n_aligned, n_other of *s from each student's alignment kind[k]
 * (k = 0 .. K - 1): a student of an unspecialised group (diag = off) is
 * "other" whatever its kind. */
void scm_fp_structure_count(const scm_ansatz_inst *in, const double *x,
                            const scm_alignment *kind, scm_fp_structure *s);

#endif
