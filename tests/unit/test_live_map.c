/* SPDX-License-Identifier: MIT
 *
 * test_live_map.c - src/analysis/live_map.c against a naive model (an array
 * indexed by block number): random puts and removes over a pool of
 * addresses must answer the same (replaced or new, the old block, present
 * or not, the count) through growth, dense probe runs and runs that wrap
 * round the end of the table, where backward-shift deletion can lose an
 * entry. Plus how a block is packed: sizes clamp to 56 bits, ordinals keep
 * 40 bits, address 0 is never stored.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/live_map.h"

struct slot_model {
    bool live;
    struct trk_live_block b;
};

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void assert_block(const struct trk_live_block *got, const struct trk_live_block *want)
{
    assert_int_equal(got->size, want->size);
    assert_int_equal(got->ts, want->ts);
    assert_int_equal(got->ord, want->ord);
    assert_int_equal(got->site, want->site);
}

/* Random operations on addrs[0..n) (bias: percent of puts); then every
 * address removed once, each answer checked against the model. */
static void random_run(const uint64_t *addrs, size_t n, uint64_t seed, int ops, unsigned bias)
{
    struct slot_model *model = calloc(n, sizeof(*model));
    assert_non_null(model);
    struct trk_live_map m;
    assert_int_equal(trk_live_map_init(&m), 0);
    size_t live = 0;
    for (int op = 0; op < ops; op++) {
        size_t i = (size_t)(rnd(&seed) % n);
        struct trk_live_block got;
        if (rnd(&seed) % 100 < bias) {
            struct trk_live_block b = {
                .size = rnd(&seed) & TRK_LIVE_SIZE_MASK,
                .ts = rnd(&seed),
                .ord = rnd(&seed) & TRK_LIVE_ORD_MASK,
                .site = (uint32_t)rnd(&seed),
            };
            int rc = trk_live_map_put(&m, addrs[i], &b, &got);
            if (model[i].live) {
                assert_int_equal(rc, 1);
                assert_block(&got, &model[i].b);
            } else {
                assert_int_equal(rc, 0);
                live++;
            }
            model[i] = (struct slot_model){true, b};
        } else {
            bool was = trk_live_map_remove(&m, addrs[i], &got);
            assert_int_equal(was, model[i].live);
            if (was) {
                assert_block(&got, &model[i].b);
                live--;
            }
            model[i].live = false;
        }
        assert_int_equal(trk_live_map_count(&m), live);
    }
    for (size_t i = 0; i < n; i++) {
        struct trk_live_block got;
        bool was = trk_live_map_remove(&m, addrs[i], &got);
        assert_int_equal(was, model[i].live);
        if (was)
            assert_block(&got, &model[i].b);
        assert_false(trk_live_map_remove(&m, addrs[i], &got));
    }
    assert_int_equal(trk_live_map_count(&m), 0);
    trk_live_map_free(&m);
    free(model);
}

/* Heap-like addresses: 16-byte aligned, close together. */
static void test_random_heap_addresses(void **state)
{
    (void)state;
    enum { N = 20000 };
    uint64_t *a = malloc(N * sizeof(*a));
    assert_non_null(a);
    for (size_t i = 0; i < N; i++)
        a[i] = UINT64_C(0x555555560000) + 16 * i;
    /* Puts first dominate (the table grows from 4096 slots), then removes. */
    random_run(a, N, 1, 200000, 70);
    random_run(a, N, 2, 200000, 30);
    random_run(a, 3000, 3, 200000, 50); /* ~1500 live: dense, no growth */
    free(a);
}

/* Addresses that share a few home slots of the initial table (4096 slots),
 * some of them the very last ones, so that probe runs are long and wrap
 * round the end: every deletion shifts entries, across the wrap too. */
static void test_random_colliding_addresses(void **state)
{
    (void)state;
    struct trk_live_map m;
    assert_int_equal(trk_live_map_init(&m), 0);
    size_t cap = m.mask + 1;
    enum { N = 1200 };
    uint64_t a[N];
    size_t n = 0;
    const size_t homes[] = {cap - 2, cap - 1, 0, 5, 6, 700};
    for (uint64_t x = 16; n < N; x += 16) {
        size_t h = trk_live_map_home(&m, x);
        for (size_t k = 0; k < sizeof(homes) / sizeof(homes[0]); k++)
            if (h == homes[k] && n < N)
                a[n++] = x;
    }
    trk_live_map_free(&m);
    /* At most 1200 live of 4096 slots: stays in the initial table. */
    for (uint64_t seed = 1; seed <= 5; seed++)
        random_run(a, N, seed * 77, 100000, 55);
}

static void test_packing(void **state)
{
    (void)state;
    struct trk_live_map m;
    assert_int_equal(trk_live_map_init(&m), 0);
    struct trk_live_block b = {
        .size = UINT64_MAX, .ts = 5, .ord = (UINT64_C(1) << 40) + 3, .site = 9};
    struct trk_live_block got;
    assert_int_equal(trk_live_map_put(&m, 0x1000, &b, &got), 0);
    b = (struct trk_live_block){.size = 1, .ts = 6, .ord = TRK_LIVE_ORD_MASK, .site = 10};
    assert_int_equal(trk_live_map_put(&m, 0x1000, &b, &got), 1);
    assert_int_equal(got.size, TRK_LIVE_SIZE_MASK); /* clamped */
    assert_int_equal(got.ord, 3);                   /* modulo 2^40 */
    assert_int_equal(got.ts, 5);
    assert_int_equal(got.site, 9);
    assert_true(trk_live_map_remove(&m, 0x1000, &got));
    assert_int_equal(got.ord, TRK_LIVE_ORD_MASK); /* all 40 bits kept */
    assert_int_equal(got.size, 1);
    /* Address 0 is the empty key: never stored, never found. */
    assert_int_equal(trk_live_map_put(&m, 0, &b, &got), 0);
    assert_int_equal(trk_live_map_count(&m), 0);
    assert_false(trk_live_map_remove(&m, 0, &got));
    trk_live_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_heap_addresses),
        cmocka_unit_test(test_random_colliding_addresses),
        cmocka_unit_test(test_packing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
