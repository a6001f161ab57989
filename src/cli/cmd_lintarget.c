/* cmd_lintarget.c: `scm lintarget`: the linear target as a +-ReLU pair
 * (docs/lintarget.md).  Runs K = 2 two-layer trajectories from small
 * initialisations alpha, detects their three phases, fits the phase times
 * against log(1/alpha), and checks the saddle manifold at several c; writes
 * PREFIX.json, PREFIX.phases.csv and PREFIX.traces.csv atomically. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "scm/lintarget.h"
#include "scm/output.h"
#include "scm_version.h"

#define ME "scm lintarget"
#define MAXV 32

static void usage(FILE *f)
{
    fprintf(f,
            "usage: scm lintarget [--alpha A1,A2,...] [--t T] [--d D] [--seed S]\n"
            "                     [--t-max T] [--n-out N] [--c C1,C2,...] [-o PREFIX] [-q]\n"
            "\n"
            "The linear target a.x = ReLU(a.x) - ReLU(-a.x) (M = 2, T = t [[1,-1],[-1,1]],\n"
            "v* = (1, -1)) learnt by K = 2 ReLU students with both layers trained\n"
            "(rule two_layer), from w_k ~ N(0, I_d) scaled by alpha and v(0) = alpha (1, -1).\n"
            "For each alpha: the phases (alignment, joint growth, convergence) and the\n"
            "drift of the conserved imbalance Q_kk - v_k^2; the phase times fitted\n"
            "against log(1/alpha); and the saddle manifold v1 w1 = (c + 1) a,\n"
            "v2 w2 = -c a checked at each c (stationarity, loss t/4, Hessian counts,\n"
            "third-order descent).\n"
            "\n"
            "  --alpha LIST   initial scales (default 1e-1,1e-2,1e-3,1e-4,1e-5,1e-6)\n"
            "  --t T          |a|^2 / d (default 1)\n"
            "  --d D          dimension of the random start (default 1000)\n"
            "  --seed S       seed of the random start (default 1)\n"
            "  --t-max T      end of each run (default 200)\n"
            "  --n-out N      recorded points per run (default 600)\n"
            "  --c LIST       points of the saddle manifold (default -2.5,-0.4,0.385,1.7)\n"
            "  -o PREFIX      output prefix (default lintarget)\n"
            "  -q             no table\n"
            "\n"
            "exit status: 0 done, 1 a run failed, 2 bad input.\n");
}

static cJSON *num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

/* Least-squares line y = a + b x over the finite pairs. */
static cJSON *fit_json(const double *x, const double *y, int n)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(y[i])) {
            sx += x[i];
            sy += y[i];
            sxx += x[i] * x[i];
            sxy += x[i] * y[i];
            syy += y[i] * y[i];
            m++;
        }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "points", m);
    double den = m * sxx - sx * sx;
    if (m >= 2 && den > 0.0) {
        double b = (m * sxy - sx * sy) / den, a = (sy - b * sx) / m;
        double vy = m * syy - sy * sy;
        cJSON_AddItemToObject(o, "slope", num(b));
        cJSON_AddItemToObject(o, "intercept", num(a));
        cJSON_AddItemToObject(o, "r2", num(vy > 0.0 ? (m * sxy - sx * sy) * (m * sxy - sx * sy) / (den * vy) : 1.0));
    }
    return o;
}

int scm_cmd_lintarget(int argc, char **argv)
{
    double alpha[MAXV] = {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6}, cs[MAXV] = {-2.5, -0.4, 0.385, 1.7};
    int na = 6, nc = 4, quiet = 0;
    double t = 1.0, t_max = 200.0;
    long d = 1000, seed = 1, n_out = 600;
    const char *prefix = "lintarget";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q")) {
            quiet = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, ME ": unknown option or missing value: '%s'\n", a);
            usage(stderr);
            return 2;
        }
        int bad = 0;
        if (!strcmp(a, "--alpha"))
            bad = cli_opt_list(ME, a, v, 1, alpha, MAXV, &na);
        else if (!strcmp(a, "--c"))
            bad = cli_opt_list(ME, a, v, 0, cs, MAXV, &nc);
        else if (!strcmp(a, "--t"))
            bad = cli_opt_positive(ME, a, v, &t);
        else if (!strcmp(a, "--t-max"))
            bad = cli_opt_positive(ME, a, v, &t_max);
        else if (!strcmp(a, "--d"))
            bad = cli_opt_long(ME, a, v, 3, 100000000, &d);
        else if (!strcmp(a, "--seed"))
            bad = cli_opt_long(ME, a, v, 0, 2147483647L, &seed);
        else if (!strcmp(a, "--n-out"))
            bad = cli_opt_long(ME, a, v, 3, 1000000, &n_out);
        else if (!strcmp(a, "-o"))
            prefix = v;
        else {
            fprintf(stderr, ME ": unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (bad)
            return 2;
        i++;
    }
    for (int i = 0; i < na; i++)
        if (!(alpha[i] < 1.0)) {
            fprintf(stderr, ME ": --alpha values must be in (0, 1) (small initialisation), got %g\n",
                    alpha[i]);
            return 2;
        }

    int rc = 0;
    scm_error err;
    cJSON *root = cJSON_CreateObject(), *runs = NULL, *sad = NULL;
    cJSON_AddStringToObject(root, "scmode_version", SCM_VERSION);
    cJSON_AddStringToObject(root, "command", "lintarget");
    cJSON *cfg = cJSON_AddObjectToObject(root, "settings");
    cJSON_AddNumberToObject(cfg, "t", t);
    cJSON_AddNumberToObject(cfg, "d", (double)d);
    cJSON_AddNumberToObject(cfg, "seed", (double)seed);
    cJSON_AddNumberToObject(cfg, "t_max", t_max);
    cJSON_AddNumberToObject(cfg, "n_out", (double)n_out);
    scm_lintarget_phase_opts po;
    scm_lintarget_phase_opts_default(&po);
    cJSON *pj = cJSON_AddObjectToObject(cfg, "phase_thresholds");
    cJSON_AddNumberToObject(pj, "align_tol", po.align_tol);
    cJSON_AddNumberToObject(pj, "grow_factor", po.grow_factor);
    cJSON_AddNumberToObject(pj, "coef_tol", po.coef_tol);
    cJSON_AddNumberToObject(pj, "conv_tol", po.conv_tol);
    runs = cJSON_AddArrayToObject(root, "runs");
    char *pcsv = NULL, *tcsv = NULL;
    size_t plen = 0, pcap = 1024, tlen = 0, tcap = 1 << 16;
    pcsv = malloc(pcap);
    tcsv = malloc(tcap);
    if (!pcsv || !tcsv) {
        fprintf(stderr, ME ": out of memory\n");
        rc = 1;
        goto done;
    }
    int ok = cli_buf_printf(&pcsv, &plen, &pcap,
                            "alpha,log_inv_alpha,t_align,t_grow_start,t_grow_end,t_conv,rate,"
                            "imbalance_drift,stop,steps\n") &&
             cli_buf_printf(&tcsv, &tlen, &tcap, "alpha,t,eps,cos1,cos2,Q11,Q22,v1,v2\n");
    double lx[MAXV] = {0}, ta[MAXV] = {0}, tgs[MAXV] = {0}, tge[MAXV] = {0}, tc[MAXV] = {0};
    if (!quiet)
        printf("%-8s %-8s %-9s %-9s %-9s %-9s %-8s %-9s %s\n", "alpha", "log1/a", "t_align",
               "t_grow0", "t_grow1", "t_conv", "rate", "b_drift", "stop");
    for (int i = 0; ok && i < na; i++) {
        scm_traj_result r;
        if (scm_lintarget_run(t, alpha[i], d, (unsigned long)seed, t_max, (int)n_out, &r, &err)) {
            fprintf(stderr, ME ": alpha = %g: %s\n", alpha[i], err.msg);
            rc = 2;
            goto done;
        }
        const double v0[2] = {alpha[i], -alpha[i]};
        scm_model *m = scm_lintarget_model(2, t, v0, NULL);
        scm_lintarget_phases ph;
        if (!m || scm_lintarget_phases_detect(m, &r, &po, &ph, &err)) {
            fprintf(stderr, ME ": alpha = %g: %s\n", alpha[i], m ? err.msg : "out of memory");
            scm_model_free(m);
            scm_traj_result_free(&r);
            rc = 1;
            goto done;
        }
        if (r.stop == SCM_STOP_FAILED) {
            fprintf(stderr, ME ": alpha = %g: the run failed: %s\n", alpha[i], r.err.msg);
            rc = 1;
        }
        lx[i] = log(1.0 / alpha[i]);
        ta[i] = ph.t_align;
        tgs[i] = ph.t_grow_start;
        tge[i] = ph.t_grow_end;
        tc[i] = ph.t_conv;
        if (!quiet)
            printf("%-8.1e %-8.4g %-9.5g %-9.5g %-9.5g %-9.5g %-8.4g %-9.2e %s\n", alpha[i], lx[i],
                   ph.t_align, ph.t_grow_start, ph.t_grow_end, ph.t_conv, ph.rate,
                   ph.imbalance_drift, scm_stop_reason_str(r.stop));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "alpha", alpha[i]);
        cJSON_AddItemToObject(o, "t_align", num(ph.t_align));
        cJSON_AddItemToObject(o, "t_grow_start", num(ph.t_grow_start));
        cJSON_AddItemToObject(o, "t_grow_end", num(ph.t_grow_end));
        cJSON_AddItemToObject(o, "t_conv", num(ph.t_conv));
        cJSON_AddItemToObject(o, "convergence_rate", num(ph.rate));
        cJSON_AddItemToObject(o, "imbalance_drift", num(ph.imbalance_drift));
        cJSON_AddStringToObject(o, "stop_reason", scm_stop_reason_str(r.stop));
        cJSON_AddItemToObject(o, "final_eps", num(r.eps));
        cJSON_AddItemToObject(o, "final_v", scm_output_vector(r.v, 2));
        cJSON_AddItemToArray(runs, o);
        ok = cli_buf_printf(&pcsv, &plen, &pcap, "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.6g,%s,%ld\n",
                            alpha[i], lx[i], ph.t_align, ph.t_grow_start, ph.t_grow_end, ph.t_conv,
                            ph.rate, ph.imbalance_drift, scm_stop_reason_str(r.stop), r.n_steps);
        for (long j = 0; ok && j < r.n_out; j++) {
            const double *Q = r.out_Q + j * 4, *R = r.out_R + j * 4, *v = r.out_v + j * 2;
            ok = cli_buf_printf(&tcsv, &tlen, &tcap, "%.6g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n",
                                alpha[i], r.out_t[j], r.out_eps[j], R[0] / sqrt(Q[0] * t),
                                R[2] / sqrt(Q[3] * t), Q[0], Q[3], v[0], v[1]);
        }
        scm_model_free(m);
        scm_traj_result_free(&r);
    }
    cJSON *fits = cJSON_AddObjectToObject(root, "fits_vs_log_inv_alpha");
    cJSON_AddItemToObject(fits, "t_align", fit_json(lx, ta, na));
    cJSON_AddItemToObject(fits, "t_grow_start", fit_json(lx, tgs, na));
    cJSON_AddItemToObject(fits, "t_grow_end", fit_json(lx, tge, na));
    cJSON_AddItemToObject(fits, "t_conv", fit_json(lx, tc, na));
    /* the saddle manifold */
    sad = cJSON_AddArrayToObject(root, "saddle_manifold");
    const double beta[2] = {0.8, 1.3};
    if (!quiet)
        printf("\nsaddle manifold v1 w1 = (c+1) a, v2 w2 = -c a (d = 3, beta = 0.8, 1.3):\n"
               "%-8s %-12s %-9s %-5s %-5s %-5s %-12s %-7s %s\n", "c", "eps", "grad", "neg",
               "zero", "pos", "change(s)", "ratio", "verdict");
    for (int i = 0; i < nc; i++) {
        scm_lintarget_saddle_report a, b;
        if (scm_lintarget_saddle_check(t, cs[i], beta, 3, 0.01, &a, &err) ||
            scm_lintarget_saddle_check(t, cs[i], beta, 3, 0.02, &b, &err)) {
            fprintf(stderr, ME ": saddle check at c = %g: %s\n", cs[i], err.msg);
            rc = 1;
            goto done;
        }
        double ratio = b.descent_min / a.descent_min;
        const char *verdict = a.n_neg > 0                        ? "strict saddle"
                              : a.descent_min < 0.0 && ratio > 6 ? "non-strict saddle (cubic descent)"
                              : a.descent_min >= 0.0             ? "flat to third order (no descent found)"
                                                                 : "undecided";
        if (!quiet)
            printf("%-8.4g %-12.10g %-9.2e %-5d %-5d %-5d %-12.4e %-7.3g %s\n", cs[i], a.eps,
                   a.grad_max, a.n_neg, a.n_zero, a.n_pos, a.descent_min, ratio, verdict);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "c", cs[i]);
        cJSON_AddItemToObject(o, "eps", num(a.eps));
        cJSON_AddItemToObject(o, "grad_max", num(a.grad_max));
        cJSON_AddNumberToObject(o, "hessian_negative", a.n_neg);
        cJSON_AddNumberToObject(o, "hessian_zero", a.n_zero);
        cJSON_AddNumberToObject(o, "hessian_positive", a.n_pos);
        cJSON_AddNumberToObject(o, "hessian_zero_predicted", a.predicted_zero);
        cJSON_AddItemToObject(o, "flat_change_s", num(a.descent_min));
        cJSON_AddItemToObject(o, "flat_change_2s", num(b.descent_min));
        cJSON_AddNumberToObject(o, "s", a.s0);
        cJSON_AddStringToObject(o, "verdict", verdict);
        cJSON_AddItemToArray(sad, o);
    }
    if (!ok) {
        fprintf(stderr, ME ": out of memory\n");
        rc = 1;
        goto done;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s.phases.csv", prefix);
    if (scm_output_write_atomic(path, pcsv, plen, &err))
        goto wfail;
    snprintf(path, sizeof path, "%s.traces.csv", prefix);
    if (scm_output_write_atomic(path, tcsv, tlen, &err))
        goto wfail;
    snprintf(path, sizeof path, "%s.json", prefix);
    if (scm_output_write_json(path, root, 0, &err))
        goto wfail;
    if (!quiet)
        printf("\nwrote      %s.json, %s.phases.csv, %s.traces.csv\n", prefix, prefix, prefix);
    goto done;
wfail:
    fprintf(stderr, ME ": %s\n", err.msg);
    rc = 1;
done:
    free(pcsv);
    free(tcsv);
    cJSON_Delete(root);
    return rc;
}
