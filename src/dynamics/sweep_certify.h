/* sweep_certify.h: the early stop and the tagging of unconverged runs of
 * sweeps (issue 12; docs/sweeps.md "Early stop"), private to sweep.c and
 * sweep_certify.c.  The cache holds the listed points in canonical form
 * (basin.h) and their certificates, shared by the threads of a sweep. */
#ifndef SCM_SWEEP_CERTIFY_H
#define SCM_SWEEP_CERTIFY_H

#include <pthread.h>

#include "scm/basin.h"
#include "scm/sweep.h"

/* The points' canonical forms (for the model the cache was made for) and
 * their certificates, computed on first need under the mutex. */
struct scm_sweep_cache {
    pthread_mutex_t mu;
    int K, M, n;
    char *has;           /* the point is given and has the model's shape */
    double *Qc, *Rc;     /* n canonical points */
    char *cert_done;
    scm_basin_cert *cert;
    double low;          /* the lowest positive family loss (INFINITY: none) */
};

/* A cache for model m (NULL without memory); free with sweep_cache_free. */
scm_sweep_cache *sweep_cache_make(const scm_sweep_families *f, const scm_model *m);
void sweep_cache_free(scm_sweep_cache *c);

/* What the traj callback of one run needs and finds. */
typedef struct {
    const scm_model *m;
    const scm_sweep_families *f;
    scm_sweep_cache *c;
    const scm_sweep_opts *o;
    double t_max, grad_stop; /* the run's: a certified run must be one that converges in time */
    double *Qc, *Rc;   /* the state, canonical */
    int point;         /* certified: the point, -1 the global rule */
    double dist, radius;
    scm_status st;     /* an error inside the callback (no memory) */
    scm_error err;
} sweep_certify_ctx;

/* The early stop's arguments hold for the gradient flow of the first layer
 * (rule gd: the loss decreases, the flow is the image of a weight-space
 * gradient flow) with T = I; elsewhere --certify does nothing. */
int sweep_certify_applies(const scm_config *c, const scm_model *m);

/* scm_traj_opts.certify: 1 when the run is certified (x->point, dist,
 * radius filled), 0 otherwise (x->st set on no memory). */
int sweep_certify_cb(void *user, double t, const double *Q, const double *R, double eps,
                     double max_F);

/* rec->near...: the listed point nearest to (Q, R) (c may be NULL: losses only). */
void sweep_tag_near(const scm_model *m, const scm_sweep_families *f, scm_sweep_cache *c,
                    const double *Q, const double *R, double eps, scm_sweep_record *rec);

/* The class of a certified run: the one a run converged onto its point
 * (or, by the global rule, below eps_stop) gets. */
void sweep_classify_certified(const scm_model *m, const double *Q, const double *R,
                              const sweep_certify_ctx *x, const scm_sweep_families *fams,
                              const scm_sweep_opts *o, scm_sweep_record *rec);

#endif
