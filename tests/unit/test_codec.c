/* SPDX-License-Identifier: MIT
 *
 * test_codec.c - the thread-stream record codec (src/format/record.[ch]),
 * the varint primitives it is built on and CRC-32C.
 *
 * Every record type goes through its encoder and trk_rec_decode and must come
 * back with the exact field values, with the per-stream delta state carried
 * from record to record exactly as the encoder carried it. Malformed input
 * (truncations, zero seq deltas, unknown tags, kind 0, lengths over the
 * format's caps) must be refused with -1 and must leave both the input pointer
 * and the caller's state untouched, because the reader reports the exact
 * offset where a stream broke. Expected byte strings are worked out by hand
 * from docs/FORMAT.md, never copied from the encoder's output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "common/huf.h"
#include "common/varint.h"
#include "format/format.h"
#include "format/record.h"
#include "rec_reject.h"

/* Big enough for every encoder's worst case, with slack for the tests that
 * append hand-made bytes. */
#define BUF_LEN (TRK_REC_MODULE_MAX + 256)

static const struct trk_rec_state zero_state;

/* Decodes exactly one record spanning [buf, buf+len) and checks that it was
 * consumed completely. */
static void decode_exact(const uint8_t *buf, size_t len, struct trk_rec_state *st,
                         struct trk_rec *r)
{
    const uint8_t *p = buf;
    assert_int_equal(trk_rec_decode(&p, buf + len, st, r), 0);
    assert_ptr_equal(p, buf + len);
}

/* ---- CRC-32C and varints --------------------------------------------- */

static void test_crc32c(void **unused)
{
    (void)unused;
    /* The standard CRC-32C check value (RFC 3720 appendix, FORMAT.md). */
    assert_int_equal(trk_crc32c(0, "123456789", 9), 0xE3069283u);
    /* Continuing a CRC over a split buffer gives the same value, which the
     * chunk CRC relies on (it covers two header ranges and the payload). */
    uint32_t c = trk_crc32c(0, "1234", 4);
    assert_int_equal(trk_crc32c(c, "56789", 5), 0xE3069283u);
    /* Split at every point, to exercise the slicing-by-8 tail handling. */
    const char *s = "The quick brown fox jumps over the lazy dog, twice over!";
    size_t n = strlen(s);
    uint32_t whole = trk_crc32c(0, s, n);
    for (size_t i = 0; i <= n; i++)
        assert_int_equal(trk_crc32c(trk_crc32c(0, s, i), s + i, n - i), whole);
    /* 32 zero bytes: known CRC-32C value from RFC 3720 B.4. */
    uint8_t zeros[32] = {0};
    assert_int_equal(trk_crc32c(0, zeros, sizeof zeros), 0x8A9136AAu);
    uint8_t ones[32];
    memset(ones, 0xff, sizeof ones);
    assert_int_equal(trk_crc32c(0, ones, sizeof ones), 0x62A8AB43u);
    assert_int_equal(trk_crc32c(0, "", 0), 0u);
}

/* The CPU's crc32 instruction (where trk_crc32c uses it) and the tables
 * agree on every length and alignment, continued CRCs included. */
static void test_crc32c_hw_matches_tables(void **unused)
{
    (void)unused;
    uint8_t buf[300];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len + off <= sizeof buf; len += 7) {
            uint32_t seed = (uint32_t)(off * 977 + len);
            assert_int_equal(trk_crc32c(seed, buf + off, len),
                             trk_crc32c_soft(seed, buf + off, len));
        }
    assert_int_equal(trk_crc32c_soft(0, "123456789", 9), 0xE3069283u);
    print_message("crc32c: %s\n", trk_crc32c_hw_available() ? "sse4.2 instruction" : "tables");
}

static void test_varint_edges(void **unused)
{
    (void)unused;
    static const struct {
        uint64_t v;
        size_t len;
    } cases[] = {
        {0, 1},
        {127, 1},
        {128, 2},
        {16383, 2},
        {16384, 3},
        {UINT32_MAX, 5},
        {(1ull << 63) - 1, 9},
        {1ull << 63, 10},
        {UINT64_MAX, 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t buf[16];
        uint8_t *e = trk_put_varint(buf, cases[i].v);
        assert_int_equal((size_t)(e - buf), cases[i].len);
        const uint8_t *p = buf;
        uint64_t out = 0;
        assert_int_equal(trk_get_varint(&p, e, &out), 0);
        assert_ptr_equal(p, e);
        assert_true(out == cases[i].v);
        /* Every prefix is short input. */
        for (size_t k = 0; k < cases[i].len; k++) {
            p = buf;
            assert_int_equal(trk_get_varint(&p, buf + k, &out), -1);
            assert_ptr_equal(p, buf);
        }
    }
    /* UINT64_MAX is nine 0xff then 0x01. */
    uint8_t max[10];
    trk_put_varint(max, UINT64_MAX);
    for (int i = 0; i < 9; i++)
        assert_int_equal(max[i], 0xff);
    assert_int_equal(max[9], 0x01);

    /* Eleven continuation bytes: longer than any valid varint. */
    uint8_t eleven[11];
    memset(eleven, 0x80, 10);
    eleven[10] = 0x00;
    const uint8_t *p = eleven;
    uint64_t out;
    assert_int_equal(trk_get_varint(&p, eleven + sizeof eleven, &out), -1);
    assert_ptr_equal(p, eleven);

    /* Zigzag: 0,-1,1,-2 -> 0,1,2,3; the extremes take the extremes. */
    assert_true(trk_zigzag(0) == 0);
    assert_true(trk_zigzag(-1) == 1);
    assert_true(trk_zigzag(1) == 2);
    assert_true(trk_zigzag(-2) == 3);
    assert_true(trk_zigzag(INT64_MAX) == UINT64_MAX - 1);
    assert_true(trk_zigzag(INT64_MIN) == UINT64_MAX);
    const int64_t sv[] = {0, -1, 1, INT64_MIN, INT64_MAX, -123456789012345, 987654321};
    for (size_t i = 0; i < sizeof sv / sizeof sv[0]; i++) {
        uint8_t buf[16];
        uint8_t *e = trk_put_svarint(buf, sv[i]);
        const uint8_t *q = buf;
        int64_t o = 0;
        assert_int_equal(trk_get_svarint(&q, e, &o), 0);
        assert_true(o == sv[i]);
    }
}

/* ---- Exact encodings, worked out from FORMAT.md by hand -------------- */

static void test_alloc_golden_bytes(void **unused)
{
    (void)unused;
    /* malloc, seq 1, ts 5, addr 0x1000, size 16, stack 0, from zero state:
     * tag 0x20|1; seqd 1; tsd zz(5)=10; addr zz(0x1000)=0x2000 -> 80 40;
     * size 0x10; stack 0. */
    static const uint8_t want[] = {0x21, 0x01, 0x0a, 0x80, 0x40, 0x10, 0x00};
    uint8_t buf[BUF_LEN] = {0};
    struct trk_rec_state st = zero_state;
    uint8_t *e = trk_enc_alloc_long(buf, &st, TRK_ALLOC_MALLOC, 1, 5, 0x1000, 16, 0);
    assert_int_equal((size_t)(e - buf), sizeof want);
    assert_memory_equal(buf, want, sizeof want);

    /* Then free of 0x0ff0 (delta -16 -> zz 31) at seq 3, ts 6 (tsd 1 -> 2):
     * tag 0x40|13, seqd 2, tsd 2, addr 0x1f. */
    static const uint8_t want_free[] = {0x4d, 0x02, 0x02, 0x1f};
    e = trk_enc_free_long(buf, &st, TRK_ALLOC_FREE, 3, 6, 0x0ff0);
    assert_int_equal((size_t)(e - buf), sizeof want_free);
    assert_memory_equal(buf, want_free, sizeof want_free);

    /* realloc at seq 4/seq2 6 from 0x0ff0 to 0x1000 (16 above old, not above
     * the previous address state), size 200, stack 7:
     * tag 0x63, seqd 1, tsd 0, old delta 0, seq2d 2, new delta +16 -> 32,
     * size 200 -> c8 01, stack 7. */
    static const uint8_t want_re[] = {0x63, 0x01, 0x00, 0x00, 0x02, 0x20, 0xc8, 0x01, 0x07};
    e = trk_enc_realloc(buf, &st, TRK_ALLOC_REALLOC, 4, 6, 6, 0x0ff0, 0x1000, 200, 7);
    assert_int_equal((size_t)(e - buf), sizeof want_re);
    assert_memory_equal(buf, want_re, sizeof want_re);
    assert_true(st.seq == 6);
    assert_true(st.addr == 0x1000);
    assert_true(st.ts == 6);

    /* Decoding the hand-written bytes gives the values back. */
    struct trk_rec_state ds = zero_state;
    struct trk_rec r;
    decode_exact(want, sizeof want, &ds, &r);
    assert_int_equal(r.rclass, TRK_RC_ALLOC);
    assert_int_equal(r.kind, TRK_ALLOC_MALLOC);
    assert_true(r.seq == 1 && r.ts == 5 && r.addr == 0x1000 && r.size == 16 && r.stack == 0);
    decode_exact(want_free, sizeof want_free, &ds, &r);
    assert_int_equal(r.rclass, TRK_RC_FREE);
    assert_int_equal(r.kind, TRK_ALLOC_FREE);
    assert_true(r.seq == 3 && r.ts == 6 && r.addr == 0x0ff0);
    decode_exact(want_re, sizeof want_re, &ds, &r);
    assert_int_equal(r.rclass, TRK_RC_REALLOC);
    assert_true(r.seq == 4 && r.seq2 == 6 && r.addr == 0x0ff0 && r.addr2 == 0x1000);
    assert_true(r.size == 200 && r.stack == 7 && r.ts == 6);
    assert_memory_equal(&ds, &st, sizeof st);
}

/* ---- The HUF chunk codec (FORMAT.md §2) ---------------------------------- */

/* "abaabc": counts a 3, b 2, c 1 -> lengths a 1, b 2, c 2; canonical codes
 * a 0, b 10, c 11; bits 0 10 0 0 10 11 = 0100 0101 1 + 7 zero bits. */
static void test_huf_golden_bytes(void **unused)
{
    (void)unused;
    uint8_t out[TRK_HUF_TABLE + 8];
    size_t n = trk_huf_encode((const uint8_t *)"abaabc", 6, out, sizeof out);
    assert_int_equal(n, TRK_HUF_TABLE + 2);
    uint8_t table[TRK_HUF_TABLE] = {0};
    table['a' / 2] = 1 << 4;     /* 'a' = 97: odd, high nibble */
    table['b' / 2] = 2 | 2 << 4; /* 'b' = 98 low nibble, 'c' = 99 high */
    assert_memory_equal(out, table, TRK_HUF_TABLE);
    assert_int_equal(out[TRK_HUF_TABLE], 0x45);
    assert_int_equal(out[TRK_HUF_TABLE + 1], 0x80);
    uint8_t back[6];
    assert_int_equal(trk_huf_decode(out, n, back, 6), 0);
    assert_memory_equal(back, "abaabc", 6);
    /* One byte value only, or no room: not encoded. */
    assert_int_equal(trk_huf_encode((const uint8_t *)"aaaa", 4, out, sizeof out), 0);
    assert_int_equal(trk_huf_encode((const uint8_t *)"abaabc", 6, out, TRK_HUF_TABLE + 1), 0);
    /* Malformed: a padding bit set, a byte too many or too few, codes that
     * run past the payload, an incomplete or overlong code, no table. */
    uint8_t bad[TRK_HUF_TABLE + 8];
    memcpy(bad, out, n);
    bad[TRK_HUF_TABLE + 1] = 0x81;
    assert_int_equal(trk_huf_decode(bad, n, back, 6), -1);
    memcpy(bad, out, n);
    bad[n] = 0;
    assert_int_equal(trk_huf_decode(bad, n + 1, back, 6), -1);
    assert_int_equal(trk_huf_decode(out, n - 1, back, 6), -1);
    /* (The padding may decode as codes of a short symbol: raw_len, under
     * the chunk CRC, says how many there are. More than the bits hold:) */
    uint8_t more[20];
    assert_int_equal(trk_huf_decode(out, n, more, sizeof more), -1);
    /* An incomplete code (a 0, b 10: Kraft sum 3/4) is fine until a bit
     * pattern that is no code (11) comes. */
    uint8_t part[TRK_HUF_TABLE + 1] = {0};
    part['a' / 2] = 1 << 4;
    part['b' / 2] = 2;
    part[TRK_HUF_TABLE] = 0x40; /* 0 10 00000: a b */
    assert_int_equal(trk_huf_decode(part, sizeof part, back, 2), 0);
    assert_memory_equal(back, "ab", 2);
    part[TRK_HUF_TABLE] = 0x60; /* 0 11: no code */
    assert_int_equal(trk_huf_decode(part, sizeof part, back, 2), -1);
    memcpy(bad, out, n);
    bad['c' / 2] = 1 | 2 << 4; /* b: 1 bit, Kraft sum 5/4 */
    assert_int_equal(trk_huf_decode(bad, n, back, 6), -1);
    bad['c' / 2] = 2 | 12 << 4;
    assert_int_equal(trk_huf_decode(bad, n, back, 6), -1);
    assert_int_equal(trk_huf_decode(out, TRK_HUF_TABLE - 1, back, 6), -1);
}

/* Round trips over flat, skewed and geometric distributions, sizes 2..64
 * KiB, and a Fibonacci distribution whose plain Huffman code is deeper than
 * TRK_HUF_MAX_LEN (the lengths must be limited). */
static void test_huf_round_trip(void **unused)
{
    (void)unused;
    static uint8_t in[65536], out[TRK_HUF_TABLE + 65536 * 2], back[65536];
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int round = 0; round < 40; round++) {
        size_t n = 2 + (size_t)(x % 65535);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            unsigned r = (unsigned)(x >> 40);
            switch (round % 4) {
            case 0: in[i] = (uint8_t)r; break;
            case 1: in[i] = (uint8_t)(r % 3 ? 0 : r); break;
            case 2: in[i] = (uint8_t)__builtin_ctz(r | 1u << 23); break;
            default: in[i] = (uint8_t)(r % 5); break;
            }
        }
        in[0] = 0;
        in[1] = 1; /* at least two values */
        size_t m = trk_huf_encode(in, n, out, sizeof out);
        assert_true(m >= TRK_HUF_TABLE);
        memset(back, 0xAA, n);
        assert_int_equal(trk_huf_decode(out, m, back, n), 0);
        assert_memory_equal(back, in, n);
    }
    /* Counts 1, 1, 2, 3, 5, 8, ...: a plain Huffman tree 20 deep. */
    size_t n = 0;
    uint32_t a = 1, b = 1;
    for (unsigned s = 0; s < 21 && n < sizeof in; s++) {
        for (uint32_t k = 0; k < a && n < sizeof in; k++)
            in[n++] = (uint8_t)s;
        uint32_t t = a + b;
        a = b;
        b = t;
    }
    size_t m = trk_huf_encode(in, n, out, sizeof out);
    assert_true(m > TRK_HUF_TABLE);
    for (unsigned s = 0; s < 256; s++)
        assert_true(((out[s / 2] >> (4 * (s & 1))) & 15) <= TRK_HUF_MAX_LEN);
    assert_int_equal(trk_huf_decode(out, m, back, n), 0);
    assert_memory_equal(back, in, n);
}

/* ---- Compact heap records (version 4, FORMAT.md §4.1) ------------------ */

static void test_compact_golden_bytes(void **unused)
{
    (void)unused;
    uint8_t buf[BUF_LEN] = {0};
    struct trk_rec_state st = zero_state, ds = zero_state;
    struct trk_rec r;
    /* malloc, seq 1, ts 5000, addr 0x1000, size 16, stack 0 from zero:
     * tag 1 1 00 01 11 = 0xC7 (slot 0, seqd 1, tsq in a varint); tsq
     * 5000 >> 10 = 4; addr 0x1000 / 16 = 0x100, zz 0x200, << 1 = 0x400 ->
     * 80 08; size 0x10; stack 0. The stream's ts becomes 4 * 1024. */
    static const uint8_t want[] = {0xC7, 0x04, 0x80, 0x08, 0x10, 0x00};
    uint8_t *e = trk_enc_alloc(buf, &st, TRK_ALLOC_MALLOC, 1, 5000, 0x1000, 16, 0);
    assert_int_equal((size_t)(e - buf), sizeof want);
    assert_memory_equal(buf, want, sizeof want);
    assert_true(st.ts == 4096);
    decode_exact(want, sizeof want, &ds, &r);
    assert_int_equal(r.rclass, TRK_RC_ALLOC);
    assert_int_equal(r.kind, TRK_ALLOC_MALLOC);
    assert_true(r.seq == 1 && r.ts == 4096 && r.addr == 0x1000 && r.size == 16 && r.stack == 0);

    /* free 0x0ff0 at seq 3, ts 6500: seqd 2, tsq (6500 - 4096) >> 10 = 2,
     * tag 1 0 00 10 10 = 0x8A; delta -16: -1, zz 1, << 1 = 2. */
    static const uint8_t want_free[] = {0x8A, 0x02};
    e = trk_enc_free(buf, &st, TRK_ALLOC_FREE, 3, 6500, 0x0ff0);
    assert_int_equal((size_t)(e - buf), sizeof want_free);
    assert_memory_equal(buf, want_free, sizeof want_free);
    decode_exact(want_free, sizeof want_free, &ds, &r);
    assert_true(r.rclass == TRK_RC_FREE && r.kind == TRK_ALLOC_FREE);
    assert_true(r.seq == 3 && r.ts == 6144 && r.addr == 0x0ff0);

    /* delete of 0x0ff8 at seq 10, ts 6000 (before the stream's 6144: no
     * time passes): tag 1 0 01 00 00 = 0x90, seqd 7 in a varint; delta 8 is
     * not a multiple of 16: zz 16, << 1 | 1 = 33. */
    static const uint8_t want_del[] = {0x90, 0x07, 0x21};
    e = trk_enc_free(buf, &st, TRK_ALLOC_DELETE, 10, 6000, 0x0ff8);
    assert_int_equal((size_t)(e - buf), sizeof want_del);
    assert_memory_equal(buf, want_del, sizeof want_del);
    decode_exact(want_del, sizeof want_del, &ds, &r);
    assert_true(r.kind == TRK_ALLOC_DELETE && r.seq == 10 && r.ts == 6144 && r.addr == 0x0ff8);

    /* aligned_alloc has no compact slot: the long form, exact ts. */
    e = trk_enc_alloc(buf, &st, TRK_ALLOC_ALIGNED_ALLOC, 11, 7000, 0x2000, 64, 1);
    assert_int_equal(buf[0], TRK_REC_ALLOC_BASE | TRK_ALLOC_ALIGNED_ALLOC);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.kind == TRK_ALLOC_ALIGNED_ALLOC && r.ts == 7000 && r.addr == 0x2000);
    assert_memory_equal(&ds, &st, sizeof st);

    /* Every cut of a compact record is short input; a varint seqd of 0 is
     * malformed. */
    for (size_t cut = 0; cut < sizeof want; cut++)
        expect_reject(want, cut, &zero_state);
    static const uint8_t seq0[] = {0x80, 0x00, 0x02};
    expect_reject(seq0, sizeof seq0, &zero_state);
}

/* Random heap events of every kind through the capture's encoders: seq,
 * addresses (aligned or not, any delta up to the extremes), sizes and
 * stacks come back exactly; ts comes back at most one step
 * (1 << TRK_COMPACT_TS_SHIFT ns) early and never decreasing. */
static void test_compact_round_trip(void **unused)
{
    (void)unused;
    uint8_t buf[BUF_LEN];
    struct trk_rec_state es = zero_state, ds = zero_state;
    struct trk_rec r;
    uint64_t x = 88172645463325252ull, seq = 0, ts = 1000000, addr = 0x555555550000ull;
    uint64_t last_ts = 0;
    unsigned compact = 0;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        seq += 1 + ((x & 7) == 0 ? (x >> 8) % 1000 : x % 3);
        ts += (x >> 12) % 8 == 0 ? (x >> 20) % 100000 : (x >> 20) % 700;
        switch ((x >> 30) % 8) {
        case 0: addr = x; break;                            /* anywhere */
        case 1: addr += (x >> 40) % 64; break;              /* unaligned */
        case 2: addr = 0x8000000000000000ull ^ addr; break; /* delta -2^63 */
        default: addr += ((x >> 40) % 4096) * 16 - 32768; break;
        }
        unsigned kind = 1 + (unsigned)((x >> 50) % TRK_ALLOC_KIND_MAX);
        int alloc = (x >> 60) & 1;
        uint64_t size = (x >> 24) % 5000, stack = (x >> 33) % 300;
        uint8_t *e = alloc ? trk_enc_alloc(buf, &es, kind, seq, ts, addr, size, stack)
                           : trk_enc_free(buf, &es, kind, seq, ts, addr);
        assert_true((size_t)(e - buf) <= TRK_REC_MAX);
        compact += (buf[0] & TRK_REC_COMPACT) != 0;
        decode_exact(buf, (size_t)(e - buf), &ds, &r);
        assert_int_equal(r.rclass, alloc ? TRK_RC_ALLOC : TRK_RC_FREE);
        assert_int_equal(r.kind, kind);
        assert_true(r.seq == seq && r.addr == addr);
        if (alloc)
            assert_true(r.size == size && r.stack == stack);
        assert_true(r.ts <= ts && ts - r.ts < (1u << TRK_COMPACT_TS_SHIFT));
        assert_true(r.ts >= last_ts);
        last_ts = r.ts;
        assert_memory_equal(&ds, &es, sizeof es);
    }
    assert_true(compact > 200000 / 8); /* the eight slot kinds of 25 */
}

/* ---- Round trips ------------------------------------------------------ */

/* The names FORMAT.md gives the allocator ids; `tracker stats --json` uses
 * them as by_allocator keys. */
static const char *const kind_names[] = {
    "", "malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
    "memalign", "valloc", "pvalloc", "mallocx", "rallocx", "xallocx", "free", "free_sized",
    "free_aligned_sized", "dallocx", "sdallocx", "pymalloc", "pycalloc", "pyrealloc", "pyfree",
    "new", "new[]", "delete", "delete[]"};

static void test_heap_all_kinds(void **unused)
{
    (void)unused;
    uint8_t buf[BUF_LEN] = {0};
    for (unsigned k = 1; k <= TRK_ALLOC_KIND_MAX; k++) {
        struct trk_rec_state es = zero_state, ds = zero_state;
        struct trk_rec r;
        uint64_t base = 0x7f0000000000ull + k * 0x1000;

        uint8_t *e = trk_enc_alloc_long(buf, &es, k, 10 * k, 1000 * k, base, 24 * k, k + 100);
        decode_exact(buf, (size_t)(e - buf), &ds, &r);
        assert_int_equal(r.rclass, TRK_RC_ALLOC);
        assert_int_equal(r.kind, k);
        assert_true(r.seq == 10 * k && r.ts == 1000 * k && r.addr == base);
        assert_true(r.size == 24 * k && r.stack == k + 100);

        e = trk_enc_free_long(buf, &es, k, 10 * k + 1, 1000 * k + 3, base + 64);
        decode_exact(buf, (size_t)(e - buf), &ds, &r);
        assert_int_equal(r.rclass, TRK_RC_FREE);
        assert_int_equal(r.kind, k);
        assert_true(r.seq == 10 * k + 1 && r.ts == 1000 * k + 3 && r.addr == base + 64);

        e = trk_enc_realloc(buf, &es, k, 10 * k + 5, 10 * k + 9, 1000 * k + 4, base - 32,
                            base + 4096, 7 * k, 3);
        decode_exact(buf, (size_t)(e - buf), &ds, &r);
        assert_int_equal(r.rclass, TRK_RC_REALLOC);
        assert_int_equal(r.kind, k);
        assert_true(r.seq == 10 * k + 5 && r.seq2 == 10 * k + 9);
        assert_true(r.addr == base - 32 && r.addr2 == base + 4096);
        assert_true(r.size == 7 * k && r.stack == 3 && r.ts == 1000 * k + 4);
        assert_memory_equal(&ds, &es, sizeof es);
        assert_string_equal(trk_alloc_kind_name(k), kind_names[k]);
    }
    assert_string_equal(trk_alloc_kind_name(0), "unknown");
    assert_string_equal(trk_alloc_kind_name(TRK_ALLOC_KIND_MAX + 1), "unknown");
    assert_string_equal(trk_alloc_kind_name(31), "unknown");
}

/* Python records: code objects, imports, marks and the interpreter info,
 * sharing the stream's seq/ts delta state with heap records. */
static void test_python_records(void **unused)
{
    (void)unused;
    uint8_t buf[TRK_REC_PY_MAX * 2] = {0};
    struct trk_rec_state es = zero_state, ds = zero_state;
    struct trk_rec r;
    const uint8_t *p;

    uint8_t *e = trk_enc_py_code(buf, 7, 42, "Model.forward", 13, "/src/train.py", 13);
    p = buf;
    assert_int_equal(trk_rec_decode(&p, e, &ds, &r), 0);
    assert_ptr_equal(p, e);
    assert_int_equal(r.rclass, TRK_RC_PY_CODE);
    assert_true(r.id == 7 && r.line == 42 && r.seq == 0);
    assert_int_equal(r.str_len, 13);
    assert_memory_equal(r.str, "Model.forward", 13);
    assert_int_equal(r.str2_len, 13);
    assert_memory_equal(r.str2, "/src/train.py", 13);

    /* Names past TRK_PY_STR_MAX are cut, never overflow. */
    char longname[TRK_PY_STR_MAX + 100];
    memset(longname, 'x', sizeof longname);
    e = trk_enc_py_code(buf, 8, 1, longname, sizeof longname, "f", 1);
    p = buf;
    assert_int_equal(trk_rec_decode(&p, e, &ds, &r), 0);
    assert_int_equal(r.str_len, TRK_PY_STR_MAX);

    e = trk_enc_py_import(buf, &es, 5, 1000, "torch.nn", 8);
    e = trk_enc_py_import_end(e, &es, 9, 2500);
    e = trk_enc_py_mark(e, &es, 12, 3000, TRK_PY_MARK_SCRIPT_END);
    e = trk_enc_py_info(e, &es, 13, 3100, 0x030b02f0, TRK_PYF_NATIVE | TRK_PYF_PYMALLOC);
    p = buf;
    assert_int_equal(trk_rec_decode(&p, e, &ds, &r), 0);
    assert_int_equal(r.rclass, TRK_RC_PY_IMPORT);
    assert_true(r.seq == 5 && r.ts == 1000 && r.str_len == 8);
    assert_memory_equal(r.str, "torch.nn", 8);
    assert_int_equal(trk_rec_decode(&p, e, &ds, &r), 0);
    assert_int_equal(r.rclass, TRK_RC_PY_IMPORT_END);
    assert_true(r.seq == 9 && r.ts == 2500);
    assert_int_equal(trk_rec_decode(&p, e, &ds, &r), 0);
    assert_int_equal(r.rclass, TRK_RC_PY_MARK);
    assert_true(r.seq == 12 && r.ts == 3000 && r.what == TRK_PY_MARK_SCRIPT_END);
    assert_int_equal(trk_rec_decode(&p, e, &ds, &r), 0);
    assert_int_equal(r.rclass, TRK_RC_PY_INFO);
    assert_true(r.seq == 13 && r.ts == 3100 && r.version == 0x030b02f0);
    assert_int_equal(r.flags, TRK_PYF_NATIVE | TRK_PYF_PYMALLOC);
    assert_ptr_equal(p, e);
    assert_memory_equal(&ds, &es, sizeof es);

    /* A code record cut anywhere is rejected, not read past its end. */
    e = trk_enc_py_code(buf, 7, 42, "f", 1, "/a.py", 5);
    for (uint8_t *cut = buf; cut < e; cut++) {
        struct trk_rec_state s2 = zero_state;
        p = buf;
        assert_int_equal(trk_rec_decode(&p, cut, &s2, &r), -1);
    }
}

/* One stream holding every record type back to back, decoded in one pass:
 * the delta state must carry across record types (a MUNMAP's address is a
 * delta from a REALLOC's new address, a STACK's ip does not disturb addr, and
 * seq continues from a REALLOC's seq2). */
static void test_stream_every_type(void **unused)
{
    (void)unused;
    static uint8_t buf[BUF_LEN * 2];
    struct trk_rec_state es = zero_state;
    uint8_t *p = buf;
    static const uint8_t bid[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
                                    7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    const struct trk_segment segs[2] = {{0, 0x2000, 5}, {0x3000, 0x800, 6}};

    p = trk_enc_thread(p, &es, 1, 1000000, 4242, TRK_THREAD_INTERNAL);
    p = trk_enc_thread_name(p, &es, 2, 1000010, 4243, "worker-1", 8);
    p = trk_enc_modules(p, &es, 3, 1000020, 1, 1);
    p = trk_enc_module(p, 1, 0x555555554000ull, "/usr/bin/prog", 13, bid, sizeof bid, segs, 2);
    p = trk_enc_stack(p, &es, 1, 0, 0x555555555123ull);
    p = trk_enc_stack(p, &es, 2, 1, 0x7ffff7a01000ull);
    p = trk_enc_stack(p, &es, 3, 2, 0x555555555000ull); /* ip goes down */
    p = trk_enc_alloc_long(p, &es, TRK_ALLOC_CALLOC, 5, 1000100, 0x5555555a0000ull, 4000, 3);
    p = trk_enc_realloc(p, &es, TRK_ALLOC_REALLOC, 6, 8, 1000200, 0x5555555a0000ull,
                        0x7ffff0000010ull, 1 << 20, 2);
    p = trk_enc_mmap(p, &es, 9, 1000300, 0x7ffff7000000ull, 0x21000, 3, 0x22, 0, 1);
    p = trk_enc_mmap(p, &es, 10, 1000301, 0x7ffff6000000ull, 4096, 1, 0x2, 1, 0);
    p = trk_enc_munmap(p, &es, 11, 1000400, 0x7ffff7010000ull, 0x1000);
    p = trk_enc_mremap(p, &es, 12, 15, 1000500, 0x7ffff7000000ull, 0x10000,
                       0x7fffe0000000ull, 0x40000, 1, 3);
    p = trk_enc_rss(p, &es, 16, 1000600, 123 << 12, 456 << 12);
    p = trk_enc_lost(p, &es, 17, 1000700, 99);
    p = trk_enc_free_long(p, &es, TRK_ALLOC_FREE, 18, 1000800, 0x7ffff0000010ull);
    p = trk_enc_thread_exit(p, &es, 20, 1000900);
    const uint8_t *end = p;

    struct trk_rec_state ds = zero_state;
    struct trk_rec r;
    const uint8_t *q = buf;
#define NEXT() assert_int_equal(trk_rec_decode(&q, end, &ds, &r), 0)

    NEXT();
    assert_int_equal(r.rclass, TRK_RC_THREAD);
    assert_true(r.seq == 1 && r.ts == 1000000 && r.tid == 4242);
    assert_true(r.flags == TRK_THREAD_INTERNAL);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_THREAD_NAME);
    assert_true(r.seq == 2 && r.ts == 1000010 && r.tid == 4243);
    assert_int_equal(r.str_len, 8);
    assert_memory_equal(r.str, "worker-1", 8);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_MODULES);
    assert_true(r.seq == 3 && r.ts == 1000020 && r.generation == 1 && r.count == 1);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_MODULE);
    assert_true(r.seq == 0 && r.generation == 1 && r.base == 0x555555554000ull);
    assert_int_equal(r.str_len, 13);
    assert_memory_equal(r.str, "/usr/bin/prog", 13);
    assert_int_equal(r.buildid_len, sizeof bid);
    assert_memory_equal(r.buildid, bid, sizeof bid);
    assert_int_equal(r.nseg, 2);
    assert_true(r.seg[0].vaddr == 0 && r.seg[0].memsz == 0x2000 && r.seg[0].flags == 5);
    assert_true(r.seg[1].vaddr == 0x3000 && r.seg[1].memsz == 0x800 && r.seg[1].flags == 6);
    /* MODULE carries no seq: the stream's seq state is untouched by it. */
    assert_true(ds.seq == 3);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_STACK);
    assert_true(r.seq == 0 && r.id == 1 && r.parent == 0 && r.ip == 0x555555555123ull);
    NEXT();
    assert_true(r.id == 2 && r.parent == 1 && r.ip == 0x7ffff7a01000ull);
    NEXT();
    assert_true(r.id == 3 && r.parent == 2 && r.ip == 0x555555555000ull);
    assert_true(ds.addr == 0); /* STACK ips live in their own delta state */
    assert_true(ds.seq == 3);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_ALLOC);
    assert_int_equal(r.kind, TRK_ALLOC_CALLOC);
    assert_true(r.seq == 5 && r.ts == 1000100 && r.addr == 0x5555555a0000ull);
    assert_true(r.size == 4000 && r.stack == 3);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_REALLOC);
    assert_true(r.seq == 6 && r.seq2 == 8 && r.ts == 1000200);
    assert_true(r.addr == 0x5555555a0000ull && r.addr2 == 0x7ffff0000010ull);
    assert_true(r.size == (1 << 20) && r.stack == 2);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_MMAP);
    assert_true(r.seq == 9 && r.ts == 1000300 && r.addr == 0x7ffff7000000ull);
    assert_true(r.size == 0x21000 && r.prot == 3 && r.flags == 0x22);
    assert_int_equal(r.file, TRK_MAP_ANON);
    assert_true(r.stack == 1);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_MMAP);
    assert_true(r.seq == 10 && r.addr == 0x7ffff6000000ull && r.size == 4096);
    assert_true(r.prot == 1 && r.flags == 2 && r.stack == 0);
    assert_int_equal(r.file, TRK_MAP_FILE);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_MUNMAP);
    assert_true(r.seq == 11 && r.ts == 1000400 && r.addr == 0x7ffff7010000ull);
    assert_true(r.size == 0x1000);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_MREMAP);
    assert_true(r.seq == 12 && r.seq2 == 15 && r.ts == 1000500);
    assert_true(r.addr == 0x7ffff7000000ull && r.size == 0x10000);
    assert_true(r.addr2 == 0x7fffe0000000ull && r.size2 == 0x40000);
    assert_true(r.flags == 1 && r.stack == 3);
    assert_true(ds.seq == 15 && ds.addr == 0x7fffe0000000ull);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_RSS);
    assert_true(r.seq == 16 && r.ts == 1000600);
    assert_true(r.anon == (123u << 12) && r.file_bytes == (456u << 12));
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_LOST);
    assert_true(r.seq == 17 && r.ts == 1000700 && r.count == 99);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_FREE);
    assert_true(r.seq == 18 && r.ts == 1000800 && r.addr == 0x7ffff0000010ull);
    NEXT();
    assert_int_equal(r.rclass, TRK_RC_THREAD_EXIT);
    assert_true(r.seq == 20 && r.ts == 1000900);
#undef NEXT
    assert_ptr_equal(q, end);
    assert_memory_equal(&ds, &es, sizeof es);
    /* Nothing left: decoding at the end is short input. */
    expect_reject(q, 0, &ds);
}

/* Addresses going down encode as negative zigzag deltas. Timestamps going
 * back (a clock stepping) are written as no time passing since version 4,
 * so that each stream's ts never decreases; a negative tsd of an older file
 * still decodes. */
static void test_negative_deltas(void **unused)
{
    (void)unused;
    uint8_t buf[BUF_LEN] = {0};
    struct trk_rec_state es = zero_state, ds = zero_state;
    struct trk_rec r;
    uint64_t addr = 0x7fffffff0000ull, ts = 5000000, seq = 1;

    for (int i = 0; i < 200; i++) {
        /* Down by a varying amount each step, timestamps going back too. */
        addr -= 16 + (uint64_t)i * 4096;
        ts -= (uint64_t)i;
        seq += 1 + (uint64_t)i % 3;
        uint8_t *e = (i & 1) ? trk_enc_free_long(buf, &es, TRK_ALLOC_FREE, seq, ts, addr)
                             : trk_enc_alloc_long(buf, &es, TRK_ALLOC_MALLOC, seq, ts, addr, 48, 0);
        decode_exact(buf, (size_t)(e - buf), &ds, &r);
        assert_true(r.addr == addr);
        assert_true(r.ts == 5000000); /* clamped: never below the first */
        assert_true(r.seq == seq);
    }
    assert_memory_equal(&ds, &es, sizeof es);

    /* A version 3 free whose tsd is -1 (zigzag 1) moves the stream back. */
    static const uint8_t v3_back[] = {0x4d, 0x01, 0x01, 0x00};
    struct trk_rec_state old = {.seq = 1, .ts = 100, .addr = 0x1000, .ip = 0};
    decode_exact(v3_back, sizeof v3_back, &old, &r);
    assert_true(r.ts == 99 && r.seq == 2 && r.addr == 0x1000);

    /* addr 0x1010 after 0x1020: delta -16, zigzag 31, one byte. */
    es = ds = (struct trk_rec_state){.seq = 1, .ts = 0, .addr = 0x1020, .ip = 0};
    uint8_t *e = trk_enc_free_long(buf, &es, TRK_ALLOC_FREE, 2, 0, 0x1010);
    assert_int_equal((size_t)(e - buf), 4);
    assert_int_equal(buf[3], 31);
    decode_exact(buf, 4, &ds, &r);
    assert_true(r.addr == 0x1010);
}

/* Values that need the longest varints: seq and size UINT64_MAX, an address
 * delta of INT64_MIN (zigzag UINT64_MAX) and the address space's top. */
static void test_max_varints(void **unused)
{
    (void)unused;
    uint8_t buf[BUF_LEN] = {0};
    struct trk_rec_state es = zero_state, ds = zero_state;
    struct trk_rec r;

    /* tag + seqd(10) + tsd zz(INT64_MIN)(10) + addr zz(INT64_MIN)(10) +
     * size(10) + stack(10). */
    uint8_t *e = trk_enc_alloc_long(buf, &es, TRK_ALLOC_MALLOC, UINT64_MAX, 0x8000000000000000ull,
                               0x8000000000000000ull, UINT64_MAX, UINT64_MAX);
    assert_int_equal((size_t)(e - buf), 1 + 5 * 10);
    assert_true((size_t)(e - buf) <= TRK_REC_MAX);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.seq == UINT64_MAX);
    assert_true(r.ts == 0x8000000000000000ull);
    assert_true(r.addr == 0x8000000000000000ull);
    assert_true(r.size == UINT64_MAX && r.stack == UINT64_MAX);

    /* Wrap-around: from 0x8000000000000000 to UINT64_MAX is +INT64_MAX. */
    es.seq = ds.seq = 0;
    e = trk_enc_free_long(buf, &es, TRK_ALLOC_FREE, 1, 0x8000000000000000ull, UINT64_MAX);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.addr == UINT64_MAX);
    /* And down to 0 again (the time going back reads as none passing). */
    e = trk_enc_free_long(buf, &es, TRK_ALLOC_FREE, 2, 0, 0);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.addr == 0 && r.ts == 0x8000000000000000ull);

    /* The longest fixed record is MREMAP with every field at its maximum. */
    es = ds = zero_state;
    e = trk_enc_mremap(buf, &es, 1, UINT64_MAX, 0x8000000000000000ull,
                       0x8000000000000000ull, UINT64_MAX, 0, UINT64_MAX, UINT64_MAX, UINT64_MAX);
    /* tag + seqd 1 (1) + tsd (10) + old (10) + oldlen (10) + seq2d (10) +
     * new (old->0: -2^63, 10) + newlen + flags + stack (30). */
    assert_int_equal((size_t)(e - buf), 1 + 1 + 10 * 8);
    assert_true((size_t)(e - buf) <= TRK_REC_MAX);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.seq == 1 && r.seq2 == UINT64_MAX);
    assert_true(r.addr == 0x8000000000000000ull && r.addr2 == 0);
    assert_true(r.size == UINT64_MAX && r.size2 == UINT64_MAX);
    assert_true(r.flags == UINT64_MAX && r.stack == UINT64_MAX);

    es = ds = zero_state;
    e = trk_enc_realloc(buf, &es, TRK_ALLOC_RALLOCX, 1, UINT64_MAX, 1, UINT64_MAX, 0,
                        UINT64_MAX, UINT64_MAX);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.seq2 == UINT64_MAX && r.addr == UINT64_MAX && r.addr2 == 0);
    assert_true(r.size == UINT64_MAX);

    es = ds = zero_state;
    e = trk_enc_mmap(buf, &es, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX,
                     UINT64_MAX, 1, UINT64_MAX);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.seq == UINT64_MAX && r.ts == UINT64_MAX && r.addr == UINT64_MAX);
    assert_true(r.size == UINT64_MAX && r.prot == UINT64_MAX && r.flags == UINT64_MAX);
    assert_true(r.stack == UINT64_MAX);

    es = ds = zero_state;
    e = trk_enc_rss(buf, &es, 7, 8, UINT64_MAX, UINT64_MAX);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.anon == UINT64_MAX && r.file_bytes == UINT64_MAX);

    es = ds = zero_state;
    e = trk_enc_stack(buf, &es, UINT64_MAX, UINT64_MAX, 0x8000000000000000ull);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.id == UINT64_MAX && r.parent == UINT64_MAX);
    assert_true(r.ip == 0x8000000000000000ull);
}

/* realloc: seq is the release half, seq2 the acquisition half; the new
 * address is a delta from the old one and becomes the address state, and the
 * seq state continues from seq2. An in-place realloc (xallocx) has new == old
 * and encodes a zero delta. */
static void test_realloc_semantics(void **unused)
{
    (void)unused;
    uint8_t buf[BUF_LEN] = {0};
    struct trk_rec_state es = zero_state, ds = zero_state;
    struct trk_rec r;

    uint8_t *e = trk_enc_alloc_long(buf, &es, TRK_ALLOC_MALLOC, 100, 0, 0x10000, 8, 0);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);

    /* Old 0x20000 (+0x10000 from state), new 0x18000 (-0x8000 from OLD). */
    e = trk_enc_realloc(buf, &es, TRK_ALLOC_REALLOC, 101, 150, 0, 0x20000, 0x18000, 77, 0);
    /* tag 63, seqd 1, tsd 0, old zz(0x10000)=0x20000 -> 80 80 08, seq2d 49 = 0x31,
     * new zz(-0x8000)=0xffff -> ff ff 03, size 77 = 0x4d, stack 0. */
    static const uint8_t want[] = {0x63, 0x01, 0x00, 0x80, 0x80, 0x08, 0x31,
                                   0xff, 0xff, 0x03, 0x4d, 0x00};
    assert_int_equal((size_t)(e - buf), sizeof want);
    assert_memory_equal(buf, want, sizeof want);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.seq == 101 && r.seq2 == 150);
    assert_true(r.addr == 0x20000 && r.addr2 == 0x18000 && r.size == 77);
    assert_true(ds.seq == 150 && ds.addr == 0x18000);

    /* The next event's seqd is relative to seq2 (151 - 150 = 1) and its
     * address relative to the new address (0x18000 -> 0x18000 = 0). */
    e = trk_enc_free_long(buf, &es, TRK_ALLOC_FREE, 151, 0, 0x18000);
    static const uint8_t want_free[] = {0x4d, 0x01, 0x00, 0x00};
    assert_int_equal((size_t)(e - buf), sizeof want_free);
    assert_memory_equal(buf, want_free, sizeof want_free);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.seq == 151 && r.addr == 0x18000);

    /* xallocx in place: new == old, size is the size it returned. */
    e = trk_enc_realloc(buf, &es, TRK_ALLOC_XALLOCX, 160, 161, 9, 0x18000, 0x18000, 4096, 5);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_int_equal(r.kind, TRK_ALLOC_XALLOCX);
    assert_true(r.addr == 0x18000 && r.addr2 == 0x18000 && r.size == 4096);
    assert_true(r.seq == 160 && r.seq2 == 161 && r.ts == 9 && r.stack == 5);
    assert_memory_equal(&ds, &es, sizeof es);

    /* mremap follows the same rules. */
    e = trk_enc_mremap(buf, &es, 170, 172, 10, 0x7f0000000000ull, 8192, 0x7f0000100000ull,
                       16384, 1, 0);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.seq == 170 && r.seq2 == 172 && ds.seq == 172);
    assert_true(r.addr == 0x7f0000000000ull && r.addr2 == 0x7f0000100000ull);
    assert_true(r.size == 8192 && r.size2 == 16384 && r.flags == 1);
    e = trk_enc_munmap(buf, &es, 173, 11, 0x7f0000100000ull, 16384);
    /* seqd 1, tsd 1 (zz 2), addr delta 0 from mremap's new address. */
    static const uint8_t want_unmap[] = {0x0a, 0x01, 0x02, 0x00, 0x80, 0x80, 0x01};
    assert_int_equal((size_t)(e - buf), sizeof want_unmap);
    assert_memory_equal(buf, want_unmap, sizeof want_unmap);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.addr == 0x7f0000100000ull && r.size == 16384);
    assert_memory_equal(&ds, &es, sizeof es);
}

static void test_module_record(void **unused)
{
    (void)unused;
    static uint8_t buf[BUF_LEN];
    static char path[TRK_MODULE_PATH_MAX + 500];
    for (size_t i = 0; i < sizeof path; i++)
        path[i] = (char)('a' + i % 26);
    path[0] = '/';
    uint8_t bid[TRK_BUILDID_MAX + 10];
    for (size_t i = 0; i < sizeof bid; i++)
        bid[i] = (uint8_t)(i * 7 + 1);
    struct trk_segment segs[TRK_MODULE_SEGS_MAX + 4];
    for (unsigned i = 0; i < TRK_MODULE_SEGS_MAX + 4; i++) {
        segs[i].vaddr = 0x1000ull * i * i;
        segs[i].memsz = i == 3 ? UINT64_MAX : 0x234ull + i;
        segs[i].flags = i == 5 ? UINT32_MAX : (i % 7);
    }

    /* Exactly at the caps: 16 segments, 4096-byte path, 64-byte build id. */
    struct trk_rec_state st = {.seq = 77, .ts = 88, .addr = 99, .ip = 111};
    const struct trk_rec_state st0 = st;
    struct trk_rec r;
    uint8_t *e = trk_enc_module(buf, 5, 0x7ffff7dd0000ull, path, TRK_MODULE_PATH_MAX, bid,
                                TRK_BUILDID_MAX, segs, TRK_MODULE_SEGS_MAX);
    assert_true((size_t)(e - buf) <= TRK_REC_MODULE_MAX);
    decode_exact(buf, (size_t)(e - buf), &st, &r);
    assert_int_equal(r.rclass, TRK_RC_MODULE);
    assert_true(r.generation == 5 && r.base == 0x7ffff7dd0000ull);
    assert_int_equal(r.str_len, TRK_MODULE_PATH_MAX);
    assert_memory_equal(r.str, path, TRK_MODULE_PATH_MAX);
    assert_int_equal(r.buildid_len, TRK_BUILDID_MAX);
    assert_memory_equal(r.buildid, bid, TRK_BUILDID_MAX);
    assert_int_equal(r.nseg, TRK_MODULE_SEGS_MAX);
    for (unsigned i = 0; i < TRK_MODULE_SEGS_MAX; i++) {
        assert_true(r.seg[i].vaddr == segs[i].vaddr);
        assert_true(r.seg[i].memsz == segs[i].memsz);
        assert_true(r.seg[i].flags == segs[i].flags);
    }
    /* A MODULE has no seq and no address: state is unchanged. */
    assert_memory_equal(&st, &st0, sizeof st);

    /* Over the caps: the encoder truncates path, build id and segments. */
    e = trk_enc_module(buf, 6, 0, path, sizeof path, bid, sizeof bid, segs,
                       TRK_MODULE_SEGS_MAX + 4);
    assert_true((size_t)(e - buf) <= TRK_REC_MODULE_MAX);
    decode_exact(buf, (size_t)(e - buf), &st, &r);
    assert_true(r.generation == 6 && r.base == 0);
    assert_int_equal(r.str_len, TRK_MODULE_PATH_MAX);
    assert_memory_equal(r.str, path, TRK_MODULE_PATH_MAX);
    assert_int_equal(r.buildid_len, TRK_BUILDID_MAX);
    assert_int_equal(r.nseg, TRK_MODULE_SEGS_MAX);
    assert_true(r.seg[15].vaddr == segs[15].vaddr);

    /* Empty path (main executable), no build id, no segments: the minimum.
     * NULL with length 0 is how the preload passes a missing build id. */
    e = trk_enc_module(buf, 0, 0, "", 0, NULL, 0, NULL, 0);
    static const uint8_t want[] = {0x06, 0, 0, 0, 0, 0};
    assert_int_equal((size_t)(e - buf), sizeof want);
    assert_memory_equal(buf, want, sizeof want);
    decode_exact(buf, sizeof want, &st, &r);
    assert_int_equal(r.str_len, 0);
    assert_int_equal(r.buildid_len, 0);
    assert_int_equal(r.nseg, 0);
}

static void test_thread_name(void **unused)
{
    (void)unused;
    uint8_t buf[BUF_LEN] = {0};
    char name[100];
    for (int i = 0; i < 100; i++)
        name[i] = (char)('A' + i % 26);
    struct trk_rec_state es = zero_state, ds = zero_state;
    struct trk_rec r;

    uint8_t *e = trk_enc_thread_name(buf, &es, 3, 4, 12345, name, 100);
    /* tag, seqd, tsd, tid 12345 (2 bytes), len 64, 64 bytes. */
    assert_int_equal((size_t)(e - buf), 1 + 1 + 1 + 2 + 1 + TRK_THREAD_NAME_MAX);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_true(r.tid == 12345 && r.seq == 3 && r.ts == 4);
    assert_int_equal(r.str_len, TRK_THREAD_NAME_MAX);
    assert_memory_equal(r.str, name, TRK_THREAD_NAME_MAX);

    e = trk_enc_thread_name(buf, &es, 5, 4, 1, "", 0);
    decode_exact(buf, (size_t)(e - buf), &ds, &r);
    assert_int_equal(r.str_len, 0);
    assert_true(r.seq == 5 && r.tid == 1);
}

/* ---- Malformed input --------------------------------------------------- */

/* Every record type, each with non-trivial fields; used by the truncation test. */
static size_t encode_sample(int which, uint8_t *buf, struct trk_rec_state *st)
{
    static const uint8_t bid[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const struct trk_segment segs[3] = {{0, 4096, 5}, {8192, 300, 6}, {1 << 20, 9, 4}};
    uint8_t *e;
    switch (which) {
    case 0: e = trk_enc_thread(buf, st, st->seq + 1, st->ts + 5, 70000, TRK_THREAD_INTERNAL); break;
    case 1: e = trk_enc_thread_name(buf, st, st->seq + 2, st->ts, 9, "io-thread", 9); break;
    case 2: e = trk_enc_thread_exit(buf, st, st->seq + 300, st->ts + 1); break;
    case 3: e = trk_enc_stack(buf, st, 500, 499, st->ip - 0x123456); break;
    case 4: e = trk_enc_modules(buf, st, st->seq + 1, st->ts, 3, 40); break;
    case 5: e = trk_enc_module(buf, 3, 0x7f0000000000ull, "/lib/libc.so.6", 14, bid, 8, segs, 3); break;
    case 6: e = trk_enc_rss(buf, st, st->seq + 1, st->ts, 1 << 30, 1 << 25); break;
    case 7: e = trk_enc_lost(buf, st, st->seq + 1, st->ts, 1000); break;
    case 8: e = trk_enc_mmap(buf, st, st->seq + 1, st->ts, 0x7f1234560000ull, 1 << 21, 3, 0x22, 1, 400); break;
    case 9: e = trk_enc_munmap(buf, st, st->seq + 1, st->ts, 0x7f1234570000ull, 65536); break;
    case 10: e = trk_enc_mremap(buf, st, st->seq + 1, st->seq + 1000, st->ts, 0x7f1234560000ull, 1 << 21, 0x7f0000000000ull, 1 << 22, 3, 12); break;
    case 11: e = trk_enc_alloc_long(buf, st, TRK_ALLOC_POSIX_MEMALIGN, st->seq + 1, st->ts + 100000, 0x55550000ull, 1 << 20, 300); break;
    case 12: e = trk_enc_free_long(buf, st, TRK_ALLOC_SDALLOCX, st->seq + 200, st->ts, 0x55540000ull); break;
    default: e = trk_enc_realloc(buf, st, TRK_ALLOC_REALLOCARRAY, st->seq + 1, st->seq + 129, st->ts, 0x55540000ull, 0x7fff00000000ull, 100000, 0); break;
    }
    return (size_t)(e - buf);
}
#define N_SAMPLES 14

static void test_every_truncation(void **unused)
{
    (void)unused;
    static uint8_t buf[BUF_LEN];
    /* A non-zero starting state, as if mid-stream. */
    const struct trk_rec_state st0 = {.seq = 1000, .ts = 1u << 30, .addr = 0x7f0000001000ull,
                                      .ip = 0x555555556000ull};
    for (int w = 0; w < N_SAMPLES; w++) {
        struct trk_rec_state es = st0;
        size_t n = encode_sample(w, buf, &es);
        assert_true(n > 1);
        for (size_t k = 0; k < n; k++)
            expect_reject(buf, k, &st0);
        /* And the full record decodes into exactly the encoder's state. */
        struct trk_rec_state ds = st0;
        struct trk_rec r;
        decode_exact(buf, n, &ds, &r);
        assert_memory_equal(&ds, &es, sizeof es);
    }
}

static void test_zero_seqd_rejected(void **unused)
{
    (void)unused;
    const struct trk_rec_state st0 = {.seq = 10, .ts = 10, .addr = 0x1000, .ip = 0};
    /* Every seq-bearing record with seqd 0. */
    static const uint8_t bad[][8] = {
        {0x01, 0x00, 0x00, 0x05, 0x00},             /* THREAD */
        {0x02, 0x00, 0x00, 0x05, 0x01, 'x'},        /* THREAD_NAME */
        {0x03, 0x00, 0x00},                         /* THREAD_EXIT */
        {0x05, 0x00, 0x00, 0x01, 0x01},             /* MODULES */
        {0x07, 0x00, 0x00, 0x01, 0x01},             /* RSS */
        {0x08, 0x00, 0x00, 0x01},                   /* LOST */
        {0x09, 0x00, 0x00, 0x02, 0x10, 0x03, 0x22, 0x00}, /* MMAP (+stack below) */
        {0x0a, 0x00, 0x00, 0x02, 0x10},             /* MUNMAP */
        {0x21, 0x00, 0x00, 0x02, 0x10, 0x00},       /* ALLOC malloc */
        {0x4d, 0x00, 0x00, 0x02},                   /* FREE free */
        {0x63, 0x00, 0x00, 0x02, 0x01, 0x02, 0x10, 0x00}, /* REALLOC */
    };
    static const size_t len[] = {5, 6, 3, 5, 5, 4, 8, 5, 6, 4, 8};
    for (size_t i = 0; i < sizeof len / sizeof len[0]; i++) {
        uint8_t b[16];
        memcpy(b, bad[i], len[i]);
        size_t n = len[i];
        if (b[0] == 0x09)
            b[n++] = 0x00; /* MMAP stack */
        expect_reject(b, n, &st0);
        /* The same bytes with seqd 1 are valid, so it is the zero that is refused. */
        b[1] = 0x01;
        struct trk_rec_state st = st0;
        struct trk_rec r;
        decode_exact(b, n, &st, &r);
        assert_true(r.seq == 11);
    }
    /* REALLOC and MREMAP with seq2d 0: seq2 must be after seq. */
    uint8_t re[] = {0x63, 0x01, 0x00, 0x02, 0x00, 0x02, 0x10, 0x00};
    expect_reject(re, sizeof re, &st0);
    uint8_t mr[] = {0x0b, 0x01, 0x00, 0x02, 0x10, 0x00, 0x02, 0x10, 0x00, 0x00};
    expect_reject(mr, sizeof mr, &st0);
    re[4] = 1;
    mr[5] = 1;
    struct trk_rec_state st = st0;
    struct trk_rec r;
    decode_exact(re, sizeof re, &st, &r);
    assert_true(r.seq == 11 && r.seq2 == 12 && r.addr == 0x1001 && r.addr2 == 0x1002);
    st = st0;
    decode_exact(mr, sizeof mr, &st, &r);
    assert_true(r.seq == 11 && r.seq2 == 12);
}

/* Every tag byte outside the defined set is refused, whatever follows. */
static void test_unknown_tags(void **unused)
{
    (void)unused;
    const struct trk_rec_state st0 = zero_state;
    uint8_t b[64];
    /* Follow the tag with plenty of small valid varints so that a tag that was
     * wrongly accepted would decode successfully. */
    memset(b, 0x01, sizeof b);
    int accepted = 0;
    for (unsigned tag = 0; tag < 256; tag++) {
        unsigned cls = tag & 0xE0, kind = tag & 0x1F;
        int known = (tag >= TRK_REC_THREAD && tag <= TRK_REC_PY_INFO) ||
                    tag == TRK_REC_LEAK_SCAN || tag == TRK_REC_LEAK ||
                    (tag >= TRK_REC_NODE && tag <= TRK_REC_NODE_ID) ||
                    ((cls == 0x20 || cls == 0x40 || cls == 0x60) && kind >= 1 &&
                     kind <= TRK_ALLOC_KIND_MAX) ||
                    (tag & TRK_REC_COMPACT);
        b[0] = (uint8_t)tag;
        if (!known) {
            expect_reject(b, sizeof b, &st0);
        } else {
            struct trk_rec_state st = st0;
            struct trk_rec r;
            const uint8_t *p = b;
            /* node records (test_node.c) need a parent delta within the
             * id and Python deltas that stay in range: all 2s, sid 5 */
            uint8_t nb[sizeof b];
            if (tag >= TRK_REC_NODE && tag <= TRK_REC_NODE_ID) {
                memset(nb, 0x02, sizeof nb);
                nb[0] = (uint8_t)tag;
                st.sid = 5;
                p = nb;
            }
            assert_int_equal(trk_rec_decode(&p, p + sizeof b, &st, &r), 0);
            accepted++;
        }
    }
    /* 25 plain tags (11 host, 7 GPU, 5 Python, 2 leak) + 3 classes x 25
     * kinds + the 128 compact tags of version 4 + the 5 node tags of
     * version 5. */
    assert_int_equal(accepted, 25 + 3 * 25 + 128 + 5);
}

/* LEAK_SCAN and LEAK (docs/FORMAT.md §4a): fields, the leader as a delta
 * from the block, and the address state they share with heap records. */
static void test_leak_records(void **unused)
{
    (void)unused;
    struct trk_rec_state es = zero_state, ds = zero_state;
    uint8_t buf[3 * TRK_REC_MAX] = {0}, *e = buf;
    e = trk_enc_leak_scan(e, &es, 10, 5, TRK_LEAKF_UNSTOPPED, 2, 4096);
    e = trk_enc_leak(e, &es, 11, 5, 0x5000, TRK_LEAK_INDIRECT, 0x4000);
    e = trk_enc_leak(e, &es, 12, 5, 0x4000, TRK_LEAK_DEFINITE, 0);
    const uint8_t *p = buf;
    struct trk_rec r;
    assert_int_equal(trk_rec_decode(&p, e, &ds, &r), 0);
    assert_true(r.rclass == TRK_RC_LEAK_SCAN && r.seq == 10 && r.flags == TRK_LEAKF_UNSTOPPED &&
                r.count == 2 && r.size == 4096);
    assert_int_equal(trk_rec_decode(&p, e, &ds, &r), 0);
    assert_true(r.rclass == TRK_RC_LEAK && r.seq == 11 && r.addr == 0x5000 &&
                r.leak_class == TRK_LEAK_INDIRECT && r.leader == 0x4000);
    assert_int_equal(trk_rec_decode(&p, e, &ds, &r), 0);
    assert_true(r.addr == 0x4000 && r.leak_class == TRK_LEAK_DEFINITE && r.leader == 0);
    assert_true(p == e && ds.addr == 0x4000 && ds.seq == 12);
    /* Class 0 and one past the last are malformed. */
    const struct trk_rec_state st0 = zero_state;
    uint8_t bad[] = {TRK_REC_LEAK, 0x01, 0x00, 0x02, 0x00, 0x00};
    expect_reject(bad, sizeof bad, &st0);
    bad[4] = TRK_LEAK_CLASS_MAX + 1;
    expect_reject(bad, sizeof bad, &st0);
}

static void test_kind_zero_rejected(void **unused)
{
    (void)unused;
    const struct trk_rec_state st0 = zero_state;
    uint8_t a[] = {0x20, 0x01, 0x00, 0x02, 0x10, 0x00};
    uint8_t f[] = {0x40, 0x01, 0x00, 0x02};
    uint8_t r0[] = {0x60, 0x01, 0x00, 0x02, 0x01, 0x02, 0x10, 0x00};
    expect_reject(a, sizeof a, &st0);
    expect_reject(f, sizeof f, &st0);
    expect_reject(r0, sizeof r0, &st0);
    /* Kind 18 (one past the last) and 31 likewise. */
    a[0] = 0x20 | (TRK_ALLOC_KIND_MAX + 1);
    expect_reject(a, sizeof a, &st0);
    f[0] = 0x5f;
    expect_reject(f, sizeof f, &st0);
}

static void test_oversize_lengths(void **unused)
{
    (void)unused;
    static uint8_t b[BUF_LEN];
    const struct trk_rec_state st0 = {.seq = 5, .ts = 5, .addr = 5, .ip = 5};
    uint8_t *p;

    /* THREAD_NAME of 65 bytes (cap 64), all bytes present. */
    p = b;
    *p++ = TRK_REC_THREAD_NAME;
    *p++ = 1;
    *p++ = 0;
    *p++ = 7;
    *p++ = TRK_THREAD_NAME_MAX + 1;
    memset(p, 'n', TRK_THREAD_NAME_MAX + 1);
    p += TRK_THREAD_NAME_MAX + 1;
    expect_reject(b, (size_t)(p - b), &st0);
    b[4] = TRK_THREAD_NAME_MAX; /* 64 is fine (one byte left over) */
    {
        struct trk_rec_state st = st0;
        struct trk_rec r;
        const uint8_t *q = b;
        assert_int_equal(trk_rec_decode(&q, p, &st, &r), 0);
        assert_ptr_equal(q, p - 1);
        assert_int_equal(r.str_len, TRK_THREAD_NAME_MAX);
    }
    /* A length larger than what is left in the buffer. */
    b[4] = 10;
    expect_reject(b, 5 + 9, &st0);
    /* A huge length that would overflow a pointer addition. */
    p = b + 4;
    p = trk_put_varint(p, UINT64_MAX);
    memset(p, 'n', 20);
    expect_reject(b, (size_t)(p - b) + 20, &st0);

    /* MODULE: path of 4097 bytes. */
    p = b;
    *p++ = TRK_REC_MODULE;
    *p++ = 1;
    *p++ = 0;
    p = trk_put_varint(p, TRK_MODULE_PATH_MAX + 1);
    memset(p, 'p', TRK_MODULE_PATH_MAX + 1);
    p += TRK_MODULE_PATH_MAX + 1;
    *p++ = 0; /* buildid len */
    *p++ = 0; /* nseg */
    expect_reject(b, (size_t)(p - b), &st0);

    /* MODULE: build id of 65 bytes. */
    p = b;
    *p++ = TRK_REC_MODULE;
    *p++ = 1;
    *p++ = 0;
    *p++ = 0; /* path len */
    *p++ = TRK_BUILDID_MAX + 1;
    memset(p, 0xbb, TRK_BUILDID_MAX + 1);
    p += TRK_BUILDID_MAX + 1;
    *p++ = 0;
    expect_reject(b, (size_t)(p - b), &st0);

    /* MODULE: 17 segments, all present. */
    p = b;
    *p++ = TRK_REC_MODULE;
    *p++ = 1;
    *p++ = 0;
    *p++ = 0;
    *p++ = 0;
    *p++ = TRK_MODULE_SEGS_MAX + 1;
    for (int i = 0; i < 3 * (TRK_MODULE_SEGS_MAX + 1); i++)
        *p++ = 1;
    expect_reject(b, (size_t)(p - b), &st0);
    b[5] = TRK_MODULE_SEGS_MAX; /* 16 decodes, leaving three bytes */
    {
        struct trk_rec_state st = st0;
        struct trk_rec r;
        const uint8_t *q = b;
        assert_int_equal(trk_rec_decode(&q, p, &st, &r), 0);
        assert_ptr_equal(q, p - 3);
        assert_int_equal(r.nseg, TRK_MODULE_SEGS_MAX);
    }

    /* MMAP "file" byte other than 0 or 1. */
    uint8_t m[] = {TRK_REC_MMAP, 1, 0, 2, 0x10, 3, 0x22, 2, 0};
    expect_reject(m, sizeof m, &st0);

    /* STACK with id 0 (ids start at 1; 0 is the root). */
    uint8_t s[] = {TRK_REC_STACK, 0, 0, 2};
    expect_reject(s, sizeof s, &st0);

    /* An 11-byte varint inside a record. */
    uint8_t v[16] = {0x21, 0x01, 0x00};
    memset(v + 3, 0x80, 10);
    v[13] = 0x01;
    v[14] = 0x10;
    v[15] = 0x00;
    expect_reject(v, sizeof v, &st0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_crc32c_hw_matches_tables),
        cmocka_unit_test(test_huf_golden_bytes),
        cmocka_unit_test(test_huf_round_trip),
        cmocka_unit_test(test_compact_golden_bytes),
        cmocka_unit_test(test_compact_round_trip),
        cmocka_unit_test(test_varint_edges),
        cmocka_unit_test(test_alloc_golden_bytes),
        cmocka_unit_test(test_heap_all_kinds),
        cmocka_unit_test(test_python_records),
        cmocka_unit_test(test_stream_every_type),
        cmocka_unit_test(test_negative_deltas),
        cmocka_unit_test(test_max_varints),
        cmocka_unit_test(test_realloc_semantics),
        cmocka_unit_test(test_module_record),
        cmocka_unit_test(test_thread_name),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_zero_seqd_rejected),
        cmocka_unit_test(test_unknown_tags),
        cmocka_unit_test(test_kind_zero_rejected),
        cmocka_unit_test(test_leak_records),
        cmocka_unit_test(test_oversize_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
