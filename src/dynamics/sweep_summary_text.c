/* sweep_summary_text.c: the summary lines `scm sweep` and `scm compare`
 * print at the end of a sweep (sweep_text.h), built as a string from the
 * summary's JSON (scm_sweep_summary_json) so that the lines say exactly
 * what the summary file says; with the timing line of `scm sweep`; and
 * the lines of `scm merge`. */
#include <stdlib.h>

#include "core/strbuf.h"
#include "scm/sweep_text.h"

/* The summary lines appended to b. */
static void summary_lines(strbuf *b, const scm_sweep_summary *sum, long total)
{
    cJSON *js = scm_sweep_summary_json(sum);
    if (!js) {
        b->failed = 1;
        return;
    }
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(js, "done");
    const cJSON *conv = cJSON_GetObjectItemCaseSensitive(js, "converged");
    sb_printf(b, "sweep      %.0f of %ld runs done, %.0f converged\n", done->valuedouble, total,
              conv->valuedouble);
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(js, "classes");
    const cJSON *c;
    cJSON_ArrayForEach(c, cl)
    {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(c, "wilson95");
        sb_printf(b, "  %-28s %6.0f  %.4f  [%.4f, %.4f]\n",
                  cJSON_GetObjectItemCaseSensitive(c, "class")->valuestring,
                  cJSON_GetObjectItemCaseSensitive(c, "count")->valuedouble,
                  cJSON_GetObjectItemCaseSensitive(c, "fraction")->valuedouble,
                  cJSON_GetArrayItem(w, 0)->valuedouble, cJSON_GetArrayItem(w, 1)->valuedouble);
    }
    cJSON_Delete(js);
}

/* b's text, or NULL (freed) after a failure. */
static char *finish(strbuf *b)
{
    if (b->failed) {
        free(b->s);
        return NULL;
    }
    return b->s;
}

char *scm_sweep_summary_text(const scm_sweep_summary *sum, long total)
{
    strbuf b = {NULL, 0, 0, 0};
    summary_lines(&b, sum, total);
    return finish(&b);
}

char *scm_sweep_summary_text_timed(const scm_sweep_summary *sum, long total, long new_runs,
                                   double secs, int width, const char *unit)
{
    strbuf b = {NULL, 0, 0, 0};
    summary_lines(&b, sum, total);
    sb_printf(&b, "timing     %ld runs in %.3f s on %d %s%s: %.3f runs/s, %.4f s per run\n",
              new_runs, secs, width, unit, width == 1 ? "" : "s",
              secs > 0 ? (double)new_runs / secs : 0.0,
              new_runs > 0 ? secs * width / (double)new_runs : 0.0);
    return finish(&b);
}

char *scm_sweep_merge_text(const scm_sweep_merge_result *res, int nfiles, const char *out)
{
    char brief[400];
    strbuf b = {NULL, 0, 0, 0};
    scm_sweep_summary_brief(res->summary, brief, sizeof brief);
    sb_printf(&b, "merged     %ld runs from %d file%s: %s\nwrote      %s\n", res->records, nfiles,
              nfiles == 1 ? "" : "s", brief, out);
    return finish(&b);
}
