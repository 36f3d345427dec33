/* SPDX-License-Identifier: MIT
 *
 * fg_many.c - ten million heap events for the flamegraph performance test:
 * 5 000 000 allocations from 64 call sites, each freed 1000 allocations
 * later (a steady live set), so the capture is long and busy without being
 * a single stack. usage: fg_many [ALLOCATIONS]
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
#define LIVE     1000

static void *ring[LIVE];

NOINLINE static void *site(unsigned k, size_t size)
{
    /* Each case is a call site of its own: 64 distinct stacks. */
    switch (k % 8) {
    case 0:
        return malloc(size);
    case 1:
        return malloc(size + 1);
    case 2:
        return malloc(size + 2);
    case 3:
        return malloc(size + 3);
    case 4:
        return malloc(size + 4);
    case 5:
        return malloc(size + 5);
    case 6:
        return malloc(size + 6);
    default:
        return malloc(size + 7);
    }
}

NOINLINE static void *outer_a(unsigned k)
{
    return site(k, 32);
}
NOINLINE static void *outer_b(unsigned k)
{
    return site(k, 64);
}
NOINLINE static void *outer_c(unsigned k)
{
    return site(k, 128);
}
NOINLINE static void *outer_d(unsigned k)
{
    return site(k, 256);
}
NOINLINE static void *outer_e(unsigned k)
{
    return site(k, 512);
}
NOINLINE static void *outer_f(unsigned k)
{
    return site(k, 1024);
}
NOINLINE static void *outer_g(unsigned k)
{
    return site(k, 2048);
}
NOINLINE static void *outer_h(unsigned k)
{
    return site(k, 4096);
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 5000000;
    void *(*const outer[8])(unsigned) = {outer_a, outer_b, outer_c, outer_d,
                                         outer_e, outer_f, outer_g, outer_h};
    for (unsigned long i = 0; i < n; i++) {
        unsigned k = (unsigned)(i * 2654435761u >> 7);
        free(ring[i % LIVE]);
        ring[i % LIVE] = outer[(k >> 3) % 8](k);
    }
    for (int i = 0; i < LIVE; i++)
        free(ring[i]);
    return 0;
}
