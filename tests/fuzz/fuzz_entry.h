/* fuzz_entry.h: the entry functions of the fuzz targets.  The same function
 * is called by libFuzzer (fuzz_main.c, clang -fsanitize=fuzzer) and by the
 * replay driver (fuzz_replay.c, any compiler) that feeds the kept corpus
 * and crashers to it as a regression test.  Each returns 0; a bug shows as
 * a sanitizer report, a crash or an assertion. */
#ifndef SCM_FUZZ_ENTRY_H
#define SCM_FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "scm/status.h"

typedef int (*scm_fuzz_fn)(const uint8_t *data, size_t size);

int scm_fuzz_config(const uint8_t *data, size_t size);
int scm_fuzz_set(const uint8_t *data, size_t size);
int scm_fuzz_ansatz(const uint8_t *data, size_t size);
/* The readers of user files (fuzz_files.c): the bytes as a runs file
 * (scm merge, scm sweep --resume), a families file (--families), a
 * --seed-from file. */
int scm_fuzz_runs(const uint8_t *data, size_t size);
int scm_fuzz_families(const uint8_t *data, size_t size);
int scm_fuzz_seeds(const uint8_t *data, size_t size);

/* Shared by the targets: data as a NUL-terminated string (NULL on no
 * memory; the caller frees); abort() when a failure (st != SCM_OK)
 * carries no message. */
char *scm_fuzz_text_of(const uint8_t *data, size_t size);
void scm_fuzz_check_error(scm_status st, const scm_error *err);

/* The entry function named name ("config", "set", "ansatz", "runs",
 * "families", "seeds"), or NULL. */
scm_fuzz_fn scm_fuzz_lookup(const char *name);

#endif
