/* sweep_summary.c: the summary of a sweep's records (sweep.h): counts per
 * class with 95% Wilson intervals, by anti-aligned count, unmatched losses,
 * the loss histogram, the unconverged runs by the point they sit near, the
 * solver's work.  It depends only on the set of records, so merged shards
 * give the single sweep's summary byte for byte. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scm/sweep.h"

#define WILSON_Z 1.959963984540054

void scm_sweep_wilson(long k, long n, double *lo, double *hi)
{
    /* Wilson (1927): the roots in p of (k/n - p)^2 = z^2 p (1 - p) / n. */
    if (n <= 0) {
        *lo = 0.0;
        *hi = 1.0;
        return;
    }
    const double z2 = WILSON_Z * WILSON_Z, nn = (double)n, p = (double)k / nn;
    const double den = 1.0 + z2 / nn;
    const double ctr = (p + z2 / (2.0 * nn)) / den;
    const double half = WILSON_Z / den * sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn));
    *lo = k == 0 ? 0.0 : fmax(0.0, ctr - half);
    *hi = k == n ? 1.0 : fmin(1.0, ctr + half);
}

typedef struct {
    char cls[80];
    char family[64];
    int matched, k1;
    long count;
    double eps_min, eps_max;
} sum_class;

typedef struct {
    int point;
    char family[64], stability[64];
    int k1;
    double loss, dist_min, dist_max, eps_min, eps_max;
    long count;
} sum_near;

struct scm_sweep_summary {
    long runs, done, converged;
    long n_tmax, n_maxsteps, n_failed;
    int ncls, capcls;
    sum_class *cls;
    int nanti;
    long *anti; /* converged runs by anti-aligned count */
    long hist[SCM_SWEEP_HIST_NBINS], hist_under, hist_over, hist_nan;
    long n_unm, cap_unm;
    double *unm; /* losses of converged unmatched runs */
    double steps_sum, rhs_sum, t_sum;
    long steps_max, rhs_max;
    double t_max;
    long n_cert, n_cert_global;
    long n_zeroed;       /* runs whose own final loss was negative, reported 0 */
    double zeroed_gap;   /* the largest psd_gap among them */
    int zeroed_gap_unknown; /* one of them has none (psd_gap NaN) */
    int nnear, capnear;
    sum_near *near; /* unconverged runs by the point they sit near */
};

scm_sweep_summary *scm_sweep_summary_alloc(long runs)
{
    scm_sweep_summary *s = calloc(1, sizeof *s);
    if (s)
        s->runs = runs;
    return s;
}

void scm_sweep_summary_free(scm_sweep_summary *s)
{
    if (!s)
        return;
    free(s->cls);
    free(s->anti);
    free(s->unm);
    free(s->near);
    free(s);
}

scm_status scm_sweep_summary_add(scm_sweep_summary *s, const scm_sweep_record *r)
{
    /* a certified run counts with the loss of the point it converges to */
    const double eps = r->stop == SCM_STOP_CERTIFIED ? r->cert_loss : r->eps;
    int c = 0;
    while (c < s->ncls && strcmp(s->cls[c].cls, r->cls) != 0)
        c++;
    if (c == s->ncls) {
        if (s->ncls == s->capcls) {
            int cap = s->capcls ? 2 * s->capcls : 8;
            sum_class *nc = realloc(s->cls, sizeof *nc * (size_t)cap);
            if (!nc)
                return SCM_ENOMEM;
            s->cls = nc;
            s->capcls = cap;
        }
        sum_class *k = &s->cls[s->ncls++];
        memset(k, 0, sizeof *k);
        snprintf(k->cls, sizeof k->cls, "%s", r->cls);
        snprintf(k->family, sizeof k->family, "%s", r->family);
        k->matched = r->matched;
        k->k1 = r->k1;
        k->eps_min = k->eps_max = eps;
    }
    sum_class *k = &s->cls[c];
    k->count++;
    k->eps_min = fmin(k->eps_min, eps);
    k->eps_max = fmax(k->eps_max, eps);
    s->done++;
    if (r->converged) {
        s->converged++;
        if (r->n_anti < 0)
            return SCM_ENOMEM; /* the classification ran out of memory */
        if (r->n_anti >= s->nanti) {
            long *na = realloc(s->anti, sizeof *na * (size_t)(r->n_anti + 1));
            if (!na)
                return SCM_ENOMEM;
            for (int i = s->nanti; i <= r->n_anti; i++)
                na[i] = 0;
            s->anti = na;
            s->nanti = r->n_anti + 1;
        }
        s->anti[r->n_anti]++;
        if (!isfinite(eps))
            s->hist_nan++;
        else if (eps < pow(10.0, SCM_SWEEP_HIST_LO))
            s->hist_under++;
        else {
            int b = (int)floor((log10(eps) - SCM_SWEEP_HIST_LO) * SCM_SWEEP_HIST_PER_DECADE);
            if (b >= SCM_SWEEP_HIST_NBINS)
                s->hist_over++;
            else
                s->hist[b < 0 ? 0 : b]++;
        }
        if (!r->matched) {
            if (s->n_unm == s->cap_unm) {
                long cap = s->cap_unm ? 2 * s->cap_unm : 16;
                double *nu = realloc(s->unm, sizeof *nu * (size_t)cap);
                if (!nu)
                    return SCM_ENOMEM;
                s->unm = nu;
                s->cap_unm = cap;
            }
            s->unm[s->n_unm++] = eps;
        }
    } else if (r->stop == SCM_STOP_T_MAX) {
        s->n_tmax++;
    } else if (r->stop == SCM_STOP_MAX_STEPS) {
        s->n_maxsteps++;
    } else {
        s->n_failed++;
    }
    if (r->eps_zeroed) {
        s->n_zeroed++;
        if (isfinite(r->psd_gap))
            s->zeroed_gap = fmax(s->zeroed_gap, r->psd_gap);
        else
            s->zeroed_gap_unknown = 1; /* the maximum is then unknown */
    }
    if (r->stop == SCM_STOP_CERTIFIED) {
        s->n_cert++;
        s->n_cert_global += r->cert_point < 0;
    }
    if (!r->converged && r->near >= 0) {
        int q = 0;
        while (q < s->nnear && s->near[q].point != r->near)
            q++;
        if (q == s->nnear) {
            if (s->nnear == s->capnear) {
                int cap = s->capnear ? 2 * s->capnear : 8;
                sum_near *nn = realloc(s->near, sizeof *nn * (size_t)cap);
                if (!nn)
                    return SCM_ENOMEM;
                s->near = nn;
                s->capnear = cap;
            }
            sum_near *g = &s->near[s->nnear++];
            memset(g, 0, sizeof *g);
            g->point = r->near;
            snprintf(g->family, sizeof g->family, "%s", r->near_family);
            snprintf(g->stability, sizeof g->stability, "%s", r->near_stability);
            g->k1 = r->near_k1;
            g->loss = r->near_loss;
            g->dist_min = g->dist_max = r->near_dist;
            g->eps_min = g->eps_max = r->eps;
        }
        sum_near *g = &s->near[q];
        g->count++;
        g->dist_min = fmin(g->dist_min, r->near_dist);
        g->dist_max = fmax(g->dist_max, r->near_dist);
        g->eps_min = fmin(g->eps_min, r->eps);
        g->eps_max = fmax(g->eps_max, r->eps);
    }
    s->steps_sum += (double)r->steps;
    s->rhs_sum += (double)r->rhs;
    s->t_sum += r->t;
    if (r->steps > s->steps_max)
        s->steps_max = r->steps;
    if (r->rhs > s->rhs_max)
        s->rhs_max = r->rhs;
    if (r->t > s->t_max)
        s->t_max = r->t;
    return SCM_OK;
}

/* Matched families first (by k1, then name), then unmatched, then not
 * converged: an order that does not depend on the order of the records. */
static int class_rank(const sum_class *c)
{
    if (c->matched)
        return 0;
    return strcmp(c->cls, "unmatched") == 0 ? 1 : 2;
}

static int class_cmp(const void *a, const void *b)
{
    const sum_class *x = a, *y = b;
    int rx = class_rank(x), ry = class_rank(y);
    if (rx != ry)
        return rx < ry ? -1 : 1;
    if (rx == 0 && x->k1 != y->k1)
        return x->k1 < y->k1 ? -1 : 1;
    return strcmp(x->cls, y->cls);
}

static int near_cmp(const void *a, const void *b)
{
    const sum_near *x = a, *y = b;
    return (x->point > y->point) - (x->point < y->point);
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void scm_sweep_summary_brief(const scm_sweep_summary *s, char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = '\0';
    sum_class *tmp = s->ncls ? malloc(sizeof *tmp * (size_t)s->ncls) : NULL;
    if (s->ncls && !tmp)
        return;
    if (tmp) {
        memcpy(tmp, s->cls, sizeof *tmp * (size_t)s->ncls);
        qsort(tmp, (size_t)s->ncls, sizeof *tmp, class_cmp);
    }
    size_t used = 0;
    for (int i = 0; i < s->ncls && used + 1 < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s %ld", i ? ", " : "", tmp[i].cls,
                         tmp[i].count);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    free(tmp);
}

static cJSON *wilson_json(long k, long n)
{
    double lo, hi;
    scm_sweep_wilson(k, n, &lo, &hi);
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(lo));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(hi));
    return a;
}

cJSON *scm_sweep_summary_json(const scm_sweep_summary *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "runs", (double)s->runs);
    cJSON_AddNumberToObject(o, "done", (double)s->done);
    cJSON_AddNumberToObject(o, "converged", (double)s->converged);
    cJSON *nc = cJSON_AddObjectToObject(o, "not_converged");
    cJSON_AddNumberToObject(nc, "total", (double)(s->done - s->converged));
    cJSON_AddNumberToObject(nc, "t_max", (double)s->n_tmax);
    cJSON_AddNumberToObject(nc, "max_steps", (double)s->n_maxsteps);
    cJSON_AddNumberToObject(nc, "failed", (double)s->n_failed);
    cJSON *ce = cJSON_AddObjectToObject(o, "certified");
    cJSON_AddNumberToObject(ce, "total", (double)s->n_cert);
    cJSON_AddNumberToObject(ce, "global_rule", (double)s->n_cert_global);
    cJSON_AddNumberToObject(ce, "basin", (double)(s->n_cert - s->n_cert_global));
    /* Runs whose final loss is reported as 0 (their state's own was
     * negative: traj.h, docs/sweeps.md "Reported losses"); only when there
     * are any, as "eps_of" in a record, so that other summaries stay as they
     * were. */
    if (s->n_zeroed) {
        cJSON *ez = cJSON_AddObjectToObject(o, "eps_zeroed");
        cJSON_AddNumberToObject(ez, "count", (double)s->n_zeroed);
        if (!s->zeroed_gap_unknown)
            cJSON_AddNumberToObject(ez, "psd_gap_max", s->zeroed_gap);
        else
            cJSON_AddNullToObject(ez, "psd_gap_max");
    }
    /* Unconverged runs by the listed point they sit nearest, by point. */
    cJSON *na = cJSON_AddArrayToObject(o, "not_converged_near");
    sum_near *ns = s->nnear ? malloc(sizeof *ns * (size_t)s->nnear) : NULL;
    if (ns) {
        memcpy(ns, s->near, sizeof *ns * (size_t)s->nnear);
        qsort(ns, (size_t)s->nnear, sizeof *ns, near_cmp);
        for (int i = 0; i < s->nnear; i++) {
            cJSON *g = cJSON_CreateObject();
            cJSON_AddNumberToObject(g, "point", ns[i].point);
            cJSON_AddStringToObject(g, "family", ns[i].family);
            cJSON_AddNumberToObject(g, "k1", ns[i].k1);
            cJSON_AddNumberToObject(g, "loss", ns[i].loss);
            cJSON_AddStringToObject(g, "stability", ns[i].stability);
            cJSON_AddNumberToObject(g, "count", (double)ns[i].count);
            cJSON_AddNumberToObject(g, "fraction", s->done ? (double)ns[i].count / (double)s->done : 0.0);
            cJSON_AddItemToObject(g, "wilson95", wilson_json(ns[i].count, s->done));
            if (isfinite(ns[i].dist_min)) {
                cJSON_AddNumberToObject(g, "dist_min", ns[i].dist_min);
                cJSON_AddNumberToObject(g, "dist_max", ns[i].dist_max);
            } else {
                cJSON_AddNullToObject(g, "dist_min");
                cJSON_AddNullToObject(g, "dist_max");
            }
            cJSON_AddNumberToObject(g, "eps_min", ns[i].eps_min);
            cJSON_AddNumberToObject(g, "eps_max", ns[i].eps_max);
            cJSON_AddItemToArray(na, g);
        }
        free(ns);
    }

    sum_class *tmp = s->ncls ? malloc(sizeof *tmp * (size_t)s->ncls) : NULL;
    if (tmp) {
        memcpy(tmp, s->cls, sizeof *tmp * (size_t)s->ncls);
        qsort(tmp, (size_t)s->ncls, sizeof *tmp, class_cmp);
    }
    cJSON *cl = cJSON_AddArrayToObject(o, "classes");
    for (int i = 0; tmp && i < s->ncls; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "class", tmp[i].cls);
        if (tmp[i].matched) {
            cJSON_AddStringToObject(c, "family", tmp[i].family);
            cJSON_AddNumberToObject(c, "k1", tmp[i].k1);
        } else {
            cJSON_AddNullToObject(c, "family");
            cJSON_AddNullToObject(c, "k1");
        }
        cJSON_AddNumberToObject(c, "count", (double)tmp[i].count);
        cJSON_AddNumberToObject(c, "fraction",
                                s->done ? (double)tmp[i].count / (double)s->done : 0.0);
        cJSON_AddItemToObject(c, "wilson95", wilson_json(tmp[i].count, s->done));
        cJSON_AddNumberToObject(c, "eps_min", tmp[i].eps_min);
        cJSON_AddNumberToObject(c, "eps_max", tmp[i].eps_max);
        cJSON_AddItemToArray(cl, c);
    }
    free(tmp);

    cJSON *ba = cJSON_AddArrayToObject(o, "by_anti");
    for (int a = 0; a < s->nanti; a++) {
        if (!s->anti[a])
            continue;
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "anti", a);
        cJSON_AddNumberToObject(c, "count", (double)s->anti[a]);
        cJSON_AddNumberToObject(c, "fraction", (double)s->anti[a] / (double)s->done);
        cJSON_AddItemToObject(c, "wilson95", wilson_json(s->anti[a], s->done));
        cJSON_AddItemToArray(ba, c);
    }

    /* Distinct unmatched losses: sorted, grouped within 1e-6 relative. */
    cJSON *um = cJSON_AddArrayToObject(o, "unmatched_losses");
    double *u = s->n_unm ? malloc(sizeof *u * (size_t)s->n_unm) : NULL;
    if (u) {
        memcpy(u, s->unm, sizeof *u * (size_t)s->n_unm);
        qsort(u, (size_t)s->n_unm, sizeof *u, dbl_cmp);
        for (long i = 0; i < s->n_unm;) {
            long j = i + 1;
            while (j < s->n_unm && fabs(u[j] - u[i]) <= 1e-6 * fabs(u[i]) + 1e-12)
                j++;
            cJSON *c = cJSON_CreateObject();
            cJSON_AddNumberToObject(c, "eps", u[i]);
            cJSON_AddNumberToObject(c, "eps_max", u[j - 1]);
            cJSON_AddNumberToObject(c, "count", (double)(j - i));
            cJSON_AddItemToArray(um, c);
            i = j;
        }
        free(u);
    }

    cJSON *h = cJSON_AddObjectToObject(o, "loss_histogram");
    cJSON_AddStringToObject(h, "of", "final eps of converged runs");
    cJSON_AddNumberToObject(h, "log10_lo", SCM_SWEEP_HIST_LO);
    cJSON_AddNumberToObject(h, "log10_hi", SCM_SWEEP_HIST_HI);
    cJSON_AddNumberToObject(h, "bins_per_decade", SCM_SWEEP_HIST_PER_DECADE);
    cJSON *hc = cJSON_AddArrayToObject(h, "counts");
    for (int b = 0; b < SCM_SWEEP_HIST_NBINS; b++)
        cJSON_AddItemToArray(hc, cJSON_CreateNumber((double)s->hist[b]));
    cJSON_AddNumberToObject(h, "below", (double)s->hist_under);
    cJSON_AddNumberToObject(h, "above", (double)s->hist_over);
    cJSON_AddNumberToObject(h, "nan", (double)s->hist_nan);

    cJSON *w = cJSON_AddObjectToObject(o, "solver");
    double nd = s->done ? (double)s->done : 1.0;
    cJSON_AddNumberToObject(w, "steps_mean", s->steps_sum / nd);
    cJSON_AddNumberToObject(w, "steps_max", (double)s->steps_max);
    cJSON_AddNumberToObject(w, "rhs_mean", s->rhs_sum / nd);
    cJSON_AddNumberToObject(w, "rhs_max", (double)s->rhs_max);
    cJSON_AddNumberToObject(w, "tau_mean", s->t_sum / nd);
    cJSON_AddNumberToObject(w, "tau_max", s->t_max);
    return o;
}
