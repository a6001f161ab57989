/* cli_util.h (CLI): helpers every subcommand needs: reading a whole file,
 * parsing numeric options with a message that names the option, a clock
 * for progress lines.  Messages go to stderr as "<me>: ..." where me is the
 * subcommand ("scm sweep"). */
#ifndef SCM_CLI_UTIL_H
#define SCM_CLI_UTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "scm/sweep.h"
#include "scm/sweepfile.h"

/* Exit statuses of every command: 0 done, 1 a numerical failure (the
 * result says why), 2 bad input or usage (nothing written), 4 an output
 * could not be written (disk full, permissions; nothing half-made is left,
 * but a sweep's runs file keeps the records written, for --resume). */
#define CLI_EXIT_IO 4

/* 0 when out may be written: not one of the n inputs in[] (NULL entries
 * skipped), and scm_output_check_path accepts it; else -1 after printing
 * "<me>: ..." naming out (and the input). */
int cli_check_output(const char *me, const char *out, const char *const *in, int n);

/* Seconds on a monotonic clock. */
double cli_now(void);

/* The whole file as a NUL-terminated string (*len its length, without the
 * NUL); NULL with errno set on failure.  The caller frees. */
char *cli_read_all(const char *path, size_t *len);

/* The file parsed as JSON, or NULL (unreadable or not JSON).  The caller
 * frees with cJSON_Delete. */
cJSON *cli_read_json(const char *path);

/* Quiet parsers: 1 when s is a whole integer in [lo, hi] (a finite
 * number), 0 otherwise; *out is set only on success. */
int cli_parse_long(const char *s, long lo, long hi, long *out);

/* The processors online, clamped to [1, 16]: the default number of threads
 * of the commands whose results do not depend on it (fixed-points). */
int cli_cpu_count(void);
int cli_parse_double(const char *s, double *out);

/* Reporting parsers for option values: 0 on success; -1 after printing
 * "<me>: <opt> needs an integer in [lo, hi], got '<s>'" (or "a positive
 * number"). */
int cli_opt_long(const char *me, const char *opt, const char *s, long lo, long hi, long *out);
int cli_opt_positive(const char *me, const char *opt, const char *s, double *out);

/* A comma-separated list of 1 .. cap finite numbers (> 0 if positive) into
 * x[0 .. *n - 1]; 0, or -1 after printing the error. */
int cli_opt_list(const char *me, const char *opt, const char *s, int positive, double *x, int cap,
                 int *n);

/* Append printf output to the malloc'ed buffer *buf (length *len, capacity
 * *cap > 0), growing it; 0 on no memory (the buffer is still the caller's). */
int cli_buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The default output name of a command: CONFIG's base name (directory
 * dropped) without .json, plus suffix (".result.json"); NULL on no memory,
 * else the caller frees. */
char *cli_output_name(const char *config, const char *suffix);

/* A fixed-points result file (scm fixed-points -o) as sweep families. */
scm_status cli_load_families(const char *path, scm_sweep_families *fams, scm_error *err);

/* The progress line of a sweep on stderr ("\r12/100  3.1 runs/s  ETA 28 s
 * k1:0 12, ..."), at most every 0.2 s unless final (which ends the line):
 * done0 is the count when the runs started, at time t0 (cli_now()), last
 * the time of the last line. */
typedef struct {
    long done0;
    double t0, last;
} cli_progress;
void cli_sweep_progress(const scm_sweep_file *f, cli_progress *p, int final);

/* The final lines of `scm sweep` on stderr: counts, classes with Wilson
 * intervals, and the timing of new_runs runs in secs on width units. */
void cli_sweep_print_summary(const scm_sweep_summary *sum, long total, long new_runs, double secs,
                             int width, const char *unit);

#endif
