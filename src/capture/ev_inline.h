/* SPDX-License-Identifier: MIT
 *
 * ev_inline.h - the ALLOC and FREE fast paths (events.c's trk_ev_alloc and
 * trk_ev_free), always inlined: into those two functions, and into the
 * allocator hooks' shared tails (hook.h), so that a hook records its event
 * without a call. Owns nothing but the fast path's order of operations;
 * the record bytes are record.h's (trk_enc_alloc, trk_enc_free), the same
 * as the general path's, which stays out of line in events.c. Must not
 * call anything on the fast path (the slow halves are the only calls).
 *
 * Why inline: as a separate leaf function each emitter pushed and popped
 * five registers and took its arguments in the hook's registers, and the
 * allocator kind, a constant in every hook, was looked up in the compact
 * slot table at run time: ~20 instructions per event of ~100 (callgrind,
 * allocbench).
 */
#ifndef TRK_CAPTURE_EV_INLINE_H
#define TRK_CAPTURE_EV_INLINE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/events.h"
#include "capture/heap_ts.h"

#define TRK_EV_INLINE __attribute__((always_inline)) static inline

/* The general paths (events.c): the same record, written wherever the fast
 * path does not apply (trk_fast_ok). The free one keeps errno (events.h). */
void trk_ev_alloc_slow(struct trk_thread *t, unsigned kind, const void *p, size_t size,
                       uint32_t stack, uint64_t seq) TRK_HIDDEN;
void trk_ev_free_slow(struct trk_thread *t, unsigned kind, uint64_t seq, const void *p) TRK_HIDDEN;
/* The long forms, out of line: kinds without a compact slot, and odd
 * address deltas of 2^62 or more (record.h's trk_enc_compact). */
uint8_t *trk_ev_enc_alloc_long(uint8_t *p, struct trk_rec_state *st, unsigned kind, uint64_t seq,
                               uint64_t ts, uint64_t addr, uint64_t size,
                               uint64_t stack) TRK_HIDDEN;
uint8_t *trk_ev_enc_free_long(uint8_t *p, struct trk_rec_state *st, unsigned kind, uint64_t seq,
                              uint64_t ts, uint64_t addr) TRK_HIDDEN;
/* The heap time quantum in ticks of fit f for a stream at ts: the q_span
 * of struct trk_thread (0 when there is none to give). */
uint64_t trk_heap_q_span(const struct trk_tsc_fit *f, uint64_t ts) TRK_HIDDEN;
/* head reached wake_at (events.c); keeps errno. */
void trk_ev_fast_wake(struct trk_thread *t) TRK_HIDDEN;

/* The fast path's clock: the fit and a reading in its ticks, taken before
 * the seq: the TSC's under trk_clock_fit, or (trk_heap_coarse, clock.c)
 * CLOCK_MONOTONIC_COARSE's ns under the identity trk_coarse_fit.
 * The lock xadd that takes the seq holds back the instructions after it,
 * rdtsc included, which then cost ~25 ns more per event than read ahead of
 * it, overlapped (allocbench CPU 2.97x -> 2.78x with 1 thread, 3.08x ->
 * 2.74x with 2). The reading is still inside the hook: after the
 * allocator returned a block, before a block goes back (docs/FORMAT.md
 * §4.2's bound; a signal handler's event in between is what the encoder's
 * clamp is for). */
struct trk_fast_clock {
    const struct trk_tsc_fit *f;
    uint64_t tsc;
};

TRK_EV_INLINE struct trk_fast_clock trk_fast_clock_read(void)
{
    if (TRK_LIKELY(trk_heap_coarse)) { /* clock.c: the coarse clock as the fit's ticks */
        struct trk_fast_clock c = {&trk_coarse_fit, trk_coarse_ns()};
        return c;
    }
    struct trk_fast_clock c = {atomic_load_explicit(&trk_clock_fit, memory_order_acquire),
                               __builtin_ia32_rdtsc()};
    return c;
}

/* Whether the fast path applies: no nested call waits to be published
 * (nested.c), there is a fit (above), the record fits in place (below
 * fast_end the ring has room for TRK_REC_MAX bytes before the writer's
 * position and before its end: events.c's fast_refresh), and the reading
 * is less than a heap time quantum past the stream's ts, so that the
 * record says no time passed (heap_ts.h). The last one is the thread's
 * quantum in ticks (q_span, thread.h): a subtraction, where the fit's
 * 64x64-bit multiply and the quantum test cost ~12 instructions and a
 * register pair per event. A reading past it takes the general path, which
 * reads the clock again (still inside the hook) and sets q_span anew:
 * about once a quantum (~1 ms) or a fit (~10 ms). */
TRK_EV_INLINE int trk_fast_ok(const struct trk_thread *t, const struct trk_fast_clock *c)
{
    return TRK_LIKELY(c->f != NULL) &&
           TRK_LIKELY(atomic_load_explicit(&t->ntail, memory_order_relaxed) == t->nhead) &&
           TRK_LIKELY(t->head < t->fast_end) && TRK_LIKELY(c->f->tsc0 == t->q_tsc0) &&
           TRK_LIKELY(c->tsc - c->f->tsc0 < t->q_span);
}

/* trk_rec_end without the scratch case. */
TRK_EV_INLINE void trk_fast_end(struct trk_thread *t, const uint8_t *b, const uint8_t *e,
                                uint64_t seq)
{
    uint64_t head = t->head + (uint64_t)(e - b);
    t->head = head;
    t->last_seq = seq;
    atomic_store_explicit(&t->committed, head, memory_order_release);
    atomic_store_explicit(&t->floor, UINT64_MAX, memory_order_release);
    if (TRK_UNLIKELY(head >= t->wake_at))
        trk_ev_fast_wake(t);
}

/* An ALLOC of p (size bytes, stack) by allocator kind, recorded now. */
TRK_EV_INLINE void trk_ev_alloc_inline(struct trk_thread *t, unsigned kind, const void *p,
                                       size_t size, uint32_t stack)
{
    struct trk_fast_clock c = trk_fast_clock_read();
    uint64_t seq = trk_ev_begin(t);
    if (TRK_UNLIKELY(!trk_fast_ok(t, &c))) {
        trk_ev_alloc_slow(t, kind, p, size, stack, seq);
        return;
    }
    uint8_t *b = t->ring + (t->head & t->ring_mask);
    /* record.h's trk_enc_alloc at the stream's own ts (no time step), its
     * long form kept out of line */
    uint8_t *e = trk_enc_compact_tq(b, &t->enc, 1, kind, seq, 0, (uintptr_t)p);
    if (TRK_LIKELY(e != NULL))
        e = trk_put_varint(trk_put_varint(e, size), stack);
    else
        e = trk_ev_enc_alloc_long(b, &t->enc, kind, seq, t->enc.ts, (uintptr_t)p, size, stack);
    trk_fast_end(t, b, e, seq);
}

/* A FREE of p with the seq already taken (trk_ev_begin) and the clock read
 * before it. Keeps errno. */
TRK_EV_INLINE void trk_ev_free_with(struct trk_thread *t, unsigned kind, uint64_t seq,
                                    const void *p, const struct trk_fast_clock *c)
{
    if (TRK_UNLIKELY(!trk_fast_ok(t, c))) {
        trk_ev_free_slow(t, kind, seq, p);
        return;
    }
    uint8_t *b = t->ring + (t->head & t->ring_mask);
    uint8_t *e = trk_enc_compact_tq(b, &t->enc, 0, kind, seq, 0, (uintptr_t)p);
    if (TRK_UNLIKELY(e == NULL))
        e = trk_ev_enc_free_long(b, &t->enc, kind, seq, t->enc.ts, (uintptr_t)p);
    trk_fast_end(t, b, e, seq);
}

/* A FREE of p, recorded now (before the block goes back). Keeps errno. */
TRK_EV_INLINE void trk_ev_free_inline(struct trk_thread *t, unsigned kind, const void *p)
{
    struct trk_fast_clock c = trk_fast_clock_read();
    trk_ev_free_with(t, kind, trk_ev_begin(t), p, &c);
}

#endif /* TRK_CAPTURE_EV_INLINE_H */
