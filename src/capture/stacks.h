/* SPDX-License-Identifier: MIT
 *
 * stacks.h - native stacks (stacks.c): unwinding, the interned trie, and the
 * provider hook through which a layer above builds stacks instead.
 */
#ifndef TRK_CAPTURE_STACKS_H
#define TRK_CAPTURE_STACKS_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "capture/thread.h"

/* ---- Stacks (stacks.c) ----------------------------------------------------- */

int trk_stacks_init(void) TRK_HIDDEN;
/* Unwinds the caller's stack (skipping the tracker's own frames) and returns
 * its interned id, 0 when no stack could be taken. ra is the hook's return
 * address and fp its frame pointer (we are built with frame pointers):
 * trk_stack, inlined into the hook, passes them, so that the walk starts at
 * the hook's caller (unwind.c checks fp before trusting it). */
uint32_t trk_stack_from(struct trk_thread *t, uintptr_t ra, uintptr_t fp) TRK_HIDDEN;

__attribute__((always_inline)) static inline uint32_t trk_stack(struct trk_thread *t)
{
    return trk_stack_from(t, (uintptr_t)__builtin_return_address(0),
                          (uintptr_t)__builtin_frame_address(0));
}
/* Unwinds the caller's native stack into t->ips, innermost first, without
 * the tracker's own frames; returns the count (at most max). */
int trk_stack_unwind(struct trk_thread *t, int max) TRK_HIDDEN;
/* The same into ips[0..max), with no thread state (before the constructor,
 * preinit.c): the tracker's frames are left in. */
int trk_stack_unwind_raw(uintptr_t *ips, int max) TRK_HIDDEN;
/* libunwind masks every signal around each of its cache and lookup
 * sections: two sigprocmask syscalls per frame on its slow path (a frame
 * the fast trace cannot follow, e.g. a signal that landed on a PLT stub).
 * During our own unwinds the preload's sigprocmask hands libunwind's calls
 * here instead: the first one blocks every signal for the rest of the
 * unwind, the others cost nothing (stacks.c). */
extern __thread int trk_tl_unw TRK_TLS TRK_HIDDEN;
int trk_unw_sigprocmask(int how, const sigset_t *set, sigset_t *old) TRK_HIDDEN;
static inline int trk_unw_calls(uintptr_t ra)
{
    return ra >= trk_unw_lo && ra < trk_unw_hi;
}
/* Another layer (src/python) may build stacks instead: when set, trk_stack
 * asks it first; it returns 1 with the interned id, or 0 to get the plain
 * native stack. */
typedef int (*trk_stack_provider_fn)(struct trk_thread *t, uint32_t *id);
extern _Atomic(trk_stack_provider_fn) trk_stack_provider TRK_HIDDEN;
/* Interns ips[0..n) (innermost first); emits STACK records for new nodes. */
uint32_t trk_stack_intern(struct trk_thread *t, const uintptr_t *ips, int n) TRK_HIDDEN;
void trk_stacks_thread_init(struct trk_thread *t) TRK_HIDDEN;
void trk_stacks_fork_prepare(void) TRK_HIDDEN;
void trk_stacks_fork_parent(void) TRK_HIDDEN;
void trk_stacks_fork_child(void) TRK_HIDDEN;

#endif /* TRK_CAPTURE_STACKS_H */
