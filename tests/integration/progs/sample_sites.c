/* SPDX-License-Identifier: MIT
 *
 * sample_sites.c - two call sites with a known split of the bytes, for the
 * sampling tests (test_sampling.py): N rounds, each of which mallocs BIG
 * bytes in big_site() and SMALL bytes in small_site() and frees both, except
 * that the last LEAK rounds keep theirs. With the defaults (900 and 100
 * bytes) big_site makes 90 % of the bytes. Every event is a known number:
 * 2N allocations, 2(N - LEAK) frees, N (BIG + SMALL) bytes allocated.
 *
 * usage: sample_sites N BIG SMALL LEAK
 */
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

#define MAX_LEAK 1024

static void *kept[2 * MAX_LEAK];

__attribute__((noinline)) static void *big_site(unsigned long long size)
{
    void *p = malloc(size); /* @big_malloc */
    if (!p)
        die("malloc");
    return p;
}

__attribute__((noinline)) static void *small_site(unsigned long long size)
{
    void *p = malloc(size); /* @small_malloc */
    if (!p)
        die("malloc");
    return p;
}

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 1000);
    unsigned long long big = arg_u64(argc, argv, 2, 900);
    unsigned long long small = arg_u64(argc, argv, 3, 100);
    unsigned long long leak = arg_u64(argc, argv, 4, 0);
    if (leak > n || leak > MAX_LEAK)
        die("bad arguments");
    unsigned long long k = 0;
    for (unsigned long long i = 0; i < n; i++) {
        void *a = big_site(big);
        void *b = small_site(small);
        sink(a);
        sink(b);
        if (i >= n - leak) {
            kept[k++] = a;
            kept[k++] = b;
        } else {
            free(b);
            free(a);
        }
    }
    put_kv("pid", (unsigned long long)getpid());
    return 0;
}
