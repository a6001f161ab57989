/* ansatz.c: parsing and validating ansatz files (the JSON and the
 * expression language of the group sizes) and where an ansatz applies;
 * see ansatz.h for the file format and MATH.md section 5 for the
 * mathematics.  Its instances at (K, M, k1) are ansatz_inst.c. */
#include "scm/ansatz.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "scm/output.h"

#define NAME_MAX_LEN SCM_ANSATZ_NAME_MAX
#define MAX_GROUPS SCM_ANSATZ_MAX_GROUPS

/* ---- the expression language: integers, K, M, k1, + - *, (), unary - ---- */

typedef struct {
    const char *s;
    double K, M, k1;
    int bad;
    int depth;
} expr_parser;

static void skip_ws(expr_parser *p)
{
    while (*p->s == ' ' || *p->s == '\t')
        p->s++;
}

static double parse_sum(expr_parser *p);

static double parse_atom(expr_parser *p)
{
    skip_ws(p);
    if (++p->depth > 100) { /* bounded recursion for hostile input */
        p->bad = 1;
        return 0.0;
    }
    double v = 0.0;
    if (*p->s == '(') {
        p->s++;
        v = parse_sum(p);
        skip_ws(p);
        if (*p->s != ')')
            p->bad = 1;
        else
            p->s++;
    } else if (*p->s == '-') {
        p->s++;
        v = -parse_atom(p);
    } else if (isdigit((unsigned char)*p->s)) {
        int n = 0;
        while (isdigit((unsigned char)*p->s)) {
            v = 10.0 * v + (*p->s - '0');
            p->s++;
            if (++n > 9)
                p->bad = 1;
        }
    } else if (strncmp(p->s, "k1", 2) == 0 && !isalnum((unsigned char)p->s[2])) {
        v = p->k1;
        p->s += 2;
    } else if ((*p->s == 'K' || *p->s == 'M') && !isalnum((unsigned char)p->s[1])) {
        v = *p->s == 'K' ? p->K : p->M;
        p->s++;
    } else {
        p->bad = 1;
    }
    p->depth--;
    return v;
}

static double parse_prod(expr_parser *p)
{
    double v = parse_atom(p);
    for (;;) {
        skip_ws(p);
        if (*p->s != '*' || p->bad)
            return v;
        p->s++;
        v *= parse_atom(p);
    }
}

static double parse_sum(expr_parser *p)
{
    double v = parse_prod(p);
    for (;;) {
        skip_ws(p);
        if ((*p->s != '+' && *p->s != '-') || p->bad)
            return v;
        char op = *p->s++;
        double w = parse_prod(p);
        v = op == '+' ? v + w : v - w;
    }
}

int scm_ansatz_expr_eval(const char *s, double K, double M, double k1, double *out, int *where)
{
    expr_parser p = {s, K, M, k1, 0, 0};
    double v = parse_sum(&p);
    skip_ws(&p);
    if (p.bad || *p.s != '\0') {
        if (where)
            *where = (int)(p.s - s);
        return -1;
    }
    *out = v;
    return 0;
}

/* ---- parsing the file ---- */

void scm_ansatz_free(scm_ansatz *a)
{
    if (!a)
        return;
    free(a->description);
    for (int i = 0; i < a->nreq; i++)
        free(a->req[i]);
    free(a->req);
    for (int i = 0; i < a->npos; i++)
        free(a->pos[i]);
    free(a->pos);
    free(a->k1min);
    free(a->k1max);
    for (int i = 0; i < a->ns; i++)
        free(a->sexpr[i]);
    for (int i = 0; i < a->nt; i++)
        free(a->texpr[i]);
    for (int i = 0; i < a->nguess; i++)
        free(a->gname[i]);
    free(a->gname);
    free(a->gval);
    free(a);
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > NAME_MAX_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return 0;
    return 1;
}

/* Check the syntax of an expression field and return a copy (NULL with err
 * set on failure). */
static char *take_expr(const cJSON *it, const char *src, const char *what, scm_error *err)
{
    if (!cJSON_IsString(it) && !cJSON_IsNumber(it)) {
        scm_error_set(err, SCM_EINVAL, "%s: %s must be a string expression in K, M, k1", src,
                      what);
        return NULL;
    }
    char buf[64];
    const char *s = it->valuestring;
    if (cJSON_IsNumber(it)) {
        if (it->valuedouble != floor(it->valuedouble) || fabs(it->valuedouble) > 1e9) {
            scm_error_set(err, SCM_EINVAL, "%s: %s must be an integer or an expression", src,
                          what);
            return NULL;
        }
        snprintf(buf, sizeof buf, "%.0f", it->valuedouble);
        s = buf;
    }
    double v;
    int where = 0;
    if (strlen(s) > 200 || scm_ansatz_expr_eval(s, 1.0, 1.0, 1.0, &v, &where)) {
        scm_error_set(err, SCM_EINVAL,
                      "%s: %s: cannot parse expression '%s' at position %d (allowed: integers, "
                      "K, M, k1, + - *, parentheses)",
                      src, what, s, where);
        return NULL;
    }
    char *d = dup_str(s);
    if (!d)
        scm_error_set(err, SCM_ENOMEM, "%s: out of memory", src);
    return d;
}

static int find_group(char names[][NAME_MAX_LEN + 1], int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

static scm_status parse_groups(const cJSON *obj, const char *src, const char *key,
                               char names[][NAME_MAX_LEN + 1], char **expr, int *n,
                               scm_error *err)
{
    if (!cJSON_IsObject(obj) || !obj->child)
        return scm_error_set(err, SCM_EINVAL,
                             "%s: \"%s\" must be a non-empty object {group name: size expression}",
                             src, key);
    for (const cJSON *g = obj->child; g; g = g->next) {
        if (*n >= MAX_GROUPS)
            return scm_error_set(err, SCM_EINVAL, "%s: more than %d %s groups", src, MAX_GROUPS,
                                 key);
        if (!valid_name(g->string))
            return scm_error_set(err, SCM_EINVAL,
                                 "%s: group name '%s' in \"%s\" must be 1-%d letters, digits or _",
                                 src, g->string, key, NAME_MAX_LEN);
        if (find_group(names, *n, g->string) >= 0)
            return scm_error_set(err, SCM_EINVAL, "%s: group '%s' appears twice in \"%s\"", src,
                                 g->string, key);
        char what[96];
        snprintf(what, sizeof what, "size of %s group '%s'", key, g->string);
        expr[*n] = take_expr(g, src, what, err);
        if (!expr[*n])
            return err ? err->code : SCM_EINVAL;
        snprintf(names[*n], NAME_MAX_LEN + 1, "%s", g->string);
        (*n)++;
    }
    return SCM_OK;
}

/* Every key of root known, none twice. */
static scm_status check_keys(const cJSON *root, const char *src, scm_error *err)
{
    static const char *const known[] = {"name",     "description", "require", "require_positive",
                                        "k1",       "students",    "teachers", "pairs",
                                        "guess"};
    if (!cJSON_IsObject(root))
        return scm_error_set(err, SCM_EINVAL, "%s: an ansatz must be a JSON object", src);
    for (const cJSON *it = root->child; it; it = it->next) {
        int ok = 0;
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            ok |= strcmp(it->string, known[i]) == 0;
        if (!ok)
            return scm_error_set(err, SCM_EINVAL,
                                 "%s: unknown key \"%s\" (known: name, description, require, "
                                 "require_positive, k1, students, teachers, pairs, guess)",
                                 src, it->string);
        for (const cJSON *jt = it->next; jt; jt = jt->next)
            if (strcmp(it->string, jt->string) == 0)
                return scm_error_set(err, SCM_EINVAL, "%s: key \"%s\" appears twice", src,
                                     it->string);
    }
    return SCM_OK;
}

/* "name" and "description". */
static scm_status parse_header(scm_ansatz *a, const cJSON *root, const char *src, scm_error *err)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (!cJSON_IsString(name) || !valid_name(name->valuestring))
        return scm_error_set(err, SCM_EINVAL,
                             "%s: \"name\" must be a string of 1-%d letters, digits or _", src,
                             NAME_MAX_LEN);
    snprintf(a->name, sizeof a->name, "%s", name->valuestring);
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(root, "description");
    if (desc && !cJSON_IsString(desc))
        return scm_error_set(err, SCM_EINVAL, "%s: \"description\" must be a string", src);
    a->description = dup_str(desc ? desc->valuestring : "");
    if (!a->description)
        return scm_error_set(err, SCM_ENOMEM, "%s: out of memory", src);
    return SCM_OK;
}

/* An array of expressions (key "require" or "require_positive") into
 * *out, *n. */
static scm_status parse_expr_list(const cJSON *root, const char *key, const char *what,
                                  char ***out, int *n, const char *src, scm_error *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!arr)
        return SCM_OK;
    if (!cJSON_IsArray(arr))
        return scm_error_set(err, SCM_EINVAL, "%s: \"%s\" must be an array of expressions %s",
                             src, key, what);
    *out = calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof **out);
    if (!*out)
        return scm_error_set(err, SCM_ENOMEM, "%s: out of memory", src);
    char label[64];
    snprintf(label, sizeof label, "\"%s\" entry", key);
    for (const cJSON *it = arr->child; it; it = it->next) {
        (*out)[*n] = take_expr(it, src, label, err);
        if (!(*out)[*n])
            return err ? err->code : SCM_EINVAL;
        (*n)++;
    }
    return SCM_OK;
}

/* "require" (expressions that vanish where the ansatz applies),
 * "require_positive" (expressions that are at least 1 there) and "k1"
 * (its range). */
static scm_status parse_constraints(scm_ansatz *a, const cJSON *root, const char *src,
                                    scm_error *err)
{
    scm_status st;
    if ((st = parse_expr_list(root, "require", "that vanish", &a->req, &a->nreq, src, err)) ||
        (st = parse_expr_list(root, "require_positive", "that are at least 1", &a->pos,
                              &a->npos, src, err)))
        return st;
    const cJSON *k1 = cJSON_GetObjectItemCaseSensitive(root, "k1");
    if (k1) {
        if (!cJSON_IsArray(k1) || cJSON_GetArraySize(k1) != 2)
            return scm_error_set(err, SCM_EINVAL,
                                 "%s: \"k1\" must be [min, max] (expressions in K, M)", src);
        if (!(a->k1min = take_expr(cJSON_GetArrayItem(k1, 0), src, "k1 min", err)) ||
            !(a->k1max = take_expr(cJSON_GetArrayItem(k1, 1), src, "k1 max", err)))
            return err ? err->code : SCM_EINVAL;
    }
    return SCM_OK;
}

/* "pairs": each student group paired with at most one teacher group, and
 * each teacher group with at most one student group. */
static scm_status parse_pairs(scm_ansatz *a, const cJSON *root, const char *src, scm_error *err)
{
    for (int i = 0; i < MAX_GROUPS; i++)
        a->spair[i] = a->tpair[i] = -1;
    const cJSON *pairs = cJSON_GetObjectItemCaseSensitive(root, "pairs");
    if (!cJSON_IsObject(pairs))
        return scm_error_set(err, SCM_EINVAL,
                             "%s: \"pairs\" must be an object {student group: teacher group} "
                             "(it may be empty)",
                             src);
    for (const cJSON *it = pairs->child; it; it = it->next) {
        int s = find_group(a->sname, a->ns, it->string);
        if (s < 0)
            return scm_error_set(err, SCM_EINVAL, "%s: pairs: '%s' is not a student group", src,
                                 it->string);
        if (!cJSON_IsString(it))
            return scm_error_set(err, SCM_EINVAL,
                                 "%s: pairs: the partner of '%s' must be a teacher group name",
                                 src, it->string);
        int t = find_group(a->tname, a->nt, it->valuestring);
        if (t < 0)
            return scm_error_set(err, SCM_EINVAL, "%s: pairs: '%s' is not a teacher group", src,
                                 it->valuestring);
        if (a->spair[s] >= 0)
            return scm_error_set(err, SCM_EINVAL, "%s: pairs: student group '%s' paired twice",
                                 src, it->string);
        if (a->tpair[t] >= 0)
            return scm_error_set(err, SCM_EINVAL,
                                 "%s: pairs: teacher group '%s' paired with both '%s' and '%s'",
                                 src, it->valuestring, a->sname[a->tpair[t]], it->string);
        a->spair[s] = t;
        a->tpair[t] = s;
    }
    return SCM_OK;
}

/* "guess": a start for Newton, scalar by name. */
static scm_status parse_guess(scm_ansatz *a, const cJSON *root, const char *src, scm_error *err)
{
    const cJSON *guess = cJSON_GetObjectItemCaseSensitive(root, "guess");
    if (guess) {
        if (!cJSON_IsObject(guess))
            return scm_error_set(err, SCM_EINVAL,
                                 "%s: \"guess\" must be an object {scalar name: number}", src);
        int n = cJSON_GetArraySize(guess);
        a->gname = calloc((size_t)n + 1, sizeof *a->gname);
        a->gval = calloc((size_t)n + 1, sizeof *a->gval);
        if (!a->gname || !a->gval)
            return scm_error_set(err, SCM_ENOMEM, "%s: out of memory", src);
        for (const cJSON *it = guess->child; it; it = it->next) {
            if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
                return scm_error_set(err, SCM_EINVAL, "%s: guess '%s' must be a finite number",
                                     src, it->string);
            a->gname[a->nguess] = dup_str(it->string);
            if (!a->gname[a->nguess])
                return scm_error_set(err, SCM_ENOMEM, "%s: out of memory", src);
            a->gval[a->nguess++] = it->valuedouble;
        }
    }
    return SCM_OK;
}

static scm_status parse_json(scm_ansatz *a, const cJSON *root, const char *src, scm_error *err)
{
    scm_status st;
    if ((st = check_keys(root, src, err)) || (st = parse_header(a, root, src, err)) ||
        (st = parse_constraints(a, root, src, err)))
        return st;
    if ((st = parse_groups(cJSON_GetObjectItemCaseSensitive(root, "students"), src, "students",
                           a->sname, a->sexpr, &a->ns, err)))
        return st;
    if ((st = parse_groups(cJSON_GetObjectItemCaseSensitive(root, "teachers"), src, "teachers",
                           a->tname, a->texpr, &a->nt, err)))
        return st;
    for (int i = 0; i < a->ns; i++)
        if (find_group(a->tname, a->nt, a->sname[i]) >= 0)
            return scm_error_set(err, SCM_EINVAL,
                                 "%s: '%s' names both a student and a teacher group", src,
                                 a->sname[i]);
    if ((st = parse_pairs(a, root, src, err)))
        return st;
    return parse_guess(a, root, src, err);
}

scm_ansatz *scm_ansatz_parse(const char *text, size_t len, const char *source, scm_error *err)
{
    const char *src = source ? source : "ansatz";
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) {
        const char *e = cJSON_GetErrorPtr();
        long off = (e && e >= text && e <= text + len) ? (long)(e - text) : -1;
        scm_error_set(err, SCM_EINVAL, "%s: not valid JSON (near byte %ld)", src, off);
        return NULL;
    }
    scm_ansatz *a = calloc(1, sizeof *a);
    if (!a) {
        cJSON_Delete(root);
        scm_error_set(err, SCM_ENOMEM, "%s: out of memory", src);
        return NULL;
    }
    scm_status st = parse_json(a, root, src, err);
    cJSON_Delete(root);
    if (st) {
        scm_ansatz_free(a);
        return NULL;
    }
    /* Validate the guesses' names against a generic instance: a guess for
     * a scalar that can never exist is a typo. */
    for (int g = 0; g < a->nguess; g++) {
        int found = 0;
        char buf[80];
        for (int i = 0; i < a->ns && !found; i++) {
            for (int j = 0; j < a->ns && !found; j++) {
                if (i == j) {
                    snprintf(buf, sizeof buf, "Q[%s,%s].diag", a->sname[i], a->sname[i]);
                    found |= strcmp(buf, a->gname[g]) == 0;
                    snprintf(buf, sizeof buf, "Q[%s,%s].off", a->sname[i], a->sname[i]);
                    found |= strcmp(buf, a->gname[g]) == 0;
                } else if (i < j) {
                    snprintf(buf, sizeof buf, "Q[%s,%s]", a->sname[i], a->sname[j]);
                    found |= strcmp(buf, a->gname[g]) == 0;
                }
            }
            for (int t = 0; t < a->nt && !found; t++) {
                if (a->spair[i] == t) {
                    snprintf(buf, sizeof buf, "R[%s,%s].diag", a->sname[i], a->tname[t]);
                    found |= strcmp(buf, a->gname[g]) == 0;
                    snprintf(buf, sizeof buf, "R[%s,%s].off", a->sname[i], a->tname[t]);
                    found |= strcmp(buf, a->gname[g]) == 0;
                } else {
                    snprintf(buf, sizeof buf, "R[%s,%s]", a->sname[i], a->tname[t]);
                    found |= strcmp(buf, a->gname[g]) == 0;
                }
            }
        }
        if (!found) {
            scm_error_set(err, SCM_EINVAL, "%s: guess '%s' is not a scalar of this ansatz", src,
                          a->gname[g]);
            scm_ansatz_free(a);
            return NULL;
        }
    }
    return a;
}

scm_ansatz *scm_ansatz_load(const char *path, scm_error *err)
{
    size_t len = 0;
    char *buf = scm_output_read_file(path, (size_t)1 << 24, &len, err); /* 16 MB at most */
    if (!buf)
        return NULL;
    scm_ansatz *a = scm_ansatz_parse(buf, len, path, err);
    free(buf);
    return a;
}

const char *scm_ansatz_name(const scm_ansatz *a) { return a->name; }
const char *scm_ansatz_description(const scm_ansatz *a) { return a->description; }

int scm_ansatz_applies(const scm_ansatz *a, int K, int M, int *k1_min, int *k1_max)
{
    for (int i = 0; i < a->nreq; i++) {
        double v;
        if (scm_ansatz_expr_eval(a->req[i], K, M, 0.0, &v, NULL))
            return -1;
        if (v != 0.0)
            return 0;
    }
    for (int i = 0; i < a->npos; i++) {
        double v;
        if (scm_ansatz_expr_eval(a->pos[i], K, M, 0.0, &v, NULL))
            return -1;
        if (v < 1.0)
            return 0;
    }
    double lo = 0.0, hi = 0.0;
    if (a->k1min && (scm_ansatz_expr_eval(a->k1min, K, M, 0.0, &lo, NULL) ||
                     scm_ansatz_expr_eval(a->k1max, K, M, 0.0, &hi, NULL)))
        return -1;
    if (hi < lo)
        return 0;
    if (k1_min)
        *k1_min = (int)lo;
    if (k1_max)
        *k1_max = (int)hi;
    return 1;
}
