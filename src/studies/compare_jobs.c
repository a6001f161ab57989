/* compare_jobs.c: the parts of a comparison (compare.h) that rank 0 of
 * scm-mpi used to compute alone while the other ranks waited, as jobs that
 * any thread or rank can compute (issue 29): the families of one K (the
 * enumeration, `scm fixed-points --polish-max-K 0 --max-residual 1e-9`)
 * and the stability verdict of one point reached.
 *
 * A job is a line of JSON text; its result is a line of JSON (the status,
 * or the verdict's fields) and, for the families, the families file's text
 * after it.  Both are pure functions of the job's text: the enumeration's
 * result does not depend on its threads (fptable.h), the perturbation test
 * draws from its own seed, and every number crosses as its shortest exact
 * decimal form (scm_output_print), so a comparison's files are the same
 * bytes whoever computed its jobs.  Also here: the executor of jobs on the
 * threads of this process (scm_compare_jobs_exec). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "scm/fptable.h"
#include "scm/model.h"
#include "scm/output.h"
#include "scm/stability.h"
#include "studies/compare_internal.h"

/* ---- the families of one K ----------------------------------------------- */

void scm_compare_fams_opts(scm_fp_table_opts *fo, long K, long M, const scm_activation *act,
                           const char *const *ansatz, int n_ansatz)
{
    scm_fp_table_opts_default(fo);
    fo->K = K;
    fo->M = M;
    fo->act = act;
    fo->polish_max_K = 0;
    fo->max_residual = 1e-9;
    fo->ansatz_files = ansatz;
    fo->n_ansatz = n_ansatz;
    fo->with_builtin = 1;
}

scm_status scm_compare_ansatz_check(long K, long M, const char *const *ansatz, int n_ansatz,
                                    scm_error *err)
{
    scm_fp_table_opts fo;
    scm_compare_fams_opts(&fo, K, M, scm_activation_find("relu"), ansatz, n_ansatz);
    return scm_fp_table_opts_check(&fo, err);
}

void scm_compare_fams_compute(long K, long M, const scm_activation *act, const char *name,
                              const char *const *ansatz, int n_ansatz, int threads,
                              scm_compare_fams *r)
{
    memset(r, 0, sizeof *r);
    scm_fp_table_opts fo;
    scm_compare_fams_opts(&fo, K, M, act, ansatz, n_ansatz);
    fo.threads = threads;
    scm_fp_table *t = NULL;
    scm_status st = scm_fp_table_opts_check(&fo, &r->err);
    if (!st)
        st = scm_fp_table_run(&fo, &t, &r->err);
    if (st) {
        r->input = st == SCM_EINVAL || st == SCM_EIO;
    } else if (!(st = scm_fp_table_status(t, &r->err)) &&
               !(st = scm_fp_table_json_fits(t, name, &r->err))) {
        cJSON *root = scm_fp_table_json(t);
        r->text = root ? scm_compare_json_text(root, 0) : NULL;
        if (!r->text)
            st = scm_error_set(&r->err, SCM_ENOMEM, "out of memory");
        cJSON_Delete(root);
        r->above = scm_fp_table_residual_ok(t) ? 0 : scm_fp_table_n_above(t);
    }
    r->status = st;
    scm_fp_table_free(t);
}

void scm_compare_fams_free(scm_compare_fams *r)
{
    free(r->text);
    r->text = NULL;
}

char *scm_compare_job_fams(long K, long M, const scm_activation *act, const char *name,
                           const char *const *ansatz, int n_ansatz)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "job", "families");
    cJSON_AddNumberToObject(j, "K", (double)K);
    cJSON_AddNumberToObject(j, "M", (double)M);
    cJSON_AddStringToObject(j, "activation", act->name);
    cJSON_AddStringToObject(j, "file", name);
    if (n_ansatz > 0) /* only then: the jobs of a comparison without stay as they were */
        cJSON_AddItemToObject(j, "ansatz", cJSON_CreateStringArray(ansatz, n_ansatz));
    char *t = scm_output_print(j, 1);
    cJSON_Delete(j);
    return t;
}

/* The result of a families job: its status line, then the text. */
static char *fams_result(const scm_compare_fams *r)
{
    cJSON *h = cJSON_CreateObject();
    cJSON_AddNumberToObject(h, "status", r->status);
    cJSON_AddNumberToObject(h, "input", r->input);
    cJSON_AddStringToObject(h, "message", r->status ? r->err.msg : "");
    cJSON_AddNumberToObject(h, "above", r->above);
    char *line = scm_output_print(h, 1);
    cJSON_Delete(h);
    size_t hl = line ? strlen(line) : 0, tl = r->text ? strlen(r->text) : 0;
    char *out = line ? malloc(hl + tl + 2) : NULL;
    if (out) {
        memcpy(out, line, hl);
        out[hl] = '\n';
        if (tl)
            memcpy(out + hl + 1, r->text, tl);
        out[hl + 1 + tl] = '\0';
    }
    cJSON_free(line);
    return out;
}

scm_status scm_compare_fams_read(char *out, scm_compare_fams *r, scm_error *err)
{
    memset(r, 0, sizeof *r);
    char *nl = out ? strchr(out, '\n') : NULL;
    if (!nl)
        return scm_error_set(err, SCM_EINVAL, "a families job's result without its status line");
    *nl = '\0';
    cJSON *h = cJSON_Parse(out);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(h, "status"),
                *in = cJSON_GetObjectItemCaseSensitive(h, "input"),
                *msg = cJSON_GetObjectItemCaseSensitive(h, "message"),
                *ab = cJSON_GetObjectItemCaseSensitive(h, "above");
    scm_status rs = SCM_OK;
    if (!cJSON_IsNumber(st) || !cJSON_IsNumber(in) || !cJSON_IsString(msg) ||
        !cJSON_IsNumber(ab)) {
        rs = scm_error_set(err, h ? SCM_EINVAL : SCM_ENOMEM, "a malformed families job result");
    } else {
        r->status = (scm_status)st->valueint;
        r->input = in->valueint;
        r->above = ab->valueint;
        if (r->status)
            scm_error_set(&r->err, r->status, "%s", msg->valuestring);
        else if (!(r->text = malloc(strlen(nl + 1) + 1)))
            rs = scm_error_set(err, SCM_ENOMEM, "out of memory");
        else
            strcpy(r->text, nl + 1);
    }
    cJSON_Delete(h);
    return rs;
}

/* ---- the stability verdict of one point ---------------------------------- */

cJSON *scm_compare_stab_fields(const scm_model *m, const double *Q, const double *R)
{
    scm_stab_opts so;
    scm_stab_opts_three_sigma(&so);
    scm_stab_result r;
    scm_error err;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (scm_stab_analyse(m, Q, R, &so, &r, &err)) {
        cJSON_AddStringToObject(o, "verdict", "error");
        cJSON_AddStringToObject(o, "hessian_verdict", "-");
        cJSON_AddStringToObject(o, "why", err.msg);
        return o;
    }
    cJSON_AddStringToObject(o, "verdict", scm_verdict_str(r.verdict));
    cJSON_AddStringToObject(o, "hessian_verdict", scm_hverdict_str(r.hverdict));
    cJSON_AddStringToObject(o, "tests_agree",
                            r.agree == 1 ? "yes" : r.agree == 0 ? "no" : "not_comparable");
    if (r.hessian_done) {
        cJSON_AddNumberToObject(o, "hessian_negative", r.counts.n_neg);
        cJSON_AddNumberToObject(o, "hessian_zero", r.counts.n_zero);
        if (r.n_small)
            cJSON_AddNumberToObject(o, "hessian_smallest", r.eval_small[0]);
    }
    if (r.jacobian_done)
        cJSON_AddNumberToObject(o, "jacobian_re_max", r.jac_re_max);
    int same = 0, glob = 0, other = 0, failed = 0;
    double omin = INFINITY, omax = -INFINITY;
    for (int q = 0; q < r.n_rows; q++) {
        same += r.rows[q].n_same;
        glob += r.rows[q].n_global;
        other += r.rows[q].n_other;
        failed += r.rows[q].n_failed;
        if (r.rows[q].n_other) {
            omin = fmin(omin, r.rows[q].other_eps_min);
            omax = fmax(omax, r.rows[q].other_eps_max);
        }
    }
    char to[160];
    int w = snprintf(to, sizeof to, "same %d, global %d, other %d", same, glob, other);
    if (other)
        w += snprintf(to + w, sizeof to - (size_t)w, " (loss %.6g..%.6g)", omin, omax);
    if (failed)
        snprintf(to + w, sizeof to - (size_t)w, ", failed %d", failed);
    cJSON_AddStringToObject(o, "escapes_to", to);
    return o;
}

char *scm_compare_job_stab(const scm_model *m, const double *Q, const double *R)
{
    const int K = m->K, M = m->M;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "job", "stability");
    cJSON_AddNumberToObject(j, "K", K);
    cJSON_AddNumberToObject(j, "M", M);
    cJSON_AddStringToObject(j, "activation", m->act->name);
    cJSON_AddItemToObject(j, "Q", scm_output_vector(Q, K * K));
    cJSON_AddItemToObject(j, "R", scm_output_vector(R, K * M));
    char *t = scm_output_print(j, 1);
    cJSON_Delete(j);
    return t;
}

/* n numbers of the array a into x; -1 unless a is exactly that. */
static int json_vector(const cJSON *a, int n, double *x)
{
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n)
        return -1;
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsNumber(v))
            return -1;
        x[i++] = v->valuedouble;
    }
    return 0;
}

/* The stability job j: its verdict's fields as one line. */
static scm_status run_stab(const cJSON *j, char **out, scm_error *err)
{
    const cJSON *jk = cJSON_GetObjectItemCaseSensitive(j, "K"),
                *jm = cJSON_GetObjectItemCaseSensitive(j, "M"),
                *ja = cJSON_GetObjectItemCaseSensitive(j, "activation");
    const scm_activation *act = cJSON_IsString(ja) ? scm_activation_find(ja->valuestring) : NULL;
    if (!cJSON_IsNumber(jk) || !cJSON_IsNumber(jm) || !act || jk->valueint < 1 ||
        jm->valueint < 1 || jk->valueint > 100000 || jm->valueint > 100000)
        return scm_error_set(err, SCM_EINVAL, "a malformed stability job");
    const int K = jk->valueint, M = jm->valueint;
    double *Q = malloc(sizeof *Q * (size_t)K * (size_t)K);
    double *R = malloc(sizeof *R * (size_t)K * (size_t)M);
    scm_model *m = scm_model_alloc(K, M, act, NULL, NULL, NULL, err);
    scm_status st = SCM_OK;
    if (!Q || !R || !m)
        st = m ? scm_error_set(err, SCM_ENOMEM, "out of memory") : err->code;
    else if (json_vector(cJSON_GetObjectItemCaseSensitive(j, "Q"), K * K, Q) ||
             json_vector(cJSON_GetObjectItemCaseSensitive(j, "R"), K * M, R))
        st = scm_error_set(err, SCM_EINVAL, "a stability job without its Q (%d x %d) and R "
                           "(%d x %d)", K, K, K, M);
    cJSON *o = st ? NULL : scm_compare_stab_fields(m, Q, R);
    if (!st && !(o && (*out = scm_output_print(o, 1))))
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    cJSON_Delete(o);
    scm_model_free(m);
    free(Q);
    free(R);
    return st;
}

/* ---- any job ------------------------------------------------------------- */

/* The ansatz files of a families job into files (pointers into j): their
 * count, 0 without the key, -1 when it is not an array of at most
 * SCM_COMPARE_MAX_ANSATZ strings. */
static int job_ansatz(const cJSON *j, const char **files)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "ansatz"), *f;
    if (!a)
        return 0;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > SCM_COMPARE_MAX_ANSATZ)
        return -1;
    int n = 0;
    cJSON_ArrayForEach(f, a)
    {
        if (!cJSON_IsString(f))
            return -1;
        files[n++] = f->valuestring;
    }
    return n;
}

scm_status scm_compare_job_run(const char *in, int threads, char **out, scm_error *err)
{
    *out = NULL;
    cJSON *j = in ? cJSON_Parse(in) : NULL;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "job");
    scm_status st = SCM_OK;
    if (!cJSON_IsString(kind)) {
        st = scm_error_set(err, SCM_EINVAL, "not a comparison's job");
    } else if (strcmp(kind->valuestring, "stability") == 0) {
        st = run_stab(j, out, err);
    } else if (strcmp(kind->valuestring, "families") == 0) {
        const cJSON *jk = cJSON_GetObjectItemCaseSensitive(j, "K"),
                    *jm = cJSON_GetObjectItemCaseSensitive(j, "M"),
                    *ja = cJSON_GetObjectItemCaseSensitive(j, "activation"),
                    *jf = cJSON_GetObjectItemCaseSensitive(j, "file");
        const scm_activation *act =
            cJSON_IsString(ja) ? scm_activation_find(ja->valuestring) : NULL;
        const char *files[SCM_COMPARE_MAX_ANSATZ];
        int nfiles = job_ansatz(j, files);
        if (!cJSON_IsNumber(jk) || !cJSON_IsNumber(jm) || !act || !cJSON_IsString(jf) ||
            nfiles < 0) {
            st = scm_error_set(err, SCM_EINVAL, "a malformed families job");
        } else {
            scm_compare_fams r;
            scm_compare_fams_compute((long)jk->valuedouble, (long)jm->valuedouble, act,
                                     jf->valuestring, files, nfiles, threads < 1 ? 1 : threads,
                                     &r);
            if (!(*out = fams_result(&r)))
                st = scm_error_set(err, SCM_ENOMEM, "out of memory");
            scm_compare_fams_free(&r);
        }
    } else {
        st = scm_error_set(err, SCM_EINVAL, "unknown job kind '%.64s'", kind->valuestring);
    }
    cJSON_Delete(j);
    return st;
}

/* ---- on the threads of this process -------------------------------------- */

typedef struct {
    scm_compare_job *jobs;
    int per_job;       /* threads of each job */
    scm_status *st;    /* per job */
    scm_error *err;    /* per job */
} jobs_ctx;

static void jobs_one(void *arg, int tid, int i)
{
    (void)tid;
    jobs_ctx *x = arg;
    x->st[i] = scm_compare_job_run(x->jobs[i].in, x->per_job, &x->jobs[i].out, &x->err[i]);
}

scm_status scm_compare_jobs_exec(scm_compare_job *jobs, int n, int nthreads, scm_error *err)
{
    if (n < 0 || (n > 0 && !jobs) || nthreads < 1)
        return scm_error_set(err, SCM_EINVAL, "bad job arguments");
    if (n == 0)
        return SCM_OK;
    const int width = nthreads < n ? nthreads : n;
    jobs_ctx x = {jobs, nthreads / width, calloc((size_t)n, sizeof *x.st),
                  calloc((size_t)n, sizeof *x.err)};
    scm_status st = SCM_OK;
    if (!x.st || !x.err) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    } else {
        scm_parallel_for(width, n, jobs_one, &x);
        for (int i = 0; i < n && !st; i++)
            if ((st = x.st[i]) && err)
                *err = x.err[i];
    }
    free(x.st);
    free(x.err);
    return st;
}
