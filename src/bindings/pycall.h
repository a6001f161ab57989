/* pycall.h: the per-command calls behind scm_abi_call (abi.h) that live in
 * pycall_runs.c (sweep, merge, simulate, compare), pycall_sym.c (the
 * symmetric spectrum), pycall_studies.c (lintarget,
 * staircase) and pycall_split.c (split, certify).  Each reads its arguments from a (pyargs.h) and
 * on SCM_OK sets *out to the reply's JSON text.  Internal to src/bindings. */
#ifndef SCM_BINDINGS_PYCALL_H
#define SCM_BINDINGS_PYCALL_H

#include "bindings/pyargs.h"

scm_status py_call_sweep(const py_args *a, char **out);
scm_status py_call_merge(const py_args *a, char **out);
scm_status py_call_simulate(const py_args *a, char **out);
scm_status py_call_compare(const py_args *a, char **out);
scm_status py_call_symstab(const py_args *a, char **out);
scm_status py_call_lintarget(const py_args *a, char **out);
scm_status py_call_staircase(const py_args *a, char **out);
scm_status py_call_split(const py_args *a, char **out);
scm_status py_call_certify(const py_args *a, char **out);

#endif
