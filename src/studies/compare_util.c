/* compare_util.c: small helpers of the comparison's files (compare.h):
 * reading a JSON file back, the NOTE events, a growing text buffer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "studies/compare_internal.h"

#define NOTE_LEN 4352

cJSON *scm_compare_read_json(const char *path)
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
    cJSON *j = buf && !bad ? cJSON_ParseWithLength(buf, n) : NULL;
    free(buf);
    return j;
}

void scm_compare_note(const scm_compare_opts *o, long K, const char *fmt, ...)
{
    if (!o->event)
        return;
    char text[NOTE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    scm_compare_event e;
    memset(&e, 0, sizeof e);
    e.kind = SCM_COMPARE_NOTE;
    e.K = K;
    e.text = text;
    o->event(&e, o->event_user);
}

void scm_compare_md_printf(md_buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        char *nb = realloc(b->p, b->cap * 2 + (size_t)n);
        if (!nb) {
            b->oom = 1;
            return;
        }
        b->p = nb;
        b->cap = b->cap * 2 + (size_t)n;
    }
}

