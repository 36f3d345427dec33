/* SPDX-License-Identifier: MIT
 *
 * test_leak_collide.c - the live set's table (capture/leak_live.c) where
 * heap addresses collide: addresses that all hash to the last slots of the
 * smallest table make a run that wraps to its start, through both of the
 * set's decoders (the compact run for long pieces, the exact decoder and
 * table_put for short ones), kept by the writer (also in its cycles, where
 * a FREE removes the entry and the run's later entries move back across
 * the wrap) and read back from a file. The set must be the model's
 * exactly: a lost insert, a probe past the array or an entry a removal
 * cut off from its home shows up as a missing or extra block.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/leakscan.h"
#include "common/varint.h"
#include "format/format.h"
#include "format/record.h"
#include "lset_file.h"

/* leak_live.c's hash, for the smallest table (4096 slots): the test only
 * chooses its addresses with it (were the hash to change, the test would
 * still check the set, if no longer this path). */
static unsigned slot4096(uint64_t a)
{
    return (unsigned)((a >> 4) * 0x9E3779B97F4A7C15ull >> 52);
}

#define NCOLL  80  /* addresses hashing to the last slots: a run past the spare slots */
#define NOTHER 900 /* others, spread (the table stays below its rehash limit) */
#define NADDR  (NCOLL + NOTHER)

static uint64_t addr[NADDR], size_of[NADDR];
static uint8_t live[NADDR];

static void make_addrs(void)
{
    unsigned nc = 0, no = 0;
    for (uint64_t i = 1; nc < NCOLL || no < NOTHER; i++) {
        uint64_t a = 0x555555550000ull + 16 * i;
        unsigned s = slot4096(a);
        if (s >= 4094 && nc < NCOLL)
            addr[nc++] = a;
        else if (s < 4000 && no < NOTHER && i % 7 == 0)
            addr[NCOLL + no++] = a;
    }
    for (unsigned k = 0; k < NADDR; k++)
        size_of[k] = 16 + k;
}

/* The events write_capture's pass makes (live[] as before it). */
static uint64_t pass_events(unsigned pass)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < NADDR; k++)
        n += pass == 0 || (pass == 1 && k % 3 == 0) || (pass == 2 && k % 9 == 0 && !live[k]);
    return n;
}

/* One stream: every address allocated (the colliding ones first, so their
 * run is the table's first), then every third freed and every ninth
 * allocated again, in pieces of `per` records. Short pieces lie within the
 * decoder's slack of their end: the exact decoder takes every record. */
/* track: 0 read back, 1 kept, 2 kept in the writer's cycles (a pass each,
 * its bound the watermark after it). */
static void write_capture(struct file *f, unsigned per, int track)
{
    static uint8_t piece[1u << 20];
    struct trk_rec_state st = {0};
    uint64_t off = 0, seq = 1, ts = 0;
    memset(live, 0, sizeof live);
    uint8_t *p = piece;
    unsigned in_piece = 0;
    for (unsigned pass = 0; pass < 3; pass++) {
        if (track == 2) /* every event below the next seq after the pass is in it */
            trk_ltrack_cycle(seq + pass_events(pass));
        for (unsigned k = 0; k <= NADDR; k++) {
            ts += 100;
            if (k == NADDR) {
                if (!in_piece)
                    break;
            } else if (pass == 0 || (pass == 2 && k % 9 == 0 && !live[k])) {
                p = trk_enc_alloc(p, &st, TRK_ALLOC_MALLOC, seq++, ts, addr[k], size_of[k], 3);
                live[k] = 1;
            } else if (pass == 1 && k % 3 == 0) {
                p = trk_enc_free(p, &st, TRK_ALLOC_FREE, seq++, ts, addr[k]);
                live[k] = 0;
            } else {
                continue;
            }
            if (k < NADDR && ++in_piece < per)
                continue;
            uint32_t len = (uint32_t)(p - piece);
            if (track)
                trk_ltrack_piece(1, off, piece, len);
            chunk(f, TRK_CHUNK_DATA, TRK_CODEC_STORED, 1, piece, len, len, off);
            off += len;
            p = piece;
            in_piece = 0;
        }
        if (track == 2)
            trk_ltrack_cycle(0);
        /* One stream: every event read so far is below the next seq. */
        chunk(f, TRK_CHUNK_WATERMARK, TRK_CODEC_STORED, 0, NULL, 0, 0, seq);
        if (track)
            trk_ltrack_watermark(seq);
    }
}

static void check(unsigned per, int track)
{
    struct file f = file_new(8u << 20);
    if (track)
        trk_ltrack_start();
    write_capture(&f, per, track);
    struct trk_lset s;
    lset_take(&s, &f, track);
    size_t want = 0, coll = 0;
    for (unsigned k = 0; k < NADDR; k++) {
        want += live[k];
        coll += k < NCOLL && live[k];
    }
    assert_true(coll > NCOLL / 2);
    assert_int_equal(s.n, want);
    for (size_t i = 0; i < s.n; i++) {
        if (i) /* sorted, each block once */
            assert_true(s.v[i - 1].addr < s.v[i].addr);
        unsigned k = 0;
        while (k < NADDR && addr[k] != s.v[i].addr)
            k++;
        assert_true(k < NADDR);
        assert_true(live[k]);
        assert_true(s.v[i].size == size_of[k]);
    }
    trk_lset_free(&s);
}

static void test_long_pieces_kept(void **unused)
{
    (void)unused;
    check(100000, 1);
}

static void test_short_pieces_kept(void **unused)
{
    (void)unused;
    check(8, 1);
}

static void test_long_pieces_cycles(void **unused)
{
    (void)unused;
    check(100000, 2);
}

static void test_short_pieces_cycles(void **unused)
{
    (void)unused;
    check(8, 2);
}

static void test_long_pieces_read_back(void **unused)
{
    (void)unused;
    check(100000, 0);
}

static void test_short_pieces_read_back(void **unused)
{
    (void)unused;
    check(8, 0);
}

int main(void)
{
    make_addrs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_pieces_kept),
        cmocka_unit_test(test_short_pieces_kept),
        cmocka_unit_test(test_long_pieces_cycles),
        cmocka_unit_test(test_short_pieces_cycles),
        cmocka_unit_test(test_long_pieces_read_back),
        cmocka_unit_test(test_short_pieces_read_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
