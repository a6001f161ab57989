/* gen_plateau_table.c: the generator of data/plateau_table.{csv,json}
 * (run by scripts/plateau_table.sh).  ReLU, T = I, v = v* = 1.
 *
 * For K - M = 0, 1, 2 and M = Mmin..Mmax: every built-in ansatz that
 * applies, every k1, enumerated by scm_fp_enumerate from --starts random
 * starts plus the listed solutions at M - 1 (same ansatz, k1 and k1 - 1,
 * mapped by scalar name: continuation seeds).  Solutions found in several ansätze or
 * several k1 (the k1 and K - k1 instances of the k1 ansatz are the same
 * ansatz with the groups swapped) are merged by (loss, tr Q, ||R||_F^2).
 *
 * Rows: the *specialised* fixed points only, i.e. those where every paired
 * student is anti-aligned or aligned with its own teacher (n_other = K - M:
 * only the extra students are "other").  The family is n_anti, the number
 * of anti-aligned students (not the ansatz's k1 label).  Unspecialised
 * critical points (a paired group with diag = off, e.g. the collapsed
 * manifold at eps = 1.64718125638 for K = M = 7 where all students are
 * parallel, a continuum by the positive homogeneity of ReLU) are counted
 * per (K, M) in the JSON but not listed.  Each row is classified:
 *   global_min                loss < 1e-12
 *   saddle                    a positive eigenvalue (> 1e-6) of the block
 *                             Jacobian, or of the full Jacobian
 *   min_candidate             no positive eigenvalue of the full Jacobian
 *                             of (F_Q, F_R) (dense for K <= --stab-max-K,
 *                             else its symmetric spectrum, symstab.h)
 *   (block Jacobian not finite: parallel ReLU neurons, mostly the extra
 *    students at K = M + 2, where the (Q, R) Jacobian diverges; the class
 *    is then that of the weight-space Hessian in its parallel limit,
 *    scm_symstab_verdict: saddle, min_candidate or
 *   degenerate                PSD Hessian with zeros no symmetry forces (a
 *                             continuum of fixed points): at best a
 *                             non-strict minimum)
 *   unclassified              the full Jacobian's spectrum failed (dense
 *                             or symmetric; none in the committed tables)
 * Residual: max |F_Q|, |F_R| of the full flow at the ansatz point
 * ("full"), after a full-space Newton polish when K <= --polish-max-K and
 * the residual was >= 1e-13 ("full_polished").  Points whose residual stays
 * >= 1e-12 (Newton stalls on some degenerate saddles) are not listed but
 * counted per (K, M) as unconverged_omitted.
 *
 * Each K - M is independent (seeds come from M - 1 at the same K - M), so
 * --dK-min/--dK-max split a run into processes whose outputs concatenate
 * (in K - M order) to the one-process output.
 *
 * Usage: gen_plateau_table [--Mmin 2] [--Mmax 40] [--dK-min 0] [--dK-max 2] [--starts 60]
 *                          [--stab-max-K 20] [--polish-max-K 24]
 *                          --csv OUT.csv --json OUT.json */
#include <cJSON.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scm/fixedpoint.h"
#include "scm/model.h"
#include "scm/symstab.h"

#define NA_MAX 8
#define STAB_TOL 1e-6

typedef struct {
    int a, k1;
    scm_ansatz_inst *in; /* shared, owned by the level's instance list */
    scm_fp_point *pt;
    scm_fp_structure st;
    int merged;
    int listed; /* a row of the table: seeds the next M */
} sol;

typedef struct {
    int n, cap;
    sol *s;
    int ninst;
    scm_ansatz_inst **inst;
    scm_fp_set set;
} level;

static void level_free(level *L)
{
    for (int i = 0; i < L->ninst; i++)
        scm_ansatz_inst_free(L->inst[i]);
    free(L->inst);
    free(L->s);
    scm_fp_set_free(&L->set);
    memset(L, 0, sizeof *L);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int same(const sol *a, const sol *b)
{
    double t = 1e-9;
    return fabs(a->pt->eps - b->pt->eps) <= t * fmax(1e-3, fabs(a->pt->eps)) &&
           fabs(a->st.trQ - b->st.trQ) <= t * fmax(1.0, fabs(a->st.trQ)) &&
           fabs(a->st.normR2 - b->st.normR2) <= t * fmax(1.0, fabs(a->st.normR2));
}

int main(int argc, char **argv)
{
    int Mmin = 2, Mmax = 40, dKmin = 0, dKmax = 2, starts = 60, stabK = 20, polK = 24;
    const char *csvp = NULL, *jsonp = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--Mmin"))
            Mmin = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--Mmax"))
            Mmax = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dK-max"))
            dKmax = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dK-min"))
            dKmin = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--starts"))
            starts = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--stab-max-K"))
            stabK = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--polish-max-K"))
            polK = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--csv"))
            csvp = argv[i + 1];
        else if (!strcmp(argv[i], "--json"))
            jsonp = argv[i + 1];
        else {
            fprintf(stderr, "gen_plateau_table: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!csvp || !jsonp || Mmin < 1 || Mmax < Mmin) {
        fprintf(stderr, "usage: gen_plateau_table [--Mmin A] [--Mmax B] [--dK-min C] [--dK-max D] "
                        "[--starts N] [--stab-max-K S] [--polish-max-K P] --csv F --json F\n");
        return 2;
    }
    gsl_set_error_handler_off();
    scm_ansatz *ans[NA_MAX];
    int na = 0;
    for (int i = 0; i < scm_ansatz_builtin_count() && na < NA_MAX; i++) {
        const char *file, *text = scm_ansatz_builtin_text(i, &file);
        scm_error e;
        ans[na] = scm_ansatz_parse(text, strlen(text), file, &e);
        if (!ans[na]) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        na++;
    }
    FILE *csv = fopen(csvp, "w");
    if (!csv) {
        perror(csvp);
        return 1;
    }
    fprintf(csv, "K,M,dK,family_n_anti,n_aligned,n_other,loss,residual,residual_kind,"
                 "block_max_eig,full_max_eig,classification,ansatz,instance,hits,scalars\n");
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "description",
                            "Specialised fixed points of the k1 families, ReLU, T = I, v = v* = 1; "
                            "see docs/fixed-points.md (plateau table)");
    cJSON_AddStringToObject(root, "generator", "scripts/plateau_table.sh");
    cJSON *levels = cJSON_AddArrayToObject(root, "levels");
    cJSON *rows = cJSON_AddArrayToObject(root, "rows");
    scm_fp_opts o;
    scm_fp_opts_default(&o);
    o.n_random = starts;
    o.polish_max_K = 0;
    double t_all = now();
    int nrows = 0;
    for (int dK = dKmin; dK <= dKmax; dK++) {
        level prev;
        memset(&prev, 0, sizeof prev);
        for (int M = Mmin; M <= Mmax; M++) {
            int K = M + dK;
            double t0 = now();
            level L;
            memset(&L, 0, sizeof L);
            scm_fp_set_init(&L.set);
            L.inst = malloc(sizeof *L.inst * 4096);
            int owner_cap = 1024, *owner = malloc(sizeof(int) * 1024);
            int ia[4096], ik[4096];
            int nstarts_total = 0;
            for (int a = 0; a < na; a++) {
                int lo, hi;
                if (scm_ansatz_applies(ans[a], K, M, &lo, &hi) != 1)
                    continue;
                for (int k1 = lo; k1 <= hi; k1++) {
                    scm_error e;
                    scm_ansatz_inst *in = scm_ansatz_instantiate(ans[a], K, M, k1, &e);
                    if (!in)
                        continue;
                    int nsc = scm_ansatz_inst_nscalars(in);
                    /* continuation seeds from M - 1 */
                    int ns = 0;
                    double *seeds = NULL;
                    for (int p = 0; p < prev.n; p++) {
                        sol *q = &prev.s[p];
                        if (!q->listed || q->a != a || (q->k1 != k1 && q->k1 != k1 - 1))
                            continue;
                        seeds = realloc(seeds, sizeof(double) * (size_t)(ns + 1) * (size_t)nsc);
                        double *x = seeds + (size_t)ns * (size_t)nsc;
                        for (int c = 0; c < nsc; c++) {
                            int j = scm_ansatz_inst_find(q->in, scm_ansatz_inst_scalar_name(in, c));
                            x[c] = j >= 0 ? q->pt->x[j] : 0.0;
                        }
                        ns++;
                    }
                    nstarts_total += ns;
                    int first = L.set.n;
                    if (scm_fp_enumerate(ans[a], in, &scm_act_relu, &o, seeds, ns, &L.set, &e)) {
                        fprintf(stderr, "enumerate: %s\n", e.msg);
                        return 1;
                    }
                    free(seeds);
                    L.inst[L.ninst++] = in;
                    if (L.set.n > owner_cap) {
                        owner_cap = 2 * L.set.n;
                        owner = realloc(owner, sizeof(int) * (size_t)owner_cap);
                    }
                    for (int p = first; p < L.set.n; p++)
                        owner[p] = L.ninst - 1;
                    ia[L.ninst - 1] = a;
                    ik[L.ninst - 1] = k1;
                }
            }
            L.s = calloc((size_t)L.set.n + 1, sizeof *L.s);
            L.n = L.set.n;
            for (int p = 0; p < L.n; p++) {
                int ii = owner[p];
                L.s[p].a = ia[ii];
                L.s[p].k1 = ik[ii];
                L.s[p].in = L.inst[ii];
                L.s[p].pt = &L.set.pt[p];
                scm_fp_classify(L.s[p].in, L.s[p].pt->x, &L.s[p].st);
            }
            free(owner);
            /* merge: prefer fewer scalars */
            int n_unspec = 0;
            for (int p = 0; p < L.n; p++)
                for (int q = 0; q < L.n && !L.s[p].merged; q++)
                    if (q != p && !L.s[q].merged && same(&L.s[p], &L.s[q]) &&
                        (L.s[q].pt->nsc < L.s[p].pt->nsc ||
                         (L.s[q].pt->nsc == L.s[p].pt->nsc && q < p)))
                        L.s[p].merged = 1;
            /* order of output: by n_anti then loss */
            int *ord = malloc(sizeof(int) * ((size_t)L.n + 1));
            int nord = 0;
            for (int p = 0; p < L.n; p++) {
                if (L.s[p].merged)
                    continue;
                if (fabs(L.s[p].st.n_other - dK) > 1e-9) {
                    n_unspec++;
                    continue;
                }
                L.s[p].listed = 1;
                int j = nord++;
                while (j > 0 &&
                       (L.s[ord[j - 1]].st.n_anti > L.s[p].st.n_anti ||
                        (L.s[ord[j - 1]].st.n_anti == L.s[p].st.n_anti &&
                         L.s[ord[j - 1]].pt->eps > L.s[p].pt->eps))) {
                    ord[j] = ord[j - 1];
                    j--;
                }
                ord[j] = p;
            }
            scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, NULL);
            scm_flow *fl = scm_flow_alloc(m);
            int n_cand = 0, n_unconv = 0;
            for (int r = 0; r < nord; r++) {
                sol *s = &L.s[ord[r]];
                scm_fp_point *pt = s->pt;
                double res = pt->full ? pt->res_full : pt->res_block;
                const char *kind = pt->full ? "full" : "block";
                if (pt->full && K <= polK && res >= 1e-13) {
                    double pr;
                    scm_error pe;
                    scm_fp_polish(fl, pt->Q, pt->R, 6, 1e-15, &pr, &pe);
                    if (pr < res) {
                        res = pr;
                        kind = "full_polished";
                    }
                }
                if (!(res < 1e-12)) { /* not a fixed point to the table's standard */
                    n_unconv++;
                    continue;
                }
                scm_blockflow *bf = scm_blockflow_alloc(s->in, &scm_act_relu);
                double bmax = NAN, fmaxe = NAN;
                scm_fp_block_stability(bf, pt->x, &bmax, NULL);
                scm_blockflow_free(bf);
                const char *cls;
                if (fabs(pt->eps) < 1e-12)
                    cls = "global_min";
                else if (!isfinite(bmax)) {
                    /* parallel ReLU neurons: the (Q, R) Jacobian diverges, the
                     * weight-space Hessian exists (its limit, symstab.h) */
                    scm_symstab_result sr;
                    scm_error se;
                    cls = scm_stab_symmetric(s->in, &scm_act_relu, pt->x, NULL, &sr, &se) ==
                                  SCM_OK
                              ? scm_symstab_verdict(&sr)
                              : "unclassified";
                    scm_symstab_result_free(&sr);
                } else if (bmax > STAB_TOL)
                    cls = "saddle";
                else if (K <= stabK && pt->Q) {
                    if (scm_fp_full_stability(fl, pt->Q, pt->R, &fmaxe, NULL))
                        fmaxe = NAN;
                    cls = fmaxe <= STAB_TOL ? "min_candidate" : "saddle";
                } else {
                    /* the full Jacobian's spectrum from the symmetry (symstab.h,
                     * issue 30): exact at any K, no dense O(n^3) */
                    scm_symstab_result sr;
                    memset(&sr, 0, sizeof sr);
                    scm_error se;
                    if (scm_stab_symmetric_jacobian(s->in, &scm_act_relu, pt->x, NULL, &sr,
                                                    &se) == SCM_OK && sr.n)
                        fmaxe = sr.eig[sr.n - 1].value;
                    scm_symstab_result_free(&sr);
                    cls = !isfinite(fmaxe) ? "unclassified"
                          : fmaxe <= STAB_TOL ? "min_candidate"
                                              : "saddle";
                }
                if (!strncmp(cls, "min", 3))
                    n_cand++;
                char scal[4096];
                size_t off = 0;
                scal[0] = '\0';
                for (int c = 0; c < pt->nsc && off < sizeof scal - 64; c++)
                    off += (size_t)snprintf(scal + off, sizeof scal - off, "%s%s=%.15g",
                                            c ? ";" : "", scm_ansatz_inst_scalar_name(s->in, c),
                                            pt->x[c]);
                char lossbuf[40];
                snprintf(lossbuf, sizeof lossbuf, "%.12g", fabs(pt->eps) < 1e-12 ? 0.0 : pt->eps);
                fprintf(csv, "%d,%d,%d,%g,%g,%g,%s,%.3e,%s,%.6e,%s%.6e,%s,%s,%d,%d,\"%s\"\n", K, M,
                        dK, s->st.n_anti, s->st.n_aligned, s->st.n_other, lossbuf, res, kind,
                        bmax, "", fmaxe, cls, scm_ansatz_name(ans[s->a]), s->k1, pt->hits, scal);
                cJSON *j = cJSON_CreateObject();
                cJSON_AddNumberToObject(j, "K", K);
                cJSON_AddNumberToObject(j, "M", M);
                cJSON_AddNumberToObject(j, "dK", dK);
                cJSON_AddNumberToObject(j, "family_n_anti", s->st.n_anti);
                cJSON_AddNumberToObject(j, "n_aligned", s->st.n_aligned);
                cJSON_AddNumberToObject(j, "n_other", s->st.n_other);
                cJSON_AddStringToObject(j, "loss", lossbuf);
                cJSON_AddNumberToObject(j, "loss_value", fabs(pt->eps) < 1e-12 ? 0.0 : pt->eps);
                cJSON_AddNumberToObject(j, "residual", res);
                cJSON_AddStringToObject(j, "residual_kind", kind);
                cJSON_AddNumberToObject(j, "block_max_eig", bmax);
                if (isfinite(fmaxe))
                    cJSON_AddNumberToObject(j, "full_max_eig", fmaxe);
                else
                    cJSON_AddNullToObject(j, "full_max_eig");
                cJSON_AddStringToObject(j, "classification", cls);
                cJSON_AddStringToObject(j, "ansatz", scm_ansatz_name(ans[s->a]));
                cJSON_AddNumberToObject(j, "instance", s->k1);
                cJSON_AddNumberToObject(j, "hits", pt->hits);
                cJSON *sc = cJSON_AddObjectToObject(j, "scalars");
                for (int c = 0; c < pt->nsc; c++)
                    cJSON_AddNumberToObject(sc, scm_ansatz_inst_scalar_name(s->in, c), pt->x[c]);
                cJSON_AddItemToArray(rows, j);
                nrows++;
            }
            scm_flow_free(fl);
            scm_model_free(m);
            free(ord);
            double dt = now() - t0;
            cJSON *lv = cJSON_CreateObject();
            cJSON_AddNumberToObject(lv, "K", K);
            cJSON_AddNumberToObject(lv, "M", M);
            cJSON_AddNumberToObject(lv, "specialised_listed", nord);
            cJSON_AddNumberToObject(lv, "min_candidates", n_cand);
            cJSON_AddNumberToObject(lv, "unspecialised_omitted", n_unspec);
            cJSON_AddNumberToObject(lv, "unconverged_omitted", n_unconv);
            cJSON_AddNumberToObject(lv, "continuation_seeds", nstarts_total);
            cJSON_AddItemToArray(levels, lv);
            fprintf(stderr,
                    "K=%d M=%d: %d listed (%d min candidates), %d unspecialised and %d with "
                    "residual >= 1e-12 omitted, %.2f s\n",
                    K, M, nord - n_unconv, n_cand, n_unspec, n_unconv, dt);
            level_free(&prev);
            prev = L;
        }
        level_free(&prev);
    }
    fclose(csv);
    char *txt = cJSON_PrintUnformatted(root);
    FILE *jf = fopen(jsonp, "w");
    if (!jf || fputs(txt, jf) < 0 || fputc('\n', jf) < 0 || fclose(jf)) {
        perror(jsonp);
        return 1;
    }
    free(txt);
    cJSON_Delete(root);
    for (int a = 0; a < na; a++)
        scm_ansatz_free(ans[a]);
    fprintf(stderr, "%d rows in %.1f s\n", nrows, now() - t_all);
    return 0;
}
