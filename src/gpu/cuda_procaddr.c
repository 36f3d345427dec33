/* SPDX-License-Identifier: MIT
 *
 * cuda_procaddr.c - making the pointers the driver's resolvers hand out our
 * own: cuGetProcAddress (4 arguments), cuGetProcAddress_v2 (5 arguments),
 * and dlsym(driver handle, "cuMemAlloc_v2"…).
 *
 * The CUDA runtime (static or shared, and every library embedding it)
 * resolves ~440 driver entry points by base name and ABI version through
 * cuGetProcAddress_v2, before cuInit (docs/GPU_INTERNALS.md §2 item 1). We call the real
 * resolver and swap the result only for (name, version range, flags) whose
 * ABI we know; everything else passes through untouched (docs/GPU_INTERNALS.md §4, §3
 * item 4): ("cuMemAlloc", 2000) is the old 32-bit ABI and must stay the
 * driver's. Per-thread-stream variants (flags & 2) have slots of their own.
 * For "cuGetProcAddress" itself we return our resolver wrapper, so lookups
 * made later through that pointer, which is what
 * cudaGetDriverEntryPoint[ByVersion] does (PyTorch's VMM allocator, NCCL),
 * are wrapped too.
 *
 * Must not: allocate, or wrap a pointer that is already ours.
 */
#include <string.h>

#include "gpu/cuda_fns.h"

/* Above this, an entry point may have a new ABI we have not seen: pass it
 * through. CUDA 13.0's headers are the last ones checked (docs/GPU_INTERNALS.md §4). */
#define TRK_CU_VERSION_MAX 14000
#define NO_PTSZ            TRK_CU_FN_COUNT

struct pa_entry {
    const char *name; /* base name as the runtime asks for it */
    int min, max;     /* version range [min, max) with this ABI */
    enum trk_cu_fn fn, fn_ptsz;
};

/* Minimum versions are those of the PFN typedefs in cudaTypedefs.h
 * (CUDA 13.0) whose prototype our hooks implement. */
static const struct pa_entry pa_table[] = {
    {"cuMemAlloc", 3020, TRK_CU_VERSION_MAX, TRK_CU_MEMALLOC, NO_PTSZ},
    {"cuMemFree", 3020, TRK_CU_VERSION_MAX, TRK_CU_MEMFREE, NO_PTSZ},
    {"cuMemAllocPitch", 3020, TRK_CU_VERSION_MAX, TRK_CU_MEMALLOCPITCH, NO_PTSZ},
    {"cuMemAllocManaged", 6000, TRK_CU_VERSION_MAX, TRK_CU_MEMALLOCMANAGED, NO_PTSZ},
    {"cuMemHostAlloc", 2020, TRK_CU_VERSION_MAX, TRK_CU_MEMHOSTALLOC, NO_PTSZ},
    {"cuMemAllocHost", 3020, TRK_CU_VERSION_MAX, TRK_CU_MEMALLOCHOST, NO_PTSZ},
    {"cuMemFreeHost", 2000, TRK_CU_VERSION_MAX, TRK_CU_MEMFREEHOST, NO_PTSZ},
    {"cuMemHostRegister", 6050, TRK_CU_VERSION_MAX, TRK_CU_MEMHOSTREGISTER, NO_PTSZ},
    {"cuMemHostUnregister", 4000, TRK_CU_VERSION_MAX, TRK_CU_MEMHOSTUNREGISTER, NO_PTSZ},
    {"cuMemAllocAsync", 11020, TRK_CU_VERSION_MAX, TRK_CU_MEMALLOCASYNC, TRK_CU_MEMALLOCASYNC_PTSZ},
    {"cuMemFreeAsync", 11020, TRK_CU_VERSION_MAX, TRK_CU_MEMFREEASYNC, TRK_CU_MEMFREEASYNC_PTSZ},
    {"cuMemAllocFromPoolAsync", 11020, TRK_CU_VERSION_MAX, TRK_CU_MEMALLOCFROMPOOLASYNC,
     TRK_CU_MEMALLOCFROMPOOLASYNC_PTSZ},
    {"cuMemCreate", 10020, TRK_CU_VERSION_MAX, TRK_CU_MEMCREATE, NO_PTSZ},
    {"cuMemRelease", 10020, TRK_CU_VERSION_MAX, TRK_CU_MEMRELEASE, NO_PTSZ},
    {"cuMemMap", 10020, TRK_CU_VERSION_MAX, TRK_CU_MEMMAP, NO_PTSZ},
    {"cuMemUnmap", 10020, TRK_CU_VERSION_MAX, TRK_CU_MEMUNMAP, NO_PTSZ},
    {"cuMemAddressReserve", 10020, TRK_CU_VERSION_MAX, TRK_CU_MEMADDRESSRESERVE, NO_PTSZ},
    {"cuMemAddressFree", 10020, TRK_CU_VERSION_MAX, TRK_CU_MEMADDRESSFREE, NO_PTSZ},
    {"cuIpcOpenMemHandle", 11000, TRK_CU_VERSION_MAX, TRK_CU_IPCOPENMEMHANDLE, NO_PTSZ},
    {"cuIpcCloseMemHandle", 4010, TRK_CU_VERSION_MAX, TRK_CU_IPCCLOSEMEMHANDLE, NO_PTSZ},
    {"cuMemImportFromShareableHandle", 10020, TRK_CU_VERSION_MAX,
     TRK_CU_MEMIMPORTFROMSHAREABLEHANDLE, NO_PTSZ},
    {"cuArrayCreate", 3020, TRK_CU_VERSION_MAX, TRK_CU_ARRAYCREATE, NO_PTSZ},
    {"cuArray3DCreate", 3020, TRK_CU_VERSION_MAX, TRK_CU_ARRAY3DCREATE, NO_PTSZ},
    {"cuArrayDestroy", 2000, TRK_CU_VERSION_MAX, TRK_CU_ARRAYDESTROY, NO_PTSZ},
    {"cuMemPoolImportPointer", 11020, TRK_CU_VERSION_MAX, TRK_CU_MEMPOOLIMPORTPOINTER, NO_PTSZ},
    {"cuGetProcAddress", 11030, 12000, TRK_CU_GETPROCADDRESS, NO_PTSZ},
    {"cuGetProcAddress", 12000, TRK_CU_VERSION_MAX, TRK_CU_GETPROCADDRESS_V2, NO_PTSZ},
};

void *trk_cu_procaddr_wrap(const char *name, int version, uint64_t flags, void *p)
{
    if (!p || name[0] != 'c' || name[1] != 'u' || trk_gpu_is_ours(p))
        return p;
    for (size_t i = 0; i < sizeof(pa_table) / sizeof(pa_table[0]); i++) {
        const struct pa_entry *e = &pa_table[i];
        if (version < e->min || version >= e->max || strcmp(name, e->name) != 0)
            continue;
        /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2 (cuda.h 2413). */
        enum trk_cu_fn f = (flags & 2) && e->fn_ptsz != NO_PTSZ ? e->fn_ptsz : e->fn;
        return trk_gpu_slot_claim(&trk_cu_pa_real[f], p) ? trk_cu_fns[f].pa_hook : p;
    }
    return p;
}

/* dlsym on a driver handle: by exported name, into the by-name slots. */
void *trk_cu_dlsym_wrap(const char *name, void *p)
{
    if (trk_gpu_is_ours(p))
        return p;
    for (int f = 0; f < TRK_CU_FN_COUNT; f++) {
        if (strcmp(name, trk_cu_fns[f].name) != 0)
            continue;
        return trk_gpu_slot_claim(&trk_cu_real[f], p) ? trk_cu_fns[f].hook : p;
    }
    return p;
}

/* ---- The resolvers ----------------------------------------------------------
 *
 * No GPU scope or event: a lookup allocates no device memory. Arguments and
 * the result reach the driver and the caller unchanged; only *pfn may be
 * replaced, and only on success.
 */
typedef trk_cu_result (*gpa4_fn)(const char *, void **, int, uint64_t);
typedef trk_cu_result (*gpa5_fn)(const char *, void **, int, uint64_t, int *);

static void wrap_result(trk_cu_result r, const char *symbol, void **pfn, int version,
                        uint64_t flags)
{
    if (r == TRK_CUDA_SUCCESS && symbol && pfn && *pfn)
        *pfn = trk_cu_procaddr_wrap(symbol, version, flags, *pfn);
}

static trk_cu_result gpa4(void *fn, const char *symbol, void **pfn, int version, uint64_t flags)
{
    if (!fn)
        return TRK_CUDA_ERROR_NOT_INITIALIZED;
    trk_cu_result r = ((gpa4_fn)fn)(symbol, pfn, version, flags);
    wrap_result(r, symbol, pfn, version, flags);
    return r;
}

static trk_cu_result gpa5(void *fn, const char *symbol, void **pfn, int version, uint64_t flags,
                          int *status)
{
    if (!fn)
        return TRK_CUDA_ERROR_NOT_INITIALIZED;
    trk_cu_result r = ((gpa5_fn)fn)(symbol, pfn, version, flags, status);
    wrap_result(r, symbol, pfn, version, flags);
    return r;
}

TRK_EXPORT trk_cu_result cuGetProcAddress(const char *symbol, void **pfn, int version,
                                          uint64_t flags)
{
    return gpa4(trk_cu_plt(TRK_CU_GETPROCADDRESS), symbol, pfn, version, flags);
}

TRK_EXPORT trk_cu_result cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                             uint64_t flags, int *status)
{
    return gpa5(trk_cu_plt(TRK_CU_GETPROCADDRESS_V2), symbol, pfn, version, flags, status);
}

trk_cu_result trk_cu_pa_getprocaddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
    return gpa4(atomic_load_explicit(&trk_cu_pa_real[TRK_CU_GETPROCADDRESS], memory_order_acquire),
                symbol, pfn, version, flags);
}

trk_cu_result trk_cu_pa_getprocaddress_v2(const char *symbol, void **pfn, int version,
                                          uint64_t flags, int *status)
{
    return gpa5(
        atomic_load_explicit(&trk_cu_pa_real[TRK_CU_GETPROCADDRESS_V2], memory_order_acquire),
        symbol, pfn, version, flags, status);
}
