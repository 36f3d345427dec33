/* SPDX-License-Identifier: MIT
 *
 * stacks_recurse.c - recursion DEPTH calls deep (default 1000) that leaks
 * one block of SIZE bytes at the bottom, for the depth-cap tests: with
 * `tracker run --depth 1024` every frame of rec fits, with the default cap
 * the stack is cut. "@name" marker comments give the test its lines.
 *
 * usage: stacks_recurse [DEPTH [SIZE]]
 */
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

static void *leaked;

__attribute__((noinline)) static void rec(unsigned long long n, unsigned long long size)
{
    if (n == 0) {
        leaked = malloc(size); /* @rec_malloc */
        if (!leaked)
            die("malloc");
        return;
    }
    rec(n - 1, size); /* @rec_call */
    sink(leaked);
}

int main(int argc, char **argv)
{
    unsigned long long depth = arg_u64(argc, argv, 1, 1000);
    unsigned long long size = arg_u64(argc, argv, 2, 4321);
    if (depth == 0)
        die("depth must be at least 1");
    rec(depth - 1, size); /* @main_call */
    sink(leaked);
    put_kv("pid", (unsigned long long)getpid());
    return 0;
}
