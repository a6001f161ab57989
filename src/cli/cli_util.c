/* cli_util.c (CLI): shared helpers of the subcommands (cli_util.h). */
#include "cli_util.h"

#include "scm/output.h"
#include "scm/sweepfile.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cli_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

int cli_check_output(const char *me, const char *out, const char *const *in, int n)
{
    if (!out)
        return 0;
    for (int i = 0; i < n; i++)
        if (in[i] && scm_output_same_file(out, in[i])) {
            fprintf(stderr, "%s: the output '%s' is also an input or output ('%s'); refused\n",
                    me, out, in[i]);
            return -1;
        }
    scm_error err;
    if (scm_output_check_path(out, &err)) {
        fprintf(stderr, "%s: %s\n", me, err.msg);
        return -1;
    }
    return 0;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

char *cli_read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n + 1 < cap)
            break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        errno = bad ? EIO : ENOMEM;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

cJSON *cli_read_json(const char *path)
{
    size_t len;
    char *t = cli_read_all(path, &len);
    if (!t)
        return NULL;
    cJSON *j = cJSON_ParseWithLength(t, len);
    free(t);
    return j;
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

int cli_opt_long(const char *me, const char *opt, const char *s, long lo, long hi, long *out)
{
    if (cli_parse_long(s, lo, hi, out))
        return 0;
    fprintf(stderr, "%s: %s needs an integer in [%ld, %ld], got '%s'\n", me, opt, lo, hi, s);
    return -1;
}

int cli_opt_positive(const char *me, const char *opt, const char *s, double *out)
{
    double v;
    if (cli_parse_double(s, &v) && v > 0.0) {
        *out = v;
        return 0;
    }
    fprintf(stderr, "%s: %s needs a positive number, got '%s'\n", me, opt, s);
    return -1;
}

scm_status cli_load_families(const char *path, scm_sweep_families *fams, scm_error *err)
{
    return scm_sweep_families_load(path, fams, err);
}

int cli_buf_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return 0;
        if ((size_t)n < *cap - *len) {
            *len += (size_t)n;
            return 1;
        }
        char *nb = realloc(*buf, *cap * 2 + (size_t)n);
        if (!nb)
            return 0;
        *buf = nb;
        *cap = *cap * 2 + (size_t)n;
    }
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

int cli_opt_list(const char *me, const char *opt, const char *s, int positive, double *x, int cap,
                 int *n)
{
    char buf[4096];
    if (strlen(s) >= sizeof buf) {
        fprintf(stderr, "%s: %s: list too long\n", me, opt);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == cap) {
            fprintf(stderr, "%s: %s takes at most %d values\n", me, opt, cap);
            return -1;
        }
        if (positive) {
            if (cli_opt_positive(me, opt, tok, &x[*n]))
                return -1;
        } else if (!cli_parse_double(tok, &x[*n])) {
            fprintf(stderr, "%s: %s needs finite numbers, got '%s'\n", me, opt, tok);
            return -1;
        }
        (*n)++;
    }
    if (*n == 0) {
        fprintf(stderr, "%s: %s needs at least one value\n", me, opt);
        return -1;
    }
    return 0;
}

void cli_sweep_progress(const scm_sweep_file *f, cli_progress *p, int final)
{
    double t = cli_now();
    if (!final && t - p->last < 0.2)
        return;
    p->last = t;
    long done = scm_sweep_file_done(f), total = scm_sweep_file_total(f);
    long new_runs = done - p->done0;
    double rate = t > p->t0 ? (double)new_runs / (t - p->t0) : 0.0;
    double eta = rate > 0.0 ? (double)(total - done) / rate : 0.0;
    char brief[200];
    scm_sweep_summary_brief(scm_sweep_file_summary(f), brief, sizeof brief);
    fprintf(stderr, "\r\033[K%ld/%ld  %.2f runs/s  ETA %.0f s  %s%s", done, total, rate, eta,
            brief, final ? "\n" : "");
    fflush(stderr);
}

void cli_sweep_print_summary(const scm_sweep_summary *sum, long total, long new_runs, double secs,
                             int width, const char *unit)
{
    cJSON *js = scm_sweep_summary_json(sum);
    if (!js)
        return;
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(js, "done");
    const cJSON *conv = cJSON_GetObjectItemCaseSensitive(js, "converged");
    fprintf(stderr, "sweep      %.0f of %ld runs done, %.0f converged\n", done->valuedouble,
            total, conv->valuedouble);
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(js, "classes");
    const cJSON *c;
    cJSON_ArrayForEach(c, cl)
    {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(c, "wilson95");
        fprintf(stderr, "  %-28s %6.0f  %.4f  [%.4f, %.4f]\n",
                cJSON_GetObjectItemCaseSensitive(c, "class")->valuestring,
                cJSON_GetObjectItemCaseSensitive(c, "count")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(c, "fraction")->valuedouble,
                cJSON_GetArrayItem(w, 0)->valuedouble, cJSON_GetArrayItem(w, 1)->valuedouble);
    }
    fprintf(stderr, "timing     %ld runs in %.3f s on %d %s%s: %.3f runs/s, %.4f s per run\n",
            new_runs, secs, width, unit, width == 1 ? "" : "s",
            secs > 0 ? (double)new_runs / secs : 0.0,
            new_runs > 0 ? secs * width / (double)new_runs : 0.0);
    cJSON_Delete(js);
}
