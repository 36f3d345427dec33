/* SPDX-License-Identifier: MIT
 *
 * gpu_ext_rt.c - libgpu_ext_rt.so: a "Python extension" that links the
 * (fake) CUDA runtime; gpu_local dlopens it RTLD_LOCAL, so the runtime and
 * the driver it dlopens are outside the global scope (docs/GPU_INTERNALS.md §2 item 4).
 */
#include "../fake/fake_api.h"

void *ext_rt_alloc(size_t n);
int ext_rt_roundtrip(size_t n);

__attribute__((noinline)) void *ext_rt_alloc(size_t n)
{
    void *p = 0;
    return cudaMalloc(&p, n) == 0 ? p : 0;
}

__attribute__((noinline)) int ext_rt_roundtrip(size_t n)
{
    void *p = ext_rt_alloc(n);
    return p && cudaFree(p) == 0;
}
