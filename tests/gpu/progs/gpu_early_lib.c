/* SPDX-License-Identifier: MIT
 *
 * gpu_early_lib.c - libgpu_early.so: allocates and frees 1 MiB through the
 * (fake) CUDA runtime from its constructor, which the loader may run before
 * or after libtracker.so's own (docs/GPU_INTERNALS.md §3 item 8: the runtime can resolve
 * driver entry points from another library's constructor). Either way the
 * program must run normally; the pair is recorded whole or not at all.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../fake/fake_api.h"

int gpu_early_ok(void);

static int ok;

__attribute__((constructor)) static void early_init(void)
{
    void *p = NULL;
    ok = cudaMalloc(&p, 1u << 20) == 0 && cudaFree(p) == 0;
}

int gpu_early_ok(void)
{
    return ok;
}
