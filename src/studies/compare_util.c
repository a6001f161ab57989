/* compare_util.c: small helpers of the comparison's files (compare.h):
 * reading a JSON file back, the NOTE events, a growing text buffer, what
 * differs between two runs-file headers; the message of a failure. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/output.h"
#include "studies/compare_internal.h"

#define NOTE_LEN 4352

cJSON *scm_compare_read_json(const char *path)
{
    size_t n = 0;
    char *buf = scm_output_read_file(path, (size_t)1 << 30, &n, NULL);
    cJSON *j = buf ? cJSON_ParseWithLength(buf, n) : NULL;
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
    if (b->oom || !fmt) /* !fmt: never, but gcc -O3 with the sanitizers cannot tell */
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

void scm_compare_header_diff(const char *old_line, const char *want, char *out, size_t n)
{
    static const char *const keys[] = {"runs", "seed", "config", "families", "classify",
                                       "shard", "scm_sweep"};
    static const char *const what[] = {"another --runs", "another seed", "another configuration",
                                       "other families (another --ansatz or scmode version)",
                                       "other classification options", "another shard",
                                       "another format"};
    cJSON *a = cJSON_Parse(old_line), *b = cJSON_Parse(want);
    if (!cJSON_IsObject(a) || !cJSON_GetObjectItemCaseSensitive(a, "scm_sweep"))
        snprintf(out, n, "its first line is not a sweep header");
    else /* no key below differs: another key, or the same keys in another form */
        snprintf(out, n, "its header differs from this sweep's (another scmode version?)");
    for (int i = 0; cJSON_IsObject(a) && b && i < (int)(sizeof keys / sizeof keys[0]); i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, keys[i]);
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, keys[i]);
        if ((!x && !y) || cJSON_Compare(x, y, 1))
            continue;
        if (cJSON_IsNumber(x) && cJSON_IsNumber(y))
            snprintf(out, n, "it was made with %s = %.17g, not %.17g", keys[i], x->valuedouble,
                     y->valuedouble);
        else
            snprintf(out, n, "it was made with %s", what[i]);
        break;
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
}

const char *scm_compare_failure(const scm_compare_result *res, const scm_error *err, char *buf,
                                size_t n)
{
    if (res->failed_part == SCM_COMPARE_PART_ENUMERATION)
        snprintf(buf, n, "K = %ld: the family enumeration failed: %s", res->failed_K, err->msg);
    else
        snprintf(buf, n, "%s", err->msg);
    return buf;
}

/* json as scm_output_write_json writes it: printed, with a final newline. */
char *scm_compare_json_text(const cJSON *json, int compact)
{
    char *t = scm_output_print(json, compact);
    size_t n = t ? strlen(t) : 0;
    char *r = t ? malloc(n + 2) : NULL;
    if (r) {
        memcpy(r, t, n);
        r[n] = '\n';
        r[n + 1] = '\0';
    }
    cJSON_free(t);
    return r;
}
