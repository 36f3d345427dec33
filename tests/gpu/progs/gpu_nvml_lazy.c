/* SPDX-License-Identifier: MIT
 *
 * gpu_nvml_lazy.c - a program that has the CUDA driver (the fake
 * libcuda.so.1) in the process, and allocates on the device or not; it
 * then says whether NVML (libnvidia-ml.so.1) was loaded into it, which only
 * the tracker would do (test_gpu_nvml_lazy.py):
 *
 *   none     linked with the driver: cuInit and a device count, no allocation
 *   alloc    linked with the driver: cuInit, 1 MiB cuMemAlloc_v2, freed
 *   dlopen   the driver loaded by dlopen: cuInit through dlsym, no allocation
 *   dlopen_alloc  the same, then 1 MiB through dlsym's cuMemAlloc_v2, freed
 *            (built as gpu_nvml_lazy_dl, with GPU_NVML_DLOPEN and without
 *            the driver linked in; the other two are not in that build)
 *
 * Each waits 300 ms (several sampler ticks) before looking at its maps.
 * Prints key=value lines (harness.kv): nvml=0|1, done=1.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../fake/fake_api.h"

static void check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "%s failed: %d\n", what, r);
        exit(1);
    }
}

/* 1 when libnvidia-ml.so.1 is mapped into this process. */
static int nvml_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    if (!f) {
        perror("/proc/self/maps");
        exit(1);
    }
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "libnvidia-ml.so"))
            found = 1;
    fclose(f);
    return found;
}

#ifndef GPU_NVML_DLOPEN
static void scenario_none(void)
{
    int n = 0;
    check(cuInit(0), "cuInit");
    check(cuDeviceGetCount(&n), "cuDeviceGetCount");
}

__attribute__((noinline)) static void scenario_alloc(void)
{
    CUdeviceptr d = 0;
    check(cuInit(0), "cuInit");
    check(cuMemAlloc_v2(&d, 1 << 20), "cuMemAlloc_v2");
    check(cuMemFree_v2(d), "cuMemFree_v2");
}
#endif

static void scenario_dlopen(int alloc)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
        exit(1);
    }
    CUresult (*init)(unsigned int) = (CUresult(*)(unsigned int))dlsym(h, "cuInit");
    if (!init) {
        fprintf(stderr, "no cuInit\n");
        exit(1);
    }
    check(init(0), "cuInit");
    if (!alloc)
        return;
    CUresult (*mem_alloc)(CUdeviceptr *, size_t) =
        (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    CUresult (*mem_free)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))dlsym(h, "cuMemFree_v2");
    CUdeviceptr d = 0;
    if (!mem_alloc || !mem_free) {
        fprintf(stderr, "no cuMemAlloc_v2/cuMemFree_v2\n");
        exit(1);
    }
    check(mem_alloc(&d, 1 << 20), "cuMemAlloc_v2");
    check(mem_free(d), "cuMemFree_v2");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gpu_nvml_lazy none|alloc|dlopen|dlopen_alloc\n");
        return 2;
    }
    if (strcmp(argv[1], "dlopen") == 0)
        scenario_dlopen(0);
    else if (strcmp(argv[1], "dlopen_alloc") == 0)
        scenario_dlopen(1);
#ifndef GPU_NVML_DLOPEN
    else if (strcmp(argv[1], "none") == 0)
        scenario_none();
    else if (strcmp(argv[1], "alloc") == 0)
        scenario_alloc();
#endif
    else {
        fprintf(stderr, "unknown scenario %s\n", argv[1]);
        return 2;
    }
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
    printf("nvml=%d\ndone=1\n", nvml_mapped());
    return 0;
}
