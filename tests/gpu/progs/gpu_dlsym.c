/* SPDX-License-Identifier: MIT
 *
 * gpu_dlsym.c - reaches the driver the ways that bypass PLT interposition
 * (docs/GPU_INTERNALS.md §2 item 6): the program does not link libcuda; it dlopens it RTLD_LOCAL
 * and then
 *   1. dlsym(handle, "cuMemAlloc_v2"/"cuMemFree_v2"): 1 MiB, freed;
 *   2. dlsym(handle, "cuGetProcAddress") (4 arguments, CUDA 11.3-11.8) ->
 *      ("cuMemAlloc", 3020): 2 MiB, leaked;
 *   3. the same resolver -> ("cuMemAlloc", 2000): the 32-bit ABI, which must
 *      come back untouched (not recorded; the fake counts the call);
 *   4. dlsym(handle, "cuGetProcAddress_v2") -> ("cuGetProcAddress", 12000)
 *      -> through that pointer ("cuMemAllocAsync", 11020, flags 2): the
 *      _ptsz variant, 3 MiB, leaked;
 *   5. dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"): under the tracker the preload's
 *      hook, whose real function RTLD_NEXT cannot see (libcuda is local):
 *      4 MiB, freed, and dlerror() stays clear (via_default=1, else 2);
 *   6. an unknown name through the resolver passes through (not found).
 * Prints key=value lines.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "../fake/fake_api.h"

#define MiB (1ull << 20)

static void *must(void *p, const char *what)
{
    if (!p) {
        fprintf(stderr, "%s: %s\n", what, dlerror());
        exit(1);
    }
    return p;
}

__attribute__((noinline)) static CUdeviceptr alloc_via_dlsym(PFN_cuMemAlloc_v3020 fn, size_t n)
{
    CUdeviceptr d = 0;
    if (fn(&d, n) != CUDA_SUCCESS)
        exit(1);
    return d;
}

__attribute__((noinline)) static CUdeviceptr alloc_via_gpa4(PFN_cuGetProcAddress_v11030 gpa,
                                                            size_t n)
{
    void *fn = NULL;
    if (gpa("cuMemAlloc", &fn, 3020, 0) != CUDA_SUCCESS)
        exit(1);
    return alloc_via_dlsym((PFN_cuMemAlloc_v3020)fn, n);
}

__attribute__((noinline)) static unsigned alloc_old_abi(PFN_cuGetProcAddress_v11030 gpa)
{
    void *fn = NULL;
    if (gpa("cuMemAlloc", &fn, 2000, 0) != CUDA_SUCCESS)
        exit(1);
    unsigned int d = 0;
    ((PFN_cuMemAlloc_v2000)fn)(&d, 12345);
    return d;
}

__attribute__((noinline)) static CUdeviceptr alloc_via_nested(PFN_cuGetProcAddress_v12000 gpa,
                                                              size_t n)
{
    void *inner = NULL, *fn = NULL;
    int st = -1;
    if (gpa("cuGetProcAddress", &inner, 12000, 0, &st) != CUDA_SUCCESS || st != 0)
        exit(1);
    if (((PFN_cuGetProcAddress_v12000)inner)("cuMemAllocAsync", &fn, 11020,
                                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                                              &st) != CUDA_SUCCESS)
        exit(1);
    CUdeviceptr d = 0;
    if (((CUresult(*)(CUdeviceptr *, size_t, CUstream))fn)(&d, n, (CUstream)(uintptr_t)0x42) !=
        CUDA_SUCCESS)
        exit(1);
    return d;
}

__attribute__((noinline)) static int alloc_via_default(size_t n)
{
    PFN_cuMemAlloc_v3020 fn = (PFN_cuMemAlloc_v3020)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    PFN_cuMemFree_v3020 fr = (PFN_cuMemFree_v3020)dlsym(RTLD_DEFAULT, "cuMemFree_v2");
    if (!fn || !fr)
        return 0; /* not traced: nothing in the global scope defines it */
    CUdeviceptr d = 0;
    dlerror();
    if (fn(&d, n) != CUDA_SUCCESS || fr(d) != CUDA_SUCCESS)
        exit(1);
    /* The hook's own failed lookups (RTLD_NEXT cannot see the local driver)
     * must not surface in the program's dlerror(). */
    return dlerror() == NULL ? 1 : 2;
}

int main(void)
{
    void *h = must(dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), "dlopen libcuda.so.1");
    PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)must(dlsym(h, "cuMemAlloc_v2"), "dlsym");
    PFN_cuMemFree_v3020 release = (PFN_cuMemFree_v3020)must(dlsym(h, "cuMemFree_v2"), "dlsym");
    CUdeviceptr a = alloc_via_dlsym(alloc, 1 * MiB);
    if (release(a) != CUDA_SUCCESS)
        return 1;

    PFN_cuGetProcAddress_v11030 gpa4 =
        (PFN_cuGetProcAddress_v11030)must(dlsym(h, "cuGetProcAddress"), "dlsym");
    alloc_via_gpa4(gpa4, 2 * MiB);
    unsigned old = alloc_old_abi(gpa4);

    PFN_cuGetProcAddress_v12000 gpa5 =
        (PFN_cuGetProcAddress_v12000)must(dlsym(h, "cuGetProcAddress_v2"), "dlsym");
    alloc_via_nested(gpa5, 3 * MiB);
    int via_default = alloc_via_default(4 * MiB);

    void *none = (void *)1;
    int st = -1;
    CUresult r = gpa5("cuNoSuchFunction", &none, 12000, 0, &st);

    void (*counts)(struct fake_cuda_counts *) =
        (void (*)(struct fake_cuda_counts *))must(dlsym(h, "fake_cuda_counts"), "dlsym");
    struct fake_cuda_counts fc;
    counts(&fc);
    printf("old_abi_ptr=%u\nold_abi_calls=%lu\nptsz_calls=%lu\nvia_default=%d\n"
           "unknown_result=%d\nunknown_status=%d\nunknown_null=%d\n",
           old, fc.old_abi_calls, fc.ptsz_calls, via_default, r, st, none == NULL);
    return 0;
}
