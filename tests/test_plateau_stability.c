/* test_plateau_stability.c: the committed data/plateau_stability.csv (and
 * its _counts.csv) against data/plateau_table.csv and a regeneration of a
 * few rows.
 *  - every row has K <= 22, a perturbation and an overall verdict in
 *    {stable, unstable, undecided}, a Hessian kind in {closed, fd, none},
 *    analysis ok (or not_psd for at most one row, the K = 4, M = 2 global
 *    minimum at the edge of the PSD cone);
 *  - every row's key (K, M, dK, family_n_anti, loss) is a global_min or
 *    min_candidate row of the plateau table, and every such table row with
 *    K <= 22 has exactly one row (same order);
 *  - the counts file has one line per (K, M) of the table, whose saddle and
 *    (K > 22) min_candidate counts match the table;
 *  - four rows (K = M = 7 global minimum and n_anti = 1, K = 8 M = 7
 *    n_anti = 1, K = M = 12 n_anti = 3) are recomputed with
 *    scm_stab_analyse and the options of the generator (scm_stab_opts_three_sigma:
 *    3 trials, sigma 1e-4, 1e-3, 1e-2, seed 1) from the point rebuilt as
 *    the generator does (bench/plateau_row.h): the perturbation verdict,
 *    the Hessian kind and its negative / zero / positive counts, and the
 *    flow destinations must equal the file's. */
#include <gsl/gsl_errno.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/plateau_row.h"
#include "scm/model.h"
#include "scm/stability.h"
#include "testutil.h"

#define NCOL 32
#define STAB_KMAX 22 /* the generator's --Kmax */

typedef struct {
    char *f[NCOL];
    int n;
} srow;

/* Split a plain CSV line (no quotes) in place. */
static int split(char *line, srow *s)
{
    line[strcspn(line, "\r\n")] = '\0';
    s->n = 0;
    char *p = line;
    for (;;) {
        if (s->n == NCOL)
            return 0;
        s->f[s->n++] = p;
        p = strchr(p, ',');
        if (!p)
            break;
        *p++ = '\0';
    }
    return s->n == NCOL;
}

enum {
    C_K, C_M, C_DK, C_NANTI, C_LOSS, C_CLS, C_RES, C_HESS, C_HV, C_HN, C_HNEG, C_HZERO, C_HPOS,
    C_HMIN, C_ZM, C_HFD, C_JAC, C_V1, C_V2, C_V3, C_GREW, C_SAME, C_GLOB, C_OTHER, C_FAIL,
    C_UNS, C_OMIN, C_OMAX, C_PV, C_OV, C_AGREE, C_ANALYSIS
};

static FILE *open_data(const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "../data/%s", name);
    FILE *f = fopen(p, "r");
    if (!f) {
        snprintf(p, sizeof p, "data/%s", name);
        f = fopen(p, "r");
    }
    return f;
}

static int is_verdict(const char *s)
{
    return !strcmp(s, "stable") || !strcmp(s, "unstable") || !strcmp(s, "undecided");
}

static void recompute(const pt_row *r, const srow *s)
{
    const int K = r->K, M = r->M;
    double *Q = malloc(sizeof(double) * (size_t)(K * K + K * M)), *R = Q + K * K;
    char why[512];
    CHECK(pt_row_point(r, Q, R, why, sizeof why) == 0, "rebuild K=%d M=%d: %s", K, M, why);
    scm_model *m = scm_model_alloc(K, M, &scm_act_relu, NULL, NULL, NULL, NULL);
    scm_stab_opts o;
    scm_stab_opts_three_sigma(&o);
    scm_stab_result res;
    scm_error e;
    CHECK(scm_stab_analyse(m, Q, R, &o, &res, &e) == SCM_OK, "analyse K=%d M=%d", K, M);
    const char *kind = !res.hessian_done ? "none" : res.hessian_closed ? "closed" : "fd";
    CHECK(strcmp(kind, s->f[C_HESS]) == 0, "K=%d M=%d n_anti=%s: Hessian %s vs file %s", K, M,
          r->n_anti_s, kind, s->f[C_HESS]);
    CHECK(strcmp(scm_hverdict_str(res.hverdict), s->f[C_HV]) == 0, "Hessian verdict %s vs %s",
          scm_hverdict_str(res.hverdict), s->f[C_HV]);
    if (res.hessian_done) {
        CHECK(res.counts.n_neg == atoi(s->f[C_HNEG]), "n_neg %d vs %s", res.counts.n_neg,
              s->f[C_HNEG]);
        CHECK(res.counts.n_zero == atoi(s->f[C_HZERO]), "n_zero %d vs %s", res.counts.n_zero,
              s->f[C_HZERO]);
        CHECK(res.counts.n_pos == atoi(s->f[C_HPOS]), "n_pos %d vs %s", res.counts.n_pos,
              s->f[C_HPOS]);
    }
    CHECK(res.zm.total == atol(s->f[C_ZM]), "zero modes %ld vs %s", res.zm.total, s->f[C_ZM]);
    CHECK(strcmp(scm_verdict_str(res.verdict), s->f[C_PV]) == 0,
          "K=%d M=%d n_anti=%s: verdict %s vs file %s", K, M, r->n_anti_s,
          scm_verdict_str(res.verdict), s->f[C_PV]);
    int same = 0, glob = 0, other = 0;
    for (int i = 0; i < res.n_rows; i++) {
        same += res.rows[i].n_same;
        glob += res.rows[i].n_global;
        other += res.rows[i].n_other;
        CHECK(strcmp(scm_verdict_str(res.rows[i].verdict), s->f[C_V1 + i]) == 0,
              "sigma %g: %s vs %s", res.rows[i].sigma, scm_verdict_str(res.rows[i].verdict),
              s->f[C_V1 + i]);
    }
    CHECK(same == atoi(s->f[C_SAME]) && glob == atoi(s->f[C_GLOB]) &&
              other == atoi(s->f[C_OTHER]),
          "destinations same/global/other %d/%d/%d vs %s/%s/%s", same, glob, other,
          s->f[C_SAME], s->f[C_GLOB], s->f[C_OTHER]);
    CHECK_CLOSE(res.eps, r->loss, 1e-10, 1e-11, "loss of the rebuilt point");
    printf("K=%2d M=%2d n_anti=%2s loss %-16s Hessian %s %s (%d/%d/%d)  %s, file %s\n", K, M,
           r->n_anti_s, r->loss_s, kind, scm_hverdict_str(res.hverdict),
           res.hessian_done ? res.counts.n_neg : -1, res.hessian_done ? res.counts.n_zero : -1,
           res.hessian_done ? res.counts.n_pos : -1, scm_verdict_str(res.verdict), s->f[C_PV]);
    scm_model_free(m);
    free(Q);
}

int main(void)
{
    gsl_set_error_handler_off();
    FILE *ft = open_data("plateau_table.csv"), *fs = open_data("plateau_stability.csv"),
         *fc = open_data("plateau_stability_counts.csv");
    CHECK(ft && fs && fc, "data/plateau_table.csv, plateau_stability.csv or its _counts.csv "
                          "not found");
    if (!ft || !fs || !fc)
        return TEST_SUMMARY();
    static char tl[8192], sl[4096], cl[1024];
    CHECK(fgets(tl, sizeof tl, ft) != NULL, "table header");
    CHECK(fgets(sl, sizeof sl, fs) && strncmp(sl, "K,M,dK,family_n_anti,loss,", 26) == 0,
          "stability header");
    {
        srow h;
        CHECK(split(sl, &h) && !strcmp(h.f[C_OV], "overall_verdict") &&
                  !strcmp(h.f[C_AGREE], "tests_agree") && !strcmp(h.f[C_PV],
                                                                  "perturbation_verdict"),
              "stability header columns");
    }
    CHECK(fgets(cl, sizeof cl, fc) && strncmp(cl, "K,M,dK,table_rows,analysed,", 27) == 0,
          "counts header");
    /* the rows to recompute: K, M, n_anti */
    const int pick[][3] = {{7, 7, 0}, {7, 7, 1}, {8, 7, 1}, {12, 12, 3}};
    const int npick = (int)(sizeof pick / sizeof pick[0]);
    int done[4] = {0}, nrows = 0, nbad = 0, nstab = 0, curK = -1, curM = -1, nsad = 0, nblk = 0,
        nmin = 0, ncnt = 0, nnotpsd = 0;
    int have_line = fgets(sl, sizeof sl, fs) != NULL;
    for (int more = 1; more;) {
        pt_row r;
        more = fgets(tl, sizeof tl, ft) != NULL;
        int ok = more && pt_row_parse(tl, &r);
        if (more && !ok) {
            CHECK(0, "bad table line");
            break;
        }
        if (curK >= 0 && (!more || r.K != curK || r.M != curM)) {
            /* the counts line of the finished (K, M) */
            int good = fgets(cl, sizeof cl, fc) != NULL;
            cl[strcspn(cl, "\r\n")] = '\0';
            int cK, cM, cdK, crows, can, csad, cblk, coth;
            good = good && sscanf(cl, "%d,%d,%d,%d,%d,%d,%d,%d", &cK, &cM, &cdK, &crows, &can,
                                  &csad, &cblk, &coth) == 8;
            CHECK(good && cK == curK && cM == curM && csad == nsad && cblk == nblk &&
                      can == nmin,
                  "counts K=%d M=%d: '%s' vs saddles %d, min candidates beyond K = 22 %d, "
                  "analysed %d",
                  curK, curM,
                  cl, nsad, nblk, nmin);
            ncnt++;
            nsad = nblk = nmin = 0;
        }
        if (!more)
            break;
        curK = r.K;
        curM = r.M;
        nsad += !strcmp(r.cls, "saddle");
        const int cand = !strcmp(r.cls, "min_candidate");
        nblk += cand && r.K > STAB_KMAX;
        nrows++;
        if (!(!strcmp(r.cls, "global_min") || cand) || r.K > STAB_KMAX)
            continue;
        nmin++;
        /* the next stability row must be this one */
        srow s;
        if (!have_line || !split(sl, &s)) {
            if (nbad++ < 5)
                CHECK(0, "no (or a malformed) stability row for K=%d M=%d n_anti=%s loss %s",
                      r.K, r.M, r.n_anti_s, r.loss_s);
            continue;
        }
        nstab++;
        int key = !strcmp(s.f[C_K], r.K_s) && !strcmp(s.f[C_M], r.M_s) &&
                  !strcmp(s.f[C_DK], r.dK_s) && !strcmp(s.f[C_NANTI], r.n_anti_s) &&
                  !strcmp(s.f[C_LOSS], r.loss_s) && !strcmp(s.f[C_CLS], r.cls);
        int K = atoi(s.f[C_K]);
        int good = key && K <= STAB_KMAX && is_verdict(s.f[C_PV]) && is_verdict(s.f[C_OV]) &&
                   (!strcmp(s.f[C_HESS], "closed") || !strcmp(s.f[C_HESS], "fd") ||
                    !strcmp(s.f[C_HESS], "none")) &&
                   (!strcmp(s.f[C_AGREE], "yes") || !strcmp(s.f[C_AGREE], "no") ||
                    !strcmp(s.f[C_AGREE], "not_comparable")) &&
                   (!strcmp(s.f[C_ANALYSIS], "ok") || !strcmp(s.f[C_ANALYSIS], "not_psd"));
        nnotpsd += good && !strcmp(s.f[C_ANALYSIS], "not_psd");
        if (!good && nbad++ < 5)
            CHECK(0, "stability row %s,%s,%s,%s,%s (%s) vs table K=%d M=%d n_anti=%s loss %s",
                  s.f[C_K], s.f[C_M], s.f[C_DK], s.f[C_NANTI], s.f[C_LOSS], s.f[C_PV], r.K, r.M,
                  r.n_anti_s, r.loss_s);
        for (int i = 0; i < npick; i++)
            if (!done[i] && good && r.K == pick[i][0] && r.M == pick[i][1] &&
                r.n_anti == pick[i][2]) {
                done[i] = 1;
                recompute(&r, &s);
            }
        have_line = fgets(sl, sizeof sl, fs) != NULL;
    }
    CHECK(nbad == 0, "%d bad stability rows", nbad);
    /* the one known non-realisable row: K = 4, M = 2 global minimum (two
     * parallel extra students, Q[extra,extra] off > diag by 1e-9) */
    CHECK(nnotpsd <= 1, "%d rows not realisable (not_psd)", nnotpsd);
    CHECK(!have_line, "the stability file has rows beyond the table's minima");
    CHECK(fgets(cl, sizeof cl, fc) == NULL, "the counts file has extra lines");
    for (int i = 0; i < npick; i++)
        CHECK(done[i], "no row K=%d M=%d n_anti=%d", pick[i][0], pick[i][1], pick[i][2]);
    fclose(ft);
    fclose(fs);
    fclose(fc);
    printf("%d table rows, %d stability rows, %d (K, M) counts\n", nrows, nstab, ncnt);
    return TEST_SUMMARY();
}
