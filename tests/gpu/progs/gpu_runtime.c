/* SPDX-License-Identifier: MIT
 *
 * gpu_runtime.c - allocates through the CUDA runtime API only. Built three
 * times: against the fake libcudart.so.12 and libcudart.so.13, and with the
 * fake runtime compiled in (gpu_static_rt: no libcudart NEEDED, like nvcc's
 * default -cudart static). The runtime reaches the driver through
 * cuGetProcAddress_v2 only, so every event seen here went through the
 * tracker's dlsym and resolver wrappers. Scenarios:
 *
 *   basic  cudaFree(NULL) (init idiom, no event); cudaMalloc 1 MiB (freed)
 *          and 5 MiB; cudaMallocHost 256 KiB (freed); cudaMallocManaged
 *          2 MiB; cudaMallocPitch 1000x10 (pitch 1024); cudaMallocAsync 4 MiB
 *          on stream 0x77 and cudaMallocAsync_ptsz 2 MiB on 0x88 (freed with
 *          cudaFreeAsync_ptsz)
 *   entry  cudaGetDriverEntryPoint("cuMemAlloc") 3 MiB leaked; VMM through
 *          cudaGetDriverEntryPointByVersion(12000): reserve 64 MiB, create
 *          2 MiB, map, unmap, release, free the reservation
 *   oom    cudaMalloc of 2 GiB refused (FAKE_CUDA_OOM_ABOVE)
 * Prints key=value lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake/fake_api.h"

#define MiB (1ull << 20)
#define KiB (1ull << 10)

static void check(cudaError_t e, const char *what)
{
    if (e) {
        fprintf(stderr, "%s failed: %d\n", what, e);
        exit(1);
    }
}

__attribute__((noinline)) static void *rt_alloc(size_t n)
{
    void *p = NULL;
    check(cudaMalloc(&p, n), "cudaMalloc");
    return p;
}

__attribute__((noinline)) static void *rt_alloc_host(size_t n)
{
    void *p = NULL;
    check(cudaMallocHost(&p, n), "cudaMallocHost");
    return p;
}

static void scenario_basic(void)
{
    check(cudaFree(NULL), "cudaFree(NULL)");
    void *a = rt_alloc(1 * MiB);
    void *b = rt_alloc(5 * MiB);
    void *h = rt_alloc_host(256 * KiB);
    void *m = NULL, *pp = NULL, *x = NULL, *y = NULL;
    size_t pitch = 0;
    check(cudaMallocManaged(&m, 2 * MiB, 1), "cudaMallocManaged");
    check(cudaMallocPitch(&pp, &pitch, 1000, 10), "cudaMallocPitch");
    check(cudaMallocAsync(&x, 4 * MiB, (CUstream)(uintptr_t)0x77), "cudaMallocAsync");
    check(cudaMallocAsync_ptsz(&y, 2 * MiB, (CUstream)(uintptr_t)0x88), "cudaMallocAsync_ptsz");
    check(cudaFree(a), "cudaFree");
    check(cudaFreeHost(h), "cudaFreeHost");
    check(cudaFreeAsync_ptsz(y, (CUstream)(uintptr_t)0x88), "cudaFreeAsync_ptsz");
    printf("pitch=%zu\nleaked=%p\n", pitch, b);
}

__attribute__((noinline)) static void *alloc_through_entry_point(size_t n)
{
    void *fn = NULL;
    int st = -1;
    check(cudaGetDriverEntryPoint("cuMemAlloc", &fn, 0, &st), "cudaGetDriverEntryPoint");
    CUdeviceptr d = 0;
    check(((PFN_cuMemAlloc_v3020)fn)(&d, n), "cuMemAlloc via entry point");
    return (void *)(uintptr_t)d;
}

static void *entry(const char *name)
{
    void *fn = NULL;
    int st = -1;
    check(cudaGetDriverEntryPointByVersion(name, &fn, 12000, 0, &st), name);
    return fn;
}

/* What PyTorch's expandable segments do (docs/GPU_INTERNALS.md §8 item 3). */
__attribute__((noinline)) static void expandable_segment(void)
{
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) =
        (CUresult(*)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))entry(
            "cuMemAddressReserve");
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                       unsigned long long) =
        (CUresult(*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                     unsigned long long))entry("cuMemCreate");
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                    unsigned long long) =
        (CUresult(*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                     unsigned long long))entry("cuMemMap");
    CUresult (*unmap)(CUdeviceptr, size_t) = (CUresult(*)(CUdeviceptr, size_t))entry("cuMemUnmap");
    CUresult (*release)(CUmemGenericAllocationHandle) =
        (CUresult(*)(CUmemGenericAllocationHandle))entry("cuMemRelease");
    CUresult (*addr_free)(CUdeviceptr, size_t) =
        (CUresult(*)(CUdeviceptr, size_t))entry("cuMemAddressFree");
    CUdeviceptr va = 0;
    check(reserve(&va, 64 * MiB, 0, 0, 0), "reserve");
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = 1;
    prop.location.type = 1;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h = 0;
    check(create(&h, 2 * MiB, &prop, 0), "create");
    check(map(va, 2 * MiB, 0, h, 0), "map");
    check(unmap(va, 2 * MiB), "unmap");
    check(release(h), "release");
    check(addr_free(va, 64 * MiB), "address free");
    printf("va=0x%llx\nhandle=%llu\n", va, h);
}

static void scenario_entry(void)
{
    alloc_through_entry_point(3 * MiB);
    expandable_segment();
}

__attribute__((noinline)) static cudaError_t rt_alloc_huge(void)
{
    void *p = NULL;
    return cudaMalloc(&p, 2048 * MiB);
}

static void scenario_oom(void)
{
    printf("oom_result=%d\n", rt_alloc_huge());
}

int main(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : "basic";
    if (strcmp(s, "basic") == 0)
        scenario_basic();
    else if (strcmp(s, "entry") == 0)
        scenario_entry();
    else if (strcmp(s, "oom") == 0)
        scenario_oom();
    else
        return 2;
    printf("runtime_version=%d\ndone=1\n", fake_cudart_version());
    return 0;
}
