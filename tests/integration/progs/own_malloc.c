/* SPDX-License-Identifier: MIT
 *
 * own_malloc.c - an executable that defines malloc and free itself (a bump
 * allocator over a static arena; free does nothing) and not realloc or
 * calloc. The executable comes first in the symbol search order, so an
 * LD_PRELOADed library never sees these calls; a tracker that makes libc
 * allocate on its behalf at start-up (dlerror's message, asprintf) mixes
 * this malloc with libc's realloc and crashes the program (issue 11).
 * Allocates N blocks of S bytes and prints ok=1.
 *
 * usage: own_malloc N S
 */
#include <stddef.h>
#include <stdint.h>

#include "common.h"

static _Alignas(16) char arena[1 << 22];
static size_t used;

void *malloc(size_t n)
{
    size_t start = (used + 15) & ~(size_t)15;
    if (n > sizeof(arena) || start > sizeof(arena) - n)
        return NULL;
    used = start + n;
    return arena + start;
}

void free(void *p)
{
    (void)p;
}

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 0);
    unsigned long long s = arg_u64(argc, argv, 2, 1);
    for (unsigned long long i = 0; i < n; i++) {
        char *p = malloc(s);
        if (!p)
            die("malloc");
        p[0] = 1;
        sink(p);
    }
    put_kv("ok", 1);
    return 0;
}
