/* SPDX-License-Identifier: MIT
 *
 * preinit.h - allocations made before the preload's constructor runs
 * (preinit.c): other libraries' constructors run first (libstdc++'s
 * emergency exception pool, a library's own start-up leak), when there is
 * no capture to write to yet. The hooks keep them here, with their stacks,
 * and the constructor replays them as the capture's first events.
 */
#ifndef TRK_CAPTURE_PREINIT_H
#define TRK_CAPTURE_PREINIT_H

#include <stdatomic.h>
#include <stdint.h>

#include "capture/thread.h"

enum { TRK_PRE_ALLOC = 1, TRK_PRE_FREE, TRK_PRE_REALLOC };

extern _Atomic int trk_preinit_closed TRK_HIDDEN;

/* In a hook whose trk_enter returned NULL: whether this call is the
 * program's, made before the constructor (then the hook calls the
 * allocator under trk_guard_enter_internal and logs it with
 * trk_preinit_log). Always inlined: one load on that path only. */
__attribute__((always_inline)) static inline int trk_preinit_here(void)
{
    return TRK_UNLIKELY(!atomic_load_explicit(&trk_preinit_closed, memory_order_relaxed)) &&
           trk_guard_get() == 0;
}

/* Keeps one call: op TRK_PRE_*, addr the block (realloc: the new one, old
 * the one it replaced), ra the hook's return address (the caller's frame
 * starts the stack). Under the internal guard; async-signal-safe. */
void trk_preinit_log(unsigned op, unsigned kind, uintptr_t addr, uintptr_t old, uint64_t size,
                     uintptr_t ra) TRK_HIDDEN;

/* Ends the log: replays the kept calls into t's stream, in the order they
 * were made, and counts those that did not fit as lost (t may be NULL:
 * not tracking, they are dropped). Later calls are not kept. Once. */
void trk_preinit_replay(struct trk_thread *t) TRK_HIDDEN;

#endif /* TRK_CAPTURE_PREINIT_H */
