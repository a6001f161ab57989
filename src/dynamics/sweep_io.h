/* sweep_io.h: reading runs files line by line with a bound (issue 26),
 * private to sweep_file.c (which defines them) and sweep_merge.c.  A runs
 * file is streamed, never read whole: a line longer than
 * SCM_SWEEP_LINE_MAX or holding a NUL byte ends the read (so /dev/zero or
 * /dev/full is "not a runs file", not an exhausted memory). */
#ifndef SCM_SWEEP_IO_H
#define SCM_SWEEP_IO_H

#include <stdio.h>

#include "scm/status.h"

/* Longest line accepted (a header lists the config and the families). */
#define SCM_SWEEP_LINE_MAX ((size_t)16 << 20)

/* Largest families file read (scm_sweep_families_load). */
#define SCM_SWEEP_FAMILIES_MAX ((size_t)256 << 20)

/* Open path for reading as a runs file: NULL with err SCM_EINVAL naming the
 * path and the reason ("is a directory", the system's). */
FILE *scm_sweep_io_open(const char *path, scm_error *err);

/* The next line of f into *buf (grown as needed, *cap its size): 1 with
 * the line NUL-terminated without its newline, *len its length and *nl 1
 * when it ended with a newline (0: the file ended first); 0 at the end of
 * the file; -1 a read error (errno set); -2 longer than
 * SCM_SWEEP_LINE_MAX; -3 a NUL byte; -4 no memory. */
int scm_sweep_io_line(FILE *f, char **buf, size_t *cap, size_t *len, int *nl);

/* The message of a scm_sweep_io_line failure rc (< 0) for path line lineno. */
scm_status scm_sweep_io_error(int rc, const char *path, long lineno, scm_error *err);

#endif
