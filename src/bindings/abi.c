/* abi.c: sizes of the public structs (abi.h). */
#include "scm/abi.h"

#include <string.h>

#include "scm/config.h"
#include "scm/fixedpoint.h"
#include "scm/stability.h"
#include "scm/sweep.h"

#define SCM_ABI_TYPE(t) {#t, sizeof(t)}

static const struct {
    const char *name;
    size_t size;
} abi_types[] = {
    SCM_ABI_TYPE(scm_error),          SCM_ABI_TYPE(scm_pair),
    SCM_ABI_TYPE(scm_activation),     SCM_ABI_TYPE(scm_rule_params),
    SCM_ABI_TYPE(scm_traj_opts),      SCM_ABI_TYPE(scm_config),
    SCM_ABI_TYPE(scm_traj_result),    SCM_ABI_TYPE(scm_fp_opts),
    SCM_ABI_TYPE(scm_fp_point),       SCM_ABI_TYPE(scm_fp_set),
    SCM_ABI_TYPE(scm_stab_opts),      SCM_ABI_TYPE(scm_stab_smooth),
    SCM_ABI_TYPE(scm_stab_zero_modes), SCM_ABI_TYPE(scm_stab_counts),
    SCM_ABI_TYPE(scm_stab_row),       SCM_ABI_TYPE(scm_stab_result),
    SCM_ABI_TYPE(scm_sweep_opts),     SCM_ABI_TYPE(scm_sweep_families),
};

size_t scm_abi_sizeof(const char *type)
{
    if (!type)
        return 0;
    for (size_t i = 0; i < sizeof abi_types / sizeof abi_types[0]; i++)
        if (strcmp(abi_types[i].name, type) == 0)
            return abi_types[i].size;
    return 0;
}
