/* cli_util.h (CLI): helpers every subcommand needs: reading a whole file,
 * quiet number parsers (cli_opts reports the errors), a clock for progress
 * lines.  Messages go to stderr as "<me>: ..." where me is the subcommand
 * ("scm sweep"). */
#ifndef SCM_CLI_UTIL_H
#define SCM_CLI_UTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

#include "scm/compare.h"
#include "scm/config.h"
#include "scm/sweep.h"
#include "scm/sweepfile.h"
#include "sweep_exec.h"

/* Exit statuses of every command: 0 done, 1 a numerical failure (the
 * result says why), 2 bad input or usage (nothing written), 4 an output
 * could not be written (disk full, permissions; nothing half-made is left,
 * but a sweep's runs file keeps the records written, for --resume). */
#define CLI_EXIT_IO 4

/* 0 when out may be written (scm_output_check_out: not one of the n inputs
 * in[], accepted by scm_output_check_path); else -1 after printing
 * "<me>: ..." naming out (and the input). */
int cli_check_output(const char *me, const char *out, const char *const *in, int n);

/* Seconds on a monotonic clock. */
double cli_now(void);

/* Quiet parsers: 1 when s is a whole integer in [lo, hi] (a finite
 * number), 0 otherwise; *out is set only on success. */
int cli_parse_long(const char *s, long lo, long hi, long *out);

/* The processors online, clamped to [1, 16]: the default number of threads
 * of the commands whose results do not depend on it (fixed-points). */
int cli_cpu_count(void);
int cli_parse_double(const char *s, double *out);

/* The default output name of a command: CONFIG's base name (directory
 * dropped) without .json, plus suffix (".result.json"); NULL on no memory,
 * else the caller frees. */
char *cli_output_name(const char *config, const char *suffix);

/* The config file's text with the keys unset[] removed (scm_config_read):
 * NULL after printing "<me>: ...".  The caller frees. */
char *cli_config_text(const char *me, const char *path, const char *const *unset, int nunset,
                      size_t *len);

/* scm_config_load_unset: 0, or 2 after printing "<me>: ...". */
int cli_config_load(const char *me, const char *path, const char *const *sets, int nsets,
                    const char *const *unset, int nunset, scm_config **c);

/* Progress on stderr, one printer for every command: "<what> done/total,
 * E s, about L s left[  extra]".  On a terminal a \r line at most every
 * 0.2 s and the final one; otherwise one line every CLI_PROGRESS_PERIOD
 * seconds at most ($SCM_PROGRESS_SECONDS overrides it), none before, and
 * the final line only when some line was printed: a short run prints
 * nothing, so logs (and the golden files) stay free of timings.  done0 is
 * the count when the work started (a resumed sweep), t0 then (cli_now()),
 * last the time of the last line (t0: none yet). */
#define CLI_PROGRESS_PERIOD 5.0
typedef struct {
    long done0;
    double t0, last;
} cli_progress;
void cli_progress_start(cli_progress *p, long done0);
/* final: the last call (ends a terminal line). */
void cli_progress_show(cli_progress *p, const char *what, long done, long total,
                       const char *extra, int final);
/* A sweep's progress ("runs", with its class counts). */
void cli_sweep_progress(const scm_sweep_file *f, cli_progress *p, int final);

/* Writing the outputs, with the exit status of a failure after printing
 * "<me>: <reason>": CLI_EXIT_IO for an I/O error (disk full, permissions),
 * 2 for a path refused (scm_output_check_path), 1 for no memory; 0 when
 * written.  cli_write_files writes n files all or none
 * (scm_output_write_many: temporaries, then every rename; on a failure no
 * target is touched and no temporary is left). */
int cli_write_files(const char *me, int n, const char *const *paths, const char *const *data,
                    const size_t *len);
/* A JSON file (json NULL: no memory) and, when path2 is given, a second
 * file of text2 (len2 bytes; NULL: no memory), both or neither, as
 * cli_write_files; "out of memory" is status 1. */
int cli_write_json_with(const char *me, const char *path, const cJSON *json, int compact,
                        const char *path2, const char *text2, size_t len2);
/* One JSON file (json NULL: no memory), atomically; json is taken over
 * (deleted here). */
int cli_write_json(const char *me, const char *path, cJSON *json, int compact);
/* json as the text of its file (scm_output_print and a newline; *len its
 * length), NULL on no memory; the caller frees. */
char *cli_json_text(const cJSON *json, int compact, size_t *len);

/* The threads of a command run with --threads threads (0: ex's default,
 * one under MPI, else the processors online): their number, or -1 after
 * "<me>: <why>" when ex refuses it (checked before any file is touched). */
int cli_exec_threads(const char *me, const cli_executor *ex, int threads);

/* The printer of a comparison's events (scm_compare_event, as compare and
 * map pass them): notes as "<me>: ...", the resumption of a sweep, its
 * progress line (when progress), and at its end either the summary of
 * `scm sweep` (summary = 1, with a failure's message; ex and threads give
 * the timing line) or one line "<me>: K = K: N new runs in S s". */
typedef struct {
    const char *me, *resume_me;
    int quiet, progress, summary, threads;
    const cli_executor *ex;
    cli_progress pc;
} cli_compare_printer;
void cli_compare_event(const scm_compare_event *e, void *printer);

/* Printing what the library returns, text taken over (freed here):
 * cli_put writes it to f when it is not NULL; cli_print writes it to
 * stdout and returns 0, or 1 after "<me>: out of memory" when it is NULL. */
void cli_put(FILE *f, char *text);
int cli_print(const char *me, char *text);

/* "<me>: <err's message>" on stderr: returns rc, the exit status. */
int cli_fail(const char *me, const scm_error *err, int rc);
/* The exit status of a library failure st: 2 for bad input (SCM_EINVAL,
 * SCM_EIO), else 1. */
#define CLI_EXIT_OF(st) ((st) == SCM_EINVAL || (st) == SCM_EIO ? 2 : 1)

#endif
