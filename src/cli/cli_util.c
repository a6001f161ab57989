/* cli_util.c (CLI): shared helpers of the subcommands (cli_util.h). */
#include "cli_util.h"

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
    size_t len;
    char *text = cli_read_all(path, &len);
    if (!text)
        return scm_error_set(err, SCM_EIO, "cannot read families file '%s': %s", path,
                             strerror(errno));
    scm_status st = scm_sweep_families_parse(text, path, fams, err);
    free(text);
    return st;
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
