/* SPDX-License-Identifier: MIT
 *
 * leak_sup_graph.c - a lost tree for suppressions that follow the leak
 * graph (test_leak_suppress_graph.py): a root of 5001 bytes allocated in
 * sgr_root_alloc holds the only pointers to two children of 5002 bytes
 * allocated in sgc_child_alloc, called from main, not from the root's
 * function, so that no child's stack names sgr_root_alloc. The root is
 * dropped: definitely lost, the children indirectly lost behind it.
 * No stdio: its buffer would be one more block.
 */
#include <stdlib.h>
#include <string.h>

#define NOINL __attribute__((noinline))

static NOINL void *sgr_root_alloc(void) { return malloc(5001); }
static NOINL void *sgc_child_alloc(void) { return malloc(5002); }

static NOINL void make_tree(void)
{
    void **root = sgr_root_alloc();
    for (int i = 0; i < 2; i++) /* one call site: the children share a stack */
        root[i] = sgc_child_alloc();
}

/* Overwrites the dead frames that held the pointers. */
static NOINL void scrub(void)
{
    volatile char big[16384];
    memset((void *)big, 0, sizeof(big));
}

int main(void)
{
    make_tree();
    scrub();
    return 0;
}
