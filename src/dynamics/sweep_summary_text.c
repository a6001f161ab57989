/* sweep_summary_text.c: the summary lines `scm sweep` and `scm compare`
 * print at the end of a sweep (sweep_text.h), built as a string from the
 * summary's JSON (scm_sweep_summary_json) so that the lines say exactly
 * what the summary file says. */
#include <stdlib.h>

#include "core/strbuf.h"
#include "scm/sweep_text.h"

char *scm_sweep_summary_text(const scm_sweep_summary *sum, long total)
{
    cJSON *js = scm_sweep_summary_json(sum);
    if (!js)
        return NULL;
    strbuf b = {NULL, 0, 0, 0};
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(js, "done");
    const cJSON *conv = cJSON_GetObjectItemCaseSensitive(js, "converged");
    sb_printf(&b, "sweep      %.0f of %ld runs done, %.0f converged\n", done->valuedouble, total,
              conv->valuedouble);
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(js, "classes");
    const cJSON *c;
    cJSON_ArrayForEach(c, cl)
    {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(c, "wilson95");
        sb_printf(&b, "  %-28s %6.0f  %.4f  [%.4f, %.4f]\n",
                  cJSON_GetObjectItemCaseSensitive(c, "class")->valuestring,
                  cJSON_GetObjectItemCaseSensitive(c, "count")->valuedouble,
                  cJSON_GetObjectItemCaseSensitive(c, "fraction")->valuedouble,
                  cJSON_GetArrayItem(w, 0)->valuedouble, cJSON_GetArrayItem(w, 1)->valuedouble);
    }
    cJSON_Delete(js);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
