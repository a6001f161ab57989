/* args.c (CLI): option values; see args.h. */
#include "args.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int scm_cli_long(const char *me, const char *s, const char *opt, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "%s: %s needs an integer in [%ld, %ld], got '%s'\n", me, opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int scm_cli_pos(const char *me, const char *s, const char *opt, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !(v > 0.0) || !isfinite(v)) {
        fprintf(stderr, "%s: %s needs a positive number, got '%s'\n", me, opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

int scm_cli_list(const char *me, const char *s, const char *opt, int positive, double *x, int cap,
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
            if (scm_cli_pos(me, tok, opt, &x[*n]))
                return -1;
        } else {
            char *end;
            x[*n] = strtod(tok, &end);
            if (*end != '\0' || !isfinite(x[*n])) {
                fprintf(stderr, "%s: %s needs finite numbers, got '%s'\n", me, opt, tok);
                return -1;
            }
        }
        (*n)++;
    }
    if (*n == 0) {
        fprintf(stderr, "%s: %s needs at least one value\n", me, opt);
        return -1;
    }
    return 0;
}
