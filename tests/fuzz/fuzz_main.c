/* fuzz_main.c: libFuzzer harness (built with -Dfuzz=true and clang).
 * The target is chosen at compile time by SCM_FUZZ_TARGET. */
#include "fuzz_entry.h"

#ifndef SCM_FUZZ_TARGET
#error "SCM_FUZZ_TARGET must name the entry function"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return SCM_FUZZ_TARGET(data, size);
}
