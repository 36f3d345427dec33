/* SPDX-License-Identifier: MIT
 *
 * gpu_early.c - links libgpu_early.so (whose constructor already used the
 * CUDA runtime), then leaks 2 MiB through cudaMalloc in main.
 */
#include <stdio.h>

#include "../fake/fake_api.h"

int gpu_early_ok(void);

__attribute__((noinline)) static void *late_alloc(void)
{
    void *p = NULL;
    return cudaMalloc(&p, 2u << 20) == 0 ? p : NULL;
}

int main(void)
{
    void *p = late_alloc();
    printf("early_ok=%d\nlate=%p\n", gpu_early_ok(), p);
    return gpu_early_ok() && p ? 0 : 1;
}
