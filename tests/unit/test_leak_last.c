/* SPDX-License-Identifier: MIT
 *
 * test_leak_last.c - the writer's live set (capture/leak_track.c,
 * trk_ltrack_*, and leak_live.c) when the writer says which piece ends its flush cycle
 * (trk_ltrack_last): that piece's FREEs below the cycle's bound are final
 * at once, so with one allocating thread the set keeps no FREE log at all
 * (it was 16 bytes a FREE, up to 1 MiB, written on every event); with
 * several, the earlier pieces' FREEs are still logged for the later ones.
 * The kept set must be the model's (seq order across streams, blocks freed
 * on the other stream, pieces of a cycle in any order), and a piece after
 * the one said to be last must not be trusted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/leakscan.h"
#include "capture/own_mem.h"
#include "common/varint.h"
#include "format/format.h"
#include "format/record.h"

#define NSTREAMS 2
#define RING     256   /* live blocks per stream, as allocbench's ring */
#define ROUND    24000 /* events per cycle (allocbench: ~20,000 a 10 ms flush) */
#define NROUNDS  8
#define NEVENTS  (ROUND * NROUNDS)

static uint64_t rng;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

struct ev {
    uint64_t seq, addr, size;
    unsigned stream, alloc;
};

static struct ev evs[NEVENTS];
static uint64_t ring[NSTREAMS][RING];

/* Each step frees a block of a ring (now and then the other stream's:
 * freed across threads) and allocates its replacement, at an address
 * freed a while ago or a new one. The streams interleave in seq as two
 * threads taking one counter do; `streams` 1: all on stream 0. */
static void make_events(unsigned streams)
{
    static uint64_t pool[4096];
    unsigned npool = 0;
    uint64_t fresh = 0x555555550000ull, seq = 1;
    rng = 0x2545F4914F6CDD1Dull;
    memset(ring, 0, sizeof ring);
    for (int i = 0; i < NEVENTS; i += 2) {
        uint64_t r = next();
        unsigned s = (unsigned)(r % streams), slot = (unsigned)((r >> 8) % RING);
        unsigned owner = (r >> 20) % 16 ? s : (s + 1) % streams;
        uint64_t old = ring[owner][slot], addr;
        if (npool > 64 && (r >> 30) % 4 == 0) { /* reused, as a heap does */
            unsigned k = (unsigned)((r >> 32) % npool);
            addr = pool[k];
            pool[k] = pool[--npool];
        } else {
            addr = fresh;
            fresh += 16 * (1 + (r >> 56) % 3);
        }
        if (old && npool < 4096)
            pool[npool++] = old;
        ring[owner][slot] = addr;
        evs[i] = (struct ev){.seq = seq++, .addr = old, .stream = s};
        evs[i + 1] = (struct ev){
            .seq = seq++, .addr = addr, .size = 16 + (r >> 40) % 200, .stream = s, .alloc = 1};
    }
}

/* Each round a cycle: its bound is the first seq of the next round (every
 * event below it is in this round's pieces or earlier), the streams'
 * pieces in a shuffled order, the last one said to be last, then the
 * watermark. `extra`: one more piece after the last (the writer never
 * does that). */
static void write_cycles(unsigned streams, int extra)
{
    static uint8_t piece[ROUND * 32];
    struct trk_rec_state st[NSTREAMS] = {0};
    uint64_t off[NSTREAMS] = {0}, ts[NSTREAMS] = {0};
    for (int r0 = 0; r0 < NEVENTS; r0 += ROUND) {
        uint64_t w = r0 + ROUND < NEVENTS ? evs[r0 + ROUND].seq : UINT64_MAX;
        trk_ltrack_cycle(w);
        unsigned first = (unsigned)(next() % streams);
        for (unsigned k = 0; k < streams; k++) {
            unsigned s = (first + k) % streams;
            uint8_t *p = piece;
            for (int i = r0; i < r0 + ROUND; i++) {
                const struct ev *e = &evs[i];
                if (e->stream != s || !e->addr)
                    continue;
                ts[s] += 700;
                p = e->alloc ? trk_enc_alloc(p, &st[s], TRK_ALLOC_MALLOC, e->seq, ts[s], e->addr,
                                             e->size, 3)
                             : trk_enc_free(p, &st[s], TRK_ALLOC_FREE, e->seq, ts[s], e->addr);
            }
            if (k == streams - 1)
                trk_ltrack_last();
            trk_ltrack_piece(s + 1, off[s], piece, (size_t)(p - piece));
            off[s] += (uint64_t)(p - piece);
        }
        if (extra && r0 == 0)
            trk_ltrack_piece(NSTREAMS + 1, 0, piece, 0);
        trk_ltrack_cycle(0);
        trk_ltrack_watermark(w);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The kept set against the rings; returns the leak scan's bytes held
 * before it was collected (own_mem.h). */
static uint64_t run(unsigned streams)
{
    make_events(streams);
    trk_ltrack_start();
    write_cycles(streams, 0);
    uint64_t own[TRK_OWN_FIELDS];
    trk_own_snapshot(own); /* field 12: the leak scan's bytes */
    struct trk_lset s;
    assert_int_equal(trk_lset_load(&s, -1), 0); /* the kept set: no file read */
    static uint64_t want[NSTREAMS * RING];
    size_t n = 0;
    for (int k = 0; k < NSTREAMS; k++)
        for (int i = 0; i < RING; i++)
            if (ring[k][i])
                want[n++] = ring[k][i];
    qsort(want, n, sizeof want[0], cmp_u64);
    assert_true(n >= RING);
    assert_int_equal(s.n, n);
    for (size_t i = 0; i < n; i++)
        assert_true(s.v[i].addr == want[i]);
    trk_lset_free(&s);
    return own[12];
}

static void test_one_stream(void **unused)
{
    (void)unused;
    /* The table (4,096 slots, 96 KiB) and the streams' states (48 KiB);
     * with the ~12,000 FREEs of a cycle logged, 256 KiB more (408 KiB
     * when every piece was logged). */
    assert_true(run(1) < 192u << 10);
}

static void test_two_streams(void **unused)
{
    (void)unused;
    run(2);
}

static void test_piece_after_last(void **unused)
{
    (void)unused;
    make_events(2);
    trk_ltrack_start();
    write_cycles(2, 1);
    struct trk_lset s;
    assert_int_equal(trk_lset_load(&s, -1), -1); /* dropped: the scan reads the file back */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_stream),
        cmocka_unit_test(test_two_streams),
        cmocka_unit_test(test_piece_after_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
