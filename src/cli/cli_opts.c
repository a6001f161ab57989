/* cli_opts.c (CLI): the option parser and help printer of every command
 * (cli_opts.h). */
#include "cli_opts.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

int cli_usage_error(const char *me, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", me);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "; see %s --help\n", me);
    return 2;
}

/* 1 when arg is one of the '|'-separated names. */
static int opt_is(const char *names, const char *arg)
{
    size_t n = strlen(arg);
    for (const char *p = names; p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, arg, n) == 0)
            return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

static int push(const char *me, const char *what, cli_strs *s, const char *v)
{
    if (s->n >= s->cap)
        return cli_usage_error(me, "at most %d %s", s->cap, what);
    s->v[s->n++] = v;
    return 0;
}

/* A comma-separated list of finite numbers (> 0 when positive). */
static int parse_list(const char *me, const char *name, const char *v, const cli_opt *o)
{
    double *x = o->dst;
    int n = 0;
    for (const char *p = v;;) {
        const char *comma = strchr(p, ',');
        int len = comma ? (int)(comma - p) : (int)strlen(p);
        char tok[64];
        snprintf(tok, sizeof tok, "%.*s", len < 63 ? len : 63, p);
        if (n == o->hi)
            return cli_usage_error(me, "%s takes at most %ld values", name, o->hi);
        if (len >= 63 || !cli_parse_double(tok, &x[n]) || (o->lo && !(x[n] > 0.0)))
            return cli_usage_error(me, "%s needs %s, got '%s'", name,
                                   o->lo ? "a positive number" : "finite numbers", tok);
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    *o->count = n;
    return 0;
}

/* "a|b|c" as "a, b or c" into buf. */
static const char *choices_str(const char *c, char *buf, size_t len)
{
    size_t k = 0;
    for (const char *p = c; *p && k + 4 < len; p++) {
        if (*p != '|') {
            buf[k++] = *p;
            continue;
        }
        const char *s = strchr(p + 1, '|') ? ", " : " or ";
        k += (size_t)snprintf(buf + k, len - k, "%s", s);
    }
    buf[k < len ? k : len - 1] = '\0';
    return buf;
}

/* The value v of option o (named name): 0, or 2 after the message. */
static int parse_value(const char *me, int must, const cli_opt *o, const char *name,
                       const char *v)
{
    const char *needs = must ? "must be" : "needs";
    char buf[160];
    long l;
    double x;
    switch (o->kind) {
    case CLI_LONG:
    case CLI_INT:
        if (!cli_parse_long(v, o->lo, o->hi, &l))
            return cli_usage_error(me, "%s %s an integer in [%ld, %ld], got '%s'", name, needs,
                                   o->lo, o->hi, v);
        if (o->kind == CLI_LONG)
            *(long *)o->dst = l;
        else
            *(int *)o->dst = (int)l;
        return 0;
    case CLI_POS:
    case CLI_NONNEG:
    case CLI_NUM:
    case CLI_UNIT:
        if (!cli_parse_double(v, &x) || (o->kind == CLI_POS && !(x > 0.0)) ||
            (o->kind == CLI_NONNEG && !(x >= 0.0)) ||
            (o->kind == CLI_UNIT && !(x > 0.0 && x < 1.0)))
            return cli_usage_error(me, "%s %s a %s, got '%s'", name, needs,
                                   o->kind == CLI_POS      ? "positive number"
                                   : o->kind == CLI_NONNEG ? "number >= 0"
                                   : o->kind == CLI_UNIT   ? "number in (0, 1)"
                                                           : "finite number",
                                   v);
        *(double *)o->dst = x;
        return 0;
    case CLI_STR:
        *(const char **)o->dst = v;
        return 0;
    case CLI_STRS:
        return push(me, name, o->dst, v);
    case CLI_CHOICE: {
        int i = 0;
        for (const char *p = o->choices; p; i++) {
            const char *bar = strchr(p, '|');
            size_t len = bar ? (size_t)(bar - p) : strlen(p);
            if (strlen(v) == len && strncmp(p, v, len) == 0) {
                *(int *)o->dst = i;
                return 0;
            }
            p = bar ? bar + 1 : NULL;
        }
        return cli_usage_error(me, "%s must be %s, got '%s'", name,
                               choices_str(o->choices, buf, sizeof buf), v);
    }
    case CLI_LIST:
        return parse_list(me, name, v, o);
    case CLI_FN:
        return o->fn(me, name, v, o->dst) ? 2 : 0;
    default:
        return 2;
    }
}

int cli_parse(const cli_cmd *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cli_help(c, stdout);
            return 0;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (!c->pos)
                return cli_usage_error(c->me, "unexpected argument '%s'", a);
            if (c->pos->n >= c->pos->cap)
                return cli_usage_error(c->me, "one %s at most, got '%s' and '%s'",
                                       c->pos->cap == 1 ? "file" : "file list",
                                       c->pos->v[0], a);
            c->pos->v[c->pos->n++] = a;
            continue;
        }
        const cli_opt *o = c->opts;
        while (o->kind != CLI_END && (o->kind == CLI_TEXT || !opt_is(o->names, a)))
            o++;
        if (o->kind == CLI_END)
            return cli_usage_error(c->me, "unknown option '%s'", a);
        if (o->kind == CLI_FLAG) {
            *(int *)o->dst = (int)o->lo;
            continue;
        }
        if (i + 1 >= argc)
            return cli_usage_error(c->me, "option %s needs a value", a);
        if (parse_value(c->me, c->must, o, a, argv[++i]))
            return 2;
    }
    return -1;
}

void cli_help(const cli_cmd *c, FILE *f)
{
    fputs(c->head, f);
    fputs("\n", f);
    for (const cli_opt *o = c->opts; o->kind != CLI_END; o++) {
        if (!o->help)
            continue;
        if (o->kind == CLI_TEXT) {
            fprintf(f, "%s\n", o->help);
            continue;
        }
        char left[96];
        const char *bar = strchr(o->names, '|');
        if (bar)
            snprintf(left, sizeof left, "%.*s, %s", (int)(bar - o->names), o->names, bar + 1);
        else
            snprintf(left, sizeof left, "%s", o->names);
        if (o->arg)
            snprintf(left + strlen(left), sizeof left - strlen(left), " %s", o->arg);
        if (strlen(left) > 18)
            fprintf(f, "  %s\n  %-18s ", left, "");
        else
            fprintf(f, "  %-18s ", left);
        for (const char *p = o->help; *p;) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            fprintf(f, "%.*s\n", (int)len, p);
            if (!nl)
                break;
            p = nl + 1;
            fprintf(f, "  %-18s ", "");
        }
    }
    if (c->tail)
        fprintf(f, "\n%s", c->tail);
}
