/* SPDX-License-Identifier: MIT
 *
 * guard.h - the per-thread re-entry guard, the one contract every
 * in-process layer keeps.
 *
 * trk_tl_guard says what the calling thread is doing inside the tracker:
 *
 *   0                   the program's own code: a hook records the call.
 *   TRK_GUARD_HOOK      a hook of the program's is recording (set by
 *                       trk_enter, src/capture/thread.h). A call arriving
 *                       meanwhile on this thread is a signal handler's (or
 *                       our unwinder's): kept aside or counted as lost,
 *                       never recorded inline.
 *   TRK_GUARD_INTERNAL  the tracker's own work (resolving symbols, opening
 *                       files, NVML, pymalloc's nested calls, our threads):
 *                       whatever libc does underneath is not the program's
 *                       and is neither recorded nor counted.
 *
 * Rules:
 *  1. Only this header writes trk_tl_guard. Code that does its own work
 *     from a hook or from a path a hook may reach brackets it:
 *         int saved = trk_guard_enter_internal();
 *         ... dlsym, open, driver calls ...
 *         trk_guard_leave(saved);
 *     which restores whatever was there (0, HOOK or INTERNAL), so the
 *     brackets nest and are safe from any state.
 *  2. trk_guard_set is for the few places that hand the thread from one
 *     state to the other on purpose: trk_enter/trk_leave, a hook calling
 *     the next allocator with INTERNAL and taking HOOK back, a tracker
 *     thread that is INTERNAL for good, the constructor's final clear.
 *  3. Others read it with trk_guard_get (0: the program's own code).
 *  4. The guard is initial-exec TLS and written with plain stores: a signal
 *     handler on the same thread sees it exactly as the interrupted code
 *     left it; other threads never read it.
 */
#ifndef TRK_PRIM_GUARD_H
#define TRK_PRIM_GUARD_H

#include "prim/base.h"

#define TRK_GUARD_HOOK     1
#define TRK_GUARD_INTERNAL 2

extern __thread int trk_tl_guard TRK_TLS TRK_HIDDEN;

static inline int trk_guard_get(void)
{
    return trk_tl_guard;
}

static inline int trk_guard_enter_internal(void)
{
    int saved = trk_tl_guard;
    trk_tl_guard = TRK_GUARD_INTERNAL;
    return saved;
}

static inline void trk_guard_leave(int saved)
{
    trk_tl_guard = saved;
}

static inline void trk_guard_set(int g)
{
    trk_tl_guard = g;
}

#endif /* TRK_PRIM_GUARD_H */
