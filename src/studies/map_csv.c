/* map_csv.c: the CSV of a map (scm_map_csv; map.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/map.h"

typedef struct {
    char *s;
    size_t n, cap;
    int oom;
} buf;

static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[1024];
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0 || b->oom)
        return;
    if ((size_t)k >= sizeof tmp)
        k = (int)sizeof tmp - 1;
    if (b->n + (size_t)k + 1 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 4096;
        while (cap < b->n + (size_t)k + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, tmp, (size_t)k + 1);
    b->n += (size_t)k;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* ",x" or "," for null */
static void put_num(buf *b, double x)
{
    if (isfinite(x))
        put(b, ",%.10g", x);
    else
        put(b, ",");
}

static void put_row(buf *b, const char *law, const cJSON *cell, const char *cls,
                    const cJSON *share, double k1, double loss, const char *verdict,
                    const char *hverdict)
{
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(share, "wilson95");
    put(b, "%s,%.0f,%.0f,%.0f,%.0f,%s", law, num(cell, "M"), num(cell, "K"), num(cell, "dK"),
        num(cell, "done"), cls);
    put_num(b, k1);
    put_num(b, loss);
    put(b, ",%s,%s,%.0f,%.10g,%.10g,%.10g", verdict, hverdict, num(share, "count"), num(share, "fraction"),
        cJSON_GetArrayItem(w, 0) ? cJSON_GetArrayItem(w, 0)->valuedouble : NAN,
        cJSON_GetArrayItem(w, 1) ? cJSON_GetArrayItem(w, 1)->valuedouble : NAN);
    put_num(b, num(cell, "median_t_converged"));
    put(b, "\n");
}

char *scm_map_csv(const cJSON *map)
{
    buf b = {NULL, 0, 0, 0};
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(map, "law");
    const char *law = cJSON_IsString(l) ? l->valuestring : "?";
    put(&b, "law,M,K,dK,runs_done,class,k1,loss,verdict,hessian_verdict,count,fraction,wilson95_lo,"
            "wilson95_hi,median_t_converged\n");
    const cJSON *cell;
    cJSON_ArrayForEach(cell, cJSON_GetObjectItemCaseSensitive(map, "cells"))
    {
        put_row(&b, law, cell, "global_minimum", cJSON_GetObjectItemCaseSensitive(cell, "global"),
                0, 0, "global_minimum", "-");
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(cell, "families"))
        {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(f, "class");
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(f, "verdict");
            const cJSON *hv = cJSON_GetObjectItemCaseSensitive(f, "hessian_verdict");
            put_row(&b, law, cell, cJSON_IsString(c) ? c->valuestring : "?", f, num(f, "k1"),
                    num(f, "loss"), cJSON_IsString(v) ? v->valuestring : "-",
                    cJSON_IsString(hv) ? hv->valuestring : "-");
        }
        put_row(&b, law, cell, "not_converged",
                cJSON_GetObjectItemCaseSensitive(cell, "not_converged"), NAN, NAN, "-", "-");
    }
    if (b.oom || !b.s) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
