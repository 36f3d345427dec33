/* SPDX-License-Identifier: MIT
 *
 * test_huf_reuse.c - the HUF encoder's per-stream memory (struct
 * trk_huf_enc, src/common/huf.h): a code counted on one piece is reused on
 * the next ones, so every byte value must keep a code (a reused piece may
 * hold bytes the counted one had none of), the table must be complete (the
 * decoder's fast path), and the encoder must count again after
 * TRK_HUF_RECOUNT pieces, after a piece that came out larger than the code
 * promised, and at once where the old code does not fit the buffer. Every
 * payload is decoded back (docs/FORMAT.md §2).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/huf.h"

#define N 20000

static uint8_t in[N], out[N + 1024], back[N];

/* Bytes from [lo, lo + span), skewed towards lo. */
static void fill(uint8_t *p, size_t n, unsigned lo, unsigned span, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned a = (unsigned)(x % span), b = (unsigned)((x >> 20) % span);
        p[i] = (uint8_t)(lo + (a < b ? a : b));
    }
}

static size_t enc_check(struct trk_huf_enc *st, const uint8_t *p, size_t n, size_t cap)
{
    size_t m = trk_huf_encode_reuse(st, p, n, out, cap);
    assert_true(m > TRK_HUF_TABLE && m <= cap);
    memset(back, 0xee, n);
    assert_int_equal(trk_huf_decode(out, m, back, n), 0);
    assert_memory_equal(back, p, n);
    return m;
}

static void test_every_byte_keeps_a_code(void **unused)
{
    (void)unused;
    struct trk_huf_enc st = {0};
    fill(in, N, 0, 16, 1);
    enc_check(&st, in, N, sizeof out);
    assert_int_equal(st.age, 1);
    /* All 256 lengths set, and the Kraft sum exactly 1. */
    uint32_t kraft = 0;
    for (unsigned s = 0; s < 256; s++) {
        unsigned l = (st.table[s / 2] >> (4 * (s & 1))) & 15;
        assert_true(l >= 1 && l <= TRK_HUF_MAX_LEN);
        kraft += 1u << (TRK_HUF_MAX_LEN - l);
    }
    assert_int_equal(kraft, 1u << TRK_HUF_MAX_LEN);
    /* The next piece, of the same kind but with a few bytes the first had
     * none of, goes with the remembered table. */
    uint8_t table[TRK_HUF_TABLE];
    memcpy(table, st.table, sizeof table);
    fill(in, N, 0, 16, 2);
    for (size_t i = 0; i < N; i += 997)
        in[i] = (uint8_t)(200 + i % 56);
    enc_check(&st, in, N, sizeof out);
    assert_memory_equal(out, table, TRK_HUF_TABLE);
    assert_int_equal(st.age, 2);
}

static void test_recount_every_nth(void **unused)
{
    (void)unused;
    struct trk_huf_enc st = {0};
    uint8_t first[TRK_HUF_TABLE];
    for (unsigned k = 0; k < TRK_HUF_RECOUNT; k++) {
        fill(in, N, 0, 40, 10 + k);
        enc_check(&st, in, N, sizeof out);
        if (k == 0)
            memcpy(first, st.table, sizeof first);
        else
            assert_memory_equal(out, first, TRK_HUF_TABLE); /* reused */
        assert_int_equal(st.age, k + 1);
    }
    /* The TRK_HUF_RECOUNT-th piece after the count is counted: its table is
     * the exact one, as trk_huf_encode's. */
    fill(in, N, 0, 40, 99);
    size_t m = enc_check(&st, in, N, sizeof out);
    assert_int_equal(st.age, 1);
    static uint8_t exact[N + 1024];
    assert_int_equal(trk_huf_encode(in, N, exact, sizeof exact), m);
    assert_memory_equal(out, exact, m);
}

static void test_worse_than_promised_recounts(void **unused)
{
    (void)unused;
    struct trk_huf_enc st = {0};
    fill(in, N, 0, 8, 3);
    enc_check(&st, in, N, sizeof out);
    /* The same bytes, the frequent ones now rare and the other way round:
     * fits, decodes, but costs more than promised, so the next piece is
     * counted. */
    fill(in, N, 0, 8, 4);
    for (size_t i = 0; i < N; i++)
        in[i] = (uint8_t)(7 - in[i]);
    enc_check(&st, in, N, sizeof out);
    assert_int_equal(st.age, 0);
    fill(in, N, 100, 64, 5);
    enc_check(&st, in, N, sizeof out);
    assert_int_equal(st.age, 1);
}

static void test_old_code_too_big_counts_now(void **unused)
{
    (void)unused;
    struct trk_huf_enc st = {0};
    fill(in, N, 0, 4, 6);
    enc_check(&st, in, N, sizeof out);
    /* Bytes that cost 11 bits with the old code fit in 3 with their own:
     * a cap the exact code meets but the old one cannot. */
    fill(in, N, 128, 8, 7);
    static uint8_t exact[N + 1024];
    size_t want = trk_huf_encode(in, N, exact, sizeof exact);
    assert_true(want > 0 && want < N / 2);
    size_t m = enc_check(&st, in, N, want);
    assert_int_equal(m, want);
    assert_memory_equal(out, exact, m);
    assert_int_equal(st.age, 1);
    /* Too small even for the exact code: 0, and the next piece counts. */
    st.age = 3;
    assert_int_equal(trk_huf_encode_reuse(&st, in, N, out, want - 1), 0);
    assert_int_equal(st.age, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_byte_keeps_a_code),
        cmocka_unit_test(test_recount_every_nth),
        cmocka_unit_test(test_worse_than_promised_recounts),
        cmocka_unit_test(test_old_code_too_big_counts_now),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
