/* fptable_internal.h: the layout of scm_fp_table shared by the files that
 * build it (fptable.c: the enumeration over ansätze and k1; fptable_grow.c:
 * the block-level continuation in M) and those that present it
 * (fptable_json.c: the result object; fptable_text.c: the printed table). */
#ifndef SCM_FPTABLE_INTERNAL_H
#define SCM_FPTABLE_INTERNAL_H

#include "scm/fpsweep.h"
#include "scm/fptable.h"
#include "scm/stability.h"

#define FPT_PATTERN_LEN 64

/* One solution of one instance, before and after the merging. */
typedef struct {
    int ansatz;          /* index into the table's ansatz list */
    scm_ansatz_inst *in; /* shared by the solutions of one instance (t->insts owns it) */
    scm_fp_point *pt;    /* into the table's set */
    scm_fp_structure st;
    int merged_into;     /* -1 or the solution this one duplicates */
    scm_fp_branch br;
    int has_branch;
    int family;          /* anti-aligned students (-1: not a whole number) */
    int specialised;     /* 1: n_other == K - M (a member of a family) */
    int res_ok;          /* residual below max_residual */
    char pattern[FPT_PATTERN_LEN]; /* the extra students (fptable_fam.c) */
    int cls;             /* scm_fp_class */
    double hmin;         /* smallest Hessian eigenvalue (NaN) */
    long h_neg, h_zero, h_pos, h_total; /* with multiplicity */
    int jac_done;        /* --stability: 1 the Jacobian's spectrum is known */
    long j_pos;          /* its unstable directions (real part > tol) */
    double j_re_max;
    char stab_err[300];  /* why the class is SCM_FP_CLASS_REFUSED */
} fpt_solution;

/* One family of the families table (fptable_fam.c). */
typedef struct {
    int k1;
    char pattern[FPT_PATTERN_LEN];
    int n_points, n_minima, n_saddles, n_refused;
    int best;            /* solution index of the lowest-loss minimum, or -1 */
    int best_row;
} fpt_family;

/* What the starts of one (ansatz, k1) did: one entry of "searches". */
typedef struct {
    int ansatz, k1;
    int starts, converged, noprog, maxiter, domain, notpsd, distinct;
    int seeds, cseeds, chain_links, nothing_new, deflated, deflated_new;
} fpt_search;

/* One ansatz of the block-level continuation in M (grow_from). */
typedef struct {
    int ansatz;
    scm_fp_sweep sw;
    scm_fp_grow_stats gs;
    int probes, points;
} fpt_grow;

struct scm_fp_table {
    long K, M, k1, chain_from, continue_to, grow_from, probes, fixed_k1;
    const scm_activation *act;
    int unmerged, stability, states;
    void (*progress)(void *ctx, int done, int total);
    void *progress_ctx;
    double max_residual;
    int nans;
    scm_ansatz *ans[SCM_FP_TABLE_MAX_FILES];
    /* the enumeration */
    scm_fp_set set;            /* every solution's point */
    fpt_solution *sol;         /* [nsol], sorted by (scalars, loss) */
    int nsol, cap;
    scm_ansatz_inst **insts;   /* [ninst]: the instances with solutions (owned) */
    int ninst, inst_cap;
    int *order;                /* [nview]: the display order (by loss) */
    int nview;                 /* nsol, or 0 when order could not be allocated */
    fpt_search *search;        /* [nsearch] */
    int nsearch, search_cap;
    fpt_family *fam;           /* [nfam]: the families table */
    int nfam;
    int n_above;               /* listed points with a residual not below max_residual */
    /* the block-level continuation */
    fpt_grow *grow;            /* [ngrow] */
    int ngrow, grow_done;      /* grow_done: every ansatz ran (the summary line) */
    /* the listed points, in the order of the table */
    scm_fp_table_row *rows;
    int nrows;
    scm_status deferred;       /* a failure that left the table complete */
    scm_error deferred_err;
};

/* 1 when --k1 N enumerates only the instances N, K - N and M - N (K above
 * SCM_FP_TABLE_K1_ALL_MAX_K); below, every instance with the k1 sweep, and
 * the points of family N are kept. */
static inline int fpt_instances_restricted(const scm_fp_table *t)
{
    return t->k1 >= 0 && t->K > SCM_FP_TABLE_K1_ALL_MAX_K;
}

/* The seeds of the ansatz called name (an array the caller frees; NULL
 * only for no memory), in fptable_seeds.c. */
scm_fp_seed *fpt_seeds_of(const scm_fp_table_seeds *sl, const char *name, int *n);

/* A computation's failure as the table reports it: SCM_EINVAL and SCM_EIO
 * mean bad input to scm_fp_table_run's caller, so a lower function's
 * complaint about its own arguments becomes SCM_ESOLVER. */
static inline scm_status fpt_failed(scm_status st)
{
    return st == SCM_EINVAL || st == SCM_EIO ? SCM_ESOLVER : st;
}

/* The enumeration of fptable_enum.c over every ansatz and k1 (fills t->set,
 * t->sol, t->insts, t->search); SCM_OK or the failure (err). */
scm_status fpt_enumerate(scm_fp_table *t, int named, long sweep_passes,
                         const scm_fp_table_seeds *seeds, const scm_fp_opts *o, scm_error *err);

/* The structure, pattern and symmetric stability of the distinct points,
 * and the families table (fptable_fam.c); after rows_fill. */
scm_status fpt_families_build(scm_fp_table *t, scm_error *err);

/* 1 when the JSON carries Q and R of solution s (t->states). */
int fpt_state_shown(const scm_fp_table *t, int s);

/* The run of fptable_grow.c: fills t->grow; SCM_OK or the failure (err). */
scm_status fpt_grow_run(scm_fp_table *t, int named, const scm_fp_opts *o, scm_error *err);

#endif
