/* SPDX-License-Identifier: MIT
 *
 * sample.h - Poisson sampling per byte (`tracker run --sample-bytes N`),
 * the way heapprofd and tcmalloc sample: each thread counts down a number
 * of bytes drawn from an exponential distribution of mean N; the allocation
 * during which the count reaches zero is sampled and gets its whole stack
 * (native and Python), every other one only its call site, one interned
 * node whose ip carries TRK_IP_CALLSITE (docs/FORMAT.md §5). Every event is
 * still recorded, so counts and byte totals stay exact; the reader scales
 * the sampled stacks (an allocation of s bytes is sampled with probability
 * 1 - exp(-s/N)). Owns the per-thread countdown and generator (sample.c);
 * must not allocate, take locks or call libc's rand.
 */
#ifndef TRK_CAPTURE_SAMPLE_H
#define TRK_CAPTURE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "capture/config.h"
#include "capture/stacks.h"
#include "format/format.h"

/* Bytes left before the thread's next sample point; <= 0 until the thread's
 * first draw (sample.c seeds it then). */
extern __thread int64_t trk_tl_sample_left TRK_TLS TRK_HIDDEN;

/* Seeds the process (config.c, once sample_bytes and sample_seed are read). */
void trk_sample_init(void) TRK_HIDDEN;

/* The calling thread is ending: its call-site memo (static TLS, counted in
 * the tracker's own memory once used) goes with it. Later allocations of
 * the thread keep using it uncounted. */
void trk_sample_thread_gone(void) TRK_HIDDEN;

/* Forgets the calling thread's generator and countdown (unit tests). */
void trk_sample_thread_reset(void) TRK_HIDDEN;

/* The slow path: the countdown reached zero within an allocation of size
 * bytes (or the thread has not drawn yet). Returns 1 when the allocation is
 * sampled, with the countdown redrawn. */
int trk_sample_hit(struct trk_thread *t, int64_t size) TRK_HIDDEN;

/* A small direct-mapped memo in front of the stack cache for call sites:
 * an unsampled allocation is most allocations of a sampled run, and
 * hashing a one-frame stack into the 4096-entry cache cost ~60
 * instructions (callgrind) where this costs ~12. Its entries belong to
 * (state, cache_epoch) owner: a new epoch (a recycled state, a fork
 * child's fresh trie) forgets them all. Both change only in thread_reset,
 * which the thread itself runs and which empties its memo
 * (trk_sample_memo_forget), so a hit needs no owner check. 16 entries keep
 * the static TLS small (the library is in every traced process). */
#define TRK_CALLSITE_MEMO 16
struct trk_callsite_memo {
    const struct trk_thread *owner;
    uint16_t epoch;
    struct {
        uintptr_t ra;
        uint32_t id;
    } e[TRK_CALLSITE_MEMO];
};
extern __thread struct trk_callsite_memo trk_tl_callsite TRK_TLS TRK_HIDDEN;

uint32_t trk_stack_callsite_slow(struct trk_thread *t, uintptr_t ra) TRK_HIDDEN;

/* The calling thread starts on a new state or epoch (thread.c's
 * thread_reset): its memo's ids are not that state's. */
void trk_sample_memo_forget(void) TRK_HIDDEN;

/* The stack of an unsampled allocation: its call site alone. */
static inline uint32_t trk_stack_callsite(struct trk_thread *t, uintptr_t ra)
{
    struct trk_callsite_memo *m = &trk_tl_callsite;
    unsigned i = (unsigned)((ra >> 2) ^ (ra >> 7)) & (TRK_CALLSITE_MEMO - 1);
    if (TRK_LIKELY(m->e[i].ra == ra))
        return m->e[i].id;
    return trk_stack_callsite_slow(t, ra);
}

/* The stack to record for an allocation of size bytes made by the hook this
 * is inlined into: the whole stack when sampling is off or this allocation
 * is sampled, else its call site. */
__attribute__((always_inline)) static inline uint32_t trk_stack_sized(struct trk_thread *t,
                                                                      size_t size)
{
    uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0); /* the walk starts at ra (unwind.c) */
    if (TRK_LIKELY(!trk_cfg.sample_bytes))
        return trk_stack_from(t, ra, fp);
    int64_t s = size > (size_t)INT64_MAX / 4 ? INT64_MAX / 4 : (int64_t)size;
    int64_t left = trk_tl_sample_left - s;
    if (TRK_LIKELY(left > 0)) {
        trk_tl_sample_left = left;
        return trk_stack_callsite(t, ra);
    }
    return trk_sample_hit(t, s) ? trk_stack_from(t, ra, fp) : trk_stack_callsite(t, ra);
}

#endif /* TRK_CAPTURE_SAMPLE_H */
