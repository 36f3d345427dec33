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

/* Forgets the calling thread's generator and countdown (unit tests). */
void trk_sample_thread_reset(void) TRK_HIDDEN;

/* The slow path: the countdown reached zero within an allocation of size
 * bytes (or the thread has not drawn yet). Returns 1 when the allocation is
 * sampled, with the countdown redrawn. */
int trk_sample_hit(struct trk_thread *t, int64_t size) TRK_HIDDEN;

/* The stack of an unsampled allocation: its call site alone. */
static inline uint32_t trk_stack_callsite(struct trk_thread *t, uintptr_t ra)
{
    uintptr_t ip = ra | (uintptr_t)TRK_IP_CALLSITE;
    return trk_stack_intern(t, &ip, 1);
}

/* The stack to record for an allocation of size bytes made by the hook this
 * is inlined into: the whole stack when sampling is off or this allocation
 * is sampled, else its call site. */
__attribute__((always_inline)) static inline uint32_t trk_stack_sized(struct trk_thread *t,
                                                                      size_t size)
{
    uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    if (TRK_LIKELY(!trk_cfg.sample_bytes))
        return trk_stack_from(t, ra);
    int64_t s = size > (size_t)INT64_MAX / 4 ? INT64_MAX / 4 : (int64_t)size;
    int64_t left = trk_tl_sample_left - s;
    if (TRK_LIKELY(left > 0)) {
        trk_tl_sample_left = left;
        return trk_stack_callsite(t, ra);
    }
    return trk_sample_hit(t, s) ? trk_stack_from(t, ra) : trk_stack_callsite(t, ra);
}

#endif /* TRK_CAPTURE_SAMPLE_H */
