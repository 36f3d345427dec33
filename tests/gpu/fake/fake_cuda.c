/* SPDX-License-Identifier: MIT
 *
 * fake_cuda.c - a test double of the CUDA driver, built as libcuda.so.1
 * (-Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic), for testing the tracker's GPU
 * hooks on machines without a GPU (docs/GPU_INTERNALS.md §10).
 *
 * What it models: device VA from a bump allocator (2 MiB steps from
 * 0x7f1000000000) that reuses freed ranges of the same size, so that
 * concurrent threads really do get each other's addresses back; pinned host
 * memory from mmap; VMM handles with reference counts (a handle's memory is
 * gone when it was released and every mapping of it unmapped); IPC and pool
 * imports; arrays; per-thread current device (cuCtxSetCurrent);
 * cuGetProcAddress[_v2] keyed by (name, minimum version, flags) with _ptsz
 * variants for flags & 2 and an old 32-bit cuMemAlloc for version 2000; the
 * bytes in use per device, which the fake NVML reports. Each device
 * allocation also mallocs a small bookkeeping node, like a real driver's
 * host-side state, so the tracker's tagging of driver host memory is seen.
 *
 * -Bsymbolic matters: the fake's own references (the pointers its resolver
 * returns) must be its own functions, never the preloaded hooks (docs/GPU_INTERNALS.md
 * §10 item 1). Environment knobs: FAKE_CUDA_DEVICES (2), FAKE_CUDA_OOM_ABOVE
 * (bytes; larger requests fail with CUDA_ERROR_OUT_OF_MEMORY = 2),
 * FAKE_CUDA_NO_CONTEXT (cuCtxGetDevice fails), FAKE_CUDA_NO_HOST_ALLOC (no
 * bookkeeping malloc), FAKE_CUDA_LOG (print every lookup on stderr),
 * FAKE_CUDA_REPORT (print the lookup counts at exit).
 * A test double: it may allocate, lock and print; it never frees what a
 * test still uses.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fake_api.h"

#define VA_BASE 0x7f1000000000ull
#define VA_RESERVE_BASE 0x7e0000000000ull
#define VA_STEP (2ull << 20)
#define MAX_BLOCKS 65536
#define MAX_HANDLES 4096
#define MAX_MAPS 4096
#define MAX_DEV 8
#define CONTEXT_BYTES (32ull << 20) /* what NVML adds for a device in use */

enum { K_DEVICE = 1, K_MANAGED, K_PINNED, K_ASYNC, K_IMPORTED, K_ARRAY };

struct block {
    unsigned long long va, size, rounded;
    int dev, kind, live;
    void *node; /* host bookkeeping */
};

struct handle {
    unsigned long long id, size;
    int dev, refs, released, counted;
};

struct mapping {
    unsigned long long va, size, handle;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct block blocks[MAX_BLOCKS];
static int nblocks;
static unsigned long long va_next = VA_BASE, reserve_next = VA_RESERVE_BASE;
static struct handle handles[MAX_HANDLES];
static int nhandles;
static struct mapping maps[MAX_MAPS];
static unsigned long long array_next = 0xa0000000ull;
static unsigned long long used[MAX_DEV];
static int active[MAX_DEV];
static struct fake_cuda_counts counts;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ndevices = 2, no_context, no_host_alloc, log_lookups;
static unsigned long long oom_above = ~0ull;
static __thread int cur_dev = -1; /* -1: the primary context of device 0 */

static void read_env(void)
{
    const char *s;
    if ((s = getenv("FAKE_CUDA_DEVICES")) && atoi(s) > 0 && atoi(s) <= MAX_DEV)
        ndevices = atoi(s);
    if ((s = getenv("FAKE_CUDA_OOM_ABOVE")) && *s)
        oom_above = strtoull(s, NULL, 0);
    no_context = getenv("FAKE_CUDA_NO_CONTEXT") != NULL;
    no_host_alloc = getenv("FAKE_CUDA_NO_HOST_ALLOC") != NULL;
    log_lookups = getenv("FAKE_CUDA_LOG") != NULL;
}

static void env(void)
{
    pthread_once(&once, read_env);
}

static int current_device(void)
{
    return cur_dev < 0 ? 0 : cur_dev;
}

static int counts_as_device_memory(int kind)
{
    return kind == K_DEVICE || kind == K_MANAGED || kind == K_ASYNC || kind == K_ARRAY;
}

/* pre: lock held. */
static void account(int dev, int kind, long long delta)
{
    if (dev < 0 || dev >= MAX_DEV || !counts_as_device_memory(kind))
        return;
    used[dev] += (unsigned long long)delta;
    active[dev] = 1;
}

static CUresult new_block(unsigned long long *out, unsigned long long size, int kind, int dev)
{
    env();
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (size > oom_above)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *node = no_host_alloc ? NULL : malloc(48);
    unsigned long long rounded = (size + VA_STEP - 1) / VA_STEP * VA_STEP;
    pthread_mutex_lock(&lock);
    struct block *b = NULL;
    for (int i = nblocks - 1; i >= 0 && !b; i--)
        if (!blocks[i].live && blocks[i].rounded == rounded && blocks[i].kind != K_PINNED)
            b = &blocks[i]; /* reuse a freed range: addresses do come back */
    if (!b && nblocks < MAX_BLOCKS) {
        b = &blocks[nblocks++];
        b->va = va_next;
        b->rounded = rounded;
        va_next += rounded;
    }
    if (!b) {
        pthread_mutex_unlock(&lock);
        free(node);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    b->size = size;
    b->dev = dev;
    b->kind = kind;
    b->live = 1;
    b->node = node;
    account(dev, kind, (long long)size);
    *out = b->va;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static CUresult free_block(unsigned long long va, int want_kind)
{
    void *node = NULL;
    int found = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nblocks; i++) {
        struct block *b = &blocks[i];
        if (!b->live || b->va != va || (want_kind && b->kind != want_kind))
            continue;
        b->live = 0;
        node = b->node;
        account(b->dev, b->kind, -(long long)b->size);
        found = 1;
        break;
    }
    pthread_mutex_unlock(&lock);
    free(node);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- Device, context, version ------------------------------------------- */

CUresult cuInit(unsigned int flags)
{
    (void)flags;
    env();
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
    env();
    *n = ndevices;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    env();
    if (ordinal < 0 || ordinal >= ndevices)
        return CUDA_ERROR_INVALID_VALUE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

/* PCI location: domain 0, bus 0x10 + ordinal, device 0 (the fake NVML
 * lists the same devices in the opposite order). */
CUresult cuDeviceGetAttribute(int *value, int attrib, CUdevice dev)
{
    env();
    if (dev < 0 || dev >= ndevices)
        return CUDA_ERROR_INVALID_VALUE;
    *value = attrib == 33 ? 0x10 + dev : 0;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    env();
    if (dev < 0 || dev >= ndevices)
        return CUDA_ERROR_INVALID_VALUE;
    *ctx = (CUcontext)(uintptr_t)(dev + 1);
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    cur_dev = ctx ? (int)(uintptr_t)ctx - 1 : -1;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *dev)
{
    env();
    if (no_context)
        return CUDA_ERROR_INVALID_CONTEXT;
    *dev = current_device();
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    CUresult r = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nblocks; i++) {
        struct block *b = &blocks[i];
        if (b->live && p >= b->va && p < b->va + b->size) {
            if (base)
                *base = b->va;
            if (size)
                *size = b->size;
            r = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---- Linear memory -------------------------------------------------------- */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t n)
{
    return new_block(dptr, n, K_DEVICE, current_device());
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
    return free_block(p, 0);
}

/* The CUDA 2.0 ABI: 32-bit pointer and size. Only ever reached through
 * cuGetProcAddress("cuMemAlloc", 2000); the tracker must pass it through. */
static CUresult cuMemAlloc_v1(unsigned int *dptr, unsigned int n)
{
    __atomic_add_fetch(&counts.old_abi_calls, 1, __ATOMIC_RELAXED);
    *dptr = 0x1000u + n;
    return CUDA_SUCCESS;
}

static CUresult cuMemFree_v1(unsigned int p)
{
    (void)p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int elem)
{
    (void)elem;
    if (!pitch)
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = (width + 511) / 512 * 512;
    CUresult r = new_block(dptr, (unsigned long long)p * height, K_DEVICE, current_device());
    if (r == CUDA_SUCCESS)
        *pitch = p;
    return r;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t n, unsigned int flags)
{
    (void)flags;
    return new_block(dptr, n, K_MANAGED, current_device());
}

/* ---- Pinned host memory ----------------------------------------------------- */

static CUresult host_alloc(void **pp, size_t n)
{
    env();
    if (!pp || n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (n > oom_above)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    if (nblocks < MAX_BLOCKS)
        blocks[nblocks++] = (struct block){(uintptr_t)p, n, n, current_device(), K_PINNED, 1,
                                           NULL};
    pthread_mutex_unlock(&lock);
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
    (void)flags;
    return host_alloc(pp, n);
}

/* Implemented on top of cuMemHostAlloc found through the global scope, the
 * way a driver or runtime can end up calling one hooked entry point from
 * another: under the tracker that is the preload's hook, and the tracker
 * must record one allocation, not two. (Not RTLD_DEFAULT: with -Bsymbolic
 * that would search this library first. The main program's handle searches
 * the global scope: the program, the preloads, their dependencies.) */
CUresult cuMemAllocHost_v2(void **pp, size_t n)
{
    void *global = dlopen(NULL, RTLD_LAZY);
    CUresult (*fn)(void **, size_t, unsigned) =
        global ? (CUresult(*)(void **, size_t, unsigned))dlsym(global, "cuMemHostAlloc") : NULL;
    if (fn && fn != cuMemHostAlloc) {
        __atomic_add_fetch(&counts.nested_calls, 1, __ATOMIC_RELAXED);
        return fn(pp, n, 0);
    }
    return host_alloc(pp, n);
}

CUresult cuMemFreeHost(void *p)
{
    unsigned long long size = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nblocks; i++)
        if (blocks[i].live && blocks[i].kind == K_PINNED && blocks[i].va == (uintptr_t)p) {
            blocks[i].live = 0;
            blocks[i].rounded = 0; /* never reused as device VA */
            size = blocks[i].size;
            break;
        }
    pthread_mutex_unlock(&lock);
    if (!size)
        return CUDA_ERROR_INVALID_VALUE;
    munmap(p, size);
    return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
    (void)flags;
    return p && n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The CUDA 4.0 entry point: same prototype, kept apart by version. */
static CUresult cuMemHostRegister_v1(void *p, size_t n, unsigned int flags)
{
    return cuMemHostRegister_v2(p, n, flags);
}

CUresult cuMemHostUnregister(void *p)
{
    return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- Stream-ordered allocation --------------------------------------------- */

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t n, CUstream s)
{
    (void)s;
    return new_block(dptr, n, K_ASYNC, current_device());
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t n, CUstream s)
{
    __atomic_add_fetch(&counts.ptsz_calls, 1, __ATOMIC_RELAXED);
    return cuMemAllocAsync(dptr, n, s);
}

CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    (void)s;
    return free_block(p, 0);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
    __atomic_add_fetch(&counts.ptsz_calls, 1, __ATOMIC_RELAXED);
    return cuMemFreeAsync(p, s);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s)
{
    (void)pool;
    return cuMemAllocAsync(dptr, n, s);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t n, CUmemoryPool pool,
                                      CUstream s)
{
    __atomic_add_fetch(&counts.ptsz_calls, 1, __ATOMIC_RELAXED);
    return cuMemAllocFromPoolAsync(dptr, n, pool, s);
}

/* ---- Virtual memory management ---------------------------------------------- */

/* pre: lock held. */
static struct handle *find_handle(unsigned long long id)
{
    for (int i = 0; i < nhandles; i++)
        if (handles[i].id == id)
            return &handles[i];
    return NULL;
}

/* pre: lock held. The memory goes when released and unmapped everywhere. */
static void handle_unref(struct handle *h)
{
    if (--h->refs == 0 && h->counted) {
        account(h->dev, K_DEVICE, -(long long)h->size);
        h->counted = 0;
    }
}

static CUresult new_handle(CUmemGenericAllocationHandle *out, unsigned long long size, int dev,
                           int counted)
{
    pthread_mutex_lock(&lock);
    if (nhandles >= MAX_HANDLES) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct handle *h = &handles[nhandles++];
    *h = (struct handle){0x100000ull + (unsigned long long)nhandles, size, dev, 1, 0, counted};
    if (counted)
        account(dev, K_DEVICE, (long long)size);
    *out = h->id;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    (void)flags;
    env();
    if (!handle || !prop || size == 0 || size % VA_STEP)
        return CUDA_ERROR_INVALID_VALUE;
    if (size > oom_above)
        return CUDA_ERROR_OUT_OF_MEMORY;
    int dev = prop->location.type == 1 ? prop->location.id : current_device();
    return new_handle(handle, size, dev, 1);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle id)
{
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct handle *h = find_handle(id);
    if (h && !h->released) {
        h->released = 1;
        handle_unref(h);
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                             unsigned long long flags)
{
    (void)align, (void)addr, (void)flags;
    if (!ptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *ptr = reserve_next;
    reserve_next += (size + VA_STEP - 1) / VA_STEP * VA_STEP;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    return ptr && size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle id,
                  unsigned long long flags)
{
    (void)offset, (void)flags;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct handle *h = find_handle(id);
    if (h && !h->released) {
        for (int i = 0; i < MAX_MAPS; i++)
            if (!maps[i].size) {
                maps[i] = (struct mapping){ptr, size, id};
                h->refs++;
                r = CUDA_SUCCESS;
                break;
            }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_MAPS; i++)
        if (maps[i].size && maps[i].va == ptr && maps[i].size == size) {
            struct handle *h = find_handle(maps[i].handle);
            if (h)
                handle_unref(h);
            maps[i].size = 0;
            r = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---- Imported memory and arrays ---------------------------------------------- */

/* The size travels in the first 8 bytes of the handle the test made up. */
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle h, unsigned int flags)
{
    (void)flags;
    unsigned long long size;
    memcpy(&size, h.reserved, sizeof(size));
    return new_block(pdptr, size, K_IMPORTED, current_device());
}

static CUresult cuIpcOpenMemHandle_v1(CUdeviceptr *pdptr, CUipcMemHandle h, unsigned int flags)
{
    return cuIpcOpenMemHandle_v2(pdptr, h, flags);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
    return free_block(p, K_IMPORTED);
}

CUresult cuMemPoolImportPointer(CUdeviceptr *out, CUmemoryPool pool,
                                CUmemPoolPtrExportData *data)
{
    (void)pool;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long size;
    memcpy(&size, data->reserved, sizeof(size));
    return new_block(out, size, K_IMPORTED, current_device());
}

/* os_handle stands for the size of the exported allocation. */
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os_handle,
                                        int type)
{
    (void)type;
    if (!h)
        return CUDA_ERROR_INVALID_VALUE;
    return new_handle(h, (uintptr_t)os_handle, current_device(), 0);
}

static unsigned long long array_bytes(size_t w, size_t h, size_t d, int format, unsigned ch)
{
    unsigned long long e = format == CU_AD_FORMAT_FLOAT ? 4 : 1;
    return (unsigned long long)(w ? w : 1) * (h ? h : 1) * (d ? d : 1) * (ch ? ch : 1) * e;
}

static CUresult new_array(CUarray *out, unsigned long long bytes)
{
    env();
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (bytes > oom_above)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    unsigned long long id = array_next;
    array_next += 16;
    if (nblocks < MAX_BLOCKS)
        blocks[nblocks++] = (struct block){id, bytes, 0, current_device(), K_ARRAY, 1, NULL};
    account(current_device(), K_ARRAY, (long long)bytes);
    pthread_mutex_unlock(&lock);
    *out = (CUarray)(uintptr_t)id;
    return CUDA_SUCCESS;
}

CUresult cuArrayCreate_v2(CUarray *h, const CUDA_ARRAY_DESCRIPTOR *d)
{
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    return new_array(h, array_bytes(d->Width, d->Height, 0, d->Format, d->NumChannels));
}

CUresult cuArray3DCreate_v2(CUarray *h, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    return new_array(h, array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels));
}

CUresult cuArrayDestroy(CUarray a)
{
    return free_block((uintptr_t)a, K_ARRAY);
}

/* ---- Entry-point resolver ------------------------------------------------------ */

struct proc {
    const char *name;
    int version;  /* minimum version of this ABI */
    void *fn;     /* default / legacy stream */
    void *fn_ptsz; /* per-thread default stream (flags & 2), NULL = same */
};

#define P(n, v, f) {n, v, (void *)(f), NULL}
#define PT(n, v, f) {n, v, (void *)(f), (void *)(f##_ptsz)}

static const struct proc procs[] = {
    P("cuInit", 2000, cuInit),
    P("cuDriverGetVersion", 2020, cuDriverGetVersion),
    P("cuDeviceGetCount", 2000, cuDeviceGetCount),
    P("cuDeviceGet", 2000, cuDeviceGet),
    P("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    P("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    P("cuCtxGetDevice", 2000, cuCtxGetDevice),
    P("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    P("cuMemAlloc", 2000, cuMemAlloc_v1),
    P("cuMemAlloc", 3020, cuMemAlloc_v2),
    P("cuMemFree", 2000, cuMemFree_v1),
    P("cuMemFree", 3020, cuMemFree_v2),
    P("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    P("cuMemAllocManaged", 6000, cuMemAllocManaged),
    P("cuMemHostAlloc", 2020, cuMemHostAlloc),
    P("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    P("cuMemFreeHost", 2000, cuMemFreeHost),
    P("cuMemHostRegister", 4000, cuMemHostRegister_v1),
    P("cuMemHostRegister", 6050, cuMemHostRegister_v2),
    P("cuMemHostUnregister", 4000, cuMemHostUnregister),
    PT("cuMemAllocAsync", 11020, cuMemAllocAsync),
    PT("cuMemFreeAsync", 11020, cuMemFreeAsync),
    PT("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
    P("cuMemCreate", 10020, cuMemCreate),
    P("cuMemRelease", 10020, cuMemRelease),
    P("cuMemMap", 10020, cuMemMap),
    P("cuMemUnmap", 10020, cuMemUnmap),
    P("cuMemAddressReserve", 10020, cuMemAddressReserve),
    P("cuMemAddressFree", 10020, cuMemAddressFree),
    P("cuIpcOpenMemHandle", 4010, cuIpcOpenMemHandle_v1),
    P("cuIpcOpenMemHandle", 11000, cuIpcOpenMemHandle_v2),
    P("cuIpcCloseMemHandle", 4010, cuIpcCloseMemHandle),
    P("cuMemImportFromShareableHandle", 10020, cuMemImportFromShareableHandle),
    P("cuArrayCreate", 3020, cuArrayCreate_v2),
    P("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    P("cuArrayDestroy", 2000, cuArrayDestroy),
    P("cuMemPoolImportPointer", 11020, cuMemPoolImportPointer),
    P("cuGetProcAddress", 11030, cuGetProcAddress),
    P("cuGetProcAddress", 12000, cuGetProcAddress_v2),
};

static unsigned long via_preload;

/* Was the resolver called by code in libtracker.so (its wrapper)? */
static int from_preload(const void *caller)
{
    Dl_info info;
    return dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, "libtracker");
}

/* CUdriverProcAddressQueryResult: 0 found, 1 no such symbol, 2 version too
 * low. The real driver answers the runtime's "" probe with "not found". */
static CUresult get_proc_address(const char *symbol, void **pfn, int version, uint64_t flags,
                                 int *status, const void *caller)
{
    env();
    __atomic_add_fetch(&counts.lookups, 1, __ATOMIC_RELAXED);
    if (from_preload(caller))
        __atomic_add_fetch(&via_preload, 1, __ATOMIC_RELAXED);
    if (log_lookups)
        fprintf(stderr, "fake libcuda: cuGetProcAddress(\"%s\", %d, %llu)\n",
                symbol ? symbol : "(null)", version, (unsigned long long)flags);
    if (!pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    const struct proc *best = NULL;
    int named = 0;
    for (size_t i = 0; symbol && i < sizeof(procs) / sizeof(procs[0]); i++) {
        if (strcmp(procs[i].name, symbol) != 0)
            continue;
        named = 1;
        if (procs[i].version <= version && (!best || procs[i].version > best->version))
            best = &procs[i];
    }
    if (!best) {
        if (status)
            *status = named ? 2 : 1;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->fn_ptsz
               ? best->fn_ptsz
               : best->fn;
    if (status)
        *status = 0;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                             int *status)
{
    return get_proc_address(symbol, pfn, version, flags, status, __builtin_return_address(0));
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
    return get_proc_address(symbol, pfn, version, flags, NULL, __builtin_return_address(0));
}

/* The real runtime cannot get past cuGetExportTable, which the fake lacks
 * (docs/GPU_INTERNALS.md §10 item 3); FAKE_CUDA_REPORT=1 says at exit what it got to. */
__attribute__((destructor)) static void report(void)
{
    if (getenv("FAKE_CUDA_REPORT"))
        fprintf(stderr, "fake_cuda_lookups=%lu\nfake_cuda_lookups_via_preload=%lu\n",
                counts.lookups, via_preload);
}

/* ---- Introspection for the tests --------------------------------------------- */

void fake_cuda_counts(struct fake_cuda_counts *out)
{
    __atomic_load(&counts.ptsz_calls, &out->ptsz_calls, __ATOMIC_RELAXED);
    __atomic_load(&counts.old_abi_calls, &out->old_abi_calls, __ATOMIC_RELAXED);
    __atomic_load(&counts.lookups, &out->lookups, __ATOMIC_RELAXED);
    __atomic_load(&counts.nested_calls, &out->nested_calls, __ATOMIC_RELAXED);
}

unsigned long long fake_cuda_used_bytes(int device)
{
    if (device < 0 || device >= MAX_DEV)
        return 0;
    pthread_mutex_lock(&lock);
    unsigned long long v = active[device] ? used[device] + CONTEXT_BYTES : 0;
    pthread_mutex_unlock(&lock);
    return v;
}
