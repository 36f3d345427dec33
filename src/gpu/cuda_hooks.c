/* SPDX-License-Identifier: MIT
 *
 * cuda_hooks.c - the CUDA driver's memory entry points: what each call means
 * as an event, and the two thin hooks per entry point (the exported one for
 * PLT callers and dlsym on a driver handle, and the one for pointers that
 * cuGetProcAddress returned, cuda_procaddr.c).
 *
 * Driver level only: the runtime's cudaMalloc is a caller, visible in the
 * stack, never a second event (docs/GPU_INTERNALS.md §1 item 4). Sizes come
 * from the call (pitch × height for pitched memory); a release carries only
 * its address, and readers take its size, kind and device from the
 * allocation (docs/FORMAT.md §4), so there is no table here. Address
 * reservations and host registrations are recorded with their own kinds and
 * are never memory (docs/GPU_INTERNALS.md §6).
 *
 * Must not: allocate, use stdio, call a driver function through our own
 * hooks, or change a call's arguments or result.
 */
#include "gpu/cuda_fns.h"

void *_Atomic trk_cu_real[TRK_CU_FN_COUNT];
void *_Atomic trk_cu_pa_real[TRK_CU_FN_COUNT];

void *trk_cu_plt_resolve(enum trk_cu_fn f)
{
    void *p = trk_gpu_lookup(TRK_GPU_LIB_CUDA, trk_cu_fns[f].name);
    if (!p)
        return NULL;
    trk_gpu_slot_claim(&trk_cu_real[f], p);
    return atomic_load_explicit(&trk_cu_real[f], memory_order_acquire);
}

/* ---- Helpers that ask the real driver ----------------------------------- */

static void *_Atomic ctx_get_device, *_Atomic get_address_range;
static _Atomic int ctx_misses, range_misses;

static void *lazy_real(void *_Atomic *slot, _Atomic int *misses, const char *name)
{
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (p || atomic_load_explicit(misses, memory_order_relaxed) > 16)
        return p; /* bounded retries: a process without the symbol pays 16 lookups */
    p = trk_gpu_lookup(TRK_GPU_LIB_CUDA, name);
    if (p)
        atomic_store_explicit(slot, p, memory_order_release);
    else
        atomic_fetch_add_explicit(misses, 1, memory_order_relaxed);
    return p;
}

/* The current context's device, asked of the real driver after the call,
 * outside the guard (it is a driver call like any other). The exported
 * cuCtxGetDevice keeps its one-argument ABI in CUDA 13 (cudaTypedefs.h 105;
 * the two-argument form is cuCtxGetDevice_v2). -1 when there is no current
 * context or no driver. */
static int cu_current_device(void)
{
    trk_cu_result (*fn)(int *) =
        (trk_cu_result(*)(int *))lazy_real(&ctx_get_device, &ctx_misses, "cuCtxGetDevice");
    int dev = -1;
    if (!fn || fn(&dev) != TRK_CUDA_SUCCESS)
        return -1;
    return dev;
}

static int cu_device(const struct trk_gpu_call *c)
{
    return c->scoped ? cu_current_device() : -1;
}

/* For a record written before the real call (an unmap): asked only when
 * the call will be recorded, before our guard is taken. */
static int cu_device_before(void)
{
    if (trk_gpu_depth || !atomic_load_explicit(&trk_active, memory_order_relaxed))
        return -1;
    return cu_current_device();
}

/* Size of imported memory, which the call does not state (docs/GPU_INTERNALS.md §5 item 2). */
static uint64_t cu_range_size(const struct trk_gpu_call *c, trk_cu_ptr p)
{
    if (!c->scoped)
        return 0;
    trk_cu_result (*fn)(trk_cu_ptr *, size_t *, trk_cu_ptr) =
        (trk_cu_result(*)(trk_cu_ptr *, size_t *, trk_cu_ptr))lazy_real(
            &get_address_range, &range_misses, "cuMemGetAddressRange_v2");
    trk_cu_ptr base = 0;
    size_t size = 0;
    if (!fn || fn(&base, &size, p) != TRK_CUDA_SUCCESS)
        return 0;
    return size;
}

/* Device of a VMM allocation: its own location when that is a device. */
static int prop_device(const struct trk_gpu_call *c, const struct trk_gpu_alloc_prop *prop)
{
    if (prop && prop->loc_type == 1)
        return prop->loc_id;
    return cu_device(c);
}

/* Bytes per element of a CUarray_format (cuda.h 648-655); the others are
 * video and block-compressed formats, counted as one byte (sizes of arrays
 * are approximate anyway, docs/FORMAT.md kind 7). */
static uint64_t array_elem_bytes(int format)
{
    switch (format) {
    case 0x02:
    case 0x09:
    case 0x10:
        return 2;
    case 0x03:
    case 0x0a:
    case 0x20:
        return 4;
    default:
        return 1;
    }
}

struct array_desc { /* CUDA_ARRAY_DESCRIPTOR_v2 (cuda.h 3411) */
    size_t width, height;
    int format;
    unsigned int channels;
};

struct array3d_desc { /* CUDA_ARRAY3D_DESCRIPTOR_v2 (cuda.h 3424) */
    size_t width, height, depth;
    int format;
    unsigned int channels, flags;
};

static uint64_t dim(size_t n)
{
    return n ? n : 1; /* a 1D array has height 0 */
}

/* ---- What each entry point records -------------------------------------- */

/* Ends an allocating call (trk_gpu_end_alloc), then, after the program's
 * first recorded allocation, loads NVML for the driver's figure: here, on
 * the program's thread, outside our guard and with no lock of ours held,
 * as the load of the driver did before (nvml_sampler.c says why not
 * earlier). A program that loads the driver and never allocates on the GPU
 * (`import torch`) never gets NVML. */
static void cu_end_alloc(struct trk_gpu_call *c, trk_cu_result r, unsigned api, unsigned kind,
                         int device, uint64_t addr, uint64_t size, uint64_t stream)
{
    int scoped = c->scoped;
    trk_gpu_end_alloc(c, r, api, kind, device, addr, size, stream);
    if (r == TRK_CUDA_SUCCESS && scoped)
        trk_gpu_nvml_start();
}

#define REAL(T, fn) ((T)(fn))
#define NO_DRIVER(fn)                                                                              \
    do {                                                                                           \
        if (TRK_UNLIKELY(!(fn)))                                                                   \
            return TRK_CUDA_ERROR_NOT_INITIALIZED;                                                 \
    } while (0)

static trk_cu_result core_alloc(void *fn, unsigned api, unsigned kind, trk_cu_ptr *dptr, size_t n)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_ptr *, size_t), fn)(dptr, n);
    cu_end_alloc(&c, r, api, kind, cu_device(&c), r ? 0 : *dptr, n, 0);
    return r;
}

/* A release: recorded before the driver can hand the address out again
 * (docs/FORMAT.md §3). A failed free stays recorded: the format has no
 * "refused release", and a failing free means an invalid address or a
 * context already lost. */
static trk_cu_result core_free(void *fn, unsigned api, unsigned kind, uint64_t addr)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_free(&c, api, kind, addr);
    trk_cu_result r = REAL(trk_cu_result(*)(uint64_t), fn)(addr);
    trk_gpu_end(&c);
    return r;
}

static trk_cu_result core_cuMemAlloc_v2(void *fn, trk_cu_ptr *dptr, size_t n)
{
    return core_alloc(fn, TRK_GPU_API_CUMEMALLOC, TRK_GPU_DEVICE, dptr, n);
}

static trk_cu_result core_cuMemFree_v2(void *fn, trk_cu_ptr p)
{
    return core_free(fn, TRK_GPU_API_CUMEMFREE, 0, p);
}

static trk_cu_result core_cuMemAllocPitch_v2(void *fn, trk_cu_ptr *dptr, size_t *pitch,
                                             size_t width, size_t height, unsigned int elem)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_ptr *, size_t *, size_t, size_t, unsigned),
                           fn)(dptr, pitch, width, height, elem);
    uint64_t size = r ? (uint64_t)width * height : (uint64_t)*pitch * height;
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMALLOCPITCH, TRK_GPU_DEVICE, cu_device(&c), r ? 0 : *dptr,
                 size, 0);
    return r;
}

static trk_cu_result core_cuMemAllocManaged(void *fn, trk_cu_ptr *dptr, size_t n,
                                            unsigned int flags)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_ptr *, size_t, unsigned), fn)(dptr, n, flags);
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMALLOCMANAGED, TRK_GPU_MANAGED, cu_device(&c),
                 r ? 0 : *dptr, n, 0);
    return r;
}

/* Pinned host memory: the runtime's cudaMallocHost and cudaHostAlloc both
 * arrive as cuMemHostAlloc (docs/GPU_INTERNALS.md §4 item 2). The driver's own mmap of it is a
 * host event inside our GPU scope, so the host view can tell the two apart. */
static trk_cu_result core_cuMemHostAlloc(void *fn, void **pp, size_t n, unsigned int flags)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(void **, size_t, unsigned), fn)(pp, n, flags);
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMHOSTALLOC, TRK_GPU_PINNED_HOST, cu_device(&c),
                 r ? 0 : (uintptr_t)*pp, n, 0);
    return r;
}

static trk_cu_result core_cuMemAllocHost_v2(void *fn, void **pp, size_t n)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(void **, size_t), fn)(pp, n);
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMALLOCHOST, TRK_GPU_PINNED_HOST, cu_device(&c),
                 r ? 0 : (uintptr_t)*pp, n, 0);
    return r;
}

static trk_cu_result core_cuMemFreeHost(void *fn, void *p)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_free(&c, TRK_GPU_API_CUMEMFREEHOST, TRK_GPU_PINNED_HOST, (uintptr_t)p);
    trk_cu_result r = REAL(trk_cu_result(*)(void *), fn)(p);
    trk_gpu_end(&c);
    return r;
}

static trk_cu_result core_cuMemHostRegister_v2(void *fn, void *p, size_t n, unsigned int flags)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(void *, size_t, unsigned), fn)(p, n, flags);
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMHOSTREGISTER, TRK_GPU_HOST_REGISTER, cu_device(&c),
                 (uintptr_t)p, n, 0);
    return r;
}

static trk_cu_result core_cuMemHostUnregister(void *fn, void *p)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_free(&c, TRK_GPU_API_CUMEMHOSTUNREGISTER, TRK_GPU_HOST_REGISTER, (uintptr_t)p);
    trk_cu_result r = REAL(trk_cu_result(*)(void *), fn)(p);
    trk_gpu_end(&c);
    return r;
}

/* Stream-ordered: the logical free is the call; the pool may keep the pages
 * (docs/GPU_INTERNALS.md §5 item 4), which NVML's figure shows. */
static trk_cu_result core_cuMemAllocAsync(void *fn, trk_cu_ptr *dptr, size_t n, trk_cu_stream s)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_ptr *, size_t, trk_cu_stream), fn)(dptr, n, s);
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMALLOCASYNC, TRK_GPU_ASYNC, cu_device(&c), r ? 0 : *dptr, n,
                 (uintptr_t)s);
    return r;
}

static trk_cu_result core_cuMemFreeAsync(void *fn, trk_cu_ptr p, trk_cu_stream s)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_free(&c, TRK_GPU_API_CUMEMFREEASYNC, 0, p);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_ptr, trk_cu_stream), fn)(p, s);
    trk_gpu_end(&c);
    return r;
}

static trk_cu_result core_cuMemAllocFromPoolAsync(void *fn, trk_cu_ptr *dptr, size_t n,
                                                  trk_cu_pool pool, trk_cu_stream s)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_ptr *, size_t, trk_cu_pool, trk_cu_stream),
                           fn)(dptr, n, pool, s);
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMALLOCFROMPOOLASYNC, TRK_GPU_ASYNC, cu_device(&c),
                 r ? 0 : *dptr, n, (uintptr_t)s);
    return r;
}

/* VMM (docs/GPU_INTERNALS.md §6): physical bytes are committed by cuMemCreate, keyed by
 * the handle; maps only place them; reservations are address space. */
static trk_cu_result core_cuMemCreate(void *fn, trk_cu_handle *handle, size_t n,
                                      const struct trk_gpu_alloc_prop *prop,
                                      unsigned long long flags)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_handle *, size_t,
                                            const struct trk_gpu_alloc_prop *, unsigned long long),
                           fn)(handle, n, prop, flags);
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMCREATE, TRK_GPU_VMM_PHYS, prop_device(&c, prop),
                 r ? 0 : *handle, n, 0);
    return r;
}

/* Kind 0: the handle may be VMM physical memory or an imported one. */
static trk_cu_result core_cuMemRelease(void *fn, trk_cu_handle h)
{
    return core_free(fn, TRK_GPU_API_CUMEMRELEASE, 0, h);
}

static trk_cu_result core_cuMemMap(void *fn, trk_cu_ptr ptr, size_t n, size_t offset,
                                   trk_cu_handle h, unsigned long long flags)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_plain(&c);
    trk_cu_result r =
        REAL(trk_cu_result(*)(trk_cu_ptr, size_t, size_t, trk_cu_handle, unsigned long long),
             fn)(ptr, n, offset, h, flags);
    trk_gpu_end_map(&c, r, TRK_GPU_API_CUMEMMAP, cu_device(&c), ptr, n, h, offset);
    return r;
}

static trk_cu_result core_cuMemUnmap(void *fn, trk_cu_ptr ptr, size_t n)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_unmap(&c, TRK_GPU_API_CUMEMUNMAP, cu_device_before(), ptr, n);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_ptr, size_t), fn)(ptr, n);
    trk_gpu_end(&c);
    return r;
}

static trk_cu_result core_cuMemAddressReserve(void *fn, trk_cu_ptr *ptr, size_t n, size_t align,
                                              trk_cu_ptr addr, unsigned long long flags)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r =
        REAL(trk_cu_result(*)(trk_cu_ptr *, size_t, size_t, trk_cu_ptr, unsigned long long),
             fn)(ptr, n, align, addr, flags);
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMADDRESSRESERVE, TRK_GPU_VA_RESERVE, cu_device(&c),
                 r ? 0 : *ptr, n, 0);
    return r;
}

static trk_cu_result core_cuMemAddressFree(void *fn, trk_cu_ptr ptr, size_t n)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_free(&c, TRK_GPU_API_CUMEMADDRESSFREE, TRK_GPU_VA_RESERVE, ptr);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_ptr, size_t), fn)(ptr, n);
    trk_gpu_end(&c);
    return r;
}

/* Imported memory belongs to another process (docs/GPU_INTERNALS.md §6 item 3): its own kind,
 * never this process's device bytes. */
static trk_cu_result core_cuIpcOpenMemHandle_v2(void *fn, trk_cu_ptr *pdptr, trk_cu_ipc_handle h,
                                                unsigned int flags)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r =
        REAL(trk_cu_result(*)(trk_cu_ptr *, trk_cu_ipc_handle, unsigned), fn)(pdptr, h, flags);
    trk_cu_ptr p = r ? 0 : *pdptr;
    cu_end_alloc(&c, r, TRK_GPU_API_CUIPCOPENMEMHANDLE, TRK_GPU_IMPORTED, cu_device(&c), p,
                 r ? 0 : cu_range_size(&c, p), 0);
    return r;
}

static trk_cu_result core_cuIpcCloseMemHandle(void *fn, trk_cu_ptr p)
{
    return core_free(fn, TRK_GPU_API_CUIPCCLOSEMEMHANDLE, TRK_GPU_IMPORTED, p);
}

/* The size of an imported handle is not known to the importer's API. */
static trk_cu_result core_cuMemImportFromShareableHandle(void *fn, trk_cu_handle *handle,
                                                         void *os_handle, int type)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r =
        REAL(trk_cu_result(*)(trk_cu_handle *, void *, int), fn)(handle, os_handle, type);
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMIMPORTFROMSHAREABLE, TRK_GPU_IMPORTED, cu_device(&c),
                 r ? 0 : *handle, 0, 0);
    return r;
}

static trk_cu_result core_cuArrayCreate_v2(void *fn, trk_cu_array *handle, const void *desc)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_array *, const void *), fn)(handle, desc);
    const struct array_desc *d = desc;
    uint64_t size = d ? (uint64_t)dim(d->width) * dim(d->height) * dim(d->channels) *
                            array_elem_bytes(d->format)
                      : 0;
    cu_end_alloc(&c, r, TRK_GPU_API_CUARRAYCREATE, TRK_GPU_ARRAY, cu_device(&c),
                 r ? 0 : (uintptr_t)*handle, size, 0);
    return r;
}

static trk_cu_result core_cuArray3DCreate_v2(void *fn, trk_cu_array *handle, const void *desc)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_array *, const void *), fn)(handle, desc);
    const struct array3d_desc *d = desc;
    uint64_t size = d ? (uint64_t)dim(d->width) * dim(d->height) * dim(d->depth) *
                            dim(d->channels) * array_elem_bytes(d->format)
                      : 0;
    cu_end_alloc(&c, r, TRK_GPU_API_CUARRAY3DCREATE, TRK_GPU_ARRAY, cu_device(&c),
                 r ? 0 : (uintptr_t)*handle, size, 0);
    return r;
}

static trk_cu_result core_cuArrayDestroy(void *fn, trk_cu_array a)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin_free(&c, TRK_GPU_API_CUARRAYDESTROY, TRK_GPU_ARRAY, (uintptr_t)a);
    trk_cu_result r = REAL(trk_cu_result(*)(trk_cu_array), fn)(a);
    trk_gpu_end(&c);
    return r;
}

static trk_cu_result core_cuMemPoolImportPointer(void *fn, trk_cu_ptr *out, trk_cu_pool pool,
                                                 void *share)
{
    NO_DRIVER(fn);
    struct trk_gpu_call c;
    trk_gpu_begin(&c);
    trk_cu_result r =
        REAL(trk_cu_result(*)(trk_cu_ptr *, trk_cu_pool, void *), fn)(out, pool, share);
    trk_cu_ptr p = r ? 0 : *out;
    cu_end_alloc(&c, r, TRK_GPU_API_CUMEMPOOLIMPORTPOINTER, TRK_GPU_IMPORTED, cu_device(&c), p,
                 r ? 0 : cu_range_size(&c, p), 0);
    return r;
}

/* ---- The hooks ---------------------------------------------------------------
 *
 * HOOK(F, name, core, params, args): the exported `name`, whose real function
 * is found by that name, and pa_name for cuGetProcAddress's pointer in slot F.
 */
#define UNPAREN(...) __VA_ARGS__
#define HOOK(F, NAME, CORE, PARAMS, ARGS)                                                          \
    TRK_EXPORT trk_cu_result NAME PARAMS                                                           \
    {                                                                                              \
        return CORE(trk_cu_plt(F), UNPAREN ARGS);                                                  \
    }                                                                                              \
    static trk_cu_result pa_##NAME PARAMS                                                          \
    {                                                                                              \
        return CORE(atomic_load_explicit(&trk_cu_pa_real[F], memory_order_acquire), UNPAREN ARGS); \
    }

HOOK(TRK_CU_MEMALLOC, cuMemAlloc_v2, core_cuMemAlloc_v2, (trk_cu_ptr * d, size_t n), (d, n))
HOOK(TRK_CU_MEMFREE, cuMemFree_v2, core_cuMemFree_v2, (trk_cu_ptr p), (p))
HOOK(TRK_CU_MEMALLOCPITCH, cuMemAllocPitch_v2, core_cuMemAllocPitch_v2,
     (trk_cu_ptr * d, size_t *pitch, size_t w, size_t h, unsigned int e), (d, pitch, w, h, e))
HOOK(TRK_CU_MEMALLOCMANAGED, cuMemAllocManaged, core_cuMemAllocManaged,
     (trk_cu_ptr * d, size_t n, unsigned int f), (d, n, f))
HOOK(TRK_CU_MEMHOSTALLOC, cuMemHostAlloc, core_cuMemHostAlloc,
     (void **pp, size_t n, unsigned int f), (pp, n, f))
HOOK(TRK_CU_MEMALLOCHOST, cuMemAllocHost_v2, core_cuMemAllocHost_v2, (void **pp, size_t n), (pp, n))
HOOK(TRK_CU_MEMFREEHOST, cuMemFreeHost, core_cuMemFreeHost, (void *p), (p))
HOOK(TRK_CU_MEMHOSTREGISTER, cuMemHostRegister_v2, core_cuMemHostRegister_v2,
     (void *p, size_t n, unsigned int f), (p, n, f))
HOOK(TRK_CU_MEMHOSTUNREGISTER, cuMemHostUnregister, core_cuMemHostUnregister, (void *p), (p))
HOOK(TRK_CU_MEMALLOCASYNC, cuMemAllocAsync, core_cuMemAllocAsync,
     (trk_cu_ptr * d, size_t n, trk_cu_stream s), (d, n, s))
HOOK(TRK_CU_MEMALLOCASYNC_PTSZ, cuMemAllocAsync_ptsz, core_cuMemAllocAsync,
     (trk_cu_ptr * d, size_t n, trk_cu_stream s), (d, n, s))
HOOK(TRK_CU_MEMFREEASYNC, cuMemFreeAsync, core_cuMemFreeAsync, (trk_cu_ptr p, trk_cu_stream s),
     (p, s))
HOOK(TRK_CU_MEMFREEASYNC_PTSZ, cuMemFreeAsync_ptsz, core_cuMemFreeAsync,
     (trk_cu_ptr p, trk_cu_stream s), (p, s))
HOOK(TRK_CU_MEMALLOCFROMPOOLASYNC, cuMemAllocFromPoolAsync, core_cuMemAllocFromPoolAsync,
     (trk_cu_ptr * d, size_t n, trk_cu_pool pool, trk_cu_stream s), (d, n, pool, s))
HOOK(TRK_CU_MEMALLOCFROMPOOLASYNC_PTSZ, cuMemAllocFromPoolAsync_ptsz, core_cuMemAllocFromPoolAsync,
     (trk_cu_ptr * d, size_t n, trk_cu_pool pool, trk_cu_stream s), (d, n, pool, s))
HOOK(TRK_CU_MEMCREATE, cuMemCreate, core_cuMemCreate,
     (trk_cu_handle * h, size_t n, const struct trk_gpu_alloc_prop *prop, unsigned long long f),
     (h, n, prop, f))
HOOK(TRK_CU_MEMRELEASE, cuMemRelease, core_cuMemRelease, (trk_cu_handle h), (h))
HOOK(TRK_CU_MEMMAP, cuMemMap, core_cuMemMap,
     (trk_cu_ptr p, size_t n, size_t off, trk_cu_handle h, unsigned long long f), (p, n, off, h, f))
HOOK(TRK_CU_MEMUNMAP, cuMemUnmap, core_cuMemUnmap, (trk_cu_ptr p, size_t n), (p, n))
HOOK(TRK_CU_MEMADDRESSRESERVE, cuMemAddressReserve, core_cuMemAddressReserve,
     (trk_cu_ptr * p, size_t n, size_t a, trk_cu_ptr addr, unsigned long long f),
     (p, n, a, addr, f))
HOOK(TRK_CU_MEMADDRESSFREE, cuMemAddressFree, core_cuMemAddressFree, (trk_cu_ptr p, size_t n),
     (p, n))
HOOK(TRK_CU_IPCOPENMEMHANDLE, cuIpcOpenMemHandle_v2, core_cuIpcOpenMemHandle_v2,
     (trk_cu_ptr * p, trk_cu_ipc_handle h, unsigned int f), (p, h, f))
HOOK(TRK_CU_IPCCLOSEMEMHANDLE, cuIpcCloseMemHandle, core_cuIpcCloseMemHandle, (trk_cu_ptr p), (p))
HOOK(TRK_CU_MEMIMPORTFROMSHAREABLEHANDLE, cuMemImportFromShareableHandle,
     core_cuMemImportFromShareableHandle, (trk_cu_handle * h, void *os, int type), (h, os, type))
HOOK(TRK_CU_ARRAYCREATE, cuArrayCreate_v2, core_cuArrayCreate_v2, (trk_cu_array * h, const void *d),
     (h, d))
HOOK(TRK_CU_ARRAY3DCREATE, cuArray3DCreate_v2, core_cuArray3DCreate_v2,
     (trk_cu_array * h, const void *d), (h, d))
HOOK(TRK_CU_ARRAYDESTROY, cuArrayDestroy, core_cuArrayDestroy, (trk_cu_array a), (a))
HOOK(TRK_CU_MEMPOOLIMPORTPOINTER, cuMemPoolImportPointer, core_cuMemPoolImportPointer,
     (trk_cu_ptr * p, trk_cu_pool pool, void *share), (p, pool, share))

#define ENTRY(F, NAME) [F] = {#NAME, (void *)NAME, (void *)pa_##NAME}

const struct trk_cu_fn_info trk_cu_fns[TRK_CU_FN_COUNT] = {
    ENTRY(TRK_CU_MEMALLOC, cuMemAlloc_v2),
    ENTRY(TRK_CU_MEMFREE, cuMemFree_v2),
    ENTRY(TRK_CU_MEMALLOCPITCH, cuMemAllocPitch_v2),
    ENTRY(TRK_CU_MEMALLOCMANAGED, cuMemAllocManaged),
    ENTRY(TRK_CU_MEMHOSTALLOC, cuMemHostAlloc),
    ENTRY(TRK_CU_MEMALLOCHOST, cuMemAllocHost_v2),
    ENTRY(TRK_CU_MEMFREEHOST, cuMemFreeHost),
    ENTRY(TRK_CU_MEMHOSTREGISTER, cuMemHostRegister_v2),
    ENTRY(TRK_CU_MEMHOSTUNREGISTER, cuMemHostUnregister),
    ENTRY(TRK_CU_MEMALLOCASYNC, cuMemAllocAsync),
    ENTRY(TRK_CU_MEMALLOCASYNC_PTSZ, cuMemAllocAsync_ptsz),
    ENTRY(TRK_CU_MEMFREEASYNC, cuMemFreeAsync),
    ENTRY(TRK_CU_MEMFREEASYNC_PTSZ, cuMemFreeAsync_ptsz),
    ENTRY(TRK_CU_MEMALLOCFROMPOOLASYNC, cuMemAllocFromPoolAsync),
    ENTRY(TRK_CU_MEMALLOCFROMPOOLASYNC_PTSZ, cuMemAllocFromPoolAsync_ptsz),
    ENTRY(TRK_CU_MEMCREATE, cuMemCreate),
    ENTRY(TRK_CU_MEMRELEASE, cuMemRelease),
    ENTRY(TRK_CU_MEMMAP, cuMemMap),
    ENTRY(TRK_CU_MEMUNMAP, cuMemUnmap),
    ENTRY(TRK_CU_MEMADDRESSRESERVE, cuMemAddressReserve),
    ENTRY(TRK_CU_MEMADDRESSFREE, cuMemAddressFree),
    ENTRY(TRK_CU_IPCOPENMEMHANDLE, cuIpcOpenMemHandle_v2),
    ENTRY(TRK_CU_IPCCLOSEMEMHANDLE, cuIpcCloseMemHandle),
    ENTRY(TRK_CU_MEMIMPORTFROMSHAREABLEHANDLE, cuMemImportFromShareableHandle),
    ENTRY(TRK_CU_ARRAYCREATE, cuArrayCreate_v2),
    ENTRY(TRK_CU_ARRAY3DCREATE, cuArray3DCreate_v2),
    ENTRY(TRK_CU_ARRAYDESTROY, cuArrayDestroy),
    ENTRY(TRK_CU_MEMPOOLIMPORTPOINTER, cuMemPoolImportPointer),
    [TRK_CU_GETPROCADDRESS] = {"cuGetProcAddress", (void *)cuGetProcAddress,
                               (void *)trk_cu_pa_getprocaddress},
    [TRK_CU_GETPROCADDRESS_V2] = {"cuGetProcAddress_v2", (void *)cuGetProcAddress_v2,
                                  (void *)trk_cu_pa_getprocaddress_v2},
};
