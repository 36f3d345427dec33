/* SPDX-License-Identifier: MIT
 *
 * preload.h - what the preload's own files share: the export attribute of
 * the hooks, and the few entry points one hook file offers another. The
 * preload is the top layer: it may include every header below it.
 */
#ifndef TRK_PRELOAD_PRELOAD_H
#define TRK_PRELOAD_PRELOAD_H

#include <stdbool.h>

#include "capture/capture.h"
#include "prim/base.h"
#include "prim/guard.h"
#include "prim/real.h"
#include "prim/sys.h"

/* TRK_EXPORT (the hooks' attribute) is prim/base.h's. */

/* Says once on stderr when an allocator whose own entry points are not
 * hooked is loaded (hooks_cxx.c): in the whole process when handle is NULL,
 * else in the object just dlopen'ed. */
void trk_check_allocators(void *handle) TRK_HIDDEN;

/* Environment that exec'd children must see to be traced (hooks_proc.c). */
void trk_env_capture(void) TRK_HIDDEN;

/* The fork handlers (init.c), for the clone hook: a clone() without CLONE_VM
 * is a fork that pthread_atfork never sees. Prepare returns 0 when no
 * handlers apply (not tracking). */
int trk_clone_prepare(void) TRK_HIDDEN;
void trk_clone_parent(void) TRK_HIDDEN;
void trk_clone_child(void) TRK_HIDDEN;

/* Whether the first malloc in the search order is another object's (the
 * executable's own): then the program's heap is not seen, and nothing of
 * ours may make libc allocate for it (malloc_owner.c). Says so once. */
bool trk_malloc_foreign(void) TRK_HIDDEN;

/* Registers src/python and src/gpu with the capture engine (init.c), once. */
void trk_preload_wire_layers(void) TRK_HIDDEN;

#endif /* TRK_PRELOAD_PRELOAD_H */
