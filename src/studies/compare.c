/* compare.c: the comparison across K (compare.h), what `scm compare`
 * computes: per K the configuration, the families (given or enumerated),
 * the sweep with resume and its summary, then the fraction table with
 * Wilson intervals and the report.  The order of the steps, the files they
 * write and the failures they report are those of the command before the
 * comparison moved into the library (issue 24). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/fixedpoint.h"
#include "scm/fptable.h"
#include "scm/output.h"
#include "scm/sweepfile.h"
#include "studies/compare_internal.h"

#define MAX_SETS 256
#define PATH_LEN 4096

static const char base_text[] =
    "{\"model\": {\"K\": 1, \"M\": 1, \"activation\": \"relu\"},\n"
    " \"init\": {\"type\": \"random\", \"d\": 1000, \"sigma\": 1, \"seed\": 1},\n"
    " \"integrator\": {\"linear_solver\": \"gmres\", \"grad_stop\": 1e-10,\n"
    "                \"loose_until\": 1e-6, \"loose_rtol\": 1e-4, \"loose_atol\": 1e-6,\n"
    "                \"jtimes\": \"lagged\", \"krylov_dim\": 20, \"eps_stop\": 1e-10,\n"
    "                \"max_steps\": 100000}}\n";

/* The state of one comparison while it runs. */
typedef struct {
    const scm_compare_opts *o;
    scm_compare_result *res;
    cJSON *fam_arr, *reached_arr, *hist_arr, *trace_arr, *files_arr;
    cJSON *trace_integ; /* the traces' integrator (compare_trace.c) */
    long nrows_max;
    long *cnt, *done;
    char fam_made[PATH_LEN];
    char cfg[PATH_LEN], runsf[PATH_LEN], sumf[PATH_LEN];
    /* per K, computed before the first write (prepare_k): the enumerated
     * families file (path, text; NULL when given or not enumerable) and
     * the configuration file's path and text */
    char *fam_path[SCM_COMPARE_MAX_K], *fam_text[SCM_COMPARE_MAX_K];
    char *cfg_path[SCM_COMPARE_MAX_K], *cfg_text[SCM_COMPARE_MAX_K];
    /* per K, with an executor of jobs: the result of its families job,
     * computed ahead (families_ahead), taken by enumerate */
    char *fam_out[SCM_COMPARE_MAX_K];
} compare_state;

void scm_compare_opts_default(scm_compare_opts *o)
{
    memset(o, 0, sizeof *o);
    o->M = -1;
    o->runs = -1;
    o->threads = 1;
    o->traces = 4;
}

/* Record where the comparison failed; returns st. */
static scm_status fail(compare_state *s, scm_compare_part part, int input, long K, scm_status st)
{
    s->res->failed_part = part;
    s->res->failed_input = input;
    s->res->failed_K = K;
    return st;
}

/* Append a row count into the k1 table column (k1 < 0: unmatched). */
static void table_add(long *tab, int nrows, int col, int ncols, int row, long v)
{
    if (row >= 0 && row < nrows)
        tab[row * ncols + col] += v;
}

/* The enumeration handles T = I, v = v* = 1 and the GD rule only. */
static int enumerable(const scm_config *c)
{
    if (c->T || c->rule != &scm_rule_gd)
        return 0;
    for (int k = 0; k < c->K; k++)
        if (c->v[k] != 1.0)
            return 0;
    for (int n = 0; n < c->M; n++)
        if (c->vs[n] != 1.0)
            return 0;
    return 1;
}

/* Whether family f's point is the global minimum of a ReLU network with
 * T = I and v = v* = 1 (enumerable(c)): every student dead or aligned
 * with a teacher, and each teacher's aligned norms summing to 1 (positive
 * homogeneity: a teacher split among students is still the teacher), to
 * 1e-6, far looser than an enumerated point's error (5e-9 at M = 10,
 * K = 12) and far tighter than any plateau's misalignment (order 1). */
static int point_is_global(const scm_sweep_family *f, const scm_config *c)
{
    const double tol = 1e-6;
    if (!f->Q || !f->R || f->K != c->K || f->M != c->M || c->M < 1 ||
        c->act != &scm_act_relu || !enumerable(c))
        return 0;
    double *sum = calloc((size_t)c->M, sizeof *sum); /* no memory: not shown global */
    int global = sum != NULL;
    for (int k = 0; k < c->K && global; k++) {
        const double q = f->Q[k * c->K + k];
        const double norm = sqrt(q);
        if (q >= 0.0 && norm <= tol)
            continue; /* dead: g(0) = 0 */
        int best = 0;
        for (int n = 1; n < c->M; n++)
            if (f->R[k * c->M + n] > f->R[k * c->M + best])
                best = n;
        global = f->R[k * c->M + best] >= (1.0 - tol) * norm; /* false for q < 0 (NaN) */
        if (global)
            sum[best] += norm;
    }
    for (int n = 0; n < c->M && global; n++)
        global = fabs(sum[n] - 1.0) <= tol;
    free(sum);
    return global;
}

/* A run stopped below eps_stop is called a global minimum: that is sound
 * only far below the lowest positive family loss (the loss decreases along
 * the flow, so such a run can end at no family above it).  A family whose
 * point is the global minimum does not count: its listed loss is the
 * unpolished enumeration's round-off (2.2e-10 at M = 10, K = 12, a teacher
 * split among three students), and lowering eps_stop below it instead makes
 * the slow over-parameterised runs stop on grad_stop above eps_stop,
 * unmatched (docs/map.md). */
static scm_status check_eps_fams(compare_state *s, const scm_sweep_families *fams,
                                 const char *fam_path, const scm_config *c, long K,
                                 scm_error *err)
{
    scm_sweep_opts so;
    scm_sweep_opts_default(&so);
    double low = INFINITY;
    for (int i = 0; i < fams->n; i++)
        if (fams->f[i].eps > so.match_atol && !point_is_global(&fams->f[i], c))
            low = fmin(low, fams->f[i].eps);
    if (isfinite(low) && c->traj.eps_stop > 1e-3 * low)
        return fail(s, SCM_COMPARE_PART_COMPARE, 1, K,
                    scm_error_set(err, SCM_EINVAL,
                                  "K = %ld: integrator.eps_stop = %g is not far below the lowest "
                                  "positive family loss %.6g in '%s' (a run stopped there might "
                                  "be on that plateau); use at most %.3g",
                                  K, c->traj.eps_stop, low, fam_path, 1e-3 * low));
    return SCM_OK;
}

/* check_eps_fams of the families file fam_path, which must be readable and
 * of the model's shape. */
static scm_status check_eps_stop(compare_state *s, const char *fam_path, const scm_config *c,
                                 long K, scm_error *err)
{
    scm_sweep_families fams;
    scm_status st = scm_sweep_families_load(fam_path, &fams, err);
    if (!st && (st = scm_sweep_families_check_shape(&fams, c->K, c->M, fam_path, err)))
        scm_sweep_families_free(&fams);
    if (st)
        return fail(s, SCM_COMPARE_PART_COMPARE, 1, K, st);
    st = check_eps_fams(s, &fams, fam_path, c, K, err);
    scm_sweep_families_free(&fams);
    return st;
}

/* The families of K (the j-th) as the text of s->fam_made into
 * s->fam_text[j] and parsed into *fams, as `scm fixed-points --K K --M M
 * --activation NAME --polish-max-K 0 --max-residual 1e-9 -q -o FILE` writes
 * it, and checked against eps_stop; nothing is written.  From its job's
 * result when the jobs ran ahead (families_ahead), else computed here. */
static scm_status enumerate(compare_state *s, const scm_config *c, long K, int j,
                            scm_sweep_families *fams, scm_error *err)
{
    scm_compare_fams r;
    scm_status st;
    if (s->fam_out[j]) {
        st = scm_compare_fams_read(s->fam_out[j], &r, err);
        free(s->fam_out[j]);
        s->fam_out[j] = NULL;
        if (st)
            return fail(s, SCM_COMPARE_PART_ENUMERATION, 0, K, st);
    } else {
        scm_compare_fams_compute(K, s->o->M, c->act, s->fam_made, s->o->ansatz_files,
                                 s->o->n_ansatz, 0, &r);
    }
    if (r.status) {
        if (err)
            *err = r.err;
        return fail(s, SCM_COMPARE_PART_ENUMERATION, r.input, K, r.status);
    }
    st = scm_sweep_families_parse(r.text, s->fam_made, fams, err);
    if (!st && (st = check_eps_fams(s, fams, s->fam_made, c, K, err)) == SCM_EINVAL) {
        scm_compare_fams_free(&r); /* eps_stop refused: bad input, nothing written */
        return st;
    }
    if (!st && r.above)
        st = scm_error_set(err, SCM_ENOCONV, "%d fixed point(s) with a residual above %g",
                           r.above, 1e-9);
    if (st) {
        scm_compare_fams_free(&r);
        return fail(s, SCM_COMPARE_PART_ENUMERATION, 0, K, st);
    }
    s->fam_text[j] = r.text;
    return SCM_OK;
}

/* What a sweep event carries. */
typedef struct {
    const scm_compare_opts *o;
    long K;
    const char *path;
} sweep_ev;

static void sweep_event(const scm_sweep_file *f, void *user)
{
    const sweep_ev *v = user;
    scm_compare_event e;
    memset(&e, 0, sizeof e);
    e.kind = SCM_COMPARE_SWEEP_RECORD;
    e.K = v->K;
    e.path = v->path;
    e.sweep = f;
    v->o->event(&e, v->o->event_user);
}

/* The end of a sweep, for the caller and for res: st (with input, whether
 * it is bad input) returned. */
static scm_status sweep_end(compare_state *s, const sweep_ev *v, const scm_sweep_file *f,
                            int ran, int run_ok, scm_status st, int input, scm_error *err)
{
    if (s->o->event) {
        scm_compare_event e;
        memset(&e, 0, sizeof e);
        e.kind = SCM_COMPARE_SWEEP_END;
        e.K = v->K;
        e.path = v->path;
        e.sweep = ran ? f : NULL;
        e.ran = ran;
        e.run_ok = run_ok;
        e.status = st;
        e.err = err;
        s->o->event(&e, s->o->event_user);
    }
    return st ? fail(s, SCM_COMPARE_PART_SWEEP, input, v->K, st) : SCM_OK;
}

/* Run the sweep of f's runs into the open file, its summary into s->sumf. */
static scm_status sweep_runs(compare_state *s, const sweep_ev *v, scm_sweep_file *f,
                             scm_error *err)
{
    const scm_compare_opts *o = s->o;
    if (o->event) {
        scm_compare_event e;
        memset(&e, 0, sizeof e);
        e.kind = SCM_COMPARE_SWEEP_START;
        e.K = v->K;
        e.path = v->path;
        e.sweep = f;
        o->event(&e, o->event_user);
    }
    scm_status st = scm_sweep_file_run(f, err);
    if (st)
        return sweep_end(s, v, f, 1, 0, st, !(st == SCM_EIO || st == SCM_ENOMEM), err);
    cJSON *js = scm_sweep_summary_json(scm_sweep_file_summary(f));
    if (!js)
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
    else
        st = scm_output_write_json(s->sumf, js, 0, err);
    cJSON_Delete(js);
    return sweep_end(s, v, f, 1, 1, st, 0, err);
}

/* The sweep of K, as `scm sweep CFG --runs N -o RUNS --threads T --resume
 * --summary SUM [--seed S] [--families F] [--certify]`. */
static scm_status sweep(compare_state *s, long K, const char *fam_path, scm_error *err)
{
    const scm_compare_opts *o = s->o;
    sweep_ev v = {o, K, s->runsf};
    scm_sweep_file_opts fo;
    scm_sweep_file_opts_default(&fo);
    fo.sweep.certify = o->certify;
    scm_config *c = NULL;
    scm_sweep_families fams = {0, NULL, NULL};
    scm_sweep_file *f = NULL;
    scm_status st = scm_sweep_opts_check(&fo.sweep, err);
    if (!st)
        st = scm_config_load(s->cfg, NULL, 0, &c, err);
    if (!st && c->init != SCM_INIT_RANDOM)
        st = scm_error_set(err, SCM_EINVAL, "%s: a sweep needs init.type = \"random\"", s->cfg);
    if (!st && fam_path)
        st = scm_sweep_families_load(fam_path, &fams, err);
    if (st) {
        st = sweep_end(s, &v, NULL, 0, 0, st, 1, err);
        goto out;
    }
    fo.runs = o->runs;
    fo.seed = o->have_seed ? o->seed : (uint64_t)c->seed;
    fo.threads = o->threads;
    fo.resume = 1;
    fo.exec = o->exec;
    if (o->event) {
        fo.progress = sweep_event;
        fo.progress_user = &v;
    }
    st = scm_sweep_file_open(s->runsf, c, &fams, &fo, &f, err);
    if (st)
        st = sweep_end(s, &v, NULL, 0, 0, st, st != SCM_EIO, err);
    else
        st = sweep_runs(s, &v, f, err);
out:
    scm_sweep_file_free(f);
    scm_sweep_families_free(&fams);
    scm_config_free(c);
    return st;
}

/* The table column of K j: by matched k1 with families, else by anti count. */
static void table_column(compare_state *s, int j, const cJSON *S, int with_families)
{
    const int nK = s->o->nK;
    const int nrows = (int)s->nrows_max;
    s->done[j] = (long)cJSON_GetObjectItemCaseSensitive(S, "done")->valuedouble;
    const cJSON *it;
    if (with_families) {
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(S, "classes"))
        {
            const cJSON *k1 = cJSON_GetObjectItemCaseSensitive(it, "k1");
            long n = (long)cJSON_GetObjectItemCaseSensitive(it, "count")->valuedouble;
            const char *cl = cJSON_GetObjectItemCaseSensitive(it, "class")->valuestring;
            if (cJSON_IsNumber(k1))
                table_add(s->cnt, nrows + 2, j, nK, (int)k1->valuedouble, n);
            else
                table_add(s->cnt, nrows + 2, j, nK,
                          strcmp(cl, "unmatched") == 0 ? nrows : nrows + 1, n);
        }
    } else {
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(S, "by_anti"))
        table_add(s->cnt, nrows + 2, j, nK,
                  (int)cJSON_GetObjectItemCaseSensitive(it, "anti")->valuedouble,
                  (long)cJSON_GetObjectItemCaseSensitive(it, "count")->valuedouble);
        long conv = (long)cJSON_GetObjectItemCaseSensitive(S, "converged")->valuedouble;
        table_add(s->cnt, nrows + 2, j, nK, nrows + 1, s->done[j] - conv);
    }
}

/* The report's entries of K j once its sweep is summarised: files, table
 * column, families given, families reached, histogram, traces. */
static scm_status add_k(compare_state *s, int j, const scm_config *c, const char *fam_path,
                        scm_error *err)
{
    const scm_compare_opts *o = s->o;
    const long K = o->K[j];
    const cJSON *S = s->res->summaries[j];
    cJSON *fo = cJSON_CreateObject();
    cJSON_AddNumberToObject(fo, "K", (double)K);
    cJSON_AddStringToObject(fo, "config", s->cfg);
    cJSON_AddStringToObject(fo, "runs", s->runsf);
    cJSON_AddStringToObject(fo, "summary", s->sumf);
    if (fam_path)
        cJSON_AddStringToObject(fo, "families", fam_path);
    else
        cJSON_AddNullToObject(fo, "families");
    cJSON_AddItemToArray(s->files_arr, fo);
    table_column(s, j, S, fam_path != NULL);
    /* Families with their losses. */
    scm_sweep_families fams;
    scm_error e;
    if (fam_path && scm_sweep_families_load(fam_path, &fams, &e) == SCM_OK) {
        for (int q = 0; q < fams.n; q++) {
            cJSON *ob = cJSON_CreateObject();
            cJSON_AddNumberToObject(ob, "K", (double)K);
            cJSON_AddStringToObject(ob, "family", fams.f[q].name);
            cJSON_AddNumberToObject(ob, "k1", fams.f[q].k1);
            cJSON_AddNumberToObject(ob, "loss", fams.f[q].eps);
            cJSON_AddItemToArray(s->fam_arr, ob);
        }
        scm_sweep_families_free(&fams);
    }
    scm_status st;
    if (fam_path && (st = scm_compare_reached(o, fam_path, S, c, K, s->reached_arr, err)))
        return fail(s, SCM_COMPARE_PART_COMPARE, 0, K, st);
    cJSON *ho = cJSON_CreateObject();
    cJSON_AddNumberToObject(ho, "K", (double)K);
    cJSON_AddItemToObject(ho, "histogram",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(S, "loss_histogram"), 1));
    cJSON_AddItemToObject(ho, "classes",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(S, "classes"), 1));
    cJSON_AddItemToArray(s->hist_arr, ho);
    uint64_t base = o->have_seed ? o->seed : (uint64_t)c->seed;
    if ((st = scm_compare_traces(s->runsf, fam_path, o->traces, c, base, K, s->trace_arr, err)))
        return fail(s, SCM_COMPARE_PART_COMPARE, 0, K, st);
    if (!s->trace_integ) /* the same for every K: one config but model.K */
        s->trace_integ = scm_compare_trace_integrator_json(c);
    return SCM_OK;
}

/* The configuration of K j (the base or given config, the --set
 * overrides, model.K and model.M) into *c, and the file names of K j. */
static scm_status load_k(compare_state *s, int j, scm_config **c, scm_error *err)
{
    const scm_compare_opts *o = s->o;
    const long K = o->K[j];
    char kset[64], mset[64];
    snprintf(kset, sizeof kset, "model.K=%ld", K);
    snprintf(mset, sizeof mset, "model.M=%ld", o->M);
    const char *all[MAX_SETS + 2];
    int na = 0;
    for (int q = 0; q < o->nsets && q < MAX_SETS; q++)
        all[na++] = o->sets[q];
    all[na++] = kset;
    all[na++] = mset;
    scm_error e;
    *c = NULL;
    if (scm_config_parse(o->config_text ? o->config_text : base_text,
                         o->config_name ? o->config_name : "(default config)", all, na, c, &e))
        return fail(s, SCM_COMPARE_PART_COMPARE, 1, K,
                    scm_error_set(err, e.code, "K = %ld: %s", K, e.msg));
    snprintf(s->cfg, sizeof s->cfg, "%s.K%ld.config.json", o->prefix, K);
    snprintf(s->runsf, sizeof s->runsf, "%s.K%ld.runs.jsonl", o->prefix, K);
    snprintf(s->sumf, sizeof s->sumf, "%s.K%ld.summary.json", o->prefix, K);
    return SCM_OK;
}

/* A PREFIX.K.config.json left by an earlier comparison must be this one's:
 * a rerun with other settings would mix records (and overwrite it). */
static scm_status check_old_config(compare_state *s, const scm_config *c, long K,
                                   scm_error *err)
{
    size_t len;
    char *old = scm_output_read_file(s->cfg, (size_t)16 << 20, &len, NULL);
    if (!old)
        return SCM_OK; /* none (or unreadable: the write will say) */
    char *now = scm_output_print(c->used, 0);
    int same = now && strlen(now) + 1 == len && memcmp(now, old, len - 1) == 0;
    free(old);
    free(now);
    if (same)
        return SCM_OK;
    return fail(s, SCM_COMPARE_PART_COMPARE, 1, K,
                scm_error_set(err, SCM_EINVAL,
                              "K = %ld: '%s' exists with another configuration (an earlier "
                              "comparison with other settings); use another -o PREFIX or "
                              "remove its files",
                              K, s->cfg));
}

/* Everything that can be refused, for every K, before the first file is
 * written: the configurations, the given families (readable, of the
 * model's shape, eps_stop far below their losses), the enumeration's
 * options, and the files of an earlier comparison under PREFIX. */
static scm_status precheck(compare_state *s, scm_error *err)
{
    const scm_compare_opts *o = s->o;
    scm_status st = SCM_OK;
    for (int j = 0; j < o->nK && !st; j++) {
        scm_config *c = NULL;
        if ((st = load_k(s, j, &c, err)))
            break;
        if (o->families[j]) {
            st = check_eps_stop(s, o->families[j], c, o->K[j], err);
        } else if (enumerable(c) && o->K[j] > SCM_FP_FULL_MAX_K) {
            /* the enumeration's points there have no full state, so no k1:
             * the runs could not be classified by family */
            st = fail(s, SCM_COMPARE_PART_COMPARE, 1, o->K[j],
                      scm_error_set(err, SCM_EINVAL,
                                    "the family enumeration classifies points up to K = %d "
                                    "(full-space checks); give the families of K = %ld with "
                                    "--families %ld=FILE",
                                    SCM_FP_FULL_MAX_K, o->K[j], o->K[j]));
        } else if (enumerable(c)) {
            scm_fp_table_opts fo; /* the --ansatz files read and checked here too */
            scm_compare_fams_opts(&fo, o->K[j], o->M, c->act, o->ansatz_files, o->n_ansatz);
            if ((st = scm_fp_table_opts_check(&fo, err)))
                fail(s, SCM_COMPARE_PART_COMPARE, 1, o->K[j], st);
        }
        if (!st)
            st = check_old_config(s, c, o->K[j], err);
        scm_config_free(c);
    }
    return st;
}

/* The existing runs file of K (s->runsf) must be this comparison's: its
 * first line the header the sweep of c with families fams writes (a cut
 * prefix of it, or an empty file, is resumed too).  Checked before any
 * file is written; the records are checked when the sweep opens it.  A
 * refusal names what differs (a rerun with another --runs, say) and, as
 * every failure of part SWEEP, goes to the SWEEP_END event too. */
static scm_status check_runs_header(compare_state *s, const scm_config *c,
                                    const scm_sweep_families *fams, long K, scm_error *err)
{
    const scm_compare_opts *o = s->o;
    FILE *f = fopen(s->runsf, "rb");
    if (!f)
        return SCM_OK; /* none (or unreadable: the sweep will say) */
    scm_sweep_opts so;
    scm_sweep_opts_default(&so);
    so.certify = o->certify;
    char *want = scm_sweep_header_json_opts(c, o->have_seed ? o->seed : (uint64_t)c->seed,
                                            o->runs, 0, 1, fams, &so);
    char *got = NULL;
    size_t cap = 0;
    ssize_t n = want ? getline(&got, &cap, f) : 0;
    const int ferr = ferror(f);
    fclose(f);
    scm_status st = SCM_OK;
    if (!want || (n < 0 && ferr)) {
        st = !want ? scm_error_set(err, SCM_ENOMEM, "out of memory")
                   : scm_error_set(err, SCM_EIO, "cannot read '%s'", s->runsf);
    } else {
        const size_t wl = strlen(want), gl = n > 0 ? (size_t)n : 0;
        int complete = gl == wl + 1 && got[wl] == '\n' && memcmp(got, want, wl) == 0;
        int prefix = gl <= wl && (gl == 0 || memcmp(got, want, gl) == 0); /* cut, or empty */
        if (!complete && !prefix) {
            char why[256];
            if (got[gl - 1] == '\n')
                got[gl - 1] = '\0';
            scm_compare_header_diff(got, want, why, sizeof why);
            scm_error_set(err, SCM_EINVAL,
                          "K = %ld: '%s' is not this comparison's runs file: %s; rerun with "
                          "the settings that made it to resume it, or use another -o PREFIX "
                          "or remove it",
                          K, s->runsf, why);
            sweep_ev v = {o, K, s->runsf};
            st = sweep_end(s, &v, NULL, 0, 0, SCM_EINVAL, 1, err);
        }
    }
    free(want);
    free(got);
    return st;
}

/* K j before anything is written: its configuration (text kept), its
 * families enumerated in memory (text kept) and checked, and its runs
 * file's header. */
static scm_status prepare_k(compare_state *s, int j, scm_error *err)
{
    const scm_compare_opts *o = s->o;
    const long K = o->K[j];
    scm_config *c = NULL;
    scm_status st = load_k(s, j, &c, err);
    if (st)
        return st;
    scm_sweep_families fams = {0, NULL, NULL};
    if (!o->families[j] && enumerable(c)) {
        snprintf(s->fam_made, sizeof s->fam_made, "%s.K%ld.families.json", o->prefix, K);
        scm_compare_note(o, K, "K = %ld, M = %ld: enumerating the families into %s", K, o->M,
                         s->fam_made);
        if (!(s->fam_path[j] = malloc(strlen(s->fam_made) + 1)))
            st = scm_error_set(err, SCM_ENOMEM, "out of memory");
        else
            strcpy(s->fam_path[j], s->fam_made);
        if (!st)
            st = enumerate(s, c, K, j, &fams, err);
    } else if (o->families[j] && (st = scm_sweep_families_load(o->families[j], &fams, err))) {
        fail(s, SCM_COMPARE_PART_COMPARE, 1, K, st);
    }
    if (!st)
        st = check_runs_header(s, c, &fams, K, err);
    if (!st) {
        s->cfg_text[j] = scm_compare_json_text(c->used, 0);
        s->cfg_path[j] = malloc(strlen(s->cfg) + 1);
        if (!s->cfg_text[j] || !s->cfg_path[j])
            st = scm_error_set(err, SCM_ENOMEM, "out of memory");
        else
            strcpy(s->cfg_path[j], s->cfg);
    }
    scm_sweep_families_free(&fams);
    scm_config_free(c);
    return st;
}

/* The enumerations of every K that prepare_k will enumerate, as jobs
 * (the largest K first: the longest jobs start first); who[q] is the index
 * of job q's K.  On failure no job is left. */
static scm_status fams_jobs(compare_state *s, scm_compare_job *jobs, int *who, int *n,
                            scm_error *err)
{
    const scm_compare_opts *o = s->o;
    scm_status st = SCM_OK;
    *n = 0;
    for (int j = 0; j < o->nK && !st; j++) {
        scm_config *c = NULL;
        if ((st = load_k(s, j, &c, err)))
            break;
        if (!o->families[j] && enumerable(c)) {
            char name[PATH_LEN];
            snprintf(name, sizeof name, "%s.K%ld.families.json", o->prefix, o->K[j]);
            int q = (*n)++; /* sorted in: K decreasing */
            for (; q > 0 && o->K[who[q - 1]] < o->K[j]; q--) {
                jobs[q] = jobs[q - 1];
                who[q] = who[q - 1];
            }
            jobs[q].in = scm_compare_job_fams(o->K[j], o->M, c->act, name, o->ansatz_files,
                                              o->n_ansatz);
            jobs[q].out = NULL;
            who[q] = j;
            if (!jobs[q].in)
                st = scm_error_set(err, SCM_ENOMEM, "out of memory");
        }
        scm_config_free(c);
    }
    if (st) {
        for (int q = 0; q < *n; q++)
            free(jobs[q].in);
        *n = 0;
    }
    return st;
}

scm_status scm_compare_families_jobs(const scm_compare_opts *o, scm_compare_job *jobs, int *n,
                                     scm_error *err)
{
    *n = 0;
    if (!o || !o->prefix || o->nK < 1 || o->nK > SCM_COMPARE_MAX_K || o->nsets > MAX_SETS)
        return scm_error_set(err, SCM_EINVAL, "bad comparison options");
    compare_state s;
    scm_compare_result res;
    memset(&s, 0, sizeof s);
    memset(&res, 0, sizeof res);
    s.o = o;
    s.res = &res;
    int who[SCM_COMPARE_MAX_K];
    return fams_jobs(&s, jobs, who, n, err);
}

/* A copy of the result of the job with text in among o->done_jobs, NULL
 * when there is none (or no memory: the job is then computed). */
static char *done_result(const scm_compare_opts *o, const char *in)
{
    for (int i = 0; i < o->n_done_jobs; i++) {
        const scm_compare_job *d = &o->done_jobs[i];
        if (d->in && d->out && strcmp(d->in, in) == 0) {
            char *out = malloc(strlen(d->out) + 1);
            return out ? strcpy(out, d->out) : NULL;
        }
    }
    return NULL;
}

/* With an executor of jobs or jobs done ahead: the enumerations of every
 * K, those done ahead taken, the others handed to the executor at once
 * (without one, left to prepare_k); their results kept for prepare_k,
 * which takes them in turn as it would have computed them, so that the
 * files, the events and the failures reported are the same. */
static scm_status families_ahead(compare_state *s, scm_error *err)
{
    const scm_compare_opts *o = s->o;
    scm_compare_job jobs[SCM_COMPARE_MAX_K];
    int who[SCM_COMPARE_MAX_K], n = 0, left = 0;
    scm_status st = fams_jobs(s, jobs, who, &n, err);
    for (int q = 0; q < n; q++) {
        if ((s->fam_out[who[q]] = done_result(o, jobs[q].in))) {
            free(jobs[q].in);
        } else { /* still to compute: moved down, in order */
            jobs[left] = jobs[q];
            who[left++] = who[q];
        }
    }
    if (!st && left > 0 && o->jobs)
        st = o->jobs(jobs, left, o->threads, err);
    for (int q = 0; q < left; q++) {
        free(jobs[q].in);
        if (st || !o->jobs)
            free(jobs[q].out);
        else
            s->fam_out[who[q]] = jobs[q].out;
    }
    if (st && s->res->failed_part == SCM_COMPARE_PART_NONE)
        fail(s, SCM_COMPARE_PART_ENUMERATION, 0, -1, st);
    return st;
}

/* The families and configuration files of every K, all or none. */
static scm_status write_prepared(compare_state *s, scm_error *err)
{
    const int nK = s->o->nK;
    const char *paths[2 * SCM_COMPARE_MAX_K], *data[2 * SCM_COMPARE_MAX_K];
    size_t len[2 * SCM_COMPARE_MAX_K];
    int n = 0;
    for (int j = 0; j < nK; j++) {
        if (s->fam_text[j]) {
            paths[n] = s->fam_path[j];
            data[n] = s->fam_text[j];
            len[n++] = strlen(s->fam_text[j]);
        }
        paths[n] = s->cfg_path[j];
        data[n] = s->cfg_text[j];
        len[n++] = strlen(s->cfg_text[j]);
    }
    scm_status st = scm_output_write_many(n, paths, data, len, err);
    return st ? fail(s, SCM_COMPARE_PART_COMPARE, st == SCM_EINVAL, -1, st) : SCM_OK;
}

/* The sweep and report entries of K j, its files written. */
static scm_status do_k(compare_state *s, int j, scm_error *err)
{
    const scm_compare_opts *o = s->o;
    const long K = o->K[j];
    scm_config *c = NULL;
    scm_status st = load_k(s, j, &c, err);
    if (st)
        return st;
    const char *fam_path = o->families[j] ? o->families[j] : s->fam_path[j];
    scm_compare_note(o, K, "K = %ld, M = %ld: %s", K, o->M, s->runsf);
    if ((st = sweep(s, K, fam_path, err)))
        goto out;
    s->res->summaries[j] = scm_compare_read_json(s->sumf);
    if (!s->res->summaries[j]) {
        st = fail(s, SCM_COMPARE_PART_COMPARE, 0, K,
                  scm_error_set(err, SCM_EIO, "cannot read back '%s'", s->sumf));
        goto out;
    }
    st = add_k(s, j, c, fam_path, err);
out:
    scm_config_free(c);
    return st;
}

/* The fraction table of the report: rows k1 (those with runs), unmatched,
 * not converged; columns K. */
static void fractions(compare_state *s, cJSON *report)
{
    const int nK = s->o->nK, nrows = (int)s->nrows_max;
    cJSON *tab = cJSON_AddObjectToObject(report, "fractions");
    cJSON_AddStringToObject(tab, "rows_are",
                            "k1 (matched family, or anti-aligned count without families), "
                            "then unmatched, then not_converged; columns K");
    cJSON *rows = cJSON_AddArrayToObject(tab, "rows");
    cJSON *cnts = cJSON_AddArrayToObject(tab, "count");
    cJSON *frs = cJSON_AddArrayToObject(tab, "fraction");
    cJSON *wis = cJSON_AddArrayToObject(tab, "wilson95");
    for (int r = 0; r < nrows + 2; r++) {
        long any = 0;
        for (int j = 0; j < nK; j++)
            any += s->cnt[r * nK + j];
        if (!any && r < nrows)
            continue;
        char name[32];
        if (r < nrows)
            snprintf(name, sizeof name, "%d", r);
        else
            snprintf(name, sizeof name, "%s", r == nrows ? "unmatched" : "not_converged");
        cJSON_AddItemToArray(rows, cJSON_CreateString(name));
        cJSON *cr = cJSON_CreateArray(), *fr = cJSON_CreateArray(), *wr = cJSON_CreateArray();
        for (int j = 0; j < nK; j++) {
            long k = s->cnt[r * nK + j];
            double lo, hi;
            scm_sweep_wilson(k, s->done[j], &lo, &hi);
            cJSON_AddItemToArray(cr, cJSON_CreateNumber((double)k));
            cJSON_AddItemToArray(fr, cJSON_CreateNumber(s->done[j] ? (double)k / (double)s->done[j] : 0));
            cJSON *w = cJSON_CreateArray();
            cJSON_AddItemToArray(w, cJSON_CreateNumber(lo));
            cJSON_AddItemToArray(w, cJSON_CreateNumber(hi));
            cJSON_AddItemToArray(wr, w);
        }
        cJSON_AddItemToArray(cnts, cr);
        cJSON_AddItemToArray(frs, fr);
        cJSON_AddItemToArray(wis, wr);
    }
}

/* The report object from the per-K parts (which it takes over). */
static void assemble(compare_state *s, cJSON *report)
{
    const scm_compare_opts *o = s->o;
    cJSON_AddStringToObject(report, "command", "compare");
    scm_compare_report_stamp(report); /* scmode_version, status (compare_report.c) */
    cJSON_AddNumberToObject(report, "M", (double)o->M);
    cJSON *kc = cJSON_AddArrayToObject(report, "K");
    for (int j = 0; j < o->nK; j++)
        cJSON_AddItemToArray(kc, cJSON_CreateNumber((double)o->K[j]));
    cJSON_AddNumberToObject(report, "runs", (double)o->runs);
    if (o->n_ansatz > 0)
        cJSON_AddItemToObject(report, "ansatz", cJSON_CreateStringArray(o->ansatz_files,
                                                                         o->n_ansatz));
    fractions(s, report);
    cJSON_AddItemToObject(report, "families", s->fam_arr);
    cJSON_AddItemToObject(report, "families_reached", s->reached_arr);
    cJSON *near_arr = scm_compare_near_rows(s->res->summaries, o->K, o->nK, s->reached_arr);
    if (near_arr)
        cJSON_AddItemToObject(report, "not_converged_near", near_arr);
    cJSON_AddItemToObject(report, "histograms", s->hist_arr);
    cJSON_AddItemToObject(report, "traces", s->trace_arr);
    if (s->trace_integ)
        cJSON_AddItemToObject(report, "traces_integrator", s->trace_integ);
    cJSON_AddItemToObject(report, "files", s->files_arr);
    s->fam_arr = s->reached_arr = s->hist_arr = s->trace_arr = s->files_arr = NULL;
    s->trace_integ = NULL;
}

scm_status scm_compare_run(const scm_compare_opts *o, scm_compare_result *res, scm_error *err)
{
    memset(res, 0, sizeof *res);
    res->failed_K = -1;
    compare_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.res = res;
    if (!o->prefix || o->M < 1 || o->nK < 1 || o->nK > SCM_COMPARE_MAX_K || o->runs < 1 ||
        o->threads < 1 || o->traces < 0 || o->traces > 100 || o->nsets > MAX_SETS ||
        o->n_ansatz < 0 || o->n_ansatz > SCM_COMPARE_MAX_ANSATZ ||
        (o->n_ansatz > 0 && !o->ansatz_files) || o->n_done_jobs < 0 ||
        (o->n_done_jobs > 0 && !o->done_jobs))
        return fail(&s, SCM_COMPARE_PART_COMPARE, 1, -1,
                    scm_error_set(err, SCM_EINVAL, "bad comparison options"));
    res->nK = o->nK;
    for (int j = 0; j < o->nK; j++)
        if (o->K[j] + 1 > s.nrows_max)
            s.nrows_max = o->K[j] + 1;
    cJSON *report = cJSON_CreateObject();
    s.cnt = calloc((size_t)(s.nrows_max + 2) * (size_t)o->nK, sizeof *s.cnt);
    s.done = calloc((size_t)o->nK, sizeof *s.done);
    scm_status st = SCM_OK;
    if (!report || !s.cnt || !s.done) {
        st = fail(&s, SCM_COMPARE_PART_COMPARE, 1, -1,
                  scm_error_set(err, SCM_ENOMEM, "out of memory"));
        goto out;
    }
    s.fam_arr = cJSON_CreateArray();
    s.reached_arr = cJSON_CreateArray();
    s.hist_arr = cJSON_CreateArray();
    s.trace_arr = cJSON_CreateArray();
    s.files_arr = cJSON_CreateArray();
    /* everything that can be refused or computed without a sweep first,
     * for every K; then the families and configurations, all or none;
     * then the sweeps */
    st = precheck(&s, err);
    if (!st && (o->jobs || o->n_done_jobs > 0))
        st = families_ahead(&s, err);
    for (int j = 0; j < o->nK && !st; j++)
        st = prepare_k(&s, j, err);
    if (!st)
        st = write_prepared(&s, err);
    for (int j = 0; j < o->nK && !st; j++)
        st = do_k(&s, j, err);
    if (!st) {
        assemble(&s, report);
        res->report = report;
        report = NULL;
    }
out:
    cJSON_Delete(report);
    cJSON_Delete(s.fam_arr);
    cJSON_Delete(s.reached_arr);
    cJSON_Delete(s.hist_arr);
    cJSON_Delete(s.trace_arr);
    cJSON_Delete(s.files_arr);
    cJSON_Delete(s.trace_integ);
    free(s.cnt);
    free(s.done);
    for (int j = 0; j < SCM_COMPARE_MAX_K; j++) {
        free(s.fam_path[j]);
        free(s.fam_text[j]);
        free(s.cfg_path[j]);
        free(s.cfg_text[j]);
        free(s.fam_out[j]);
    }
    return st;
}

void scm_compare_result_free(scm_compare_result *res)
{
    if (!res)
        return;
    cJSON_Delete(res->report);
    for (int j = 0; j < SCM_COMPARE_MAX_K; j++)
        cJSON_Delete(res->summaries[j]);
    memset(res, 0, sizeof *res);
}
