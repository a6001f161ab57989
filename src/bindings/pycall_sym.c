/* pycall_sym.c: the exact Hessian or flow-Jacobian spectrum at a
 * block-symmetric fixed point (symstab.h) as a JSON-in/JSON-out call
 * (pycall.h, abi.h).  The point comes as its full (Q, R) and the name of
 * its ansatz (a built-in one, or an ansatz file): it is projected onto each
 * instance of the ansatz in turn (the given "instance" first) and analysed
 * in the first that holds it to sym_tol, so the caller needs no instance
 * label. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bindings/pycall.h"
#include "scm/ansatz.h"
#include "scm/output.h"
#include "scm/symstab.h"

static const char *const sym_keys[] = {"ansatz", "ansatz_file", "K", "M", "instance", "Q", "R",
                                       "activation", "d", "jacobian", NULL};

/* The ansatz named (built-in) or read from its file. */
static scm_ansatz *sym_ansatz(const py_args *a, const char *name, const char *file)
{
    if (file)
        return scm_ansatz_load(file, a->err);
    for (int i = 0; name && i < scm_ansatz_builtin_count(); i++) {
        const char *fn = NULL, *text = scm_ansatz_builtin_text(i, &fn);
        scm_ansatz *an = scm_ansatz_parse(text, strlen(text), fn, a->err);
        if (an && strcmp(scm_ansatz_name(an), name) == 0)
            return an;
        scm_ansatz_free(an);
    }
    scm_error_set(a->err, SCM_EINVAL, "%s: no built-in ansatz named '%s' (or give ansatz_file)",
                  a->cmd, name ? name : "(none)");
    return NULL;
}

/* The spectrum as JSON. */
static cJSON *sym_json(const scm_symstab_result *r, const scm_ansatz *an, int inst, int jac)
{
    cJSON *o = cJSON_CreateObject(), *e = cJSON_CreateArray();
    if (!o || !e) {
        cJSON_Delete(o);
        cJSON_Delete(e);
        return NULL;
    }
    cJSON_AddStringToObject(o, "ansatz", scm_ansatz_name(an));
    cJSON_AddNumberToObject(o, "instance", inst);
    cJSON_AddStringToObject(o, "operator", jac ? "flow jacobian" : "hessian");
    cJSON_AddNumberToObject(o, "d", (double)r->d);
    cJSON_AddNumberToObject(o, "total", (double)r->total);
    cJSON_AddNumberToObject(o, "n_neg", (double)r->n_neg);
    cJSON_AddNumberToObject(o, "n_zero", (double)r->n_zero);
    cJSON_AddNumberToObject(o, "n_pos", (double)r->n_pos);
    cJSON_AddNumberToObject(o, "zero_tol", r->zero_tol);
    for (int i = 0; i < r->n; i++) {
        const scm_symstab_eig *g = &r->eig[i];
        cJSON *x = cJSON_CreateObject();
        if (!x)
            break;
        cJSON_AddNumberToObject(x, "value", g->value);
        cJSON_AddNumberToObject(x, "imag", g->imag);
        cJSON_AddNumberToObject(x, "mult", (double)g->mult);
        cJSON_AddStringToObject(x, "part", g->part == SCM_SYMSTAB_SPAN   ? "span"
                                           : g->part == SCM_SYMSTAB_PERP ? "perp"
                                                                         : "flow");
        cJSON_AddBoolToObject(x, "zero", g->zero);
        cJSON_AddStringToObject(x, "unit", g->unit >= 0 && g->unit < r->n_units
                                               ? r->unit_name[g->unit] : "");
        cJSON_AddStringToObject(x, "cause", g->cause);
        cJSON_AddItemToArray(e, x);
    }
    cJSON_AddItemToObject(o, "eigenvalues", e);
    return o;
}

/* Try instance inst: 1 and *out when the point is on it, 0 when it is not,
 * -1 on an error (in a->err). */
static int sym_try(const py_args *a, const scm_ansatz *an, int K, int M, int inst,
                   const scm_activation *act, const double *Q, const double *R,
                   const scm_symstab_opts *o, int jac, cJSON **out)
{
    scm_ansatz_inst *in = scm_ansatz_instantiate(an, K, M, inst, a->err);
    if (!in)
        return 0;
    int n = scm_ansatz_inst_nscalars(in), rc = 0;
    double *x = malloc(sizeof *x * (size_t)(n > 0 ? n : 1)), dev = INFINITY, scale = 1.0;
    for (int i = 0; i < K * K; i++)
        scale = fmax(scale, fabs(Q[i]));
    for (int i = 0; i < K * M; i++)
        scale = fmax(scale, fabs(R[i]));
    if (x && !scm_ansatz_project(in, Q, R, x, &dev) && dev <= o->sym_tol * scale) {
        scm_symstab_result r;
        memset(&r, 0, sizeof r);
        scm_status st = jac ? scm_stab_symmetric_jacobian(in, act, x, o, &r, a->err)
                            : scm_stab_symmetric(in, act, x, o, &r, a->err);
        rc = st ? -1 : (*out = sym_json(&r, an, inst, jac)) ? 1 : -1;
        if (!st && rc < 0)
            scm_error_set(a->err, SCM_ENOMEM, "out of memory");
        scm_symstab_result_free(&r);
    } else if (!x) {
        rc = -1;
        scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    }
    free(x);
    scm_ansatz_inst_free(in);
    return rc;
}

scm_status py_call_symstab(const py_args *a, char **out)
{
    const char *name = NULL, *file = NULL, *actname = "relu";
    long K = -1, M = -1, inst = -1, d = 0;
    int jac = 0;
    scm_symstab_opts o;
    scm_symstab_opts_default(&o);
    scm_status st;
    if ((st = py_args_check_keys(a, sym_keys)) || (st = py_args_str(a, "ansatz", &name)) ||
        (st = py_args_str(a, "ansatz_file", &file)) || (st = py_args_long(a, "K", 1, 100000, &K)) ||
        (st = py_args_long(a, "M", 1, 100000, &M)) || (st = py_args_long(a, "instance", 0, 100000, &inst)) ||
        (st = py_args_long(a, "d", 0, 100000000L, &d)) ||
        (st = py_args_str(a, "activation", &actname)) || (st = py_args_bool(a, "jacobian", &jac)))
        return st;
    const scm_activation *act = scm_activation_find(actname);
    if (K < 0 || M < 0 || !act)
        return scm_error_set(a->err, SCM_EINVAL, "%s: K, M and a known activation are required",
                             a->cmd);
    if ((double)K * (double)(K + M) > 1e8)
        return scm_error_set(a->err, SCM_EINVAL, "%s: K = %ld is too large for a full (Q, R)",
                             a->cmd, K);
    o.d = d;
    double *Q = malloc(sizeof *Q * (size_t)(K * K)), *R = malloc(sizeof *R * (size_t)(K * M));
    scm_ansatz *an = NULL;
    if (!Q || !R)
        st = scm_error_set(a->err, SCM_ENOMEM, "out of memory");
    if (!st && (st = scm_output_read_matrix(cJSON_GetObjectItemCaseSensitive(a->obj, "Q"), "Q",
                                            (int)K, (int)K, Q, a->err)) == SCM_OK)
        st = scm_output_read_matrix(cJSON_GetObjectItemCaseSensitive(a->obj, "R"), "R", (int)K,
                                    (int)M, R, a->err);
    if (!st && !(an = sym_ansatz(a, name, file)))
        st = a->err->code ? a->err->code : SCM_EINVAL;
    int lo = 0, hi = -1, found = 0;
    if (!st && scm_ansatz_applies(an, (int)K, (int)M, &lo, &hi) != 1)
        st = scm_error_set(a->err, SCM_EINVAL, "%s: ansatz '%s' does not apply at K = %ld, M = %ld",
                           a->cmd, scm_ansatz_name(an), K, M);
    cJSON *res = NULL;
    for (int j = -1; !st && !found && j <= hi; j++) {
        int kk = j < 0 ? (int)inst : j; /* the given instance first, then every other */
        if (kk < lo || kk > hi || (j >= 0 && kk == inst))
            continue;
        found = sym_try(a, an, (int)K, (int)M, kk, act, Q, R, &o, jac, &res);
        if (found < 0)
            st = a->err->code ? a->err->code : SCM_ESOLVER;
    }
    if (!st && !found)
        st = scm_error_set(a->err, SCM_EINVAL,
                           "%s: the point is on no instance of ansatz '%s' (to %g relative)",
                           a->cmd, scm_ansatz_name(an), o.sym_tol);
    if (!st) {
        const char *names[] = {"result"};
        st = py_args_reply(out, 1, names, &res, a->err);
    }
    scm_ansatz_free(an);
    free(Q);
    free(R);
    return st;
}
