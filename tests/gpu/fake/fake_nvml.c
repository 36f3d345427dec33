/* SPDX-License-Identifier: MIT
 *
 * fake_nvml.c - a test double of NVML (libnvidia-ml.so.1): the devices of
 * the fake driver, listed in the opposite order of their CUDA ordinals (as
 * CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES can make them), each with its
 * PCI location, and one compute process per device in use: this one, with
 * the bytes the fake driver reports (fake_cuda_used_bytes: its allocations
 * plus a fixed context), next to a foreign process that must be ignored.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_api.h"

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n,
                                                     nvmlProcessInfo_t *infos);

#define TOTAL (80ull << 30)

static unsigned int count(void)
{
    const char *s = getenv("FAKE_CUDA_DEVICES");
    return s && atoi(s) > 0 ? (unsigned)atoi(s) : 2;
}

static int ordinal_of(nvmlDevice_t d)
{
    return (int)count() - (int)(uintptr_t)d; /* handle = index + 1 */
}

nvmlReturn_t nvmlInit_v2(void)
{
    return 0;
}

nvmlReturn_t nvmlShutdown(void)
{
    return 0;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = count();
    return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    if (i >= count())
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *d = (nvmlDevice_t)(uintptr_t)(i + 1);
    return 0;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
    memset(pci, 0, sizeof(*pci));
    pci->bus = 0x10 + (unsigned)ordinal_of(d);
    return 0;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    (void)d;
    m->total = TOTAL;
    m->used = m->free = 0;
    return 0;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n,
                                                     nvmlProcessInfo_t *infos)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    unsigned long long (*used)(int) =
        cuda ? (unsigned long long (*)(int))dlsym(cuda, "fake_cuda_used_bytes") : NULL;
    unsigned long long mine = used ? used(ordinal_of(d)) : 0;
    unsigned k = 0;
    if (*n < 2) {
        *n = 2;
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    infos[k++] = (nvmlProcessInfo_t){1, 1ull << 30, 0, 0}; /* someone else's */
    if (mine)
        infos[k++] = (nvmlProcessInfo_t){(unsigned)getpid(), mine, 0, 0};
    *n = k;
    return 0;
}
