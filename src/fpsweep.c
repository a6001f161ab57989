/* fpsweep.c: enumeration of all k1 instances seeded from their neighbours;
 * see fpsweep.h. */
#include "scm/fpsweep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* One instance i seeded from the solutions of instance j (j < 0: none).
 * Returns the number of new solutions, or -1 with err set. */
static int run_one(const scm_ansatz *a, const scm_activation *act, const scm_fp_opts *o,
                   scm_fp_sweep *sw, int i, int j, int seen_j, scm_error *err)
{
    int n = scm_ansatz_inst_nscalars(sw->inst[i]);
    int ns = j >= 0 ? sw->set[j].n - seen_j : 0;
    double *starts = malloc(sizeof(double) * (size_t)n * (size_t)(ns > 0 ? ns : 1));
    if (!starts) {
        scm_error_set(err, SCM_ENOMEM, "out of memory in the k1 sweep");
        return -1;
    }
    for (int s = 0; s < ns; s++)
        map_point(sw->inst[j], sw->set[j].pt[seen_j + s].x, sw->inst[i],
                  starts + (size_t)s * (size_t)n);
    scm_fp_set tmp;
    scm_fp_set_init(&tmp);
    scm_status st = scm_fp_enumerate(a, sw->inst[i], act, o, starts, ns, &tmp, err);
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

scm_status scm_fp_sweep_k1(const scm_ansatz *a, int K, int M, const scm_activation *act,
                           const scm_fp_opts *o, int max_passes, scm_fp_sweep *sw,
                           scm_error *err)
{
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
    for (int pass = 0; pass < max_passes; pass++) {
        int up = pass % 2 == 0, found = 0;
        sw->passes = pass + 1;
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
            int got = run_one(a, act, pass ? &later : o, sw, i, j, seen_j, err);
            if (got < 0) {
                st = err ? err->code : SCM_ENOMEM;
                goto done;
            }
            found += got;
        }
        if (pass > 0 && found == 0)
            break;
    }
done:
    free(seen_up);
    free(seen_dn);
    if (st)
        scm_fp_sweep_free(sw);
    return st;
}
