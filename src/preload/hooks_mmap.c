/* SPDX-License-Identifier: MIT
 *
 * hooks_mmap.c - mmap, mmap64, munmap and mremap as called by the program
 * and its libraries. (glibc's malloc reaches the kernel through internal
 * calls that never come here, so heap blocks are not counted twice.)
 *
 * Mappings backed by a file are recorded as such and are not heap. Partial
 * unmaps are recorded as the call was made; the reader keeps intervals.
 * Before resolution (or for our own re-entrant use) the raw syscall is used.
 */
#include <errno.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/preload.h"

static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    if (r < 0 && r > -4096) {
        errno = (int)-r;
        return MAP_FAILED;
    }
    return (void *)r;
}

/* libunwind's per-thread trace cache: every thread that records maps
 * 2^14 16-byte frames (256 KiB) on its first unwind, writes all of them
 * (64 page faults) and unmaps them at its exit. For short threads that was
 * most of what tracking cost (10,000 threads: 0.09 s of CPU plain, 0.93 s
 * traced, 640,000 page faults). The buckets of an exited thread are kept
 * here, up to a few, and handed to the next thread's cache: libunwind
 * writes every frame of new buckets before use (trace_cache_buckets), so
 * their old contents do not matter. Nothing else in libunwind maps this
 * size anonymously. Lock-free: slots are taken and filled by exchange. */
#define UNW_BUCKETS_LEN ((size_t)256 << 10)
#define UNW_POOL_SLOTS  4
static void *_Atomic unw_pool[UNW_POOL_SLOTS];

static inline int from_unwinder(uintptr_t ra)
{
    return ra >= trk_unw_lo && ra < trk_unw_hi;
}

static void *unw_pool_take(void)
{
    for (int i = 0; i < UNW_POOL_SLOTS; i++) {
        if (!atomic_load_explicit(&unw_pool[i], memory_order_relaxed))
            continue;
        void *p = atomic_exchange_explicit(&unw_pool[i], NULL, memory_order_acquire);
        if (p)
            return p;
    }
    return NULL;
}

static int unw_pool_give(void *p)
{
    for (int i = 0; i < UNW_POOL_SLOTS; i++) {
        void *expect = NULL;
        if (atomic_compare_exchange_strong_explicit(&unw_pool[i], &expect, p, memory_order_release,
                                                    memory_order_relaxed))
            return 1;
    }
    return 0;
}

TRK_HOOK_INLINE void *mmap_common(void *(*real)(void *, size_t, int, int, int, off_t), void *addr,
                                  size_t len, int prot, int flags, int fd, off_t off)
{
    if (TRK_UNLIKELY(!real))
        return sys_mmap(addr, len, prot, flags, fd, off);
    if (TRK_UNLIKELY(len == UNW_BUCKETS_LEN) && !addr && fd == -1 &&
        flags == (MAP_PRIVATE | MAP_ANONYMOUS) && prot == (PROT_READ | PROT_WRITE) &&
        from_unwinder((uintptr_t)__builtin_return_address(0))) {
        void *p = unw_pool_take();
        if (p)
            return p;
    }
    struct trk_thread *t = trk_enter();
    if (!t) {
        if (!trk_nested_here())
            return real(addr, len, prot, flags, fd, off);
        /* A signal handler's, inside another hook: kept for that hook. */
        if (!trk_cfg.track_mmap)
            trk_nested_unrecorded();
        void *q = real(addr, len, prot, flags, fd, off);
        struct trk_nested_ev *e;
        if (q != MAP_FAILED && trk_cfg.track_mmap &&
            (e = trk_nested_put(TRK_NEV_MMAP, 0, (uintptr_t)q, len,
                                (uintptr_t)__builtin_return_address(0)))) {
            e->prot = (uint32_t)prot;
            e->flags = (uint32_t)flags;
            e->file = !(flags & MAP_ANONYMOUS) && fd >= 0;
        }
        return q;
    }
    void *p = real(addr, len, prot, flags, fd, off);
    int saved = errno;
    if (p != MAP_FAILED && trk_cfg.track_mmap) {
        int file = !(flags & MAP_ANONYMOUS) && fd >= 0;
        trk_ev_mmap(t, p, len, prot, flags, file, trk_stack(t));
    }
    trk_leave();
    errno = saved;
    return p;
}

TRK_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (TRK_UNLIKELY(!trk_real.mmap))
        trk_resolve();
    return mmap_common(trk_real.mmap, addr, len, prot, flags, fd, off);
}

TRK_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (TRK_UNLIKELY(!trk_real.mmap64))
        trk_resolve();
    return mmap_common(trk_real.mmap64 ? trk_real.mmap64 : trk_real.mmap, addr, len, prot, flags,
                       fd, off);
}

TRK_EXPORT int munmap(void *addr, size_t len)
{
    if (TRK_UNLIKELY(!trk_real.munmap))
        trk_resolve();
    if (TRK_UNLIKELY(!trk_real.munmap))
        return (int)syscall(SYS_munmap, addr, len);
    if (TRK_UNLIKELY(len == UNW_BUCKETS_LEN) &&
        from_unwinder((uintptr_t)__builtin_return_address(0)) && unw_pool_give(addr))
        return 0;
    struct trk_thread *t = trk_enter();
    if (!t) {
        if (!trk_nested_here())
            return trk_real.munmap(addr, len);
        if (!trk_cfg.track_mmap) {
            trk_nested_unrecorded();
            return trk_real.munmap(addr, len);
        }
        struct trk_nested_ev *e = trk_nested_put(TRK_NEV_MUNMAP, 0, (uintptr_t)addr, len,
                                                 (uintptr_t)__builtin_return_address(0));
        int rc = trk_real.munmap(addr, len);
        if (rc != 0 && e)
            e->op = TRK_NEV_NONE;
        return rc;
    }
    if (!trk_cfg.track_mmap) {
        int rc = trk_real.munmap(addr, len);
        trk_leave();
        return rc;
    }
    /* The seq is taken before the range is released (another thread may map
     * it right after), but the record is kept only if the kernel agreed. */
    uint64_t seq = trk_ev_begin(t);
    int rc = trk_real.munmap(addr, len);
    int saved = errno;
    if (rc == 0)
        trk_ev_munmap_at(t, seq, addr, len);
    else
        trk_ev_abort(t);
    trk_leave();
    errno = saved;
    return rc;
}

TRK_EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    if (TRK_UNLIKELY(!trk_real.mremap))
        trk_resolve();
    struct trk_thread *t = trk_enter();
    if (!t)
        return trk_real.mremap(old, oldlen, newlen, flags, want);
    if (!trk_cfg.track_mmap) {
        void *p = trk_real.mremap(old, oldlen, newlen, flags, want);
        trk_leave();
        return p;
    }
    uint32_t stack = trk_stack(t);
    uint64_t seq = trk_ev_begin(t);
    void *p = trk_real.mremap(old, oldlen, newlen, flags, want);
    int saved = errno;
    if (p != MAP_FAILED)
        trk_ev_mremap(t, seq, old, oldlen, p, newlen, flags, stack);
    else
        trk_ev_abort(t);
    trk_leave();
    errno = saved;
    return p;
}
