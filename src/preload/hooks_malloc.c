/* SPDX-License-Identifier: MIT
 *
 * hooks_malloc.c - the C allocation API: malloc, calloc, realloc,
 * reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc,
 * pvalloc, free_sized and free_aligned_sized.
 *
 * Each hook forwards to the next definition and records the result. Order
 * matters for the total order across threads (docs/FORMAT.md §3): a release
 * is recorded before the memory goes back to the allocator, an acquisition
 * after it came out. errno is preserved across our bookkeeping. C++
 * operator new/delete are accounted through these: libstdc++ implements them
 * on malloc/free/aligned_alloc through the PLT, even with -static-libstdc++.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "capture/hook.h"
#include "preload/preload.h"

#define ENSURE(fn)                                                                                 \
    do {                                                                                           \
        if (TRK_UNLIKELY(!trk_real.fn))                                                            \
            trk_resolve();                                                                         \
    } while (0)

#define TRK_RA() ((uintptr_t)__builtin_return_address(0))

/* Before our constructor (preinit.h): the allocator's call under our
 * guard, then the block logged with its stack. */
#define PREINIT_ALLOC(kind, call, size_expr)                                                       \
    do {                                                                                           \
        int was_ = trk_guard_enter_internal();                                                     \
        void *q_ = call;                                                                           \
        int saved_ = errno;                                                                        \
        if (q_)                                                                                    \
            trk_preinit_log(TRK_PRE_ALLOC, kind, (uintptr_t)q_, 0, size_expr, TRK_RA());           \
        trk_guard_leave(was_);                                                                     \
        errno = saved_;                                                                            \
        return q_;                                                                                 \
    } while (0)

/* Records an acquisition made by `call` (an expression yielding void *).
 * Made by a signal handler inside another hook, it is kept aside for that
 * hook to publish (nested.c). */
#define RECORD_ALLOC(kind, call, size_expr)                                                        \
    do {                                                                                           \
        struct trk_thread *t = trk_enter();                                                        \
        if (!t) {                                                                                  \
            if (trk_preinit_here())                                                                \
                PREINIT_ALLOC(kind, call, size_expr);                                              \
            if (!trk_nested_here())                                                                \
                return call;                                                                       \
            void *q = call;                                                                        \
            if (q)                                                                                 \
                trk_nested_put(TRK_NEV_ALLOC, kind, (uintptr_t)q, size_expr, TRK_RA());            \
            return q;                                                                              \
        }                                                                                          \
        void *p = call;                                                                            \
        return trk_hook_alloc_end(t, kind, p, size_expr);                                          \
    } while (0)

TRK_EXPORT void *malloc(size_t n)
{
    ENSURE(malloc);
    if (TRK_UNLIKELY(!trk_real.malloc))
        return trk_boot_alloc(n, 16);
    RECORD_ALLOC(TRK_ALLOC_MALLOC, trk_real.malloc(n), n);
}

TRK_EXPORT void *calloc(size_t n, size_t size)
{
    ENSURE(calloc);
    if (TRK_UNLIKELY(!trk_real.calloc)) {
        size_t total;
        if (__builtin_mul_overflow(n, size, &total))
            return NULL;
        return trk_boot_alloc(total, 16); /* the arena starts zeroed and is never reused */
    }
    RECORD_ALLOC(TRK_ALLOC_CALLOC, trk_real.calloc(n, size), n * size);
}

TRK_HOOK_INLINE void free_common(unsigned kind, void *p, void (*release)(void *, size_t, size_t),
                                 size_t a, size_t b)
{
    if (!p || trk_boot_owns(p))
        return;
    ENSURE(free);
    if (TRK_UNLIKELY(!trk_real.free))
        return;
    struct trk_thread *t = trk_enter();
    int pre = 0;
    if (t)
        trk_hook_free(t, kind, p);
    else if (trk_nested_here()) {
        trk_nested_put(TRK_NEV_FREE, kind, (uintptr_t)p, 0, TRK_RA());
    } else if (trk_preinit_here()) {
        pre = trk_guard_enter_internal() + 1;
        int saved = errno;
        trk_preinit_log(TRK_PRE_FREE, kind, (uintptr_t)p, 0, 0, TRK_RA());
        errno = saved;
    }
    if (release)
        release(p, a, b);
    else
        trk_real.free(p);
    if (t)
        trk_leave();
    else if (pre)
        trk_guard_leave(pre - 1);
}

TRK_EXPORT void free(void *p)
{
    free_common(TRK_ALLOC_FREE, p, NULL, 0, 0);
}

static void call_free_sized(void *p, size_t size, size_t unused)
{
    (void)unused;
    trk_real.free_sized(p, size);
}

static void call_free_aligned_sized(void *p, size_t align, size_t size)
{
    trk_real.free_aligned_sized(p, align, size);
}

void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

/* C23. glibc before 2.39 lacks them; programs built against a newer libc
 * still find ours, and then plain free is the right release. */
TRK_EXPORT void free_sized(void *p, size_t size)
{
    free_common(TRK_ALLOC_FREE_SIZED, p, trk_real.free_sized ? call_free_sized : NULL, size, 0);
}

TRK_EXPORT void free_aligned_sized(void *p, size_t align, size_t size)
{
    free_common(TRK_ALLOC_FREE_ALIGNED_SIZED, p,
                trk_real.free_aligned_sized ? call_free_aligned_sized : NULL, align, size);
}

/* A signal handler's realloc inside another hook: kept aside, with the
 * same two seqs as a recorded one. */
static void *realloc_nested(unsigned kind, void *p, size_t bytes, uintptr_t ra)
{
    struct trk_nested_ev *e =
        trk_nested_put(p ? TRK_NEV_REALLOC : TRK_NEV_ALLOC, kind, 0, bytes, ra);
    void *q = trk_real.realloc(p, bytes);
    if (!e)
        return q;
    if (!q) {
        if (p && bytes == 0) {
            e->op = TRK_NEV_FREE; /* realloc(p, 0) freed p */
            e->addr = (uintptr_t)p;
        } else {
            e->op = TRK_NEV_NONE;
        }
    } else {
        e->addr = (uintptr_t)q;
        if (p) {
            e->old = (uintptr_t)p;
            e->seq2 = trk_ev_seq();
        } else {
            e->seq = trk_ev_seq(); /* an acquisition: after the call */
        }
    }
    return q;
}

/* A realloc before our constructor (preinit.h): logged as what it did. */
static void *realloc_preinit(unsigned kind, void *p, size_t bytes, uintptr_t ra)
{
    int was = trk_guard_enter_internal();
    void *q = trk_real.realloc(p, bytes);
    int saved = errno;
    if (q)
        trk_preinit_log(p ? TRK_PRE_REALLOC : TRK_PRE_ALLOC, kind, (uintptr_t)q, (uintptr_t)p,
                        bytes, ra);
    else if (p && bytes == 0)
        trk_preinit_log(TRK_PRE_FREE, kind, (uintptr_t)p, 0, 0, ra);
    trk_guard_leave(was);
    errno = saved;
    return q;
}

/* realloc-like calls take their release seq before the call and their
 * acquisition seq after it (trk_ev_realloc), so address reuse by another
 * thread is ordered correctly on both sides. */
TRK_HOOK_INLINE void *realloc_common(unsigned kind, void *p, size_t bytes)
{
    if (TRK_UNLIKELY(trk_boot_owns(p))) {
        void *q = malloc(bytes);
        size_t old = trk_boot_size(p);
        if (q)
            memcpy(q, p, old < bytes ? old : bytes);
        return q;
    }
    ENSURE(realloc);
    struct trk_thread *t = trk_enter();
    if (!t) {
        if (trk_preinit_here())
            return realloc_preinit(kind, p, bytes, TRK_RA());
        if (!trk_nested_here())
            return trk_real.realloc(p, bytes);
        return realloc_nested(kind, p, bytes, TRK_RA());
    }
    void *q;
    int saved;
    if (!p) {
        q = trk_real.realloc(p, bytes);
        saved = errno;
        if (q)
            trk_ev_alloc(t, kind, q, bytes, trk_stack_sized(t, bytes));
    } else {
        uint32_t stack = trk_stack_sized(t, bytes);
        uint64_t seq = trk_ev_begin(t);
        q = trk_real.realloc(p, bytes);
        saved = errno;
        if (q)
            trk_ev_realloc(t, kind, seq, p, q, bytes, stack);
        else if (bytes == 0)
            trk_ev_free_at(t, kind, seq, p); /* realloc(p, 0) freed p */
        else
            trk_ev_abort(t);
    }
    trk_leave();
    errno = saved;
    return q;
}

TRK_EXPORT void *realloc(void *p, size_t n)
{
    return realloc_common(TRK_ALLOC_REALLOC, p, n);
}

/* glibc's reallocarray is this overflow check in front of realloc, which it
 * calls through the PLT; calling realloc ourselves keeps that inner call
 * from looking like a second, nested event. */
TRK_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_common(TRK_ALLOC_REALLOCARRAY, p, total);
}

TRK_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    ENSURE(posix_memalign);
    if (TRK_UNLIKELY(!trk_real.posix_memalign)) {
        *out = trk_boot_alloc(n, align);
        return *out ? 0 : ENOMEM;
    }
    struct trk_thread *t = trk_enter();
    if (!t) {
        if (trk_preinit_here()) {
            int was = trk_guard_enter_internal();
            int rc = trk_real.posix_memalign(out, align, n);
            int saved = errno;
            if (rc == 0)
                trk_preinit_log(TRK_PRE_ALLOC, TRK_ALLOC_POSIX_MEMALIGN, (uintptr_t)*out, 0, n,
                                TRK_RA());
            trk_guard_leave(was);
            errno = saved;
            return rc;
        }
        if (!trk_nested_here())
            return trk_real.posix_memalign(out, align, n);
        int rc = trk_real.posix_memalign(out, align, n);
        if (rc == 0)
            trk_nested_put(TRK_NEV_ALLOC, TRK_ALLOC_POSIX_MEMALIGN, (uintptr_t)*out, n, TRK_RA());
        return rc;
    }
    int rc = trk_real.posix_memalign(out, align, n);
    int saved = errno;
    if (rc == 0)
        trk_ev_alloc(t, TRK_ALLOC_POSIX_MEMALIGN, *out, n, trk_stack_sized(t, n));
    trk_leave();
    errno = saved;
    return rc;
}

TRK_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    ENSURE(aligned_alloc);
    if (TRK_UNLIKELY(!trk_real.aligned_alloc))
        return trk_boot_alloc(n, align);
    RECORD_ALLOC(TRK_ALLOC_ALIGNED_ALLOC, trk_real.aligned_alloc(align, n), n);
}

TRK_EXPORT void *memalign(size_t align, size_t n)
{
    ENSURE(memalign);
    if (TRK_UNLIKELY(!trk_real.memalign))
        return trk_boot_alloc(n, align);
    RECORD_ALLOC(TRK_ALLOC_MEMALIGN, trk_real.memalign(align, n), n);
}

TRK_EXPORT void *valloc(size_t n)
{
    ENSURE(valloc);
    if (TRK_UNLIKELY(!trk_real.valloc))
        return trk_boot_alloc(n, 4096);
    RECORD_ALLOC(TRK_ALLOC_VALLOC, trk_real.valloc(n), n);
}

TRK_EXPORT void *pvalloc(size_t n)
{
    ENSURE(pvalloc);
    if (TRK_UNLIKELY(!trk_real.pvalloc))
        return trk_boot_alloc(n, 4096);
    RECORD_ALLOC(TRK_ALLOC_PVALLOC, trk_real.pvalloc(n), n);
}
