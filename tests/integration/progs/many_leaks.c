/* SPDX-License-Identifier: MIT
 *
 * many_leaks.c - a hundred distinct call stacks that each leak once, for
 * the bounded-output tests (test_bounded.py): leak_D_U allocates
 * (10*D + U + 1) * 100 bytes and never frees them, so stack k (0..99) leaks
 * (k + 1) * 100 bytes and no two stacks leak the same amount.
 *
 * usage: many_leaks [none]     ("none": allocate nothing, for diff's BEFORE)
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define LEAK(d, u)                                                                                 \
    __attribute__((noinline)) static void *leak_##d##_##u(void)                                    \
    {                                                                                              \
        return malloc((10 * d + u + 1) * 100);                                                     \
    }
#define LEAKS10(d)                                                                                 \
    LEAK(d, 0) LEAK(d, 1) LEAK(d, 2) LEAK(d, 3) LEAK(d, 4) LEAK(d, 5) LEAK(d, 6) LEAK(d, 7)       \
    LEAK(d, 8) LEAK(d, 9)
LEAKS10(0)
LEAKS10(1)
LEAKS10(2)
LEAKS10(3)
LEAKS10(4)
LEAKS10(5)
LEAKS10(6)
LEAKS10(7)
LEAKS10(8)
LEAKS10(9)

#define FN(d, u) leak_##d##_##u
#define FNS10(d)                                                                                   \
    FN(d, 0), FN(d, 1), FN(d, 2), FN(d, 3), FN(d, 4), FN(d, 5), FN(d, 6), FN(d, 7), FN(d, 8),      \
    FN(d, 9)
static void *(*const fns[100])(void) = {FNS10(0), FNS10(1), FNS10(2), FNS10(3), FNS10(4),
                                        FNS10(5), FNS10(6), FNS10(7), FNS10(8), FNS10(9)};

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "none") == 0)
        return 0;
    for (int k = 0; k < 100; k++)
        sink(fns[k]());
    put_kv("stacks", 100);
    return 0;
}
