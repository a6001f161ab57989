/* plateau_stability.c: stability verdicts for the minima of the plateau
 * table (run by scripts/plateau_stability.sh; docs/stability.md section 5).
 *
 * Reads data/plateau_table.csv.  For every row classified global_min or
 * min_candidate (no positive eigenvalue of the full Jacobian: dense for
 * K <= 20, the symmetric spectrum beyond) with K <= --Kmax (default 22, so
 * that M = 8 .. 20 is covered at K = M + 2; the analysis computes the full
 * Jacobian itself),
 * rebuilds the fixed point from its ansatz, k1 and scalars
 * (bench/plateau_row.h) and runs scm_stab_analyse with the library's
 * defaults except 3 trials per sigma and sigma = 1e-4, 1e-3, 1e-2 (all
 * three enter the verdict): closed-form or finite-difference weight-space
 * Hessian (d = K + M) with counts and predicted zero modes, the largest real
 * part of the (F_Q, F_R) Jacobian, and the perturbation test (W + N(0,
 * sigma^2), 1000 GD steps of eta = 0.01, then CVODE to t = 1e5 from the
 * perturbed overlaps, seed 1).  One output row per analysed table row, in
 * table order, keyed by the table's K, M, dK, family_n_anti and loss text.
 *
 * Not run, only counted per (K, M) in the --counts file: saddle rows (the
 * table already shows a positive eigenvalue > 1e-6 of the block or full
 * flow Jacobian, so they are linearly unstable: some perturbation grows
 * like exp(lambda t)) and min_candidate rows with K > --Kmax (the dense
 * Hessian is (K d)^2; their exact spectrum is symstab.h's,
 * data/symmetric_stability/).
 *
 * overall verdict: the perturbation verdict when it is stable or unstable;
 * when it is undecided, unstable if the Hessian has a negative eigenvalue
 * or the Jacobian a positive real part > 1e-6, else undecided.
 *
 * analysis: ok; not_psd when the stored point cannot be realised in weight
 * space (its Gram matrix [[T, R^T], [R, Q]] has an eigenvalue below the
 * realisation's tolerance 1e-10; the table accepts -1e-9): the row is
 * written with verdict undecided and no Hessian, and the run goes on.
 *
 * Usage: plateau_stability [--in data/plateau_table.csv] --out OUT.csv
 *            [--counts COUNTS.csv] [--part I/N] [--Kmax 22] [--limit N] [-q]
 * --part I/N analyses only the rows with K mod N = I (to run N processes;
 * concatenating the parts and stable-sorting by (dK, M) restores table
 * order, since the table is ordered by dK, then M, and each (dK, M) has one
 * K).  Progress goes to stderr.  Exit status 0 (also with not_psd rows),
 * 1 on another failed analysis (the row is written with verdict undecided,
 * analysis "error", and the error on stderr), 2 on bad input. */
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plateau_row.h"
#include "scm/fixedpoint.h"
#include "scm/model.h"
#include "scm/stability.h"

#define ME "plateau_stability"
#define JAC_TOL 1e-6

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *csv_header =
    "K,M,dK,family_n_anti,loss,classification,residual,hessian,hessian_verdict,hess_n,"
    "hess_neg,hess_zero,hess_pos,hess_min_nonzero_eig,zero_modes_predicted,hess_closed_vs_fd,"
    "jac_max_re,verdict_s1e-4,verdict_s1e-3,verdict_s1e-2,gd_grew,dest_same,dest_global_min,"
    "dest_other,dest_failed,flow_unsettled,escape_other_loss_min,escape_other_loss_max,"
    "perturbation_verdict,overall_verdict,tests_agree,analysis\n";

static void pr_num(FILE *f, double v, const char *fmt)
{
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs("nan", f);
}

typedef struct {
    char K_s[PT_FIELD], M_s[PT_FIELD], dK_s[PT_FIELD];
    int n_rows, n_analysed, n_saddle, n_cand_big, n_other;
} count;

int main(int argc, char **argv)
{
    const char *in = "data/plateau_table.csv", *out = NULL, *counts_path = NULL;
    int part = 0, nparts = 1, Kmax = 22, limit = -1, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-q")) {
            quiet = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, ME ": unknown option or missing value: %s\n", a);
            return 2;
        }
        if (!strcmp(a, "--in"))
            in = v;
        else if (!strcmp(a, "--out"))
            out = v;
        else if (!strcmp(a, "--counts"))
            counts_path = v;
        else if (!strcmp(a, "--Kmax"))
            Kmax = atoi(v);
        else if (!strcmp(a, "--limit"))
            limit = atoi(v);
        else if (!strcmp(a, "--part")) {
            if (sscanf(v, "%d/%d", &part, &nparts) != 2 || nparts < 1 || part < 0 ||
                part >= nparts) {
                fprintf(stderr, ME ": --part needs I/N with 0 <= I < N, got %s\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, ME ": unknown option %s\n", a);
            return 2;
        }
        i++;
    }
    if (!out) {
        fprintf(stderr, "usage: " ME " [--in TABLE.csv] --out OUT.csv [--counts COUNTS.csv] "
                        "[--part I/N] [--Kmax 22] [--limit N] [-q]\n");
        return 2;
    }
    gsl_set_error_handler_off();
    FILE *fi = fopen(in, "r");
    if (!fi) {
        fprintf(stderr, ME ": cannot read %s\n", in);
        return 2;
    }
    FILE *fo = fopen(out, "w");
    if (!fo) {
        fprintf(stderr, ME ": cannot write %s\n", out);
        fclose(fi);
        return 2;
    }
    static char line[8192];
    if (!fgets(line, sizeof line, fi) || strncmp(line, "K,M,dK,family_n_anti,", 21) != 0) {
        fprintf(stderr, ME ": %s: not a plateau table (header)\n", in);
        fclose(fi);
        fclose(fo);
        return 2;
    }
    fputs(csv_header, fo);
    scm_stab_opts o;
    scm_stab_opts_three_sigma(&o);
    count *cnt = NULL;
    int ncnt = 0, capcnt = 0, rc = 0, nline = 1, nrun = 0;
    double t_all = now();
    while (fgets(line, sizeof line, fi)) {
        nline++;
        pt_row r;
        if (!pt_row_parse(line, &r)) {
            fprintf(stderr, ME ": %s:%d: malformed row\n", in, nline);
            rc = 2;
            break;
        }
        if (ncnt == 0 || strcmp(cnt[ncnt - 1].K_s, r.K_s) || strcmp(cnt[ncnt - 1].M_s, r.M_s)) {
            if (ncnt == capcnt) {
                capcnt = capcnt ? 2 * capcnt : 128;
                count *nc = realloc(cnt, sizeof *cnt * (size_t)capcnt);
                if (!nc) {
                    fprintf(stderr, ME ": out of memory\n");
                    rc = 1;
                    break;
                }
                cnt = nc;
            }
            memset(&cnt[ncnt], 0, sizeof cnt[ncnt]);
            strcpy(cnt[ncnt].K_s, r.K_s);
            strcpy(cnt[ncnt].M_s, r.M_s);
            strcpy(cnt[ncnt].dK_s, r.dK_s);
            ncnt++;
        }
        count *c = &cnt[ncnt - 1];
        c->n_rows++;
        const int cand = !strcmp(r.cls, "min_candidate");
        int is_min = !strcmp(r.cls, "global_min") || cand;
        if (!strcmp(r.cls, "saddle"))
            c->n_saddle++;
        else if (cand && r.K > Kmax)
            c->n_cand_big++;
        else if (!is_min || r.K > Kmax)
            c->n_other++;
        if (!is_min || r.K > Kmax)
            continue;
        c->n_analysed++;
        if (r.K % nparts != part || (limit >= 0 && nrun >= limit))
            continue;
        nrun++;
        const int K = r.K, M = r.M;
        double *Q = malloc(sizeof(double) * (size_t)(K * K + K * M));
        if (!Q) {
            fprintf(stderr, ME ": out of memory\n");
            rc = 1;
            break;
        }
        double *R = Q + K * K;
        char why[512];
        scm_stab_result s;
        memset(&s, 0, sizeof s);
        s.verdict = SCM_VERDICT_UNDECIDED;
        s.hverdict = SCM_HVERDICT_NONE;
        s.agree = -1;
        s.eps = s.residual = s.jac_re_max = NAN;
        int ok = 0;
        const char *analysis = "error";
        double t0 = now();
        if (pt_row_point(&r, Q, R, why, sizeof why)) {
            fprintf(stderr, ME ": %s:%d: %s\n", in, nline, why);
            rc = 1;
        } else {
            scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, NULL);
            scm_error e;
            if (!m) {
                fprintf(stderr, ME ": model K = %d, M = %d\n", K, M);
                rc = 1;
            } else {
                scm_status st = scm_stab_analyse(m, Q, R, &o, &s, &e);
                if (st == SCM_OK) {
                    ok = 1;
                    analysis = "ok";
                } else {
                    fprintf(stderr, ME ": %s:%d: K = %d, M = %d, loss %s: %s\n", in, nline, K,
                            M, r.loss_s, e.msg);
                    if (st == SCM_ENOTPSD)
                        analysis = "not_psd"; /* the stored point is outside the PSD cone */
                    else
                        rc = 1;
                }
            }
            scm_model_free(m);
        }
        free(Q);
        /* the columns */
        double nz = NAN;
        if (s.hessian_done)
            for (int i = 0; i < s.n_small; i++)
                if (fabs(s.eval_small[i]) > s.counts.zero_tol) {
                    nz = s.eval_small[i];
                    break;
                }
        int gd_grew = 0, same = 0, glob = 0, other = 0, failed = 0, unsettled = 0;
        double omin = INFINITY, omax = -INFINITY;
        for (int i = 0; i < s.n_rows; i++) {
            const scm_stab_row *w = &s.rows[i];
            gd_grew += w->n_grew;
            same += w->n_same;
            glob += w->n_global;
            other += w->n_other;
            failed += w->n_failed;
            unsettled += w->n_unsettled;
            if (w->n_other) {
                omin = fmin(omin, w->other_eps_min);
                omax = fmax(omax, w->other_eps_max);
            }
        }
        scm_verdict overall = s.verdict;
        if (ok && overall == SCM_VERDICT_UNDECIDED &&
            ((s.hessian_done && s.counts.n_neg > 0) ||
             (s.jacobian_done && s.jac_re_max > JAC_TOL)))
            overall = SCM_VERDICT_UNSTABLE;
        fprintf(fo, "%s,%s,%s,%s,%s,%s,", r.K_s, r.M_s, r.dK_s, r.n_anti_s, r.loss_s, r.cls);
        pr_num(fo, s.residual, "%.3e");
        fprintf(fo, ",%s,%s,", !s.hessian_done ? "none" : s.hessian_closed ? "closed" : "fd",
                scm_hverdict_str(s.hverdict));
        if (s.hessian_done)
            fprintf(fo, "%d,%d,%d,%d,", s.counts.n, s.counts.n_neg, s.counts.n_zero,
                    s.counts.n_pos);
        else
            fputs(",,,,", fo);
        pr_num(fo, nz, "%.6e");
        fprintf(fo, ",%ld,", ok ? s.zm.total : -1L);
        pr_num(fo, s.hessian_done && s.hessian_closed ? s.hessian_fd_diff : NAN, "%.2e");
        fputc(',', fo);
        pr_num(fo, s.jacobian_done ? s.jac_re_max : NAN, "%.6e");
        for (int i = 0; i < 3; i++)
            fprintf(fo, ",%s", i < s.n_rows ? scm_verdict_str(s.rows[i].verdict) : "undecided");
        fprintf(fo, ",%d,%d,%d,%d,%d,%d,", gd_grew, same, glob, other, failed, unsettled);
        pr_num(fo, other ? omin : NAN, "%.12g");
        fputc(',', fo);
        pr_num(fo, other ? omax : NAN, "%.12g");
        fprintf(fo, ",%s,%s,%s,%s\n", scm_verdict_str(s.verdict), scm_verdict_str(overall),
                s.agree == 1 ? "yes" : s.agree == 0 ? "no" : "not_comparable", analysis);
        fflush(fo);
        if (!quiet)
            fprintf(stderr,
                    "K=%2d M=%2d n_anti=%2s loss %-16s hessian %-6s %-11s neg %3d  jac %+.2e  "
                    "%-9s -> %-9s (same %d global %d other %d)  %.1f s\n",
                    K, M, r.n_anti_s, r.loss_s,
                    !s.hessian_done ? "none" : s.hessian_closed ? "closed" : "fd",
                    scm_hverdict_str(s.hverdict), s.hessian_done ? s.counts.n_neg : -1,
                    s.jacobian_done ? s.jac_re_max : NAN, scm_verdict_str(s.verdict),
                    scm_verdict_str(overall), same, glob, other, now() - t0);
    }
    fclose(fi);
    if (fclose(fo)) {
        fprintf(stderr, ME ": writing %s failed\n", out);
        rc = 1;
    }
    if (counts_path && rc != 2) {
        FILE *fc = fopen(counts_path, "w");
        if (!fc) {
            fprintf(stderr, ME ": cannot write %s\n", counts_path);
            rc = 1;
        } else {
            fprintf(fc, "K,M,dK,table_rows,analysed,saddle_not_run,min_candidate_not_run,"
                        "other_not_run\n");
            for (int i = 0; i < ncnt; i++)
                fprintf(fc, "%s,%s,%s,%d,%d,%d,%d,%d\n", cnt[i].K_s, cnt[i].M_s, cnt[i].dK_s,
                        cnt[i].n_rows, cnt[i].n_analysed, cnt[i].n_saddle, cnt[i].n_cand_big,
                        cnt[i].n_other);
            if (fclose(fc)) {
                fprintf(stderr, ME ": writing %s failed\n", counts_path);
                rc = 1;
            }
        }
    }
    free(cnt);
    if (!quiet)
        fprintf(stderr, ME ": %d rows analysed in %.1f s\n", nrun, now() - t_all);
    return rc;
}
