/* The check the C test programs count failures with: CHECK(cond) reports a false condition with
 * its line and nucleus_last_error(), and the program exits non-zero when `failures` is not 0. */
#ifndef NUCLEUS_TEST_CHECK_H
#define NUCLEUS_TEST_CHECK_H

#include <stdio.h>

#include "nucleus.h"

static int failures = 0;

#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            failures++;                                                                          \
            fprintf(stderr, "FAIL line %d: %s (%s)\n", __LINE__, #cond, nucleus_last_error()); \
        }                                                                                        \
    } while (0)

#endif
