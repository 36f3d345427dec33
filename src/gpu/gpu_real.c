/* SPDX-License-Identifier: MIT
 *
 * gpu_real.c - finding the real driver functions behind our GPU hooks, and
 * the thread-local "inside a GPU API call" depth.
 *
 * Owns: libc's dlsym (by version, never our interposer), the RTLD_NEXT /
 * RTLD_NOLOAD lookup of driver symbols, the "is this pointer ours" test and
 * the real-pointer slots' claim rule. Must not: allocate itself (the loader
 * may, under the internal guard), load a driver library that is not already
 * loaded, or hand out one of our own functions as a real one.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

#include "gpu/gpu.h"
#include "preload/real.h"

__thread int trk_gpu_depth TRK_TLS;

void *_Atomic trk_gpu_dlsym_real;

/* The version that binds new programs first (2.34 moved dlsym into libc),
 * then x86-64's and aarch64's base versions (docs/GPU_INTERNALS.md §3 item 1). A
 * versioned lookup skips our unversioned definition by construction. */
void *trk_gpu_dlsym_real_get(void)
{
    void *p = atomic_load_explicit(&trk_gpu_dlsym_real, memory_order_acquire);
    if (TRK_LIKELY(p))
        return p;
    int was = trk_tl_guard;
    trk_tl_guard = TRK_GUARD_INTERNAL; /* dlvsym may calloc its error state */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; !p && i < sizeof(versions) / sizeof(versions[0]); i++)
        p = dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    trk_tl_guard = was;
    if (p)
        atomic_store_explicit(&trk_gpu_dlsym_real, p, memory_order_release);
    return p;
}

/* Sonames tried with RTLD_NOLOAD, newest first. */
static const char *const cuda_names[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *const hip_names[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5",
                                        "libamdhip64.so", NULL};
static void *_Atomic lib_handles[2];

struct lib_find {
    const char *prefix;
    size_t len;
    int found;
};

static int lib_find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct lib_find *f = arg;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (base && strncmp(base, f->prefix, f->len) == 0)
        f->found = 1;
    return f->found;
}

/* Whether an object named like the library is loaded at all. A failed
 * dlopen, even RTLD_NOLOAD, mallocs its error message: from the sampler
 * thread, ten times a second, that made glibc reserve a 64 MiB arena for
 * it, out of the program's address space (RLIMIT_AS). The walk allocates
 * nothing; the dlopen then runs only when it will succeed. */
static int lib_maybe_loaded(enum trk_gpu_lib lib)
{
    struct lib_find f = {lib == TRK_GPU_LIB_CUDA ? "libcuda" : "libamdhip64", 0, 0};
    f.len = strlen(f.prefix);
    struct trk_thread *t = trk_tl_thread;
    if (t)
        trk_dl_enter(t);
    dl_iterate_phdr(lib_find_cb, &f);
    if (t)
        trk_dl_leave(t);
    return f.found;
}

void *trk_gpu_lib_handle(enum trk_gpu_lib lib)
{
    void *h = atomic_load_explicit(&lib_handles[lib], memory_order_acquire);
    if (h)
        return h;
    if (!trk_real.dlopen)
        trk_resolve();
    if (!trk_real.dlopen || !lib_maybe_loaded(lib))
        return NULL;
    int was = trk_tl_guard;
    trk_tl_guard = TRK_GUARD_INTERNAL;
    /* RTLD_NOLOAD never loads anything: it finds the copy the program (or its
     * runtime) loaded, whatever its scope, and matches sonames too. The
     * reference it takes is kept, like the program's own. */
    for (const char *const *n = lib == TRK_GPU_LIB_CUDA ? cuda_names : hip_names; !h && *n; n++)
        h = trk_real.dlopen(*n, RTLD_NOLOAD | RTLD_LAZY);
    if (!h)
        dlerror(); /* a later dlerror() of the program's must not report our miss */
    trk_tl_guard = was;
    if (h) {
        void *expect = NULL;
        if (!atomic_compare_exchange_strong(&lib_handles[lib], &expect, h))
            h = expect; /* another thread won; ours is one extra reference */
    }
    return h;
}

void *trk_gpu_lookup(enum trk_gpu_lib lib, const char *name)
{
    void *(*real_dlsym)(void *, const char *) =
        (void *(*)(void *, const char *))trk_gpu_dlsym_real_get();
    if (!real_dlsym)
        return NULL;
    int was = trk_tl_guard;
    trk_tl_guard = TRK_GUARD_INTERNAL; /* a failed dlsym allocates its message */
    /* Called from here, RTLD_NEXT means "after libtracker.so": another
     * preloaded tool, then the driver when it is in the global scope. */
    void *p = real_dlsym(RTLD_NEXT, name);
    if (!p)
        dlerror(); /* not the program's error: clear it */
    trk_tl_guard = was;
    if (!p || trk_gpu_is_ours(p)) {
        void *h = trk_gpu_lib_handle(lib);
        p = NULL;
        if (h) {
            trk_tl_guard = TRK_GUARD_INTERNAL;
            p = real_dlsym(h, name);
            if (!p)
                dlerror();
            trk_tl_guard = was;
        }
    }
    return p && !trk_gpu_is_ours(p) ? p : NULL;
}

/* The linker defines both for the object being linked: our ELF header (the
 * start of the first loaded segment) and the end of our last one. */
extern const char __ehdr_start[] TRK_HIDDEN;
extern const char _end[] TRK_HIDDEN;

int trk_gpu_is_ours(const void *p)
{
    return (const char *)p >= __ehdr_start && (const char *)p < _end;
}

int trk_gpu_slot_claim(void *_Atomic *slot, void *p)
{
    if (!p || trk_gpu_is_ours(p))
        return 0;
    void *expect = NULL;
    if (atomic_compare_exchange_strong_explicit(slot, &expect, p, memory_order_acq_rel,
                                                memory_order_acquire))
        return 1;
    return expect == p;
}

/* dlsym results: only names of the two driver families can be ours, and a
 * two-byte test keeps every other dlsym (Python extension init, plugin
 * loaders) at the cost of a branch. */
void *trk_gpu_dlsym_wrap(const char *name, void *p)
{
    if (name[0] == 'c' && name[1] == 'u')
        return trk_cu_dlsym_wrap(name, p);
    if (name[0] == 'h' && name[1] == 'i' && name[2] == 'p')
        return trk_hip_dlsym_wrap(name, p);
    return p;
}
