/* test_sweepfile.c: a sweep into a runs file and the merge of runs files
 * (sweepfile.h).  The file is read back line by line here, independently
 * of the library's resume scan: its header is scm_sweep_header_json_opts,
 * its records the runs of the shard in index order with their seeds; a
 * resumed file cut mid-line ends byte-identical to one written in one go;
 * the executor given is the one used; the merge of two shards has the
 * classes of the whole sweep, and its checks refuse a shard given twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scm/sweepfile.h"
#include "testutil.h"

static const char *config_text =
    "{\"model\": {\"K\": 3, \"M\": 3}, \"init\": {\"seed\": 7}, "
    "\"integrator\": {\"linear_solver\": \"dense\"}}";

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

/* An executor that counts its calls and runs, then delegates. */
static long exec_calls, exec_runs;
static scm_status counting_exec(const scm_config *c, uint64_t base, const long *indices, long n,
                                int nthreads, const scm_sweep_families *fams,
                                const scm_sweep_opts *o, scm_sweep_emit_fn emit, void *user,
                                scm_error *err)
{
    exec_calls++;
    exec_runs += n;
    return scm_sweep_exec(c, base, indices, n, nthreads, fams, o, emit, user, err);
}

static long progress_calls;
static void on_progress(const scm_sweep_file *f, void *user)
{
    (void)user;
    progress_calls++;
    CHECK(scm_sweep_file_done(f) <= scm_sweep_file_total(f), "done beyond total");
}

/* Run a sweep of runs (shard i/n) into path; returns the status. */
static scm_status sweep_into(const scm_config *c, const char *path, long runs, int i, int n,
                             int resume, int threads, scm_sweep_exec_fn exec, long *resumed,
                             scm_error *err)
{
    scm_sweep_file_opts o;
    scm_sweep_file_opts_default(&o);
    o.runs = runs;
    o.seed = 11;
    o.shard_i = i;
    o.shard_n = n;
    o.resume = resume;
    o.threads = threads;
    o.exec = exec;
    o.progress = on_progress;
    scm_sweep_file *f = NULL;
    scm_status st = scm_sweep_file_open(path, c, NULL, &o, &f, err);
    if (st)
        return st;
    if (resumed)
        *resumed = scm_sweep_file_resumed(f);
    st = scm_sweep_file_run(f, err);
    scm_sweep_file_free(f);
    return st;
}

/* The file read back independently: header, then the records of shard i/n
 * of runs in order with their seeds. */
static void check_file(const scm_config *c, const char *path, long runs, int i, int n)
{
    size_t len;
    char *text = slurp(path, &len);
    CHECK(text != NULL, "cannot read %s", path);
    if (!text)
        return;
    scm_sweep_opts so;
    scm_sweep_opts_default(&so);
    char *header = scm_sweep_header_json_opts(c, 11, runs, i, n, NULL, &so);
    long lineno = 0, want = i;
    for (char *p = text, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
        *nl = '\0';
        if (lineno++ == 0) {
            CHECK(header && strcmp(p, header) == 0, "%s: header differs", path);
            continue;
        }
        scm_sweep_record r;
        scm_error err;
        CHECK(scm_sweep_record_parse(p, &r, &err) == SCM_OK, "%s line %ld", path, lineno);
        CHECK(r.index == want, "%s: index %ld, want %ld", path, r.index, want);
        CHECK(r.seed == scm_sweep_seed(11, r.index), "%s: seed of run %ld", path, r.index);
        want += n;
    }
    CHECK(want >= runs && want - n < runs, "%s: ends at run %ld of %ld", path, want - n, runs);
    free(header);
    free(text);
}

int main(void)
{
    char dir[] = "/tmp/test_sweepfile.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char whole[256], cut[256], s0[256], s1[256];
    snprintf(whole, sizeof whole, "%s/whole.jsonl", dir);
    snprintf(cut, sizeof cut, "%s/cut.jsonl", dir);
    snprintf(s0, sizeof s0, "%s/s0.jsonl", dir);
    snprintf(s1, sizeof s1, "%s/s1.jsonl", dir);
    scm_config *c = NULL;
    scm_error err;
    CHECK(scm_config_parse(config_text, "test", NULL, 0, &c, &err) == SCM_OK, "%s", err.msg);
    if (!c)
        return TEST_SUMMARY();
    const long runs = 6;

    /* one go, on two threads through the counting executor */
    progress_calls = 0;
    scm_status st = sweep_into(c, whole, runs, 0, 1, 0, 2, counting_exec, NULL, &err);
    CHECK(st == SCM_OK, "sweep: %s", err.msg);
    CHECK(exec_calls == 1 && exec_runs == runs, "executor used: %ld calls, %ld runs", exec_calls,
          exec_runs);
    CHECK(progress_calls == runs, "progress called %ld times", progress_calls);
    check_file(c, whole, runs, 0, 1);

    /* an existing file without resume is refused */
    st = sweep_into(c, whole, runs, 0, 1, 0, 1, NULL, NULL, &err);
    CHECK(st == SCM_EINVAL && strstr(err.msg, "--resume"), "no resume: %d %s", st, err.msg);
    /* another sweep's file is refused on resume */
    st = sweep_into(c, whole, runs + 1, 0, 1, 1, 1, NULL, NULL, &err);
    CHECK(st == SCM_EINVAL && strstr(err.msg, "different sweep"), "other sweep: %s", err.msg);

    /* a file cut in the middle of its 4th line (3rd record) resumes to the same bytes */
    size_t wl;
    char *w = slurp(whole, &wl);
    CHECK(w != NULL, "read back");
    if (w) {
        char *p = w;
        for (int k = 0; k < 3 && p; k++)
            p = strchr(p, '\n') + 1;
        size_t keep = (size_t)(p - w) + 10;
        FILE *f = fopen(cut, "wb");
        fwrite(w, 1, keep, f);
        fclose(f);
        long resumed = -1;
        exec_runs = 0;
        st = sweep_into(c, cut, runs, 0, 1, 1, 1, counting_exec, &resumed, &err);
        CHECK(st == SCM_OK, "resume: %s", err.msg);
        CHECK(resumed == 2, "resumed %ld records, want 2", resumed);
        CHECK(exec_runs == runs - 2, "runs computed on resume: %ld", exec_runs);
        size_t cl;
        char *cb = slurp(cut, &cl);
        CHECK(cb && cl == wl && memcmp(cb, w, wl) == 0, "resumed file differs from one go");
        free(cb);
    }

    /* shards and their merge */
    CHECK(sweep_into(c, s0, runs, 0, 2, 0, 1, NULL, NULL, &err) == SCM_OK, "%s", err.msg);
    CHECK(sweep_into(c, s1, runs, 1, 2, 0, 1, NULL, NULL, &err) == SCM_OK, "%s", err.msg);
    check_file(c, s0, runs, 0, 2);
    check_file(c, s1, runs, 1, 2);
    const char *both[] = {s0, s1};
    scm_sweep_merge_result mr;
    st = scm_sweep_merge(both, 2, &mr, &err);
    CHECK(st == SCM_OK, "merge: %s", err.msg);
    CHECK(mr.records == runs && mr.missing == 0 && mr.first_missing == -1 && mr.runs == runs,
          "merge counts: %ld records, %ld missing", mr.records, mr.missing);
    /* its classes are those of the whole file merged alone */
    const char *one[] = {whole};
    scm_sweep_merge_result mw;
    CHECK(scm_sweep_merge(one, 1, &mw, &err) == SCM_OK, "merge whole: %s", err.msg);
    if (mr.json && mw.json) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(mr.json, "summary"), "classes");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(mw.json, "summary"), "classes");
        char *ta = cJSON_PrintUnformatted(a), *tb = cJSON_PrintUnformatted(b);
        CHECK(ta && tb && strcmp(ta, tb) == 0, "classes of the shards differ from the whole");
        free(ta);
        free(tb);
    }
    scm_sweep_merge_result_free(&mw);
    scm_sweep_merge_result_free(&mr);
    /* one shard alone: runs 1, 3, 5 missing */
    st = scm_sweep_merge(both, 1, &mr, &err);
    CHECK(st == SCM_OK && mr.missing == 3 && mr.first_missing == 1, "one shard: %ld missing, first %ld",
          mr.missing, mr.first_missing);
    scm_sweep_merge_result_free(&mr);
    /* the same shard twice, and a shard with the whole file */
    const char *twice[] = {s0, s0};
    st = scm_sweep_merge(twice, 2, &mr, &err);
    CHECK(st == SCM_EINVAL && strstr(err.msg, "same shard"), "twice: %s", err.msg);
    CHECK(mr.json == NULL && mr.summary == NULL, "result empty after a failure");
    const char *overlap[] = {whole, s0};
    st = scm_sweep_merge(overlap, 2, &mr, &err);
    CHECK(st == SCM_EINVAL && strstr(err.msg, "appears twice"), "overlap: %s", err.msg);
    scm_sweep_merge_result_free(&mr);

    free(w);
    scm_config_free(c);
    unlink(whole);
    unlink(cut);
    unlink(s0);
    unlink(s1);
    rmdir(dir);
    return TEST_SUMMARY();
}
