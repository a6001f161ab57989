/* cli_util.c (CLI): shared helpers of the subcommands (cli_util.h). */
#include "cli_util.h"

#include "core/parallel.h"
#include "scm/output.h"
#include "scm/sweepfile.h"
#include "scm/sweep_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cli_cpu_count(void)
{
    return scm_threads_online();
}

int cli_check_output(const char *me, const char *out, const char *const *in, int n)
{
    scm_error err;
    return scm_output_check_out(out, in, n, &err) ? cli_fail(me, &err, -1) : 0;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cli_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

char *cli_output_name(const char *config, const char *suffix)
{
    const char *base = strrchr(config, '/');
    base = base ? base + 1 : config;
    size_t n = strlen(base), s = strlen(suffix);
    if (n > 5 && strcmp(base + n - 5, ".json") == 0)
        n -= 5;
    char *out = malloc(n + s + 1);
    if (out) {
        memcpy(out, base, n);
        memcpy(out + n, suffix, s + 1);
    }
    return out;
}

void cli_progress_start(cli_progress *p, long done0)
{
    p->done0 = done0;
    p->t0 = p->last = cli_now();
}

void cli_progress_show(cli_progress *p, const char *what, long done, long total,
                       const char *extra, int final)
{
    const char *env = getenv("SCM_PROGRESS_SECONDS");
    double t = cli_now(), period = CLI_PROGRESS_PERIOD;
    int tty = isatty(STDERR_FILENO);
    if (env && !(cli_parse_double(env, &period) && period >= 0.0))
        period = CLI_PROGRESS_PERIOD;
    if (final ? !tty && !(p->last > p->t0) : t - p->last < (tty ? 0.2 : period))
        return;
    p->last = t > p->t0 ? t : p->t0 + 1e-9;
    double el = t - p->t0, rate = (double)(done - p->done0) / (el > 0.0 ? el : 1.0);
    char left[64] = "";
    if (!final)
        snprintf(left, sizeof left, ", about %.0f s left",
                 rate > 0.0 ? (double)(total - done) / rate : 0.0);
    fprintf(stderr, "%s%s %ld/%ld, %.0f s%s%s%s%s", tty ? "\r\033[K" : "", what, done, total,
            el, left, extra ? "  " : "", extra ? extra : "", tty && !final ? "" : "\n");
    fflush(stderr);
}

void cli_sweep_progress(const scm_sweep_file *f, cli_progress *p, int final)
{
    char brief[200];
    scm_sweep_summary_brief(scm_sweep_file_summary(f), brief, sizeof brief);
    cli_progress_show(p, "runs", scm_sweep_file_done(f), scm_sweep_file_total(f), brief, final);
}

void cli_put(FILE *f, char *text)
{
    if (text)
        fputs(text, f);
    free(text);
}

int cli_print(const char *me, char *text)
{
    if (!text) {
        fprintf(stderr, "%s: out of memory\n", me);
        return 1;
    }
    cli_put(stdout, text);
    return 0;
}

int cli_fail(const char *me, const scm_error *err, int rc)
{
    fprintf(stderr, "%s: %s\n", me, err->msg);
    return rc;
}

char *cli_config_text(const char *me, const char *path, const char *const *unset, int nunset,
                      size_t *len)
{
    scm_error err;
    char *text;
    if (scm_config_read(path, unset, nunset, &text, len, &err))
        fprintf(stderr, "%s: %s\n", me, err.msg);
    return text;
}

int cli_config_load(const char *me, const char *path, const char *const *sets, int nsets,
                    const char *const *unset, int nunset, scm_config **c)
{
    scm_error err;
    if (scm_config_load_unset(path, sets, nsets, unset, nunset, c, &err) == SCM_OK)
        return 0;
    fprintf(stderr, "%s: %s\n", me, err.msg);
    return 2;
}

/* The exit status of a failed write: 4 for I/O, 2 for a path refused, 1
 * for no memory. */
static int write_status(const char *me, scm_status st, const scm_error *err)
{
    return cli_fail(me, err, st == SCM_EIO ? CLI_EXIT_IO : st == SCM_EINVAL ? 2 : 1);
}

int cli_write_files(const char *me, int n, const char *const *paths, const char *const *data,
                    const size_t *len)
{
    scm_error err;
    scm_status st = scm_output_write_many(n, paths, data, len, &err);
    return st ? write_status(me, st, &err) : 0;
}

char *cli_json_text(const cJSON *json, int compact, size_t *len)
{
    char *t = json ? scm_output_print(json, compact) : NULL;
    size_t n = t ? strlen(t) : 0;
    char *w = t ? malloc(n + 2) : NULL;
    if (w) {
        memcpy(w, t, n);
        memcpy(w + n, "\n", 2);
        *len = n + 1;
    }
    free(t);
    return w;
}

int cli_write_json_with(const char *me, const char *path, const cJSON *json, int compact,
                        const char *path2, const char *text2, size_t len2)
{
    size_t len[2] = {0, len2};
    char *js = cli_json_text(json, compact, &len[0]);
    const char *paths[2] = {path, path2}, *data[2] = {js, text2};
    int rc = !js || (path2 && !text2) ? (fprintf(stderr, "%s: out of memory\n", me), 1)
                                      : cli_write_files(me, path2 ? 2 : 1, paths, data, len);
    free(js);
    return rc;
}

int cli_write_json(const char *me, const char *path, cJSON *json, int compact)
{
    scm_error err;
    if (!json) {
        fprintf(stderr, "%s: out of memory\n", me);
        return 1;
    }
    scm_status st = scm_output_write_json(path, json, compact, &err);
    cJSON_Delete(json);
    return st ? write_status(me, st, &err) : 0;
}

int cli_exec_threads(const char *me, const cli_executor *ex, int threads)
{
    char why[256];
    int n = threads ? threads : ex->one_thread ? 1 : cli_cpu_count();
    if (ex->check_fn(n, why, sizeof why) == 0)
        return n;
    fprintf(stderr, "%s: %s\n", me, why);
    return -1;
}

void cli_compare_event(const scm_compare_event *e, void *printer)
{
    cli_compare_printer *p = printer;
    if (e->kind == SCM_COMPARE_NOTE) {
        if (!p->quiet)
            fprintf(stderr, "%s: %s\n", p->me, e->text);
    } else if (e->kind == SCM_COMPARE_SWEEP_START) {
        long ndone = scm_sweep_file_resumed(e->sweep);
        cli_progress_start(&p->pc, ndone);
        if (!p->quiet && ndone > 0)
            fprintf(stderr, "%s: resuming '%s' after %ld of %ld runs\n", p->resume_me, e->path,
                    ndone, scm_sweep_file_total(e->sweep));
    } else if (e->kind == SCM_COMPARE_SWEEP_RECORD) {
        if (p->progress)
            cli_sweep_progress(e->sweep, &p->pc, 0);
    } else {
        double secs = cli_now() - p->pc.t0;
        long total = e->run_ok ? scm_sweep_file_total(e->sweep) : 0; /* no sweep if not opened */
        if (e->ran && p->progress)
            cli_sweep_progress(e->sweep, &p->pc, 1);
        if (e->status && p->summary) /* else printed once, when the caller returns it */
            fprintf(stderr, "scm sweep: %s\n", e->err->msg);
        if (e->run_ok && !p->quiet && p->summary)
            cli_put(stderr, scm_sweep_summary_text_timed(scm_sweep_file_summary(e->sweep), total,
                                                         total - p->pc.done0, secs,
                                                         p->ex->width_fn(p->threads), p->ex->unit));
        else if (e->run_ok && !p->quiet)
            fprintf(stderr, "%s: K = %ld: %ld new runs in %.1f s\n", p->me, e->K,
                    total - p->pc.done0, secs);
    }
}
