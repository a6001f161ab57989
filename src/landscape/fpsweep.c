/* fpsweep.c: enumeration of all k1 instances seeded from their neighbours;
 * see fpsweep.h. */
#include "scm/fpsweep.h"

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_permutation.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "core/parallel.h"

void scm_fp_sweep_free(scm_fp_sweep *sw)
{
    for (int i = 0; i < sw->n; i++) {
        if (sw->inst)
            scm_ansatz_inst_free(sw->inst[i]);
        if (sw->set)
            scm_fp_set_free(&sw->set[i]);
    }
    free(sw->inst);
    free(sw->set);
    free(sw->seeds);
    free(sw->nothing_new);
    memset(sw, 0, sizeof *sw);
}

/* Map the scalars of solution x of instance from onto instance to by
 * name; a scalar that from lacks (a group of size 0 or 1 there) starts at
 * 1 for a diagonal of Q and at 0 otherwise. */
static void map_point(const scm_ansatz_inst *from, const double *x, const scm_ansatz_inst *to,
                      double *y)
{
    int n = scm_ansatz_inst_nscalars(to);
    for (int c = 0; c < n; c++) {
        const char *name = scm_ansatz_inst_scalar_name(to, c);
        int f = scm_ansatz_inst_find(from, name);
        y[c] = f >= 0 ? x[f] : strncmp(name, "Q[", 2) == 0 && strstr(name, ".diag") ? 1.0 : 0.0;
    }
}

/* map_point, except that an off-diagonal scalar that from lacks (a group
 * of size 1 there: "Q[g,g].off" or "R[g,t].off") starts at the group's
 * overlap with another group ("Q[g,h]" or "Q[h,g]", or "R[g,u]") when from
 * has one: when a group grows from one student to two, the new pair
 * overlaps like its student and the other students (0 as in map_point
 * missed the k1 = 2 family at K = M = 1000 from the k1 = 1 point). */
static void map_point_fill(const scm_ansatz_inst *from, const double *x, const scm_ansatz_inst *to,
                           double *y)
{
    map_point(from, x, to, y);
    int n = scm_ansatz_inst_nscalars(to), nf = scm_ansatz_inst_nscalars(from);
    for (int c = 0; c < n; c++) {
        const char *name = scm_ansatz_inst_scalar_name(to, c);
        size_t len = strlen(name);
        if (len < 6 || strcmp(name + len - 4, ".off") != 0 || scm_ansatz_inst_find(from, name) >= 0)
            continue;
        const char *comma = strchr(name, ',');
        if (!comma)
            continue;
        char mat = name[0];
        size_t glen = (size_t)(comma - name) - 2; /* the student group between '[' and ',' */
        for (int f = 0; f < nf; f++) {
            const char *fn = scm_ansatz_inst_scalar_name(from, f);
            if (fn[0] != mat || strchr(fn, '.') != NULL) /* constant blocks have no suffix */
                continue;
            const char *fc = strchr(fn, ',');
            int first = fc && (size_t)(fc - fn) - 2 == glen && strncmp(fn + 2, name + 2, glen) == 0;
            int second = mat == 'Q' && fc && strlen(fc + 1) == glen + 1 &&
                         strncmp(fc + 1, name + 2, glen) == 0;
            if (first || second) {
                y[c] = x[f];
                break;
            }
        }
    }
}

/* Move the points of src that are new to dst into dst; the others add
 * their hits.  A point is not new if its scalars are within tol (max
 * norm) of a point of dst, or its loss equals one's to 1e-10 relative: the
 * latter keeps a continuum of fixed points (ReLU's collapsed manifold,
 * where only the sum of the student norms matters) from seeding ever new
 * copies of itself through the passes.  Returns the number moved, or -1
 * for no memory.  src is emptied. */
static int merge_new(scm_fp_set *dst, scm_fp_set *src, double tol)
{
    int moved = 0;
    for (int p = 0; p < src->n; p++) {
        scm_fp_point *q = &src->pt[p];
        int dup = -1;
        for (int r = 0; r < dst->n && dup < 0; r++) {
            double d = 0.0;
            for (int c = 0; c < q->nsc; c++)
                d = fmax(d, fabs(dst->pt[r].x[c] - q->x[c]));
            double e = dst->pt[r].eps;
            if (d < tol || fabs(q->eps - e) <= 1e-10 * fmax(1e-3, fabs(e)))
                dup = r;
        }
        if (dup >= 0) {
            dst->pt[dup].hits += q->hits;
            free(q->x);
            free(q->Q);
            free(q->R);
            continue;
        }
        if (dst->n == dst->cap) {
            int cap = dst->cap ? 2 * dst->cap : 16;
            scm_fp_point *np = realloc(dst->pt, sizeof *np * (size_t)cap);
            if (!np) {
                for (int r = p; r < src->n; r++) {
                    free(src->pt[r].x);
                    free(src->pt[r].Q);
                    free(src->pt[r].R);
                }
                src->n = 0;
                return -1;
            }
            dst->pt = np;
            dst->cap = cap;
        }
        dst->pt[dst->n++] = *q;
        moved++;
    }
    dst->n_starts += src->n_starts;
    dst->n_converged += src->n_converged;
    dst->n_noprog += src->n_noprog;
    dst->n_maxiter += src->n_maxiter;
    dst->n_domain += src->n_domain;
    dst->n_notpsd += src->n_notpsd;
    dst->n_deflated += src->n_deflated;
    dst->n_deflated_new += src->n_deflated_new;
    free(src->pt);
    scm_fp_set_init(src);
    return moved;
}

/* One instance i seeded from the solutions of instance j (j < 0: none),
 * after the n_ext starts ext (already in instance i's scalars).  Returns
 * the number of new solutions, or -1 with err set. */
static int run_one(const scm_ansatz *a, const scm_activation *act, const scm_fp_opts *o,
                   scm_fp_sweep *sw, int i, int j, int seen_j, const double *ext, int n_ext,
                   scm_error *err)
{
    int n = scm_ansatz_inst_nscalars(sw->inst[i]);
    int ns = j >= 0 ? sw->set[j].n - seen_j : 0;
    double *starts = malloc(sizeof(double) * (size_t)n * (size_t)(ns + n_ext > 0 ? ns + n_ext : 1));
    if (!starts) {
        scm_error_set(err, SCM_ENOMEM, "out of memory in the k1 sweep");
        return -1;
    }
    if (n_ext)
        memcpy(starts, ext, sizeof(double) * (size_t)n * (size_t)n_ext);
    for (int s = 0; s < ns; s++)
        map_point(sw->inst[j], sw->set[j].pt[seen_j + s].x, sw->inst[i],
                  starts + (size_t)(n_ext + s) * (size_t)n);
    scm_fp_set tmp;
    scm_fp_set_init(&tmp);
    scm_status st = scm_fp_enumerate_solves(a, sw->inst[i], act, o, starts, ns + n_ext, &tmp, err);
    free(starts);
    if (st) {
        scm_fp_set_free(&tmp);
        return -1;
    }
    int starts_run = tmp.n_starts;
    int moved = merge_new(&sw->set[i], &tmp, o->dedup_tol);
    if (moved < 0) {
        scm_error_set(err, SCM_ENOMEM, "out of memory in the k1 sweep");
        return -1;
    }
    sw->seeds[i] += ns;
    sw->nothing_new[i] += starts_run - moved;
    return moved;
}

int scm_fp_seed_starts(const scm_fp_seed *seeds, int n_seeds, const scm_ansatz_inst *in, int k1,
                       double **out, int *n_ext)
{
    int n = scm_ansatz_inst_nscalars(in), m = 0;
    *out = NULL;
    *n_ext = 0;
    for (int s = 0; s < n_seeds; s++)
        m += seeds[s].k1 == k1;
    if (!m)
        return 0;
    double *y = malloc(sizeof(double) * (size_t)n * (size_t)m);
    if (!y)
        return -1;
    int r = 0;
    for (int s = 0; s < n_seeds; s++) {
        if (seeds[s].k1 != k1)
            continue;
        for (int c = 0; c < n; c++) {
            const char *name = scm_ansatz_inst_scalar_name(in, c);
            int f = -1;
            for (int q = 0; q < seeds[s].n && f < 0; q++)
                if (strcmp(seeds[s].names[q], name) == 0)
                    f = q;
            y[(size_t)r * (size_t)n + (size_t)c] =
                f >= 0 ? seeds[s].values[f]
                       : strncmp(name, "Q[", 2) == 0 && strstr(name, ".diag") ? 1.0 : 0.0;
        }
        r++;
    }
    *out = y;
    *n_ext = m;
    return 0;
}

scm_status scm_fp_sweep_k1(const scm_ansatz *a, int K, int M, const scm_activation *act,
                           const scm_fp_opts *o, int max_passes, scm_fp_sweep *sw,
                           scm_error *err)
{
    return scm_fp_sweep_k1_seeded(a, K, M, act, o, max_passes, NULL, 0, sw, NULL, err);
}

scm_status scm_fp_sweep_k1_seeded(const scm_ansatz *a, int K, int M, const scm_activation *act,
                                  const scm_fp_opts *o, int max_passes, const scm_fp_seed *seeds,
                                  int n_seeds, scm_fp_sweep *sw, int **seeds_tried,
                                  scm_error *err)
{
    if (seeds_tried)
        *seeds_tried = NULL;
    memset(sw, 0, sizeof *sw);
    scm_status st = scm_fp_opts_check(o, err);
    if (st)
        return st;
    if (max_passes < 2)
        return scm_error_set(err, SCM_EINVAL, "k1 sweep: max_passes must be >= 2, got %d",
                             max_passes);
    int lo, hi, ap = scm_ansatz_applies(a, K, M, &lo, &hi);
    if (ap != 1)
        return scm_error_set(err, SCM_EINVAL, "ansatz '%s' does not apply at K = %d, M = %d",
                             scm_ansatz_name(a), K, M);
    sw->k1_min = lo;
    sw->k1_max = hi;
    int n = hi - lo + 1;
    sw->inst = calloc((size_t)n, sizeof *sw->inst);
    sw->set = calloc((size_t)n, sizeof *sw->set);
    sw->seeds = calloc((size_t)n, sizeof(int));
    sw->nothing_new = calloc((size_t)n, sizeof(int));
    /* how many of each instance's solutions have already seeded a neighbour,
     * per direction, so that each solution seeds each neighbour once */
    int *seen_up = calloc((size_t)n, sizeof(int)), *seen_dn = calloc((size_t)n, sizeof(int));
    int *tried = seeds_tried ? calloc((size_t)n, sizeof(int)) : NULL;
    if (seeds_tried && !tried) {
        free(seen_up);
        free(seen_dn);
        free(sw->inst);
        free(sw->set);
        free(sw->seeds);
        free(sw->nothing_new);
        memset(sw, 0, sizeof *sw);
        return scm_error_set(err, SCM_ENOMEM, "out of memory in the k1 sweep");
    }
    if (!sw->inst || !sw->set || !sw->seeds || !sw->nothing_new ||
        !seen_up || !seen_dn) {
        free(sw->inst);
        free(sw->set);
        sw->inst = NULL;
        sw->set = NULL;
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the k1 sweep");
        goto done;
    }
    sw->n = n;
    for (int i = 0; i < n; i++)
        if (!(sw->inst[i] = scm_ansatz_instantiate(a, K, M, lo + i, err))) {
            st = err ? err->code : SCM_EINVAL;
            goto done;
        }
    scm_fp_opts later = *o;
    later.n_random = 0;
    /* Round 0: the sweep.  Round 1 (with seeds): the seeds, tried after
     * everything else so that they only add solutions (tried first, they
     * change which roots the random starts and deflation reach), then the
     * neighbour passes again to carry what they found to other k1. */
    sw->passes = 0;
    for (int round = 0; round < (n_seeds > 0 ? 2 : 1); round++) {
        if (round == 1) {
            int added = 0;
            for (int i = 0; i < n; i++) {
                double *ext = NULL;
                int n_ext = 0;
                if (scm_fp_seed_starts(seeds, n_seeds, sw->inst[i], lo + i, &ext, &n_ext)) {
                    st = scm_error_set(err, SCM_ENOMEM, "out of memory in the k1 sweep");
                    goto done;
                }
                int got = n_ext ? run_one(a, act, &later, sw, i, -1, 0, ext, n_ext, err) : 0;
                free(ext);
                if (got < 0) {
                    st = err ? err->code : SCM_ENOMEM;
                    goto done;
                }
                if (tried)
                    tried[i] += n_ext;
                added += got;
            }
            if (!added)
                break;
        }
        for (int pass = round; pass < max_passes; pass++) {
            int up = pass % 2 == 0, found = 0;
            sw->passes++;
            for (int t = 0; t < n; t++) {
                int i = up ? t : n - 1 - t, j = up ? i - 1 : i + 1;
                if (j < 0 || j >= n) {
                    if (pass > 0)
                        continue;
                    j = -1;
                }
                int *seen = up ? seen_up : seen_dn;
                if (pass > 0 && sw->set[j].n == seen[j])
                    continue;
                int seen_j = j >= 0 ? seen[j] : 0;
                if (j >= 0)
                    seen[j] = sw->set[j].n;
                int got = run_one(a, act, pass ? &later : o, sw, i, j, seen_j, NULL, 0, err);
                if (got < 0) {
                    st = err ? err->code : SCM_ENOMEM;
                    goto done;
                }
                found += got;
            }
            if (pass > 0 && found == 0)
                break;
        }
    }
    /* the checks of the solutions kept (the merging dropped the others) */
    for (int i = 0; i < n && !st; i++)
        st = scm_fp_check_points(sw->inst[i], act, o, sw->set[i].pt, sw->set[i].n, err);
done:
    free(seen_up);
    free(seen_dn);
    if (st) {
        scm_fp_sweep_free(sw);
        free(tried);
    } else if (seeds_tried) {
        *seeds_tried = tried;
    }
    return st;
}

/* ---- the chain in M: each (K, M) seeded with the points of M - 1 ---- */

/* The points of sw as seeds (names point into sw's instances, values into
 * its points: sw must outlive them), then the n_extra seeds extra. */
static scm_fp_seed *sweep_seeds(const scm_fp_sweep *sw, const scm_fp_seed *extra, int n_extra,
                                int *n, const char ***names)
{
    int m = n_extra, nn = 0;
    for (int i = 0; i < sw->n; i++) {
        m += sw->set[i].n;
        nn += scm_ansatz_inst_nscalars(sw->inst[i]);
    }
    scm_fp_seed *s = malloc(sizeof *s * (size_t)(m + 1));
    const char **nm = malloc(sizeof *nm * (size_t)(nn + 1));
    if (!s || !nm) {
        free(s);
        free(nm);
        return NULL;
    }
    int r = 0, c0 = 0;
    for (int i = 0; i < sw->n; i++) {
        int nsc = scm_ansatz_inst_nscalars(sw->inst[i]);
        for (int c = 0; c < nsc; c++)
            nm[c0 + c] = scm_ansatz_inst_scalar_name(sw->inst[i], c);
        for (int p = 0; p < sw->set[i].n; p++)
            s[r++] = (scm_fp_seed){sw->k1_min + i, nsc, nm + c0, sw->set[i].pt[p].x};
        c0 += nsc;
    }
    for (int e = 0; e < n_extra; e++)
        s[r++] = extra[e];
    *n = r;
    *names = nm;
    return s;
}

scm_status scm_fp_sweep_k1_chain(const scm_ansatz *a, int dK, int M0, int M,
                                 const scm_activation *act, const scm_fp_opts *o, int max_passes,
                                 const scm_fp_seed *seeds, int n_seeds, scm_fp_sweep *sw,
                                 int **seeds_tried, int *steps, scm_error *err)
{
    *steps = 0;
    if (M0 < 1 || M0 > M)
        return scm_error_set(err, SCM_EINVAL, "chain: need 1 <= M0 <= M, got M0 = %d, M = %d",
                             M0, M);
    scm_fp_sweep prev;
    memset(&prev, 0, sizeof prev);
    memset(sw, 0, sizeof *sw);
    if (seeds_tried)
        *seeds_tried = NULL;
    scm_status st = SCM_OK;
    for (int m = M0; m <= M; m++) {
        int lo, hi;
        if (m < M && (m + dK < 1 || scm_ansatz_applies(a, m + dK, m, &lo, &hi) != 1 || hi <= lo))
            continue; /* a link the ansatz (or the sweep) does not cover */
        const char **names = NULL;
        int ns = 0, n_extra = m == M ? n_seeds : 0;
        scm_fp_seed *sd = NULL;
        if (prev.n || n_extra) {
            if (!(sd = sweep_seeds(&prev, seeds, n_extra, &ns, &names))) {
                st = scm_error_set(err, SCM_ENOMEM, "out of memory in the chain in M");
                break;
            }
        }
        scm_fp_sweep cur;
        st = scm_fp_sweep_k1_seeded(a, m + dK, m, act, o, max_passes, sd, ns, &cur,
                                    m == M ? seeds_tried : NULL, err);
        free(sd);
        free(names);
        if (st)
            break;
        scm_fp_sweep_free(&prev);
        prev = cur;
        (*steps)++;
    }
    if (st) {
        scm_fp_sweep_free(&prev);
        return st;
    }
    *sw = prev;
    return SCM_OK;
}

/* ---- all k1 at a large M from a small one: continuation in M (issue 11) ---- */

/* A chord-Newton corrector for solutions a small step from the last one:
 * the Jacobian (forward differences, n residual evaluations) is kept from
 * the previous point of the branch and refreshed only when it stops
 * contracting, so a step costs a few residual evaluations. */
typedef struct {
    int n, valid, fresh; /* fresh: computed at the current iterate */
    gsl_matrix *J;
    gsl_permutation *perm;
    gsl_vector *F, *dx;
    double *xt, *Ft;
    long evals;          /* residual evaluations, for the bench */
    long hybrids;        /* fallbacks to scm_fp_solve */
} chord;

static void chord_free(chord *c)
{
    if (c->J)
        gsl_matrix_free(c->J);
    if (c->perm)
        gsl_permutation_free(c->perm);
    if (c->F)
        gsl_vector_free(c->F);
    if (c->dx)
        gsl_vector_free(c->dx);
    free(c->xt);
    c->J = NULL;
    c->perm = NULL;
    c->F = c->dx = NULL;
    c->xt = NULL;
    c->n = c->valid = 0;
}

static int chord_size(chord *c, int n)
{
    if (c->n == n)
        return 0;
    long ev = c->evals, hy = c->hybrids;
    chord_free(c);
    c->evals = ev;
    c->hybrids = hy;
    c->J = gsl_matrix_alloc((size_t)n, (size_t)n);
    c->perm = gsl_permutation_alloc((size_t)n);
    c->F = gsl_vector_alloc((size_t)n);
    c->dx = gsl_vector_alloc((size_t)n);
    c->xt = malloc(sizeof(double) * (size_t)n * 2);
    if (!c->J || !c->perm || !c->F || !c->dx || !c->xt) {
        chord_free(c);
        return -1;
    }
    c->Ft = c->xt + n;
    c->n = n;
    return 0;
}

/* Forward-difference Jacobian at x (F = F(x)) and its LU factors. */
static int chord_refresh(chord *c, scm_blockflow *bf, const double *x, const double *F)
{
    int n = c->n, sg;
    for (int j = 0; j < n; j++) {
        memcpy(c->xt, x, sizeof(double) * (size_t)n);
        double h = 1e-7 * fmax(1.0, fabs(x[j]));
        c->xt[j] += h;
        c->evals++;
        if (scm_blockflow_residual(bf, c->xt, c->Ft, NULL))
            return -1;
        for (int i = 0; i < n; i++)
            gsl_matrix_set(c->J, (size_t)i, (size_t)j, (c->Ft[i] - F[i]) / h);
    }
    if (gsl_linalg_LU_decomp(c->J, c->perm, &sg) != GSL_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++)
        if (!(fabs(gsl_matrix_get(c->J, (size_t)i, (size_t)i)) > 1e-300))
            return -1;
    c->valid = c->fresh = 1;
    return 0;
}

/* Correct x (overwritten) to a solution of the block residual: 0 and *res,
 * *eps on success (max |F| < o->accept, iterated down to o->tol or until
 * no decrease), -1 on failure. */
static int chord_solve(chord *c, scm_blockflow *bf, double *x, const scm_fp_opts *o,
                       double *res, double *eps)
{
    int n = scm_ansatz_inst_nscalars(scm_blockflow_inst(bf));
    if (chord_size(c, n))
        return -1;
    c->fresh = 0;
    double *F = c->F->data;
    c->evals++;
    if (scm_blockflow_residual(bf, x, F, eps))
        return -1;
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r = fmax(r, fabs(F[i]));
    for (int it = 0; it < 30 && r >= o->tol; it++) {
        if (!c->valid && chord_refresh(c, bf, x, F)) {
            c->valid = 0;
            break;
        }
        if (gsl_linalg_LU_solve(c->J, c->perm, c->F, c->dx) != GSL_SUCCESS)
            break;
        for (int i = 0; i < n; i++)
            c->xt[i] = x[i] - c->dx->data[i];
        double e1, r1 = INFINITY;
        c->evals++;
        if (scm_blockflow_residual(bf, c->xt, c->Ft, &e1) == SCM_OK) {
            r1 = 0.0;
            for (int i = 0; i < n; i++)
                r1 = fmax(r1, fabs(c->Ft[i]));
        }
        if (!(r1 < 0.5 * r) && !c->fresh) {
            /* the kept Jacobian no longer contracts: refresh it here */
            if (chord_refresh(c, bf, x, F)) {
                c->valid = 0;
                break;
            }
            if (!(r1 < r))
                continue;
        }
        if (!(r1 < r))
            break;
        memcpy(x, c->xt, sizeof(double) * (size_t)n);
        memcpy(F, c->Ft, sizeof(double) * (size_t)n);
        *eps = e1;
        r = r1;
        c->fresh = 0;
    }
    *res = r;
    return r < o->accept ? 0 : -1;
}

/* chord_solve, and where it fails GSL's hybrids (scm_fp_solve: a trust
 * region, which also converges on a singular Jacobian, e.g. on a
 * continuum of fixed points) from the same start. */
static int corrector(chord *c, scm_blockflow *bf, double *x, const scm_fp_opts *o, double *res,
                     double *eps)
{
    int n = scm_ansatz_inst_nscalars(scm_blockflow_inst(bf));
    double x0[256];
    memcpy(x0, x, sizeof(double) * (size_t)n);
    if (chord_solve(c, bf, x, o, res, eps) == 0)
        return 0;
    memcpy(x, x0, sizeof(double) * (size_t)n);
    scm_fp_opts oo = *o;
    oo.max_iter = 30;
    c->hybrids++;
    if (scm_fp_solve(bf, x, &oo, res) != SCM_OK)
        return -1;
    c->valid = 0;
    return scm_blockflow_residual(bf, x, NULL, eps) == SCM_OK ? 0 : -1;
}

/* Is x (loss eps) already in s (scalars within tol, or the same loss to
 * 1e-10 relative: see merge_new)? */
static int in_set(const scm_fp_set *s, const double *x, int n, double eps, double tol)
{
    for (int r = 0; r < s->n; r++) {
        double d = 0.0;
        for (int c = 0; c < n && d < tol; c++)
            d = fmax(d, fabs(s->pt[r].x[c] - x[c]));
        double e = s->pt[r].eps;
        if (d < tol || fabs(eps - e) <= 1e-10 * fmax(1e-3, fabs(e)))
            return 1;
    }
    return 0;
}

/* Append a block-level solution to s (the full-space fields NaN). */
static int set_add(scm_fp_set *s, const scm_ansatz_inst *in, const double *x, double eps,
                   double res, double gmin)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        scm_fp_point *np = realloc(s->pt, sizeof *np * (size_t)cap);
        if (!np)
            return -1;
        s->pt = np;
        s->cap = cap;
    }
    int n = scm_ansatz_inst_nscalars(in);
    scm_fp_point *p = &s->pt[s->n];
    memset(p, 0, sizeof *p);
    if (!(p->x = malloc(sizeof(double) * (size_t)n)))
        return -1;
    memcpy(p->x, x, sizeof(double) * (size_t)n);
    snprintf(p->ansatz, sizeof p->ansatz, "%s", scm_ansatz_inst_name(in));
    p->K = in->K;
    p->M = in->M;
    p->k1 = in->k1;
    p->nsc = n;
    p->eps = eps;
    p->res_block = res;
    p->gram_min = gmin;
    p->hits = 1;
    p->jac_smin = p->jac_smax = p->res_full = p->inv_dev = p->block_vs_full = NAN;
    p->eps_full = p->res_polish = p->eps_polish = p->polish_shift = NAN;
    s->n++;
    return 0;
}

/* Is the solution x of bf acceptable (PSD Gram matrix)? */
static int psd_ok(scm_blockflow *bf, const double *x, const scm_fp_opts *o, double *gmin)
{
    return scm_blockflow_gram_min_eig(bf, x, gmin) == SCM_OK && *gmin >= -o->psd_tol;
}

/* The secant predictor of a path in a parameter p: x at p_next from the
 * current point xc (at pc) and the previous one xp (at pp; NaN: none, the
 * prediction is xc itself). */
static void path_predict(const double *xc, const double *xp, double pc, double pp,
                         double p_next, int n, double *out)
{
    for (int c = 0; c < n; c++)
        out[c] = isnan(pp) ? xc[c] : xc[c] + (xc[c] - xp[c]) * (p_next - pc) / (pc - pp);
}

/* Did the corrector stay on the branch?  A correction of the prediction
 * much larger than the last step (0.05 + twice it, max norm) is a jump
 * to another branch. */
static int path_no_jump(const double *xc, const double *xp, double pc, double pp,
                        double p_next, int n, const double *xt)
{
    double corr = 0.0, last = 0.0, pred[256];
    path_predict(xc, xp, pc, pp, p_next, n, pred);
    for (int c = 0; c < n; c++) {
        corr = fmax(corr, fabs(xt[c] - pred[c]));
        last = fmax(last, isnan(pp) ? 0.0 : fabs(xc[c] - xp[c]));
    }
    return corr <= 0.05 + 2.0 * last;
}

/* The k1 of path `mode` from base instance j (of lo0..hi0 at M0) at M.
 * Mode 0 (proportional): the ends keep k1 (j <= lo0 + 1) or K - k1
 * (j >= hi0 - 1) fixed, so that their groups of size 0 or 1 keep their
 * scalars; the others follow the straight line to the integer nearest
 * j M1 / M0 (in proportion to the range), so both groups grow in
 * proportion.  Mode 1 keeps k1 fixed and mode 2 keeps K - k1 fixed: one
 * group keeps its size (a family of k1 anti-aligned students at every M,
 * as the plateau table follows them). */
static double path_k1(int j, int mode, int lo0, int hi0, int lo1, int hi1, double M0,
                      double M1, double M)
{
    double t;
    if (mode == 1 || (mode == 0 && j <= lo0 + 1))
        t = lo1 + (j - lo0);
    else if (mode == 2 || (mode == 0 && j >= hi0 - 1))
        t = hi1 - (hi0 - j);
    else
        t = lo1 + round((double)(j - lo0) * (hi1 - lo1) / (double)(hi0 - lo0));
    return j + (t - j) * (M - M0) / (M1 - M0);
}

/* Follow solution x0 of instance (M0 + dK, M0, j) along its path to M1;
 * on success y (of the instance at M1) holds the end point and 0 is
 * returned; -1 if the branch ends (Newton fails, the PSD cone is left, the
 * corrector jumps); -2 for no memory. */
static int follow_M(const scm_ansatz *a, int dK, int j, int mode, int lo0, int hi0, int lo1, int hi1,
                    int M0, int M1, const scm_ansatz_inst *in0, const double *x0,
                    const scm_activation *act, const scm_fp_opts *o, chord *ch,
                    scm_ansatz_inst *in1, double *y, long *steps)
{
    int n = scm_ansatz_inst_nscalars(in0);
    if (scm_ansatz_inst_nscalars(in1) != n)
        return -1;
    double *xc = malloc(sizeof(double) * (size_t)n * 3);
    if (!xc)
        return -2;
    double *xp = xc + n, *xt = xc + 2 * n;
    memcpy(xc, x0, sizeof(double) * (size_t)n);
    double Mc = M0, Mp = NAN, ratio = 1.25;
    int rc = 0;
    ch->valid = 0;
    while (Mc < M1) {
        double Mn = fmin(M1, Mc * ratio);
        if (Mn - Mc < 1e-3 * Mc) {
            rc = -1;
            break;
        }
        scm_error e;
        scm_ansatz_inst *in = Mn == M1 ? in1
                                       : scm_ansatz_instantiate(a, Mn + dK, Mn,
                                                                path_k1(j, mode, lo0, hi0, lo1, hi1,
                                                                        M0, M1, Mn),
                                                                &e);
        scm_blockflow *bf = in ? scm_blockflow_alloc(in, act) : NULL;
        int ok = 0;
        long ev0 = ch->evals;
        /* the chord corrector; where it fails, lands outside the PSD cone
         * or jumps, GSL's hybrids from the predictor with a fresh Jacobian
         * (near a crossing of branches the kept Jacobian can lead to the
         * other branch: the k1 = 1 path from M = 8 did at M = 212.68) */
        long hy0 = ch->hybrids;
        for (int attempt = 0; attempt < 2 && !ok && bf && scm_ansatz_inst_nscalars(in) == n;
             attempt++) {
            if (attempt == 1 && ch->hybrids != hy0)
                break; /* the corrector's own fallback was hybrids from this start */
            path_predict(xc, xp, Mc, Mp, Mn, n, xt);
            double res, eps, gmin;
            if (attempt == 0) {
                ok = corrector(ch, bf, xt, o, &res, &eps) == 0;
            } else {
                scm_fp_opts oo = *o;
                oo.max_iter = 30;
                ch->hybrids++;
                ch->valid = 0;
                ok = scm_fp_solve(bf, xt, &oo, &res) == SCM_OK &&
                     scm_blockflow_residual(bf, xt, NULL, &eps) == SCM_OK;
            }
            ok = ok && psd_ok(bf, xt, o, &gmin);
            (*steps)++;
            ok = ok && path_no_jump(xc, xp, Mc, Mp, Mn, n, xt);
        }
        scm_blockflow_free(bf);
        if (in != in1)
            scm_ansatz_inst_free(in);
        if (!ok) {
            ratio = 1.0 + 0.5 * (ratio - 1.0);
            ch->valid = 0;
            continue;
        }
        memcpy(xp, xc, sizeof(double) * (size_t)n);
        memcpy(xc, xt, sizeof(double) * (size_t)n);
        Mp = Mc;
        Mc = Mn;
        if (ch->evals - ev0 <= 4)
            ratio = fmin(2.0, 1.0 + 1.5 * (ratio - 1.0));
    }
    if (!rc)
        memcpy(y, xc, sizeof(double) * (size_t)n);
    free(xc);
    return rc;
}

/* The closure in k1 at one M: every solution, once, is continued to each
 * neighbouring instance (k1 +- 1) by the corrector, from its scalars
 * mapped by name, plus the last step again (secant) when the solution was
 * itself reached from the other side; every new solution is queued in
 * turn.  So every branch in k1 that holds one solution of the queue is
 * carried to all k1 it reaches, and branches that cross or touch are all
 * followed (a branch that ends at a point another branch found goes on
 * from there in both directions).  queue holds (instance, point, origin
 * instance or -1, origin point) items; its first n_queue are the starts.
 * buf holds 1024 doubles.  Returns 0, or -1 for no memory. */
typedef struct {
    int i, p, from, from_p;
} grow_item;

/* Append (i, p, from, from_p) to the queue; -1 for no memory. */
static int queue_push(grow_item **queue, int *n_queue, int *cap_queue, grow_item it)
{
    if (*n_queue == *cap_queue) {
        int cap = *cap_queue ? 2 * *cap_queue : 256;
        grow_item *nq = realloc(*queue, sizeof *nq * (size_t)cap);
        if (!nq)
            return -1;
        *queue = nq;
        *cap_queue = cap;
    }
    (*queue)[(*n_queue)++] = it;
    return 0;
}

/* One try of the closure: correct y (of instance k) and add it to sw if
 * it is a new, PSD solution; 1 if added, 0 if not, -1 for no memory.
 * Where the chord corrector lands outside the PSD cone, GSL's hybrids
 * from the same start with a fresh Jacobian: next to the points on the
 * PSD boundary (the aligned students matching their teachers) lies a
 * solution just outside it with nearly the same loss (K = M = 1000,
 * k1 = 2: 0.00058473254 with Gram eigenvalue -1e-4 against 0.00058473251
 * on the boundary), and the kept Jacobian leads there. */
static int close_try(scm_fp_sweep *sw, scm_blockflow **bfs, int k, double *y,
                     const scm_fp_opts *o, chord *ch, long *steps)
{
    int n = scm_ansatz_inst_nscalars(sw->inst[k]);
    double res, eps, gmin, y0[256];
    memcpy(y0, y, sizeof(double) * (size_t)n);
    (*steps)++;
    sw->seeds[k]++;
    ch->valid = 0;
    long hy0 = ch->hybrids;
    int ok = corrector(ch, bfs[k], y, o, &res, &eps) == 0 && psd_ok(bfs[k], y, o, &gmin);
    if (!ok && ch->hybrids == hy0) { /* not already hybrids from this start */
        scm_fp_opts oo = *o;
        oo.max_iter = 30;
        memcpy(y, y0, sizeof(double) * (size_t)n);
        ch->hybrids++;
        ch->valid = 0;
        ok = scm_fp_solve(bfs[k], y, &oo, &res) == SCM_OK &&
             scm_blockflow_residual(bfs[k], y, NULL, &eps) == SCM_OK && psd_ok(bfs[k], y, o, &gmin);
    }
    if (!ok || in_set(&sw->set[k], y, n, eps, o->dedup_tol)) {
        sw->nothing_new[k]++;
        return 0;
    }
    return set_add(&sw->set[k], sw->inst[k], y, eps, res, gmin) ? -1 : 1;
}

/* Continue solution x of instance in (k1 = ka) at fixed (K, M) to k1 = kb
 * = ka +- 1 through instances of real k1 (group sizes real), in steps of
 * 1/4 halved on failure down to 1/64, with a secant predictor, so that a
 * solution that moves a long way between neighbouring k1 is followed
 * rather than lost.  On success y (in the scalars of inst_b, at k1 = kb)
 * and 0; -1 if the path ends (fold, PSD cone left, jump), -2 for no
 * memory. */
static int step_k1_frac(const scm_ansatz *a, const scm_ansatz_inst *in, const double *x,
                        const scm_ansatz_inst *inst_b, const scm_activation *act,
                        const scm_fp_opts *o, chord *ch, double *y, long *steps)
{
    int n = scm_ansatz_inst_nscalars(in);
    if (scm_ansatz_inst_nscalars(inst_b) != n)
        return -1;
    double K = scm_ansatz_inst_K(in), M = scm_ansatz_inst_M(in);
    double ka = scm_ansatz_inst_k1(in), kb = scm_ansatz_inst_k1(inst_b);
    double xc[256], xp[256], xt[256], kc = ka, kp = NAN, h = 0.25;
    memcpy(xc, x, sizeof(double) * (size_t)n);
    ch->valid = 0;
    while (kc != kb) {
        if (h < 1.0 / 64)
            return -1;
        double kn = kb > ka ? fmin(kb, kc + h) : fmax(kb, kc - h);
        path_predict(xc, xp, kc, kp, kn, n, xt);
        scm_error e;
        scm_ansatz_inst *ik = kn == kb ? (scm_ansatz_inst *)inst_b
                                       : scm_ansatz_instantiate(a, K, M, kn, &e);
        scm_blockflow *bf = ik ? scm_blockflow_alloc(ik, act) : NULL;
        if (!ik || !bf) {
            scm_blockflow_free(bf);
            if (ik != inst_b)
                scm_ansatz_inst_free(ik);
            return -2;
        }
        double res, eps, gmin;
        int ok = scm_ansatz_inst_nscalars(ik) == n && corrector(ch, bf, xt, o, &res, &eps) == 0 &&
                 psd_ok(bf, xt, o, &gmin) && path_no_jump(xc, xp, kc, kp, kn, n, xt);
        (*steps)++;
        scm_blockflow_free(bf);
        if (ik != inst_b)
            scm_ansatz_inst_free(ik);
        if (!ok) {
            h *= 0.5;
            ch->valid = 0;
            continue;
        }
        memcpy(xp, xc, sizeof(double) * (size_t)n);
        memcpy(xc, xt, sizeof(double) * (size_t)n);
        kp = kc;
        kc = kn;
    }
    memcpy(y, xc, sizeof(double) * (size_t)n);
    return 0;
}

/* No group of x (of nonzero size) unspecialised: the points the closure
 * in k1 continues.  The others (a group collapsed onto its teachers'
 * mean, e.g. ReLU's continuum of collapsed fixed points) are listed where
 * met but not continued: they are not the k1 families, and at K = M = 1000
 * continuing them took most of the time (25137 solutions against 1406). */
static int block_specialised(const scm_ansatz_inst *in, const double *x)
{
    for (int i = 0; i < in->ns; i++)
        if (!scm_size_zero(in->ssize[i]) && scm_group_unspecialised(in, x, i))
            return 0;
    return 1;
}

static int close_k1(const scm_ansatz *a, const scm_activation *act, scm_fp_sweep *sw,
                    scm_blockflow **bfs, grow_item **queue, int *n_queue, int *cap_queue,
                    const scm_fp_opts *o, chord *ch, double *buf, long *steps)
{
    double *y = buf, *yp = buf + 256;
    for (int q = 0; q < *n_queue; q++) {
        grow_item it = (*queue)[q];
        const double *x = sw->set[it.i].pt[it.p].x;
        for (int dir = -1; dir <= 1; dir += 2) {
            int k = it.i + dir;
            if (k < 0 || k >= sw->n || k == it.from)
                continue;
            int n = scm_ansatz_inst_nscalars(sw->inst[k]), got = 0;
            if (it.from >= 0) { /* the step that reached x, again (secant) */
                map_point(sw->inst[it.i], x, sw->inst[k], y);
                map_point(sw->inst[it.from], sw->set[it.from].pt[it.from_p].x, sw->inst[k], yp);
                for (int c = 0; c < n; c++)
                    y[c] += y[c] - yp[c];
                got = close_try(sw, bfs, k, y, o, ch, steps);
            }
            if (got == 0) { /* x itself, mapped */
                map_point(sw->inst[it.i], x, sw->inst[k], y);
                got = close_try(sw, bfs, k, y, o, ch, steps);
            }
            if (got == 0 && scm_ansatz_inst_nscalars(sw->inst[it.i]) != n) {
                /* a group of size 1 grows: its new off-diagonal overlaps
                 * from its overlaps with the other groups */
                map_point_fill(sw->inst[it.i], x, sw->inst[k], y);
                got = close_try(sw, bfs, k, y, o, ch, steps);
            }
            if (got == 0) { /* through real k1 */
                int rc = step_k1_frac(a, sw->inst[it.i], x, sw->inst[k], act, o, ch, y, steps);
                if (rc == -2)
                    return -1;
                if (rc == 0)
                    got = close_try(sw, bfs, k, y, o, ch, steps);
            }
            if (got < 0)
                return -1;
            if (got == 0 || !block_specialised(sw->inst[k], sw->set[k].pt[sw->set[k].n - 1].x))
                continue;
            if (queue_push(queue, n_queue, cap_queue, (grow_item){k, sw->set[k].n - 1, it.i, it.p}))
                return -1;
        }
    }
    return 0;
}

/* The independent parts of the continuation, on o->threads threads: item
 * q < n_follow follows base solution q (instance fj[q], point fp[q]) along
 * its path to instance fi[q] at M1; item n_follow + t runs the random
 * starts of probe t.  Each item's result depends on the item alone (the
 * chord is per thread but reset at the start of each path), so the
 * anchors, taken in item order afterwards, do not depend on the threads. */
typedef struct {
    const scm_ansatz *a;
    const scm_activation *act;
    const scm_fp_opts *o, *probe_o;
    int dK, lo0, hi0, lo1, hi1, M0, M1, n_follow;
    const scm_fp_sweep *base;
    const scm_fp_sweep *sw;
    const int *fj, *fp, *fi, *fm, *probe_i;
    double *y;          /* n_follow x 256: the end points */
    int *rc;            /* follow_M's return per path */
    long *steps;        /* corrector calls per path */
    scm_fp_set *probe;  /* the probes' solutions */
    scm_status *probe_st;
    scm_error *probe_err;
    chord *ch;          /* one per thread */
} grow_job;

static void grow_job_run(void *ctx, int tid, int q)
{
    grow_job *g = ctx;
    if (q < g->n_follow) {
        int j = g->fj[q], p = g->fp[q];
        g->rc[q] = g->M1 == g->M0 ? 0
                                  : follow_M(g->a, g->dK, g->lo0 + j, g->fm[q], g->lo0, g->hi0, g->lo1,
                                             g->hi1, g->M0, g->M1, g->base->inst[j],
                                             g->base->set[j].pt[p].x, g->act, g->o, &g->ch[tid],
                                             g->sw->inst[g->fi[q]], g->y + (size_t)q * 256,
                                             &g->steps[q]);
        if (g->M1 == g->M0)
            memcpy(g->y + (size_t)q * 256, g->base->set[j].pt[p].x,
                   sizeof(double) * (size_t)g->base->set[j].pt[p].nsc);
        return;
    }
    int t = q - g->n_follow;
    g->probe_st[t] = scm_fp_enumerate(g->a, g->sw->inst[g->probe_i[t]], g->act, g->probe_o, NULL,
                                      0, &g->probe[t], &g->probe_err[t]);
}


scm_status scm_fp_sweep_grow(const scm_ansatz *a, int dK, int M0, int M1, int n_probe,
                             int fixed_max, const scm_activation *act, const scm_fp_opts *o,
                             scm_fp_sweep *sw, scm_fp_grow_stats *gs, scm_error *err)
{
    memset(sw, 0, sizeof *sw);
    if (gs)
        memset(gs, 0, sizeof *gs);
    scm_status st = scm_fp_opts_check(o, err);
    if (st)
        return st;
    if (!(M0 >= 1 && M1 >= M0))
        return scm_error_set(err, SCM_EINVAL, "continuation in M: need 1 <= M0 <= M1 (got %d, %d)",
                             M0, M1);
    int lo0, hi0, lo1, hi1;
    if (scm_ansatz_applies(a, M0 + dK, M0, &lo0, &hi0) != 1 ||
        scm_ansatz_applies(a, M1 + dK, M1, &lo1, &hi1) != 1)
        return scm_error_set(err, SCM_EINVAL, "ansatz '%s' does not apply at K - M = %d, M = %d "
                             "or %d", scm_ansatz_name(a), dK, M0, M1);
    if (hi0 - lo0 < 3 && M1 > M0)
        return scm_error_set(err, SCM_EINVAL, "continuation in M: the base M0 = %d has fewer "
                             "than 4 k1 instances", M0);
    if (n_probe < 0 || n_probe > hi1 - lo1 + 1)
        return scm_error_set(err, SCM_EINVAL, "continuation in M: n_probe must be in 0..%d (the "
                             "k1 instances at M1), got %d", hi1 - lo1 + 1, n_probe);
    /* the base: every k1 at M0 by random starts (o->n_random each) */
    scm_fp_sweep base;
    memset(&base, 0, sizeof base);
    st = scm_fp_sweep_k1(a, M0 + dK, M0, act, o, 2, &base, err);
    if (st)
        return st;
    chord ch;
    memset(&ch, 0, sizeof ch);
    double *buf = malloc(sizeof(double) * 1024);
    scm_blockflow **bfs = NULL;
    grow_item *queue = NULL; /* the solutions whose neighbours in k1 are to be tried */
    int n_queue = 0, cap_queue = 0;
    grow_job job;
    memset(&job, 0, sizeof job);
    int *fj = NULL, nthr = o->threads > 0 ? o->threads : 1;
    int n = hi1 - lo1 + 1;
    sw->k1_min = lo1;
    sw->k1_max = hi1;
    sw->inst = calloc((size_t)n, sizeof *sw->inst);
    sw->set = calloc((size_t)n, sizeof *sw->set);
    sw->seeds = calloc((size_t)n, sizeof(int));
    sw->nothing_new = calloc((size_t)n, sizeof(int));
    bfs = calloc((size_t)n, sizeof *bfs);
    if (!buf || !sw->inst || !sw->set || !sw->seeds || !sw->nothing_new || !bfs) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
        goto fail;
    }
    sw->n = n;
    for (int i = 0; i < n; i++) {
        if (!(sw->inst[i] = scm_ansatz_instantiate(a, M1 + dK, M1, lo1 + i, err))) {
            st = err ? err->code : SCM_EINVAL;
            goto fail;
        }
        if (scm_ansatz_inst_nscalars(sw->inst[i]) > 256) {
            st = scm_error_set(err, SCM_EINVAL, "continuation in M: more than 256 scalars");
            goto fail;
        }
        if (!(bfs[i] = scm_blockflow_alloc(sw->inst[i], act))) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
            goto fail;
        }
    }
    if (gs)
        for (int i = 0; i < base.n; i++)
            gs->base += base.set[i].n;
    /* the paths of the base solutions (the proportional one, and with
     * fixed_max >= 2 those with k1 or K - k1 fixed, where they end at
     * another instance) and the probes, in parallel */
    int n_follow = 0, n_sol = 0;
    for (int j = 0; j < base.n; j++)
        n_sol += base.set[j].n;
    job.fj = fj = malloc(sizeof(int) * (size_t)(12 * n_sol + n_probe + 1));
    job.y = malloc(sizeof(double) * 256 * (size_t)(3 * n_sol + 1));
    job.rc = calloc((size_t)(3 * n_sol) + 1, sizeof(int));
    job.steps = calloc((size_t)(3 * n_sol) + 1, sizeof(long));
    job.probe = calloc((size_t)n_probe + 1, sizeof(scm_fp_set));
    job.probe_st = calloc((size_t)n_probe + 1, sizeof(scm_status));
    job.probe_err = calloc((size_t)n_probe + 1, sizeof(scm_error));
    job.ch = calloc((size_t)nthr, sizeof(chord));
    if (!fj || !job.y || !job.rc || !job.steps || !job.probe || !job.probe_st || !job.probe_err ||
        !job.ch) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
        goto fail;
    }
    int *fp = fj + 3 * n_sol, *fi = fj + 6 * n_sol, *fm = fj + 9 * n_sol,
        *probe_i = fj + 12 * n_sol;
    job.fp = fp;
    job.fi = fi;
    job.fm = fm;
    job.probe_i = probe_i;
    for (int j = 0; j < base.n; j++)
        for (int p = 0; p < base.set[j].n; p++)
            for (int mode = 0; mode < (M1 > M0 ? 3 : 1); mode++) {
                if ((mode == 1 && lo0 + j > lo0 + fixed_max) ||
                    (mode == 2 && lo0 + j < hi0 - fixed_max))
                    continue;
                int i = M1 > M0 ? (int)lround(path_k1(lo0 + j, mode, lo0, hi0, lo1, hi1, M0,
                                                      M1, M1)) - lo1
                                : j, dup = 0;
                for (int m = 0; m < mode; m++)
                    dup |= i == (int)lround(path_k1(lo0 + j, m, lo0, hi0, lo1, hi1, M0, M1, M1)) -
                                    lo1;
                if (dup)
                    continue;
                fj[n_follow] = j;
                fp[n_follow] = p;
                fi[n_follow] = i;
                fm[n_follow++] = mode;
            }
    /* probes: o->n_random random starts at n_probe instances spread evenly
     * over k1 at M1, for branches born between M0 and M1 */
    for (int t = 0; t < n_probe; t++)
        probe_i[t] = n_probe == 1 ? n / 2 : (int)lround((double)t * (n - 1) / (n_probe - 1));
    scm_fp_opts probe_o = *o;
    probe_o.full_max_K = 0; /* block level, as the rest */
    probe_o.threads = 1;    /* the probes are the parallel items */
    job.a = a;
    job.act = act;
    job.o = o;
    job.probe_o = &probe_o;
    job.dK = dK;
    job.lo0 = lo0;
    job.hi0 = hi0;
    job.lo1 = lo1;
    job.hi1 = hi1;
    job.M0 = M0;
    job.M1 = M1;
    job.n_follow = n_follow;
    job.base = &base;
    job.sw = sw;
    for (int t = 0; t < n_probe; t++)
        scm_fp_set_init(&job.probe[t]);
    scm_parallel_for(nthr, n_follow + n_probe, grow_job_run, &job);
    /* anchors: the end points, in order */
    long steps = 0;
    for (int q = 0; q < n_follow; q++) {
        int i = fi[q], nn = scm_ansatz_inst_nscalars(sw->inst[i]);
        double *y = job.y + (size_t)q * 256, *Fy = buf, res = 0.0, eps, gmin;
        steps += job.steps[q];
        if (job.rc[q] == -2) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
            goto fail;
        }
        if (job.rc[q])
            continue;
        if (gs)
            gs->reached++;
        if (scm_blockflow_residual(bfs[i], y, Fy, &eps) ||
            in_set(&sw->set[i], y, nn, eps, o->dedup_tol))
            continue;
        for (int c = 0; c < nn; c++)
            res = fmax(res, fabs(Fy[c]));
        if (!psd_ok(bfs[i], y, o, &gmin))
            continue;
        if (set_add(&sw->set[i], sw->inst[i], y, eps, res, gmin) ||
            queue_push(&queue, &n_queue, &cap_queue, (grow_item){i, sw->set[i].n - 1, -1, -1})) {
            st = scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
            goto fail;
        }
    }
    if (gs) {
        gs->anchors = n_queue;
        gs->steps_M = steps;
    }
    /* the probes' solutions, in order */
    for (int t = 0; t < n_probe; t++) {
        int i = probe_i[t];
        const scm_fp_set *s = &job.probe[t];
        if (job.probe_st[t]) {
            st = job.probe_st[t];
            if (err)
                *err = job.probe_err[t];
            goto fail;
        }
        for (int p = 0; p < s->n; p++) {
            double gmin;
            if (in_set(&sw->set[i], s->pt[p].x, s->pt[p].nsc, s->pt[p].eps, o->dedup_tol) ||
                !psd_ok(bfs[i], s->pt[p].x, o, &gmin))
                continue;
            if (set_add(&sw->set[i], sw->inst[i], s->pt[p].x, s->pt[p].eps, s->pt[p].res_block,
                        gmin) ||
                queue_push(&queue, &n_queue, &cap_queue, (grow_item){i, sw->set[i].n - 1, -1, -1})) {
                st = scm_error_set(err, SCM_ENOMEM, "out of memory in the continuation in M");
                goto fail;
            }
            if (gs)
                gs->probed++;
        }
    }
    /* the closure in k1 at M1 */
    steps = 0;
    if (close_k1(a, act, sw, bfs, &queue, &n_queue, &cap_queue, o, &ch, buf, &steps)) {
        st = scm_error_set(err, SCM_ENOMEM, "out of memory");
        goto fail;
    }
    if (gs) {
        gs->steps_k1 = steps;
        gs->evals = ch.evals;
        gs->hybrids = ch.hybrids;
        for (int t = 0; t < nthr; t++) {
            gs->evals += job.ch[t].evals;
            gs->hybrids += job.ch[t].hybrids;
        }
    }
    sw->passes = 1;
    goto done;
fail:
    scm_fp_sweep_free(sw);
done:
    free(queue);
    free(fj);
    free(job.y);
    free(job.rc);
    free(job.steps);
    if (job.probe)
        for (int t = 0; t < n_probe; t++)
            scm_fp_set_free(&job.probe[t]);
    free(job.probe);
    free(job.probe_st);
    free(job.probe_err);
    if (job.ch)
        for (int t = 0; t < nthr; t++)
            chord_free(&job.ch[t]);
    free(job.ch);
    if (bfs)
        for (int i = 0; i < n; i++)
            scm_blockflow_free(bfs[i]);
    free(bfs);
    free(buf);
    chord_free(&ch);
    scm_fp_sweep_free(&base);
    return st;
}
