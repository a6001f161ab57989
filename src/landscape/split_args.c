/* split_args.c: the arguments of `scm split` and of the Python call
 * (scm_split_args, split.h): their rules, in the command's words, and the
 * run they ask for (the samples, the parent read or chosen, the study). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "scm/split.h"

void scm_split_args_default(scm_split_args *a) {
  memset(a, 0, sizeof *a);
  a->K = a->M = a->k1 = a->index = a->neuron = -1;
  a->starts = 100;
  a->loss = NAN;
}

scm_status scm_split_args_check(scm_split_args *a, scm_error *err) {
  int nsel = (a->k1 >= 0) + (a->index >= 0 && !a->point) + !isnan(a->loss);
  if (a->neuron < 0)
    return scm_error_set(err, SCM_EINVAL, "--neuron r is required");
  if (a->point ? (a->K >= 0 || a->M >= 0 || a->k1 >= 0 || !isnan(a->loss))
               : (a->K < 0 || a->M < 0 || nsel != 1))
    return scm_error_set(
        err, SCM_EINVAL,
        "give --K, --M and one of --k1, --index, --loss; or --point FILE "
        "[--index I] (without --K, --M, --k1, --loss)");
  if (!!a->nl + !!a->grid + !!a->nw > 1)
    return scm_error_set(err, SCM_EINVAL,
                         "give one of --lambda, --lambda-grid, --weights");
  if (a->nw == 1)
    return scm_error_set(err, SCM_EINVAL,
                         "--weights needs at least 2 daughters");
  if (!a->nl && !a->nw && !a->grid)
    a->grid = 9;
  if (a->polish && !a->point)
    return scm_error_set(err, SCM_EINVAL, "--polish applies to --point only");
  return SCM_OK;
}

/* The parent: read from the point file, or chosen among the enumerated
 * points. */
static scm_status get_parent(const scm_split_args *a, scm_split_parent *p,
                             scm_error *err) {
  if (a->point) {
    scm_status st = scm_split_parent_load(a->point, a->index, p, err);
    if (!st && a->actname)
      snprintf(p->act, sizeof p->act, "%s", a->actname);
    return st;
  }
  const char *an = a->actname ? a->actname : "relu";
  const scm_activation *act = scm_activation_find(an);
  if (!act)
    return scm_error_set(err, SCM_EINVAL,
                         "unknown activation '%s' (relu, erf, linear)", an);
  int threads = a->threads > 0 ? (int)a->threads : scm_threads_online();
  return scm_split_parent_choose(a->K, a->M, act, a->starts, threads, a->k1,
                                 a->index, a->loss, p, err);
}

scm_status scm_split_args_run(const scm_split_args *a, scm_split_run *r,
                              scm_error *err) {
  memset(r, 0, sizeof *r);
  scm_status st = scm_split_samples(a->lam, a->nl, a->grid, a->w, a->nw,
                                    &r->samples, &r->n_samples, err);
  if (!st)
    st = get_parent(a, &r->parent, err);
  if (st)
    return st;
  scm_split_study_opts o;
  scm_split_study_opts_default(&o);
  o.neuron = (int)a->neuron;
  o.d = a->d;
  o.polish = a->polish;
  o.perturb = a->perturb;
  return scm_split_study_run(&r->parent, &o, r->samples, r->n_samples,
                             &r->study, err);
}

void scm_split_run_free(scm_split_run *r) {
  scm_split_study_free(&r->study);
  scm_split_parent_free(&r->parent);
  free(r->samples);
  r->samples = NULL;
}
