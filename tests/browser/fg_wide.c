/* SPDX-License-Identifier: MIT
 *
 * fg_wide.c - a call tree of about 100 000 frames, all wide enough to draw,
 * for the flamegraph performance test: 1024 leaves (every path of a binary
 * tree ten levels deep, two frames per level), each under a chain of 90
 * frames, each leaf holding 64 bytes at the end. Built without inlining so
 * that each call is a frame.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
#define LEVELS   10
#define CHAIN    90

static void *keep[1 << LEVELS];
static int nkeep;

NOINLINE static void chain(int n)
{
    if (n == 0) {
        keep[nkeep++] = malloc(64);
        return;
    }
    chain(n - 1);
}

static void branch(int level, unsigned bits);

NOINLINE static void left(int level, unsigned bits)
{
    branch(level, bits);
}

NOINLINE static void right(int level, unsigned bits)
{
    branch(level, bits);
}

NOINLINE static void branch(int level, unsigned bits)
{
    if (level == LEVELS)
        chain(CHAIN);
    else if ((bits >> level) & 1)
        right(level + 1, bits);
    else
        left(level + 1, bits);
}

int main(void)
{
    for (unsigned bits = 0; bits < (1u << LEVELS); bits++)
        branch(0, bits);
    return keep[0] ? 0 : 1;
}
