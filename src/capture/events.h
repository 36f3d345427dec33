/* SPDX-License-Identifier: MIT
 *
 * events.h - the per-thread ring and the record emitters (events.c), the
 * clock (clock.c).
 */
#ifndef TRK_CAPTURE_EVENTS_H
#define TRK_CAPTURE_EVENTS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "capture/thread.h"

/* ---- Ring and events (events.c) ------------------------------------------ */

/* Appends len bytes to the thread's ring, waiting for the writer when full.
 * Returns 0, or -1 when the bytes were dropped (writer gone). */
int trk_ring_put(struct trk_thread *t, const uint8_t *buf, size_t len) TRK_HIDDEN;

/* Waits until len bytes are free (without writing). -1 if that cannot be. */
int trk_ring_reserve(struct trk_thread *t, size_t len) TRK_HIDDEN;

static inline size_t trk_ring_free(struct trk_thread *t)
{
    return (size_t)(t->ring_mask + 1 -
                    (t->head - atomic_load_explicit(&t->consumed, memory_order_acquire)));
}

static inline void trk_commit(struct trk_thread *t)
{
    atomic_store_explicit(&t->committed, t->head, memory_order_release);
}

/* CLOCK_MONOTONIC ns, from the TSC where the kernel trusts it, else from
 * CLOCK_MONOTONIC_COARSE (clock.c). */
uint64_t trk_now_ns(void) TRK_HIDDEN;

/* The TSC fit trk_now_ns converts with (clock.c); NULL while there is none
 * (coarse clock, or before the first fit). The event fast path (events.c)
 * reads it inline: a call to trk_now_ns made the emitters non-leaf
 * functions that save and restore five registers per event. tsc0 names a
 * fit: each new one is anchored at a later TSC reading than the last
 * (clock.c), and the fast path's quantum in ticks (thread.h's q_tsc0,
 * ev_inline.h) holds only under the fit it was computed for. */
struct trk_tsc_fit {
    uint64_t tsc0;
    uint64_t ns0;
    uint64_t mult; /* ns per tick, 32.32 fixed point */
};
extern _Atomic(struct trk_tsc_fit *) trk_clock_fit TRK_HIDDEN;

/* ns of a TSC reading under fit f. */
static inline uint64_t trk_tsc_ns_at(const struct trk_tsc_fit *f, uint64_t tsc)
{
    return f->ns0 + (uint64_t)(((unsigned __int128)(tsc - f->tsc0) * f->mult) >> 32);
}

static inline uint64_t trk_tsc_ns(const struct trk_tsc_fit *f)
{
    return trk_tsc_ns_at(f, __builtin_ia32_rdtsc());
}
enum { TRK_CLOCK_TSC = 1, TRK_CLOCK_COARSE = 2 };

/* Heap events' fast path (ev_inline.h) reads the kernel's coarse clock, not
 * the TSC, unless TRACKER_HEAP_TSC=1 (clock.c says why): set once by
 * trk_config_load, before any thread but the first allocates. */
extern int trk_heap_coarse TRK_HIDDEN;
/* The fit the fast path uses then: its "ticks" are the coarse clock's ns. */
extern const struct trk_tsc_fit trk_coarse_fit TRK_HIDDEN;

static inline uint64_t trk_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* Picks the source (TRK_CLOCK_*) from the CPU and the kernel's clocksource
 * lists; returns it. */
int trk_clock_init(void) TRK_HIDDEN;
/* The decision alone: invariant_tsc from cpuid, the two sysfs strings. */
int trk_clock_pick(int invariant_tsc, const char *current, const char *available) TRK_HIDDEN;
/* Switches to a source (trk_clock_init's choice; tests force one). */
void trk_clock_use(int mode) TRK_HIDDEN;
void trk_clock_recalibrate(void) TRK_HIDDEN;

/* Opens an event window: publishes the floor and takes a seq. */
static inline uint64_t trk_ev_begin(struct trk_thread *t)
{
    atomic_store_explicit(&t->floor, t->last_seq + 1, memory_order_relaxed);
    return atomic_fetch_add_explicit(&trk_seq, 1, memory_order_seq_cst);
}

static inline uint64_t trk_ev_seq(void)
{
    return atomic_fetch_add_explicit(&trk_seq, 1, memory_order_seq_cst);
}

/* Writes an encoded record of the open window, commits it and closes it. */
void trk_ev_finish(struct trk_thread *t, const uint8_t *buf, size_t len,
                   uint64_t last_seq) TRK_HIDDEN;

void trk_writer_wake(void) TRK_HIDDEN;

/* Wakes the writer once the ring is past half full, once per drain rather
 * than per event: a futex wake is a syscall. The writer clears wake_sent
 * when it drains the ring. */
static inline void trk_ring_maybe_wake(struct trk_thread *t)
{
    if (TRK_UNLIKELY(t->head - atomic_load_explicit(&t->consumed, memory_order_relaxed) >
                     (t->ring_mask + 1) / 2) &&
        !atomic_load_explicit(&t->wake_sent, memory_order_relaxed)) {
        atomic_store_explicit(&t->wake_sent, 1, memory_order_relaxed);
        trk_writer_wake();
    }
}

/* Most records are encoded straight into the ring: trk_rec_begin returns
 * where to encode one of at most `room` bytes, the ring itself when it fits
 * without wrapping, else `scratch` (then trk_rec_end copies it through
 * trk_ev_finish). Avoiding the copy matters: the preload is built
 * -fno-builtin, so every memcpy is a libc call on the hot path. */
static inline uint8_t *trk_rec_begin(struct trk_thread *t, uint8_t *scratch, size_t room)
{
    uint64_t size = t->ring_mask + 1, off = t->head & t->ring_mask;
    uint64_t used = t->head - atomic_load_explicit(&t->consumed, memory_order_acquire);
    if (TRK_LIKELY(size - off >= room && size - used >= room))
        return t->ring + off;
    return scratch;
}

/* Publishes the record encoded in [start, end) and closes the event window. */
static inline void trk_rec_end(struct trk_thread *t, uint8_t *start, uint8_t *end, uint8_t *scratch,
                               uint64_t last_seq)
{
    if (TRK_UNLIKELY(start == scratch)) {
        trk_ev_finish(t, scratch, (size_t)(end - scratch), last_seq);
        return;
    }
    t->head += (uint64_t)(end - start);
    trk_ring_maybe_wake(t);
    t->last_seq = last_seq;
    trk_commit(t);
    atomic_store_explicit(&t->floor, UINT64_MAX, memory_order_release);
}

static inline void trk_ev_abort(struct trk_thread *t)
{
    atomic_store_explicit(&t->floor, UINT64_MAX, memory_order_release);
}

void trk_ev_alloc(struct trk_thread *t, unsigned kind, const void *p, size_t size,
                  uint32_t stack) TRK_HIDDEN;
/* Keeps errno (the free hooks rely on it, hook.h). */
void trk_ev_free(struct trk_thread *t, unsigned kind, const void *p) TRK_HIDDEN;
void trk_ev_free_at(struct trk_thread *t, unsigned kind, uint64_t seq, const void *p) TRK_HIDDEN;
void trk_ev_realloc(struct trk_thread *t, unsigned kind, uint64_t seq, const void *old,
                    const void *new_ptr, size_t size, uint32_t stack) TRK_HIDDEN;
void trk_ev_mmap(struct trk_thread *t, const void *p, size_t len, int prot, int flags, int file,
                 uint32_t stack) TRK_HIDDEN;
void trk_ev_munmap_at(struct trk_thread *t, uint64_t seq, const void *p, size_t len) TRK_HIDDEN;
void trk_ev_mremap(struct trk_thread *t, uint64_t seq, const void *old, size_t oldlen,
                   const void *new_ptr, size_t newlen, int flags, uint32_t stack) TRK_HIDDEN;
void trk_ev_thread_start(struct trk_thread *t) TRK_HIDDEN;
void trk_ev_thread_name(struct trk_thread *t, pid_t tid, const char *name) TRK_HIDDEN;
void trk_ev_thread_exit(struct trk_thread *t) TRK_HIDDEN;
void trk_ev_rss(struct trk_thread *t, uint64_t anon, uint64_t file) TRK_HIDDEN;
void trk_ev_lost(struct trk_thread *t, uint64_t count) TRK_HIDDEN;

#endif /* TRK_CAPTURE_EVENTS_H */
