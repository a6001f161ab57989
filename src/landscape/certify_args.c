/* certify_args.c: the arguments of `scm certify` and of the Python call
 * (scm_certify_args, certify.h): their rules, in the command's words, and
 * the run they ask for (a family, a fixed-points file or a plateau table). */
#include <string.h>

#include "scm/certify.h"

void scm_certify_args_default(scm_certify_args *a) {
  memset(a, 0, sizeof *a);
  a->K = a->M = a->k1 = a->index = a->dK = -1;
  a->starts = 40;
  a->M_min = 1;
  a->M_max = 1000000;
  a->rows = SCM_CERTIFY_ROWS_MINIMA;
}

scm_status scm_certify_args_check(const scm_certify_args *a, scm_error *err) {
  const int every = a->every || a->minima;
  if (a->table &&
      (a->point || a->all || a->every || a->minima || a->index >= 0))
    return scm_error_set(
        err, SCM_EINVAL,
        "--table goes without --point, --index, --all, --every and --minima");
  if (!a->table &&
      (a->dK >= 0 || a->M_min != 1 || a->M_max != 1000000 || a->rows))
    return scm_error_set(err, SCM_EINVAL,
                         "--M-min, --M-max, --dK and --rows go with --table");
  if (a->table && a->M_min > a->M_max)
    return scm_error_set(err, SCM_EINVAL, "--M-min %ld exceeds --M-max %ld",
                         a->M_min, a->M_max);
  if (a->minima && (!a->point || a->every || a->index >= 0))
    return scm_error_set(
        err, SCM_EINVAL,
        "--minima goes with --point FILE, without --index or --every");
  if (!a->table && (a->point ? (a->K >= 0 || a->M >= 0 || a->all ||
                                a->k1 >= 0 || (a->index < 0) == !every)
                             : (a->K < 0 || a->M < 0 || a->index >= 0 ||
                                (a->all && a->k1 >= 0))))
    return scm_error_set(err, SCM_EINVAL,
                         "give --K K --M M [--k1 N | --all], or --point "
                         "FILE --index I | --every | --minima");
  if (a->k1 > a->K && !a->point && !a->table)
    return scm_error_set(err, SCM_EINVAL, "--k1 %ld exceeds K = %ld", a->k1,
                         a->K);
  return SCM_OK;
}

scm_status
scm_certify_args_run(const scm_certify_args *a, const scm_certify_opts *o,
                     void (*progress)(void *ctx, int done, int total),
                     void *ctx, scm_certify_list *out, scm_error *err) {
  if (a->table) {
    scm_certify_table_sel sel;
    scm_certify_table_sel_default(&sel);
    sel.K = (int)a->K;
    sel.M = (int)a->M;
    sel.k1 = (int)a->k1;
    sel.dK = (int)a->dK;
    sel.M_min = (int)a->M_min;
    sel.M_max = (int)a->M_max;
    sel.rows = (scm_certify_rows)a->rows;
    return scm_certify_table(a->table, &sel, o, progress, ctx, out, err);
  }
  if (a->point)
    return scm_certify_fpfile(a->point,
                              a->index >= 0 ? a->index
                              : a->minima   ? SCM_CERTIFY_MINIMA
                                            : SCM_CERTIFY_EVERY,
                              o, out, err);
  return scm_certify_family((int)a->K, (int)a->M,
                            a->all      ? -1
                            : a->k1 < 0 ? 1
                                        : (int)a->k1,
                            a->every, a->starts, o, out, err);
}
