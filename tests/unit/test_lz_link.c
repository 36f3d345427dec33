/* SPDX-License-Identifier: MIT
 *
 * test_lz_link.c - the linked LZ4 codec of format 6 (codec 3,
 * docs/FORMAT.md §2): a block decoded against its stream's history, the
 * last 64 KiB of the stream's raw bytes before it.
 *
 * Pinned bytes: a block worked out by hand from the LZ4 block format, whose
 * match reaches into the history, decodes only with that history. The
 * history (common/lz_hist.h) keeps exactly the stream's last 64 KiB. The
 * writer's encoder (src/capture/lz_link.c) gives blocks that decode against
 * the reader's history, piece after piece, across long pieces, after a
 * stream lost its encoder to another (live streams keep theirs), after a
 * piece that bypassed it, and after a gap in the offsets; and a loop's
 * later pieces shrink to a fraction of what they shrink to alone. The encoder is fast LZ4's or, while its CPU
 * budget lasts, LZ4 HC's (the same block format): both hand the history to
 * each other, a stream's first bytes get the thorough fast setting, and the
 * budget runs out. The zstd encoder of format 7 (codec 4, trk_lzlink_zstd)
 * gives frames that decode against the same history as a raw prefix,
 * alone and taking turns with LZ4 on one stream.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lz4.h>
#include <lz4hc.h>
#include <zstd.h>

#include "capture/lz_link.h"
#include "common/lz_hist.h"

/* history "abcdefghijklmnop"; piece = the whole history again, then
 * "XYZWV". One sequence: token 0x0C (no literal, match length 4 + 12),
 * offset 16 (little-endian), then the last sequence: token 0x50 (five
 * literals, no match) and the literals. */
static void test_golden_block(void **unused)
{
    (void)unused;
    static const uint8_t hist[] = "abcdefghijklmnop";
    static const uint8_t block[] = {0x0C, 0x10, 0x00, 0x50, 'X', 'Y', 'Z', 'W', 'V'};
    char out[32];
    int n = LZ4_decompress_safe_usingDict((const char *)block, out, (int)sizeof block, 21,
                                          (const char *)hist, 16);
    assert_int_equal(n, 21);
    assert_memory_equal(out, "abcdefghijklmnopXYZWV", 21);
    /* Without the history (codec 1) the match points before the block. */
    assert_true(LZ4_decompress_safe((const char *)block, out, (int)sizeof block, 21) < 0);
    /* With a history one byte short, the same offset reaches one byte
     * earlier: the dictionary is the history's end, not its start. */
    n = LZ4_decompress_safe_usingDict((const char *)block, out, (int)sizeof block, 21,
                                      (const char *)hist + 1, 15);
    assert_true(n < 0);
}

static void test_hist_window(void **unused)
{
    (void)unused;
    static uint8_t buf[TRK_LZ_HIST], big[TRK_LZ_HIST + 100];
    uint32_t len = 0;
    trk_lz_hist_push(buf, &len, (const uint8_t *)"abc", 3);
    trk_lz_hist_push(buf, &len, (const uint8_t *)"de", 2);
    assert_int_equal(len, 5);
    assert_memory_equal(buf, "abcde", 5);
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7 + i / 251);
    /* Past 64 KiB the oldest bytes go: 5 + 65534 keeps the last two. */
    trk_lz_hist_push(buf, &len, big, TRK_LZ_HIST - 2);
    assert_int_equal(len, TRK_LZ_HIST);
    assert_memory_equal(buf, "de", 2);
    assert_memory_equal(buf + 2, big, TRK_LZ_HIST - 2);
    /* A piece of 64 KiB or more is its own history. */
    trk_lz_hist_push(buf, &len, big, sizeof big);
    assert_int_equal(len, TRK_LZ_HIST);
    assert_memory_equal(buf, big + 100, TRK_LZ_HIST);
}

/* A reader's side of one stream. */
struct rd {
    uint8_t hist[TRK_LZ_HIST];
    uint32_t len;
    uint64_t off;
};

static uint8_t zbuf[LZ4_COMPRESSBOUND(200000)], back[200000];

/* Encodes piece p of stream id at the reader's offset, decodes it as a
 * reader would, checks the bytes; returns the block's size. */
static int round_trip(struct rd *r, uint32_t id, const uint8_t *p, uint32_t n)
{
    int z = trk_lzlink_compress(id, r->off, p, n, zbuf, (int)sizeof zbuf, 4);
    assert_true(z > 0);
    int got = LZ4_decompress_safe_usingDict((const char *)zbuf, (char *)back, z, (int)n,
                                            (const char *)r->hist, (int)r->len);
    assert_int_equal(got, (int)n);
    assert_memory_equal(back, p, n);
    trk_lz_hist_push(r->hist, &r->len, p, n);
    r->off += n;
    return z;
}

/* Heap-record-like bytes: a loop of 64 records, each 8 bytes, with a
 * counter that changes every round. */
static void loop_piece(uint8_t *p, uint32_t n, uint32_t round)
{
    for (uint32_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i % 512 * 37 / 3 + (i % 512 == 5 ? round : 0));
}

static uint8_t piece[200000];
static struct rd ra, rb;

static void test_encoder_pieces(void **unused)
{
    (void)unused;
    memset(&ra, 0, sizeof ra);
    loop_piece(piece, 3000, 0);
    int first = round_trip(&ra, 3, piece, 3000);
    int later = 0;
    for (uint32_t k = 1; k < 6; k++) {
        loop_piece(piece, 3000, k);
        later = round_trip(&ra, 3, piece, 3000);
    }
    /* The loop's later pieces find the earlier ones. */
    assert_true(later * 4 < first);
    /* A long piece (past the encoder's copy room) and short ones after it. */
    for (uint32_t i = 0; i < 150000; i++)
        piece[i] = (uint8_t)(i * 2654435761u >> 24);
    round_trip(&ra, 3, piece, 150000);
    loop_piece(piece, 700, 9);
    round_trip(&ra, 3, piece, 700);
    assert_true(round_trip(&ra, 3, piece, 700) < 40); /* the same again: one match */
}

static void test_encoder_restarts(void **unused)
{
    (void)unused;
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    loop_piece(piece, 2000, 1);
    round_trip(&ra, 5, piece, 2000);
    /* Sixteen other streams take every encoder, stream 5's last (the
     * least recently used): it comes back with none. */
    static struct rd others[16];
    memset(others, 0, sizeof others);
    for (uint32_t k = 0; k < 16; k++)
        round_trip(&others[k], 100 + k, piece, 2000);
    round_trip(&ra, 5, piece, 2000);
    round_trip(&others[0], 100, piece, 2000);
    /* A piece that bypassed the encoder (stored): the reader's history has
     * it, the encoder must not pretend to. */
    loop_piece(piece, 300, 2);
    trk_lzlink_drop(5);
    trk_lz_hist_push(ra.hist, &ra.len, piece, 300);
    ra.off += 300;
    round_trip(&ra, 5, piece, 2000);
    /* The same without the drop: the offset alone tells the encoder. */
    loop_piece(piece, 300, 3);
    trk_lz_hist_push(ra.hist, &ra.len, piece, 300);
    ra.off += 300;
    loop_piece(piece, 2000, 3);
    round_trip(&ra, 5, piece, 2000);
    /* A stream whose offsets jump (a new stream under a reused id, as in a
     * fork child): a block with no history. */
    struct rd fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.off = 0;
    trk_lzlink_fork_child();
    round_trip(&fresh, 5, piece, 2000);
}

/* Loop pieces of `streams` streams taking turns, 6 rounds: the largest
 * later piece over the smallest first one. */
static double turns(uint32_t streams, uint32_t id_step)
{
    static struct rd rs[17];
    memset(rs, 0, sizeof rs);
    trk_lzlink_fork_child(); /* no encoder holds a stream of the tests before */
    int first = 1 << 30, later = 0;
    for (uint32_t k = 0; k < 6; k++)
        for (uint32_t i = 0; i < streams; i++) {
            loop_piece(piece, 3000, k + 100 * i);
            int z = round_trip(&rs[i], 5 + i * id_step, piece, 3000);
            if (k == 0 && z < first)
                first = z;
            if (k > 0 && z > later)
                later = z;
        }
    return (double)later / first;
}

/* Live streams keep their histories, whatever their ids: 5 and 21 (ids
 * grow with every thread that ever lived), or sixteen at once, each one's
 * later loop pieces shrink as one stream's do. The encoders were picked by
 * stream id modulo 16, so 5 and 21 evicted each other's history at every
 * piece and every piece stayed as large as the first. A seventeenth stream
 * taking turns with them leaves each one without its history when it
 * comes back. */
static void test_live_streams_keep_history(void **unused)
{
    (void)unused;
    double two = turns(2, 16), sixteen = turns(16, 16), seventeen = turns(17, 1);
    if (two > 0.25 || sixteen > 0.25 || seventeen < 0.5)
        fail_msg("later / first piece: 2 streams %.3f, 16 streams %.3f, 17 streams %.3f", two,
                 sixteen, seventeen);
}

/* Node-like bytes: runs of 1-12 tokens copied from a table of 600 4-byte
 * tokens, so that matches are short and a skipping search misses some. */
static uint32_t node_like(uint8_t *p, uint32_t cap, uint32_t seed)
{
    static uint8_t tok[600][4];
    uint32_t x = 12345, n = 0;
    for (int i = 0; i < 600; i++)
        for (int k = 0; k < 4; k++)
            tok[i][k] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
    x = seed;
    while (n + 48 < cap) {
        uint32_t t = (x = x * 1103515245u + 12345u) >> 8;
        for (uint32_t k = 0; k < 1 + (t >> 20) % 12 && n + 4 <= cap; k++, n += 4)
            memcpy(p + n, tok[(t + k) % 600], 4);
    }
    return n;
}

static uint8_t z1[LZ4_COMPRESSBOUND(100000)];

/* A stream's first 256 KiB (a Python program's start-up: 40-100 KiB of
 * stack nodes, written once) get fast LZ4's thorough setting whatever the
 * caller asked, where HC does not take them. A piece longer than the
 * encoder's copy room (64 KiB) too. */
static void test_early_bytes_thorough(void **unused)
{
    (void)unused;
    memset(&ra, 0, sizeof ra);
    uint32_t n = node_like(piece, 100000, 1);
    int fast = LZ4_compress_fast((const char *)piece, (char *)z1, (int)n, (int)sizeof z1, 4);
    int thorough = LZ4_compress_fast((const char *)piece, (char *)z1, (int)n, (int)sizeof z1, 1);
    assert_true(thorough < fast); /* the data tells the settings apart */
    int z = round_trip(&ra, 40, piece, n); /* asks for acceleration 4 */
    assert_true(z <= thorough);
}

/* LZ4's HC encoder takes pieces while its CPU budget lasts (lz_link.c): a
 * process's first pieces (its start-up) are HC's, exactly what HC makes
 * of each alone, until the 2 ms it starts with are spent; then fast LZ4's,
 * and the budget (0.5% of the time since) does not let HC back within the
 * test. */
static void test_hc_budget(void **unused)
{
    (void)unused;
    trk_lzlink_hc_force(0);
    trk_lzlink_fork_child(); /* a fresh budget */
    int hc_pieces = 0, fast_after = 0;
    for (uint32_t i = 0; i < 400 && !fast_after; i++) {
        uint32_t n = node_like(piece, 65536, 7 + i);
        int hc = LZ4_compress_HC((const char *)piece, (char *)z1, (int)n, (int)sizeof z1, 4);
        struct rd r;
        memset(&r, 0, sizeof r);
        int z = round_trip(&r, 100 + i, piece, n); /* a new stream: no history */
        if (z == hc)
            hc_pieces++;
        else
            fast_after = z > hc;
    }
    print_message("HC took %d pieces of 64 KiB, then fast LZ4\n", hc_pieces);
    trk_lzlink_hc_force(-1);
    assert_true(hc_pieces >= 1);
    assert_true(fast_after);
}

/* The history moves between the encoders (the budget forced either way):
 * a first piece is exactly what HC makes of it alone; tiny pieces (fast:
 * not worth HC) then a longer one (HC) that repeats them, and after long
 * pieces on HC a fast piece that repeats the last one: each finds the
 * history it needs (a block of a few bytes), and every block decodes
 * against the reader's history. */
static void test_hc_history(void **unused)
{
    (void)unused;
    trk_lzlink_hc_force(1);
    memset(&ra, 0, sizeof ra);
    loop_piece(piece, 3000, 0);
    for (uint32_t i = 0; i < 3000; i += 7)
        piece[i] ^= (uint8_t)(i * 2654435761u >> 27); /* less regular: HC and fast differ */
    int alone = LZ4_compress_HC((const char *)piece, (char *)z1, 3000, (int)sizeof z1, 4);
    int fast = LZ4_compress_fast((const char *)piece, (char *)z1, 3000, (int)sizeof z1, 1);
    assert_true(alone < fast);
    assert_int_equal(round_trip(&ra, 7, piece, 3000), alone);

    /* fast -> HC: a fresh stream's tiny pieces, then 2 KiB that repeats */
    memset(&rb, 0, sizeof rb);
    static uint8_t tiny[4096];
    loop_piece(tiny, 4096, 5);
    for (uint32_t i = 0; i < 4096; i += 512)
        round_trip(&rb, 8, tiny + i, 512);
    assert_true(round_trip(&rb, 8, tiny, 2048) < 40);

    /* long pieces on HC (past the copy room: compressed in place), then
     * fast LZ4 finds the last piece again */
    for (uint32_t i = 0; i < 150000; i++)
        piece[i] = (uint8_t)(i * 2654435761u >> 24);
    round_trip(&ra, 7, piece, 100000);
    loop_piece(piece, 20000, 6);
    round_trip(&ra, 7, piece, 20000);
    trk_lzlink_hc_force(-1);
    assert_true(round_trip(&ra, 7, piece, 20000) < 120);
}

static int z_needed_hist; /* frames that could not decode without the history */

/* round_trip for codec 4: a zstd frame, decoded with the reader's history
 * as its prefix; lz4 1 sends the piece through the LZ4 encoder instead. */
static int round_trip_z(struct rd *r, uint32_t id, const uint8_t *p, uint32_t n, int lz4)
{
    if (lz4)
        return round_trip(r, id, p, n);
    static ZSTD_DCtx *d;
    if (!d)
        d = ZSTD_createDCtx();
    int z = trk_lzlink_zstd(id, r->off, p, n, zbuf, (int)sizeof zbuf);
    assert_true(z > 0);
    assert_false(ZSTD_isError(ZSTD_DCtx_refPrefix(d, r->len ? r->hist : NULL, r->len)));
    size_t got = ZSTD_decompressDCtx(d, back, n, zbuf, (size_t)z);
    assert_int_equal(got, n);
    assert_memory_equal(back, p, n);
    /* A frame that used the history (smaller than the piece alone makes)
     * does not decode without it. */
    static uint8_t alone[LZ4_COMPRESSBOUND(200000)];
    size_t a = ZSTD_compress(alone, sizeof alone, p, n, 1);
    if (r->len && !ZSTD_isError(a) && (size_t)z + 16 < a) {
        z_needed_hist++;
        got = ZSTD_decompressDCtx(d, back, n, zbuf, (size_t)z);
        assert_true(ZSTD_isError(got) || memcmp(back, p, n) != 0);
    }
    trk_lz_hist_push(r->hist, &r->len, p, n);
    r->off += n;
    return z;
}

static void test_zstd_pieces(void **unused)
{
    (void)unused;
    memset(&ra, 0, sizeof ra);
    trk_lzlink_fork_child();
    loop_piece(piece, 3000, 0);
    int first = round_trip_z(&ra, 7, piece, 3000, 0);
    int later = 0;
    for (uint32_t k = 1; k < 6; k++) {
        loop_piece(piece, 3000, k);
        later = round_trip_z(&ra, 7, piece, 3000, 0);
    }
    assert_true(later * 4 < first); /* the loop's later pieces find the earlier ones */
    /* A long piece, then short ones, then LZ4 and zstd taking turns: each
     * encoder starts from the history the other left. */
    for (uint32_t i = 0; i < 150000; i++)
        piece[i] = (uint8_t)(i * 2654435761u >> 24);
    round_trip_z(&ra, 7, piece, 150000, 0);
    for (uint32_t k = 0; k < 8; k++) {
        loop_piece(piece, 700 + 100 * k, 20 + k);
        round_trip_z(&ra, 7, piece, 700 + 100 * k, k & 1);
    }
    loop_piece(piece, 900, 30);
    round_trip_z(&ra, 7, piece, 900, 0);
    assert_true(round_trip_z(&ra, 7, piece, 900, 0) < 40); /* the same again */
    /* A piece that bypassed the encoders: the offset tells them. */
    loop_piece(piece, 300, 40);
    trk_lz_hist_push(ra.hist, &ra.len, piece, 300);
    ra.off += 300;
    loop_piece(piece, 2000, 41);
    round_trip_z(&ra, 7, piece, 2000, 0);
    round_trip_z(&ra, 7, piece, 2000, 1);
    assert_true(z_needed_hist >= 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_block),
        cmocka_unit_test(test_hist_window),
        cmocka_unit_test(test_encoder_pieces),
        cmocka_unit_test(test_encoder_restarts),
        cmocka_unit_test(test_live_streams_keep_history),
        cmocka_unit_test(test_early_bytes_thorough),
        cmocka_unit_test(test_hc_budget),
        cmocka_unit_test(test_hc_history),
        cmocka_unit_test(test_zstd_pieces),
    };
    trk_lzlink_hc_force(-1); /* fast LZ4 only, but where a test says */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
