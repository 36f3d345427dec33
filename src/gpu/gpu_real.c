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
    int was = trk_guard_enter_internal(); /* dlvsym may calloc its error state */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; !p && i < sizeof(versions) / sizeof(versions[0]); i++)
        p = dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    trk_guard_leave(was);
    if (p)
        atomic_store_explicit(&trk_gpu_dlsym_real, p, memory_order_release);
    return p;
}

/* File names of the driver libraries: "libcuda.so" matches libcuda.so.1
 * and the unversioned link; "libamdhip64.so" every HIP version. */
static const char *const lib_stems[2] = {"libcuda.so", "libamdhip64.so"};
static void *_Atomic lib_handles[2];

/* The loader's load count when each library was last looked for and not
 * found: until something new is loaded, looking again is pointless. */
static _Atomic unsigned long long missed_at[2];

struct find_lib {
    const char *stem;
    size_t len;
    unsigned long long unchanged_if, adds;
    char path[1024]; /* on a hook's stack: kept small (longer: not found) */
};

static int find_lib_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find_lib *f = arg;
    if (!f->adds) {
        f->adds = info->dlpi_adds; /* global, the same in every callback */
        if (f->adds == f->unchanged_if)
            return -1;
    }
    const char *name = info->dlpi_name, *base = name;
    if (!name || !*name)
        return 0;
    for (const char *p = name; *p; p++)
        if (*p == '/')
            base = p + 1;
    size_t n = strlen(name);
    if (strncmp(base, f->stem, f->len) != 0 || (base[f->len] && base[f->len] != '.') ||
        n >= sizeof(f->path))
        return 0;
    memcpy(f->path, name, n + 1);
    return 1;
}

/* Finds the driver among the loaded objects, then takes a handle by the
 * exact name the loader knows it by. A dlopen(RTLD_NOLOAD) by soname would
 * search the library path and open /etc/ld.so.cache on every miss: from the
 * sampler thread, ten times a second, that open and close raced with the
 * program's own descriptors (bash closes some twice, and its second close
 * hit the cache file; the tracker's close then hit bash's pipe). A loaded
 * object's own name is matched in the loader's list; nothing is opened. */
void *trk_gpu_lib_handle(enum trk_gpu_lib lib)
{
    void *h = atomic_load_explicit(&lib_handles[lib], memory_order_acquire);
    if (h)
        return h;
    if (!trk_real.dlopen)
        trk_resolve();
    if (!trk_real.dlopen)
        return NULL;
    int was = trk_guard_enter_internal();
    struct find_lib f;
    f.stem = lib_stems[lib];
    f.len = strlen(f.stem);
    f.path[0] = 0;
    f.adds = 0;
    f.unchanged_if = atomic_load_explicit(&missed_at[lib], memory_order_relaxed);
    struct trk_thread *t = trk_tl_thread;
    if (t)
        trk_dl_enter(t); /* see trk_dl_quiesce: the loader's lock across fork */
    int found = dl_iterate_phdr(find_lib_cb, &f);
    if (t)
        trk_dl_leave(t);
    /* The reference RTLD_NOLOAD takes is kept, like the program's own. */
    if (found > 0)
        h = trk_real.dlopen(f.path, RTLD_NOLOAD | RTLD_LAZY);
    if (found > 0 && !h)
        dlerror();        /* a later dlerror() of the program's must not report our miss */
    if (found >= 0 && !h) /* also a copy in another namespace: not ours to use */
        atomic_store_explicit(&missed_at[lib], f.adds, memory_order_relaxed);
    trk_guard_leave(was);
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
    int was = trk_guard_enter_internal(); /* a failed dlsym allocates its message */
    /* Called from here, RTLD_NEXT means "after libtracker.so": another
     * preloaded tool, then the driver when it is in the global scope. */
    void *p = real_dlsym(RTLD_NEXT, name);
    if (!p)
        dlerror(); /* not the program's error: clear it */
    trk_guard_leave(was);
    if (!p || trk_gpu_is_ours(p)) {
        void *h = trk_gpu_lib_handle(lib);
        p = NULL;
        if (h) {
            trk_guard_enter_internal();
            p = real_dlsym(h, name);
            if (!p)
                dlerror();
            trk_guard_leave(was);
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
