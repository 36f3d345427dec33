/* SPDX-License-Identifier: MIT
 *
 * nopie_malloc.c - a non-PIE executable that takes malloc's address: the
 * linker then exports a PLT stub under the name malloc (undefined, with an
 * address) and every library binds to it, as with Debian's python3.11.
 * It is not a malloc of the program's: calls still reach the tracker.
 * Allocates N blocks of S bytes through the pointer and leaks them.
 *
 * usage: nopie_malloc N S
 */
#include <stdlib.h>

#include "common.h"

void *(*volatile alloc_fn)(size_t);

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 0);
    unsigned long long s = arg_u64(argc, argv, 2, 1);
    alloc_fn = malloc; /* in code, non-PIC: an absolute address, the canonical PLT */
    for (unsigned long long i = 0; i < n; i++) {
        char *p = alloc_fn(s);
        if (!p)
            die("malloc");
        p[0] = 1;
        sink(p);
    }
    put_kv("ok", 1);
    return 0;
}
