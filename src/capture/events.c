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
 * Their fast path is a leaf function: no call, so nothing to save and
 * restore around one (a call to trk_now_ns and the scratch buffer's frame
 * cost ~40 instructions per event, callgrind). It applies when no nested
 * call waits to be published (nested.c), the clock is the TSC fit and the
 * record fits the ring without wrapping or waiting; any other event takes
 * the general path below, which writes the same record. */

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

/* head reached wake_at: trk_ring_maybe_wake's check with a fresh consumed.
 * While the ring stays past half full (a writer that is behind, already
 * woken), the next check is a sixteenth of the ring later rather than at
 * every event: the ring is then at most 9/16 full when a writer that
 * drained it and cleared wake_sent is woken again. */
static __attribute__((noinline)) void fast_wake(struct trk_thread *t)
{
    int saved = *t->errnop; /* trk_ev_free keeps errno (events.h) */
    trk_ring_maybe_wake(t);
    *t->errnop = saved;
    fast_refresh(t);
    uint64_t next = t->head + (t->ring_mask + 1) / 16;
    if (t->wake_at < next)
        t->wake_at = next;
}

/* The fast path's clock: the fit and a TSC reading, taken before the seq.
 * The lock xadd that takes the seq holds back the instructions after it,
 * rdtsc included, which then cost ~25 ns more per event than read ahead of
 * it, overlapped (allocbench CPU 2.97x -> 2.78x with 1 thread, 3.08x ->
 * 2.74x with 2). The reading is still inside the hook: after the
 * allocator returned a block, before a block goes back (docs/FORMAT.md
 * §4.2's bound; a signal handler's event in between is what the encoder's
 * clamp is for). */
struct fast_clock {
    const struct trk_tsc_fit *f;
    uint64_t tsc;
};

static inline struct fast_clock fast_clock_read(void)
{
    struct fast_clock c = {atomic_load_explicit(&trk_clock_fit, memory_order_acquire),
                           __builtin_ia32_rdtsc()};
    return c;
}

/* Whether the fast path applies: no nested call waits to be published
 * (nested.c), the clock is the TSC fit and the record fits in place. */
static inline int fast_ok(const struct trk_thread *t, const struct fast_clock *c)
{
    return TRK_LIKELY(c->f != NULL) &&
           TRK_LIKELY(atomic_load_explicit(&t->ntail, memory_order_relaxed) == t->nhead) &&
           TRK_LIKELY(t->head < t->fast_end);
}

/* trk_rec_end without the scratch case. */
static inline void fast_end(struct trk_thread *t, const uint8_t *b, const uint8_t *e, uint64_t seq)
{
    uint64_t head = t->head + (uint64_t)(e - b);
    t->head = head;
    t->last_seq = seq;
    atomic_store_explicit(&t->committed, head, memory_order_release);
    atomic_store_explicit(&t->floor, UINT64_MAX, memory_order_release);
    if (TRK_UNLIKELY(head >= t->wake_at))
        fast_wake(t);
}

static __attribute__((noinline)) void alloc_slow(struct trk_thread *t, unsigned kind, const void *p,
                                                 size_t size, uint32_t stack, uint64_t seq)
{
    uint8_t scratch[TRK_REC_MAX];
    trk_nested_before(t, seq);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_alloc(b, &t->enc, kind, seq, trk_heap_ts(t), (uintptr_t)p, size, stack);
    trk_rec_end(t, b, e, scratch, seq);
    fast_refresh(t);
}

void trk_ev_alloc(struct trk_thread *t, unsigned kind, const void *p, size_t size, uint32_t stack)
{
    struct fast_clock c = fast_clock_read();
    uint64_t seq = trk_ev_begin(t);
    if (TRK_UNLIKELY(!fast_ok(t, &c))) {
        alloc_slow(t, kind, p, size, stack, seq);
        return;
    }
    uint8_t *b = t->ring + (t->head & t->ring_mask);
    uint64_t ts = trk_heap_ts_at(t, trk_tsc_ns_at(c.f, c.tsc));
    fast_end(t, b, trk_enc_alloc(b, &t->enc, kind, seq, ts, (uintptr_t)p, size, stack), seq);
}

static __attribute__((noinline)) void free_slow(struct trk_thread *t, unsigned kind, uint64_t seq,
                                                const void *p)
{
    uint8_t scratch[TRK_REC_MAX];
    int saved = *t->errnop; /* trk_ev_free keeps errno (events.h) */
    trk_nested_before(t, seq);
    uint8_t *b = trk_rec_begin(t, scratch, TRK_REC_MAX);
    uint8_t *e = trk_enc_free(b, &t->enc, kind, seq, trk_heap_ts(t), (uintptr_t)p);
    trk_rec_end(t, b, e, scratch, seq);
    fast_refresh(t);
    *t->errnop = saved;
}

__attribute__((always_inline)) static inline void free_at(struct trk_thread *t, unsigned kind,
                                                          uint64_t seq, const void *p,
                                                          const struct fast_clock *c)
{
    if (TRK_UNLIKELY(!fast_ok(t, c))) {
        free_slow(t, kind, seq, p);
        return;
    }
    uint8_t *b = t->ring + (t->head & t->ring_mask);
    uint64_t ts = trk_heap_ts_at(t, trk_tsc_ns_at(c->f, c->tsc));
    fast_end(t, b, trk_enc_free(b, &t->enc, kind, seq, ts, (uintptr_t)p), seq);
}

void trk_ev_free_at(struct trk_thread *t, unsigned kind, uint64_t seq, const void *p)
{
    struct fast_clock c = fast_clock_read();
    free_at(t, kind, seq, p, &c);
}

/* Not through trk_ev_free_at: a call less on every free. */
void trk_ev_free(struct trk_thread *t, unsigned kind, const void *p)
{
    struct fast_clock c = fast_clock_read();
    free_at(t, kind, trk_ev_begin(t), p, &c);
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
