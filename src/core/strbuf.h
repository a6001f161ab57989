/* strbuf.h: a growing text buffer for the tables the library returns as
 * strings (internal).  A failed allocation sets `failed` and later calls do
 * nothing, so a caller checks once at the end. */
#ifndef SCM_STRBUF_H
#define SCM_STRBUF_H

#include <stddef.h>

typedef struct {
    char *s;      /* NUL-terminated text, malloc'ed; the caller frees it */
    size_t n, cap;
    int failed;   /* 1 after an allocation or formatting failure */
} strbuf;

/* Append printf output to b. */
void sb_printf(strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
