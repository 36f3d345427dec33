/* SPDX-License-Identifier: MIT
 *
 * test_leak_live.c - the live set the exit-time leak scan rebuilds from the
 * capture (capture/leak_live.c, fed by leak_track.c), against a model: a
 * capture of several streams whose pieces interleave out of seq order, with
 * every length of varint a record can hold (1 to 10 bytes: the fast decoder
 * reads at most 8 and leaves longer ones to the exact one), compact and long
 * forms, reallocs, Python's blocks (never heap blocks), the node records of
 * new stacks between them (every form), and enough addresses to rehash the
 * table across watermarks. Stored, HUF and linked zstd (codec 4) pieces,
 * read back from the file, and the same pieces handed over as the writer hands them while it
 * writes (trk_ltrack_*), which the scan then collects: also in the writer's
 * cycles (trk_ltrack_cycle), where a FREE below the cycle's bound removes
 * its address at once, and a later piece of the cycle must still see it
 * (three streams), or nothing follows (one stream).
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
#include "capture/lz_link.h"
#include "common/huf.h"
#include "common/varint.h"
#include "format/format.h"
#include "format/record.h"
#include "lset_file.h"

#define NSTREAMS 3
#define NEVENTS  80000 /* a one-cycle capture holds back more than the writer does */
#define NADDR    12000
#define ROUND    700 /* events between watermarks */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int zstd_chunks; /* codec-4 chunks written */

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Heap addresses: mostly 16-aligned and close together (short deltas),
 * some odd, some far apart (deltas of 5 to 10 varint bytes). */
static uint64_t pick_addr(unsigned i)
{
    switch (i % 8) {
    case 0:
        return 0x7f0000000001ull + 16 * (uint64_t)i; /* unaligned */
    case 1:
        return 0x4000000000000000ull + 16 * (uint64_t)i; /* far: long deltas */
    case 2:
        return 0x0000100000000000ull + 4096 * (uint64_t)i; /* mid */
    case 3:
        return 0xC000000000000000ull + 16 * (uint64_t)i; /* farther */
    default:
        return 0x555555550000ull + 16 * (uint64_t)i;
    }
}

static uint64_t pick_size(void)
{
    uint64_t r = next();
    switch (r % 6) {
    case 0:
        return r >> 58; /* 1 byte */
    case 1:
        return (r >> 20) & 0xffffff;
    case 2:
        return r >> 8; /* 8 varint bytes */
    case 3:
        return r | 1ull << 62; /* 9 */
    default:
        return 16 + (r >> 54); /* 1..2 */
    }
}

struct ev {
    uint64_t seq, addr, addr2, size;
    unsigned stream, op; /* 0 alloc, 1 free, 2 realloc, 3 pymalloc, 4 pyfree */
    unsigned kind, ai, ai2;
};

struct model {
    uint64_t size[NADDR];
    uint8_t live[NADDR];
};

static struct ev evs[NEVENTS];
static struct model m;
static uint64_t addrs[NADDR * 2];

static uint64_t sorted[NADDR][2]; /* heap address, its index */

static int cmp_addr(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int addr_index(uint64_t a)
{
    uint64_t key[2] = {a, 0};
    const uint64_t *hit = bsearch(key, sorted, NADDR, sizeof sorted[0], cmp_addr);
    return hit ? (int)hit[1] : -1;
}

static void make_events(void)
{
    for (unsigned i = 0; i < NADDR * 2; i++)
        addrs[i] = pick_addr(i);
    for (unsigned i = 0; i < NADDR; i++) {
        sorted[i][0] = addrs[i];
        sorted[i][1] = i;
    }
    qsort(sorted, NADDR, sizeof sorted[0], cmp_addr);
    static const unsigned alloc_kinds[] = {TRK_ALLOC_MALLOC, TRK_ALLOC_CALLOC, TRK_ALLOC_NEW,
                                           TRK_ALLOC_MEMALIGN};
    static const unsigned free_kinds[] = {TRK_ALLOC_FREE, TRK_ALLOC_DELETE, TRK_ALLOC_DELETE_ARRAY,
                                          TRK_ALLOC_FREE_SIZED};
    uint64_t seq = 1;
    for (int i = 0; i < NEVENTS; i++) {
        struct ev *e = &evs[i];
        uint64_t r = next();
        e->stream = (unsigned)(r % NSTREAMS);
        /* Heap addresses in [0, NADDR), Python's in [NADDR, 2 NADDR). */
        unsigned ai = (unsigned)((r >> 8) % NADDR);
        unsigned op = (unsigned)((r >> 32) % 10);
        e->seq = seq;
        seq += 1 + ((r >> 40) % 16 == 0 ? (r >> 44) % 5000 : 0); /* gaps: seqd varints */
        e->addr = addrs[ai];
        e->ai = ai;
        e->size = pick_size();
        if (op < 4) {
            e->op = 0;
            e->kind = alloc_kinds[(r >> 50) % 4];
        } else if (op < 7) {
            e->op = 1;
            e->kind = free_kinds[(r >> 50) % 4];
        } else if (op == 7) {
            e->op = 2;
            e->kind = TRK_ALLOC_REALLOC;
            e->ai2 = (unsigned)((ai + 1 + (r >> 52) % 7) % NADDR);
            e->addr2 = addrs[e->ai2];
            seq++; /* seq2 = seq + 1 */
        } else {
            e->op = op == 8 ? 3 : 4;
            e->kind = op == 8 ? TRK_ALLOC_PYMALLOC : TRK_ALLOC_PYFREE;
            e->addr = addrs[NADDR + ai];
        }
    }
    /* The model: events applied in seq order. */
    for (int i = 0; i < NEVENTS; i++) {
        const struct ev *e = &evs[i];
        if (e->op >= 3)
            continue;
        unsigned k = e->ai;
        m.live[k] = e->op == 0;
        m.size[k] = e->size;
        if (e->op == 2) {
            k = e->ai2;
            m.live[k] = 1;
            m.size[k] = e->size;
        }
    }
}

/* A new stack's node records before a heap record, as a Python program
 * writes them (docs/FORMAT.md §4.3; the scan needs none of them): 1-4
 * nodes, each chained to the one before or not, with its id in the tag or
 * not, a native frame (deltas of 1 to 10 varint bytes) or a Python one. */
static uint8_t *put_nodes(uint8_t *p, struct trk_rec_state *st, uint64_t *nid)
{
    uint64_t r = next();
    for (unsigned k = 0; k <= (r & 3); k++) {
        uint64_t q = next(), id = *nid + 1 + (q % 7 == 0 ? q >> 60 : 0);
        uint64_t parent = (q >> 8) & 1 ? *nid : (q >> 9) % id;
        uint64_t ip;
        if ((q >> 16) % 3 == 0)
            ip = TRK_PYFRAME_BIT | ((q >> 20) % 5000) << TRK_PYFRAME_LINE_BITS | (q >> 40) % 900;
        else if ((q >> 16) % 3 == 1)
            ip = 0x555555554000ull + ((q >> 24) & 0xfffff);
        else
            ip = (q >> 2) & ~TRK_PYFRAME_BIT; /* far: long deltas */
        p = trk_enc_stack(p, st, id, parent, ip);
        *nid = id;
    }
    return p;
}

/* The events in file order: each round's events of each stream as one
 * piece, the streams in a shuffled order (so a later-read piece may hold
 * older events of the same address), then a watermark. */
/* track: 0 read back, 1 kept by the writer, 2 kept in cycles, 3 kept in
 * cycles with every event in one stream, 4 kept in one cycle (more events
 * and pieces than a cycle holds back: the held ones go in early), 5 the
 * same with one piece a stream. */
static void write_capture(struct file *f, int huf, int track)
{
    static uint8_t piece[NEVENTS * 128], packed[TRK_HUF_TABLE + NEVENTS * 256];
    struct trk_rec_state st[NSTREAMS] = {0};
    uint64_t off[NSTREAMS] = {0}, ts[NSTREAMS] = {0}, nid[NSTREAMS] = {0};
    int round = track == 5 ? NEVENTS : ROUND;
    for (int r0 = 0; r0 < NEVENTS; r0 += round) {
        unsigned first = (unsigned)(next() % NSTREAMS);
        /* every event below the round's watermark is in it or before */
        uint64_t w = r0 + round < NEVENTS ? evs[r0 + round].seq : UINT64_MAX;
        if (track == 2 || track == 3 || track == 5 || (track == 4 && r0 == 0))
            trk_ltrack_cycle(track == 4 ? UINT64_MAX : w);
        for (unsigned k = 0; k < NSTREAMS; k++) {
            unsigned s = (first + k) % NSTREAMS;
            uint8_t *p = piece;
            for (int i = r0; i < r0 + round && i < NEVENTS; i++) {
                const struct ev *e = &evs[i];
                if ((track == 3 ? 0 : e->stream) != s)
                    continue;
                ts[s] += next() % 64 ? 1500 : 1ull << 40; /* tsq varints too */
                if (next() % 3 == 0)
                    p = put_nodes(p, &st[s], &nid[s]);
                if (e->op == 0 || e->op == 3)
                    p = trk_enc_alloc(p, &st[s], e->kind, e->seq, ts[s], e->addr, e->size, 7);
                else if (e->op == 2)
                    p = trk_enc_realloc(p, &st[s], e->kind, e->seq, e->seq + 1, ts[s], e->addr,
                                        e->addr2, e->size, 9);
                else
                    p = trk_enc_free(p, &st[s], e->kind, e->seq, ts[s], e->addr);
            }
            uint32_t len = (uint32_t)(p - piece);
            if (!len)
                continue;
            if (track)
                trk_ltrack_piece(s + 1, off[s], piece, len);
            /* huf 2: codec 4, each piece against its stream's history */
            int z = huf == 2 ? trk_lzlink_zstd(s + 1, off[s], piece, len, packed,
                                               (int)sizeof packed)
                             : 0;
            size_t h = huf == 1 ? trk_huf_encode(piece, len, packed, sizeof packed) : 0;
            zstd_chunks += z > 0;
            if (z > 0)
                chunk(f, TRK_CHUNK_DATA, TRK_CODEC_ZSTD_LINK, s + 1, packed, (uint32_t)z, len,
                      off[s]);
            else if (h)
                chunk(f, TRK_CHUNK_DATA, TRK_CODEC_HUF, s + 1, packed, (uint32_t)h, len, off[s]);
            else
                chunk(f, TRK_CHUNK_DATA, TRK_CODEC_STORED, s + 1, piece, len, len, off[s]);
            off[s] += len;
        }
        if (track == 2 || track == 3 || track == 5 || (track == 4 && r0 + round >= NEVENTS))
            trk_ltrack_cycle(0);
        chunk(f, TRK_CHUNK_WATERMARK, TRK_CODEC_STORED, 0, NULL, 0, 0, w);
        if (track)
            trk_ltrack_watermark(w);
    }
}

static void check(int huf, int track)
{
    struct file f = file_new(64u << 20);
    if (track)
        trk_ltrack_start();
    write_capture(&f, huf, track);
    struct trk_lset s;
    lset_take(&s, &f, track);
    size_t want = 0;
    for (int i = 0; i < NADDR; i++)
        want += m.live[i];
    assert_true(want > 1000);
    assert_int_equal(s.n, want);
    for (size_t i = 0; i < s.n; i++) {
        if (i)
            assert_true(s.v[i - 1].addr < s.v[i].addr);
        int k = addr_index(s.v[i].addr);
        assert_true(k >= 0 && k < NADDR);
        assert_true(m.live[k]);
        assert_true(s.v[i].size == m.size[k]);
    }
    trk_lset_free(&s);
}

static void test_stored(void **unused)
{
    (void)unused;
    check(0, 0);
}

static void test_huf(void **unused)
{
    (void)unused;
    check(1, 0);
}

static void test_zstd(void **unused)
{
    (void)unused;
    check(2, 0);
    assert_true(zstd_chunks > 10);
}

static void test_kept_by_writer(void **unused)
{
    (void)unused;
    check(0, 1);
    /* Collected once: the next scan (none in a process) reads back. */
    struct trk_lset s;
    assert_int_equal(trk_lset_load(&s, -1), -1);
}

static void test_kept_in_cycles(void **unused)
{
    (void)unused;
    check(0, 2);
}

static void test_kept_in_cycles_one_stream(void **unused)
{
    (void)unused;
    check(0, 3);
}

static void test_kept_in_one_cycle(void **unused)
{
    (void)unused;
    check(0, 4);
}

static void test_kept_in_one_piece(void **unused)
{
    (void)unused;
    check(0, 5);
}

int main(void)
{
    make_events();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stored),
        cmocka_unit_test(test_huf),
        cmocka_unit_test(test_zstd),
        cmocka_unit_test(test_kept_by_writer),
        cmocka_unit_test(test_kept_in_cycles),
        cmocka_unit_test(test_kept_in_cycles_one_stream),
        cmocka_unit_test(test_kept_in_one_cycle),
        cmocka_unit_test(test_kept_in_one_piece),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
