/* ansatz_internal.h (internal): the layout of a parsed ansatz (ansatz.c)
 * and of an ansatz instance (ansatz_inst.c), shared by them, blockflow.c
 * and the fixed-point search.  Users see both through the accessors of
 * scm/ansatz.h only. */
#ifndef SCM_ANSATZ_INTERNAL_H
#define SCM_ANSATZ_INTERNAL_H

#include <math.h>

#include "scm/ansatz.h"
#include "scm/model.h"

/* At most this many student groups and as many teacher groups. */
#define SCM_ANSATZ_MAX_GROUPS 64
/* The longest name of a group or an ansatz. */
#define SCM_ANSATZ_NAME_MAX 31

/* A parsed ansatz file: its groups with their size expressions in K, M,
 * k1, the pairs, the conditions where it applies, and the guess. */
struct scm_ansatz {
    char name[64];
    char *description;
    int nreq;
    char **req;             /* expressions in K, M that must vanish */
    int npos;
    char **pos;             /* expressions in K, M that must be at least 1 */
    char *k1min, *k1max;    /* NULL: k1 = 0 only */
    int ns, nt;
    char sname[SCM_ANSATZ_MAX_GROUPS][SCM_ANSATZ_NAME_MAX + 1];
    char tname[SCM_ANSATZ_MAX_GROUPS][SCM_ANSATZ_NAME_MAX + 1];
    char *sexpr[SCM_ANSATZ_MAX_GROUPS], *texpr[SCM_ANSATZ_MAX_GROUPS];
    int spair[SCM_ANSATZ_MAX_GROUPS], tpair[SCM_ANSATZ_MAX_GROUPS]; /* or -1 */
    int nguess;
    char **gname;
    double *gval;
};

/* Evaluate expression s (integers, K, M, k1, + - *, (), unary -) at
 * (K, M, k1): 0 and *out on success, -1 on a syntax error with the
 * offending position in *where (where may be NULL). */
int scm_ansatz_expr_eval(const char *s, double K, double M, double k1, double *out, int *where);

/* Entry classes of a block. */
enum { SCM_CLS_DIAG = 0, SCM_CLS_OFF = 1, SCM_CLS_CONST = 2 };

typedef struct {
    char mat;  /* 'Q' or 'R' */
    int i, j;  /* student group i; student group j (Q) or teacher group j (R) */
    int cls;   /* SCM_CLS_* */
    char name[80];
} scm_scalar_info;

struct scm_ansatz_inst {
    char name[64];
    double K, M, k1;
    int ns, nt;          /* number of student / teacher groups (sizes may be 0) */
    double *ssize, *tsize;
    int *spair, *tpair;  /* paired group or -1 */
    char (*sname)[32], (*tname)[32];
    int nsc;             /* number of free scalars */
    scm_scalar_info *sc;
    /* scalar index of each entry class, or -1 (absent: a size-0 group, the
     * off-diagonal class of a size-1 group, or a class a block lacks) */
    int *qd, *qo;        /* ns: diagonal block of student group i */
    int *qc;             /* ns x ns: constant block between student groups */
    int *rd, *ro, *rc;   /* ns x nt */
    int integral;        /* all sizes are non-negative integers */
    int Ki, Mi;          /* K and M as integers (if integral) */
    int *soff, *toff;    /* first index of each group in the full matrices */
};

/* Is a real group size zero, or big enough to have an off-diagonal class? */
#define SCM_SIZE_TINY 1e-12
static inline int scm_size_zero(double n) { return n < SCM_SIZE_TINY; }
static inline int scm_size_has_off(double n) { return n > 1.0 + 1e-9; }

/* Is paired student group i of solution x unspecialised (its own and other
 * overlaps agree, relative to the overlap scale)?  (fixedpoint.c's
 * classification, fpsweep.c's continuation in k1.) */
static inline int scm_group_unspecialised(const scm_ansatz_inst *in, const double *x, int i)
{
    int t = in->spair[i];
    if (t < 0)
        return 0;
    int c = i * in->nt + t;
    if (in->rd[c] < 0 || in->ro[c] < 0)
        return 0;
    double q = x[in->qd[i]];
    return !(fabs(x[in->rd[c]] - x[in->ro[c]]) > SCM_ALIGN_COS_TOL * sqrt(fabs(q)));
}

#endif
