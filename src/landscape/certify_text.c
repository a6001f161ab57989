/* certify_text.c: the table `scm certify` prints (scm_certify_list_text,
 * certify.h), built as a string so that the library does not print: one
 * row per entry with its loss enclosure, box radius, proved eigenvalue
 * bound of d H and verdict. */
#include <stdio.h>
#include <stdlib.h>

#include "core/strbuf.h"
#include "scm/certify.h"

/* The proved eigenvalue bound of d H as a column: "> lo" for a strict
 * minimum, "< hi" for a saddle, "-" otherwise. */
static void eig_col(const scm_certify_result *r, char *buf, size_t n) {
  if (r->strict == 1)
    snprintf(buf, n, ">%.6g", r->lambda_lo);
  else if (r->strict == -1)
    snprintf(buf, n, "<%.6g", r->lambda_neg_hi);
  else
    snprintf(buf, n, "-");
}

char *scm_certify_list_text(const scm_certify_list *l) {
  strbuf b = {NULL, 0, 0, 0};
  sb_printf(&b, "%5s %5s %4s %4s %-10s %-22s %-22s %-9s %-13s %s\n", "K", "M",
            "k1", "idx", "ansatz", "loss lo", "loss hi", "radius", "eig(dH)",
            "verdict");
  for (int i = 0; i < l->n; i++) {
    const scm_certify_entry *e = &l->e[i];
    char k1[16], eig[32];
    snprintf(k1, sizeof k1, e->k1 >= 0 ? "%d" : "-", e->k1);
    eig_col(&e->r, eig, sizeof eig);
    if (e->r.certified)
      sb_printf(&b,
                "%5d %5d %4s %4d %-10s %-22.15g %-22.15g %-9.2g %-13s %s%s%s\n",
                e->K, e->M, k1, e->index, e->ansatz, e->r.loss_lo, e->r.loss_hi,
                e->r.radius, eig, e->r.verdict, e->r.reason[0] ? ": " : "",
                e->r.reason);
    else
      sb_printf(&b, "%5d %5d %4s %4d %-10s %-22s %-22s %-9s %-13s %s: %s\n",
                e->K, e->M, k1, e->index, e->ansatz, "-", "-", "-", "-",
                e->r.verdict, e->r.reason);
  }
  if (b.failed) {
    free(b.s);
    return NULL;
  }
  return b.s;
}
