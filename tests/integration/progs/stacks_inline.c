/* SPDX-License-Identifier: MIT
 *
 * stacks_inline.c - built at -O2 (see meson.build): a chain of always_inline
 * functions inside outer(), which leaks one block of SIZE + 1 bytes. The
 * report must still show inl_leaf and inl_mid as frames of their own
 * (symbolized from DWARF inline records). "@name" markers give the lines.
 *
 * usage: stacks_inline [SIZE]
 */
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

static void *volatile kept;

static inline __attribute__((always_inline)) void *inl_leaf(unsigned long long n)
{
    void *p = malloc(n); /* @inl_leaf_malloc */
    sink(p);
    return p;
}

static inline __attribute__((always_inline)) void *inl_mid(unsigned long long n)
{
    void *p = inl_leaf(n + 1); /* @inl_mid_call */
    sink(p);
    return p;
}

/* Not inlined, and it stores the block after the call, so that the call
 * cannot become a tail jump that would erase this frame. */
__attribute__((noinline)) static void outer(unsigned long long n)
{
    kept = inl_mid(n); /* @outer_call */
    sink(kept);
}

int main(int argc, char **argv)
{
    unsigned long long size = arg_u64(argc, argv, 1, 1000);
    outer(size); /* @main_call */
    put_kv("pid", (unsigned long long)getpid());
    return 0;
}
