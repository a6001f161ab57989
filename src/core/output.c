/* output.c: atomic file writes and JSON matrix helpers; see output.h. */
#include "scm/output.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 if path is a character device or a FIFO (following links), written
 * directly; 0 if it is to be replaced atomically; -1 refused (err set). */
static int output_kind(const char *path, scm_error *err)
{
    struct stat ls, st;
    if (lstat(path, &ls) != 0)
        return 0; /* a new path: the rename will tell if its folder is missing */
    if (S_ISREG(ls.st_mode))
        return 0;
    if (stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
        return 1;
    /* /dev/stdout and its kin name a descriptor already open: written
     * through, appended to whatever it is (a shell's redirection) */
    if (S_ISLNK(ls.st_mode) && (strcmp(path, "/dev/stdout") == 0 ||
                                strcmp(path, "/dev/stderr") == 0 ||
                                strncmp(path, "/dev/fd/", 8) == 0 ||
                                strncmp(path, "/proc/self/fd/", 14) == 0))
        return 1;
    const char *what = S_ISLNK(ls.st_mode) ? "a symbolic link (not replaced; name its target)"
                       : S_ISDIR(ls.st_mode) ? "a directory"
                       : S_ISBLK(ls.st_mode) ? "a block device"
                       : S_ISSOCK(ls.st_mode) ? "a socket"
                                              : "not a regular file";
    scm_error_set(err, SCM_EINVAL, "output '%s' is %s", path, what);
    return -1;
}

scm_status scm_output_check_path(const char *path, scm_error *err)
{
    return output_kind(path, err) < 0 ? SCM_EINVAL : SCM_OK;
}

int scm_output_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, b) == 0)
        return 1;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

scm_status scm_output_check_out(const char *out, const char *const *in, int n, scm_error *err)
{
    if (!out)
        return SCM_OK;
    for (int i = 0; i < n; i++)
        if (in[i] && scm_output_same_file(out, in[i]))
            return scm_error_set(err, SCM_EINVAL,
                                 "the output '%s' is also an input or output ('%s'); refused", out,
                                 in[i]);
    return scm_output_check_path(out, err);
}

/* Write to a device or FIFO as it is (no temporary file, no rename). */
static scm_status write_direct(const char *path, const char *data, size_t len, scm_error *err)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
    int ok = fd >= 0;
    for (size_t done = 0; ok && done < len;) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        done += ok ? (size_t)w : 0;
    }
    int saved = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        saved = errno;
        ok = 0;
    }
    return ok ? SCM_OK
              : scm_error_set(err, SCM_EIO, "cannot write '%s': %s", path, strerror(saved));
}

/* The signals that end a process by default at a user's or a scheduler's
 * request.  They are blocked in the calling thread from the creation of a
 * temporary file to its rename or removal: one that arrives meanwhile stays
 * pending and takes effect when the mask is restored, after the cleanup, so
 * that no OUT.tmpXXXXXX is left behind.  No global state: the mask is the
 * thread's own and restored as it was.  (SIGKILL cannot be blocked; other
 * threads keep their masks, and the commands write from the main thread
 * once their workers are done.) */
static void block_signals(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

static void restore_signals(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

/* Write data to a new temporary file beside path, flushed to the disk and
 * closed; *tmp gets its name (the caller frees it, and renames or removes
 * the file).  On failure nothing is left and *tmp is NULL. */
static scm_status write_temporary(const char *path, const char *data, size_t len, char **tmp,
                                  scm_error *err)
{
    size_t n = strlen(path) + 16;
    char *t = malloc(n);
    *tmp = NULL;
    if (!t)
        return scm_error_set(err, SCM_ENOMEM, "out of memory writing '%s'", path);
    snprintf(t, n, "%s.tmpXXXXXX", path);
    int fd = mkstemp(t);
    if (fd < 0) {
        scm_status st = scm_error_set(err, SCM_EIO, "cannot create a temporary file for '%s': %s",
                                      path, strerror(errno));
        free(t);
        return st;
    }
    /* mkstemp creates 0600; a result file is as readable as one fopen
     * would make under the usual umask 022 (the umask itself cannot be read
     * without setting it, process-wide). */
    int ok = fchmod(fd, 0644) == 0;
    FILE *f = ok ? fdopen(fd, "wb") : NULL;
    ok = f != NULL;
    if (ok)
        ok = fwrite(data, 1, len, f) == len;
    if (ok)
        ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    int saved = errno;
    if (f)
        ok = (fclose(f) == 0) && ok;
    else
        close(fd);
    if (!ok) {
        remove(t);
        free(t);
        return scm_error_set(err, SCM_EIO, "cannot write '%s': %s", path, strerror(saved));
    }
    *tmp = t;
    return SCM_OK;
}

scm_status scm_output_write_atomic(const char *path, const char *data, size_t len,
                                   scm_error *err)
{
    return scm_output_write_many(1, &path, &data, &len, err);
}

scm_status scm_output_write_many(int n, const char *const *paths, const char *const *data,
                                 const size_t *len, scm_error *err)
{
    if (n < 0)
        return scm_error_set(err, SCM_EINVAL, "a negative number of files");
    int *kind = malloc(sizeof *kind * (size_t)(n ? n : 1));
    char **tmp = calloc((size_t)(n ? n : 1), sizeof *tmp);
    scm_status st = kind && tmp ? SCM_OK : scm_error_set(err, SCM_ENOMEM, "out of memory");
    for (int i = 0; !st && i < n; i++)
        if ((kind[i] = output_kind(paths[i], err)) < 0)
            st = SCM_EINVAL;
    for (int i = 0; !st && i < n; i++)
        for (int j = 0; j < i; j++)
            if (scm_output_same_file(paths[i], paths[j])) {
                st = scm_error_set(err, SCM_EINVAL, "output '%s' is named twice", paths[i]);
                break;
            }
    if (st) {
        free(kind);
        free(tmp);
        return st;
    }
    sigset_t old;
    block_signals(&old);
    for (int i = 0; !st && i < n; i++)
        if (kind[i] == 0)
            st = write_temporary(paths[i], data[i], len[i], &tmp[i], err);
    for (int i = 0; !st && i < n; i++)
        if (tmp[i] && rename(tmp[i], paths[i]) != 0)
            st = scm_error_set(err, SCM_EIO, "cannot write '%s': %s", paths[i], strerror(errno));
        else if (tmp[i]) {
            free(tmp[i]);
            tmp[i] = NULL;
        }
    for (int i = 0; i < n; i++)
        if (tmp[i]) {
            remove(tmp[i]);
            free(tmp[i]);
        }
    restore_signals(&old);
    for (int i = 0; !st && i < n; i++)
        if (kind[i] > 0)
            st = write_direct(paths[i], data[i], len[i], err);
    free(kind);
    free(tmp);
    return st;
}

/* The exact decimal forms already made: fixed-point states repeat a few
 * values many times (a block-symmetric Q of 400 entries has about five),
 * and the shortest round-trip form costs up to three printf and strtod. */
enum { EXACT_CACHE = 512 };
typedef struct {
    uint64_t bits[EXACT_CACHE];
    char text[EXACT_CACHE][32];
    unsigned char used[EXACT_CACHE];
} exact_cache;

/* The shortest of %.15g, %.16g, %.17g that reads back as x. */
static const char *exact_form(exact_cache *c, double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    unsigned h = (unsigned)((b * 0x9E3779B97F4A7C15u) >> 55) % EXACT_CACHE;
    if (c->used[h] && c->bits[h] == b)
        return c->text[h];
    char *buf = c->text[h];
    for (int p = 15; p <= 17; p++) {
        snprintf(buf, sizeof c->text[h], "%.*g", p, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    c->bits[h] = b;
    c->used[h] = 1;
    return buf;
}

/* Replace, below parent, every number that is not a small integer (those
 * cJSON prints exactly) by a raw item with its exact decimal form. */
static int exact_numbers(cJSON *parent, exact_cache *c)
{
    cJSON *it = parent->child;
    while (it) {
        cJSON *next = it->next;
        double x = it->valuedouble;
        if (cJSON_IsNumber(it) && isfinite(x) && !(fabs(x) < 2e9 && x == (double)(long)x)) {
            cJSON *raw = cJSON_CreateRaw(exact_form(c, x));
            /* an object member keeps its key (the replacement has none;
             * cJSON frees it with the item, by free() without hooks) */
            if (raw && it->string && !(raw->string = strdup(it->string))) {
                cJSON_Delete(raw);
                return -1;
            }
            if (!raw || !cJSON_ReplaceItemViaPointer(parent, it, raw)) {
                cJSON_Delete(raw);
                return -1;
            }
        } else if ((cJSON_IsArray(it) || cJSON_IsObject(it)) && exact_numbers(it, c)) {
            return -1;
        }
        it = next;
    }
    return 0;
}

char *scm_output_print(const cJSON *json, int compact)
{
    cJSON *copy = cJSON_Duplicate(json, 1);
    exact_cache *c = calloc(1, sizeof *c);
    char *text = NULL;
    if (copy && c && exact_numbers(copy, c) == 0)
        text = compact ? cJSON_PrintUnformatted(copy) : cJSON_Print(copy);
    free(c);
    cJSON_Delete(copy);
    return text;
}

scm_status scm_output_write_json(const char *path, const cJSON *json, int compact,
                                 scm_error *err)
{
    char *text = scm_output_print(json, compact);
    if (!text)
        return scm_error_set(err, SCM_ENOMEM, "out of memory printing JSON for '%s'", path);
    size_t len = strlen(text);
    char *withnl = malloc(len + 2);
    if (!withnl) {
        cJSON_free(text);
        return scm_error_set(err, SCM_ENOMEM, "out of memory printing JSON for '%s'", path);
    }
    memcpy(withnl, text, len);
    withnl[len] = '\n';
    withnl[len + 1] = '\0';
    cJSON_free(text);
    scm_status st = scm_output_write_atomic(path, withnl, len + 1, err);
    free(withnl);
    return st;
}

cJSON *scm_output_vector(const double *x, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *v = cJSON_CreateNumber(x[i]);
        if (!v || !cJSON_AddItemToArray(a, v)) {
            cJSON_Delete(v);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

cJSON *scm_output_matrix(const double *A, int rows, int cols)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < rows; i++) {
        cJSON *row = scm_output_vector(A + (long)i * cols, cols);
        if (!row || !cJSON_AddItemToArray(a, row)) {
            cJSON_Delete(row);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

scm_status scm_output_read_matrix(const cJSON *json, const char *name, int rows, int cols,
                                  double *A, scm_error *err)
{
    if (!cJSON_IsArray(json) || cJSON_GetArraySize(json) != rows)
        return scm_error_set(err, SCM_EINVAL, "%s must be an array of %d rows", name, rows);
    for (int i = 0; i < rows; i++) {
        const cJSON *row = cJSON_GetArrayItem(json, i);
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != cols)
            return scm_error_set(err, SCM_EINVAL, "%s[%d] must be an array of %d numbers", name,
                                 i, cols);
        for (int j = 0; j < cols; j++) {
            const cJSON *x = cJSON_GetArrayItem(row, j);
            if (!cJSON_IsNumber(x))
                return scm_error_set(err, SCM_EINVAL, "%s[%d][%d] must be a number", name, i, j);
            if (A)
                A[(long)i * cols + j] = x->valuedouble;
        }
    }
    return SCM_OK;
}

char *scm_output_read_file(const char *path, size_t max_len, size_t *len, scm_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        scm_error_set(err, SCM_EIO, "cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        scm_error_set(err, SCM_ENOMEM, "out of memory reading '%s'", path);
    int read_errno = 0;
    while (buf) {
        errno = 0;
        n += fread(buf + n, 1, cap - n - 1, f);
        read_errno = errno;
        if (n < cap - 1 || ferror(f))
            break;
        char *nb = cap > max_len ? NULL : realloc(buf, cap * 2);
        if (!nb) {
            if (cap > max_len)
                scm_error_set(err, SCM_EINVAL, "'%s' is larger than %zu bytes", path, max_len);
            else
                scm_error_set(err, SCM_ENOMEM, "out of memory reading '%s'", path);
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        scm_error_set(err, SCM_EIO, "cannot read '%s': %s", path,
                      read_errno ? strerror(read_errno) : "read error");
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}
