/* SPDX-License-Identifier: MIT
 *
 * hook.h - the shared tails of the allocator hooks (src/preload's libc,
 * C++ and jemalloc hooks, src/python's allocator wrappers): record the
 * call, leave, and give the program back the errno its allocator set
 * (recording may make syscalls that change it). Always inlined, so
 * trk_stack's return address is the hook's own caller, and so is the
 * ALLOC/FREE emitters' fast path (ev_inline.h): no call per event.
 */
#ifndef TRK_CAPTURE_HOOK_H
#define TRK_CAPTURE_HOOK_H

#include <errno.h>
#include <stddef.h>

#include "capture/ev_inline.h"
#include "capture/events.h"
#include "capture/sample.h"
#include "capture/stacks.h"

/* Ends a hook whose allocator call returned p (NULL: it failed): records
 * the block with the caller's stack (its call site only when sampling
 * passed it over, sample.h), leaves the hook, returns p. */
TRK_HOOK_INLINE void *trk_hook_alloc_end(struct trk_thread *t, unsigned kind, void *p, size_t size)
{
    int *err = t->errnop, saved = *err;
    if (p)
        trk_ev_alloc_inline(t, kind, p, size, trk_stack_sized(t, size));
    trk_leave();
    *err = saved;
    return p;
}

/* Records a free (before the block is released) with errno kept: by
 * the emitter itself, whose fast path makes no call that could change it
 * and whose slow paths keep it (events.c), so that the hook saves no
 * registers for it. */
TRK_HOOK_INLINE void trk_hook_free(struct trk_thread *t, unsigned kind, const void *p)
{
    trk_ev_free_inline(t, kind, p);
}

#endif /* TRK_CAPTURE_HOOK_H */
