/* SPDX-License-Identifier: MIT
 *
 * hip_hooks.c - HIP (ROCm, libamdhip64.so.N) memory entry points and
 * hipGetProcAddress.
 *
 * ROCm libraries link libamdhip64 dynamically, so exporting the hip* names
 * catches PLT callers; our unversioned definitions bind references to the
 * versioned ones (hipMalloc@hip_4.2) like any preload's (docs/GPU_INTERNALS.md §2 item 3).
 * hipGetProcAddress (ROCm >= 6.2) is dlsym on the runtime's own handle and
 * bypasses preloads, so its result is wrapped like a dlsym result (docs/GPU_INTERNALS.md
 * §9 item 2). Events mirror the CUDA ones (cuda_hooks.c); HIP has one real slot
 * per name, since the runtime's resolver returns its exported functions.
 *
 * Must not: allocate, call through our own hooks, or change a call.
 */
#include <stdatomic.h>
#include <string.h>

#include "gpu/gpu.h"

typedef int trk_hip_result;
typedef void *trk_hip_stream;
typedef void *trk_hip_pool;
typedef void *trk_hip_handle; /* hipMemGenericAllocationHandle_t */

enum hip_fn {
    H_MALLOC,
    H_EXTMALLOCWITHFLAGS,
    H_MALLOCMANAGED,
    H_HOSTMALLOC,
    H_EXTHOSTALLOC,
    H_MALLOCHOST,
    H_HOSTFREE,
    H_FREEHOST,
    H_FREE,
    H_MALLOCASYNC,
    H_FREEASYNC,
    H_MALLOCFROMPOOLASYNC,
    H_MEMCREATE,
    H_MEMRELEASE,
    H_MEMMAP,
    H_MEMUNMAP,
    H_MEMADDRESSRESERVE,
    H_MEMADDRESSFREE,
    H_MALLOCPITCH,
    H_HOSTREGISTER,
    H_HOSTUNREGISTER,
    H_GETPROCADDRESS,
    H_COUNT
};

static void *_Atomic hip_real[H_COUNT];
static const char *const hip_names[H_COUNT];

static void *hip_plt(enum hip_fn f)
{
    void *p = atomic_load_explicit(&hip_real[f], memory_order_acquire);
    if (TRK_LIKELY(p != NULL))
        return p;
    p = trk_gpu_lookup(TRK_GPU_LIB_HIP, hip_names[f]);
    if (!p)
        return NULL;
    trk_gpu_slot_claim(&hip_real[f], p);
    return atomic_load_explicit(&hip_real[f], memory_order_acquire);
}

static void *_Atomic get_device;
static _Atomic int get_device_misses;

/* hipGetDevice through the real runtime; -1 if none. */
static int hip_current_device(void)
{
    void *fn = atomic_load_explicit(&get_device, memory_order_acquire);
    if (!fn && atomic_load_explicit(&get_device_misses, memory_order_relaxed) <= 16) {
        fn = trk_gpu_lookup(TRK_GPU_LIB_HIP, "hipGetDevice");
        if (fn)
            atomic_store_explicit(&get_device, fn, memory_order_release);
        else
            atomic_fetch_add_explicit(&get_device_misses, 1, memory_order_relaxed);
    }
    int dev = -1;
    if (!fn || ((trk_hip_result(*)(int *))fn)(&dev) != 0)
        return -1;
    return dev;
}

/* After the call, for the records of a call being recorded. */
static int hip_device(const struct trk_gpu_call *c)
{
    return c->scoped ? hip_current_device() : -1;
}

#define NO_RUNTIME(fn)                                                                             \
    do {                                                                                           \
        if (TRK_UNLIKELY(!(fn)))                                                                   \
            return TRK_CUDA_ERROR_NOT_INITIALIZED; /* hipErrorNotInitialized */                    \
    } while (0)

static trk_hip_result hip_alloc(enum hip_fn f, unsigned api, unsigned kind, void **p, size_t n,
                                unsigned flags, int with_flags)
{
    void *fn = hip_plt(f);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_hip_result r = with_flags ? ((trk_hip_result(*)(void **, size_t, unsigned))fn)(p, n, flags)
                                  : ((trk_hip_result(*)(void **, size_t))fn)(p, n);
    trk_gpu_end_alloc(&c, r, api, kind, hip_device(&c), r ? 0 : (uintptr_t)*p, n, 0);
    return r;
}

static trk_hip_result hip_free(enum hip_fn f, unsigned api, unsigned kind, void *p)
{
    void *fn = hip_plt(f);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_free(&c, api, kind, (uintptr_t)p);
    trk_hip_result r = ((trk_hip_result(*)(void *))fn)(p);
    trk_gpu_end(&c);
    return r;
}

#define HIP_API TRK_EXPORT trk_hip_result

HIP_API hipMalloc(void **p, size_t n);
HIP_API hipExtMallocWithFlags(void **p, size_t n, unsigned int flags);
HIP_API hipMallocManaged(void **p, size_t n, unsigned int flags);
HIP_API hipHostMalloc(void **p, size_t n, unsigned int flags);
HIP_API hipExtHostAlloc(void **p, size_t n, unsigned int flags);
HIP_API hipMallocHost(void **p, size_t n);
HIP_API hipHostFree(void *p);
HIP_API hipFreeHost(void *p);
HIP_API hipFree(void *p);
HIP_API hipMallocAsync(void **p, size_t n, trk_hip_stream s);
HIP_API hipFreeAsync(void *p, trk_hip_stream s);
HIP_API hipMallocFromPoolAsync(void **p, size_t n, trk_hip_pool pool, trk_hip_stream s);
HIP_API hipMemCreate(trk_hip_handle *h, size_t n, const struct trk_gpu_alloc_prop *prop,
                     unsigned long long flags);
HIP_API hipMemRelease(trk_hip_handle h);
HIP_API hipMemMap(void *p, size_t n, size_t offset, trk_hip_handle h, unsigned long long flags);
HIP_API hipMemUnmap(void *p, size_t n);
HIP_API hipMemAddressReserve(void **p, size_t n, size_t align, void *addr,
                             unsigned long long flags);
HIP_API hipMemAddressFree(void *p, size_t n);
HIP_API hipMallocPitch(void **p, size_t *pitch, size_t width, size_t height);
HIP_API hipHostRegister(void *p, size_t n, unsigned int flags);
HIP_API hipHostUnregister(void *p);
HIP_API hipGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags, int *status);

HIP_API hipMalloc(void **p, size_t n)
{
    return hip_alloc(H_MALLOC, TRK_GPU_API_HIPMALLOC, TRK_GPU_DEVICE, p, n, 0, 0);
}

HIP_API hipExtMallocWithFlags(void **p, size_t n, unsigned int flags)
{
    return hip_alloc(H_EXTMALLOCWITHFLAGS, TRK_GPU_API_HIPEXTMALLOCWITHFLAGS, TRK_GPU_DEVICE, p, n,
                     flags, 1);
}

HIP_API hipMallocManaged(void **p, size_t n, unsigned int flags)
{
    return hip_alloc(H_MALLOCMANAGED, TRK_GPU_API_HIPMALLOCMANAGED, TRK_GPU_MANAGED, p, n, flags,
                     1);
}

HIP_API hipHostMalloc(void **p, size_t n, unsigned int flags)
{
    return hip_alloc(H_HOSTMALLOC, TRK_GPU_API_HIPHOSTMALLOC, TRK_GPU_PINNED_HOST, p, n, flags, 1);
}

/* hipHostMalloc's successors (hip_6.3) and the deprecated hipMallocHost
 * have no api code of their own yet: they are the same allocation. */
HIP_API hipExtHostAlloc(void **p, size_t n, unsigned int flags)
{
    return hip_alloc(H_EXTHOSTALLOC, TRK_GPU_API_HIPHOSTMALLOC, TRK_GPU_PINNED_HOST, p, n, flags,
                     1);
}

HIP_API hipMallocHost(void **p, size_t n)
{
    return hip_alloc(H_MALLOCHOST, TRK_GPU_API_HIPHOSTMALLOC, TRK_GPU_PINNED_HOST, p, n, 0, 0);
}

HIP_API hipHostFree(void *p)
{
    return hip_free(H_HOSTFREE, TRK_GPU_API_HIPHOSTFREE, TRK_GPU_PINNED_HOST, p);
}

/* Missing it would leave every block freed the recommended way "leaked". */
HIP_API hipFreeHost(void *p)
{
    return hip_free(H_FREEHOST, TRK_GPU_API_HIPHOSTFREE, TRK_GPU_PINNED_HOST, p);
}

HIP_API hipFree(void *p)
{
    return hip_free(H_FREE, TRK_GPU_API_HIPFREE, 0, p);
}

HIP_API hipMallocAsync(void **p, size_t n, trk_hip_stream s)
{
    void *fn = hip_plt(H_MALLOCASYNC);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_hip_result r = ((trk_hip_result(*)(void **, size_t, trk_hip_stream))fn)(p, n, s);
    trk_gpu_end_alloc(&c, r, TRK_GPU_API_HIPMALLOCASYNC, TRK_GPU_ASYNC, hip_device(&c),
                      r ? 0 : (uintptr_t)*p, n, (uintptr_t)s);
    return r;
}

HIP_API hipFreeAsync(void *p, trk_hip_stream s)
{
    void *fn = hip_plt(H_FREEASYNC);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_free(&c, TRK_GPU_API_HIPFREEASYNC, 0, (uintptr_t)p);
    trk_hip_result r = ((trk_hip_result(*)(void *, trk_hip_stream))fn)(p, s);
    trk_gpu_end(&c);
    return r;
}

HIP_API hipMallocFromPoolAsync(void **p, size_t n, trk_hip_pool pool, trk_hip_stream s)
{
    void *fn = hip_plt(H_MALLOCFROMPOOLASYNC);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_hip_result r =
        ((trk_hip_result(*)(void **, size_t, trk_hip_pool, trk_hip_stream))fn)(p, n, pool, s);
    trk_gpu_end_alloc(&c, r, TRK_GPU_API_HIPMALLOCFROMPOOLASYNC, TRK_GPU_ASYNC, hip_device(&c),
                      r ? 0 : (uintptr_t)*p, n, (uintptr_t)s);
    return r;
}

HIP_API hipMemCreate(trk_hip_handle *h, size_t n, const struct trk_gpu_alloc_prop *prop,
                     unsigned long long flags)
{
    void *fn = hip_plt(H_MEMCREATE);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_hip_result r =
        ((trk_hip_result(*)(trk_hip_handle *, size_t, const struct trk_gpu_alloc_prop *,
                            unsigned long long))fn)(h, n, prop, flags);
    int dev = prop && prop->loc_type == 1 ? prop->loc_id : hip_device(&c);
    trk_gpu_end_alloc(&c, r, TRK_GPU_API_HIPMEMCREATE, TRK_GPU_VMM_PHYS, dev, r ? 0 : (uintptr_t)*h,
                      n, 0);
    return r;
}

HIP_API hipMemRelease(trk_hip_handle h)
{
    return hip_free(H_MEMRELEASE, TRK_GPU_API_HIPMEMRELEASE, 0, h);
}

HIP_API hipMemMap(void *p, size_t n, size_t offset, trk_hip_handle h, unsigned long long flags)
{
    void *fn = hip_plt(H_MEMMAP);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_plain(&c);
    trk_hip_result r = ((trk_hip_result(*)(void *, size_t, size_t, trk_hip_handle,
                                           unsigned long long))fn)(p, n, offset, h, flags);
    trk_gpu_end_map(&c, r, TRK_GPU_API_HIPMEMMAP, hip_device(&c), (uintptr_t)p, n, (uintptr_t)h,
                    offset);
    return r;
}

HIP_API hipMemUnmap(void *p, size_t n)
{
    void *fn = hip_plt(H_MEMUNMAP);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    /* Asked before the guard is taken, and only when the call is recorded. */
    int dev = !trk_gpu_depth && atomic_load_explicit(&trk_active, memory_order_relaxed)
                  ? hip_current_device()
                  : -1;
    trk_gpu_begin_unmap(&c, TRK_GPU_API_HIPMEMUNMAP, dev, (uintptr_t)p, n);
    trk_hip_result r = ((trk_hip_result(*)(void *, size_t))fn)(p, n);
    trk_gpu_end(&c);
    return r;
}

HIP_API hipMemAddressReserve(void **p, size_t n, size_t align, void *addr, unsigned long long flags)
{
    void *fn = hip_plt(H_MEMADDRESSRESERVE);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_hip_result r = ((trk_hip_result(*)(void **, size_t, size_t, void *, unsigned long long))fn)(
        p, n, align, addr, flags);
    trk_gpu_end_alloc(&c, r, TRK_GPU_API_HIPMEMADDRESSRESERVE, TRK_GPU_VA_RESERVE, hip_device(&c),
                      r ? 0 : (uintptr_t)*p, n, 0);
    return r;
}

HIP_API hipMemAddressFree(void *p, size_t n)
{
    void *fn = hip_plt(H_MEMADDRESSFREE);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_free(&c, TRK_GPU_API_HIPMEMADDRESSFREE, TRK_GPU_VA_RESERVE, (uintptr_t)p);
    trk_hip_result r = ((trk_hip_result(*)(void *, size_t))fn)(p, n);
    trk_gpu_end(&c);
    return r;
}

HIP_API hipMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    void *fn = hip_plt(H_MALLOCPITCH);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_hip_result r =
        ((trk_hip_result(*)(void **, size_t *, size_t, size_t))fn)(p, pitch, width, height);
    uint64_t size = r ? (uint64_t)width * height : (uint64_t)*pitch * height;
    trk_gpu_end_alloc(&c, r, TRK_GPU_API_HIPMALLOCPITCH, TRK_GPU_DEVICE, hip_device(&c),
                      r ? 0 : (uintptr_t)*p, size, 0);
    return r;
}

HIP_API hipHostRegister(void *p, size_t n, unsigned int flags)
{
    void *fn = hip_plt(H_HOSTREGISTER);
    NO_RUNTIME(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_hip_result r = ((trk_hip_result(*)(void *, size_t, unsigned))fn)(p, n, flags);
    trk_gpu_end_alloc(&c, r, TRK_GPU_API_HIPHOSTREGISTER, TRK_GPU_HOST_REGISTER, hip_device(&c),
                      (uintptr_t)p, n, 0);
    return r;
}

HIP_API hipHostUnregister(void *p)
{
    return hip_free(H_HOSTUNREGISTER, TRK_GPU_API_HIPHOSTUNREGISTER, TRK_GPU_HOST_REGISTER, p);
}

/* hipVersion does not change the ABI of any memory entry point we hook
 * (ROCm/clr maps only hipGetDeviceProperties-like names), so the result is
 * wrapped by name, like a dlsym result. */
HIP_API hipGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags, int *status)
{
    void *fn = hip_plt(H_GETPROCADDRESS);
    NO_RUNTIME(fn);
    trk_hip_result r = ((trk_hip_result(*)(const char *, void **, int, uint64_t, int *))fn)(
        symbol, pfn, version, flags, status);
    if (r == 0 && symbol && pfn && *pfn)
        *pfn = trk_hip_dlsym_wrap(symbol, *pfn);
    return r;
}

static const char *const hip_names[H_COUNT] = {
    [H_MALLOC] = "hipMalloc",
    [H_EXTMALLOCWITHFLAGS] = "hipExtMallocWithFlags",
    [H_MALLOCMANAGED] = "hipMallocManaged",
    [H_HOSTMALLOC] = "hipHostMalloc",
    [H_EXTHOSTALLOC] = "hipExtHostAlloc",
    [H_MALLOCHOST] = "hipMallocHost",
    [H_HOSTFREE] = "hipHostFree",
    [H_FREEHOST] = "hipFreeHost",
    [H_FREE] = "hipFree",
    [H_MALLOCASYNC] = "hipMallocAsync",
    [H_FREEASYNC] = "hipFreeAsync",
    [H_MALLOCFROMPOOLASYNC] = "hipMallocFromPoolAsync",
    [H_MEMCREATE] = "hipMemCreate",
    [H_MEMRELEASE] = "hipMemRelease",
    [H_MEMMAP] = "hipMemMap",
    [H_MEMUNMAP] = "hipMemUnmap",
    [H_MEMADDRESSRESERVE] = "hipMemAddressReserve",
    [H_MEMADDRESSFREE] = "hipMemAddressFree",
    [H_MALLOCPITCH] = "hipMallocPitch",
    [H_HOSTREGISTER] = "hipHostRegister",
    [H_HOSTUNREGISTER] = "hipHostUnregister",
    [H_GETPROCADDRESS] = "hipGetProcAddress",
};

static void *const hip_hooks[H_COUNT] = {
    [H_MALLOC] = (void *)hipMalloc,
    [H_EXTMALLOCWITHFLAGS] = (void *)hipExtMallocWithFlags,
    [H_MALLOCMANAGED] = (void *)hipMallocManaged,
    [H_HOSTMALLOC] = (void *)hipHostMalloc,
    [H_EXTHOSTALLOC] = (void *)hipExtHostAlloc,
    [H_MALLOCHOST] = (void *)hipMallocHost,
    [H_HOSTFREE] = (void *)hipHostFree,
    [H_FREEHOST] = (void *)hipFreeHost,
    [H_FREE] = (void *)hipFree,
    [H_MALLOCASYNC] = (void *)hipMallocAsync,
    [H_FREEASYNC] = (void *)hipFreeAsync,
    [H_MALLOCFROMPOOLASYNC] = (void *)hipMallocFromPoolAsync,
    [H_MEMCREATE] = (void *)hipMemCreate,
    [H_MEMRELEASE] = (void *)hipMemRelease,
    [H_MEMMAP] = (void *)hipMemMap,
    [H_MEMUNMAP] = (void *)hipMemUnmap,
    [H_MEMADDRESSRESERVE] = (void *)hipMemAddressReserve,
    [H_MEMADDRESSFREE] = (void *)hipMemAddressFree,
    [H_MALLOCPITCH] = (void *)hipMallocPitch,
    [H_HOSTREGISTER] = (void *)hipHostRegister,
    [H_HOSTUNREGISTER] = (void *)hipHostUnregister,
    [H_GETPROCADDRESS] = (void *)hipGetProcAddress,
};

void *trk_hip_dlsym_wrap(const char *name, void *p)
{
    if (trk_gpu_is_ours(p))
        return p;
    for (int f = 0; f < H_COUNT; f++) {
        if (strcmp(name, hip_names[f]) != 0)
            continue;
        return trk_gpu_slot_claim(&hip_real[f], p) ? hip_hooks[f] : p;
    }
    return p;
}
