/* SPDX-License-Identifier: MIT
 *
 * test_ev_bytes.c - the exact bytes the ALLOC and FREE emitters
 * (src/capture/events.c, their inlined fast path capture/ev_inline.h)
 * put in a thread's ring, against an encoder written here from
 * docs/FORMAT.md §4 and §4.1 alone (varints, zigzag, the compact tag, the
 * long forms, the heap time quantum of §4.2), plus a few records pinned as
 * literal bytes. Covers what a faster emitter could get wrong: varint
 * widths on both sides of the 7/14/21/28/35/63-bit boundaries in the
 * address, size and stack fields, negative and odd address deltas, the
 * long form's odd delta of 2^62, seq gaps of 1..3 (in the tag) and more (a
 * varint), time steps below, at and past the quantum and a clock that
 * steps back, and records that straddle the ring's end (the general path)
 * between ones written in place (the fast path). The clock is a TSC fit
 * of slope 0, so that both paths read the same, chosen time; a new time
 * is a new fit, with a later tsc0 (a fit's identity, events.h). And the
 * thread's quantum in ticks (trk_heap_q_span) against the fit's own
 * arithmetic, at the edge it computes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "capture/ev_inline.h"
#include "capture/events.h"
#include "format/format.h"

#define RING 4096u
#define Q    1048576u /* the heap time quantum, FORMAT.md §4.2 */

static struct trk_thread thr;
static _Alignas(64) uint8_t ring[RING];
static struct trk_tsc_fit fit; /* mult 0: every reading is ns0 */

/* ---- The encoder of the spec ------------------------------------------- */

struct spec_state {
    uint64_t seq, ts, addr;
};

static uint8_t *spec_varint(uint8_t *p, uint64_t v)
{
    do {
        uint8_t b = (uint8_t)(v & 0x7f);
        v >>= 7;
        *p++ = (uint8_t)(b | (v ? 0x80 : 0));
    } while (v);
    return p;
}

/* zigzag: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ... */
static uint64_t spec_zz(int64_t v)
{
    return v >= 0 ? (uint64_t)v * 2 : ((uint64_t)(-(v + 1))) * 2 + 1;
}

/* The compact slots of §4.1, -1: none. */
static int spec_slot(int alloc, unsigned kind)
{
    static const unsigned a[4] = {TRK_ALLOC_MALLOC, TRK_ALLOC_CALLOC, TRK_ALLOC_NEW,
                                  TRK_ALLOC_PYMALLOC};
    static const unsigned f[4] = {TRK_ALLOC_FREE, TRK_ALLOC_DELETE, TRK_ALLOC_PYFREE,
                                  TRK_ALLOC_DELETE_ARRAY};
    for (int i = 0; i < 4; i++)
        if ((alloc ? a : f)[i] == kind)
            return i;
    return -1;
}

/* One ALLOC (alloc = 1) or FREE event read at clock time now. */
static size_t spec_event(uint8_t *out, struct spec_state *st, int alloc, unsigned kind,
                         uint64_t seq, uint64_t now, uint64_t addr, uint64_t size, uint64_t stack)
{
    /* §4.2: a heap record's time moves only once the clock is a quantum
     * past the stream's; never backwards. */
    uint64_t ts = now >= st->ts && now - st->ts >= Q ? now : st->ts;
    int64_t d = (int64_t)(addr - st->addr);
    int slot = spec_slot(alloc, kind);
    uint64_t a = 0;
    if (d % 16 == 0)
        a = spec_zz(d / 16) << 1;
    else if (spec_zz(d) < (UINT64_C(1) << 63))
        a = spec_zz(d) << 1 | 1;
    else
        slot = -1;
    uint8_t *p = out;
    if (slot >= 0) {
        uint64_t sd = seq - st->seq, tq = (ts - st->ts) >> 10;
        uint8_t tag = (uint8_t)(0x80 | (alloc ? 0x40 : 0) | slot << 4);
        tag |= (uint8_t)((sd <= 3 ? sd : 0) << 2 | (tq <= 2 ? tq : 3));
        *p++ = tag;
        if (sd > 3)
            p = spec_varint(p, sd);
        if (tq > 2)
            p = spec_varint(p, tq);
        p = spec_varint(p, a);
        st->ts += tq << 10;
    } else {
        *p++ = (uint8_t)((alloc ? 0x20 : 0x40) | kind);
        p = spec_varint(p, seq - st->seq);
        p = spec_varint(p, spec_zz((int64_t)(ts - st->ts)));
        p = spec_varint(p, spec_zz(d));
        st->ts = ts;
    }
    if (alloc) {
        p = spec_varint(p, size);
        p = spec_varint(p, stack);
    }
    st->seq = seq;
    st->addr = addr;
    return (size_t)(p - out);
}

/* ---- Driving the emitters ----------------------------------------------- */

/* The clock reads ns0 + step from now on: a new fit, as clock.c publishes
 * one (its tsc0 past the last one's). */
static void clock_step(int64_t step)
{
    fit.ns0 += (uint64_t)step;
    fit.tsc0++;
}

static struct spec_state spec;
static unsigned fast_records, slow_records, wrapped;

static void fresh(void)
{
    memset(&thr, 0, sizeof thr);
    memset(ring, 0xEE, sizeof ring);
    thr.ring = ring;
    thr.ring_mask = RING - 1;
    thr.errnop = &errno;
    atomic_store(&thr.floor, UINT64_MAX);
    memset(&spec, 0, sizeof spec);
    fit.tsc0 = 1;
    fit.mult = 0;
    fit.ns0 = 1000000000;
    atomic_store(&trk_clock_fit, &fit);
    atomic_store(&trk_seq, 1);
    atomic_store(&trk_active, 1);
    fast_records = slow_records = wrapped = 0;
}

/* Records one event and compares the ring's new bytes with the spec's. */
static void event(int alloc, unsigned kind, uint64_t addr, uint64_t size, uint32_t stack)
{
    uint8_t want[64], got[64];
    uint64_t seq = atomic_load(&trk_seq), head = thr.head;
    int fast = thr.head < thr.fast_end;
    size_t n = spec_event(want, &spec, alloc, kind, seq, fit.ns0, addr, size, stack);
    errno = 4321;
    if (alloc)
        trk_ev_alloc(&thr, kind, (void *)(uintptr_t)addr, size, stack);
    else
        trk_ev_free(&thr, kind, (void *)(uintptr_t)addr);
    assert_int_equal(errno, 4321);
    assert_int_equal(thr.head - head, n);
    for (size_t i = 0; i < n; i++)
        got[i] = ring[(head + i) & (RING - 1)];
    assert_memory_equal(got, want, n);
    assert_int_equal(atomic_load(&thr.committed), thr.head);
    assert_true(atomic_load(&thr.floor) == UINT64_MAX);
    assert_true(thr.last_seq == seq);
    assert_true(atomic_load(&trk_seq) == seq + 1);
    fast_records += fast;
    slow_records += !fast;
    wrapped += (head & (RING - 1)) + n > RING;
    atomic_store(&thr.consumed, thr.head); /* the writer keeps up */
}

/* The values on both sides of each varint width boundary (7k bits). */
static uint64_t edge(unsigned i)
{
    static const unsigned bits[] = {7, 14, 21, 28, 35, 42, 49, 56, 63};
    uint64_t b = UINT64_C(1) << bits[i / 2 % 9];
    return i & 1 ? b : b - 1;
}

/* Address deltas that make a = zigzag(d/16) << 1 (or zigzag(d) << 1 | 1)
 * land on each varint width boundary, both signs, aligned and odd. */
static void test_address_widths(void **unused)
{
    (void)unused;
    fresh();
    uint64_t addr = UINT64_C(1) << 62;
    for (unsigned i = 0; i < 2 * 8; i++) {
        uint64_t a = edge(i) >> 1; /* a's value before the flag bit */
        for (int odd = 0; odd < 2; odd++)
            for (int neg = 0; neg < 2; neg++) {
                /* zigzag(v) = a: v = a/2 or -(a+1)/2 */
                int64_t v = a & 1 ? -(int64_t)((a + 1) / 2) : (int64_t)(a / 2);
                if (neg)
                    v = -v - 1;
                int64_t d = odd ? v : v * 16;
                if (odd && !(d & 1))
                    d += d < 0 ? -1 : 1; /* keep it odd (a neighbour of the edge) */
                if (!odd && (d > INT64_MAX / 32 || d < INT64_MIN / 32))
                    continue;
                addr += (uint64_t)d;
                event(1, TRK_ALLOC_MALLOC, addr, 64, 7);
                event(0, TRK_ALLOC_FREE, addr, 0, 0);
            }
    }
    /* The odd delta too large for the flag bit: the long form. */
    event(1, TRK_ALLOC_MALLOC, addr + (UINT64_C(1) << 62) + 1, 32, 1);
    event(0, TRK_ALLOC_FREE, addr, 0, 0);
    event(0, TRK_ALLOC_FREE, addr - (UINT64_C(3) << 62) - 1, 0, 0);
}

static void test_size_stack_widths(void **unused)
{
    (void)unused;
    fresh();
    for (unsigned i = 0; i < 2 * 9; i++) {
        uint64_t a = 0x10000 + 16 * i;
        event(1, TRK_ALLOC_CALLOC, a, edge(i), (uint32_t)(i < 10 ? edge(i) : i));
        event(0, TRK_ALLOC_DELETE, a, 0, 0);
    }
    event(1, TRK_ALLOC_NEW, 0x20000, UINT64_MAX, UINT32_MAX);
    event(1, TRK_ALLOC_NEW, 0x20010, 0, 0);
}

static void test_seq_gaps(void **unused)
{
    (void)unused;
    fresh();
    static const uint64_t gaps[] = {1, 2, 3, 4, 5, 127, 128, 129, 16383, 16384, 1u << 21, 1u << 28};
    for (unsigned i = 0; i < sizeof gaps / sizeof gaps[0]; i++) {
        atomic_fetch_add(&trk_seq, gaps[i] - 1); /* other threads' events */
        event(1, TRK_ALLOC_PYMALLOC, 0x5000 + 32 * i, 24, 3);
        atomic_fetch_add(&trk_seq, gaps[i] - 1);
        event(0, TRK_ALLOC_PYFREE, 0x5000 + 32 * i, 0, 0);
    }
}

static void test_time_steps(void **unused)
{
    (void)unused;
    fresh();
    static const int64_t steps[] = {0,     1,     1023,  1024,   Q - 1,  1,     Q,    Q + 1023,
                                    Q + 1024, 3 * Q, -5000, -1,  Q / 2,  Q,     -Q,   2 * Q,
                                    1000000000, 1023 * Q, 2047, 3};
    for (unsigned i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        clock_step(steps[i]);
        event(1, TRK_ALLOC_MALLOC, 0x7000 + 16 * i, 100, 9);
        clock_step(steps[i] / 3);
        event(0, TRK_ALLOC_DELETE_ARRAY, 0x7000 + 16 * i, 0, 0);
        /* the long form carries exact time */
        event(1, TRK_ALLOC_ALIGNED_ALLOC, 0x9000 + 64 * i, 64, 2);
    }
}

/* Thousands of events in a 4 KiB ring: records straddle its end (the
 * general path copies them across) between records written in place. */
static void test_ring_wrap(void **unused)
{
    (void)unused;
    fresh();
    uint64_t x = 88172645463325252ull, live[64] = {0};
    for (unsigned i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned s = (unsigned)(x % 64);
        if (live[s])
            event(0, x >> 40 & 1 ? TRK_ALLOC_FREE : TRK_ALLOC_DELETE, live[s], 0, 0);
        live[s] = 0x100000 + (x >> 20 & 0xffff) * 16 + (x >> 50 & 1) * 8;
        if (x >> 52 & 1)
            atomic_fetch_add(&trk_seq, x >> 53 & 7);
        if ((x >> 56 & 15) == 0)
            clock_step((int64_t)(x >> 30 & 0xfffff) * 4);
        event(1, x >> 41 & 1 ? TRK_ALLOC_MALLOC : TRK_ALLOC_NEW, live[s], 16 + (x >> 8 & 4095),
              (uint32_t)(x >> 24 & 0x7fff));
    }
    print_message("%u records in place, %u by the general path, %u across the ring's end\n",
                  fast_records, slow_records, wrapped);
    assert_true(wrapped > 40);
    assert_true(fast_records > 10 * slow_records);
}

/* A few records as literal bytes (hand-encoded from §4.1), so that the
 * spec encoder above cannot drift with the code. */
static void test_literal_bytes(void **unused)
{
    (void)unused;
    fresh();
    atomic_store(&trk_seq, 5);
    /* seq 5 (seqd 5: varint), time 1e9 ns past 0 (tsq = 976562: varint),
     * address 0x1230: d/16 = 0x123, zigzag 0x246, << 1 = 0x48C; size 300,
     * stack 1: tag 1 1 00 00 11 = 0xC3. */
    event(1, TRK_ALLOC_MALLOC, 0x1230, 300, 1);
    static const uint8_t r1[] = {0xC3, 0x05, 0xB2, 0xCD, 0x3B, 0x8C, 0x09, 0xAC, 0x02, 0x01};
    assert_memory_equal(ring, r1, sizeof r1);
    /* seqd 1, no time, delta -16: zigzag(-1) = 1, << 1 = 2: free slot 0,
     * tag 1 0 00 01 00 = 0x84. */
    event(0, TRK_ALLOC_FREE, 0x1220, 0, 0);
    static const uint8_t r2[] = {0x84, 0x02};
    assert_memory_equal(ring + sizeof r1, r2, sizeof r2);
    /* delete (slot 1), seqd 3 after a gap, odd delta +1: a = 2 << 1 | 1 = 5:
     * tag 1 0 01 11 00 = 0x9C. */
    atomic_fetch_add(&trk_seq, 2);
    event(0, TRK_ALLOC_DELETE, 0x1221, 0, 0);
    static const uint8_t r3[] = {0x9C, 0x05};
    assert_memory_equal(ring + sizeof r1 + sizeof r2, r3, sizeof r3);
}

/* trk_heap_q_span: below the span every reading of the fit is less than a
 * quantum past the stream's ts (what lets the fast path skip the multiply),
 * and at the span it is not (the span is not merely safe but exact). */
static void test_quantum_span(void **unused)
{
    (void)unused;
    static const uint64_t mults[] = {0, 1, 1431655765, 1u << 31, UINT64_C(1) << 32,
                                     UINT64_C(3) << 32, UINT64_C(1) << 40, 4294967, 2863311531u};
    static const int64_t rel[] = {-(int64_t)Q - 1, -(int64_t)Q, -(int64_t)Q + 1, -1, 0, 1, 1023,
                                  (int64_t)Q, 5000000000, 1000000000000000};
    uint64_t x = 12345;
    unsigned tight = 0;
    for (unsigned m = 0; m < sizeof mults / sizeof mults[0]; m++)
        for (unsigned r = 0; r < sizeof rel / sizeof rel[0]; r++)
            for (unsigned k = 0; k < 50; k++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                struct trk_tsc_fit f = {x, (x >> 3) % (UINT64_C(1) << 60), mults[m]};
                uint64_t ts = f.ns0 + (uint64_t)rel[r] + (k ? x % 4096 : 0);
                uint64_t span = trk_heap_q_span(&f, ts), lim = ts + Q;
                if (span == 0) {
                    assert_true(f.ns0 >= lim);
                    continue;
                }
                assert_true(trk_tsc_ns_at(&f, f.tsc0 + span - 1) < lim);
                if (span == UINT64_MAX)
                    continue;
                unsigned __int128 at = ((unsigned __int128)span * f.mult) >> 32;
                if (at + f.ns0 < ((unsigned __int128)1 << 64)) {
                    assert_true(trk_tsc_ns_at(&f, f.tsc0 + span) >= lim);
                    tight++;
                }
            }
    assert_true(tight > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal_bytes),    cmocka_unit_test(test_address_widths),
        cmocka_unit_test(test_size_stack_widths), cmocka_unit_test(test_seq_gaps),
        cmocka_unit_test(test_time_steps),       cmocka_unit_test(test_ring_wrap),
        cmocka_unit_test(test_quantum_span),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
