/* sweep_file.c: a sweep run into a runs file (sweepfile.h), what `scm
 * sweep` and `scm compare` compute.  The header line pins the sweep; the
 * resume scan accepts only this sweep's records of this shard, in order,
 * with their seeds; the records are appended in index order, each flushed
 * and fsync'ed as it is written (or fsync'ed every fsync_interval seconds),
 * so that a kill loses at most the line being written, which the next
 * resume drops and rewrites. */
#include "scm/sweepfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct scm_sweep_file {
    const char *path;
    const scm_config *c;
    const scm_sweep_families *fams;
    const scm_sweep_file_opts *o;
    FILE *f;
    long *idx, nidx;
    long resumed, done;
    scm_sweep_summary *sum;
    double last_sync; /* time of the last fsync (fsync_interval > 0) */
    scm_status io_st; /* the failure that stopped the emit, with io_msg */
    char io_msg[512];
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void scm_sweep_file_opts_default(scm_sweep_file_opts *o)
{
    memset(o, 0, sizeof *o);
    o->runs = 1;
    o->shard_n = 1;
    o->threads = 1;
    scm_sweep_opts_default(&o->sweep);
}

/* The whole file as a NUL-terminated string; NULL with errno set. */
static char *read_all(const char *path, size_t *len)
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
    if (!buf || bad) {
        free(buf);
        errno = bad ? EIO : ENOMEM;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

scm_status scm_sweep_families_load(const char *path, scm_sweep_families *fams, scm_error *err)
{
    size_t len;
    char *text = read_all(path, &len);
    if (!text)
        return scm_error_set(err, SCM_EIO, "cannot read families file '%s': %s", path,
                             strerror(errno));
    scm_status st = scm_sweep_families_parse(text, path, fams, err);
    free(text);
    return st;
}

/* One record line of a resumed file: it must be the next run of the shard
 * with its seed; counted into the summary. */
static scm_status resume_record(scm_sweep_file *s, const char *p, long lineno, uint64_t base,
                                scm_error *err)
{
    scm_sweep_record r;
    scm_error e;
    if (scm_sweep_record_parse(p, &r, &e))
        return scm_error_set(err, SCM_EINVAL, "'%s' line %ld: %s", s->path, lineno, e.msg);
    if (s->resumed >= s->nidx || r.index != s->idx[s->resumed])
        return scm_error_set(err, SCM_EINVAL, "'%s' line %ld: run index %ld, expected %ld",
                             s->path, lineno, r.index,
                             s->resumed < s->nidx ? s->idx[s->resumed] : -1L);
    if (r.seed != scm_sweep_seed(base, r.index))
        return scm_error_set(err, SCM_EINVAL, "'%s' line %ld: seed %lu is not that of run %ld",
                             s->path, lineno, r.seed, r.index);
    if (scm_sweep_summary_add(s->sum, &r))
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    s->resumed++;
    return SCM_OK;
}

/* Validate an existing runs file for resume: the header must equal
 * header, the records must be the first of idx with the right seeds.  A
 * last line without its newline (a kill mid-write) is dropped; *keep is
 * the length of the valid prefix (0: rewrite from scratch, the header
 * itself was cut). */
static scm_status resume_scan(scm_sweep_file *s, const char *header, uint64_t base, off_t *keep,
                              scm_error *err)
{
    size_t len;
    char *text = read_all(s->path, &len);
    *keep = 0;
    if (!text)
        return scm_error_set(err, SCM_EINVAL, "cannot read '%s' to resume: %s", s->path,
                             strerror(errno));
    scm_status st = SCM_OK;
    char *p = text, *end = text + len;
    long lineno = 0;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break; /* cut by a kill: drop it */
        *nl = '\0';
        lineno++;
        if (lineno == 1) {
            if (strcmp(p, header) != 0) {
                st = scm_error_set(err, SCM_EINVAL,
                                   "'%s' was written by a different sweep (its header "
                                   "differs: config, seed, runs, shard or families); not resuming",
                                   s->path);
                break;
            }
        } else if ((st = resume_record(s, p, lineno, base, err))) {
            break;
        }
        *keep = (off_t)(nl + 1 - text);
        p = nl + 1;
    }
    free(text);
    return st;
}

/* Resume or start the file at s->path with its header line. */
static scm_status open_file(scm_sweep_file *s, const char *header, scm_error *err)
{
    const char *path = s->path;
    off_t keep = 0;
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && !s->o->resume)
        return scm_error_set(err, SCM_EINVAL,
                             "'%s' exists: continue it with --resume, or remove it", path);
    scm_status st;
    if (exists && (st = resume_scan(s, header, s->o->seed, &keep, err)))
        return st;
    if (exists && truncate(path, keep) != 0)
        return scm_error_set(err, SCM_EIO, "cannot truncate '%s': %s", path, strerror(errno));
    s->f = fopen(path, "ab");
    if (!s->f)
        return scm_error_set(err, SCM_EIO, "cannot open '%s': %s", path, strerror(errno));
    if (keep == 0 && (fputs(header, s->f) < 0 || fputc('\n', s->f) == EOF ||
                      fflush(s->f) != 0 || fsync(fileno(s->f)) != 0))
        return scm_error_set(err, SCM_EIO, "cannot write '%s': %s", path, strerror(errno));
    return SCM_OK;
}

scm_status scm_sweep_file_open(const char *path, const scm_config *c,
                               const scm_sweep_families *fams, const scm_sweep_file_opts *o,
                               scm_sweep_file **out, scm_error *err)
{
    static const scm_sweep_families none = {0, NULL, NULL};
    *out = NULL;
    if (!path || !c || !o || o->runs < 1 || o->shard_n < 1 || o->shard_i < 0 ||
        o->shard_i >= o->shard_n || o->threads < 1)
        return scm_error_set(err, SCM_EINVAL, "bad sweep file arguments");
    if (!fams)
        fams = &none;
    scm_sweep_file *s = calloc(1, sizeof *s);
    if (!s)
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    s->path = path;
    s->c = c;
    s->fams = fams;
    s->o = o;
    const long runs = o->runs, shard_i = o->shard_i, shard_n = o->shard_n;
    char *header = scm_sweep_header_json_opts(c, o->seed, runs, o->shard_i, o->shard_n, fams,
                                              &o->sweep);
    s->nidx = shard_i < runs ? (runs - 1 - shard_i) / shard_n + 1 : 0;
    s->idx = malloc(sizeof *s->idx * (size_t)(s->nidx > 0 ? s->nidx : 1));
    s->sum = scm_sweep_summary_alloc(s->nidx);
    scm_status st;
    if (!header || !s->idx || !s->sum) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    } else {
        for (long j = 0; j < s->nidx; j++)
            s->idx[j] = shard_i + j * shard_n;
        st = open_file(s, header, err);
    }
    free(header);
    if (st) {
        scm_sweep_file_free(s);
        return st;
    }
    s->done = s->resumed;
    *out = s;
    return SCM_OK;
}

static int emit_record(const scm_sweep_record *r, void *user)
{
    scm_sweep_file *s = user;
    char *line = scm_sweep_record_json(r);
    if (!line) {
        snprintf(s->io_msg, sizeof s->io_msg, "out of memory");
        s->io_st = SCM_ENOMEM;
        return 1;
    }
    int ok = fputs(line, s->f) >= 0 && fputc('\n', s->f) != EOF && fflush(s->f) == 0;
    if (ok && s->o->fsync_interval > 0.0) {
        double t = now();
        if (t - s->last_sync >= s->o->fsync_interval) {
            ok = fsync(fileno(s->f)) == 0;
            s->last_sync = t;
        }
    } else if (ok) {
        ok = fsync(fileno(s->f)) == 0;
    }
    free(line);
    if (!ok) {
        snprintf(s->io_msg, sizeof s->io_msg, "cannot write '%s': %s", s->path, strerror(errno));
        s->io_st = SCM_EIO;
        return 1;
    }
    if (scm_sweep_summary_add(s->sum, r)) {
        snprintf(s->io_msg, sizeof s->io_msg, "out of memory");
        s->io_st = SCM_ENOMEM;
        return 1;
    }
    s->done++;
    if (s->o->progress)
        s->o->progress(s, s->o->progress_user);
    return 0;
}

/* Close the file; SCM_EIO when the close fails. */
static scm_status close_file(scm_sweep_file *s, scm_error *err)
{
    FILE *f = s->f;
    s->f = NULL;
    if (fclose(f) != 0)
        return scm_error_set(err, SCM_EIO, "cannot close '%s': %s", s->path, strerror(errno));
    return SCM_OK;
}

scm_status scm_sweep_file_run(scm_sweep_file *s, scm_error *err)
{
    if (!s || !s->f)
        return scm_error_set(err, SCM_EINVAL, "the sweep file is not open");
    scm_sweep_exec_fn exec = s->o->exec ? s->o->exec : scm_sweep_exec;
    s->last_sync = now();
    scm_status st = exec(s->c, s->o->seed, s->idx + s->resumed, s->nidx - s->resumed,
                         s->o->threads, s->fams, &s->o->sweep, emit_record, s, err);
    if (s->io_st) {
        fclose(s->f);
        s->f = NULL;
        return scm_error_set(err, s->io_st, "%s", s->io_msg);
    }
    if (s->o->fsync_interval > 0.0 && fsync(fileno(s->f)) != 0 && !st) {
        /* the records since the last fsync */
        st = scm_error_set(err, SCM_EIO, "cannot write '%s': %s", s->path, strerror(errno));
        fclose(s->f);
        s->f = NULL;
        return st;
    }
    if (st) {
        fclose(s->f);
        s->f = NULL;
        return st;
    }
    return close_file(s, err);
}

long scm_sweep_file_total(const scm_sweep_file *s)
{
    return s->nidx;
}

long scm_sweep_file_done(const scm_sweep_file *s)
{
    return s->done;
}

long scm_sweep_file_resumed(const scm_sweep_file *s)
{
    return s->resumed;
}

const scm_sweep_summary *scm_sweep_file_summary(const scm_sweep_file *s)
{
    return s->sum;
}

void scm_sweep_file_free(scm_sweep_file *s)
{
    if (!s)
        return;
    if (s->f)
        fclose(s->f);
    free(s->idx);
    scm_sweep_summary_free(s->sum);
    free(s);
}
