/* SPDX-License-Identifier: MIT
 *
 * cuda_fns.h - the CUDA driver entry points we interpose: their prototypes
 * (CUDA 13.0 cuda.h / cudaTypedefs.h ABI, with our own minimal types), their
 * indices, and the real-pointer slots shared by the PLT hooks
 * (cuda_hooks.c) and the resolver wrappers (cuda_procaddr.c).
 *
 * Two slots per entry point: one filled by symbol name (the PLT hooks, and
 * dlsym(handle, "cuMemAlloc_v2")), one by cuGetProcAddress(name, version,
 * flags). They are kept apart because nothing promises that the driver's
 * exported symbol and the pointer its resolver returns are the same
 * function, and calling the wrong one is worse than missing an event.
 * Never allocates.
 */
#ifndef TRK_CUDA_FNS_H
#define TRK_CUDA_FNS_H

#include <stdatomic.h>

#include "gpu/gpu.h"

enum trk_cu_fn {
    TRK_CU_MEMALLOC,
    TRK_CU_MEMFREE,
    TRK_CU_MEMALLOCPITCH,
    TRK_CU_MEMALLOCMANAGED,
    TRK_CU_MEMHOSTALLOC,
    TRK_CU_MEMALLOCHOST,
    TRK_CU_MEMFREEHOST,
    TRK_CU_MEMHOSTREGISTER,
    TRK_CU_MEMHOSTUNREGISTER,
    TRK_CU_MEMALLOCASYNC,
    TRK_CU_MEMALLOCASYNC_PTSZ,
    TRK_CU_MEMFREEASYNC,
    TRK_CU_MEMFREEASYNC_PTSZ,
    TRK_CU_MEMALLOCFROMPOOLASYNC,
    TRK_CU_MEMALLOCFROMPOOLASYNC_PTSZ,
    TRK_CU_MEMCREATE,
    TRK_CU_MEMRELEASE,
    TRK_CU_MEMMAP,
    TRK_CU_MEMUNMAP,
    TRK_CU_MEMADDRESSRESERVE,
    TRK_CU_MEMADDRESSFREE,
    TRK_CU_IPCOPENMEMHANDLE,
    TRK_CU_IPCCLOSEMEMHANDLE,
    TRK_CU_MEMIMPORTFROMSHAREABLEHANDLE,
    TRK_CU_ARRAYCREATE,
    TRK_CU_ARRAY3DCREATE,
    TRK_CU_ARRAYDESTROY,
    TRK_CU_MEMPOOLIMPORTPOINTER,
    TRK_CU_GETPROCADDRESS,    /* 4 arguments, CUDA 11.3-11.8 ABI */
    TRK_CU_GETPROCADDRESS_V2, /* 5 arguments, CUDA >= 12.0 */
    TRK_CU_FN_COUNT
};

/* One interposed entry point: its exported name, our exported hook (also
 * handed out for dlsym on a driver handle) and our hook for pointers that
 * cuGetProcAddress returned. */
struct trk_cu_fn_info {
    const char *name;
    void *hook;
    void *pa_hook;
};

extern const struct trk_cu_fn_info trk_cu_fns[TRK_CU_FN_COUNT] TRK_HIDDEN;
extern void *_Atomic trk_cu_real[TRK_CU_FN_COUNT] TRK_HIDDEN;
extern void *_Atomic trk_cu_pa_real[TRK_CU_FN_COUNT] TRK_HIDDEN;

/* The by-name real pointer, resolved on first use (gpu_real.c rules). */
void *trk_cu_plt_resolve(enum trk_cu_fn f) TRK_HIDDEN;

static inline void *trk_cu_plt(enum trk_cu_fn f)
{
    void *p = atomic_load_explicit(&trk_cu_real[f], memory_order_acquire);
    return TRK_LIKELY(p != NULL) ? p : trk_cu_plt_resolve(f);
}

/* Resolver hooks for pointers cuGetProcAddress handed out (cuda_procaddr.c). */
trk_cu_result trk_cu_pa_getprocaddress(const char *symbol, void **pfn, int version,
                                       uint64_t flags) TRK_HIDDEN;
trk_cu_result trk_cu_pa_getprocaddress_v2(const char *symbol, void **pfn, int version,
                                          uint64_t flags, int *status) TRK_HIDDEN;

/* ---- The exported hooks: the driver's names and ABI --------------------- */

typedef void *trk_cu_stream;
typedef void *trk_cu_pool;
typedef void *trk_cu_array;

trk_cu_result cuMemAlloc_v2(trk_cu_ptr *dptr, size_t bytesize);
trk_cu_result cuMemFree_v2(trk_cu_ptr dptr);
trk_cu_result cuMemAllocPitch_v2(trk_cu_ptr *dptr, size_t *pitch, size_t width, size_t height,
                                 unsigned int elem_size);
trk_cu_result cuMemAllocManaged(trk_cu_ptr *dptr, size_t bytesize, unsigned int flags);
trk_cu_result cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags);
trk_cu_result cuMemAllocHost_v2(void **pp, size_t bytesize);
trk_cu_result cuMemFreeHost(void *p);
trk_cu_result cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags);
trk_cu_result cuMemHostUnregister(void *p);
trk_cu_result cuMemAllocAsync(trk_cu_ptr *dptr, size_t bytesize, trk_cu_stream stream);
trk_cu_result cuMemAllocAsync_ptsz(trk_cu_ptr *dptr, size_t bytesize, trk_cu_stream stream);
trk_cu_result cuMemFreeAsync(trk_cu_ptr dptr, trk_cu_stream stream);
trk_cu_result cuMemFreeAsync_ptsz(trk_cu_ptr dptr, trk_cu_stream stream);
trk_cu_result cuMemAllocFromPoolAsync(trk_cu_ptr *dptr, size_t bytesize, trk_cu_pool pool,
                                      trk_cu_stream stream);
trk_cu_result cuMemAllocFromPoolAsync_ptsz(trk_cu_ptr *dptr, size_t bytesize, trk_cu_pool pool,
                                           trk_cu_stream stream);
trk_cu_result cuMemCreate(trk_cu_handle *handle, size_t size, const struct trk_gpu_alloc_prop *prop,
                          unsigned long long flags);
trk_cu_result cuMemRelease(trk_cu_handle handle);
trk_cu_result cuMemMap(trk_cu_ptr ptr, size_t size, size_t offset, trk_cu_handle handle,
                       unsigned long long flags);
trk_cu_result cuMemUnmap(trk_cu_ptr ptr, size_t size);
trk_cu_result cuMemAddressReserve(trk_cu_ptr *ptr, size_t size, size_t alignment, trk_cu_ptr addr,
                                  unsigned long long flags);
trk_cu_result cuMemAddressFree(trk_cu_ptr ptr, size_t size);
trk_cu_result cuIpcOpenMemHandle_v2(trk_cu_ptr *pdptr, trk_cu_ipc_handle handle,
                                    unsigned int flags);
trk_cu_result cuIpcCloseMemHandle(trk_cu_ptr dptr);
trk_cu_result cuMemImportFromShareableHandle(trk_cu_handle *handle, void *os_handle,
                                             int handle_type);
trk_cu_result cuArrayCreate_v2(trk_cu_array *handle, const void *desc);
trk_cu_result cuArray3DCreate_v2(trk_cu_array *handle, const void *desc);
trk_cu_result cuArrayDestroy(trk_cu_array array);
trk_cu_result cuMemPoolImportPointer(trk_cu_ptr *ptr_out, trk_cu_pool pool, void *share_data);
trk_cu_result cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags);
trk_cu_result cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                                  int *status);

#endif /* TRK_CUDA_FNS_H */
