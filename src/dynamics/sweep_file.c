/* sweep_file.c: a sweep run into a runs file (sweepfile.h), what `scm
 * sweep` and `scm compare` compute.  The header line pins the sweep; the
 * resume scan accepts only this sweep's records of this shard, in order,
 * with their seeds; the records are appended in index order, each flushed
 * and fsync'ed as it is written (or fsync'ed every fsync_interval seconds),
 * so that a kill loses at most the line being written, which the next
 * resume drops and rewrites. */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include "scm/sweepfile.h"

#include "scm/output.h"
#include "sweep_io.h"

#include <errno.h>
#include <fcntl.h>
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

FILE *scm_sweep_io_open(const char *path, scm_error *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        scm_error_set(err, SCM_EINVAL, "cannot read '%s': it is a directory", path);
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        scm_error_set(err, SCM_EINVAL, "cannot read '%s': %s", path, strerror(errno));
    return f;
}

int scm_sweep_io_line(FILE *f, char **buf, size_t *cap, size_t *len, int *nl)
{
    size_t n = 0;
    int ch;
    *nl = 0;
    while ((ch = getc(f)) != EOF) {
        if (ch == '\n') {
            *nl = 1;
            break;
        }
        if (ch == '\0')
            return -3;
        if (n + 1 >= *cap) {
            if (*cap >= SCM_SWEEP_LINE_MAX)
                return -2;
            size_t nc = *cap ? 2 * *cap : 4096;
            char *nb = realloc(*buf, nc);
            if (!nb)
                return -4;
            *buf = nb;
            *cap = nc;
        }
        (*buf)[n++] = (char)ch;
    }
    if (ferror(f))
        return -1;
    if (n == 0 && !*nl)
        return 0;
    if (!*buf) { /* an empty line as the first read */
        *buf = malloc(1);
        if (!*buf)
            return -4;
        *cap = 1;
    }
    (*buf)[n] = '\0';
    *len = n;
    return 1;
}

scm_status scm_sweep_io_error(int rc, const char *path, long lineno, scm_error *err)
{
    if (rc == -1)
        return scm_error_set(err, SCM_EINVAL, "cannot read '%s': %s", path, strerror(errno));
    if (rc == -4)
        return scm_error_set(err, SCM_ENOMEM, "out of memory reading '%s'", path);
    return scm_error_set(err, SCM_EINVAL, "'%s' line %ld: %s: not a runs file", path, lineno,
                         rc == -2 ? "longer than 16 MB" : "a NUL byte");
}

scm_status scm_sweep_families_load(const char *path, scm_sweep_families *fams, scm_error *err)
{
    size_t len;
    scm_error e;
    struct stat sb;
    fams->n = 0;
    fams->f = NULL;
    fams->cache = NULL;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return scm_error_set(err, SCM_EINVAL, "cannot read families file '%s': it is a directory",
                             path);
    FILE *t = fopen(path, "rb");
    if (!t)
        return scm_error_set(err, SCM_EIO, "cannot read families file '%s': %s", path,
                             strerror(errno));
    fclose(t);
    char *text = scm_output_read_file(path, SCM_SWEEP_FAMILIES_MAX, &len, &e);
    if (!text)
        return scm_error_set(err, e.code == SCM_EINVAL ? SCM_EINVAL : e.code,
                             "families file: %s", e.msg);
    if (strlen(text) != len) {
        free(text);
        return scm_error_set(err, SCM_EINVAL, "families file '%s' holds a NUL byte: not JSON",
                             path);
    }
    scm_status st = scm_sweep_families_parse(text, path, fams, err);
    free(text);
    return st;
}

scm_status scm_sweep_families_check_shape(const scm_sweep_families *fams, int K, int M,
                                          const char *source, scm_error *err)
{
    for (int i = 0; fams && i < fams->n; i++) {
        const scm_sweep_family *f = &fams->f[i];
        if (f->Q && (f->K != K || f->M != M))
            return scm_error_set(err, SCM_EINVAL,
                                 "%s: family %d ('%s') is a point of K = %d, M = %d, but the "
                                 "model has K = %d, M = %d",
                                 source, i, f->name, f->K, f->M, K, M);
    }
    return SCM_OK;
}

/* One record line of a resumed file: it must be the next run of the shard
 * with its seed; counted into the summary. */
static scm_status resume_record(scm_sweep_file *s, const char *p, long lineno, uint64_t base,
                                scm_error *err)
{
    scm_sweep_record r;
    scm_error e;
    if (s->resumed >= s->nidx)
        return scm_error_set(err, SCM_EINVAL,
                             "'%s' line %ld: a record beyond the last run of this shard (it "
                             "has %ld runs); not resuming",
                             s->path, lineno, s->nidx);
    if (scm_sweep_record_parse(p, &r, &e))
        return scm_error_set(err, SCM_EINVAL, "'%s' line %ld: %s", s->path, lineno, e.msg);
    if (r.index != s->idx[s->resumed])
        return scm_error_set(err, SCM_EINVAL, "'%s' line %ld: run index %ld, expected %ld",
                             s->path, lineno, r.index, s->idx[s->resumed]);
    if (r.seed != scm_sweep_seed(base, r.index))
        return scm_error_set(err, SCM_EINVAL, "'%s' line %ld: seed %lu is not that of run %ld",
                             s->path, lineno, r.seed, r.index);
    if (scm_sweep_summary_add(s->sum, &r))
        return scm_error_set(err, SCM_ENOMEM, "out of memory");
    s->resumed++;
    return SCM_OK;
}

/* Line 1 of a resumed file against header (len n, with *nl its newline). */
static scm_status resume_header(const scm_sweep_file *s, const char *p, size_t n, int nl,
                                const char *header, scm_error *err)
{
    size_t hl = strlen(header);
    if (!nl) /* cut by a kill while the header was written: only a prefix of it */
        return n <= hl && memcmp(p, header, n) == 0
                   ? SCM_OK
                   : scm_error_set(err, SCM_EINVAL,
                                   "'%s' is not a runs file of this sweep (its first line is "
                                   "not a sweep header); not touching it",
                                   s->path);
    if (strcmp(p, header) == 0)
        return SCM_OK;
    if (n > 0 && p[n - 1] == '\r')
        return scm_error_set(err, SCM_EINVAL,
                             "'%s' has CRLF line ends (\\r\\n; converted by an editor or a "
                             "transfer?); scm sweep writes \\n only; not resuming",
                             s->path);
    if (strncmp(p, "{\"scm_sweep\":", 13) != 0)
        return scm_error_set(err, SCM_EINVAL,
                             "'%s' is not a runs file (its first line is not a sweep header); "
                             "not touching it",
                             s->path);
    return scm_error_set(err, SCM_EINVAL,
                         "'%s' was written by a different sweep (its header differs: config, "
                         "seed, runs, shard, families or the classification options); not "
                         "resuming",
                         s->path);
}

/* Validate an existing runs file, read through f, for resume: the header
 * must equal header, the records must be the first of idx with the right
 * seeds.  A last line without its newline (a kill mid-write) is dropped;
 * *keep is the length of the valid prefix (0: rewrite from scratch, the
 * header itself was cut). */
static scm_status resume_scan(scm_sweep_file *s, FILE *f, const char *header, uint64_t base,
                              off_t *keep, scm_error *err)
{
    char *buf = NULL;
    size_t cap = 0, n;
    int nl, rc;
    long lineno = 0;
    scm_status st = SCM_OK;
    off_t pos = 0;
    *keep = 0;
    while (!st && (rc = scm_sweep_io_line(f, &buf, &cap, &n, &nl)) > 0) {
        lineno++;
        if (lineno == 1)
            st = resume_header(s, buf, n, nl, header, err);
        else if (!nl)
            break; /* cut by a kill: drop it */
        else
            st = resume_record(s, buf, lineno, base, err);
        if (!nl)
            break;
        pos += (off_t)n + 1;
        if (!st)
            *keep = pos;
    }
    if (!st && rc < 0)
        st = scm_sweep_io_error(rc, s->path, lineno + 1, err);
    free(buf);
    return st;
}

/* Take the advisory write lock of the runs file open as fd: another
 * process resuming or writing it gets a named error. */
static scm_status lock_file(int fd, const char *path, scm_error *err)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
#ifdef F_OFD_SETLK
    int r = fcntl(fd, F_OFD_SETLK, &fl); /* owned by the open file, kept across dup */
#else
    int r = fcntl(fd, F_SETLK, &fl);
#endif
    if (r == 0)
        return SCM_OK;
    if (errno == EACCES || errno == EAGAIN)
        return scm_error_set(err, SCM_EINVAL,
                             "'%s' is locked by another process (an scm sweep writing it?); "
                             "not touching it",
                             path);
    return scm_error_set(err, SCM_EIO, "cannot lock '%s': %s", path, strerror(errno));
}

/* The existing file open as fd checked for resume and cut to its valid
 * prefix. */
static scm_status resume_file(scm_sweep_file *s, int fd, const char *header, off_t *keep,
                              scm_error *err)
{
    int rfd = dup(fd);
    FILE *rf = rfd >= 0 ? fdopen(rfd, "rb") : NULL;
    if (!rf) {
        if (rfd >= 0)
            close(rfd);
        return scm_error_set(err, SCM_EIO, "cannot read '%s': %s", s->path, strerror(errno));
    }
    rewind(rf);
    scm_status st = resume_scan(s, rf, header, s->o->seed, keep, err);
    fclose(rf);
    if (!st && ftruncate(fd, *keep) != 0)
        st = scm_error_set(err, SCM_EIO, "cannot truncate '%s': %s", s->path, strerror(errno));
    return st;
}

/* Resume or start the file at s->path with its header line, locked. */
static scm_status open_file(scm_sweep_file *s, const char *header, scm_error *err)
{
    const char *path = s->path;
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && !s->o->resume)
        return scm_error_set(err, SCM_EINVAL,
                             "'%s' exists: continue it with --resume, or remove it", path);
    if (exists && !S_ISREG(sb.st_mode))
        return scm_error_set(err, SCM_EINVAL, "'%s' is not a regular file: not a runs file",
                             path);
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd < 0)
        return scm_error_set(err, SCM_EIO, "cannot open '%s': %s", path, strerror(errno));
    off_t keep = 0;
    scm_status st = lock_file(fd, path, err);
    if (!st && fstat(fd, &sb) != 0)
        st = scm_error_set(err, SCM_EIO, "cannot stat '%s': %s", path, strerror(errno));
    if (!st && sb.st_size > 0 && !s->o->resume) /* created by another process meanwhile */
        st = scm_error_set(err, SCM_EINVAL,
                           "'%s' exists: continue it with --resume, or remove it", path);
    if (!st && sb.st_size > 0)
        st = resume_file(s, fd, header, &keep, err);
    if (!st && !(s->f = fdopen(fd, "ab")))
        st = scm_error_set(err, SCM_EIO, "cannot open '%s': %s", path, strerror(errno));
    if (st) {
        close(fd);
        return st;
    }
    if (keep == 0 &&
        (fputs(header, s->f) < 0 || fputc('\n', s->f) == EOF || fflush(s->f) != 0 ||
         fsync(fileno(s->f)) != 0))
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
    scm_status st0 = scm_sweep_families_check_shape(fams, c->K, c->M, "families",
                                                    err);
    if (st0)
        return st0;
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
