/* libscm_demo.c: a tiny program against the installed libscm
 * (docs/library.md).  Build:
 *   cc libscm_demo.c $(pkg-config --cflags --libs libscm) -o libscm_demo
 * It prints the ReLU pair kernel at one point and the loss of a 2 x 2
 * ReLU committee whose student equals its teacher (zero) and of one that
 * does not (positive); exit status 1 if either is wrong. */
#include <stdio.h>

#include "scm/flow.h"
#include "scm/kernel.h"
#include "scm/model.h"

int main(void)
{
    scm_error err;
    scm_model *m = scm_model_alloc(2, 2, &scm_act_relu, NULL, NULL, NULL, &err);
    if (!m) {
        fprintf(stderr, "libscm_demo: %s\n", err.msg);
        return 1;
    }
    scm_flow *fl = scm_flow_alloc(m);
    double Q[4] = {1, 0, 0, 1}, R[4] = {1, 0, 0, 1}, eps0 = -1, eps1 = -1;
    scm_pair p;
    scm_status st = fl ? scm_flow_loss(fl, Q, R, &eps0) : SCM_ENOMEM;
    R[0] = 0.5;
    if (st == SCM_OK) st = scm_flow_loss(fl, Q, R, &eps1);
    if (st == SCM_OK) st = scm_act_relu.pair(1.0, 1.0, 0.5, &p);
    scm_flow_free(fl);
    scm_model_free(m);
    if (st != SCM_OK) {
        fprintf(stderr, "libscm_demo: %s\n", scm_status_str(st));
        return 1;
    }
    printf("f_relu(1, 1, 0.5) = %.12g\n", p.f);
    printf("eps(student = teacher) = %.3g\n", eps0);
    printf("eps(R_11 = 0.5) = %.12g\n", eps1);
    return eps0 < 1e-14 && eps0 > -1e-14 && eps1 > 0.01 ? 0 : 1;
}
