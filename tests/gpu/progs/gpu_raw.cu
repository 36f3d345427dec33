// SPDX-License-Identifier: MIT
//
// gpu_raw.cu - the raw CUDA program of tests/gpu/run_on_gpu.sh, built with
// nvcc's default (static) runtime, so every allocation reaches the driver
// through cuGetProcAddress_v2 and nothing through a PLT the preload could
// interpose (docs/GPU_INTERNALS.md §1 items 1-2). On device 0, in this order:
//   cudaMalloc 64 MiB (scratch_buffer), cudaMalloc 16 MiB (keep_buffer),
//   cudaMallocHost 1 MiB (pinned), cudaMallocAsync 8 MiB on a stream;
// then frees everything but the 16 MiB buffer, and waits 500 ms so that the
// NVML sampler (10 Hz) sees the context and the kept buffer.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MiB (1ull << 20)

static void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

__attribute__((noinline)) static void *scratch_buffer(size_t n)
{
    void *p = NULL;
    check(cudaMalloc(&p, n), "cudaMalloc scratch");
    return p;
}

__attribute__((noinline)) static void *keep_buffer(size_t n)
{
    void *p = NULL;
    check(cudaMalloc(&p, n), "cudaMalloc keep");
    return p;
}

__attribute__((noinline)) static void *pinned_buffer(size_t n)
{
    void *p = NULL;
    check(cudaMallocHost(&p, n), "cudaMallocHost");
    return p;
}

__attribute__((noinline)) static void *async_buffer(size_t n, cudaStream_t s)
{
    void *p = NULL;
    check(cudaMallocAsync(&p, n, s), "cudaMallocAsync");
    return p;
}

int main(void)
{
    check(cudaSetDevice(0), "cudaSetDevice");
    cudaStream_t s;
    check(cudaStreamCreate(&s), "cudaStreamCreate");
    void *scratch = scratch_buffer(64 * MiB);
    void *kept = keep_buffer(16 * MiB);
    void *pinned = pinned_buffer(1 * MiB);
    void *async = async_buffer(8 * MiB, s);
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    check(cudaFreeAsync(async, s), "cudaFreeAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    check(cudaFreeHost(pinned), "cudaFreeHost");
    check(cudaFree(scratch), "cudaFree");
    printf("kept=%p\n", kept);
    fflush(stdout);
    usleep(500000);
    return 0; /* the 16 MiB buffer is leaked on purpose */
}
