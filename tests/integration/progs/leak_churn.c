/* SPDX-License-Identifier: MIT
 *
 * leak_churn.c - many short-lived heap blocks at many distinct addresses,
 * few live at once, 10 left at exit: the leak scan's working memory at exit
 * must follow the blocks live then, not every address ever used
 * (test_own_memory.py).
 *
 * ROUNDS rounds each allocate PER blocks and free them all; the block size
 * changes from round to round so that glibc carves them at other addresses
 * than the last round's (a distinct address each, mostly).
 *
 * usage: leak_churn ROUNDS PER
 */
#include <stdlib.h>

#include "common.h"

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 100;
    unsigned per = argc > 2 ? (unsigned)atoi(argv[2]) : 20000;
    void **v = malloc(per * sizeof(*v));
    if (!v)
        return 1;
    for (unsigned r = 0; r < rounds; r++) {
        size_t size = 24 + 16 * (r % 61);
        for (unsigned i = 0; i < per; i++) {
            v[i] = malloc(size);
            sink(v[i]);
        }
        for (unsigned i = 0; i < per; i++)
            free(v[i]);
    }
    free(v);
    static void *keep[10];
    for (int i = 0; i < 10; i++) {
        keep[i] = malloc(64);
        sink(keep[i]);
    }
    return 0;
}
