/* cli_plot.c (CLI): the figures of a report, drawn by one of the Python
 * scripts in scripts/ (cli_plot.h; docs/plots.md). */
#include "cli_plot.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scm_paths.h"

extern char **environ;

/* Runs argv[0] (looked up in PATH) with argv, no shell; stdout and/or
 * stderr to /dev/null when asked.  Returns its exit status, 128 + the
 * signal that killed it, or -1 when it could not be started. */
static int plot_spawn(char *const argv[], int mute_out, int mute_err)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    if (mute_out)
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (mute_err)
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int st, e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0)
        return -1;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int cli_plot(const char *me, const char *script_name, const char *json_path, const char *arg2,
             int quiet)
{
    const char *env = getenv("SCM_SCRIPTS_DIR");
    const char *dirs[3] = {env && *env ? env : NULL, SCM_SCRIPTS_DIR, SCM_DATA_SCRIPTS_DIR};
    char script[4096] = "";
    for (int i = env && *env ? 0 : 1; i < (env && *env ? 1 : 3) && !script[0]; i++) {
        snprintf(script, sizeof script, "%s/%s", dirs[i], script_name);
        if (access(script, R_OK) != 0)
            script[0] = '\0';
    }
    if (!script[0]) {
        if (env && *env)
            fprintf(stderr, "%s: no figures: no readable %s in SCM_SCRIPTS_DIR = '%s'\n", me,
                    script_name, env);
        else
            fprintf(stderr, "%s: no figures: %s is in neither %s nor %s (set SCM_SCRIPTS_DIR "
                            "to its directory)\n",
                    me, script_name, SCM_SCRIPTS_DIR, SCM_DATA_SCRIPTS_DIR);
        return 1;
    }
    const char *py_env = getenv("SCM_PYTHON");
    const char *cands[2] = {"python3", "/usr/bin/python3"};
    const char *py = NULL;
    for (int i = 0; i < (py_env && *py_env ? 1 : 2) && !py; i++) {
        const char *c = py_env && *py_env ? py_env : cands[i];
        char *probe[] = {(char *)c, "-c", "import matplotlib", NULL};
        if (plot_spawn(probe, 1, 1) == 0)
            py = c;
    }
    if (!py) {
        fprintf(stderr,
                "%s: no figures: matplotlib is not importable by %s; get it with\n"
                "    apt-get install python3-matplotlib\n"
                "then write the figures with\n"
                "    %s %s %s\n",
                me, py_env && *py_env ? py_env : "python3 or /usr/bin/python3",
                py_env && *py_env ? py_env : "/usr/bin/python3", script, json_path);
        return 0;
    }
    char *argv[] = {(char *)py, script, (char *)json_path, (char *)arg2, NULL};
    int st = plot_spawn(argv, quiet, 0);
    if (st != 0) {
        char why[64] = "could not be started";
        if (st >= 0)
            snprintf(why, sizeof why, "exit status %d", st);
        fprintf(stderr,
                "%s: the figures failed (%s %s %s: %s); the report %s and its "
                "Markdown are written\n",
                me, py, script, json_path, why, json_path);
        return 1;
    }
    return 0;
}
