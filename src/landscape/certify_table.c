/* certify_table.c: certify the rows of a plateau table (the CSV of
 * bench/gen_plateau_table, e.g. data/plateau_table_M100.csv) from their
 * stored scalars, without enumerating again (scm certify --table,
 * docs/certify.md section 6).  The file is read and every selected row
 * checked first (a bad row stops the run before any proof, naming the
 * file, line and column); then each row is polished by Newton in double
 * and certified by certify.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/blockflow.h"
#include "scm/certify.h"
#include "scm/family.h"
#include "scm/fixedpoint.h"

#include "landscape/certify_internal.h"

#define MAX_FIELDS 64
#define MAX_SCALARS 512

enum { C_K, C_M, C_NANTI, C_CLASS, C_ANSATZ, C_INST, C_SCALARS, C_BLOCKEIG, NCOL };
static const char *const col_name[NCOL] = {"K",       "M",         "family_n_anti",
                                           "classification", "ansatz", "instance",
                                           "scalars", "block_max_eig"};

/* One selected row, checked: its instance is made again when certified. */
typedef struct {
    int line, K, M, nanti, inst;
    const scm_ansatz *a;
    char cls[40];
    double *x; /* nsc scalars, in the instance's order */
} trow;

typedef struct {
    const char *path;
    int line;
    scm_error *err;
} where;

static scm_status bad(const where *w, const char *col, const char *fmt, const char *val)
{
    char what[200];
    snprintf(what, sizeof what, fmt, val);
    return scm_error_set(w->err, SCM_EINVAL, "certify: %s:%d: column %s: %s", w->path, w->line,
                         col, what);
}

void scm_certify_table_sel_default(scm_certify_table_sel *s)
{
    s->K = s->M = s->dK = s->k1 = -1;
    s->M_min = 1;
    s->M_max = 1000000;
    s->rows = SCM_CERTIFY_ROWS_MINIMA;
}

/* Split the line at p (NUL-terminated, modified) into fields; a field in
 * double quotes may hold commas.  Returns the number of fields, or -1 for
 * an unterminated quote or too many fields. */
static int split_csv(char *p, char **f)
{
    int n = 0;
    for (;;) {
        if (n == MAX_FIELDS)
            return -1;
        if (*p == '"') {
            char *q = strchr(++p, '"');
            if (!q || (q[1] != ',' && q[1] != '\0'))
                return -1;
            f[n++] = p;
            *q = '\0';
            p = q + 1;
        } else {
            f[n++] = p;
            p += strcspn(p, ",");
        }
        if (*p != ',')
            return n;
        *p++ = '\0';
    }
}

static int parse_int(const char *s, int *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end || errno || x < -1000000 || x > 1000000)
        return -1;
    *v = (int)x;
    return 0;
}

static int parse_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end == s || *end || errno == ERANGE ? -1 : 0;
}

/* The scalars "name=value;..." of instance in into x (every scalar once). */
static scm_status parse_scalars(const where *w, char *s, const scm_ansatz_inst *in, double *x)
{
    int n = scm_ansatz_inst_nscalars(in), seen[MAX_SCALARS] = {0}, got = 0;
    for (char *tok = s, *next; tok && *tok; tok = next) {
        next = strchr(tok, ';'); /* not strtok: no hidden state */
        if (next)
            *next++ = '\0';
        char *eq = strchr(tok, '=');
        if (!eq)
            return bad(w, "scalars", "'%s' is not name=value", tok);
        *eq = '\0';
        int i = 0;
        while (i < n && strcmp(scm_ansatz_inst_scalar_name(in, i), tok) != 0)
            i++;
        if (i == n || seen[i])
            return bad(w, "scalars", i == n ? "no scalar '%s' in the row's ansatz instance"
                                            : "scalar '%s' given twice", tok);
        if (parse_double(eq + 1, &x[i]) || !isfinite(x[i]))
            return bad(w, "scalars", "bad number '%s'", eq + 1);
        seen[i] = 1;
        got++;
    }
    if (got != n)
        return bad(w, "scalars", "%s: too few scalars for the row's ansatz instance",
                   got ? "some missing" : "empty");
    return SCM_OK;
}

/* Does the row pass the selection?  (K, M, n_anti, class, block eig.) */
static int selected(const scm_certify_table_sel *s, const trow *r, double beig)
{
    if ((s->K >= 0 && r->K != s->K) || (s->M >= 0 && r->M != s->M) ||
        (s->dK >= 0 && r->K - r->M != s->dK) || (s->k1 >= 0 && r->nanti != s->k1) ||
        r->M < s->M_min || r->M > s->M_max)
        return 0;
    if (s->rows == SCM_CERTIFY_ROWS_MINIMA)
        return strcmp(r->cls, "min_candidate") == 0 || strcmp(r->cls, "global_min") == 0 ||
               strcmp(r->cls, "degenerate") == 0;
    if (s->rows == SCM_CERTIFY_ROWS_BLOCK_STABLE)
        return beig <= SCM_FAM_EIG_TOL;
    return 1;
}

/* Check one data line's fields f (n of them, columns at col) and, when
 * selected, add it to rows with its scalars. */
static scm_status take_row(const where *w, char **f, int n, const int *col,
                           const scm_cert_builtins *b, const scm_certify_table_sel *sel,
                           trow *r, int *keep)
{
    *keep = 0;
    for (int c = 0; c < NCOL; c++)
        if (col[c] >= n)
            return scm_error_set(w->err, SCM_EINVAL, "certify: %s:%d: %d fields, no column %s",
                                 w->path, w->line, n, col_name[c]);
    const int ic[] = {C_K, C_M, C_NANTI, C_INST};
    int *iv[] = {&r->K, &r->M, &r->nanti, &r->inst};
    for (int k = 0; k < 4; k++)
        if (parse_int(f[col[ic[k]]], iv[k]) || *iv[k] < 0)
            return bad(w, col_name[ic[k]], "bad integer '%s'", f[col[ic[k]]]);
    if (r->K < 1 || r->M < 1)
        return bad(w, r->K < 1 ? "K" : "M", "'%s' is not positive", f[col[r->K < 1 ? C_K : C_M]]);
    snprintf(r->cls, sizeof r->cls, "%s", f[col[C_CLASS]]);
    double beig = NAN;
    if (col[C_BLOCKEIG] >= 0 && strcmp(f[col[C_BLOCKEIG]], "nan") != 0 &&
        parse_double(f[col[C_BLOCKEIG]], &beig))
        return bad(w, "block_max_eig", "bad number '%s'", f[col[C_BLOCKEIG]]);
    if (!selected(sel, r, beig))
        return SCM_OK;
    r->a = scm_cert_builtin_named(b, f[col[C_ANSATZ]]);
    if (!r->a)
        return bad(w, "ansatz", "no built-in ansatz named '%s'", f[col[C_ANSATZ]]);
    scm_error ie;
    scm_ansatz_inst *in = scm_ansatz_instantiate(r->a, r->K, r->M, r->inst, &ie);
    if (!in)
        return scm_error_set(w->err, SCM_EINVAL, "certify: %s:%d: column instance: %s", w->path,
                             w->line, ie.msg);
    int nsc = scm_ansatz_inst_nscalars(in);
    r->x = nsc <= MAX_SCALARS ? malloc(sizeof(double) * (size_t)nsc) : NULL;
    scm_status st = r->x ? parse_scalars(w, f[col[C_SCALARS]], in, r->x)
                         : scm_error_set(w->err, SCM_ENOMEM, "certify: out of memory");
    scm_ansatz_inst_free(in);
    if (st) {
        free(r->x);
        r->x = NULL;
        return st;
    }
    r->line = w->line;
    *keep = 1;
    return SCM_OK;
}

/* The header's column indices (block_max_eig -1 if absent and not needed). */
static scm_status header(const where *w, char **f, int n, const scm_certify_table_sel *sel,
                         int *col)
{
    for (int c = 0; c < NCOL; c++) {
        col[c] = -1;
        for (int i = 0; i < n; i++) /* tables written before the rename say ansatz_k1 */
            if (strcmp(f[i], col_name[c]) == 0 || (c == C_INST && strcmp(f[i], "ansatz_k1") == 0))
                col[c] = i;
        if (col[c] < 0 && (c != C_BLOCKEIG || sel->rows == SCM_CERTIFY_ROWS_BLOCK_STABLE))
            return scm_error_set(w->err, SCM_EINVAL, "certify: %s:1: no column %s in the header",
                                 w->path, col_name[c]);
    }
    return SCM_OK;
}

/* Read and check the whole table; the selected rows into *rows (*n). */
static scm_status read_rows(const char *path, char *text, const scm_cert_builtins *b,
                            const scm_certify_table_sel *sel, trow **rows, int *n, scm_error *err)
{
    where w = {path, 0, err};
    int col[NCOL], cap = 0;
    char *f[MAX_FIELDS];
    scm_status st = SCM_OK;
    *rows = NULL;
    *n = 0;
    for (char *p = text, *next; !st && p && *p; p = next) {
        next = strchr(p, '\n');
        if (next)
            *next++ = '\0';
        size_t len = strlen(p);
        if (len && p[len - 1] == '\r')
            p[len - 1] = '\0';
        w.line++;
        if (!*p && w.line > 1)
            continue;
        int nf = split_csv(p, f);
        if (nf < 0) {
            st = scm_error_set(err, SCM_EINVAL,
                               "certify: %s:%d: not a CSV line (a quote not closed, or over %d "
                               "fields)", path, w.line, MAX_FIELDS);
            break;
        }
        if (w.line == 1) {
            st = header(&w, f, nf, sel, col);
            continue;
        }
        trow r;
        memset(&r, 0, sizeof r);
        int keep;
        st = take_row(&w, f, nf, col, b, sel, &r, &keep);
        if (!st && keep && *n == cap) {
            cap = cap ? 2 * cap : 256;
            trow *nr = realloc(*rows, sizeof *nr * (size_t)cap);
            if (!nr) {
                free(r.x);
                st = scm_error_set(err, SCM_ENOMEM, "certify: out of memory");
                break;
            }
            *rows = nr;
        }
        if (!st && keep)
            (*rows)[(*n)++] = r;
    }
    if (!st && w.line == 0)
        st = scm_error_set(err, SCM_EINVAL, "certify: %s:1: empty file, no header", path);
    return st;
}

/* Polish r's scalars by Newton in double and certify them into e. */
static scm_status certify_row(const trow *r, const scm_certify_opts *o, scm_certify_entry *e,
                              scm_error *err)
{
    scm_ansatz_inst *in = scm_ansatz_instantiate(r->a, r->K, r->M, r->inst, err);
    if (!in)
        return err ? err->code : SCM_EINVAL;
    int nsc = scm_ansatz_inst_nscalars(in);
    double y[MAX_SCALARS], res = NAN;
    memcpy(y, r->x, sizeof(double) * (size_t)nsc);
    scm_blockflow *bf = scm_blockflow_alloc(in, &scm_act_relu);
    scm_fp_opts fo;
    scm_fp_opts_default(&fo);
    e->polish_shift = NAN;
    if (bf && scm_fp_solve(bf, y, &fo, &res) == SCM_OK) {
        e->polish_shift = 0.0;
        for (int i = 0; i < nsc; i++)
            e->polish_shift = fmax(e->polish_shift, fabs(y[i] - r->x[i]));
    }
    /* the certificate is about the listed point: a polish that moves it
     * farther than the largest box is not taken (Krawczyk then refuses) */
    e->polished = e->polish_shift <= o->max_radius;
    const double *x = e->polished ? y : r->x;
    e->K = r->K;
    e->M = r->M;
    e->k1 = r->nanti;
    e->index = e->table_line = r->line;
    e->instance = r->inst;
    snprintf(e->ansatz, sizeof e->ansatz, "%s", scm_ansatz_name(r->a));
    snprintf(e->stability, sizeof e->stability, "%s", r->cls);
    e->eps = NAN;
    if (bf)
        scm_blockflow_residual(bf, x, NULL, &e->eps);
    scm_status st = bf ? scm_certify_point(in, &scm_act_relu, x, o, &e->r, err)
                       : scm_error_set(err, SCM_ENOMEM, "certify: out of memory");
    scm_blockflow_free(bf);
    scm_ansatz_inst_free(in);
    return st;
}

scm_status scm_certify_table(const char *path, const scm_certify_table_sel *sel,
                             const scm_certify_opts *o,
                             void (*progress)(void *ctx, int done, int total), void *ctx,
                             scm_certify_list *out, scm_error *err)
{
    if (sel->M_min > sel->M_max)
        return scm_error_set(err, SCM_EINVAL, "certify: M range %d .. %d is empty", sel->M_min,
                             sel->M_max);
    char *text = scm_cert_read_file(path, err);
    if (!text)
        return err ? err->code : SCM_EIO;
    scm_cert_builtins b;
    scm_status st = scm_cert_builtins_load(&b, err);
    trow *rows = NULL;
    int n = 0;
    if (!st)
        st = read_rows(path, text, &b, sel, &rows, &n, err);
    free(text);
    for (int i = 0; !st && i < n; i++) {
        scm_certify_entry *e = scm_cert_list_add(out);
        st = e ? certify_row(&rows[i], o, e, err)
               : scm_error_set(err, SCM_ENOMEM, "certify: out of memory");
        if (progress)
            progress(ctx, i + 1, n);
    }
    for (int i = 0; i < n; i++)
        free(rows[i].x);
    free(rows);
    scm_cert_builtins_free(&b);
    return st;
}
