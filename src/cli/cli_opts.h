/* cli_opts.h (CLI): the one option parser of every command.  A command
 * describes its options in a table (name, kind, destination, range, help);
 * cli_parse walks argv with it, and cli_help prints the table as the
 * options part of the command's --help.  Every usage error is ONE line on
 * stderr, "scm CMD: <what>; see scm CMD --help", and exit status 2. */
#ifndef SCM_CLI_OPTS_H
#define SCM_CLI_OPTS_H

#include <stdio.h>

typedef enum {
    CLI_END = 0, /* ends a table */
    CLI_FLAG,    /* int *: set to lo */
    CLI_LONG,    /* long *: an integer in [lo, hi] */
    CLI_INT,     /* int *: an integer in [lo, hi] */
    CLI_POS,     /* double *: a finite number > 0 */
    CLI_NONNEG,  /* double *: a finite number >= 0 */
    CLI_NUM,     /* double *: a finite number */
    CLI_UNIT,    /* double *: a number in (0, 1) */
    CLI_STR,     /* const char **: the value itself */
    CLI_STRS,    /* cli_strs *: repeatable, each value appended */
    CLI_CHOICE,  /* int *: the index of the value in choices ("a|b|c") */
    CLI_LIST,    /* double *: comma-separated, at most hi values (> 0 when lo),
                    their number in *count */
    CLI_FN,      /* fn(me, name, value, dst): 0, or -1 after cli_usage_error */
    CLI_TEXT     /* no option: a line of help text (help) */
} cli_kind;

/* Values of a repeatable option, or the positional arguments. */
typedef struct {
    const char **v;
    int n, cap;
} cli_strs;

typedef struct cli_opt {
    const char *names; /* "--K" or "-q|--quiet"; the first is the one shown */
    cli_kind kind;
    void *dst;
    long lo, hi;
    const char *arg;  /* the value's name in the help ("K"); NULL for flags */
    const char *help; /* one or more lines ("\n" between); NULL: not shown */
    const char *choices;
    int *count;
    int (*fn)(const char *me, const char *name, const char *value, void *dst);
} cli_opt;

/* A command's command line: its name ("scm run"), the lines of its help
 * before the options (usage and description), the table, the text after
 * it (exit statuses), where the positional arguments go (NULL: none
 * accepted; at most pos->cap of them), and the wording of a bad number:
 * "--runs needs an integer in [1, 10]" (0) or "must be" (1: sweep and
 * compare, as they always said). */
typedef struct {
    const char *me, *head;
    const cli_opt *opts;
    const char *tail;
    cli_strs *pos;
    int must;
} cli_cmd;

/* Parse argv[1 .. argc-1]: -1 to go on, 0 after printing the help on
 * stdout (-h, --help), 2 after a one-line usage error. */
int cli_parse(const cli_cmd *c, int argc, char **argv);

/* The whole help of c on f. */
void cli_help(const cli_cmd *c, FILE *f);

/* "<me>: <what>; see <me> --help" on stderr; returns 2. */
int cli_usage_error(const char *me, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Table entries by kind (every field given: -Wmissing-field-initializers). */
#define CLI_O(names, kind, dst, lo, hi, arg, help) {names, kind, dst, lo, hi, arg, help, NULL, NULL, NULL}
#define CLI_F(names, dst, help) {names, CLI_FLAG, dst, 1, 0, NULL, help, NULL, NULL, NULL}
#define CLI_C(names, dst, choices, arg, help) {names, CLI_CHOICE, dst, 0, 0, arg, help, choices, NULL, NULL}
#define CLI_L(names, dst, positive, cap, count, arg, help)                                        \
    {names, CLI_LIST, dst, positive, cap, arg, help, NULL, count, NULL}
#define CLI_FN_(names, fn, dst, arg, help) {names, CLI_FN, dst, 0, 0, arg, help, NULL, NULL, fn}

/* The exit statuses at the end of a --help: what 0 and 1 (and 3) mean
 * for the command, then 2 and 4 as for every command (docs/architecture.md). */
#define CLI_EXIT_TEXT(zero_one)                                                                    \
    "exit status: " zero_one ",\n2 bad input or usage (nothing written), 4 an output could not be "  \
    "written\n(nothing half-made is left).\n"

/* The options every command spells the same way. */
#define CLI_OPT_QUIET(dst, what) {"-q|--quiet", CLI_FLAG, (dst), 1, 0, NULL, (what), NULL, NULL, NULL}
#define CLI_OPT_THREADS(dst)                                                                       \
    {"--threads", CLI_INT, (dst), 1, 1024, "T",                                                    \
     "threads (default: the processors online, at most 16);\nthe result does not depend on T",   \
     NULL, NULL, NULL}
#define CLI_OPT_ACTIVATION(dst)                                                                    \
    {"--activation", CLI_STR, (dst), 0, 0, "NAME", "relu (default), erf or linear", NULL, NULL, NULL}
#define CLI_OPT_SET(strs)                                                                          \
    {"--set", CLI_STRS, (strs), 0, 0, "key=value",                                                 \
     "override a config key (value: JSON or a string),\ne.g. --set model.K=4 (repeatable)", NULL,  \
     NULL, NULL}
#define CLI_OPT_UNSET(strs)                                                                        \
    {"--unset", CLI_STRS, (strs), 0, 0, "key",                                                     \
     "remove a config key (its default applies), e.g.\n--unset integrator.t_max (repeatable)",     \
     NULL, NULL, NULL}
#define CLI_OPT_LINE(text) {"", CLI_TEXT, NULL, 0, 0, NULL, (text), NULL, NULL, NULL}
#define CLI_OPT_END {NULL, CLI_END, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL}

#endif
