/* SPDX-License-Identifier: MIT
 *
 * unwind_dlctor_lib.c - a shared library whose constructor allocates 600
 * times through call paths of several depths: every stack then holds the
 * tracker's dlopen wrapper mid-stack (one of its own frames, left out of
 * the stack), so the own unwinder's walk memo replays entries holding it
 * (test_unwind_memo.py). It first waits 60 ms, so that the tracker's
 * sampler thread has put it in the own unwinder's module table.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

volatile uintptr_t dlctor_sink;

__attribute__((noinline)) static void ctor_leaf(int k)
{
    void *p = malloc(16 + (size_t)(k & 7));
    dlctor_sink += (uintptr_t)p;
    free(p);
}

__attribute__((noinline)) static void ctor_down(int k, int depth)
{
    volatile char pad[48];
    pad[depth & 31] = (char)k;
    if (depth > 0)
        ctor_down(k, depth - 1);
    else
        ctor_leaf(k + pad[0]);
    dlctor_sink += (uintptr_t)pad[depth & 31];
}

__attribute__((noinline)) static void ctor_other(int k)
{
    ctor_leaf(k);
    ctor_down(k, 2);
}

__attribute__((constructor)) static void dlctor_init(void)
{
    /* The tracker's own unwinder learns of a library when dlopen returns,
     * or from its sampler thread within ~10 ms (libtorch's constructors
     * run for seconds): until then these walks are libunwind's. */
    struct timespec ts = {0, 60 * 1000 * 1000};
    nanosleep(&ts, NULL);
    for (int k = 0; k < 300; k++) {
        ctor_down(k, k % 5);
        ctor_other(k);
    }
}
