/* map_text.h: the table of `scm map` as text (studies; map_text.c), so
 * that the library does not print. */
#ifndef SCM_MAP_TEXT_H
#define SCM_MAP_TEXT_H

#include <cjson/cJSON.h>

/* The table of a map's result object (scm_map_result.map): a header, then
 * per cell M, K, dK, the global fraction with its 95% Wilson interval, the
 * count not converged and the median time to convergence (a missing
 * number prints as nan).  NUL-terminated, malloc'ed (the caller frees);
 * NULL if out of memory. */
char *scm_map_text(const cJSON *map);

#endif
