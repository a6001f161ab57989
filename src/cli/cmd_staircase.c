/* cmd_staircase.c: `scm staircase`: runs of the first-layer flow (`gd`)
 * from small random initialisations of scale alpha, the plateaus of each
 * loss curve matched to the enumerated fixed points, and the escape times
 * against log(1 / alpha) with a fitted slope, compared with 1 / lambda,
 * lambda the largest real part of the (F_Q, F_R) Jacobian at the matched
 * fixed point (docs/staircase.md).  Prints a table and writes a JSON
 * result (with the loss curves) atomically. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "fp_list.h"
#include "scm/init.h"
#include "scm/output.h"
#include "scm/staircase.h"
#include "scm/traj.h"
#include "scm_version.h"

#define ME "scm staircase"
#define MAX_ALPHA 32
#define MAX_PLATEAUS 16
#define MAX_M 200 /* the largest --M */

static void sc_usage(FILE *f)
{
    fprintf(f,
            "usage: scm staircase --K K --M M --alpha a1,a2,... [options]\n"
            "\n"
            "Runs of the first-layer flow (rule gd, T = I, v = v* = 1) from random\n"
            "initialisations w_k ~ N(0, alpha^2 I_d), one per alpha (same seed); the\n"
            "plateaus of each loss curve (|d eps/d tau| <= rate-tol * eps for at least\n"
            "min-dur) matched to the fixed points the built-in ansatze give at (K, M);\n"
            "for each fixed point reached from at least 3 alphas, the slope of the\n"
            "escape times against log(1/alpha), compared with 1/lambda (lambda: the\n"
            "largest real part of the (F_Q, F_R) Jacobian there).\n"
            "\n"
            "  --activation NAME   erf (default), relu, linear\n"
            "  --rule NAME         gd (default) or two_layer (v trained too, from\n"
            "                      v(0) = alpha: the small scale on both layers)\n"
            "  --lr-v-ratio R      two_layer: eta_v / eta (default 1)\n"
            "  --T-diag LIST       teacher overlaps T = diag(LIST) (M entries; default I)\n"
            "  --vstar LIST        teacher second layer (M entries; default 1)\n"
            "                      With two_layer, T != I or v* != 1 each plateau is\n"
            "                      matched to the fixed point a Newton polish of its\n"
            "                      middle state reaches (loss, lambda of its Jacobian).\n"
            "  --alpha LIST        initialisation scales (at least 3 for a fit)\n"
            "  --d D               dimension of the initialisation (default 1000)\n"
            "  --seed S            seed of the initialisation (default 1)\n"
            "  --t-max T           run length (default 1e4)\n"
            "  --n-out N           log-spaced recorded points (default 3000)\n"
            "  --rate-tol R        plateau threshold (default 1e-4)\n"
            "  --min-dur T         shortest plateau in tau (default 5)\n"
            "  --match-tol R       relative loss tolerance of the matching (default 1e-4)\n"
            "  --starts N          Newton starts of the enumeration (default 50)\n"
            "  -o FILE             JSON result file (with the loss curves)\n"
            "  -q, --quiet         no table\n"
            "\n"
            "exit status: 0 done, 1 a computation failed, 2 bad input.\n");
}

static cJSON *num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

typedef struct {
    double alpha;
    scm_traj_result tr;
    int np;
    scm_stair_plateau pl[MAX_PLATEAUS];
    int match[MAX_PLATEAUS]; /* fixed-point index or -1 */
    double resid[MAX_PLATEAUS]; /* polish: final max |dy/dtau| (NaN: not polished) */
    long n_curve; /* recorded points before a round-off loss (<= tr.n_out) */
} run_t;

typedef struct {
    long K, M, d, seed, n_out, starts;
    double t_max, match_tol, atol_rel, rtol;
    scm_stair_opts so;
    const scm_activation *act;
    const scm_rule *rule;
    scm_rule_params rp;
    double Tdiag[MAX_M], vstar[MAX_M];
    int polish; /* match by Newton polish, not the enumerator */
} sc_opts;

#define MAX_FP 64
/* The fixed points the polish found, in order of discovery. */
typedef struct {
    int n;
    double eps[MAX_FP], lam[MAX_FP];
    int origin;         /* the index of the origin in the list, -1 until met */
    double eps0, lam0;  /* the origin's loss and escape rate (scm_stair_origin) */
    int have_origin;    /* eps0, lam0 computed (both layers trained) */
} polished_t;

/* Polish the middle state of plateau k of run r and match it to the
 * list (same loss to 1e-8 relative) or append it. */
static void polish_match(const sc_opts *o, const scm_model *m, scm_flow *fl, run_t *r, int k,
                         polished_t *pf)
{
    long K = o->K, M = o->M, i = (r->pl[k].i_start + r->pl[k].i_end) / 2;
    long n = o->rule->dim(m);
    double *y = malloc(sizeof(double) * (size_t)n), eps, lam, resid = NAN;
    scm_error err;
    r->match[k] = -1;
    r->resid[k] = NAN;
    if (!y)
        return;
    o->rule->pack(m, r->tr.out_Q + i * K * K, r->tr.out_R + i * K * M,
                  o->rule->trains_v ? r->tr.out_v + i * K : NULL, y);
    /* Near w = v = 0 the Gram factor is degenerate and the polish does not
     * apply: a plateau there is the origin, matched by its loss. */
    double size = 0.0, tmax = 0.0;
    for (long k = 0; k < K && pf->have_origin; k++)
        size = fmax(size, fmax(r->tr.out_Q[i * K * K + k * K + k],
                               r->tr.out_v[i * K + k] * r->tr.out_v[i * K + k]));
    for (long n2 = 0; n2 < M; n2++)
        tmax = fmax(tmax, m->T[n2 * M + n2]);
    if (pf->have_origin && size <= 1e-2 * tmax &&
        fabs(r->pl[k].eps - pf->eps0) <= 1e-2 * pf->eps0) {
        if (pf->origin < 0 && pf->n < MAX_FP) {
            pf->origin = pf->n++;
            pf->eps[pf->origin] = pf->eps0;
            pf->lam[pf->origin] = pf->lam0;
        }
        r->match[k] = pf->origin;
        free(y);
        return;
    }
    if (scm_stair_polish(o->rule, &o->rp, fl, y, 1e-9, 50, &eps, &lam, &resid, &err) ==
        SCM_OK) {
        int f = scm_stair_match(eps, pf->eps, pf->n, 1e-8);
        if (f < 0 && pf->n < MAX_FP) {
            f = pf->n++;
            pf->eps[f] = eps;
            pf->lam[f] = lam;
        }
        r->match[k] = f;
    } else
        fprintf(stderr, ME ": alpha = %g, plateau %d: %s\n", r->alpha, k, err.msg);
    r->resid[k] = resid;
    free(y);
}

/* One run per alpha, its plateaus and their matches. */
static int run_all(const sc_opts *o, const scm_model *m, const double *fp_eps, int nfp,
                   run_t *runs, int nr, scm_flow *fl, polished_t *pf)
{
    scm_error err;
    double *Q = calloc((size_t)(o->K * o->K), sizeof *Q);
    double *R = calloc((size_t)(o->K * o->M), sizeof *R);
    double *v0 = calloc((size_t)o->K, sizeof *v0);
    int rc = Q && R && v0 ? 0 : 1;
    for (int a = 0; a < nr && !rc; a++) {
        run_t *r = &runs[a];
        if (scm_init_random(m, o->d, r->alpha, (unsigned long)o->seed, Q, R, &err)) {
            fprintf(stderr, ME ": initialisation: %s\n", err.msg);
            rc = 2;
            break;
        }
        scm_traj_opts to;
        scm_traj_opts_default(&to);
        to.t_max = o->t_max;
        to.t_first = 1e-2;
        to.n_out = (int)o->n_out;
        to.eps_stop = 1e-10;
        to.grad_stop = 0;
        /* the symmetry-breaking part of the state starts at ~ alpha / sqrt d:
         * the absolute tolerance stays well below it, or integration error
         * (not the initialisation) seeds the escape */
        to.atol = fmin(to.atol, o->atol_rel * r->alpha * r->alpha / (double)o->d);
        to.rtol = fmin(to.rtol, o->rtol);
        /* a ReLU student starts with Q_kk ~ alpha^2: dead only far below that */
        to.dead_tol = fmin(to.dead_tol, 1e-4 * r->alpha * r->alpha);
        to.rule_params = o->rp;
        for (long k = 0; k < o->K; k++) /* the small scale on v too (docs/staircase.md) */
            v0[k] = r->alpha * m->v[k];
        to.v0 = v0;
        if (scm_traj_run(m, o->rule, Q, R, &to, &r->tr, &err) ||
            r->tr.stop == SCM_STOP_FAILED) {
            fprintf(stderr, ME ": run at alpha = %g failed: %s\n", r->alpha,
                    r->tr.stop == SCM_STOP_FAILED ? r->tr.err.msg : err.msg);
            rc = 1;
            break;
        }
        /* a converged run may end with a loss at round-off level (even
         * negative, the loss is a difference of kernels): the curve ends
         * before it */
        long n = 0;
        while (n < r->tr.n_out && r->tr.out_eps[n] > 1e-12)
            n++;
        r->n_curve = n;
        if (scm_stair_detect(r->tr.out_t, r->tr.out_eps, n, &o->so, r->pl, MAX_PLATEAUS,
                             &r->np, &err)) {
            fprintf(stderr, ME ": alpha = %g: %s\n", r->alpha, err.msg);
            rc = 1;
            break;
        }
        if (r->np > MAX_PLATEAUS)
            r->np = MAX_PLATEAUS;
        for (int k = 0; k < r->np; k++) {
            r->resid[k] = NAN;
            if (o->polish)
                polish_match(o, m, fl, r, k, pf);
            else
                r->match[k] = scm_stair_match(r->pl[k].eps, fp_eps, nfp, o->match_tol);
        }
    }
    free(Q);
    free(R);
    free(v0);
    return rc;
}

typedef struct {
    int fp, n;
    double slope, intercept, se, lambda;
} fit_t;

/* Fit the escape times of each fixed point reached from >= 3 alphas. */
static int fit_all(const run_t *runs, int nr, const double *lam, int nfp, fit_t *fits)
{
    int nf = 0;
    double x[MAX_ALPHA], y[MAX_ALPHA];
    for (int f = 0; f < nfp; f++) {
        int n = 0;
        for (int a = 0; a < nr; a++)
            for (int k = 0; k < runs[a].np; k++)
                if (runs[a].match[k] == f && runs[a].pl[k].i_end < runs[a].n_curve - 1) {
                    x[n] = log(1.0 / runs[a].alpha);
                    y[n++] = runs[a].pl[k].t_end;
                    break; /* the first visit */
                }
        fit_t *t = &fits[nf];
        t->fp = f;
        t->n = n;
        t->lambda = lam[f];
        if (n >= 3 && scm_stair_fit(x, y, n, &t->slope, &t->intercept, &t->se) == SCM_OK)
            nf++;
    }
    return nf;
}

static void print_table(const sc_opts *o, const double *fpe, const char *const *fpn,
                        const run_t *runs, int nr, const fit_t *fits, int nf)
{
    printf("scm staircase: K = %ld, M = %ld, %s, rule %s, T = diag(", o->K, o->M, o->act->name,
           o->rule->name);
    for (long m = 0; m < o->M; m++)
        printf("%s%g", m ? ", " : "", o->Tdiag[m]);
    printf("), v* = (");
    for (long m = 0; m < o->M; m++)
        printf("%s%g", m ? ", " : "", o->vstar[m]);
    printf("), d = %ld, seed %ld; fixed points from %s\n", o->d, o->seed,
           o->polish ? "Newton polish of the plateaus" : "the enumerator");
    printf("%-10s %-8s %-9s %-16s %-16s %-10s %s\n", "alpha", "plateau", "tau_start",
           "tau_escape", "loss", "matched", "fixed point");
    for (int a = 0; a < nr; a++) {
        const run_t *r = &runs[a];
        for (int k = 0; k < r->np; k++) {
            int f = r->match[k];
            int last = r->pl[k].i_end == r->n_curve - 1;
            printf("%-10.3g %-8d %-9.4g %-16.6g %-16.10g %-10s %s\n", r->alpha, k,
                   r->pl[k].t_start, last ? NAN : r->pl[k].t_end, r->pl[k].eps,
                   f >= 0 ? "yes" : "no", f >= 0 ? fpn[f] : (last ? "(end of run)" : "-"));
        }
        printf("%-10.3g end: %s at tau = %.6g, loss %.4g\n", r->alpha,
               scm_stop_reason_str(r->tr.stop), r->tr.t, r->tr.eps);
    }
    for (int i = 0; i < nf; i++) {
        const fit_t *t = &fits[i];
        printf("fixed point loss %.10g (%s): escape time = %.5g log(1/alpha) + %.5g "
               "(slope +- %.2g, %d alphas); 1/lambda = %.5g\n",
               fpe[t->fp], fpn[t->fp], t->slope, t->intercept, t->se, t->n,
               1.0 / t->lambda);
    }
}

static cJSON *result_json(const sc_opts *o, const double *fpe, const char *const *fpn,
                          const double *lam, int nfp, const run_t *runs, int nr,
                          const fit_t *fits, int nf)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "staircase");
    cJSON_AddNumberToObject(root, "K", (double)o->K);
    cJSON_AddNumberToObject(root, "M", (double)o->M);
    cJSON_AddStringToObject(root, "activation", o->act->name);
    cJSON_AddNumberToObject(root, "d", (double)o->d);
    cJSON_AddNumberToObject(root, "seed", (double)o->seed);
    cJSON_AddStringToObject(root, "rule", o->rule->name);
    cJSON_AddNumberToObject(root, "lr_v_ratio", o->rp.lr_v_ratio);
    cJSON_AddItemToObject(root, "T_diag", scm_output_vector(o->Tdiag, (int)o->M));
    cJSON_AddItemToObject(root, "vstar", scm_output_vector(o->vstar, (int)o->M));
    cJSON_AddStringToObject(root, "matching", o->polish ? "polish" : "enumerator");
    cJSON_AddNumberToObject(root, "rate_tol", o->so.rate_tol);
    cJSON_AddNumberToObject(root, "min_dur", o->so.min_dur);
    cJSON *jf = cJSON_AddArrayToObject(root, "fixed_points");
    for (int f = 0; f < nfp; f++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "loss", num(fpe[f]));
        cJSON_AddStringToObject(j, "ansatz", fpn[f]);
        cJSON_AddItemToObject(j, "lambda", num(lam[f]));
        cJSON_AddItemToArray(jf, j);
    }
    cJSON *jr = cJSON_AddArrayToObject(root, "runs");
    for (int a = 0; a < nr; a++) {
        const run_t *r = &runs[a];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "alpha", r->alpha);
        cJSON_AddStringToObject(j, "stop", scm_stop_reason_str(r->tr.stop));
        cJSON_AddItemToObject(j, "tau", scm_output_vector(r->tr.out_t, (int)r->tr.n_out));
        cJSON_AddItemToObject(j, "loss", scm_output_vector(r->tr.out_eps, (int)r->tr.n_out));
        cJSON *jp = cJSON_AddArrayToObject(j, "plateaus");
        for (int k = 0; k < r->np; k++) {
            cJSON *p = cJSON_CreateObject();
            int last = r->pl[k].i_end == r->n_curve - 1;
            cJSON_AddNumberToObject(p, "tau_start", r->pl[k].t_start);
            cJSON_AddItemToObject(p, "tau_escape", last ? cJSON_CreateNull() : num(r->pl[k].t_end));
            cJSON_AddItemToObject(p, "loss", num(r->pl[k].eps));
            cJSON_AddNumberToObject(p, "fixed_point", r->match[k]);
            cJSON_AddItemToObject(p, "polish_residual", num(r->resid[k]));
            cJSON_AddItemToArray(jp, p);
        }
        cJSON_AddItemToArray(jr, j);
    }
    cJSON *jt = cJSON_AddArrayToObject(root, "fits");
    for (int i = 0; i < nf; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "fixed_point", fits[i].fp);
        cJSON_AddNumberToObject(j, "alphas", fits[i].n);
        cJSON_AddItemToObject(j, "slope", num(fits[i].slope));
        cJSON_AddItemToObject(j, "slope_se", num(fits[i].se));
        cJSON_AddItemToObject(j, "intercept", num(fits[i].intercept));
        cJSON_AddItemToObject(j, "inverse_lambda", num(1.0 / fits[i].lambda));
        cJSON_AddItemToArray(jt, j);
    }
    return root;
}

/* Enumerate (or polish), the Jacobian's largest real part at each fixed
 * point, the runs, the fits, the output. */
static int staircase(const sc_opts *o, const double *alphas, int nr, const char *out, int quiet)
{
    scm_error err;
    double *T = calloc((size_t)(o->M * o->M), sizeof *T);
    if (!T) {
        fprintf(stderr, ME ": out of memory\n");
        return 1;
    }
    for (long i = 0; i < o->M; i++)
        T[i * o->M + i] = o->Tdiag[i];
    scm_model *m = scm_model_alloc((int)o->K, (int)o->M, o->act, T, NULL, o->vstar, &err);
    free(T);
    if (!m) {
        fprintf(stderr, ME ": %s\n", err.msg);
        return 2;
    }
    scm_cli_fp *fp = NULL;
    int nfp = 0, rc = 0;
    if (!o->polish)
        rc = scm_cli_fp_list((int)o->K, (int)o->M, o->act, o->starts, &fp, &nfp);
    double eps[MAX_FP], lam[MAX_FP];
    const char *names[MAX_FP];
    polished_t pf = {.origin = -1};
    if (o->polish && o->rule->trains_v) {
        if (scm_stair_origin(m, &pf.eps0, &pf.lam0, &err) == SCM_OK)
            pf.have_origin = 1;
        else
            fprintf(stderr, ME ": the origin is not matched: %s\n", err.msg);
    }
    run_t *runs = calloc((size_t)nr, sizeof *runs);
    fit_t fits[MAX_FP];
    scm_flow *fl = scm_flow_alloc(m);
    if (rc || !runs || !fl) {
        fprintf(stderr, ME ": out of memory\n");
        rc = 1;
        goto done;
    }
    int nlist = nfp > MAX_FP ? MAX_FP : nfp;
    for (int f = 0; f < nlist; f++) {
        double re_min;
        eps[f] = fp[f].eps;
        names[f] = fp[f].ansatz;
        if (scm_fp_full_stability(fl, fp[f].Q, fp[f].R, &lam[f], &re_min))
            lam[f] = NAN;
    }
    for (int a = 0; a < nr; a++)
        runs[a].alpha = alphas[a];
    if ((rc = run_all(o, m, eps, nlist, runs, nr, fl, &pf)))
        goto done;
    if (o->polish) {
        nlist = pf.n;
        for (int f = 0; f < nlist; f++) {
            eps[f] = pf.eps[f];
            lam[f] = pf.lam[f];
            names[f] = f == pf.origin ? "origin" : "newton polish";
        }
    }
    int nf = fit_all(runs, nr, lam, nlist, fits);
    if (!quiet)
        print_table(o, eps, names, runs, nr, fits, nf);
    if (out) {
        cJSON *root = result_json(o, eps, names, lam, nlist, runs, nr, fits, nf);
        if (!root || scm_output_write_json(out, root, 1, &err)) {
            fprintf(stderr, ME ": %s\n", root ? err.msg : "out of memory");
            rc = 1;
        }
        cJSON_Delete(root);
    }
done:
    for (int a = 0; runs && a < nr; a++)
        scm_traj_result_free(&runs[a].tr);
    free(runs);
    scm_cli_fp_free(fp, nfp);
    scm_flow_free(fl);
    scm_model_free(m);
    return rc;
}

int scm_cmd_staircase(int argc, char **argv)
{
    sc_opts o = {.K = -1, .M = -1, .d = 1000, .seed = 1, .n_out = 3000, .starts = 50,
                 .t_max = 1e4, .match_tol = 1e-4, .atol_rel = 1e-2, .rtol = 1e-10};
    scm_stair_opts_default(&o.so);
    double alphas[MAX_ALPHA];
    int na = 0, quiet = 0, nT = 0, nvs = 0;
    const char *out = NULL, *actname = "erf", *rulename = "gd";
    scm_rule_params_default(&o.rp);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            sc_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, ME ": unknown option or missing value: '%s'\n", a);
            sc_usage(stderr);
            return 2;
        }
        int bad = 0;
        if (!strcmp(a, "--K"))
            bad = cli_opt_long(ME, a, v, 1, 200, &o.K);
        else if (!strcmp(a, "--M"))
            bad = cli_opt_long(ME, a, v, 1, 200, &o.M);
        else if (!strcmp(a, "--d"))
            bad = cli_opt_long(ME, a, v, 1, 100000000, &o.d);
        else if (!strcmp(a, "--seed"))
            bad = cli_opt_long(ME, a, v, 0, 2147483647L, &o.seed);
        else if (!strcmp(a, "--n-out"))
            bad = cli_opt_long(ME, a, v, 10, 1000000, &o.n_out);
        else if (!strcmp(a, "--starts"))
            bad = cli_opt_long(ME, a, v, 0, 1000000, &o.starts);
        else if (!strcmp(a, "--t-max"))
            bad = cli_opt_positive(ME, a, v, &o.t_max);
        else if (!strcmp(a, "--rate-tol"))
            bad = cli_opt_positive(ME, a, v, &o.so.rate_tol);
        else if (!strcmp(a, "--min-dur"))
            bad = cli_opt_positive(ME, a, v, &o.so.min_dur);
        else if (!strcmp(a, "--match-tol"))
            bad = cli_opt_positive(ME, a, v, &o.match_tol);
        else if (!strcmp(a, "--activation"))
            actname = v;
        else if (!strcmp(a, "--rule"))
            rulename = v;
        else if (!strcmp(a, "--lr-v-ratio"))
            bad = cli_opt_positive(ME, a, v, &o.rp.lr_v_ratio);
        else if (!strcmp(a, "--T-diag"))
            bad = cli_opt_list(ME, a, v, 1, o.Tdiag, MAX_M, &nT);
        else if (!strcmp(a, "--vstar"))
            bad = cli_opt_list(ME, a, v, 0, o.vstar, MAX_M, &nvs);
        else if (!strcmp(a, "-o"))
            out = v;
        else if (!strcmp(a, "--alpha"))
            bad = cli_opt_list(ME, a, v, 1, alphas, MAX_ALPHA, &na);
        else {
            fprintf(stderr, ME ": unknown option '%s'\n", a);
            sc_usage(stderr);
            return 2;
        }
        if (bad)
            return 2;
        i++;
    }
    if (o.K < 0 || o.M < 0 || na == 0) {
        fprintf(stderr, ME ": --K, --M and --alpha are required\n");
        return 2;
    }
    if (o.d < o.M) {
        fprintf(stderr, ME ": --d %ld is below M = %ld\n", o.d, o.M);
        return 2;
    }
    if (!(o.act = scm_activation_find(actname))) {
        fprintf(stderr, ME ": unknown activation '%s' (relu, erf, linear)\n", actname);
        return 2;
    }
    o.rule = scm_rule_find(rulename);
    if (!o.rule || (o.rule != &scm_rule_gd && o.rule != &scm_rule_two_layer)) {
        fprintf(stderr, ME ": --rule '%s': gd or two_layer\n", rulename);
        return 2;
    }
    if ((nT && nT != o.M) || (nvs && nvs != o.M)) {
        fprintf(stderr, ME ": --T-diag and --vstar need M = %ld entries (got %d, %d)\n", o.M, nT,
                nvs);
        return 2;
    }
    o.polish = o.rule->trains_v;
    for (long i = 0; i < o.M; i++) {
        if (!nT)
            o.Tdiag[i] = 1.0;
        if (!nvs)
            o.vstar[i] = 1.0;
        if (o.Tdiag[i] != 1.0 || o.vstar[i] != 1.0)
            o.polish = 1;
    }
    gsl_set_error_handler_off();
    return staircase(&o, alphas, na, out, quiet);
}
