/* nvecops.h: CVODE plumbing that is faster than the stock (nvecops.c): the
 * serial vector operations and the dense linear solver. */
#ifndef SCM_NVECOPS_H
#define SCM_NVECOPS_H

#include <sundials/sundials_linearsolver.h>
#include <sundials/sundials_nvector.h>

#include "core/linalg.h"

/* Replace the reductions (dot products, weighted RMS norms) and the common
 * element-wise operations of a serial N_Vector with vectorisable loops.
 * Clones made afterwards (CVODE's and SPGMR's work vectors) inherit them.
 * Element-wise results are bitwise those of SUNDIALS; reductions are summed
 * in another order (eight partial sums). */
void scm_nvecops_install(N_Vector v);

/* The same with the copy of the operations for isa (for tests and
 * benchmarks; scm_nvecops_install takes the widest the CPU has).  Every
 * copy computes the same bits.  Returns 0, or -1 when this CPU or build
 * lacks it (v unchanged). */
int scm_nvecops_install_copy(N_Vector v, scm_linalg_isa isa);

/* CVODE's dense direct solver for n x n SUNDenseMatrix systems with the LU
 * of linalg.h (the algorithm of SUNLinSol_Dense, partial pivoting, in
 * place; 4x faster at n ~ 30).  NULL when out of memory; free with
 * SUNLinSolFree. */
SUNLinearSolver scm_nvecops_lu_new(long n, SUNContext ctx);

#endif
