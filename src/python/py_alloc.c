/* SPDX-License-Identifier: MIT
 *
 * py_alloc.c - `--python-allocators`: wraps CPython's MEM and OBJ allocator
 * domains (pymalloc) so that each Python object is an event of its own,
 * instead of a share of a 1 MiB arena.
 *
 * The wrapped allocator runs under the internal guard, so what pymalloc
 * itself asks of malloc or mmap (large objects, arenas) is not recorded a
 * second time: with this option the object is the unit. The RAW domain is
 * left alone; it is malloc, which the malloc hooks see anyway. Same event
 * order rules as hooks_malloc.c: a release is recorded before the memory is
 * returned, an acquisition after it was obtained. Never allocates.
 */
#include <errno.h>

#include "capture/hook.h"
#include "python/py_capi.h"

static struct trk_py_memalloc orig_mem, orig_obj;

__thread int trk_py_obj_event TRK_TLS;

/* The event's stack, with the object flag up for py_stack.c. */
TRK_HOOK_INLINE void *alloc_end(struct trk_thread *t, unsigned kind, void *p, size_t n)
{
    trk_py_obj_event = 1;
    p = trk_hook_alloc_end(t, kind, p, n);
    trk_py_obj_event = 0;
    return p;
}

static inline void inner(void)
{
    trk_guard_set(TRK_GUARD_INTERNAL);
}

static inline void outer(void)
{
    trk_guard_set(TRK_GUARD_HOOK);
}

static void *w_malloc(void *ctx, size_t n)
{
    struct trk_py_memalloc *o = ctx;
    struct trk_thread *t = trk_enter();
    if (!t)
        return o->malloc(o->ctx, n);
    inner();
    void *p = o->malloc(o->ctx, n);
    outer();
    return alloc_end(t, TRK_ALLOC_PYMALLOC, p, n);
}

static void *w_calloc(void *ctx, size_t n, size_t size)
{
    struct trk_py_memalloc *o = ctx;
    struct trk_thread *t = trk_enter();
    if (!t)
        return o->calloc(o->ctx, n, size);
    inner();
    void *p = o->calloc(o->ctx, n, size);
    outer();
    return alloc_end(t, TRK_ALLOC_PYCALLOC, p, n * size);
}

/* pymalloc's realloc(p, 0) keeps a (minimal) block, unlike libc's. */
static void *w_realloc(void *ctx, void *p, size_t n)
{
    struct trk_py_memalloc *o = ctx;
    struct trk_thread *t = trk_enter();
    if (!t)
        return o->realloc(o->ctx, p, n);
    void *q;
    int saved;
    trk_py_obj_event = 1;
    if (!p) {
        inner();
        q = o->realloc(o->ctx, p, n);
        outer();
        saved = errno;
        if (q)
            trk_ev_alloc(t, TRK_ALLOC_PYREALLOC, q, n, trk_stack_sized(t, n));
    } else {
        uint32_t stack = trk_stack_sized(t, n);
        uint64_t seq = trk_ev_begin(t);
        inner();
        q = o->realloc(o->ctx, p, n);
        outer();
        saved = errno;
        if (q)
            trk_ev_realloc(t, TRK_ALLOC_PYREALLOC, seq, p, q, n, stack);
        else
            trk_ev_abort(t);
    }
    trk_py_obj_event = 0;
    trk_leave();
    errno = saved;
    return q;
}

static void w_free(void *ctx, void *p)
{
    struct trk_py_memalloc *o = ctx;
    if (!p) {
        o->free(o->ctx, p);
        return;
    }
    struct trk_thread *t = trk_enter();
    if (!t) {
        o->free(o->ctx, p);
        return;
    }
    int saved = errno;
    trk_ev_free(t, TRK_ALLOC_PYFREE, p);
    inner();
    o->free(o->ctx, p);
    outer();
    trk_leave();
    errno = saved;
}

static void wrap(int domain, struct trk_py_memalloc *orig)
{
    trk_pyapi.Mem_GetAllocator(domain, orig);
    struct trk_py_memalloc w = {orig, w_malloc, w_calloc, w_realloc, w_free};
    trk_pyapi.Mem_SetAllocator(domain, &w);
}

/* Runs in the preload constructor, before Py_Initialize: every block the
 * domains ever hand out goes through the wrappers, so every free matches. */
void trk_py_alloc_install(void)
{
    wrap(TRK_PYMEM_DOMAIN_MEM, &orig_mem);
    wrap(TRK_PYMEM_DOMAIN_OBJ, &orig_obj);
}
