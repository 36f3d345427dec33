/* SPDX-License-Identifier: MIT
 *
 * gpu_overhead.c - what tracking costs per GPU allocation, next to what it
 * costs per host allocation (issue 6: "the per-event cost stays in the same
 * range as a host allocation").
 *
 * Times N pairs of cuMemAlloc/cuMemFree of 256 bytes through the test
 * suite's fake driver (tests/gpu/fake/cuda), reached the way the CUDA
 * runtime reaches it: dlopen("libcuda.so.1") RTLD_LOCAL, dlsym(handle,
 * "cuGetProcAddress_v2"), ("cuMemAlloc", 3020) and ("cuMemFree", 3020);
 * under the tracker those are its wrappers. Then N malloc/free pairs of 256
 * bytes. Run it plain and traced; the overhead of each kind of pair is the
 * difference:
 *
 *   export LD_LIBRARY_PATH=build/tests/gpu/fake/cuda FAKE_CUDA_NO_HOST_ALLOC=1
 *   build/bench/gpu_overhead
 *   build/tracker run -q -o /tmp/gpu_overhead.bin -f -- build/bench/gpu_overhead
 *
 * FAKE_CUDA_NO_HOST_ALLOC keeps the fake's own bookkeeping malloc out of the
 * figure (otherwise each GPU pair also records two tagged host events).
 * Prints key=value lines: gpu_pair_ns, malloc_pair_ns, pairs. Not a test.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*gpa_fn)(const char *, void **, int, uint64_t, int *);
typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);

static alloc_fn gpu_alloc;
static free_fn gpu_free;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Kept out of line and not tail-called (-fno-optimize-sibling-calls), so
 * both kinds of pair unwind through the same depth of frames. */
__attribute__((noinline)) static int gpu_pair(size_t n)
{
    unsigned long long d = 0;
    if (gpu_alloc(&d, n) != 0)
        return -1;
    return gpu_free(d);
}

__attribute__((noinline)) static int host_pair(size_t n)
{
    void *volatile p = malloc(n);
    if (!p)
        return -1;
    free(p);
    return 0;
}

static double time_pairs(int (*pair)(size_t), long n)
{
    for (long i = 0; i < n / 10; i++) /* warm up: stack cache, rings, the driver's table */
        if (pair(256))
            return -1;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (pair(256))
            return -1;
    return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa) {
        fprintf(stderr, "gpu_overhead: no libcuda.so.1 with cuGetProcAddress_v2 (put "
                        "build/tests/gpu/fake/cuda on LD_LIBRARY_PATH)\n");
        return 1;
    }
    int st = -1;
    if (gpa("cuMemAlloc", (void **)&gpu_alloc, 3020, 0, &st) != 0 ||
        gpa("cuMemFree", (void **)&gpu_free, 3020, 0, &st) != 0) {
        fprintf(stderr, "gpu_overhead: cuGetProcAddress failed\n");
        return 1;
    }
    double g = time_pairs(gpu_pair, n);
    double m = time_pairs(host_pair, n);
    if (g < 0 || m < 0) {
        fprintf(stderr, "gpu_overhead: an allocation failed\n");
        return 1;
    }
    printf("pairs=%ld\ngpu_pair_ns=%.1f\nmalloc_pair_ns=%.1f\n", n, g, m);
    return 0;
}
