/* SPDX-License-Identifier: MIT
 *
 * fake_cudart.c - a test double of the CUDA runtime that reaches the driver
 * exactly the way the real one does (docs/GPU_INTERNALS.md §2 item 1): dlopen("libcuda.so.1")
 * (RTLD_LOCAL), dlsym(handle, "cuGetProcAddress_v2"), a "" probe, then every
 * entry point by base name and ABI version, including the per-thread-stream
 * variants (flags 2) and "cuGetProcAddress" itself, through which
 * cudaGetDriverEntryPoint[ByVersion] answers. Never a PLT call into the
 * driver: a preload that only exports cu* names sees nothing of it.
 *
 * Built three ways: libcudart.so.12 and libcudart.so.13 (version scripts
 * give every symbol the node libcudart.so.N, which binaries linked against
 * the real runtime require, docs/GPU_INTERNALS.md §10 item 2), and compiled into a program
 * as its "static runtime" (nvcc's default, no libcudart NEEDED).
 * FAKE_CUDART_VERSION is CUDART_VERSION (12080 or 13000).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "fake_api.h"

#ifndef FAKE_CUDART_VERSION
#define FAKE_CUDART_VERSION 12080
#endif

#define cudaErrorInitializationError 3
#define cudaErrorInsufficientDriver 35

static struct {
    PFN_cuGetProcAddress_v12000 gpa;        /* from dlsym */
    PFN_cuGetProcAddress_v12000 gpa_stored; /* from gpa("cuGetProcAddress", 12000) */
    CUresult (*init)(unsigned);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*alloc_pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
    CUresult (*alloc_managed)(CUdeviceptr *, size_t, unsigned);
    CUresult (*host_alloc)(void **, size_t, unsigned);
    CUresult (*free_host)(void *);
    CUresult (*alloc_async[2])(CUdeviceptr *, size_t, CUstream);
    CUresult (*free_async[2])(CUdeviceptr, CUstream);
} drv;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cudaError_t init_error;

static void *get(const char *name, int version, uint64_t flags)
{
    void *p = NULL;
    int status = -1;
    if (drv.gpa(name, &p, version, flags, &status) != CUDA_SUCCESS || status != 0)
        return NULL;
    return p;
}

#define GET(field, name, version, flags) \
    drv.field = (__typeof__(drv.field))get(name, version, flags)

static void runtime_init(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        init_error = cudaErrorInsufficientDriver;
        return;
    }
    drv.gpa = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
    if (!drv.gpa) {
        init_error = cudaErrorInsufficientDriver;
        return;
    }
    void *probe = NULL;
    drv.gpa("", &probe, 0, 0, NULL);
    GET(init, "cuInit", 2000, 0);
    GET(gpa_stored, "cuGetProcAddress", 12000, 0);
    GET(retain, "cuDevicePrimaryCtxRetain", 7000, 0);
    GET(set_current, "cuCtxSetCurrent", 4000, 0);
    GET(alloc, "cuMemAlloc", 3020, 0);
    GET(free, "cuMemFree", 3020, 0);
    GET(alloc_pitch, "cuMemAllocPitch", 3020, 0);
    GET(alloc_managed, "cuMemAllocManaged", 6000, 0);
    GET(host_alloc, "cuMemHostAlloc", 2020, 0);
    GET(free_host, "cuMemFreeHost", 2000, 0);
    GET(alloc_async[0], "cuMemAllocAsync", 11020, 0);
    GET(alloc_async[1], "cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    GET(free_async[0], "cuMemFreeAsync", 11020, 0);
    GET(free_async[1], "cuMemFreeAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    if (!drv.init || !drv.gpa_stored || !drv.alloc || !drv.free || !drv.host_alloc ||
        !drv.free_host || !drv.alloc_async[0] || !drv.alloc_async[1] || !drv.free_async[0] ||
        !drv.free_async[1] || drv.init(0) != CUDA_SUCCESS)
        init_error = cudaErrorInitializationError;
}

static cudaError_t ready(void)
{
    pthread_once(&once, runtime_init);
    return init_error;
}

int fake_cudart_version(void)
{
    return FAKE_CUDART_VERSION;
}

cudaError_t cudaSetDevice(int device)
{
    cudaError_t e = ready();
    if (e)
        return e;
    CUcontext ctx = NULL;
    CUresult r = drv.retain(&ctx, device);
    return r ? r : drv.set_current(ctx);
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    cudaError_t e = ready();
    if (e)
        return e;
    CUdeviceptr d = 0;
    CUresult r = drv.alloc(&d, size);
    *p = (void *)(uintptr_t)d;
    return r;
}

/* cudaFree(NULL) is the "create the context" idiom: no driver free. */
cudaError_t cudaFree(void *p)
{
    cudaError_t e = ready();
    if (e || !p)
        return e;
    return drv.free((uintptr_t)p);
}

cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags)
{
    cudaError_t e = ready();
    if (e)
        return e;
    CUdeviceptr d = 0;
    CUresult r = drv.alloc_managed(&d, size, flags);
    *p = (void *)(uintptr_t)d;
    return r;
}

/* Both reach cuMemHostAlloc, as in the real runtime (docs/GPU_INTERNALS.md §4 item 2). */
cudaError_t cudaMallocHost(void **p, size_t size)
{
    cudaError_t e = ready();
    return e ? e : drv.host_alloc(p, size, 0);
}

cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
    cudaError_t e = ready();
    return e ? e : drv.host_alloc(p, size, flags);
}

cudaError_t cudaFreeHost(void *p)
{
    cudaError_t e = ready();
    return e ? e : drv.free_host(p);
}

cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    cudaError_t e = ready();
    if (e)
        return e;
    CUdeviceptr d = 0;
    CUresult r = drv.alloc_pitch(&d, pitch, width, height, 4);
    *p = (void *)(uintptr_t)d;
    return r;
}

static cudaError_t malloc_async(int ptsz, void **p, size_t size, CUstream s)
{
    cudaError_t e = ready();
    if (e)
        return e;
    CUdeviceptr d = 0;
    CUresult r = drv.alloc_async[ptsz](&d, size, s);
    *p = (void *)(uintptr_t)d;
    return r;
}

cudaError_t cudaMallocAsync(void **p, size_t size, CUstream s)
{
    return malloc_async(0, p, size, s);
}

cudaError_t cudaMallocAsync_ptsz(void **p, size_t size, CUstream s)
{
    return malloc_async(1, p, size, s);
}

cudaError_t cudaFreeAsync(void *p, CUstream s)
{
    cudaError_t e = ready();
    return e ? e : drv.free_async[0]((uintptr_t)p, s);
}

cudaError_t cudaFreeAsync_ptsz(void *p, CUstream s)
{
    cudaError_t e = ready();
    return e ? e : drv.free_async[1]((uintptr_t)p, s);
}

/* Both go through the pointer the runtime obtained for "cuGetProcAddress",
 * never through an exported symbol (docs/GPU_INTERNALS.md §2 item 7). */
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags,
                                    int *status)
{
    cudaError_t e = ready();
    return e ? e : drv.gpa_stored(symbol, fn, FAKE_CUDART_VERSION, flags, status);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                             unsigned long long flags, int *status)
{
    cudaError_t e = ready();
    return e ? e : drv.gpa_stored(symbol, fn, (int)version, flags, status);
}
