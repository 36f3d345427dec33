/* SPDX-License-Identifier: MIT
 *
 * fake_hip.c - a test double of the HIP runtime, built as libamdhip64.so.6
 * with the version nodes of ROCm's clr (hip_4.2, hip_5.1, hip_6.1; docs/GPU_INTERNALS.md
 * §9 item 1), so that our unversioned hooks must bind versioned references.
 * hipGetProcAddress is dlsym on the runtime's own handle, as clr implements
 * it (docs/GPU_INTERNALS.md §9 item 2): that path bypasses every preload. Device memory is fake
 * VA from a bump allocator; pinned host memory is mmap. A test double: it
 * may lock and allocate.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "fake_api.h"

#define VA_STEP (2ull << 20)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long va_next = 0x7f2000000000ull, reserve_next = 0x7e8000000000ull;
static unsigned long long handle_next = 0x200000ull;
static __thread int cur_dev;

static unsigned long long bump(unsigned long long *next, size_t n)
{
    pthread_mutex_lock(&lock);
    unsigned long long v = *next;
    *next += (n + VA_STEP - 1) / VA_STEP * VA_STEP;
    pthread_mutex_unlock(&lock);
    return v;
}

static hipError_t device_alloc(void **p, size_t n)
{
    if (!p || !n)
        return 1; /* hipErrorInvalidValue */
    *p = (void *)(uintptr_t)bump(&va_next, n);
    return 0;
}

hipError_t hipSetDevice(int device)
{
    cur_dev = device;
    return 0;
}

hipError_t hipGetDevice(int *device)
{
    *device = cur_dev;
    return 0;
}

hipError_t hipMalloc(void **p, size_t n)
{
    return device_alloc(p, n);
}

hipError_t hipExtMallocWithFlags(void **p, size_t n, unsigned int flags)
{
    (void)flags;
    return device_alloc(p, n);
}

hipError_t hipMallocManaged(void **p, size_t n, unsigned int flags)
{
    (void)flags;
    return device_alloc(p, n);
}

hipError_t hipMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    *pitch = (width + 255) / 256 * 256;
    return device_alloc(p, *pitch * height);
}

hipError_t hipFree(void *p)
{
    (void)p;
    return 0;
}

hipError_t hipMallocAsync(void **p, size_t n, hipStream_t s)
{
    (void)s;
    return device_alloc(p, n);
}

hipError_t hipMallocFromPoolAsync(void **p, size_t n, hipMemPool_t pool, hipStream_t s)
{
    (void)pool, (void)s;
    return device_alloc(p, n);
}

hipError_t hipFreeAsync(void *p, hipStream_t s)
{
    (void)p, (void)s;
    return 0;
}

hipError_t hipHostMalloc(void **p, size_t n, unsigned int flags)
{
    (void)flags;
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 2; /* hipErrorOutOfMemory */
    *p = m;
    return 0;
}

/* The size is not kept: unmap one page, enough for a test double. */
hipError_t hipHostFree(void *p)
{
    if (p)
        munmap(p, 4096);
    return 0;
}

hipError_t hipFreeHost(void *p)
{
    return hipHostFree(p);
}

hipError_t hipHostRegister(void *p, size_t n, unsigned int flags)
{
    (void)flags;
    return p && n ? 0 : 1;
}

hipError_t hipHostUnregister(void *p)
{
    return p ? 0 : 1;
}

hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *h, size_t n,
                        const CUmemAllocationProp *prop, unsigned long long flags)
{
    (void)prop, (void)flags;
    if (!h || !n)
        return 1;
    pthread_mutex_lock(&lock);
    *h = (hipMemGenericAllocationHandle_t)(uintptr_t)handle_next++;
    pthread_mutex_unlock(&lock);
    return 0;
}

hipError_t hipMemRelease(hipMemGenericAllocationHandle_t h)
{
    return h ? 0 : 1;
}

hipError_t hipMemAddressReserve(void **p, size_t n, size_t align, void *addr,
                                unsigned long long flags)
{
    (void)align, (void)addr, (void)flags;
    *p = (void *)(uintptr_t)bump(&reserve_next, n);
    return 0;
}

hipError_t hipMemAddressFree(void *p, size_t n)
{
    return p && n ? 0 : 1;
}

hipError_t hipMemMap(void *p, size_t n, size_t offset, hipMemGenericAllocationHandle_t h,
                     unsigned long long flags)
{
    (void)offset, (void)flags;
    return p && n && h ? 0 : 1;
}

hipError_t hipMemUnmap(void *p, size_t n)
{
    return p && n ? 0 : 1;
}

/* clr: amd::Os::getSymbol(own handle, name) after a few name remappings. */
hipError_t hipGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags,
                             int *status)
{
    (void)version, (void)flags;
    void *self = dlopen("libamdhip64.so.6", RTLD_NOLOAD | RTLD_LAZY);
    *pfn = self ? dlsym(self, symbol) : NULL;
    if (status)
        *status = *pfn ? 0 : 1;
    return *pfn ? 0 : 500; /* hipErrorNotFound */
}
