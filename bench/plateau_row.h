/* plateau_row.h: one row of data/plateau_table.csv, and the fixed point it
 * describes rebuilt from its ansatz name, k1 and scalars (the built-in
 * ansätze, scm_ansatz_instantiate, scalars -> full Q, R).  Shared by
 * bench/plateau_stability.c, tests/test_plateau_stability.c (so that the
 * regeneration test rebuilds exactly the point the generator analysed) and
 * tests/test_plateau_table.c.
 * Header-only (static inline); nothing here prints. */
#ifndef SCM_PLATEAU_ROW_H
#define SCM_PLATEAU_ROW_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/ansatz.h"

#define PT_FIELD 64
#define PT_SCALARS 4096

/* The columns of data/plateau_table.csv, as text (the keys are copied to
 * the stability file verbatim) and parsed. */
typedef struct {
    char K_s[PT_FIELD], M_s[PT_FIELD], dK_s[PT_FIELD], n_anti_s[PT_FIELD], loss_s[PT_FIELD];
    int K, M, dK, instance;
    double n_anti, loss, residual, block_eig, full_eig;
    char cls[PT_FIELD], ansatz[PT_FIELD], scalars[PT_SCALARS];
} pt_row;

/* Parse one CSV line (15 plain fields, then the quoted scalars).  The line
 * is modified.  Returns 1 on success, 0 on a malformed line. */
static inline int pt_row_parse(char *line, pt_row *r)
{
    char *f[16];
    int n = 0;
    char *p = line;
    while (n < 15) {
        f[n++] = p;
        p = strchr(p, ',');
        if (!p)
            return 0;
        *p++ = '\0';
    }
    if (*p != '"')
        return 0;
    f[15] = p + 1;
    char *q = strchr(f[15], '"');
    if (!q || strlen(f[15]) >= PT_SCALARS)
        return 0;
    *q = '\0';
    for (int i = 0; i < 15; i++)
        if (strlen(f[i]) >= PT_FIELD)
            return 0;
    strcpy(r->K_s, f[0]);
    strcpy(r->M_s, f[1]);
    strcpy(r->dK_s, f[2]);
    strcpy(r->n_anti_s, f[3]);
    strcpy(r->loss_s, f[6]);
    r->K = atoi(f[0]);
    r->M = atoi(f[1]);
    r->dK = atoi(f[2]);
    r->n_anti = atof(f[3]);
    r->loss = atof(f[6]);
    r->residual = atof(f[7]);
    r->block_eig = atof(f[9]);
    r->full_eig = atof(f[10]);
    strcpy(r->cls, f[11]);
    strcpy(r->ansatz, f[12]);
    r->instance = atoi(f[13]);
    strcpy(r->scalars, f[15]);
    return r->K >= 1 && r->M >= 1;
}

/* The built-in ansatz called name, or NULL.  The caller frees it. */
static inline scm_ansatz *pt_load_builtin(const char *name)
{
    for (int i = 0; i < scm_ansatz_builtin_count(); i++) {
        const char *t = scm_ansatz_builtin_text(i, NULL);
        scm_error e;
        scm_ansatz *a = scm_ansatz_parse(t, strlen(t), "builtin", &e);
        if (a && strcmp(scm_ansatz_name(a), name) == 0)
            return a;
        scm_ansatz_free(a);
    }
    return NULL;
}

/* The full state of row r: Q (K x K) and R (K x M), allocated by the
 * caller, from the stored scalars exactly (no Newton step: the scalars have
 * 15 significant digits, so the residual is that of the table to
 * round-off).  Returns 0 on success, else a message in why. */
static inline int pt_row_point(const pt_row *r, double *Q, double *R, char *why, size_t whylen)
{
    scm_ansatz *a = pt_load_builtin(r->ansatz);
    if (!a) {
        snprintf(why, whylen, "no built-in ansatz '%s'", r->ansatz);
        return -1;
    }
    scm_error e;
    scm_ansatz_inst *in = scm_ansatz_instantiate(a, r->K, r->M, r->instance, &e);
    if (!in) {
        snprintf(why, whylen, "instantiate %s at K = %d, M = %d, k1 = %d: %.300s", r->ansatz, r->K,
                 r->M, r->instance, e.msg);
        scm_ansatz_free(a);
        return -1;
    }
    int n = scm_ansatz_inst_nscalars(in), got = 0, rc = 0;
    double *x = calloc((size_t)n + 1, sizeof *x);
    char *buf = malloc(PT_SCALARS);
    if (!x || !buf) {
        snprintf(why, whylen, "out of memory");
        rc = -1;
        goto out;
    }
    memcpy(buf, r->scalars, PT_SCALARS);
    for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = '\0';
        int c = scm_ansatz_inst_find(in, tok);
        if (c >= 0) {
            x[c] = strtod(eq + 1, NULL);
            got++;
        }
    }
    if (got != n) {
        snprintf(why, whylen, "%d of %d scalars of %s in the row", got, n, r->ansatz);
        rc = -1;
        goto out;
    }
    if (scm_ansatz_to_full(in, x, Q, R)) {
        snprintf(why, whylen, "scalars -> full state failed");
        rc = -1;
    }
out:
    free(buf);
    free(x);
    scm_ansatz_inst_free(in);
    scm_ansatz_free(a);
    return rc;
}

#endif
