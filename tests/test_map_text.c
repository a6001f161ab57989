/* test_map_text.c: the table of `scm map` (scm_map_text) read back: every
 * row's numbers against the cell objects they were printed from (sscanf of
 * the row, 3 decimals for fractions), and a missing median as nan. */
#include <stdlib.h>
#include <string.h>

#include "scm/map_text.h"
#include "testutil.h"

static const char *map_json =
    "{\"cells\": ["
    " {\"M\": 6, \"K\": 7, \"dK\": 1, \"global\": {\"fraction\": 0.8125,"
    "  \"wilson95\": [0.5699, 0.9341]}, \"not_converged\": {\"count\": 2},"
    "  \"median_t_converged\": 1234.5678},"
    " {\"M\": 10, \"K\": 10, \"dK\": 0, \"global\": {\"fraction\": 0.25,"
    "  \"wilson95\": [0.1, 0.45]}, \"not_converged\": {\"count\": 0},"
    "  \"median_t_converged\": null}]}";

int main(void)
{
    cJSON *map = cJSON_Parse(map_json);
    char *text = map ? scm_map_text(map) : NULL;
    CHECK(text != NULL, "no text");
    if (!text)
        return TEST_SUMMARY();
    char *line = strchr(text, '\n');
    CHECK(line && !strncmp(text, "    M     K   dK  global [95%]", 30), "header: %.40s", text);
    const cJSON *cell;
    int rows = 0;
    cJSON_ArrayForEach(cell, cJSON_GetObjectItem(map, "cells"))
    {
        double M, K, dK, f, lo, hi, nc;
        char med[32];
        int n = line ? sscanf(line + 1, "%lf %lf %lf %lf [%lf, %lf] %lf %31s", &M, &K, &dK, &f,
                              &lo, &hi, &nc, med)
                     : 0;
        const cJSON *g = cJSON_GetObjectItem(cell, "global");
        const cJSON *w = cJSON_GetObjectItem(g, "wilson95");
        const cJSON *t = cJSON_GetObjectItem(cell, "median_t_converged");
        CHECK(n == 8, "row %d: %d fields", rows, n);
        CHECK(M == cJSON_GetObjectItem(cell, "M")->valuedouble &&
                  K == cJSON_GetObjectItem(cell, "K")->valuedouble &&
                  dK == cJSON_GetObjectItem(cell, "dK")->valuedouble,
              "row %d: M, K, dK", rows);
        CHECK_CLOSE(f, cJSON_GetObjectItem(g, "fraction")->valuedouble, 0, 5e-4, "fraction");
        CHECK_CLOSE(lo, cJSON_GetArrayItem(w, 0)->valuedouble, 0, 5e-4, "wilson low");
        CHECK_CLOSE(hi, cJSON_GetArrayItem(w, 1)->valuedouble, 0, 5e-4, "wilson high");
        CHECK(nc == cJSON_GetObjectItem(cJSON_GetObjectItem(cell, "not_converged"), "count")
                        ->valuedouble,
              "row %d: not converged", rows);
        if (cJSON_IsNumber(t))
            CHECK_CLOSE(strtod(med, NULL), t->valuedouble, 5e-4, 0, "median t (4 digits)");
        else
            CHECK(!strcmp(med, "nan"), "row %d: a missing median prints as nan, got %s", rows,
                  med);
        line = line ? strchr(line + 1, '\n') : NULL;
        rows++;
    }
    CHECK(rows == 2 && line && line[1] == '\0', "two rows and nothing after");
    free(text);
    cJSON_Delete(map);
    return TEST_SUMMARY();
}
