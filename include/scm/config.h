/* config.h: the run configuration (JSON) of `scm run`.
 *
 * A configuration is parsed from JSON text, optionally modified by
 * "key.path=value" overrides (value is JSON, or else taken as a string),
 * and validated: unknown keys, wrong types and out-of-range values are
 * rejected with a message naming the key.  Defaults are filled in, and the
 * configuration actually used is available as JSON for the result file.
 * The format is documented in README.md ("Config format"). */
#ifndef SCM_CONFIG_H
#define SCM_CONFIG_H

#include <cjson/cJSON.h>

#include "scm/model.h"
#include "scm/init.h"
#include "scm/rule.h"
#include "scm/traj.h"

typedef enum { SCM_INIT_RANDOM, SCM_INIT_GIVEN } scm_init_type;

typedef struct scm_config {
    int K, M;
    const scm_activation *act;
    double *T;        /* M x M, or NULL for the identity */
    double *v, *vs;   /* K and M second-layer weights */
    const scm_rule *rule;
    scm_init_type init;
    long d;              /* random init: dimension */
    double sigma;        /* random init: student weight std */
    unsigned long seed;  /* random init: seed */
    double scale;        /* multiplies every student vector (small init) */
    scm_init_law law;    /* random init: the law (init.h; init.law, default gaussian) */
    double *Q0, *R0;     /* given init (K x K, K x M), else NULL */
    scm_traj_opts traj;
    cJSON *used;         /* the configuration actually used, defaults filled */
} scm_config;

/* Parse and validate.  sets[0..nsets-1] are "key.path=value" overrides
 * applied before validation.  source names the input in messages (a file
 * name).  On success *out owns everything; free with scm_config_free. */
scm_status scm_config_parse(const char *text, const char *source, const char *const *sets,
                            int nsets, scm_config **out, scm_error *err);

/* Read path and parse it as above. */
scm_status scm_config_load(const char *path, const char *const *sets, int nsets,
                           scm_config **out, scm_error *err);

/* The largest config file read (64 MiB). */
#define SCM_CONFIG_MAX_BYTES ((size_t)64 << 20)

/* Remove the keys unset[0 .. nunset - 1] (`--unset`: "a.b.c", a key of
 * nested objects, whose default then applies) from the JSON text *text of
 * *len bytes (source names it in messages): *text is replaced by the text
 * without them, every number printed exactly, and *len by its length.
 * nunset = 0 leaves *text alone.  SCM_EINVAL when the text is not a JSON
 * object or lacks a key (the message names it), SCM_ENOMEM; *text is
 * unchanged on failure.  *text must be malloc'ed; the caller frees it. */
scm_status scm_config_unset(char **text, size_t *len, const char *source,
                            const char *const *unset, int nunset, scm_error *err);

/* The config file at path as text (at most SCM_CONFIG_MAX_BYTES, no NUL
 * byte; scm_output_read_file), the keys unset[] removed as by
 * scm_config_unset: *text malloc'ed (the caller frees), *len its length.
 * SCM_EIO (cannot open or read: the path and the reason), SCM_EINVAL,
 * SCM_ENOMEM; *text is NULL on failure. */
scm_status scm_config_read(const char *path, const char *const *unset, int nunset, char **text,
                           size_t *len, scm_error *err);

/* scm_config_load with the keys unset[] removed before the sets[] apply. */
scm_status scm_config_load_unset(const char *path, const char *const *sets, int nsets,
                                 const char *const *unset, int nunset, scm_config **out,
                                 scm_error *err);

void scm_config_free(scm_config *c);

/* The model the configuration describes (caller frees). */
scm_model *scm_config_model(const scm_config *c, scm_error *err);

/* The trajectory c describes (config_run.c): its model, its initial state
 * and scm_traj_run from there, the whole of `scm run`.  As scm_traj_run,
 * SCM_OK also for a failed run (r->stop == SCM_STOP_FAILED, r->err); an
 * error (model, initial state, arguments, no memory) leaves r empty.  Free
 * r with scm_traj_result_free in either case. */
scm_status scm_config_run(const scm_config *c, scm_traj_result *r, scm_error *err);

/* The initial state (Q, R) of the configuration, scale applied. */
scm_status scm_config_initial_state(const scm_config *c, const scm_model *m, double *Q,
                                    double *R, scm_error *err);

#endif
