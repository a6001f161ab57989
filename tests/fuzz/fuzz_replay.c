/* fuzz_replay.c: regression test of the fuzz corpus.  Usage:
 *   fuzz_replay TARGET DIR...
 * feeds every regular file of every DIR to the entry function of TARGET
 * (the same function libFuzzer ran) and prints "N passed, 0 failed".  A
 * bug shows as a crash or a sanitizer report (the release and ASan builds
 * both run it; no clang needed). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_entry.h"

static int replay_file(scm_fuzz_fn fn, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 4096, n = 0, got;
    unsigned char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                buf = NULL;
            }
            buf = b;
        }
    }
    fclose(f);
    if (!buf) return -1;
    fn(buf, n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fuzz_replay config|set|ansatz|runs|families|seeds DIR...\n");
        return 2;
    }
    scm_fuzz_fn fn = scm_fuzz_lookup(argv[1]);
    if (!fn) {
        fprintf(stderr, "fuzz_replay: unknown target '%s'\n", argv[1]);
        return 2;
    }
    int passed = 0, failed = 0;
    for (int a = 2; a < argc; a++) {
        DIR *d = opendir(argv[a]);
        if (!d) continue; /* e.g. no crashers kept for this target */
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char path[4096];
            struct stat sb;
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
            if (replay_file(fn, path) == 0) {
                passed++;
            } else {
                fprintf(stderr, "cannot read %s\n", path);
                failed++;
            }
        }
        closedir(d);
    }
    if (passed == 0) failed++; /* an empty corpus tests nothing */
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
