/* output.c: atomic file writes and JSON matrix helpers; see output.h. */
#include "scm/output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

scm_status scm_output_write_atomic(const char *path, const char *data, size_t len,
                                   scm_error *err)
{
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp)
        return scm_error_set(err, SCM_ENOMEM, "out of memory writing '%s'", path);
    snprintf(tmp, n, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        scm_status st = scm_error_set(err, SCM_EIO, "cannot create a temporary file for '%s': %s",
                                      path, strerror(errno));
        free(tmp);
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
    if (ok && rename(tmp, path) != 0) {
        saved = errno;
        ok = 0;
    }
    if (!ok) {
        remove(tmp);
        free(tmp);
        return scm_error_set(err, SCM_EIO, "cannot write '%s': %s", path, strerror(saved));
    }
    free(tmp);
    return SCM_OK;
}

scm_status scm_output_write_json(const char *path, const cJSON *json, int compact,
                                 scm_error *err)
{
    char *text = compact ? cJSON_PrintUnformatted(json) : cJSON_Print(json);
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
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
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
        scm_error_set(err, SCM_EIO, "cannot read '%s'", path);
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
