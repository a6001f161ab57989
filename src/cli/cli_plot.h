/* cli_plot.h (CLI): run a plotting script of scripts/ on a report.
 * The script comes from $SCM_SCRIPTS_DIR, else the source tree, else the
 * installed copy; the interpreter is $SCM_PYTHON, else the first of python3
 * (PATH) and /usr/bin/python3 that imports matplotlib (a python3 earlier in
 * PATH, e.g. pyenv's, may lack it). */
#ifndef SCM_CLI_PLOT_H
#define SCM_CLI_PLOT_H

/* Runs "python3 SCRIPT_NAME JSON_PATH [ARG2]" (arg2 NULL: none; messages as "<me>: ...", the
 * script's stdout muted when quiet).  Returns 0 when the figures were
 * written or matplotlib is missing (the message says how to get them), 1
 * when the script is missing or failed: the caller's report files stay. */
int cli_plot(const char *me, const char *script_name, const char *json_path, const char *arg2,
             int quiet);

#endif
