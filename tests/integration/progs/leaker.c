/* SPDX-License-Identifier: MIT
 *
 * leaker.c - allocates N blocks of S bytes with malloc, frees the first F of
 * them and leaks the rest; prints its pid. The simplest program with an exact
 * pattern, used by the fork/exec, preload-only and bad-input tests.
 *
 * usage: leaker N S [F]
 */
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 0);
    unsigned long long s = arg_u64(argc, argv, 2, 1);
    unsigned long long f = arg_u64(argc, argv, 3, 0);
    put_kv("pid", (unsigned long long)getpid());
    for (unsigned long long i = 0; i < n; i++) {
        char *p = malloc(s);
        if (!p)
            die("malloc");
        p[0] = (char)i;
        if (i < f)
            free(p);
        else
            sink(p);
    }
    return 0;
}
