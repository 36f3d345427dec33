/* SPDX-License-Identifier: MIT
 *
 * realloc_chain.c - one block resized N times: malloc(S0), then
 * realloc(p, S0 + i*D) for i = 1..N, then free. Live heap never holds more
 * than the current block, so the peak grows by exactly N*D over N = 0.
 *
 * usage: realloc_chain N S0 D
 */
#include <stdlib.h>

#include "common.h"

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 1000);
    unsigned long long s0 = arg_u64(argc, argv, 2, 100000);
    long long d = (long long)arg_u64(argc, argv, 3, 1000);
    char *p = malloc(s0);
    if (!p)
        die("malloc");
    p[0] = 1;
    for (unsigned long long i = 1; i <= n; i++) {
        size_t sz = (size_t)((long long)s0 + (long long)i * d);
        p = realloc(p, sz);
        if (!p)
            die("realloc");
        p[sz - 1] = (char)i;
    }
    free(p);
    return 0;
}
