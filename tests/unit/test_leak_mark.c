/* SPDX-License-Identifier: MIT
 *
 * test_leak_mark.c - the exit scan's marking of words (src/capture/
 * leak_mark.c) against a naive model: whatever the number of words and
 * wherever in them a pointer sits (the AVX2 pass takes 8 words a branch,
 * then a tail one by one), a pointer to a block's start makes it reachable,
 * one inside it possibly lost, and a word one past it or just below it
 * nothing. Runs the same on a CPU without AVX2 (the plain loop).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/leakscan.h"

#define NB 8

static struct trk_lblock blocks[NB];
static uint32_t stack[2 * NB];
/* The blocks' memory (a reachable block is scanned in turn): zeros. */
static _Alignas(4096) uint64_t heap[NB][512];

/* NB blocks of 64 bytes, 4 KiB apart: sorted. */
static void set_init(struct trk_lset *s)
{
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < NB; i++)
        blocks[i] = (struct trk_lblock){(uint64_t)(uintptr_t)heap[i], 64, 0, 0};
    s->v = blocks;
    s->n = NB;
    s->lo = blocks[0].addr;
    s->hi = blocks[NB - 1].addr + 64;
    s->stack = stack;
    s->stack_len = 2 * NB;
}

/* Every length up to 40 words and every position in it: one word that
 * points at block b's start (b = position % NB), one inside block b + 1,
 * and, everywhere else, words just outside [lo, hi) and between blocks. */
static void test_every_position(void **state)
{
    (void)state;
    static uint64_t w[64];
    for (size_t n = 1; n <= 40; n++)
        for (size_t at = 0; at < n; at++)
            for (size_t in = 0; in < n; in++) {
                if (in == at)
                    continue;
                struct trk_lset s;
                set_init(&s);
                for (size_t k = 0; k < n; k++)
                    w[k] = k & 1 ? s.lo - 1 - k : s.hi + k; /* never in [lo, hi) */
                if (n > 2)
                    w[(at + n / 2) % n == in ? at : (at + n / 2) % n] =
                        s.lo + 64 + 8; /* between blocks 0 and 1 */
                size_t b = at % NB, c = (b + 1) % NB;
                w[at] = blocks[b].addr;
                w[in] = blocks[c].addr + 8;
                trk_lmark_words(&s, w, n);
                for (size_t i = 0; i < NB; i++) {
                    uint8_t want = i == b   ? TRK_LB_REACHABLE
                                   : i == c ? TRK_LB_POSSIBLE
                                            : TRK_LB_UNREACHED;
                    if (blocks[i].state != want)
                        fail_msg("n %zu at %zu in %zu: block %zu state %u, want %u", n, at, in, i,
                                 blocks[i].state, want);
                }
                assert_int_equal(s.root_bytes, n * 8);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_position),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
