/* args.h (CLI): parsing of option values, with errors on stderr that name
 * the program, the option and the value.  Each returns 0, or -1 after
 * printing the error. */
#ifndef SCM_CLI_ARGS_H
#define SCM_CLI_ARGS_H

/* An integer in [lo, hi]. */
int scm_cli_long(const char *me, const char *s, const char *opt, long lo, long hi, long *out);
/* A finite number > 0. */
int scm_cli_pos(const char *me, const char *s, const char *opt, double *out);
/* A comma-separated list of 1 .. cap finite numbers; positive ones only if
 * positive. */
int scm_cli_list(const char *me, const char *s, const char *opt, int positive, double *x, int cap,
                 int *n);

#endif
