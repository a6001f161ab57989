/* testutil.h: the small harness every test program uses.  CHECK records a
 * failure with file and line and goes on; CHECK_CLOSE compares with a
 * relative-or-absolute tolerance and prints both numbers.  A test program
 * ends with `return TEST_SUMMARY();`, which prints "N passed, N failed" and
 * returns the exit status for meson. */
#ifndef SCM_TESTUTIL_H
#define SCM_TESTUTIL_H

#include <math.h>
#include <stdio.h>

static int test_passed_, test_failed_;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (cond) {                                                          \
            test_passed_++;                                                  \
        } else {                                                             \
            test_failed_++;                                                  \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, \
                    #cond);                                                  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

/* |got - want| <= rtol * |want| + atol */
#define CHECK_CLOSE(got, want, rtol, atol, what)                                      \
    do {                                                                              \
        double g_ = (got), w_ = (want);                                               \
        CHECK(fabs(g_ - w_) <= (rtol) * fabs(w_) + (atol),                            \
              "%s: got %.17g, want %.17g (diff %.3g, rtol %g, atol %g)", (what), g_, \
              w_, fabs(g_ - w_), (double)(rtol), (double)(atol));                     \
    } while (0)

#define TEST_SUMMARY()                                                  \
    (printf("%d passed, %d failed\n", test_passed_, test_failed_), \
     test_failed_ ? 1 : 0)

#endif
