/* status.c: names of status codes and the error-record helpers. */
#include "scm/status.h"

#include <stdarg.h>
#include <stdio.h>

const char *scm_status_str(scm_status s)
{
    switch (s) {
    case SCM_OK: return "ok";
    case SCM_EINVAL: return "invalid input";
    case SCM_ENOMEM: return "out of memory";
    case SCM_ENOTPSD: return "matrix not positive semi-definite";
    case SCM_EDEAD: return "dead neuron";
    case SCM_ENAN: return "NaN or infinity";
    case SCM_ESOLVER: return "solver failure";
    case SCM_ENOCONV: return "no convergence";
    case SCM_ESINGULAR: return "singular matrix";
    case SCM_EIO: return "input/output error";
    }
    return "unknown status";
}

scm_status scm_error_set(scm_error *err, scm_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void scm_error_clear(scm_error *err)
{
    if (err) {
        err->code = SCM_OK;
        err->msg[0] = '\0';
    }
}
