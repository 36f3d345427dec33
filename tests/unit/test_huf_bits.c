/* SPDX-License-Identifier: MIT
 *
 * test_huf_bits.c - the HUF encoder (src/common/huf.c) writes exactly the
 * bit stream docs/FORMAT.md §2 defines, whatever shortcuts it takes: every
 * payload is compared with one written here a bit at a time from the
 * chunk's own length table (canonical codes by length then byte value,
 * most significant bit first, zero padding). Sizes cover the encoder's
 * five-code main loop, its tail, and output buffers that end too soon for
 * its 8-byte stores (cap exactly the payload).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/huf.h"

/* The reference: codes from the table in out[0, TRK_HUF_TABLE), bits of
 * in[0, n) one by one into ref; returns the payload length. */
static size_t reference(const uint8_t *table, const uint8_t *in, size_t n, uint8_t *ref)
{
    unsigned len[256], nlen[TRK_HUF_MAX_LEN + 1] = {0}, next[TRK_HUF_MAX_LEN + 1];
    uint32_t code[256];
    for (unsigned s = 0; s < 256; s++) {
        len[s] = (table[s / 2] >> (4 * (s & 1))) & 15;
        nlen[len[s]]++;
    }
    nlen[0] = 0;
    for (unsigned l = 1, c = 0; l <= TRK_HUF_MAX_LEN; l++) {
        c = (c + nlen[l - 1]) << 1;
        next[l] = c;
    }
    for (unsigned s = 0; s < 256; s++)
        if (len[s])
            code[s] = next[len[s]]++;
    memcpy(ref, table, TRK_HUF_TABLE);
    size_t bit = 0;
    uint8_t *p = ref + TRK_HUF_TABLE;
    for (size_t i = 0; i < n; i++) {
        assert_true(len[in[i]] != 0);
        for (unsigned b = len[in[i]]; b-- > 0; bit++) {
            if (bit % 8 == 0)
                p[bit / 8] = 0;
            if (code[in[i]] >> b & 1)
                p[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
        }
    }
    return TRK_HUF_TABLE + (bit + 7) / 8;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static unsigned next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 40);
}

static void fill(uint8_t *in, size_t n, int shape)
{
    for (size_t i = 0; i < n; i++) {
        unsigned r = next_rand();
        switch (shape % 4) {
        case 0: in[i] = (uint8_t)r; break;                        /* flat: 8-bit codes */
        case 1: in[i] = (uint8_t)(r % 3 ? 0 : r); break;          /* one frequent byte */
        case 2: in[i] = (uint8_t)__builtin_ctz(r | 1u << 23); break; /* geometric */
        default: in[i] = (uint8_t)(r & 1 ? r % 7 : r); break;     /* long codes too */
        }
    }
    in[0] = 0;
    if (n > 1)
        in[1] = 1;
}

static void test_huf_bits_match_reference(void **unused)
{
    (void)unused;
    static uint8_t in[70000], out[TRK_HUF_TABLE + 70000 + 16], ref[TRK_HUF_TABLE + 70000 + 16];
    static const size_t sizes[] = {2, 3, 4, 5, 6, 7, 9, 10, 11, 16, 31, 64, 101, 1000, 4099, 65536};
    for (int shape = 0; shape < 4; shape++) {
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            size_t n = sizes[k];
            fill(in, n, shape);
            size_t got = trk_huf_encode(in, n, out, sizeof out);
            assert_true(got >= TRK_HUF_TABLE);
            size_t want = reference(out, in, n, ref);
            assert_int_equal(got, want);
            assert_memory_equal(out, ref, want);
            /* A buffer that ends at the payload: the same bytes, nothing
             * written past it. */
            static uint8_t tight[TRK_HUF_TABLE + 70000 + 16];
            memset(tight, 0xA5, sizeof tight);
            assert_int_equal(trk_huf_encode(in, n, tight, want), want);
            assert_memory_equal(tight, ref, want);
            for (size_t j = want; j < want + 16; j++)
                assert_int_equal(tight[j], 0xA5);
            /* One byte short: refused. */
            assert_int_equal(trk_huf_encode(in, n, tight, want - 1), 0);
            uint8_t *back = malloc(n);
            assert_non_null(back);
            assert_int_equal(trk_huf_decode(out, got, back, n), 0);
            assert_memory_equal(back, in, n);
            free(back);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huf_bits_match_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
