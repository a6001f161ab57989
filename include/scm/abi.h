/* abi.h: the sizes of the public structs, for bindings that mirror them
 * (python/scmode declares them with ctypes and checks every size at load,
 * so that a struct changed in C cannot be read with a stale layout). */
#ifndef SCM_ABI_H
#define SCM_ABI_H

#include <stddef.h>

/* sizeof the public struct named type ("scm_traj_opts", ...); 0 if the
 * name is not one of them. */
size_t scm_abi_sizeof(const char *type);

#endif
