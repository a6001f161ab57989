/* status.h: the one status type of libscm and the error record that carries
 * a human-readable reason.  Every fallible function returns an scm_status;
 * where a caller may want to know *why*, it also fills an scm_error.  The
 * library never prints and never exits: the message travels to the caller. */
#ifndef SCM_STATUS_H
#define SCM_STATUS_H

#include <stddef.h>

typedef enum {
    SCM_OK = 0,
    SCM_EINVAL,    /* an argument or input value is out of its domain */
    SCM_ENOMEM,    /* allocation failed */
    SCM_ENOTPSD,   /* a matrix that must be positive semi-definite is not */
    SCM_EDEAD,     /* a ReLU neuron has (numerically) zero norm */
    SCM_ENAN,      /* a NaN or infinity appeared in a computed quantity */
    SCM_ESOLVER,   /* the ODE or root solver failed */
    SCM_ENOCONV,   /* an iteration did not converge within its budget */
    SCM_ESINGULAR, /* a Jacobian or Hessian is singular */
    SCM_EIO        /* a file could not be read or written */
} scm_status;

/* A status with its reason; msg is always NUL-terminated. */
typedef struct {
    scm_status code;
    char msg[512];
} scm_error;

/* Short constant name of a status ("invalid argument", ...). */
const char *scm_status_str(scm_status s);

/* Record a failure in err (which may be NULL) and return code.
 * The message is printf-formatted. */
scm_status scm_error_set(scm_error *err, scm_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Reset err to SCM_OK with an empty message (err may be NULL). */
void scm_error_clear(scm_error *err);

#endif
