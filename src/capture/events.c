/* SPDX-License-Identifier: MIT
 *
 * events.c - the per-event hot path: encode a record, append it to the
 * calling thread's ring, publish it. No locks: the only shared write is the
 * seq counter's fetch-add (which gives the cross-thread total order) and the
 * release stores that hand bytes to the writer. Never allocates.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/ev_inline.h"
#include "capture/events.h"
#include "capture/heap_ts.h"
#include "capture/output.h"
#include "prim/sys.h"

/* Waits until the writer has made room for len bytes. Blocking (rather than
 * dropping) keeps the capture complete; the give-up paths exist only so that
 * a dead writer (failed disk, or a raw clone() child that has no writer
 * thread) can never hang the host. Returns 0 when there is room. */
static int ring_wait(struct trk_thread *t, size_t len)
{
    uint64_t size = t->ring_mask + 1;
    uint64_t start = 0;
    uint64_t last_consumed = atomic_load_explicit(&t->consumed, memory_order_acquire);
    for (unsigned spin = 0;; spin++) {
        uint64_t c = atomic_load_explicit(&t->consumed, memory_order_acquire);
        if (t->head + len - c <= size)
            return 0;
        if (!trk_writer_alive())
            return -1;
        trk_writer_wake();
        if (spin < 64) {
            sched_yield();
            continue;
        }
        struct timespec ts = {0, 100000}; /* 100 us */
        nanosleep(&ts, NULL);
        uint64_t now = trk_now_ns();
        if (c != last_consumed) {
            last_consumed = c;
            start = now;
        } else if (!start) {
            start = now;
        } else if (now - start > 2000000000u) {
            /* No progress for 2 s: either the writer is wedged or we are a
             * process that inherited our memory without our threads. */
            if (getpid() != trk_pid) {
                atomic_store(&trk_active, 0);
                return -1;
            }
            start = now;
        }
    }
}

int trk_ring_reserve(struct trk_thread *t, size_t len)
{
    if (len > t->ring_mask + 1)
        return -1;
    if (trk_ring_free(t) >= len)
        return 0;
    return ring_wait(t, len);
}

int trk_ring_put(struct trk_thread *t, const uint8_t *buf, size_t len)
{
    uint64_t size = t->ring_mask + 1;
    if (TRK_UNLIKELY(trk_ring_free(t) < len) && ring_wait(t, len)) {
        t->lost++;
        return -1;
    }
    uint64_t off = t->head & t->ring_mask;
    uint64_t first = size - off;
    if (TRK_LIKELY(len <= first)) {
        memcpy(t->ring + off, buf, len);
    } else {
        memcpy(t->ring + off, buf, first);
        memcpy(t->ring, buf + first, len - first);
    }
    t->head += len;
    trk_ring_maybe_wake(t);
    return 0;
}

void trk_ev_finish(struct trk_thread *t, const uint8_t *buf, size_t len, uint64_t last_seq)
{
    if (trk_ring_put(t, buf, len) == 0) {
        t->last_seq = last_seq;
        trk_commit(t);
    } else {
        /* The encoder state already advanced past this record; the stream
         * can no longer be decoded consistently, so stop tracking. */
        trk_fail("event buffer overflow", ENOBUFS);
    }
    atomic_store_explicit(&t->floor, UINT64_MAX, memory_order_release);
}

/* ---- ALLOC and FREE: nearly every event ------------------------------------
 *
 * Their fast path (ev_inline.h) is inlined into the hooks and makes no
 * call, so nothing to save and restore around one (a call to trk_now_ns
 * and the scratch buffer's frame cost ~40 instructions per event,
 * callgrind). It applies when no nested call waits to be published
 * (nested.c), the clock has a fit (ev_inline.h), the record fits the ring without
 * wrapping or waiting and no heap time step is due (ev_inline.h's
 * trk_fast_ok); any other event takes the general path below, which
 * writes the same record. */

/* Sets the fast path's bounds from a fresh look at consumed. consumed only
 * grows, so they stay safe however stale: below fast_end the ring has room
 * for TRK_REC_MAX bytes before the writer's position and before the ring's
 * end; before wake_at it is at most half full. */
static void fast_refresh(struct trk_thread *t)
{
    uint64_t size = t->ring_mask + 1;
    uint64_t c = atomic_load_explicit(&t->consumed, memory_order_acquire);
    uint64_t lap_end = (t->head | t->ring_mask) + 1;
    uint64_t lim = c + size < lap_end ? c + size : lap_end;
    t->fast_end = lim - TRK_REC_MAX + 1;
    t->wake_at = c + size / 2 + 1;
}

/* The smallest d with ns0 + (d * mult >> 32) >= ts + quantum, or less
 * (never more): below it trk_tsc_ns_at reads less than a quantum past ts,
 * which makes trk_heap_ts_at return ts and the compact step 0, exactly.
 * d * mult < T << 32 is (d * mult) >> 32 < T, T = ts + quantum - ns0. A
 * 128-bit division, once per quantum or fit. */
uint64_t trk_heap_q_span(const struct trk_tsc_fit *f, uint64_t ts)
{
    uint64_t lim = ts + TRK_HEAP_TS_QUANTUM_NS;
    if (lim < ts || lim <= f->ns0) /* no reading of f is that early */
        return 0;
    if (!f->mult)
        return UINT64_MAX;
    unsigned __int128 num = (unsigned __int128)(lim - f->ns0) << 32;
    unsigned __int128 q = num / f->mult;
    if (q * f->mult < num)
        q++;
    return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
}

/* After a record of the general path: the fast path's bounds from a fresh
 * look at consumed, and the quantum in ticks for the stream's new ts under
 * the current fit. */
static void fast_refresh_all(struct trk_thread *t)
{
    fast_refresh(t);
    const struct trk_tsc_fit *f = trk_heap_coarse
                                      ? &trk_coarse_fit
                                      : atomic_load_explicit(&trk_clock_fit, memory_order_acquire);
    if (f) {
        t->q_tsc0 = f->tsc0;
        t->q_span = trk_heap_q_span(f, t->enc.ts);
    }
}

/* head reached wake_at: trk_ring_maybe_wake's check with a fresh consumed.
 * While the ring stays past half full (a writer that is behind, already
 * woken), the next check is a sixteenth of the ring later rather than at
 * every event: the ring is then at most 9/16 full when a writer that
 * drained it and cleared wake_sent is woken again. */
__attribute__((noinline)) void trk_ev_fast_wake(struct trk_thread *t)
{
    int saved = *t->errnop; /* trk_ev_free keeps errno (events.h) */
    trk_ring_maybe_wake(t);
    *t->errnop = saved;
    fast_refresh(t);
    uint64_t next = t->head + (t->ring_mask + 1) / 16;
    if (t->wake_at < next)
        t->wake_at = next;
}

__attribute__((noinline)) uint8_t *trk_ev_enc_alloc_long(uint8_t *p, struct trk_rec_state *st,
                                                         unsigned kind, uint64_t seq, uint64_t ts,
                                                         uint64_t addr, uint64_t size,
                                                         uint64_t stack)
{
    return trk_enc_alloc_long(p, st, kind, seq, ts, addr, size, stack);
}

__attribute__((noinline)) uint8_t *trk_ev_enc_free_long(uint8_t *p, struct trk_rec_state *st,
                                                        unsigned kind, uint64_t seq, uint64_t ts,
                                                        uint64_t addr)
{
    return trk_enc_free_long(p, st, kind, seq, ts, addr);
}

__attribute__((noinline)) void trk_ev_alloc_slow(struct trk_thread *t, unsigned kind, const void *p,
                                                 size_t size, uint32_t stack, uint64_t seq)
{
    uint8_t scratch[TRK_REC_MAX];
    trk_nested_before(t, seq);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_alloc(b, &t->enc, kind, seq, trk_heap_ts(t), (uintptr_t)p, size, stack);
    trk_rec_end(t, b, e, scratch, seq);
    fast_refresh_all(t);
}

void trk_ev_alloc(struct trk_thread *t, unsigned kind, const void *p, size_t size, uint32_t stack)
{
    trk_ev_alloc_inline(t, kind, p, size, stack);
}

__attribute__((noinline)) void trk_ev_free_slow(struct trk_thread *t, unsigned kind, uint64_t seq,
                                                const void *p)
{
    uint8_t scratch[TRK_REC_MAX];
    int saved = *t->errnop; /* trk_ev_free keeps errno (events.h) */
    trk_nested_before(t, seq);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_free(b, &t->enc, kind, seq, trk_heap_ts(t), (uintptr_t)p);
    trk_rec_end(t, b, e, scratch, seq);
    fast_refresh_all(t);
    *t->errnop = saved;
}

void trk_ev_free_at(struct trk_thread *t, unsigned kind, uint64_t seq, const void *p)
{
    struct trk_fast_clock c = trk_fast_clock_read();
    trk_ev_free_with(t, kind, seq, p, &c);
}

/* Not through trk_ev_free_at: a call less on every free. */
void trk_ev_free(struct trk_thread *t, unsigned kind, const void *p)
{
    trk_ev_free_inline(t, kind, p);
}

void trk_ev_realloc(struct trk_thread *t, unsigned kind, uint64_t seq, const void *old,
                    const void *new_ptr, size_t size, uint32_t stack)
{
    uint8_t scratch[TRK_REC_MAX];
    uint64_t seq2 = trk_ev_seq();
    trk_nested_before(t, seq);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_realloc(b, &t->enc, kind, seq, seq2, trk_heap_ts(t), (uintptr_t)old,
                                 (uintptr_t)new_ptr, size, stack);
    trk_rec_end(t, b, e, scratch, seq2);
}

void trk_ev_mmap(struct trk_thread *t, const void *p, size_t len, int prot, int flags, int file,
                 uint32_t stack)
{
    uint8_t scratch[TRK_REC_MAX];
    uint64_t seq = trk_ev_begin(t);
    trk_nested_before(t, seq);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_mmap(b, &t->enc, seq, trk_now_ns(), (uintptr_t)p, len, (uint32_t)prot,
                              (uint32_t)flags, file, stack);
    trk_rec_end(t, b, e, scratch, seq);
}

void trk_ev_munmap_at(struct trk_thread *t, uint64_t seq, const void *p, size_t len)
{
    uint8_t scratch[TRK_REC_MAX];
    trk_nested_before(t, seq);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_munmap(b, &t->enc, seq, trk_now_ns(), (uintptr_t)p, len);
    trk_rec_end(t, b, e, scratch, seq);
}

void trk_ev_mremap(struct trk_thread *t, uint64_t seq, const void *old, size_t oldlen,
                   const void *new_ptr, size_t newlen, int flags, uint32_t stack)
{
    uint8_t scratch[TRK_REC_MAX];
    uint64_t seq2 = trk_ev_seq();
    trk_nested_before(t, seq);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_mremap(b, &t->enc, seq, seq2, trk_now_ns(), (uintptr_t)old, oldlen,
                                (uintptr_t)new_ptr, newlen, (uint32_t)flags, stack);
    trk_rec_end(t, b, e, scratch, seq2);
}

void trk_ev_thread_start(struct trk_thread *t)
{
    uint8_t scratch[TRK_REC_MAX];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_thread(b, &t->enc, seq, trk_now_ns(), (uint64_t)t->tid,
                                trk_tl_internal ? TRK_THREAD_INTERNAL : 0);
    trk_rec_end(t, b, e, scratch, seq);
}

void trk_ev_thread_name(struct trk_thread *t, pid_t tid, const char *name)
{
    uint8_t buf[TRK_REC_MAX + TRK_THREAD_NAME_MAX];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *e = trk_enc_thread_name(buf, &t->enc, seq, trk_now_ns(), (uint64_t)tid, name,
                                     strnlen(name, TRK_THREAD_NAME_MAX));
    trk_ev_finish(t, buf, (size_t)(e - buf), seq);
}

void trk_ev_thread_exit(struct trk_thread *t)
{
    uint8_t scratch[TRK_REC_MAX];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_thread_exit(b, &t->enc, seq, trk_now_ns());
    trk_rec_end(t, b, e, scratch, seq);
}

void trk_ev_rss(struct trk_thread *t, uint64_t anon, uint64_t file)
{
    uint8_t scratch[TRK_REC_MAX];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_rss(b, &t->enc, seq, trk_now_ns(), anon, file);
    trk_rec_end(t, b, e, scratch, seq);
}

void trk_ev_lost(struct trk_thread *t, uint64_t count)
{
    uint8_t scratch[TRK_REC_MAX];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_lost(b, &t->enc, seq, trk_now_ns(), count);
    trk_rec_end(t, b, e, scratch, seq);
}
