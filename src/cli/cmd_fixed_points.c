/* cmd_fixed_points.c: `scm fixed-points`: enumerate the fixed points of the
 * flow inside the block-symmetric ansätze (the built-in ones, or files
 * given with --ansatz) at given K and M, print a table and write a JSON
 * result file atomically.  Solutions found in several ansätze (a more
 * symmetric point is also a point of a less symmetric ansatz) are listed
 * once, under the ansatz with the fewest scalars. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "fp_list.h"
#include "commands.h"
#include "scm/fixedpoint.h"
#include "scm/fpsweep.h"
#include "scm/output.h"
#include "scm/stability.h"
#include "scm_version.h"

#define MAX_ANSATZ 64
#define STAB_MAX_K 20 /* --stability: the analysis runs for K <= this */

static cJSON *num_or_null(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

/* Seeds from --seed-from files: the listed points of other `scm
 * fixed-points` results (typically M - 1: continuation in M), each with
 * its ansatz name, k1 and scalars by name.  The names point into docs. */
typedef struct {
    int n, cap, ndocs;
    scm_fp_seed *seed;
    const char **ansatz;
    cJSON *docs[MAX_ANSATZ];
} seed_list;

static void seeds_free(seed_list *L)
{
    for (int i = 0; i < L->n; i++) {
        free((void *)L->seed[i].names);
        free((void *)L->seed[i].values);
    }
    free(L->seed);
    free(L->ansatz);
    for (int i = 0; i < L->ndocs; i++)
        cJSON_Delete(L->docs[i]);
    memset(L, 0, sizeof *L);
}

/* 0, or 2 after naming the problem on stderr. */
static int seeds_load(const char *path, seed_list *L)
{
    if (L->ndocs == MAX_ANSATZ) {
        fprintf(stderr, "scm fixed-points: at most %d --seed-from files\n", MAX_ANSATZ);
        return 2;
    }
    size_t len = 0;
    char *text = cli_read_all(path, &len);
    if (!text) {
        fprintf(stderr, "scm fixed-points: --seed-from: cannot read '%s'\n", path);
        return 2;
    }
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *pts = doc ? cJSON_GetObjectItemCaseSensitive(doc, "fixed_points") : NULL;
    if (!cJSON_IsArray(pts)) {
        fprintf(stderr, "scm fixed-points: --seed-from '%s': not a fixed-points result (no "
                        "\"fixed_points\" array)\n", path);
        cJSON_Delete(doc);
        return 2;
    }
    L->docs[L->ndocs++] = doc;
    int idx = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pts) {
        const cJSON *an = cJSON_GetObjectItemCaseSensitive(p, "ansatz");
        const cJSON *k1 = cJSON_GetObjectItemCaseSensitive(p, "k1");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(p, "scalars");
        const char *bad = !cJSON_IsString(an) ? "ansatz"
                          : !cJSON_IsNumber(k1) || k1->valuedouble != (double)(int)k1->valuedouble
                              ? "k1"
                          : !cJSON_IsObject(sc) ? "scalars" : NULL;
        int n = bad ? 0 : cJSON_GetArraySize(sc);
        const cJSON *v;
        if (!bad)
            cJSON_ArrayForEach(v, sc) if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) bad = "scalars";
        if (bad) {
            fprintf(stderr, "scm fixed-points: --seed-from '%s': fixed_points[%d]: missing or bad "
                            "'%s'\n", path, idx, bad);
            return 2;
        }
        if (L->n == L->cap) {
            int nc = L->cap ? 2 * L->cap : 64;
            scm_fp_seed *ns = realloc(L->seed, sizeof *ns * (size_t)nc);
            if (ns)
                L->seed = ns;
            const char **na = ns ? realloc(L->ansatz, sizeof *na * (size_t)nc) : NULL;
            if (!ns || !na) {
                fprintf(stderr, "scm fixed-points: out of memory reading '%s'\n", path);
                return 1;
            }
            L->ansatz = na;
            L->cap = nc;
        }
        const char **names = malloc(sizeof *names * (size_t)(n ? n : 1));
        double *vals = malloc(sizeof *vals * (size_t)(n ? n : 1));
        if (!names || !vals) {
            free(names);
            free(vals);
            fprintf(stderr, "scm fixed-points: out of memory reading '%s'\n", path);
            return 1;
        }
        int c = 0;
        cJSON_ArrayForEach(v, sc) {
            names[c] = v->string;
            vals[c++] = v->valuedouble;
        }
        L->seed[L->n] = (scm_fp_seed){(int)k1->valuedouble, n, names, vals};
        L->ansatz[L->n++] = an->valuestring;
        idx++;
    }
    return 0;
}

static void fp_usage(FILE *f)
{
    fprintf(f,
            "usage: scm fixed-points --K K --M M [--k1 N] [--ansatz FILE]... [-o OUT.json]\n"
            "\n"
            "Enumerate the fixed points of the population gradient flow (T = I,\n"
            "v = v* = 1) inside block-symmetric ansätze: Newton's method on the\n"
            "block-level residual from many starts, deduplicated, non-PSD solutions\n"
            "rejected, each checked (and, for small K, polished) in the full (Q, R)\n"
            "space.  Without --ansatz the built-in ansätze (ansatz/*.json) are used.\n"
            "\n"
            "  --K K, --M M       numbers of students and teachers\n"
            "  --k1 N             only this k1\n"
            "  --ansatz FILE      an ansatz file (repeatable)\n"
            "  --activation NAME  relu (default), erf or linear\n"
            "  --starts N         random Newton starts per (ansatz, k1) (default 200)\n"
            "  --seed S           seed of the random starts (default 1)\n"
            "  --sweep-passes P   without --k1, each ansatz's k1 instances seed each\n"
            "                     other (scm_fp_sweep_k1), at most P passes (default\n"
            "                     " SCM_STR(SCM_FP_CLI_SWEEP_PASSES) "; 0 or 1: each k1 alone)\n"
            "  --seed-from FILE   Newton starts from the points of another scm\n"
            "                     fixed-points result (repeatable), matched by ansatz\n"
            "                     and k1, scalars by name: continuation from M - 1\n"
            "                     or a neighbouring (K, M); tried after the k1 sweep,\n"
            "                     so they only add points\n"
            "  --deflate N        deflated Newton: a start that finds nothing new is\n"
            "                     solved again with the roots found removed, up to N\n"
            "                     times (default " SCM_STR(SCM_FP_CLI_DEFLATE) "; 0: off)\n"
            "  --polish-max-K N   full-space Newton polish when K <= N (default 24)\n"
            "  --chain-from M0    continuation seeds from every smaller M: the k1 sweep\n"
            "                     at (M0 + K - M, M0), then each M0 < m <= M seeded\n"
            "                     with all points of m - 1 (scm_fp_sweep_k1_chain);\n"
            "                     the list holds every point of the default\n"
            "  --threads T        threads (default: the processors online, at most\n"
            "                     16); the result does not depend on T\n"
            "  --continue-to M1   follow each solution in M (group sizes real) up to M1\n"
            "  --grow-from M0     block level, for large K: every k1 by continuation in M\n"
            "                     from M0 (scm_fp_sweep_grow): the scalars, loss and\n"
            "                     block residual of each point, no full (Q, R) state,\n"
            "                     not classified (K = M = 1000 in about a second)\n"
            "  --probes N         with --grow-from: random starts at N instances at M\n"
            "                     (default M / 100 + 1)\n"
            "  --fixed-k1 N       with --grow-from: also the paths with k1 fixed for\n"
            "                     k1 <= N (default 1: only the proportional paths)\n"
            "  --all              list every solution of every ansatz (no merging)\n"
            "  --max-residual R   exit 1 when a listed point's residual is not below R\n"
            "                     (default 1e-12)\n"
            "  --stability        also the stability verdict of each point (K <= 20):\n"
            "                     scm_stab_analyse with 3 trials, sigma 1e-4,1e-3,1e-2,\n"
            "                     otherwise the defaults of `scm stability`\n"
            "  -o FILE            JSON result file\n"
            "  -q, --quiet        no table\n"
            "\n"
            "exit status: 0 done, 1 a computation failed, 2 bad input.\n");
}


typedef struct {
    int ansatz;          /* index into the ansatz list */
    scm_ansatz_inst *in; /* owned */
    scm_fp_point *pt;    /* into the set */
    scm_fp_structure st;
    int merged_into;     /* -1 or the solution this one duplicates */
    scm_fp_branch br;
    int has_branch;
    int stab_done;       /* 1: stab holds the analysis; -1: it failed (stab_err) */
    scm_stab_result stab;
    char stab_err[520];
} solution;

static cJSON *stab_json(const solution *s, long K, const scm_stab_opts *o)
{
    cJSON *j = cJSON_CreateObject();
    if (s->stab_done == 0) {
        cJSON_AddStringToObject(j, "verdict", "not_run");
        cJSON_AddStringToObject(j, "why", K > STAB_MAX_K ? "K > 20" : "no full state");
        return j;
    }
    if (s->stab_done < 0) {
        cJSON_AddStringToObject(j, "verdict", "error");
        cJSON_AddStringToObject(j, "why", s->stab_err);
        return j;
    }
    const scm_stab_result *r = &s->stab;
    cJSON_AddStringToObject(j, "verdict", scm_verdict_str(r->verdict));
    cJSON_AddStringToObject(j, "hessian_verdict", scm_hverdict_str(r->hverdict));
    cJSON_AddStringToObject(j, "tests_agree",
                            r->agree == 1 ? "yes" : r->agree == 0 ? "no" : "not_comparable");
    cJSON_AddStringToObject(j, "hessian", !r->hessian_done ? "none"
                                          : r->hessian_closed ? "closed_form"
                                                              : "central_differences");
    if (r->hessian_done) {
        cJSON_AddNumberToObject(j, "hessian_negative", r->counts.n_neg);
        cJSON_AddNumberToObject(j, "hessian_zero", r->counts.n_zero);
        cJSON_AddNumberToObject(j, "hessian_positive", r->counts.n_pos);
        cJSON_AddItemToObject(j, "hessian_smallest", num_or_null(r->n_small ? r->eval_small[0] : NAN));
    }
    cJSON_AddNumberToObject(j, "zero_modes_predicted", (double)r->zm.total);
    cJSON_AddItemToObject(j, "jacobian_re_max", r->jacobian_done ? num_or_null(r->jac_re_max)
                                                                 : cJSON_CreateNull());
    cJSON_AddNumberToObject(j, "trials", o->n_trials);
    cJSON_AddNumberToObject(j, "d", (double)r->d);
    cJSON *rows = cJSON_AddArrayToObject(j, "rows");
    for (int i = 0; i < r->n_rows; i++) {
        const scm_stab_row *w = &r->rows[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "sigma", w->sigma);
        cJSON_AddStringToObject(x, "verdict", scm_verdict_str(w->verdict));
        cJSON_AddNumberToObject(x, "dest_same", w->n_same);
        cJSON_AddNumberToObject(x, "dest_global_min", w->n_global);
        cJSON_AddNumberToObject(x, "dest_other", w->n_other);
        cJSON_AddNumberToObject(x, "dest_failed", w->n_failed);
        cJSON_AddItemToObject(x, "other_loss_min", num_or_null(w->other_eps_min));
        cJSON_AddItemToObject(x, "other_loss_max", num_or_null(w->other_eps_max));
        cJSON_AddItemToArray(rows, x);
    }
    return j;
}

static int same_orbit(const solution *a, const solution *b)
{
    double tol = 1e-9;
    return fabs(a->pt->eps - b->pt->eps) <= tol * fmax(1e-3, fabs(a->pt->eps)) &&
           fabs(a->st.trQ - b->st.trQ) <= tol * fmax(1.0, fabs(a->st.trQ)) &&
           fabs(a->st.normR2 - b->st.normR2) <= tol * fmax(1.0, fabs(a->st.normR2));
}

/* Fewest scalars first (the most symmetric description represents a
 * solution found in several ansätze), then by loss. */
static int cmp_sol(const void *pa, const void *pb)
{
    const solution *a = pa, *b = pb;
    if (a->pt->nsc != b->pt->nsc)
        return a->pt->nsc - b->pt->nsc;
    if (a->pt->eps != b->pt->eps)
        return a->pt->eps < b->pt->eps ? -1 : 1;
    return 0;
}

/* The --seed-from points of ansatz a (an array the caller frees; NULL
 * only for no memory). */
static scm_fp_seed *seeds_of(const seed_list *sl, const scm_ansatz *a, int *n)
{
    scm_fp_seed *mine = malloc(sizeof *mine * (size_t)(sl->n ? sl->n : 1));
    *n = 0;
    for (int q = 0; mine && q < sl->n; q++)
        if (strcmp(sl->ansatz[q], scm_ansatz_name(a)) == 0)
            mine[(*n)++] = sl->seed[q];
    return mine;
}

/* One ansatz's k1 sweep, run on its own thread: the ansätze are
 * independent, so while one waits in its sequential parts (the deflated
 * solves) another's parallel parts use the processors. */
typedef struct {
    const scm_ansatz *a;
    int K, M, passes, nmine;
    const scm_activation *act;
    const scm_fp_opts *o;
    scm_fp_seed *mine;
    scm_fp_sweep sw;
    int *tried;
    int chain_from, chain_links; /* chain_from 0: no chain in M */
    scm_status st;
    scm_error err;
    int started;
} sweep_task;

static void *sweep_task_run(void *arg)
{
    sweep_task *t = arg;
    if (t->chain_from > 0)
        t->st = scm_fp_sweep_k1_chain(t->a, t->K - t->M, t->chain_from, t->M, t->act, t->o,
                                      t->passes, t->mine, t->nmine, &t->sw, &t->tried,
                                      &t->chain_links, &t->err);
    else
        t->st = scm_fp_sweep_k1_seeded(t->a, t->K, t->M, t->act, t->o, t->passes, t->mine,
                                       t->nmine, &t->sw, &t->tried, &t->err);
    return NULL;
}

/* --grow-from M0: every k1 at (K, M) by scm_fp_sweep_grow (continuation
 * in M from M0, probes, the closure in k1), block level: the ansatz
 * scalars, loss, block residual and Gram eigenvalue of each point, no
 * full (Q, R) state, so it serves K = M = 1000 in about a second.  An
 * ansatz that does not apply at both M0 and M is skipped (an error when
 * it was named with --ansatz).  Returns the exit status. */
static int grow_points(scm_ansatz **ans, int nans, int named, long K, long M, long M0,
                       long probes, long fixed, const scm_activation *act,
                       const scm_fp_opts *o, const char *out, int quiet)
{
    cJSON *root = cJSON_CreateObject(), *arr = NULL, *srch = NULL;
    if (!root)
        return 1;
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "fixed-points");
    cJSON_AddStringToObject(root, "status", "ok");
    cJSON_AddStringToObject(root, "level", "block");
    cJSON_AddNumberToObject(root, "K", (double)K);
    cJSON_AddNumberToObject(root, "M", (double)M);
    cJSON_AddStringToObject(root, "activation", act->name);
    cJSON_AddStringToObject(root, "teacher", "T = I, v = v* = 1");
    cJSON_AddNumberToObject(root, "grow_from", (double)M0);
    cJSON_AddNumberToObject(root, "probes", (double)(probes < 0 ? M / 100 + 1 : probes));
    cJSON_AddNumberToObject(root, "fixed_k1", (double)fixed);
    srch = cJSON_AddArrayToObject(root, "searches");
    arr = cJSON_AddArrayToObject(root, "fixed_points");
    int rc = 0, total = 0, used = 0;
    for (int a = 0; a < nans && !rc; a++) {
        int lo, hi;
        if (scm_ansatz_applies(ans[a], (int)(M0 + K - M), (int)M0, &lo, &hi) != 1 ||
            scm_ansatz_applies(ans[a], (int)K, (int)M, &lo, &hi) != 1) {
            if (named) {
                fprintf(stderr, "scm fixed-points: ansatz '%s' does not apply at M0 = %ld or "
                                "M = %ld with K - M = %ld\n",
                        scm_ansatz_name(ans[a]), M0, M, K - M);
                rc = 2;
            }
            continue;
        }
        scm_fp_sweep sw;
        scm_fp_grow_stats gs;
        scm_error err;
        int np = (int)(probes < 0 ? M / 100 + 1 : probes);
        if (np > hi - lo + 1)
            np = hi - lo + 1;
        scm_status st = scm_fp_sweep_grow(ans[a], (int)(K - M), (int)M0, (int)M, np, (int)fixed,
                                          act, o, &sw, &gs, &err);
        if (st) {
            fprintf(stderr, "scm fixed-points: ansatz '%s': %s\n", scm_ansatz_name(ans[a]),
                    err.msg);
            rc = st == SCM_EINVAL ? 2 : 1;
            break;
        }
        used++;
        int npts = 0;
        for (int i = 0; i < sw.n; i++) {
            const scm_fp_set *set = &sw.set[i];
            double best = INFINITY;
            for (int p = 0; p < set->n; p++) {
                const scm_fp_point *pt = &set->pt[p];
                cJSON *j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "ansatz", scm_ansatz_name(ans[a]));
                cJSON_AddNumberToObject(j, "k1", sw.k1_min + i);
                cJSON_AddItemToObject(j, "loss", num_or_null(pt->eps));
                cJSON_AddItemToObject(j, "residual_block", num_or_null(pt->res_block));
                cJSON_AddItemToObject(j, "gram_min_eigenvalue", num_or_null(pt->gram_min));
                cJSON *sc = cJSON_AddObjectToObject(j, "scalars");
                for (int c = 0; c < pt->nsc; c++)
                    cJSON_AddNumberToObject(sc, scm_ansatz_inst_scalar_name(sw.inst[i], c),
                                            pt->x[c]);
                cJSON_AddItemToArray(arr, j);
                if (pt->eps > 1e-9 && pt->eps < best)
                    best = pt->eps;
            }
            npts += set->n;
            if (!quiet && set->n)
                printf("%-12s k1 %-6d %4d points, lowest positive loss %.12g\n",
                       scm_ansatz_name(ans[a]), sw.k1_min + i, set->n, best);
        }
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "ansatz", scm_ansatz_name(ans[a]));
        cJSON_AddNumberToObject(r, "k1_min", sw.k1_min);
        cJSON_AddNumberToObject(r, "k1_max", sw.k1_max);
        cJSON_AddNumberToObject(r, "points", npts);
        cJSON_AddNumberToObject(r, "base_solutions", gs.base);
        cJSON_AddNumberToObject(r, "paths_reached", gs.reached);
        cJSON_AddNumberToObject(r, "anchors", gs.anchors);
        cJSON_AddNumberToObject(r, "probes", np);
        cJSON_AddNumberToObject(r, "found_by_probes", gs.probed);
        cJSON_AddItemToArray(srch, r);
        total += npts;
        scm_fp_sweep_free(&sw);
    }
    if (!rc && used == 0) {
        fprintf(stderr, "scm fixed-points: no ansatz applies at both M0 = %ld and M = %ld with "
                        "K - M = %ld\n", M0, M, K - M);
        rc = 2;
    }
    if (!rc && !quiet)
        printf("%d fixed points at K = %ld, M = %ld, block level (continuation in M from "
               "M0 = %ld; not classified, not polished, no full-space check)\n",
               total, K, M, M0);
    if (!rc && out) {
        scm_error err;
        if (scm_output_write_json(out, root, 0, &err)) {
            fprintf(stderr, "scm fixed-points: %s\n", err.msg);
            rc = 1;
        }
    }
    cJSON_Delete(root);
    return rc;
}

static int fixed_points(int argc, char **argv, seed_list *sl)
{
    long K = -1, M = -1, k1 = -1, starts = 200, seed = 1, polish = 24, cont = -1;
    long deflate = SCM_FP_CLI_DEFLATE, sweep_passes = SCM_FP_CLI_SWEEP_PASSES;
    long threads = cli_cpu_count(), chain_from = 0, grow_from = 0, probes = -1, fixed_k1 = 1;
    double max_res = 1e-12;
    int all = 0, quiet = 0, na = 0, stability = 0;
    const char *files[MAX_ANSATZ], *out = NULL, *actname = "relu";
    scm_fp_seed *mine = NULL;
    int *tried = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fp_usage(stdout);
            return 0;
        } else if (strcmp(a, "--all") == 0) {
            all = 1;
            takes = 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
            takes = 0;
        } else if (strcmp(a, "--stability") == 0) {
            stability = 1;
            takes = 0;
        }
        if (takes && !v) {
            fprintf(stderr, "scm fixed-points: unknown option or missing value: '%s'\n", a);
            fp_usage(stderr);
            return 2;
        }
        if (!takes)
            continue;
        int bad = 0;
        if (strcmp(a, "--K") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 1, 100000, &K);
        else if (strcmp(a, "--M") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 1, 100000, &M);
        else if (strcmp(a, "--k1") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 0, 100000, &k1);
        else if (strcmp(a, "--starts") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 0, 1000000, &starts);
        else if (strcmp(a, "--seed") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 0, 2147483647L, &seed);
        else if (strcmp(a, "--sweep-passes") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 0, 1000, &sweep_passes);
        else if (strcmp(a, "--deflate") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 0, 1000, &deflate);
        else if (strcmp(a, "--polish-max-K") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 0, 100000, &polish);
        else if (strcmp(a, "--threads") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 1, 64, &threads);
        else if (strcmp(a, "--chain-from") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 1, 100000, &chain_from);
        else if (strcmp(a, "--grow-from") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 1, 100000, &grow_from);
        else if (strcmp(a, "--probes") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 0, 100000, &probes);
        else if (strcmp(a, "--fixed-k1") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 1, 100000, &fixed_k1);
        else if (strcmp(a, "--continue-to") == 0)
            bad = cli_opt_long("scm fixed-points", a, v, 1, 1000000, &cont);
        else if (strcmp(a, "--max-residual") == 0) {
            char *end;
            max_res = strtod(v, &end);
            if (*v == '\0' || *end != '\0' || !(max_res > 0.0 && max_res < 1.0)) {
                fprintf(stderr, "scm fixed-points: --max-residual needs a number in (0, 1), "
                                "got '%s'\n", v);
                bad = -1;
            }
        }
        else if (strcmp(a, "--activation") == 0)
            actname = v;
        else if (strcmp(a, "-o") == 0)
            out = v;
        else if (strcmp(a, "--seed-from") == 0) {
            int r = seeds_load(v, sl);
            if (r)
                return r;
        } else if (strcmp(a, "--ansatz") == 0) {
            if (na == MAX_ANSATZ) {
                fprintf(stderr, "scm fixed-points: at most %d --ansatz files\n", MAX_ANSATZ);
                return 2;
            }
            files[na++] = v;
        } else {
            fprintf(stderr, "scm fixed-points: unknown option '%s'\n", a);
            fp_usage(stderr);
            return 2;
        }
        if (bad)
            return 2;
        i++;
    }
    if (K < 0 || M < 0) {
        fprintf(stderr, "scm fixed-points: --K and --M are required\n");
        fp_usage(stderr);
        return 2;
    }
    const scm_activation *act = scm_activation_find(actname);
    if (!act) {
        fprintf(stderr, "scm fixed-points: unknown activation '%s' (relu, erf, linear)\n",
                actname);
        return 2;
    }
    if (chain_from > 0 && chain_from >= M) {
        fprintf(stderr, "scm fixed-points: --chain-from must be below M = %ld, got %ld\n", M,
                chain_from);
        return 2;
    }
    if (chain_from > 0 && (k1 >= 0 || sweep_passes < 2)) {
        fprintf(stderr, "scm fixed-points: --chain-from needs the k1 sweep (no --k1, "
                        "--sweep-passes >= 2)\n");
        return 2;
    }
    if (grow_from > 0 && (grow_from > M || k1 >= 0 || chain_from > 0 || cont >= 0 || all ||
                          stability || sl->n > 0)) {
        fprintf(stderr, "scm fixed-points: --grow-from M0 needs M0 <= M = %ld and goes without "
                        "--k1, --chain-from, --continue-to, --all, --stability, --seed-from\n",
                M);
        return 2;
    }
    if (grow_from == 0 && (probes >= 0 || fixed_k1 != 1)) {
        fprintf(stderr, "scm fixed-points: --probes and --fixed-k1 go with --grow-from\n");
        return 2;
    }
    if (cont >= 0 && cont <= M) {
        fprintf(stderr, "scm fixed-points: --continue-to must exceed M = %ld\n", M);
        return 2;
    }
    gsl_set_error_handler_off();

    scm_ansatz *ans[MAX_ANSATZ];
    int nans = 0, rc = 0;
    scm_error err;
    if (na > 0) {
        for (int i = 0; i < na; i++) {
            ans[nans] = scm_ansatz_load(files[i], &err);
            if (!ans[nans]) {
                fprintf(stderr, "scm fixed-points: %s\n", err.msg);
                rc = 2;
                goto cleanup;
            }
            nans++;
        }
    } else {
        for (int i = 0; i < scm_ansatz_builtin_count() && nans < MAX_ANSATZ; i++) {
            const char *file, *text = scm_ansatz_builtin_text(i, &file);
            ans[nans] = scm_ansatz_parse(text, strlen(text), file, &err);
            if (!ans[nans]) {
                fprintf(stderr, "scm fixed-points: built-in %s\n", err.msg);
                rc = 1;
                goto cleanup;
            }
            nans++;
        }
    }

    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = (int)starts;
    o.seed = (unsigned long)seed;
    o.polish_max_K = (int)polish;
    o.deflate = (int)deflate;
    o.threads = (int)threads;
    /* polish after merging: one representative per family of permuted copies */
    o.polish_defer = 1;
    if (grow_from > 0) {
        o.full_max_K = 0; /* block level */
        rc = grow_points(ans, nans, na > 0, K, M, grow_from, probes, fixed_k1, act, &o, out,
                         quiet);
        goto cleanup;
    }
    scm_fp_set set;
    scm_fp_set_init(&set);
    scm_fp_sweep sw;
    memset(&sw, 0, sizeof sw);
    int nsol = 0, cap = 0, applied = 0;
    solution *sol = NULL;
    cJSON *runs = cJSON_CreateArray();
    /* the k1 sweeps of all applicable ansätze, concurrently; their results
     * are taken below in ansatz order, as if run one after another */
    sweep_task task[MAX_ANSATZ];
    pthread_t task_th[MAX_ANSATZ];
    memset(task, 0, sizeof task);
    for (int a = 0; a < nans; a++) {
        int lo, hi;
        if (k1 >= 0 || sweep_passes < 2 ||
            scm_ansatz_applies(ans[a], (int)K, (int)M, &lo, &hi) != 1 || hi <= lo)
            continue;
        task[a].a = ans[a];
        task[a].K = (int)K;
        task[a].M = (int)M;
        task[a].passes = (int)sweep_passes;
        task[a].act = act;
        task[a].o = &o;
        task[a].chain_from = (int)chain_from;
        if (!(task[a].mine = seeds_of(sl, ans[a], &task[a].nmine))) {
            task[a].st = scm_error_set(&task[a].err, SCM_ENOMEM, "out of memory");
            continue;
        }
        task[a].started = 1;
        if (pthread_create(&task_th[a], NULL, sweep_task_run, &task[a]) != 0) {
            task[a].started = 0;
            sweep_task_run(&task[a]);
        }
    }
    for (int a = 0; a < nans; a++)
        if (task[a].started)
            pthread_join(task_th[a], NULL);
    for (int a = 0; a < nans; a++) {
        int lo, hi, ap = scm_ansatz_applies(ans[a], (int)K, (int)M, &lo, &hi);
        if (ap < 0) {
            fprintf(stderr, "scm fixed-points: ansatz '%s': cannot evaluate its conditions\n",
                    scm_ansatz_name(ans[a]));
            rc = 2;
            goto cleanup_set;
        }
        if (ap == 0) {
            if (na > 0) {
                fprintf(stderr,
                        "scm fixed-points: ansatz '%s' does not apply at K = %ld, M = %ld (its "
                        "\"require\" conditions fail)\n",
                        scm_ansatz_name(ans[a]), K, M);
                rc = 2;
                goto cleanup_set;
            }
            continue;
        }
        /* every k1: the k1 sweep, each instance seeded with its neighbours'
         * solutions (fpsweep.h) */
        int use_sweep = k1 < 0 && sweep_passes >= 2 && hi > lo;
        /* the --seed-from points of this ansatz */
        int nmine = 0;
        free(mine);
        if (!(mine = seeds_of(sl, ans[a], &nmine))) {
            fprintf(stderr, "scm fixed-points: out of memory\n");
            rc = 1;
            goto cleanup_set;
        }
        free(tried);
        tried = NULL;
        if (use_sweep) {
            if (task[a].st) {
                fprintf(stderr, "scm fixed-points: %s\n", task[a].err.msg);
                rc = 1;
                goto cleanup_set;
            }
            /* take the sweep out of its task */
            scm_fp_sweep_free(&sw);
            sw = task[a].sw;
            tried = task[a].tried;
            memset(&task[a].sw, 0, sizeof task[a].sw);
            task[a].tried = NULL;
        }
        for (int kk = lo; kk <= hi; kk++) {
            if (k1 >= 0 && kk != k1)
                continue;
            scm_ansatz_inst *in;
            scm_fp_set one;
            int seeds = 0, nothing_new, cseeds = 0;
            if (use_sweep) {
                /* take the instance and its solutions out of the sweep */
                in = sw.inst[kk - lo];
                sw.inst[kk - lo] = NULL;
                one = sw.set[kk - lo];
                scm_fp_set_init(&sw.set[kk - lo]);
                seeds = sw.seeds[kk - lo];
                nothing_new = sw.nothing_new[kk - lo];
                cseeds = tried ? tried[kk - lo] : 0;
            } else {
                in = scm_ansatz_instantiate(ans[a], (double)K, (double)M, kk, &err);
                if (!in) {
                    fprintf(stderr, "scm fixed-points: %s\n", err.msg);
                    rc = 2;
                    goto cleanup_set;
                }
                scm_fp_set_init(&one);
                double *ext = NULL;
                if (scm_fp_seed_starts(mine, nmine, in, kk, &ext, &cseeds)) {
                    fprintf(stderr, "scm fixed-points: out of memory\n");
                    scm_ansatz_inst_free(in);
                    rc = 1;
                    goto cleanup_set;
                }
                scm_status est = scm_fp_enumerate(ans[a], in, act, &o, ext, cseeds, &one, &err);
                free(ext);
                if (est) {
                    fprintf(stderr, "scm fixed-points: %s\n", err.msg);
                    scm_fp_set_free(&one);
                    scm_ansatz_inst_free(in);
                    rc = 1;
                    goto cleanup_set;
                }
                nothing_new = one.n_starts - one.n;
            }
            applied++;
            int first = set.n;
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "ansatz", scm_ansatz_name(ans[a]));
            cJSON_AddNumberToObject(r, "k1", kk);
            cJSON_AddNumberToObject(r, "starts", one.n_starts);
            cJSON_AddNumberToObject(r, "converged", one.n_converged);
            cJSON_AddNumberToObject(r, "no_progress_singular", one.n_noprog);
            cJSON_AddNumberToObject(r, "max_iterations", one.n_maxiter);
            cJSON_AddNumberToObject(r, "left_domain", one.n_domain);
            cJSON_AddNumberToObject(r, "rejected_not_psd", one.n_notpsd);
            cJSON_AddNumberToObject(r, "distinct", one.n);
            cJSON_AddNumberToObject(r, "neighbour_seeds", seeds);
            cJSON_AddNumberToObject(r, "continuation_seeds", cseeds);
            if (chain_from > 0)
                cJSON_AddNumberToObject(r, "chain_links", use_sweep ? task[a].chain_links : 0);
            cJSON_AddNumberToObject(r, "found_nothing_new", nothing_new);
            cJSON_AddNumberToObject(r, "deflated_solves", one.n_deflated);
            cJSON_AddNumberToObject(r, "found_by_deflation", one.n_deflated_new);
            cJSON_AddItemToArray(runs, r);
            /* move the points into the common set */
            for (int p = 0; p < one.n; p++) {
                if (set.n == set.cap) {
                    int nc = set.cap ? 2 * set.cap : 64;
                    scm_fp_point *np = realloc(set.pt, sizeof *np * (size_t)nc);
                    if (!np) {
                        fprintf(stderr, "scm fixed-points: out of memory\n");
                        rc = 1;
                        scm_fp_set_free(&one);
                        scm_ansatz_inst_free(in);
                        goto cleanup_set;
                    }
                    set.pt = np;
                    set.cap = nc;
                }
                set.pt[set.n++] = one.pt[p];
            }
            free(one.pt);
            for (int p = first; p < set.n; p++) {
                if (nsol == cap) {
                    cap = cap ? 2 * cap : 64;
                    solution *ns = realloc(sol, sizeof *ns * (size_t)cap);
                    if (!ns) {
                        fprintf(stderr, "scm fixed-points: out of memory\n");
                        rc = 1;
                        scm_ansatz_inst_free(in);
                        goto cleanup_set;
                    }
                    sol = ns;
                }
                memset(&sol[nsol], 0, sizeof sol[nsol]);
                sol[nsol].ansatz = a;
                sol[nsol].in = p == first ? in : NULL; /* the first owns it */
                sol[nsol].merged_into = -1;
                nsol++;
            }
            if (set.n == first)
                scm_ansatz_inst_free(in);
            else
                for (int p = first + 1; p < set.n; p++)
                    sol[nsol - (set.n - p)].in = sol[nsol - (set.n - first)].in;
        }
        scm_fp_sweep_free(&sw);
    }
    if (applied == 0) {
        fprintf(stderr, "scm fixed-points: no ansatz applies at K = %ld, M = %ld%s\n", K, M,
                k1 >= 0 ? " with this k1" : "");
        rc = 2;
        goto cleanup_set;
    }
    for (int s = 0; s < nsol; s++) {
        sol[s].pt = &set.pt[s];
        scm_fp_classify(sol[s].in, sol[s].pt->x, &sol[s].st);
    }
    /* ownership of instances: remember which entry frees which */
    int *owner = calloc((size_t)nsol + 1, sizeof *owner);
    for (int s = 0; s < nsol; s++)
        owner[s] = s == 0 || sol[s].in != sol[s - 1].in;
    scm_ansatz_inst **owned = calloc((size_t)nsol + 1, sizeof *owned);
    for (int s = 0; s < nsol; s++)
        owned[s] = owner[s] ? sol[s].in : NULL;
    qsort(sol, (size_t)nsol, sizeof *sol, cmp_sol);
    if (!all)
        for (int s = 0; s < nsol; s++)
            for (int t = 0; t < s && sol[s].merged_into < 0; t++)
                if (sol[t].merged_into < 0 && same_orbit(&sol[s], &sol[t]))
                    sol[s].merged_into = t;
    /* the polish: one representative per family, in parallel */
    scm_fp_point **reps = malloc(sizeof *reps * ((size_t)nsol + 1));
    int nreps = 0;
    for (int s = 0; reps && s < nsol; s++)
        if (sol[s].merged_into < 0)
            reps[nreps++] = sol[s].pt;
    if (!reps || scm_fp_points_polish(reps, nreps, act, &o, &err) == SCM_ENOMEM) {
        fprintf(stderr, "scm fixed-points: %s\n", reps ? err.msg : "out of memory");
        rc = 1;
    }
    free(reps);
    /* display order: by loss (insertion sort; the lists are short) */
    int *order = malloc(sizeof *order * ((size_t)nsol + 1));
    if (!order) {
        fprintf(stderr, "scm fixed-points: out of memory\n");
        rc = 1;
        nsol = 0;
    }
    for (int s = 0; s < nsol; s++) {
        int j = s;
        while (j > 0 && sol[order[j - 1]].pt->eps > sol[s].pt->eps) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = s;
    }
    /* continuation */
    if (cont > 0)
        for (int s = 0; s < nsol; s++) {
            if (sol[s].merged_into >= 0)
                continue;
            scm_error ce;
            if (scm_fp_continue(ans[sol[s].ansatz], (double)(K - M), sol[s].pt->k1, (double)M,
                                sol[s].pt->x, (double)cont, 0.0, act, &o, &sol[s].br, &ce) ==
                SCM_OK)
                sol[s].has_branch = 1;
        }

    /* stability of each listed point */
    scm_stab_opts so;
    /* the same as `scm stability --trials 3 --sigma 1e-4,1e-3,1e-2`, so that
     * a verdict can be reproduced with `scm stability --point` */
    scm_stab_opts_three_sigma(&so);
    if (stability && K <= STAB_MAX_K) {
        scm_model *sm = scm_model_alloc((int)K, (int)M, act, NULL, NULL, NULL, &err);
        if (!sm) {
            fprintf(stderr, "scm fixed-points: %s\n", err.msg);
            rc = 1;
        }
        for (int s = 0; sm && s < nsol; s++) {
            if (sol[s].merged_into >= 0 || !sol[s].pt->Q)
                continue;
            scm_error se;
            if (scm_stab_analyse(sm, sol[s].pt->Q, sol[s].pt->R, &so, &sol[s].stab, &se)) {
                sol[s].stab_done = -1;
                snprintf(sol[s].stab_err, sizeof sol[s].stab_err, "%s", se.msg);
            } else {
                sol[s].stab_done = 1;
            }
        }
        scm_model_free(sm);
    }

    int bad_res = 0;
    if (!quiet) {
        printf("scm fixed-points: K = %ld, M = %ld, %s, T = I, v = v* = 1\n", K, M, act->name);
        printf("%-12s %4s %5s %5s %5s  %-18s %-9s %-9s %-9s %-9s  %s%s\n", "ansatz", "k1", "anti",
               "align", "other", "loss", "res_blk", "res_full", "res_pol", "gram_min",
               stability ? "verdict    " : "", "scalars");
    }
    int shown = 0;
    for (int si = 0; si < nsol; si++) {
        int s = order[si];
        if (sol[s].merged_into >= 0)
            continue;
        scm_fp_point *p = sol[s].pt;
        double r = p->polished ? p->res_polish : p->full ? p->res_full : p->res_block;
        if (!(r < max_res))
            bad_res++;
        shown++;
        if (quiet)
            continue;
        printf("%-12s %4g %5g %5g %5g  %-18.12g %-9.2e %-9.2e %-9.2e %-9.2e ",
               scm_ansatz_name(ans[sol[s].ansatz]), p->k1, sol[s].st.n_anti, sol[s].st.n_aligned,
               sol[s].st.n_other, p->eps, p->res_block, p->res_full, p->res_polish, p->gram_min);
        if (stability)
            printf(" %-10s", sol[s].stab_done > 0 ? scm_verdict_str(sol[s].stab.verdict)
                             : sol[s].stab_done < 0 ? "error"
                                                    : "-");
        for (int c = 0; c < p->nsc; c++)
            printf(" %s=%.6g", scm_ansatz_inst_scalar_name(sol[s].in, c), p->x[c]);
        printf("\n");
        if (p->full && p->inv_dev > 1e-12)
            printf("  warning: the ansatz is not invariant under the flow here (defect %.3g)\n",
                   p->inv_dev);
        if (sol[s].has_branch && sol[s].br.ended_early)
            printf("  continuation: ends at M = %.6g: %s\n", sol[s].br.M_last, sol[s].br.why);
        else if (sol[s].has_branch)
            printf("  continuation: reached M = %ld, loss there %.12g\n", cont,
                   sol[s].br.eps[sol[s].br.n - 1]);
    }
    if (!quiet)
        printf("%d distinct fixed points (%d solutions before merging)\n", shown, nsol);
    if (!quiet && stability)
        printf("verdict: scm_stab_analyse, %d trials per sigma 1e-4, 1e-3, 1e-2, d = K + M "
               "(docs/stability.md)%s\n",
               so.n_trials, K > STAB_MAX_K ? "; not run: K > 20" : "");

    /* The result holds Q and R of every listed point, and the JSON tree
     * takes about 10 times the file's size (K = M = 32: a 108 MB file,
     * 1.1 GB; K = M = 100 took all 23 GB of a machine and was killed):
     * refuse what the free memory cannot hold rather than be killed. */
    int out_refused = 0;
    if (out) {
        double numbers = 0.0;
        int n_full = 0;
        for (int s = 0; s < nsol; s++)
            if (sol[s].merged_into < 0 && sol[s].pt->Q) {
                numbers += (double)K * (double)K + (double)K * (double)M;
                n_full++;
            }
        double need = 300.0 * numbers, have = -1.0;
        long pages = sysconf(_SC_AVPHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
        if (pages > 0 && psize > 0)
            have = (double)pages * (double)psize;
        if (have > 0.0 && need > 0.8 * have) {
            fprintf(stderr,
                    "scm fixed-points: %s not written: it would hold Q and R of %d points at "
                    "K = %ld, M = %ld (%.3g numbers, about %.1f GB in memory while it is "
                    "written), more than the %.1f GB free here; use --k1 N for one k1, or the "
                    "block-level continuation in M (scm_fp_sweep_grow, docs/fixed-points.md)\n",
                    out, n_full, K, M, numbers, need / 1e9, have / 1e9);
            rc = 1;
            out_refused = 1;
        }
    }
    if (out && !out_refused) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
        cJSON_AddStringToObject(root, "command", "fixed-points");
        cJSON_AddStringToObject(root, "status", bad_res ? "residual_above_1e-12" : "ok");
        cJSON_AddNumberToObject(root, "K", (double)K);
        cJSON_AddNumberToObject(root, "M", (double)M);
        cJSON_AddStringToObject(root, "activation", act->name);
        cJSON_AddStringToObject(root, "teacher", "T = I, v = v* = 1");
        if (chain_from > 0)
            cJSON_AddNumberToObject(root, "chain_from", (double)chain_from);
        cJSON_AddItemToObject(root, "searches", runs);
        runs = NULL;
        cJSON *arr = cJSON_AddArrayToObject(root, "fixed_points");
        for (int si = 0; si < nsol; si++) {
            int s = order[si];
            if (sol[s].merged_into >= 0)
                continue;
            scm_fp_point *p = sol[s].pt;
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "ansatz", scm_ansatz_name(ans[sol[s].ansatz]));
            cJSON_AddNumberToObject(j, "k1", p->k1);
            cJSON *st = cJSON_AddObjectToObject(j, "structure");
            cJSON_AddNumberToObject(st, "anti", sol[s].st.n_anti);
            cJSON_AddNumberToObject(st, "aligned", sol[s].st.n_aligned);
            cJSON_AddNumberToObject(st, "other", sol[s].st.n_other);
            cJSON_AddItemToObject(j, "loss", num_or_null(p->eps));
            cJSON_AddItemToObject(j, "residual_block", num_or_null(p->res_block));
            cJSON_AddItemToObject(j, "residual_full", num_or_null(p->res_full));
            cJSON_AddItemToObject(j, "invariance_defect", num_or_null(p->inv_dev));
            cJSON_AddItemToObject(j, "block_vs_full", num_or_null(p->block_vs_full));
            cJSON_AddBoolToObject(j, "polished", p->polished);
            cJSON_AddItemToObject(j, "residual_polished", num_or_null(p->res_polish));
            cJSON_AddItemToObject(j, "loss_polished", num_or_null(p->eps_polish));
            cJSON_AddItemToObject(j, "polish_shift", num_or_null(p->polish_shift));
            cJSON_AddItemToObject(j, "gram_min_eigenvalue", num_or_null(p->gram_min));
            cJSON_AddItemToObject(j, "jacobian_sv_min", num_or_null(p->jac_smin));
            cJSON_AddItemToObject(j, "jacobian_sv_max", num_or_null(p->jac_smax));
            cJSON_AddNumberToObject(j, "hits", p->hits);
            int dups = 0;
            for (int t = 0; t < nsol; t++)
                dups += sol[t].merged_into == s;
            cJSON_AddNumberToObject(j, "also_found_in_other_ansatze", dups);
            cJSON *sc = cJSON_AddObjectToObject(j, "scalars");
            for (int c = 0; c < p->nsc; c++)
                cJSON_AddNumberToObject(sc, scm_ansatz_inst_scalar_name(sol[s].in, c), p->x[c]);
            if (p->Q) {
                cJSON_AddItemToObject(j, "Q", scm_output_matrix(p->Q, (int)K, (int)K));
                cJSON_AddItemToObject(j, "R", scm_output_matrix(p->R, (int)K, (int)M));
            } else {
                cJSON_AddNullToObject(j, "Q");
                cJSON_AddNullToObject(j, "R");
            }
            if (stability)
                cJSON_AddItemToObject(j, "stability", stab_json(&sol[s], K, &so));
            if (sol[s].has_branch) {
                scm_fp_branch *b = &sol[s].br;
                cJSON *c = cJSON_AddObjectToObject(j, "continuation");
                cJSON_AddItemToObject(c, "M", scm_output_vector(b->M, b->n));
                cJSON_AddItemToObject(c, "loss", scm_output_vector(b->eps, b->n));
                cJSON_AddItemToObject(c, "residual", scm_output_vector(b->res, b->n));
                cJSON_AddBoolToObject(c, "ended_early", b->ended_early);
                cJSON_AddNumberToObject(c, "M_last", b->M_last);
                if (b->ended_early)
                    cJSON_AddStringToObject(c, "why", b->why);
            }
            cJSON_AddItemToArray(arr, j);
        }
        if (scm_output_write_json(out, root, 0, &err)) {
            fprintf(stderr, "scm fixed-points: %s\n", err.msg);
            rc = 1;
        }
        cJSON_Delete(root);
    }
    if (bad_res && !rc) {
        fprintf(stderr, "scm fixed-points: %d fixed point(s) with a residual above %g\n",
                bad_res, max_res);
        rc = 1;
    }
    for (int s = 0; s < nsol; s++)
        scm_fp_branch_free(&sol[s].br);
    for (int s = 0; s < nsol; s++)
        scm_ansatz_inst_free(owned[s]);
    free(owned);
    free(owner);
    free(order);
    free(sol);
    sol = NULL;
cleanup_set:
    if (sol) {
        /* error path before ownership was recorded: free distinct instances */
        for (int s = 0; s < nsol; s++)
            if (s == 0 || sol[s].in != sol[s - 1].in)
                scm_ansatz_inst_free(sol[s].in);
        free(sol);
    }
    cJSON_Delete(runs);
    for (int a = 0; a < nans; a++) {
        scm_fp_sweep_free(&task[a].sw);
        free(task[a].tried);
        free(task[a].mine);
    }
    scm_fp_sweep_free(&sw);
    scm_fp_set_free(&set);
    free(mine);
    free(tried);
cleanup:
    for (int i = 0; i < nans; i++)
        scm_ansatz_free(ans[i]);
    return rc;
}

int scm_cmd_fixed_points(int argc, char **argv)
{
    seed_list sl;
    memset(&sl, 0, sizeof sl);
    int rc = fixed_points(argc, argv, &sl);
    seeds_free(&sl);
    return rc;
}
