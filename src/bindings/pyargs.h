/* pyargs.h: the arguments of a JSON-in/JSON-out entry point (abi.h,
 * scm_abi_call), read from a JSON object with every key and value checked:
 * an unknown key, a value of the wrong type or out of the command-line
 * option's range is SCM_EINVAL with a message naming the key and the value,
 * as the CLI names the option.  Internal to src/bindings. */
#ifndef SCM_BINDINGS_PYARGS_H
#define SCM_BINDINGS_PYARGS_H

#include <cjson/cJSON.h>

#include "scm/status.h"

typedef struct {
    const char *cmd;  /* the command, for messages ("fixed_points") */
    const cJSON *obj; /* the arguments (an object) */
    scm_error *err;
} py_args;

/* Every key of a->obj is one of keys[] (NULL-terminated): SCM_OK, or
 * SCM_EINVAL naming the first unknown key and the known ones. */
scm_status py_args_check_keys(const py_args *a, const char *const *keys);

/* Present and not null? */
int py_args_has(const py_args *a, const char *key);

/* The value of key into *v when present and not null (else *v is left as
 * it is): an integral number in [lo, hi]; a real number in [lo, hi]
 * (finite); true/false (*v 1/0); a string; an array of at most max strings
 * (*n of them, pointers into the object).  SCM_OK or SCM_EINVAL. */
scm_status py_args_long(const py_args *a, const char *key, long lo, long hi, long *v);
scm_status py_args_double(const py_args *a, const char *key, double lo, double hi, double *v);
scm_status py_args_bool(const py_args *a, const char *key, int *v);
scm_status py_args_str(const py_args *a, const char *key, const char **v);
scm_status py_args_strs(const py_args *a, const char *key, const char **v, int max, int *n);

/* st, after prefixing a's message (a library's, in the command's words)
 * with "<cmd>: ". */
scm_status py_args_prefix(const py_args *a, scm_status st);

/* The object {"<name>": item, ...} printed exactly (scm_output_print) into
 * *out; the items are taken over (deleted here, also on failure).
 * names/items: n pairs; a NULL item is skipped.  SCM_ENOMEM or SCM_OK. */
scm_status py_args_reply(char **out, int n, const char *const *names, cJSON *const *items,
                         scm_error *err);

#endif
