/* SPDX-License-Identifier: MIT
 *
 * gpu_ext_drv.c - libgpu_ext_drv.so: links libcuda.so.1 and calls
 * cuMemAlloc_v2 through its PLT. Loaded RTLD_LOCAL by gpu_local, the call
 * binds to the preload's hook (global scope first), whose dlsym(RTLD_NEXT)
 * cannot see the local libcuda: the RTLD_NOLOAD fallback must find it
 * (docs/GPU_INTERNALS.md §3 item 3).
 */
#include "../fake/fake_api.h"

unsigned long long ext_drv_alloc(size_t n);

__attribute__((noinline)) unsigned long long ext_drv_alloc(size_t n)
{
    CUdeviceptr d = 0;
    return cuMemAlloc_v2(&d, n) == CUDA_SUCCESS ? d : 0;
}
