/* SPDX-License-Identifier: MIT
 *
 * hooks_jemalloc.c - jemalloc's non-standard API: mallocx, rallocx, xallocx,
 * dallocx, sdallocx. Seen only when the program uses jemalloc (linked or
 * preloaded before us); the next definitions are looked up lazily because
 * jemalloc may also arrive later through dlopen.
 *
 * A program can find our mallocx even without jemalloc (a dlsym probe, say).
 * Then we emulate the call on the C API instead of crashing: alignment and
 * zeroing flags are honoured, which is all mallocx promises.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

#include "capture/hook.h"
#include "preload/preload.h"

#define LG_ALIGN_MASK 0x3f

static int lookup(void **slot, const char *name)
{
    if (!*slot)
        *slot = trk_resolve_one(name);
    return *slot != NULL;
}

#define HAVE(fn) lookup((void **)&trk_real.fn, #fn)

static void *emulate_mallocx(size_t size, int flags)
{
    size_t align = (flags & LG_ALIGN_MASK) ? (size_t)1 << (flags & LG_ALIGN_MASK) : 0;
    void *p = NULL;
    if (align > 16) {
        if (posix_memalign(&p, align, size ? size : 1))
            p = NULL;
    } else {
        p = malloc(size ? size : 1);
    }
    if (p && (flags & MALLOCX_ZERO))
        memset(p, 0, size);
    return p;
}

TRK_EXPORT void *mallocx(size_t size, int flags)
{
    if (!HAVE(mallocx))
        return emulate_mallocx(size, flags);
    struct trk_thread *t = trk_enter();
    if (!t)
        return trk_real.mallocx(size, flags);
    return trk_hook_alloc_end(t, TRK_ALLOC_MALLOCX, trk_real.mallocx(size, flags), size);
}

TRK_EXPORT void *rallocx(void *p, size_t size, int flags)
{
    if (!HAVE(rallocx)) {
        void *q = emulate_mallocx(size, flags);
        if (q && p) {
            size_t old = malloc_usable_size(p);
            memcpy(q, p, old < size ? old : size);
            free(p);
        }
        return q;
    }
    struct trk_thread *t = trk_enter();
    if (!t)
        return trk_real.rallocx(p, size, flags);
    uint32_t stack = trk_stack_sized(t, size);
    uint64_t seq = trk_ev_begin(t);
    void *q = trk_real.rallocx(p, size, flags);
    int saved = errno;
    if (q)
        trk_ev_realloc(t, TRK_ALLOC_RALLOCX, seq, p, q, size, stack);
    else
        trk_ev_abort(t);
    trk_leave();
    errno = saved;
    return q;
}

/* Resizes in place and returns the resulting usable size; the block keeps
 * its address, so it is recorded as a realloc to the same address. */
TRK_EXPORT size_t xallocx(void *p, size_t size, size_t extra, int flags)
{
    if (!HAVE(xallocx))
        return malloc_usable_size(p);
    struct trk_thread *t = trk_enter();
    if (!t)
        return trk_real.xallocx(p, size, extra, flags);
    uint32_t stack = trk_stack_sized(t, size);
    uint64_t seq = trk_ev_begin(t);
    size_t r = trk_real.xallocx(p, size, extra, flags);
    int saved = errno;
    trk_ev_realloc(t, TRK_ALLOC_XALLOCX, seq, p, p, r, stack);
    trk_leave();
    errno = saved;
    return r;
}

TRK_HOOK_INLINE void release(unsigned kind, void *p, size_t size, int flags)
{
    if (!p)
        return;
    struct trk_thread *t = trk_enter();
    if (t)
        trk_hook_free(t, kind, p);
    if (kind == TRK_ALLOC_SDALLOCX && HAVE(sdallocx))
        trk_real.sdallocx(p, size, flags);
    else if (kind == TRK_ALLOC_DALLOCX && HAVE(dallocx))
        trk_real.dallocx(p, flags);
    else if (t)
        trk_real.free(p); /* no jemalloc: the block came from malloc */
    else
        free(p);
    if (t)
        trk_leave();
}

TRK_EXPORT void dallocx(void *p, int flags)
{
    release(TRK_ALLOC_DALLOCX, p, 0, flags);
}

TRK_EXPORT void sdallocx(void *p, size_t size, int flags)
{
    release(TRK_ALLOC_SDALLOCX, p, size, flags);
}
