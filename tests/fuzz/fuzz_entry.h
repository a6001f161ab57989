/* fuzz_entry.h: the entry functions of the fuzz targets.  The same function
 * is called by libFuzzer (fuzz_main.c, clang -fsanitize=fuzzer) and by the
 * replay driver (fuzz_replay.c, any compiler) that feeds the kept corpus
 * and crashers to it as a regression test.  Each returns 0; a bug shows as
 * a sanitizer report, a crash or an assertion. */
#ifndef SCM_FUZZ_ENTRY_H
#define SCM_FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>

typedef int (*scm_fuzz_fn)(const uint8_t *data, size_t size);

int scm_fuzz_config(const uint8_t *data, size_t size);
int scm_fuzz_set(const uint8_t *data, size_t size);
int scm_fuzz_ansatz(const uint8_t *data, size_t size);

/* The entry function named name ("config", "set", "ansatz"), or NULL. */
scm_fuzz_fn scm_fuzz_lookup(const char *name);

#endif
