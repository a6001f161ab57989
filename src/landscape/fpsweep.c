/* fpsweep.c: enumeration of all k1 instances of an ansatz at one (K, M),
 * each seeded from its neighbours in k1 (scm_fp_sweep_k1, _seeded), and
 * the chain in M (scm_fp_sweep_k1_chain); see fpsweep.h.  The
 * continuation in M, scm_fp_sweep_grow, is fpsweep_grow.c. */
#include "scm/fpsweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/ansatz_internal.h"
#include "landscape/fpsweep_internal.h"

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

void scm_fp_map_point(const scm_ansatz_inst *from, const double *x, const scm_ansatz_inst *to,
                      double *y)
{
    int n = scm_ansatz_inst_nscalars(to);
    for (int c = 0; c < n; c++) {
        const char *name = scm_ansatz_inst_scalar_name(to, c);
        int f = scm_ansatz_inst_find(from, name);
        y[c] = f >= 0 ? x[f] : strncmp(name, "Q[", 2) == 0 && strstr(name, ".diag") ? 1.0 : 0.0;
    }
}

/* The missing off-diagonal scalar of a group of size 1 in from
 * ("Q[g,g].off" or "R[g,t].off") is taken from the group's overlap with
 * another group ("Q[g,h]" or "Q[h,g]", or "R[g,u]"): when a group grows
 * from one student to two, the new pair overlaps like its student and the
 * other students (0 as in scm_fp_map_point missed the k1 = 2 family at
 * K = M = 1000 from the k1 = 1 point). */
void scm_fp_map_point_fill(const scm_ansatz_inst *from, const double *x,
                           const scm_ansatz_inst *to, double *y)
{
    scm_fp_map_point(from, x, to, y);
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
        scm_fp_map_point(sw->inst[j], sw->set[j].pt[seen_j + s].x, sw->inst[i],
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

/* The seeds' round of the k1 sweep: each instance tries the seeds with
 * its k1 (tried[i] counts them when tried is not NULL); *added gets the
 * new solutions. */
static scm_status seed_round(const scm_ansatz *a, const scm_activation *act,
                             const scm_fp_opts *later, const scm_fp_seed *seeds, int n_seeds,
                             scm_fp_sweep *sw, int *tried, int *added, scm_error *err)
{
    for (int i = 0; i < sw->n; i++) {
        double *ext = NULL;
        int n_ext = 0;
        if (scm_fp_seed_starts(seeds, n_seeds, sw->inst[i], sw->k1_min + i, &ext, &n_ext))
            return scm_error_set(err, SCM_ENOMEM, "out of memory in the k1 sweep");
        int got = n_ext ? run_one(a, act, later, sw, i, -1, 0, ext, n_ext, err) : 0;
        free(ext);
        if (got < 0)
            return err ? err->code : SCM_ENOMEM;
        if (tried)
            tried[i] += n_ext;
        *added += got;
    }
    return SCM_OK;
}

/* Pass number pass of the k1 sweep, up in k1 when even, down when odd:
 * each instance seeded from the solutions of its predecessor in the
 * pass's direction that have not seeded it yet (seen_up, seen_dn count
 * them per instance and direction); on pass 0 every instance runs, the
 * first with no predecessor.  *found gets the new solutions. */
static scm_status neighbour_pass(const scm_ansatz *a, const scm_activation *act,
                                 const scm_fp_opts *o, scm_fp_sweep *sw, int pass, int *seen_up,
                                 int *seen_dn, int *found, scm_error *err)
{
    int n = sw->n, up = pass % 2 == 0;
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
        int got = run_one(a, act, o, sw, i, j, seen_j, NULL, 0, err);
        if (got < 0)
            return err ? err->code : SCM_ENOMEM;
        *found += got;
    }
    return SCM_OK;
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
            if ((st = seed_round(a, act, &later, seeds, n_seeds, sw, tried, &added, err)))
                goto done;
            if (!added)
                break;
        }
        for (int pass = round; pass < max_passes; pass++) {
            int found = 0;
            sw->passes++;
            if ((st = neighbour_pass(a, act, pass ? &later : o, sw, pass, seen_up, seen_dn, &found,
                                     err)))
                goto done;
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
