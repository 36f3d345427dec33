/* SPDX-License-Identifier: MIT
 *
 * dlsym_hook.c - the C half of our dlsym interposer: lookups on a real
 * library handle.
 *
 * Why interpose dlsym at all: both the static and the shared CUDA runtime
 * (and NCCL, cuBLAS, cuDNN, which embed the static one) do
 * dlopen("libcuda.so.1") then dlsym(handle, "cuGetProcAddress_v2"), and a
 * lookup on a handle searches only that library's own dependency tree, never
 * the preloads (docs/GPU_INTERNALS.md §1 items 2-3, §2). Catching that lookup is the only
 * way in for a preload. The asm entry (dlsym_stub.S) sends RTLD_NEXT and
 * RTLD_DEFAULT straight to libc; everything else arrives here.
 *
 * Must not: change what a lookup of any other name returns, allocate (the
 * real dlsym may, as it would have for the program), or take the guard: the
 * program's own dlsym is the program's.
 */
#include "gpu/gpu.h"

void *trk_dlsym_slow(void *handle, const char *name) TRK_HIDDEN;

void *trk_dlsym_slow(void *handle, const char *name)
{
    void *(*real)(void *, const char *) = (void *(*)(void *, const char *))trk_gpu_dlsym_real_get();
    if (!real)
        return NULL;
    /* The caller libc sees is us; for a real handle glibc searches that
     * object's own scope whoever asks (only RTLD_NEXT/DEFAULT use the caller,
     * and those never come here). */
    void *p = real(handle, name);
    if (p && name)
        p = trk_gpu_dlsym_wrap(name, p);
    return p;
}
