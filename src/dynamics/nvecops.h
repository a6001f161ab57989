/* nvecops.h: faster serial vector operations for CVODE (nvecops.c). */
#ifndef SCM_NVECOPS_H
#define SCM_NVECOPS_H

#include <sundials/sundials_nvector.h>

/* Replace the reductions (dot products, weighted RMS norms) and the common
 * element-wise operations of a serial N_Vector with vectorisable loops.
 * Clones made afterwards (CVODE's and SPGMR's work vectors) inherit them.
 * Element-wise results are bitwise those of SUNDIALS; reductions are summed
 * in another order (eight partial sums). */
void scm_nvecops_install(N_Vector v);

#endif
