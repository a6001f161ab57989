/* map_text.c: the table `scm map` prints (scm_map_text, map_text.h), built
 * as a string from the map's result object so that the library does not
 * print: per cell M, K, dK, the global fraction with its 95% Wilson
 * interval, the runs not converged and the median time to convergence. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/strbuf.h"
#include "scm/map_text.h"

/* The number key of obj (NaN when it is not a number). */
static double num(const cJSON *obj, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

char *scm_map_text(const cJSON *map)
{
    strbuf b = {NULL, 0, 0, 0};
    sb_printf(&b, "%5s %5s %4s  %-24s %-24s %s\n", "M", "K", "dK", "global [95%]",
              "not converged", "median t");
    const cJSON *cell;
    cJSON_ArrayForEach(cell, cJSON_GetObjectItemCaseSensitive(map, "cells"))
    {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(cell, "global");
        const cJSON *gw = cJSON_GetObjectItemCaseSensitive(g, "wilson95");
        const cJSON *lo = cJSON_GetArrayItem(gw, 0), *hi = cJSON_GetArrayItem(gw, 1);
        char gs[64], ns[64];
        snprintf(gs, sizeof gs, "%.3f [%.3f, %.3f]", num(g, "fraction"),
                 cJSON_IsNumber(lo) ? lo->valuedouble : NAN,
                 cJSON_IsNumber(hi) ? hi->valuedouble : NAN);
        snprintf(ns, sizeof ns, "%.0f",
                 num(cJSON_GetObjectItemCaseSensitive(cell, "not_converged"), "count"));
        sb_printf(&b, "%5.0f %5.0f %4.0f  %-24s %-24s %.4g\n", num(cell, "M"), num(cell, "K"),
                  num(cell, "dK"), gs, ns, num(cell, "median_t_converged"));
    }
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
