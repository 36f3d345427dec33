/* SPDX-License-Identifier: MIT
 *
 * own_mem.c - many distinct stacks, many threads and loaded libraries, for
 * the tests of the tracker's own memory (test_own_memory.py): whatever
 * these numbers, what the tracker maps for itself must stay bounded.
 *
 * Each of THREADS threads (the main thread when 0) walks 2^BITS paths of
 * BITS levels, each level a call through left() or right(), and leaks one
 * 16-byte block at the bottom: 2^BITS distinct stacks, about 2^(BITS+2)
 * stack trie nodes. First it dlopens LIBS times each of a few libraries
 * that are always there (libm, libdl...: the loader keeps one copy each).
 *
 * Then it sleeps SLEEP_MS (the sampler's idle behaviour is watched then).
 *
 * usage: own_mem BITS [THREADS [LIBS [SLEEP_MS]]]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "common.h"

static unsigned bits;

__attribute__((noinline)) static void step(unsigned d, unsigned long v);

__attribute__((noinline)) static void left(unsigned d, unsigned long v)
{
    step(d, v);
    sink(&d);
}

__attribute__((noinline)) static void right(unsigned d, unsigned long v)
{
    step(d, v);
    sink(&d);
}

__attribute__((noinline)) static void step(unsigned d, unsigned long v)
{
    if (d == 0) {
        void *p = malloc(16); /* @leak */
        if (!p)
            die("malloc");
        sink(p);
        return;
    }
    if (v & 1)
        left(d - 1, v >> 1);
    else
        right(d - 1, v >> 1);
    sink(&v);
}

static void *walk(void *arg)
{
    (void)arg;
    for (unsigned long v = 0; v < 1ul << bits; v++)
        step(bits, v);
    return NULL;
}

static void load_libs(unsigned long n)
{
    static const char *const libs[] = {"libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0"};
    for (unsigned long i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof(libs) / sizeof(libs[0]); k++) {
            void *h = dlopen(libs[k], RTLD_NOW | RTLD_LOCAL);
            if (!h)
                die("dlopen");
            if (i + 1 < n)
                dlclose(h); /* churn: the last round stays loaded */
        }
}

int main(int argc, char **argv)
{
    bits = (unsigned)arg_u64(argc, argv, 1, 12);
    unsigned long threads = arg_u64(argc, argv, 2, 0);
    unsigned long libs = arg_u64(argc, argv, 3, 0);
    unsigned long wait_ms = arg_u64(argc, argv, 4, 0);
    if (bits > 24 || threads > 256)
        die("usage: own_mem BITS(<=24) [THREADS(<=256) [LIBS]]");
    load_libs(libs);
    if (threads == 0) {
        walk(NULL);
    } else {
        pthread_t th[256];
        for (unsigned long i = 0; i < threads; i++)
            if (pthread_create(&th[i], NULL, walk, NULL))
                die("pthread_create");
        for (unsigned long i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
    }
    sleep_ms(wait_ms);
    put_kv("stacks", 1ul << bits);
    put_kv("threads", threads);
    return 0;
}
