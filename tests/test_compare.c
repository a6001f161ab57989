/* test_compare.c: the comparison across K (compare.h) at a tiny size.  Its
 * fraction table is checked against the records of the runs files it
 * wrote, read back and counted here by their "class" and "k1" fields; its
 * Wilson intervals against scm_sweep_wilson; a second call resumes every
 * sweep (no run computed) and gives the same report; the table across
 * rules against the same records; and the failures name their part: an
 * eps_stop too close to the plateaus (bad input of the comparison) but not
 * to a global minimum listed with round-off, a runs file of another sweep
 * or a rerun with another --runs (bad input of a sweep, also passed to its
 * event, naming what differs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scm/compare.h"
#include "scm/output.h"
#include "studies/compare_internal.h"
#include "testutil.h"

typedef struct {
    long notes, records, starts, ends, end_failures;
} counts;

static void on_event(const scm_compare_event *e, void *user)
{
    counts *n = user;
    switch (e->kind) {
    case SCM_COMPARE_NOTE:
        n->notes++;
        break;
    case SCM_COMPARE_SWEEP_START:
        n->starts++;
        break;
    case SCM_COMPARE_SWEEP_RECORD:
        n->records++;
        break;
    case SCM_COMPARE_SWEEP_END:
        n->ends++;
        n->end_failures += e->status != SCM_OK;
        break;
    }
}

/* Counts of a runs file's records by table row: k1 of a matched family,
 * K + 1: unmatched, K + 2: not converged; K + 3: the global minimum (also
 * in its k1 row).  Returns the records. */
static long count_rows(const char *path, long K, long *rows)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1 << 16];
    long n = 0;
    int header = 1;
    while (fgets(line, sizeof line, f)) {
        if (header) {
            header = 0;
            continue;
        }
        cJSON *r = cJSON_Parse(line);
        const cJSON *cl = cJSON_GetObjectItemCaseSensitive(r, "class");
        const cJSON *k1 = cJSON_GetObjectItemCaseSensitive(r, "k1");
        if (cJSON_IsString(cl)) {
            if (strcmp(cl->valuestring, "not_converged") == 0)
                rows[K + 2]++;
            else if (strcmp(cl->valuestring, "unmatched") == 0)
                rows[K + 1]++;
            else if (cJSON_IsNumber(k1) && k1->valuedouble >= 0 && k1->valuedouble <= K)
                rows[(int)k1->valuedouble]++;
            if (strncmp(cl->valuestring, "global_minimum", 14) == 0)
                rows[K + 3]++;
            n++;
        }
        cJSON_Delete(r);
    }
    fclose(f);
    return n;
}

static void set_opts(scm_compare_opts *o, const char *prefix, counts *n)
{
    scm_compare_opts_default(o);
    o->M = 2;
    o->nK = 2;
    o->K[0] = 2;
    o->K[1] = 3;
    o->runs = 5;
    o->prefix = prefix;
    o->traces = 1;
    o->no_stability = 1;
    o->threads = 2;
    o->event = on_event;
    o->event_user = n;
}

/* dst: the families file src with the loss of its first point whose
 * loss is below 1e-12 (global) or above 1e-3 (a saddle or plateau) set to
 * loss.  Returns 0, or -1 when src has no such point. */
static int fams_with_loss(const char *src, const char *dst, int global, double loss)
{
    size_t len;
    char *text = scm_output_read_file(src, (size_t)64 << 20, &len, NULL);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    int found = 0;
    cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(root, "fixed_points"))
    {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(p, "loss");
        if (!found && cJSON_IsNumber(l) &&
            (global ? l->valuedouble < 1e-12 : l->valuedouble > 1e-3)) {
            cJSON_ReplaceItemInObjectCaseSensitive(p, "loss", cJSON_CreateNumber(loss));
            found = 1;
        }
    }
    char *out = found ? cJSON_Print(root) : NULL;
    FILE *f = out ? fopen(dst, "w") : NULL;
    if (f) {
        fputs(out, f);
        fclose(f);
    }
    cJSON_free(out);
    cJSON_Delete(root);
    return f ? 0 : -1;
}

/* The default eps_stop (1e-10) with the families of K = 3, M = 2 where
 * one point has the loss 2.2e-10: accepted when that point is the global
 * minimum (the round-off of an unpolished point, seen at M = 10, K = 12),
 * refused when it is a saddle or plateau. */
static void check_eps_global(const char *dir, const char *prefix)
{
    char src[512], fam[512], p[512];
    snprintf(src, sizeof src, "%s.K3.families.json", prefix);
    for (int global = 0; global < 2; global++) {
        snprintf(fam, sizeof fam, "%s/fam_global%d.json", dir, global);
        snprintf(p, sizeof p, "%s/eg%d", dir, global);
        CHECK(fams_with_loss(src, fam, global, 2.2e-10) == 0, "%s: no point (global %d)", src,
              global);
        counts n = {0};
        scm_compare_opts o;
        set_opts(&o, p, &n);
        o.nK = 1;
        o.K[0] = 3;
        o.families[0] = fam;
        o.runs = 3;
        scm_compare_result res;
        scm_error err;
        scm_status st = scm_compare_run(&o, &res, &err);
        if (global)
            CHECK(st == SCM_OK, "the global minimum at loss 2.2e-10 refused: %s", err.msg);
        else
            CHECK(st == SCM_EINVAL && res.failed_input && strstr(err.msg, "eps_stop") &&
                      strstr(err.msg, "2.2e-10"),
                  "a saddle at loss 2.2e-10 accepted: %d %s", st, st ? err.msg : "");
        scm_compare_result_free(&res);
    }
}

/* scm_compare_run of one K with prefix DIR/NAME and no traces; the
 * families file's path into fam and its parsed JSON (NULL if unread)
 * returned. */
static cJSON *run_one_K(const char *dir, const char *name, int M, long K, int runs,
                        int no_stability, scm_compare_result *res, char *fam, size_t fam_size)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    snprintf(fam, fam_size, "%s.K%ld.families.json", p, K);
    counts n = {0};
    scm_compare_opts o;
    set_opts(&o, p, &n);
    o.M = M;
    o.nK = 1;
    o.K[0] = K;
    o.runs = runs;
    o.traces = 0;
    o.no_stability = no_stability;
    scm_error err;
    scm_status st = scm_compare_run(&o, res, &err);
    CHECK(st == SCM_OK, "K = %ld, M = %d: %s", K, M, err.msg);
    size_t len;
    char *text = st ? NULL : scm_output_read_file(fam, (size_t)256 << 20, &len, NULL);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    return root;
}

/* K = 38, M = 36 (compare's enumeration, default eps_stop 1e-10): the
 * list holds a saddle of loss 6.1e-10, the last teacher split among three
 * aligned students, the global minimum up to round-off (two of them
 * parallel: Hessian -2e-8).  Above K = 24 only the minima's states used to
 * be written, so compare could not recognise it and refused eps_stop;
 * the states of points of loss < 1e-6 are written now (fptable.h). */
static void check_split_global_K38(const char *dir)
{
    char fam[512];
    scm_compare_result res;
    cJSON *root = run_one_K(dir, "k38", 36, 38, 1, 1, &res, fam, sizeof fam);
    scm_compare_result_free(&res);
    int low_saddles = 0, low_without_state = 0;
    const cJSON *q;
    cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(root, "fixed_points"))
    {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(q, "loss");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(q, "class");
        if (!cJSON_IsNumber(l) || l->valuedouble >= 1e-6)
            continue;
        low_saddles += cJSON_IsString(c) && strcmp(c->valuestring, "minimum") != 0;
        low_without_state += !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(q, "Q"));
    }
    CHECK(root && low_saddles >= 1, "%s: no non-minimum of loss < 1e-6 (%d)", fam, low_saddles);
    CHECK(root && low_without_state == 0, "%s: %d points of loss < 1e-6 without Q", fam,
          low_without_state);
    cJSON_Delete(root);
}

/* Row-major n x m matrix from a JSON array of arrays; 0, or -1. */
static int json_matrix(const cJSON *a, int n, int m, double *out)
{
    if (cJSON_GetArraySize(a) != n)
        return -1;
    for (int i = 0; i < n; i++) {
        const cJSON *row = cJSON_GetArrayItem(a, i);
        for (int j = 0; j < m; j++) {
            const cJSON *x = cJSON_GetArrayItem(row, j);
            if (cJSON_GetArraySize(row) != m || !cJSON_IsNumber(x))
                return -1;
            out[i * m + j] = x->valuedouble;
        }
    }
    return 0;
}

/* M = 20, K = 21 (above the dense analysis' K <= 20): the families
 * reached get the Hessian verdict of the families file's symmetric
 * spectrum, which must be the dense Hessian's verdict at their point. */
static void check_symmetric_verdicts(const char *dir)
{
    char fam[512];
    scm_compare_result res;
    cJSON *F = run_one_K(dir, "k21", 20, 21, 8, 0, &res, fam, sizeof fam);
    scm_error err;
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(F, "fixed_points");
    scm_model *m = scm_model_alloc(21, 20, &scm_act_relu, NULL, NULL, NULL, &err);
    double *Q = malloc(sizeof(double) * 21 * 21), *R = malloc(sizeof(double) * 21 * 20);
    int checked = 0;
    const cJSON *r, *reached =
                        F ? cJSON_GetObjectItemCaseSensitive(res.report, "families_reached") : NULL;
    cJSON_ArrayForEach(r, reached)
    {
        const cJSON *pi = cJSON_GetObjectItemCaseSensitive(r, "point_index");
        const cJSON *hv = cJSON_GetObjectItemCaseSensitive(r, "hessian_verdict");
        if (!cJSON_IsNumber(pi))
            continue; /* the global minimum */
        const cJSON *pt = cJSON_GetArrayItem(pts, pi->valueint);
        CHECK(pt && m && Q && R &&
                  json_matrix(cJSON_GetObjectItemCaseSensitive(pt, "Q"), 21, 21, Q) == 0 &&
                  json_matrix(cJSON_GetObjectItemCaseSensitive(pt, "R"), 21, 20, R) == 0,
              "%s: point %d has no state", fam, pi->valueint);
        if (!pt || !m || !Q || !R)
            continue;
        cJSON *dense = scm_compare_stab_fields(m, Q, R);
        const cJSON *dv = cJSON_GetObjectItemCaseSensitive(dense, "hessian_verdict");
        CHECK(cJSON_IsString(hv) && cJSON_IsString(dv) && strcmp(dv->valuestring, "-") != 0 &&
                  strcmp(hv->valuestring, dv->valuestring) == 0,
              "point %d: symmetric verdict %s, dense %s", pi->valueint,
              cJSON_IsString(hv) ? hv->valuestring : "?", cJSON_IsString(dv) ? dv->valuestring : "?");
        cJSON_Delete(dense);
        checked++;
    }
    CHECK(checked >= 1, "M = 20, K = 21: no family reached by 8 runs");
    free(Q);
    free(R);
    scm_model_free(m);
    cJSON_Delete(F);
    scm_compare_result_free(&res);
}

/* The report's fraction table against the runs files' records. */
static void check_table(const scm_compare_opts *o, const cJSON *report)
{
    const cJSON *tab = cJSON_GetObjectItemCaseSensitive(report, "fractions");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(tab, "rows");
    const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(tab, "count");
    const cJSON *wil = cJSON_GetObjectItemCaseSensitive(tab, "wilson95");
    const long nrows = 4; /* largest K + 1 */
    for (int j = 0; j < o->nK; j++) {
        char path[512];
        snprintf(path, sizeof path, "%s.K%ld.runs.jsonl", o->prefix, o->K[j]);
        long mine[8] = {0};
        long n = count_rows(path, o->K[j], mine);
        CHECK(n == o->runs, "%s: %ld records", path, n);
        long total = 0;
        for (int r = 0; r < cJSON_GetArraySize(rows); r++) {
            const char *name = cJSON_GetArrayItem(rows, r)->valuestring;
            long want;
            if (strcmp(name, "unmatched") == 0)
                want = mine[o->K[j] + 1];
            else if (strcmp(name, "not_converged") == 0)
                want = mine[o->K[j] + 2];
            else
                want = atol(name) <= o->K[j] ? mine[atol(name)] : 0;
            long got = (long)cJSON_GetArrayItem(cJSON_GetArrayItem(cnt, r), j)->valuedouble;
            CHECK(got == want, "K = %ld row %s: %ld in the table, %ld records", o->K[j], name,
                  got, want);
            double lo, hi;
            scm_sweep_wilson(want, n, &lo, &hi);
            const cJSON *w = cJSON_GetArrayItem(cJSON_GetArrayItem(wil, r), j);
            CHECK_CLOSE(cJSON_GetArrayItem(w, 0)->valuedouble, lo, 0, 1e-15, "wilson lo");
            CHECK_CLOSE(cJSON_GetArrayItem(w, 1)->valuedouble, hi, 0, 1e-15, "wilson hi");
            total += got;
        }
        CHECK(total == n, "K = %ld: the table counts %ld of %ld runs", o->K[j], total, n);
    }
    (void)nrows;
}

/* An executor of jobs that counts them by kind and runs them on 2 threads. */
static long jobs_fams, jobs_stab;
static scm_status counting_jobs(scm_compare_job *jobs, int n, int nthreads, scm_error *err)
{
    for (int i = 0; i < n; i++) {
        jobs_fams += strstr(jobs[i].in, "\"job\":\"families\"") != NULL;
        jobs_stab += strstr(jobs[i].in, "\"job\":\"stability\"") != NULL;
    }
    return scm_compare_jobs_exec(jobs, n, nthreads < 2 ? 2 : nthreads, err);
}

/* The whole text of a file, or NULL. */
static char *slurp(const char *path)
{
    size_t len;
    return scm_output_read_file(path, (size_t)64 << 20, &len, NULL);
}

/* The comparison of the jobs' checks: M = 7, K = 7, 8, 30 runs, verdicts. */
static void set_opts_jobs(scm_compare_opts *o, const char *prefix, counts *n)
{
    set_opts(o, prefix, n);
    o->M = 7;
    o->K[0] = 7;
    o->K[1] = 8;
    o->runs = 30;
    o->traces = 0;
    o->no_stability = 0;
    o->threads = 1;
}

/* The jobs (issue 29): a comparison at M = 7, K = 7, 8 (30 runs: a plateau
 * is reached, so a verdict is computed) with an executor of jobs writes
 * the same files and report as without one, and hands it the families of
 * both K and the verdicts; a text that is no job is refused. */
static void check_jobs(const char *dir)
{
    char *rep[2] = {NULL, NULL};
    for (int pass = 0; pass < 2; pass++) {
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s/j%d", dir, pass);
        counts n = {0};
        scm_compare_opts o;
        set_opts_jobs(&o, prefix, &n);
        o.jobs = pass ? counting_jobs : NULL;
        scm_compare_result res;
        scm_error err;
        scm_status st = scm_compare_run(&o, &res, &err);
        CHECK(st == SCM_OK, "compare with jobs %d: %s", pass, err.msg);
        rep[pass] = st == SCM_OK ? cJSON_PrintUnformatted(res.report) : NULL;
        scm_compare_result_free(&res);
    }
    CHECK(jobs_fams == 2 && jobs_stab >= 1, "jobs: %ld families, %ld stability", jobs_fams,
          jobs_stab);
    /* the reports name their own files: compare them with j0 for j1 */
    char *fix = rep[1];
    for (char *q = fix ? strstr(fix, "/j1.") : NULL; q; q = strstr(q + 1, "/j1."))
        q[2] = '0';
    CHECK(rep[0] && fix && strcmp(rep[0], fix) == 0, "the report differs with jobs");
    CHECK(rep[0] && strstr(rep[0], "\"escapes_to\""), "no verdict was computed");
    free(rep[0]);
    free(rep[1]);
    const char *kinds[] = {"config.json", "families.json", "runs.jsonl", "summary.json"};
    for (int K = 7; K <= 8; K++)
        for (int q = 0; q < 4; q++) {
            char a[300], b[300];
            snprintf(a, sizeof a, "%s/j0.K%d.%s", dir, K, kinds[q]);
            snprintf(b, sizeof b, "%s/j1.K%d.%s", dir, K, kinds[q]);
            char *x = slurp(a), *y = slurp(b);
            CHECK(x && y && strcmp(x, y) == 0, "%s differs with jobs", b);
            free(x);
            free(y);
        }
    char *out = NULL;
    scm_error err;
    CHECK(scm_compare_job_run("{\"job\": \"nothing\"}", 1, &out, &err) == SCM_EINVAL &&
              !out && strstr(err.msg, "nothing"),
          "an unknown job: %s", err.msg);
}

/* Files of K = 7, 8 under dir/PREFIX equal to j0's (check_jobs ran). */
static int same_as_j0(const char *dir, const char *prefix)
{
    const char *kinds[] = {"config.json", "families.json", "runs.jsonl", "summary.json"};
    int same = 1;
    for (int K = 7; K <= 8; K++)
        for (int q = 0; q < 4; q++) {
            char a[300], b[300];
            snprintf(a, sizeof a, "%s/j0.K%d.%s", dir, K, kinds[q]);
            snprintf(b, sizeof b, "%s/%s.K%d.%s", dir, prefix, K, kinds[q]);
            char *x = slurp(a), *y = slurp(b);
            same &= x && y && strcmp(x, y) == 0;
            free(x);
            free(y);
        }
    return same;
}

/* Jobs done ahead (scm_compare_families_jobs, scm_compare_opts.done_jobs;
 * scm_map computes the next row's this way): the comparison of check_jobs
 * given the results of its two enumerations computed beforehand hands no
 * families job to its executor and writes j0's files; a done job whose
 * text is not the comparison's is not taken; and the results are taken,
 * not recomputed: K = 8's result under K = 7's text is refused or changes
 * K = 7's files. */
static void check_done_jobs(const char *dir)
{
    for (int pass = 0; pass < 3; pass++) {
        char prefix[256], name[16];
        snprintf(name, sizeof name, "d%d", pass);
        snprintf(prefix, sizeof prefix, "%s/%s", dir, name);
        counts n = {0};
        scm_compare_opts o;
        set_opts_jobs(&o, prefix, &n);
        o.jobs = counting_jobs;
        scm_compare_job done[SCM_COMPARE_MAX_K];
        int nd = 0;
        scm_error err;
        scm_status st = scm_compare_families_jobs(&o, done, &nd, &err);
        CHECK(st == SCM_OK && nd == 2 && strstr(done[0].in, "\"K\":8") &&
                  strstr(done[1].in, "\"K\":7"),
              "families jobs: %d, %s", nd, st ? err.msg : "K not decreasing");
        for (int q = 0; q < nd; q++)
            CHECK(scm_compare_job_run(done[q].in, 1, &done[q].out, &err) == SCM_OK,
                  "job %d: %s", q, err.msg);
        if (nd == 2 && pass == 1) { /* one text that is not the comparison's */
            char *in = malloc(strlen(done[1].in) + 2);
            sprintf(in, "%s ", done[1].in);
            free(done[1].in);
            done[1].in = in;
        }
        if (nd == 2 && pass == 2) { /* K = 8's result under K = 7's text */
            free(done[1].out);
            done[1].out = malloc(strlen(done[0].out) + 1);
            strcpy(done[1].out, done[0].out);
        }
        o.done_jobs = done;
        o.n_done_jobs = nd;
        long before = jobs_fams;
        scm_compare_result res;
        st = scm_compare_run(&o, &res, &err);
        scm_compare_result_free(&res);
        if (pass == 0)
            CHECK(st == SCM_OK && jobs_fams == before && same_as_j0(dir, name),
                  "jobs done ahead: status %d, %ld families jobs run, files %s", (int)st,
                  jobs_fams - before, same_as_j0(dir, name) ? "the same" : "differ");
        if (pass == 1)
            CHECK(st == SCM_OK && jobs_fams == before + 1 && same_as_j0(dir, name),
                  "a done job of another text: status %d, %ld families jobs run", (int)st,
                  jobs_fams - before);
        if (pass == 2)
            CHECK(st != SCM_OK || !same_as_j0(dir, name),
                  "a planted result was not taken (the enumeration ran again)");
        for (int q = 0; q < nd; q++) {
            free(done[q].in);
            free(done[q].out);
        }
    }
}

int main(void)
{
    char dir[] = "/tmp/test_compare.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char prefix[256], base[256];
    snprintf(base, sizeof base, "%s/c", dir);
    snprintf(prefix, sizeof prefix, "%s/c.gd", dir);
    counts n = {0};
    scm_compare_opts o;
    set_opts(&o, prefix, &n);
    scm_compare_result res;
    scm_error err;
    scm_status st = scm_compare_run(&o, &res, &err);
    CHECK(st == SCM_OK, "compare: %s", err.msg);
    CHECK(n.records == 2 * o.runs && n.starts == 2 && n.ends == 2 && n.end_failures == 0,
          "events: %ld records, %ld starts, %ld ends", n.records, n.starts, n.ends);
    CHECK(n.notes >= 4, "notes: %ld (enumeration and sweep of each K)", n.notes);
    char *first = NULL;
    if (st == SCM_OK) {
        check_table(&o, res.report);
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.report, "traces")) == 2,
              "one trace per K");
        char *md = scm_compare_markdown(&res, prefix);
        CHECK(md && strstr(md, "# Where training ends: M = 2, K = 2, 3") &&
                  strstr(md, "| k1 | K = 2 | K = 3 |"),
              "markdown: %.200s", md ? md : "(null)");
        free(md);
        first = cJSON_PrintUnformatted(res.report);
    }
    scm_compare_result_free(&res);

    /* again: every sweep resumed, no run computed, the same report */
    counts n2 = {0};
    set_opts(&o, prefix, &n2);
    st = scm_compare_run(&o, &res, &err);
    CHECK(st == SCM_OK, "compare again: %s", err.msg);
    CHECK(n2.records == 0 && n2.starts == 2, "resumed: %ld records computed", n2.records);
    char *second = st == SCM_OK ? cJSON_PrintUnformatted(res.report) : NULL;
    CHECK(first && second && strcmp(first, second) == 0, "the resumed report differs");
    free(first);
    free(second);
    scm_compare_result_free(&res);

    /* the table across rules, from the summaries of prefix = base.gd */
    const char *rules[] = {"gd"};
    cJSON *rj = NULL;
    char *rmd = NULL;
    st = scm_compare_rules_table(base, 2, o.K, 2, rules, 1, &rj, &rmd, &err);
    CHECK(st == SCM_OK, "rules table: %s", err.msg);
    if (st == SCM_OK) {
        const cJSON *cells = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rj, "rules"), 0), "K");
        for (int j = 0; j < 2; j++) {
            char path[512];
            snprintf(path, sizeof path, "%s.K%ld.runs.jsonl", prefix, o.K[j]);
            long mine[8] = {0};
            count_rows(path, o.K[j], mine);
            const cJSON *e = cJSON_GetArrayItem(cells, j);
            const cJSON *g = cJSON_GetObjectItemCaseSensitive(e, "global_minimum");
            CHECK((long)cJSON_GetObjectItemCaseSensitive(g, "count")->valuedouble == mine[o.K[j] + 3],
                  "K = %ld: global minimum count", o.K[j]);
            CHECK((long)cJSON_GetObjectItemCaseSensitive(e, "runs")->valuedouble == o.runs,
                  "K = %ld: runs", o.K[j]);
        }
        CHECK(rmd && strstr(rmd, "| gd |"), "rules markdown");
    }
    cJSON_Delete(rj);
    free(rmd);
    st = scm_compare_rules_table(base, 2, o.K, 2, (const char *[]){"stiefel"}, 1, &rj, &rmd, &err);
    CHECK(st == SCM_EIO && rj == NULL && rmd == NULL, "missing summary: %d %s", st, err.msg);

    check_eps_global(dir, prefix);
    check_jobs(dir);
    check_done_jobs(dir);
    check_split_global_K38(dir);
    check_symmetric_verdicts(dir);

    /* a rerun with another --runs is refused naming it, and (as every
     * failure of part SWEEP) through the SWEEP_END event, which is what
     * the CLI prints: nothing was printed before */
    counts n4 = {0};
    set_opts(&o, prefix, &n4);
    o.runs = 6;
    st = scm_compare_run(&o, &res, &err);
    CHECK(st == SCM_EINVAL && res.failed_part == SCM_COMPARE_PART_SWEEP && res.failed_input &&
              strstr(err.msg, "runs = 5, not 6") && n4.ends == 1 && n4.end_failures == 1 &&
              n4.starts == 0,
          "rerun with --runs 6: %d part %d, %ld end events: %s", st, res.failed_part, n4.ends,
          st ? err.msg : "");
    scm_compare_result_free(&res);

    /* failures, and whose they are */
    char p2[256];
    snprintf(p2, sizeof p2, "%s/bad", dir);
    set_opts(&o, p2, &n);
    const char *sets[] = {"integrator.eps_stop=1e-3"};
    o.sets = sets;
    o.nsets = 1;
    st = scm_compare_run(&o, &res, &err);
    CHECK(st == SCM_EINVAL && res.failed_part == SCM_COMPARE_PART_COMPARE && res.failed_input &&
              res.failed_K == 2 && strstr(err.msg, "eps_stop"),
          "eps_stop: %d part %d: %s", st, res.failed_part, err.msg);
    scm_compare_result_free(&res);
    char other[512];
    snprintf(other, sizeof other, "%s/o.K2.runs.jsonl", dir);
    FILE *f = fopen(other, "w");
    fputs("{\"scm_sweep\": 1}\n", f);
    fclose(f);
    snprintf(p2, sizeof p2, "%s/o", dir);
    counts n3 = {0};
    set_opts(&o, p2, &n3);
    st = scm_compare_run(&o, &res, &err);
    CHECK(st == SCM_EINVAL && res.failed_part == SCM_COMPARE_PART_SWEEP && res.failed_input &&
              strstr(err.msg, "not this comparison's runs file") && n3.starts == 0,
          "other sweep's file: %d part %d: %s", st, res.failed_part, err.msg);
    scm_compare_result_free(&res);
    /* refused before the first write: the foreign file is left as it was */
    char back[64] = "";
    f = fopen(other, "r");
    CHECK(f && fgets(back, sizeof back, f) && strcmp(back, "{\"scm_sweep\": 1}\n") == 0,
          "the other sweep's file was changed: '%s'", back);
    if (f)
        fclose(f);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return TEST_SUMMARY();
}
