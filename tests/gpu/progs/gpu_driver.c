/* SPDX-License-Identifier: MIT
 *
 * gpu_driver.c - calls the CUDA driver API directly through the PLT
 * (linked against the fake libcuda.so.1), one scenario per run:
 *
 *   basic    device 1 MiB + 3 MiB, pitched 1000x10 (pitch 1024), managed 2 MiB;
 *            frees the 1 MiB and the pitched block
 *   host     pinned 1 MiB (cuMemHostAlloc) + 64 KiB (cuMemAllocHost_v2, which
 *            the fake implements by calling cuMemHostAlloc through
 *            RTLD_DEFAULT: one event, not two), both freed; a 256 KiB
 *            registration
 *   async    cuMemAllocAsync 4 MiB, _ptsz 2 MiB, FromPool 1 MiB, FromPool_ptsz
 *            512 KiB; frees the first two (the second with _ptsz)
 *   vmm      on device 1: reserve 1 GiB, create 2 MiB + 4 MiB, map both,
 *            unmap and release the 2 MiB one
 *   oom      2 GiB refused (run with FAKE_CUDA_OOM_ABOVE), then 1 MiB leaked
 *   import   IPC 8 MiB (closed), pool import 4 MiB, shareable handle (released)
 *   array    1 MiB 2D array (destroyed) and 256 KiB 3D array
 *   device   1 MiB on device 0, 2 MiB and 4 MiB on device 1, frees the 2 MiB
 *   threads  8 threads x 200 alloc/free pairs of 64 KiB, then (i+1) x 64 KiB
 *            each left live
 *   fork     1 MiB in the parent; the child allocates 2 MiB (freed) and
 *            4 MiB (leaked); the parent frees its 1 MiB after the child exits
 *   sleep    32 MiB held for 700 ms, for the NVML sampler, then freed, and
 *            700 ms more
 *
 * Prints key=value lines (harness.kv). Every allocating call sits in a
 * function of its own name, which the tests look for in the stacks.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../fake/fake_api.h"

#define MiB (1ull << 20)
#define KiB (1ull << 10)

static void check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "%s failed: %d\n", what, r);
        exit(1);
    }
}

__attribute__((noinline)) static CUdeviceptr alloc_device(size_t n)
{
    CUdeviceptr d = 0;
    check(cuMemAlloc_v2(&d, n), "cuMemAlloc_v2");
    return d;
}

__attribute__((noinline)) static CUdeviceptr alloc_pitched(size_t w, size_t h, size_t *pitch)
{
    CUdeviceptr d = 0;
    check(cuMemAllocPitch_v2(&d, pitch, w, h, 4), "cuMemAllocPitch_v2");
    return d;
}

__attribute__((noinline)) static CUdeviceptr alloc_managed(size_t n)
{
    CUdeviceptr d = 0;
    check(cuMemAllocManaged(&d, n, 1), "cuMemAllocManaged");
    return d;
}

static void scenario_basic(void)
{
    CUdeviceptr a = alloc_device(1 * MiB);
    CUdeviceptr b = alloc_device(3 * MiB);
    size_t pitch = 0;
    CUdeviceptr c = alloc_pitched(1000, 10, &pitch);
    CUdeviceptr m = alloc_managed(2 * MiB);
    check(cuMemFree_v2(a), "cuMemFree_v2");
    check(cuMemFree_v2(c), "cuMemFree_v2");
    printf("pitch=%zu\nleaked_device=0x%llx\nleaked_managed=0x%llx\n", pitch, b, m);
}

__attribute__((noinline)) static void *alloc_pinned(size_t n)
{
    void *p = NULL;
    check(cuMemHostAlloc(&p, n, 0), "cuMemHostAlloc");
    return p;
}

__attribute__((noinline)) static void *alloc_pinned_legacy(size_t n)
{
    void *p = NULL;
    check(cuMemAllocHost_v2(&p, n), "cuMemAllocHost_v2");
    return p;
}

static void scenario_host(void)
{
    void *a = alloc_pinned(1 * MiB);
    void *b = alloc_pinned_legacy(64 * KiB);
    memset(a, 1, 4096);
    check(cuMemFreeHost(a), "cuMemFreeHost");
    check(cuMemFreeHost(b), "cuMemFreeHost");
    void *buf = malloc(256 * KiB);
    check(cuMemHostRegister_v2(buf, 256 * KiB, 0), "cuMemHostRegister_v2");
    check(cuMemHostUnregister(buf), "cuMemHostUnregister");
    free(buf);
    struct fake_cuda_counts fc;
    fake_cuda_counts(&fc);
    printf("nested_calls=%lu\n", fc.nested_calls);
}

__attribute__((noinline)) static CUdeviceptr alloc_async(size_t n, CUstream s, int ptsz)
{
    CUdeviceptr d = 0;
    check(ptsz ? cuMemAllocAsync_ptsz(&d, n, s) : cuMemAllocAsync(&d, n, s), "cuMemAllocAsync");
    return d;
}

__attribute__((noinline)) static CUdeviceptr alloc_from_pool(size_t n, CUstream s, int ptsz)
{
    CUdeviceptr d = 0;
    CUmemoryPool pool = (CUmemoryPool)(uintptr_t)0x9000;
    check(ptsz ? cuMemAllocFromPoolAsync_ptsz(&d, n, pool, s)
               : cuMemAllocFromPoolAsync(&d, n, pool, s),
          "cuMemAllocFromPoolAsync");
    return d;
}

static void scenario_async(void)
{
    CUstream s1 = (CUstream)(uintptr_t)0x1234, s2 = (CUstream)(uintptr_t)0x5678;
    CUdeviceptr a = alloc_async(4 * MiB, s1, 0);
    CUdeviceptr b = alloc_async(2 * MiB, s2, 1);
    alloc_from_pool(1 * MiB, s1, 0);
    alloc_from_pool(512 * KiB, s2, 1);
    check(cuMemFreeAsync(a, s1), "cuMemFreeAsync");
    check(cuMemFreeAsync_ptsz(b, s2), "cuMemFreeAsync_ptsz");
    struct fake_cuda_counts fc;
    fake_cuda_counts(&fc);
    printf("ptsz_calls=%lu\n", fc.ptsz_calls);
}

__attribute__((noinline)) static CUmemGenericAllocationHandle create_physical(size_t n, int dev)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = 1; /* pinned */
    prop.location.type = 1;
    prop.location.id = dev;
    CUmemGenericAllocationHandle h = 0;
    check(cuMemCreate(&h, n, &prop, 0), "cuMemCreate");
    return h;
}

static void set_device(int dev)
{
    CUcontext ctx;
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

static void scenario_vmm(void)
{
    set_device(1);
    CUdeviceptr va = 0;
    check(cuMemAddressReserve(&va, 1024 * MiB, 0, 0, 0), "cuMemAddressReserve");
    CUmemGenericAllocationHandle h1 = create_physical(2 * MiB, 1);
    CUmemGenericAllocationHandle h2 = create_physical(4 * MiB, 1);
    check(cuMemMap(va, 2 * MiB, 0, h1, 0), "cuMemMap");
    check(cuMemMap(va + 2 * MiB, 4 * MiB, 0, h2, 0), "cuMemMap");
    check(cuMemUnmap(va, 2 * MiB), "cuMemUnmap");
    check(cuMemRelease(h1), "cuMemRelease");
    printf("va=0x%llx\nh1=%llu\nh2=%llu\nused1=%llu\n", va, h1, h2, fake_cuda_used_bytes(1));
}

__attribute__((noinline)) static CUresult try_huge_alloc(CUdeviceptr *d)
{
    return cuMemAlloc_v2(d, 2048 * MiB);
}

static void scenario_oom(void)
{
    CUdeviceptr d = 0;
    CUresult r = try_huge_alloc(&d);
    printf("oom_result=%d\n", r);
    alloc_device(1 * MiB);
}

__attribute__((noinline)) static CUdeviceptr import_ipc(size_t n)
{
    CUipcMemHandle h;
    memset(&h, 0, sizeof(h));
    unsigned long long size = n;
    memcpy(h.reserved, &size, sizeof(size));
    CUdeviceptr d = 0;
    check(cuIpcOpenMemHandle_v2(&d, h, 1), "cuIpcOpenMemHandle_v2");
    return d;
}

static void scenario_import(void)
{
    CUdeviceptr a = import_ipc(8 * MiB);
    check(cuIpcCloseMemHandle(a), "cuIpcCloseMemHandle");
    CUmemPoolPtrExportData data;
    memset(&data, 0, sizeof(data));
    unsigned long long size = 4 * MiB;
    memcpy(data.reserved, &size, sizeof(size));
    CUdeviceptr b = 0;
    check(cuMemPoolImportPointer(&b, (CUmemoryPool)(uintptr_t)0x9000, &data),
          "cuMemPoolImportPointer");
    CUmemGenericAllocationHandle h = 0;
    check(cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)(2 * MiB), 1),
          "cuMemImportFromShareableHandle");
    check(cuMemRelease(h), "cuMemRelease");
    printf("pool_import=0x%llx\n", b);
}

__attribute__((noinline)) static CUarray create_array(void)
{
    CUDA_ARRAY_DESCRIPTOR d = {256, 256, CU_AD_FORMAT_FLOAT, 4}; /* 1 MiB */
    CUarray a = NULL;
    check(cuArrayCreate_v2(&a, &d), "cuArrayCreate_v2");
    return a;
}

__attribute__((noinline)) static CUarray create_array3d(void)
{
    CUDA_ARRAY3D_DESCRIPTOR d = {64, 64, 64, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0}; /* 256 KiB */
    CUarray a = NULL;
    check(cuArray3DCreate_v2(&a, &d), "cuArray3DCreate_v2");
    return a;
}

static void scenario_array(void)
{
    CUarray a = create_array();
    create_array3d();
    check(cuArrayDestroy(a), "cuArrayDestroy");
}

static void scenario_device(void)
{
    alloc_device(1 * MiB);
    set_device(1);
    CUdeviceptr b = alloc_device(2 * MiB);
    alloc_device(4 * MiB);
    check(cuMemFree_v2(b), "cuMemFree_v2");
}

#define THREADS 8
#define ROUNDS 200

static void *thread_main(void *arg)
{
    int i = (int)(intptr_t)arg;
    for (int k = 0; k < ROUNDS; k++) {
        CUdeviceptr d = alloc_device(64 * KiB);
        check(cuMemFree_v2(d), "cuMemFree_v2");
    }
    alloc_device((size_t)(i + 1) * 64 * KiB);
    return NULL;
}

static void scenario_threads(void)
{
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    printf("threads=%d\nrounds=%d\n", THREADS, ROUNDS);
}

__attribute__((noinline)) static void child_work(void)
{
    CUdeviceptr b = alloc_device(2 * MiB);
    check(cuMemFree_v2(b), "cuMemFree_v2");
    alloc_device(4 * MiB);
}

static void scenario_fork(void)
{
    CUdeviceptr a = alloc_device(1 * MiB);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        child_work();
        exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    check(cuMemFree_v2(a), "cuMemFree_v2");
    printf("child=%d\nchild_status=%d\n", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void scenario_sleep(void)
{
    CUdeviceptr a = alloc_device(32 * MiB);
    struct timespec ts = {0, 700000000};
    nanosleep(&ts, NULL);
    check(cuMemFree_v2(a), "cuMemFree_v2");
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } scenarios[] = {
        {"basic", scenario_basic}, {"host", scenario_host},     {"async", scenario_async},
        {"vmm", scenario_vmm},     {"oom", scenario_oom},       {"import", scenario_import},
        {"array", scenario_array}, {"device", scenario_device}, {"threads", scenario_threads},
        {"fork", scenario_fork},   {"sleep", scenario_sleep},
    };
    if (argc < 2) {
        fprintf(stderr, "usage: gpu_driver SCENARIO\n");
        return 2;
    }
    check(cuInit(0), "cuInit");
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
        if (strcmp(argv[1], scenarios[i].name) == 0) {
            scenarios[i].fn();
            printf("done=1\n");
            return 0;
        }
    fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return 2;
}
