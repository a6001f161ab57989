/* sgd.c: the eta term of one-pass SGD, G = E[delta delta^T] (sgd.h), and
 * the four-point expectations I4 = E[g'(a) g'(b) g(c) g(e)] it is made of.
 * The formulas are derived in docs/sgd.md:
 *  - erf: the factor g'(a) g'(b) = (2/pi) exp(-(a^2 + b^2)/2) tilts the
 *    Gaussian; what is left is the erf pair kernel of (c, e) under the tilted
 *    covariance (Saad and Solla 1995, in this project's convention);
 *  - linear: I4 = C_ce;
 *  - ReLU: I4 = E[c e 1(a, b, c, e > 0)] is reduced by Gaussian integration
 *    by parts (E[x h] = sum_j C_xj E[d_j h]) to orthant probabilities of up
 *    to four variables; the four-variate one is a 1-D integral of closed
 *    forms (Plackett's identity), done with GSL's cquad. */
#include "scm/sgd.h"

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_integration.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/linalg.h"

/* A correlation this close to +-1 (relative determinant 1 - rho^2 below
 * MERGE_SIN2, an angle below 3e-8) makes two ReLU indicators equal (or
 * exclusive): the variables are merged.  Repeated arguments (a = b, a = c,
 * ...) land here exactly.  At that angle the error of merging (of order the
 * angle) and the sensitivity of I4 to a covariance rounded to doubles (of
 * order 1e-16 / angle) are about equal: ~3e-9 absolute for unit variances,
 * the worst accuracy of I4 (at angles near 3e-8; 1e-11 and better above
 * 1e-6).  Correlations of equal arguments must come out as exactly 1 (or
 * within a few ulps): C_ij / sqrt(C_ii C_jj), not / (sd_i sd_j). */
#define MERGE_SIN2 1e-15
#define RHO_SLACK 1e-6
#define CQUAD_NODES 200
#define QUAD_EPSREL 1e-12
#define QUAD_TARGET 1e-10

struct scm_sgd_work {
    int K, M;
    double *J;   /* (K + M)^2 joint covariance, students first */
    double *u;   /* K + M output weights, teachers negated */
    double *buf; /* 3 (K + M): the erf pair quantities of erf_four_point */
    double *psd; /* 2 (K + M)^2: psd_project's Cholesky test and eigenvectors */
    gsl_integration_cquad_workspace *cq;
    /* ReLU: the four-variate orthant probabilities of scm_sgd_term, one per
     * set of four distinct units (P4 is symmetric in its arguments), NaN
     * until computed; allocated on first use (p4_len entries, 0 when
     * C(K + M, 4) is too large to cache).  p4_slot: the entry the next
     * top-level P4 reads or fills, NULL outside scm_sgd_term. */
    double *p4, *p4_slot;
    long p4_len;
};

/* The P4 cache is used when C(K + M, 4) <= this (K + M <= 72, 8 MB). */
#define P4_CACHE_MAX (1L << 20)

scm_sgd_work *scm_sgd_work_alloc(int K, int M)
{
    if (K < 1 || M < 0)
        return NULL;
    scm_sgd_work *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->K = K;
    w->M = M;
    w->J = malloc(sizeof *w->J * (size_t)(K + M) * (size_t)(K + M));
    w->u = malloc(sizeof *w->u * (size_t)(K + M));
    w->buf = malloc(sizeof *w->buf * 3 * (size_t)(K + M));
    w->psd = malloc(sizeof *w->psd * 2 * (size_t)(K + M) * (size_t)(K + M));
    w->cq = gsl_integration_cquad_workspace_alloc(CQUAD_NODES);
    if (!w->J || !w->u || !w->buf || !w->psd || !w->cq) {
        scm_sgd_work_free(w);
        return NULL;
    }
    return w;
}

void scm_sgd_work_free(scm_sgd_work *w)
{
    if (!w)
        return;
    free(w->J);
    free(w->u);
    free(w->buf);
    free(w->psd);
    free(w->p4);
    if (w->cq)
        gsl_integration_cquad_workspace_free(w->cq);
    free(w);
}

/* Finite, symmetric-read, non-negative variances, correlations within the
 * slack. */
static scm_status check_cov4(const double C[16])
{
    for (int i = 0; i < 16; i++)
        if (!isfinite(C[i]))
            return SCM_EINVAL;
    for (int i = 0; i < 4; i++)
        if (C[i * 5] < 0.0)
            return SCM_EINVAL;
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (fabs(C[i * 4 + j]) > sqrt(C[i * 5] * C[j * 5]) * (1.0 + RHO_SLACK))
                return SCM_ENOTPSD;
    return SCM_OK;
}

static double clamp1(double x) { return x > 1.0 ? 1.0 : (x < -1.0 ? -1.0 : x); }

/* (ab jj - aj jb) / jj with the determinant by Kahan's fma algorithm: for a
 * variable nearly parallel to the conditioned one the naive Schur complement
 * loses the digits of its small conditional variance (measured: I4 errors of
 * 1e-8 at angles 1e-7..1e-5). */
static double schur(double ab, double jj, double aj, double jb)
{
    double p = ab * jj, q = aj * jb;
    return ((p - q) + (fma(ab, jj, -p) - fma(aj, jb, -q))) / jj;
}

/* erf: with P = I + C_{ab block}, the tilt gives the factor det(P)^(-1/2) and
 * the covariance C' = C_{ce} - C_{ce,ab} P^{-1} C_{ab,ce} of (c, e). */
static double erf_i4(const double C[16])
{
    double p00 = 1.0 + C[0], p11 = 1.0 + C[5], p01 = C[1];
    double det = p00 * p11 - p01 * p01;
    double cp[2][2];
    for (int x = 0; x < 2; x++)
        for (int y = 0; y < 2; y++) {
            double xa = C[(2 + x) * 4 + 0], xb = C[(2 + x) * 4 + 1];
            double ya = C[(2 + y) * 4 + 0], yb = C[(2 + y) * 4 + 1];
            double quad = (xa * (p11 * ya - p01 * yb) + xb * (p00 * yb - p01 * ya)) / det;
            cp[x][y] = C[(2 + x) * 4 + 2 + y] - quad;
        }
    double s = sqrt(fmax(1.0 + cp[0][0], 0.0) * fmax(1.0 + cp[1][1], 0.0));
    return (4.0 / (M_PI * M_PI)) / sqrt(det) * asin(clamp1(cp[0][1] / s));
}

/* ---- ReLU ---------------------------------------------------------------- */

/* A reduced problem: E[prod_f x_f * prod_{i < n} 1(x_i > 0)], nf <= 2
 * factors among the n <= 4 variables. */
typedef struct {
    int n, nf, f[2];
    double scale;
    double C[4][4];
} orth_prob;

typedef struct {
    double r[4][4];
} corr4;

/* P(x_k > 0, x_l > 0 | x_i = x_j = 0) for the correlation matrix t R. */
static double cond_p2(const corr4 *R, double t, int i, int j, int k, int l)
{
    double rij = t * R->r[i][j], d = 1.0 - rij * rij;
    int o[2] = {k, l};
    double s[2][2];
    for (int x = 0; x < 2; x++)
        for (int y = 0; y < 2; y++) {
            int p = o[x], q = o[y];
            double pi = p == i ? 1.0 : t * R->r[p][i], pj = p == j ? 1.0 : t * R->r[p][j];
            double qi = q == i ? 1.0 : t * R->r[q][i], qj = q == j ? 1.0 : t * R->r[q][j];
            double pq = p == q ? 1.0 : t * R->r[p][q];
            s[x][y] = pq - (pi * (qi - rij * qj) + pj * (qj - rij * qi)) / d;
        }
    if (!(s[0][0] > 0.0 && s[1][1] > 0.0))
        return NAN; /* only at t = 1 for a singular R; cquad skips such points */
    return 0.25 + asin(clamp1(s[0][1] / sqrt(s[0][0] * s[1][1]))) / (2.0 * M_PI);
}

/* dP/dt along R(t) = I + t (R - I): Plackett's identity
 * dP/drho_ij = phi2(0, 0; rho_ij) P(others > 0 | x_i = x_j = 0). */
static double orthant4_integrand(double t, void *params)
{
    const corr4 *R = params;
    static const int pairs[6][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}, {0, 3, 1, 2},
                                    {1, 2, 0, 3}, {1, 3, 0, 2}, {2, 3, 0, 1}};
    double sum = 0.0;
    for (int p = 0; p < 6; p++) {
        int i = pairs[p][0], j = pairs[p][1];
        double rho = R->r[i][j];
        if (rho == 0.0)
            continue;
        double phi2 = 1.0 / (2.0 * M_PI * sqrt(1.0 - t * t * rho * rho));
        sum += rho * phi2 * cond_p2(R, t, i, j, pairs[p][2], pairs[p][3]);
    }
    return sum;
}

/* P(x_0..x_3 > 0) for the correlation matrix R: 1/16 plus the path integral. */
static scm_status orthant4_corr(const corr4 *R, double *out, scm_sgd_work *w)
{
    gsl_function F = {orthant4_integrand, (void *)R};
    double val, abserr;
    size_t nev;
    /* The library leaves GSL's error handler to the program (the CLI turns
     * it off); a failure is judged by the error estimate below. */
    int st = gsl_integration_cquad(&F, 0.0, 1.0, 0.0, QUAD_EPSREL, w->cq, &val, &abserr, &nev);
    *out = 0.0625 + val;
    if (!isfinite(*out))
        return SCM_ENAN;
    if (st != GSL_SUCCESS && abserr > QUAD_TARGET * *out)
        return SCM_ENOCONV;
    return SCM_OK;
}

static double orthant_small(const orth_prob *p)
{
    double r[4][4];
    for (int i = 0; i < p->n; i++)
        for (int j = 0; j < p->n; j++)
            r[i][j] = clamp1(p->C[i][j] / sqrt(p->C[i][i] * p->C[j][j]));
    switch (p->n) {
    case 0:
        return 1.0;
    case 1:
        return 0.5;
    case 2:
        return 0.25 + asin(r[0][1]) / (2.0 * M_PI);
    default: /* 3 */
        return 0.125 + (asin(r[0][1]) + asin(r[0][2]) + asin(r[1][2])) / (4.0 * M_PI);
    }
}

/* Merge parallel variables (equal indicators; a factor on the dropped one
 * becomes a multiple of the kept one) and detect anti-parallel ones (the
 * indicators exclude each other).  Returns 0 when the expectation is zero. */
static int orth_normalise(orth_prob *p)
{
    for (int i = 0; i < p->n; i++)
        if (!(p->C[i][i] > 0.0))
            return 0;
    for (int i = 0; i < p->n; i++)
        for (int j = i + 1; j < p->n; j++) {
            double aa = p->C[i][i], bb = p->C[j][j], c = p->C[i][j];
            double sin2 = schur(aa, bb, c, c) / aa; /* 1 - rho^2 */
            if (sin2 >= MERGE_SIN2)
                continue;
            if (c < 0.0)
                return 0;
            double s = sqrt(bb / aa); /* x_j = s x_i */
            for (int f = 0; f < p->nf; f++)
                if (p->f[f] == j) {
                    p->f[f] = i;
                    p->scale *= s;
                }
            int last = p->n - 1; /* move the last variable into slot j */
            for (int k = 0; k < p->n; k++) {
                p->C[j][k] = p->C[last][k];
                p->C[k][j] = p->C[k][last];
            }
            p->C[j][j] = p->C[last][last];
            for (int f = 0; f < p->nf; f++)
                if (p->f[f] == last)
                    p->f[f] = j;
            p->n--;
            j = i; /* recheck the pairs of i */
        }
    return 1;
}

static scm_status orth_moment(orth_prob p, double *out, scm_sgd_work *w);


/* phi_j(0) E[... | x_j = 0] with the factor list of q (which must not
 * contain j). */
static scm_status orth_condition(const orth_prob *p, int j, int nf, const int *f, double *out,
                                 scm_sgd_work *w)
{
    orth_prob q = {.n = p->n - 1, .nf = nf, .scale = 1.0};
    int map[4], m = 0;
    for (int i = 0; i < p->n; i++)
        map[i] = i == j ? -1 : m++;
    for (int a = 0; a < p->n; a++)
        for (int b = 0; b < p->n; b++)
            if (a != j && b != j)
                q.C[map[a]][map[b]] = schur(p->C[a][b], p->C[j][j], p->C[a][j], p->C[j][b]);
    for (int k = 0; k < nf && k < 2; k++)
        q.f[k] = f[k] >= 0 && f[k] < 4 ? map[f[k]] : -1;
    double v;
    scm_status st = orth_moment(q, &v, w);
    *out = v / sqrt(2.0 * M_PI * p->C[j][j]);
    return st;
}

/* Integration by parts on the first factor x = x_f0:
 * E[x h] = sum_j C_xj E[d_j h], h = (x_f1) prod 1(x_i > 0); d_j of an
 * indicator is delta(x_j), d of the factor x_f1 gives C_{f0 f1} E[prod 1]. */
static scm_status orth_moment(orth_prob p, double *out, scm_sgd_work *w)
{
    *out = 0.0;
    if (!orth_normalise(&p))
        return SCM_OK;
    if (p.nf == 0) {
        if (p.n < 4) {
            *out = p.scale * orthant_small(&p);
            return SCM_OK;
        }
        double *slot = w->p4_slot;
        w->p4_slot = NULL; /* only the top-level P4 is the units' */
        if (slot && !isnan(*slot)) {
            *out = p.scale * *slot;
            return SCM_OK;
        }
        corr4 R;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                R.r[i][j] = i == j ? 1.0 : clamp1(p.C[i][j] / sqrt(p.C[i][i] * p.C[j][j]));
        scm_status st = orthant4_corr(&R, out, w);
        if (slot && st == SCM_OK)
            *slot = *out;
        *out *= p.scale;
        return st;
    }
    int x = p.f[0], rest[2] = {p.nf == 2 ? p.f[1] : -1, -1};
    double sum = 0.0, v;
    scm_status st;
    if (p.nf == 2) {
        orth_prob q = p;
        q.nf = 0;
        q.scale = 1.0;
        if ((st = orth_moment(q, &v, w)))
            return st;
        sum += p.C[x][rest[0]] * v;
    }
    for (int j = 0; j < p.n; j++) {
        if (p.C[x][j] == 0.0 || (p.nf == 2 && j == rest[0]))
            continue; /* the other factor: e delta(e) = 0 */
        if ((st = orth_condition(&p, j, p.nf - 1, rest, &v, w)))
            return st;
        sum += p.C[x][j] * v;
    }
    *out = p.scale * sum;
    return SCM_OK;
}

static scm_status relu_i4(const double C[16], double *out, scm_sgd_work *w)
{
    orth_prob p = {.n = 4, .nf = 2, .f = {2, 3}, .scale = 1.0};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            p.C[i][j] = C[i * 4 + j];
    /* Homogeneity: work with unit variances, I4 scales with the norms of c, e. */
    for (int i = 0; i < 4; i++)
        if (!(C[i * 5] > 0.0)) {
            *out = 0.0; /* g'(0) = 0 and g(0) = 0 */
            return SCM_OK;
        }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            p.C[i][j] = i == j ? 1.0 : clamp1(C[i * 4 + j] / sqrt(C[i * 5] * C[j * 5]));
    scm_status st = orth_moment(p, out, w);
    *out *= sqrt(C[10] * C[15]);
    return st;
}

scm_status scm_sgd_orthant4(const double C[16], double *out, scm_sgd_work *w)
{
    scm_status st = check_cov4(C);
    if (st)
        return st;
    if (!w)
        return SCM_EINVAL;
    orth_prob p = {.n = 4, .nf = 0, .scale = 1.0};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            p.C[i][j] = C[i * 4 + j];
    st = orth_moment(p, out, w);
    return st ? st : (isfinite(*out) ? SCM_OK : SCM_ENAN);
}

scm_status scm_sgd_i4(const scm_activation *act, const double C[16], double *out,
                      scm_sgd_work *w)
{
    scm_status st = check_cov4(C);
    if (st)
        return st;
    if (act == &scm_act_erf)
        *out = erf_i4(C);
    else if (act == &scm_act_linear)
        *out = C[11]; /* C_ce: Isserlis with g' = 1, g(x) = x */
    else if (act == &scm_act_relu) {
        if (!w)
            return SCM_EINVAL;
        if ((st = relu_i4(C, out, w)))
            return st;
    } else
        return SCM_EINVAL;
    return isfinite(*out) ? SCM_OK : SCM_ENAN;
}

/* ---- G ------------------------------------------------------------------ */

static void joint_cov(const scm_model *m, const double *Q, const double *R, double *J)
{
    int K = m->K, M = m->M, n = K + M;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double g;
            if (i < K && j < K)
                g = Q[(i < j ? i : j) * K + (i < j ? j : i)]; /* upper triangle */
            else if (i < K)
                g = R[i * M + (j - K)];
            else if (j < K)
                g = R[j * M + (i - K)];
            else
                g = m->T[(i - K) * M + (j - K)];
            J[i * n + j] = g;
        }
}

/* The sgd term is defined for a PSD joint covariance only.  An integrated
 * state is PSD to its integration error (psd_tol, 1e-6), and near the
 * global minimum the covariance is nearly singular, so the state drifts
 * outside the cone by ~1e-7; there the ReLU reduction, which conditions on
 * single variables, returns numbers that are not four-point expectations
 * of any Gaussian (I4(a, b, c, e) and I4(b, a, e, c) 0.05 apart on a
 * K = M = 3 state 1e-8 outside), and G stopped being a Gram matrix.  So a
 * covariance that fails Cholesky is replaced by its nearest PSD matrix
 * (Frobenius; the negative eigenvalues set to zero), a change of the size
 * of the state's own error; after it the same pairs agree to 1e-12. */
static scm_status psd_project(double *J, int n, double *A)
{
    /* PSD up to round-off (singular ones included: a dead student's zero
     * row, parallel units) passes with a shift of 1e-13 of the scale */
    double scale = 0.0;
    for (int i = 0; i < n; i++)
        scale = fmax(scale, J[i * n + i]);
    memcpy(A, J, sizeof(double) * (size_t)n * (size_t)n);
    for (int i = 0; i < n; i++)
        A[i * n + i] += 1e-13 * scale;
    if (scm_linalg_cholesky(A, n) < 0)
        return SCM_OK;
    double *Vd = A + (size_t)n * (size_t)n;
    memcpy(A, J, sizeof(double) * (size_t)n * (size_t)n);
    gsl_matrix_view av = gsl_matrix_view_array(A, (size_t)n, (size_t)n);
    gsl_matrix_view vv = gsl_matrix_view_array(Vd, (size_t)n, (size_t)n);
    gsl_vector *ev = gsl_vector_alloc((size_t)n);
    gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc((size_t)n);
    scm_status st = SCM_OK;
    if (!ev || !ws)
        st = SCM_ENOMEM;
    else if (gsl_eigen_symmv(&av.matrix, ev, &vv.matrix, ws) != GSL_SUCCESS)
        st = SCM_ESOLVER;
    else
        for (int i = 0; i < n; i++)
            for (int j = 0; j <= i; j++) {
                double s = 0.0;
                for (int a = 0; a < n; a++) {
                    double l = gsl_vector_get(ev, (size_t)a);
                    if (l > 0.0)
                        s += l * Vd[i * n + a] * Vd[j * n + a];
                }
                /* a zero-variance unit (a dead student) stays exactly zero */
                if (J[i * n + i] == 0.0 || J[j * n + j] == 0.0)
                    s = 0.0;
                J[i * n + j] = J[j * n + i] = s;
            }
    if (ev)
        gsl_vector_free(ev);
    if (ws)
        gsl_eigen_symmv_free(ws);
    return st;
}

/* Binomial coefficient C(x, r) for r <= 4 (0 when x < r). */
static long binom(long x, int r)
{
    long c = 1;
    for (int i = 0; i < r; i++)
        c = c * (x - i) / (i + 1);
    return x < r ? 0 : c;
}

/* The P4 cache entry of the units idx[0..3] if they are four distinct
 * units (the combinatorial number of the sorted set), else NULL. */
static double *p4_entry(scm_sgd_work *w, const int idx[4])
{
    int a[4] = {idx[0], idx[1], idx[2], idx[3]};
    for (int i = 1; i < 4; i++) /* insertion sort */
        for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
            int t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
    if (a[0] == a[1] || a[1] == a[2] || a[2] == a[3])
        return NULL;
    return w->p4 + binom(a[0], 1) + binom(a[1], 2) + binom(a[2], 3) + binom(a[3], 4);
}

/* Empty the P4 cache (allocated on first use; left off when too large or
 * out of memory: the values are then computed for every tuple). */
static void p4_reset(scm_sgd_work *w)
{
    const long len = binom(w->K + w->M, 4);
    if (!w->p4 && len > 0 && len <= P4_CACHE_MAX)
        w->p4 = malloc(sizeof *w->p4 * (size_t)len);
    w->p4_len = w->p4 ? len : 0;
    for (long i = 0; i < w->p4_len; i++)
        w->p4[i] = NAN;
}

/* sum_{i,j} u_i u_j I4(k, l, i, j), over i <= j (I4 is symmetric in c, e),
 * each I4 through scm_sgd_i4: the general path (ReLU, linear).  For ReLU
 * the four-variate orthant probability of four distinct units is shared
 * by the up to six tuples (k, l, i, j) over the same set (p4_entry). */
static scm_status four_point_sum(const scm_model *m, const double *u, int k, int l,
                                 scm_sgd_work *w, double *out)
{
    int n = m->K + m->M, idx[4] = {k, l, 0, 0};
    const double *J = w->J;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        if (u[i] == 0.0)
            continue;
        for (int j = i; j < n; j++) {
            if (u[j] == 0.0)
                continue;
            idx[2] = i;
            idx[3] = j;
            double C[16], val;
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++)
                    C[a * 4 + b] = J[idx[a] * n + idx[b]];
            w->p4_slot = w->p4_len ? p4_entry(w, idx) : NULL;
            scm_status st = scm_sgd_i4(m->act, C, &val, w);
            w->p4_slot = NULL;
            if (st)
                return st;
            sum += (i == j ? 1.0 : 2.0) * u[i] * u[j] * val;
        }
    }
    *out = sum;
    return SCM_OK;
}

/* The checks scm_sgd_i4 makes on every 4 x 4 covariance (check_cov4), made
 * once on the joint covariance J (n x n) over the units the sums touch
 * (u_i != 0): every pair of them meets in some (k, l, i, j).  Same statuses,
 * in the same order of kinds. */
static scm_status check_joint(const double *J, int n, const double *u)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n && u[i] != 0.0; j++)
            if (u[j] != 0.0 && !isfinite(J[i * n + j]))
                return SCM_EINVAL;
    for (int i = 0; i < n; i++)
        if (u[i] != 0.0 && J[i * n + i] < 0.0)
            return SCM_EINVAL;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n && u[i] != 0.0; j++)
            if (u[j] != 0.0 &&
                fabs(J[i * n + j]) > sqrt(J[i * n + i] * J[j * n + j]) * (1.0 + RHO_SLACK))
                return SCM_ENOTPSD;
    return SCM_OK;
}

/* The erf four-point sum of the pair (k, l): erf_i4's formula with what
 * depends on (k, l) alone computed once.  With P = I + C_{kl block} and,
 * for every unit y, (g_y, h_y) = adj(P) (C_yk, C_yl), the tilted
 * covariance of (x, y) is C_xy - (C_xk g_y + C_xl h_y) / det P (erf_i4's
 * cp), so each term costs two multiply-adds, two products and one
 * arcsine, and the n tilted variances n square roots (erf_i4: a 16-entry
 * copy, check_cov4's six square roots, the 2 x 2 solve, two square roots
 * and two divisions per term).
 * buf holds 3 n doubles. */
static double erf_four_point(const double *J, int n, const double *u, int k, int l,
                             double *buf)
{
    const double p00 = 1.0 + J[k * n + k], p11 = 1.0 + J[l * n + l], p01 = J[k * n + l];
    const double det = p00 * p11 - p01 * p01, idet = 1.0 / det;
    double *g = buf, *h = buf + n, *is = buf + 2 * n;
    for (int y = 0; y < n; y++) {
        const double ya = J[y * n + k], yb = J[y * n + l];
        g[y] = (p11 * ya - p01 * yb) * idet;
        h[y] = (p00 * yb - p01 * ya) * idet;
    }
    for (int x = 0; x < n; x++) {
        const double cxx = J[x * n + x] - (J[x * n + k] * g[x] + J[x * n + l] * h[x]);
        is[x] = 1.0 / sqrt(fmax(1.0 + cxx, 0.0)); /* inf for a zero: NaN below, as erf_i4 */
    }
    double sum = 0.0;
    for (int x = 0; x < n; x++) {
        if (u[x] == 0.0)
            continue;
        const double xa = J[x * n + k], xb = J[x * n + l], *Jx = J + x * n;
        /* the diagonal term once, the others (y > x) twice */
        double row = 0.5 * u[x] * asin(clamp1((Jx[x] - (xa * g[x] + xb * h[x])) * (is[x] * is[x])));
        for (int y = x + 1; y < n; y++)
            if (u[y] != 0.0)
                row += u[y] * asin(clamp1((Jx[y] - (xa * g[y] + xb * h[y])) * (is[x] * is[y])));
        sum += 2.0 * u[x] * row;
    }
    return (4.0 / (M_PI * M_PI)) / sqrt(det) * sum;
}

/* G = E[delta delta^T] is a Gram matrix; near the global minimum it is a
 * cancellation of O(1) four-point terms down to O(eps), and where the ReLU
 * reduction loses that cancellation (nearly parallel units in a state
 * that is PSD only to round-off, as a run reaches its minimum) the result
 * is not PSD at all: a negative E[delta_k^2], or |G_kl| above
 * sqrt(G_kk G_ll).  Such a G would drive the state out of the PSD cone (a
 * ReLU K = M = 3 run at eta = 0.1 stalled there for 1e5 steps with a loss
 * of -5.8e-7), so it is an error, not a number.  Tolerance: 1e-8 of the
 * scale v_k^2 (sum_i |u_i| sqrt(C_ii))^2 * C_kk of its terms. */
static scm_status gram_check(const double *J, int n, const double *u, const double *v,
                             const double *G, int K, scm_error *err)
{
    double su = 0.0;
    for (int i = 0; i < n; i++)
        su += fabs(u[i]) * sqrt(fmax(J[i * n + i], 0.0));
#define TOL(k) (1e-8 * v[k] * v[k] * su * su * fmax(J[(k) * n + (k)], 0.0))
    for (int k = 0; k < K; k++) {
        if (G[k * K + k] < -TOL(k))
            return scm_error_set(err, SCM_ENOTPSD,
                                 "sgd term lost its accuracy: E[delta_%d^2] = %.3g < 0 "
                                 "(tolerance %.2g; nearly parallel units)",
                                 k, G[k * K + k], TOL(k));
        for (int l = 0; l < k; l++) {
            double b = (fmax(G[k * K + k], 0.0) + TOL(k)) * (fmax(G[l * K + l], 0.0) + TOL(l));
            if (G[k * K + l] * G[k * K + l] > b)
                return scm_error_set(err, SCM_ENOTPSD,
                                     "sgd term lost its accuracy: |E[delta_%d delta_%d]| = %.3g "
                                     "above the Cauchy-Schwarz bound %.3g (nearly parallel units)",
                                     k, l, fabs(G[k * K + l]), sqrt(b));
        }
    }
#undef TOL
    return SCM_OK;
}

scm_status scm_sgd_term(const scm_model *m, const double *Q, const double *R, const double *v,
                        double sigma2, double *G, scm_sgd_work *w, scm_error *err)
{
    int K = m->K, M = m->M, n = K + M;
    if (!w || w->K != K || w->M != M)
        return scm_error_set(err, SCM_EINVAL, "sgd work made for other sizes than K = %d, M = %d",
                             K, M);
    if (!(sigma2 >= 0.0) || !isfinite(sigma2))
        return scm_error_set(err, SCM_EINVAL,
                             "label-noise variance sigma2 = %g must be finite and >= 0", sigma2);
    for (int k = 0; k < K; k++)
        if (!isfinite(v[k]))
            return scm_error_set(err, SCM_EINVAL, "student second-layer weight v[%d] = %g is "
                                 "not finite", k, v[k]);
    scm_status st = scm_model_check_state(m, Q, R, 1e-6, err);
    if (st)
        return st;
    double *u = w->u;
    for (int i = 0; i < n; i++)
        u[i] = i < K ? v[i] : -m->vs[i - K];
    joint_cov(m, Q, R, w->J);
    if ((st = psd_project(w->J, n, w->psd)))
        return scm_error_set(err, st, "sgd term: %s projecting the joint covariance",
                             scm_status_str(st));
    int relu = m->act == &scm_act_relu, erf = m->act == &scm_act_erf;
    if (relu)
        p4_reset(w);
    else
        w->p4_len = 0;
    int any = 0;
    for (int k = 0; k < K; k++)
        any |= v[k] != 0.0;
    if (erf && any)
        st = check_joint(w->J, n, u);
    for (int k = 0; k < K && !st; k++)
        for (int l = k; l < K; l++) {
            double s = 0.0;
            int dead = relu && (w->J[k * n + k] <= 0.0 || w->J[l * n + l] <= 0.0);
            if (!dead && v[k] != 0.0 && v[l] != 0.0) {
                if (erf) {
                    s = erf_four_point(w->J, n, u, k, l, w->buf);
                    if (!isfinite(s)) {
                        st = SCM_ENAN;
                        break;
                    }
                } else if ((st = four_point_sum(m, u, k, l, w, &s)))
                    break;
                if (sigma2 > 0.0) {
                    scm_pair p;
                    st = m->act->pair(w->J[k * n + k], w->J[l * n + l], w->J[k * n + l], &p);
                    if (st)
                        break;
                    s += sigma2 * p.fc; /* E[g'(a) g'(b)] (Price) */
                }
                s *= v[k] * v[l];
            }
            G[k * K + l] = G[l * K + k] = s;
        }
    if (st)
        return scm_error_set(err, st, "sgd term: %s evaluating the four-point expectations",
                             scm_status_str(st));
    for (int i = 0; i < K * K; i++)
        if (!isfinite(G[i]))
            return scm_error_set(err, SCM_ENAN, "sgd term G[%d][%d] is not finite", i / K,
                                 i % K);
    return gram_check(w->J, n, u, v, G, K, err);
}
