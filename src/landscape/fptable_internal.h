/* fptable_internal.h: the layout of scm_fp_table shared by the files that
 * build it (fptable.c: the enumeration over ansätze and k1; fptable_grow.c:
 * the block-level continuation in M) and those that present it
 * (fptable_json.c: the result object; fptable_text.c: the printed table). */
#ifndef SCM_FPTABLE_INTERNAL_H
#define SCM_FPTABLE_INTERNAL_H

#include "scm/fpsweep.h"
#include "scm/fptable.h"
#include "scm/stability.h"

#define FPT_STAB_MAX_K 20 /* stability: the analysis runs for K <= this */

/* One solution of one instance, before and after the merging. */
typedef struct {
    int ansatz;          /* index into the table's ansatz list */
    scm_ansatz_inst *in; /* shared by the solutions of one instance (t->insts owns it) */
    scm_fp_point *pt;    /* into the table's set */
    scm_fp_structure st;
    int merged_into;     /* -1 or the solution this one duplicates */
    scm_fp_branch br;
    int has_branch;
    int stab_done;       /* 1: stab holds the analysis; -1: it failed (stab_err) */
    scm_stab_result stab;
    char stab_err[520];
} fpt_solution;

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
    int all, stability;
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
    scm_stab_opts so;
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

/* The run of fptable_grow.c: fills t->grow; SCM_OK or the failure (err). */
scm_status fpt_grow_run(scm_fp_table *t, int named, const scm_fp_opts *o, scm_error *err);

#endif
