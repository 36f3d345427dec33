/* SPDX-License-Identifier: MIT
 *
 * stacks_chain.c - a known call chain for the report tests: main -> foo ->
 * bar -> baz, where baz mallocs SIZE bytes, N times; then everything but the
 * last LEAK blocks is freed. The peak is N * SIZE, all of it with baz
 * innermost; the leak is LEAK * SIZE in LEAK blocks. Lines the test looks
 * for carry "@name" marker comments (test_reports.py scans for them).
 *
 * usage: stacks_chain N SIZE LEAK
 */
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

#define MAX_BLOCKS 4096

static void *blocks[MAX_BLOCKS];

__attribute__((noinline)) static void baz(unsigned long long i, unsigned long long size)
{
    blocks[i] = malloc(size); /* @baz_malloc */
    if (!blocks[i])
        die("malloc");
}

__attribute__((noinline)) static void bar(unsigned long long i, unsigned long long size)
{
    baz(i, size); /* @bar_call */
    sink(blocks[i]);
}

__attribute__((noinline)) static void foo(unsigned long long i, unsigned long long size)
{
    bar(i, size); /* @foo_call */
    sink(blocks[i]);
}

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 0);
    unsigned long long size = arg_u64(argc, argv, 2, 1);
    unsigned long long leak = arg_u64(argc, argv, 3, 0);
    if (n > MAX_BLOCKS || leak > n)
        die("bad arguments");
    for (unsigned long long i = 0; i < n; i++)
        foo(i, size); /* @main_call */
    for (unsigned long long i = 0; i < n - leak; i++)
        free(blocks[i]);
    put_kv("pid", (unsigned long long)getpid());
    return 0;
}
