/* SPDX-License-Identifier: MIT
 *
 * bootstrap.c - resolving the real functions behind our hooks.
 *
 * dlsym(RTLD_NEXT) finds the next definition in the search order, which is
 * what keeps another allocator (jemalloc linked into the program) or another
 * preloaded library working underneath us. dlsym allocates (calloc for its
 * error state) before any real allocator is known, so those few requests are
 * served from a static bump arena; frees into it are ignored.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "prim/guard.h"
#include "prim/real.h"

struct trk_real_fns trk_real;
_Alignas(64) char trk_boot_arena[TRK_BOOT_ARENA_SIZE];
static _Atomic size_t boot_used;
static _Atomic int resolve_state; /* 0 never, 1 in progress, 2 done */

/* Each block is preceded by its size so that realloc can copy it out. */
void *trk_boot_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    for (;;) {
        size_t used = atomic_load(&boot_used);
        size_t start = (used + 16 + align - 1) & ~(align - 1);
        if (start + size > TRK_BOOT_ARENA_SIZE || start + size < start)
            return NULL;
        if (atomic_compare_exchange_weak(&boot_used, &used, start + size)) {
            memcpy(trk_boot_arena + start - sizeof(size_t), &size, sizeof(size_t));
            return trk_boot_arena + start;
        }
    }
}

size_t trk_boot_size(const void *p)
{
    size_t s;
    memcpy(&s, (const char *)p - sizeof(size_t), sizeof(size_t));
    return s;
}

void *trk_resolve_one(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

#define GET(field, name) trk_real.field = (__typeof__(trk_real.field))dlsym(RTLD_NEXT, name)

void trk_resolve(void)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&resolve_state, &expect, 1))
        return; /* done, or in progress on this or another thread: the
                 * caller falls back to the arena or a raw syscall */
    int was = trk_guard_enter_internal();
    GET(free, "free");
    GET(calloc, "calloc");
    GET(realloc, "realloc");
    GET(reallocarray, "reallocarray");
    GET(posix_memalign, "posix_memalign");
    GET(aligned_alloc, "aligned_alloc");
    GET(memalign, "memalign");
    GET(valloc, "valloc");
    GET(pvalloc, "pvalloc");
    GET(free_sized, "free_sized");
    GET(free_aligned_sized, "free_aligned_sized");
    GET(mallocx, "mallocx");
    GET(rallocx, "rallocx");
    GET(xallocx, "xallocx");
    GET(dallocx, "dallocx");
    GET(sdallocx, "sdallocx");
    GET(mmap, "mmap");
    GET(mmap64, "mmap64");
    GET(munmap, "munmap");
    GET(mremap, "mremap");
    GET(dlopen, "dlopen");
    GET(dlclose, "dlclose");
    GET(execve, "execve");
    GET(execv, "execv");
    GET(execvp, "execvp");
    GET(execvpe, "execvpe");
    GET(fexecve, "fexecve");
    GET(posix_spawn, "posix_spawn");
    GET(posix_spawnp, "posix_spawnp");
    GET(clone, "clone");
    GET(exit_now, "_exit");
    GET(exit_now2, "_Exit");
    GET(pthread_setname_np, "pthread_setname_np");
    GET(prctl, "prctl");
    GET(close, "close");
    GET(close_range, "close_range");
    GET(closefrom, "closefrom");
    GET(dup2, "dup2");
    GET(dup3, "dup3");
    GET(pipe2, "pipe2");
    GET(dup, "dup");
    GET(fcntl, "fcntl");
    GET(fcntl64, "fcntl64");
    GET(fstat, "fstat");
    GET(fstat64, "fstat64");
    /* malloc last: its presence is what the hooks test for "resolved". */
    GET(malloc, "malloc");
    trk_guard_leave(was);
    atomic_store(&resolve_state, 2);
}
