/* output.h: writing result files.  Every result file is written atomically:
 * to a temporary file in the same directory, flushed, then renamed over the
 * target, so that a failed or killed run never leaves a half-written file.
 * JSON helpers turn row-major matrices into arrays of arrays; cJSON prints
 * non-finite numbers as null, so results state their status explicitly. */
#ifndef SCM_OUTPUT_H
#define SCM_OUTPUT_H

#include <cjson/cJSON.h>

#include "scm/status.h"

/* Write len bytes of data to path atomically.  SCM_EIO with the path and
 * the system's reason in err on failure (the temporary file is removed). */
scm_status scm_output_write_atomic(const char *path, const char *data, size_t len,
                                   scm_error *err);

/* Print json (unformatted when compact) and write it atomically, with a
 * final newline. */
scm_status scm_output_write_json(const char *path, const cJSON *json, int compact,
                                 scm_error *err);

/* json printed (unformatted when compact) with every number exact: the
 * shortest of 15, 16 and 17 significant digits that reads back to the same
 * double.  cJSON alone prints 15 digits whenever they read back to within
 * a relative DBL_EPSILON, i.e. it may lose the last bit.  NULL on no
 * memory; free with free(). */
char *scm_output_print(const cJSON *json, int compact);

/* A rows x cols row-major matrix as a JSON array of arrays (NULL on no
 * memory). */
cJSON *scm_output_matrix(const double *A, int rows, int cols);

/* A vector as a JSON array (NULL on no memory). */
cJSON *scm_output_vector(const double *x, int n);

/* Read a row-major matrix of exactly rows x cols from a JSON array of
 * arrays of numbers into A.  name is used in the error message.  A == NULL
 * only checks the shape and types: a caller checks before it allocates
 * rows x cols doubles, so that a short input cannot claim a huge matrix. */
scm_status scm_output_read_matrix(const cJSON *json, const char *name, int rows, int cols,
                                  double *A, scm_error *err);

/* The whole file at path as a NUL-terminated string (*len its length, the
 * caller frees it), or NULL with err filled: SCM_EIO (cannot open or read:
 * the path and the system's reason), SCM_EINVAL (larger than about
 * max_len bytes), SCM_ENOMEM. */
char *scm_output_read_file(const char *path, size_t max_len, size_t *len, scm_error *err);

#endif
