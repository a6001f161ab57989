/* output.h: writing result files.  Every result file is written atomically:
 * to a temporary file in the same directory, flushed, then renamed over the
 * target, so that a failed or killed run never leaves a half-written file.
 * JSON helpers turn row-major matrices into arrays of arrays; cJSON prints
 * non-finite numbers as null, so results state their status explicitly. */
#ifndef SCM_OUTPUT_H
#define SCM_OUTPUT_H

#include <cjson/cJSON.h>

#include "scm/status.h"

/* What an output path may be.  A new path or a regular file is replaced
 * atomically (a temporary file beside it, then rename).  A character device
 * or a FIFO, also behind a symbolic link (/dev/null, /dev/stdout, a named
 * pipe), is written directly: the rename would replace the device node or
 * the link by a regular file; so is a descriptor already open
 * (/dev/stdout, /dev/stderr, /dev/fd/N), appended to whatever it is.
 * Anything else is refused: a symbolic link to
 * a file or to nothing (the link is not ours to replace), a directory, a
 * block device, a socket.  SCM_OK, or SCM_EINVAL naming the path and what it
 * is. */
scm_status scm_output_check_path(const char *path, scm_error *err);

/* 1 if paths a and b name the same file: the same string, or both exist
 * and are one file (the same device and inode, links followed); else 0.
 * A command refuses an output that is also one of its inputs or another of
 * its outputs before it writes anything. */
int scm_output_same_file(const char *a, const char *b);

/* An output a command may write (out NULL: none, SCM_OK): not one of the n
 * paths in[] (its inputs and other outputs; NULL entries skipped:
 * SCM_EINVAL "the output '<out>' is also an input or output ('<in>');
 * refused"), and accepted by scm_output_check_path. */
scm_status scm_output_check_out(const char *out, const char *const *in, int n, scm_error *err);

/* Write len bytes of data to path: atomically, or directly to a device or
 * FIFO, as scm_output_check_path describes (whose refusal it returns).
 * SCM_EIO with the path and the system's reason in err on failure (the
 * temporary file is removed).  From the temporary's creation to its rename
 * or removal SIGHUP, SIGINT, SIGQUIT and SIGTERM are blocked in the calling
 * thread (pthread_sigmask, the previous mask restored after): one that
 * arrives then takes effect after the cleanup, so a killed command leaves
 * either the old file or the new one, complete, and no PATH.tmpXXXXXX.
 * (SIGKILL cannot be blocked; nor are the signals of other threads.) */
scm_status scm_output_write_atomic(const char *path, const char *data, size_t len,
                                   scm_error *err);

/* The n files paths[i] <- data[i] (len[i] bytes), all or none: every path
 * is checked first (scm_output_check_path; two names of one file refused,
 * SCM_EINVAL), then every regular file is written to its temporary, and
 * only when all are written are they renamed in order; on a failure the
 * temporaries are removed and no target is touched (a rename failing
 * after others succeeded, which needs the folder to change meanwhile,
 * leaves those).  Devices and FIFOs are written directly, after the
 * renames.  The signals are blocked as in scm_output_write_atomic from the
 * first temporary to the last rename. */
scm_status scm_output_write_many(int n, const char *const *paths, const char *const *data,
                                 const size_t *len, scm_error *err);

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
