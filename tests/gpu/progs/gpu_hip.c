/* SPDX-License-Identifier: MIT
 *
 * gpu_hip.c - the HIP runtime through its PLT (linked against the fake
 * libamdhip64.so.6, versioned hip_4.2/hip_5.1/hip_6.1), through
 * hipGetProcAddress, and through dlsym on the runtime's handle:
 *   device 0: hipMalloc 1 MiB (freed) and 3 MiB, hipExtMallocWithFlags
 *             1 MiB, hipMallocPitch 1000x10 (pitch 1024), hipMallocAsync
 *             4 MiB on stream 0x99 (hipFreeAsync), hipHostMalloc 512 KiB
 *             (hipHostFree), VMM create 2 MiB (mapped, unmapped, released)
 *             in a 256 MiB reservation, a 128 KiB registration,
 *             hipGetProcAddress("hipMalloc") 6 MiB, dlsym(h, "hipMalloc")
 *             7 MiB freed through dlsym(h, "hipFree")
 *   device 1: hipMallocManaged 2 MiB
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake/fake_api.h"

#define MiB (1ull << 20)
#define KiB (1ull << 10)

static void check(hipError_t e, const char *what)
{
    if (e) {
        fprintf(stderr, "%s failed: %d\n", what, e);
        exit(1);
    }
}

__attribute__((noinline)) static void *hip_alloc(size_t n)
{
    void *p = NULL;
    check(hipMalloc(&p, n), "hipMalloc");
    return p;
}

__attribute__((noinline)) static void *hip_alloc_procaddr(size_t n)
{
    void *fn = NULL;
    int st = -1;
    check(hipGetProcAddress("hipMalloc", &fn, 602, 0, &st), "hipGetProcAddress");
    void *p = NULL;
    check(((hipError_t(*)(void **, size_t))fn)(&p, n), "hipMalloc via hipGetProcAddress");
    return p;
}

__attribute__((noinline)) static void hip_roundtrip_dlsym(size_t n)
{
    void *h = dlopen("libamdhip64.so.6", RTLD_NOW | RTLD_NOLOAD);
    hipError_t (*m)(void **, size_t) = h ? (hipError_t(*)(void **, size_t))dlsym(h, "hipMalloc")
                                         : NULL;
    hipError_t (*f)(void *) = h ? (hipError_t(*)(void *))dlsym(h, "hipFree") : NULL;
    if (!m || !f)
        exit(1);
    void *p = NULL;
    check(m(&p, n), "hipMalloc via dlsym");
    check(f(p), "hipFree via dlsym");
}

int main(void)
{
    void *a = hip_alloc(1 * MiB);
    hip_alloc(3 * MiB);
    void *e = NULL, *pp = NULL, *x = NULL, *hst = NULL, *m = NULL, *va = NULL;
    size_t pitch = 0;
    check(hipExtMallocWithFlags(&e, 1 * MiB, 1), "hipExtMallocWithFlags");
    check(hipMallocPitch(&pp, &pitch, 1000, 10), "hipMallocPitch");
    check(hipMallocAsync(&x, 4 * MiB, (hipStream_t)(uintptr_t)0x99), "hipMallocAsync");
    check(hipHostMalloc(&hst, 512 * KiB, 0), "hipHostMalloc");
    check(hipFree(a), "hipFree");
    check(hipFreeAsync(x, (hipStream_t)(uintptr_t)0x99), "hipFreeAsync");
    check(hipHostFree(hst), "hipHostFree");

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.location.type = 1;
    prop.location.id = 0;
    hipMemGenericAllocationHandle_t h = NULL;
    check(hipMemAddressReserve(&va, 256 * MiB, 0, NULL, 0), "hipMemAddressReserve");
    check(hipMemCreate(&h, 2 * MiB, &prop, 0), "hipMemCreate");
    check(hipMemMap(va, 2 * MiB, 0, h, 0), "hipMemMap");
    check(hipMemUnmap(va, 2 * MiB), "hipMemUnmap");
    check(hipMemRelease(h), "hipMemRelease");
    check(hipMemAddressFree(va, 256 * MiB), "hipMemAddressFree");

    static char buf[128 * 1024];
    check(hipHostRegister(buf, sizeof(buf), 0), "hipHostRegister");
    check(hipHostUnregister(buf), "hipHostUnregister");

    hip_alloc_procaddr(6 * MiB);
    hip_roundtrip_dlsym(7 * MiB);

    check(hipSetDevice(1), "hipSetDevice");
    check(hipMallocManaged(&m, 2 * MiB, 1), "hipMallocManaged");
    printf("pitch=%zu\ndone=1\n", pitch);
    return 0;
}
