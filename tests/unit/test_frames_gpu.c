/* SPDX-License-Identifier: MIT
 *
 * test_frames_gpu.c - frames.c hides the GPU runtimes' and PyTorch's
 * allocator frames at the inner end of a stack, as it hides malloc's: a
 * device allocation made on a thread with no Python frame (PyTorch's
 * autograd thread) is attributed to the op that asked for the tensor, not
 * to "libcudart.so.13+0x41b5e". A fake symbolizer (ip -> chosen frames)
 * stands in for src/symbol; the capture is synthetic (tcap.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/calltree.h"
#include "common/crc32c.h"
#include "format/record.h"

/* ---- The fake symbolizer ------------------------------------------------------- */

#define TORCH "/usr/lib/python3/dist-packages/torch/lib/"

static const struct trk_frame F_THREAD[] = {
    {"start_thread", NULL, 0, 0, "/lib/x86_64-linux-gnu/libc.so.6", 0x10, 0x1000}};
static const struct trk_frame F_ENGINE[] = {
    {"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
     NULL, 0, 0, TORCH "libtorch_cpu.so", 0x20, 0x2000}};
static const struct trk_frame F_EMPTY[] = {
    {"at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, "
     "std::optional<c10::Device>, std::optional<c10::MemoryFormat>)",
     NULL, 0, 0, TORCH "libtorch_cuda.so", 0x30, 0x3000}};
static const struct trk_frame F_CACHING[] = {
    {"c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, "
     "unsigned long, CUstream_st*)",
     NULL, 0, 0, TORCH "libc10_cuda.so", 0x40, 0x4000}};
static const struct trk_frame F_C10_UNNAMED[] = {
    {NULL, NULL, 0, 0, TORCH "libc10_cuda.so", 0x41, 0x4100}};
static const struct trk_frame F_CUDAMALLOC[] = {
    {"cudaMalloc", NULL, 0, 0, TORCH "libcudart.so.13", 0x50, 0x5000}};
static const struct trk_frame F_CUDART_INTERNAL[] = {
    {NULL, NULL, 0, 0, TORCH "libcudart.so.13", 0x41b5e, 0x5100}};
static const struct trk_frame F_DRIVER[] = {
    {NULL, NULL, 0, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x777, 0x5200}};
static const struct trk_frame F_HOOK[] = {
    {"trk_cuMemAlloc_v2", "cuda_hooks.c", 50, 0, "/opt/tracker/lib/libtracker.so", 0x60,
     0x6000}};
static const struct trk_frame F_ALLOC_CPU[] = {
    {"c10::alloc_cpu(unsigned long)", NULL, 0, 0, TORCH "libc10.so", 0x70, 0x7000}};
static const struct trk_frame F_CPU_ALLOCATOR[] = {
    {"c10::DefaultCPUAllocator::allocate(unsigned long)", NULL, 0, 0, TORCH "libc10.so", 0x71,
     0x7100}};
static const struct trk_frame F_EMPTY_CPU[] = {
    {"at::detail::empty_cpu(c10::ArrayRef<long>, c10::ScalarType, bool)", NULL, 0, 0,
     TORCH "libtorch_cpu.so", 0x72, 0x7200}};
static const struct trk_frame F_MALLOC[] = {
    {"malloc", NULL, 0, 0, "/lib/x86_64-linux-gnu/libc.so.6", 0x80, 0x8000}};
static const struct trk_frame F_USER_CUDA[] = {
    {"my_gpu_alloc", NULL, 0, 0, "/usr/bin/prog", 0x90, 0x9000}};

static const struct {
    uint64_t ip;
    const struct trk_frame *f;
} fake_table[] = {
    {0x1000, F_THREAD},       {0x2000, F_ENGINE},         {0x3000, F_EMPTY},
    {0x4000, F_CACHING},      {0x4100, F_C10_UNNAMED},    {0x5000, F_CUDAMALLOC},
    {0x5100, F_CUDART_INTERNAL}, {0x5200, F_DRIVER},      {0x6000, F_HOOK},
    {0x7000, F_ALLOC_CPU},    {0x7100, F_CPU_ALLOCATOR},  {0x7200, F_EMPTY_CPU},
    {0x8000, F_MALLOC},       {0x9000, F_USER_CUDA},
};

struct trk_symbolizer {
    struct trk_frame addr;
};

struct trk_symbolizer *trk_symbolizer_new(const struct trk_reader *r,
                                          const struct trk_symbolizer_options *opts)
{
    (void)r;
    (void)opts;
    return calloc(1, sizeof(struct trk_symbolizer));
}

int trk_symbolize(struct trk_symbolizer *s, uint64_t ip, const struct trk_frame **frames)
{
    for (size_t i = 0; i < sizeof(fake_table) / sizeof(fake_table[0]); i++) {
        if (fake_table[i].ip == ip) {
            *frames = fake_table[i].f;
            return 1;
        }
    }
    s->addr = (struct trk_frame){.offset = ip, .ip = ip};
    *frames = &s->addr;
    return 1;
}

void trk_symbolizer_free(struct trk_symbolizer *s)
{
    free(s);
}

#include "tcap.h"

/* Stack ids, each (parent, ip); innermost last in the comment. */
enum {
    S_THREAD = 1, /* start_thread */
    S_ENGINE,     /* > Engine::thread_main */
    S_EMPTY,      /* > empty_cuda */
    S_CACHING,    /* > CUDACachingAllocator::...::malloc */
    S_C10_ANON,   /* > libc10_cuda.so+0x41 (unnamed) */
    S_CUDAMALLOC, /* > cudaMalloc */
    S_CUDART,     /* > libcudart.so.13+0x41b5e */
    S_DRIVER,     /* > libcuda.so.1+0x777 */
    S_HOOK,       /* > [tracker] trk_cuMemAlloc_v2 */
    S_EMPTY_CPU,  /* start_thread > empty_cpu */
    S_CPU_ALLOC,  /* > DefaultCPUAllocator::allocate */
    S_ALLOC_CPU,  /* > c10::alloc_cpu */
    S_CPU_MALLOC, /* > malloc */
    S_USER,       /* start_thread > my_gpu_alloc */
    S_USER_RT,    /* > cudaMalloc */
    S_USER_RT2,   /* > libcudart.so.13+0x41b5e */
    S_CALLBACK,   /* start_thread > my_gpu_alloc > cudaMalloc > my_gpu_alloc */
    S_COUNT,
};

static const uint64_t stack_def[S_COUNT][2] = {
    [S_THREAD] = {0, 0x1000},          [S_ENGINE] = {S_THREAD, 0x2000},
    [S_EMPTY] = {S_ENGINE, 0x3000},    [S_CACHING] = {S_EMPTY, 0x4000},
    [S_C10_ANON] = {S_CACHING, 0x4100}, [S_CUDAMALLOC] = {S_C10_ANON, 0x5000},
    [S_CUDART] = {S_CUDAMALLOC, 0x5100}, [S_DRIVER] = {S_CUDART, 0x5200},
    [S_HOOK] = {S_DRIVER, 0x6000},     [S_EMPTY_CPU] = {S_THREAD, 0x7200},
    [S_CPU_ALLOC] = {S_EMPTY_CPU, 0x7100}, [S_ALLOC_CPU] = {S_CPU_ALLOC, 0x7000},
    [S_CPU_MALLOC] = {S_ALLOC_CPU, 0x8000}, [S_USER] = {S_THREAD, 0x9000},
    [S_USER_RT] = {S_USER, 0x5000},    [S_USER_RT2] = {S_USER_RT, 0x5100},
    [S_CALLBACK] = {S_USER_RT, 0x9000},
};

struct fixture {
    struct tcap cap;
    struct trk_reader *r;
    struct trk_symbolizer *sym;
    struct trk_profile prof;
};

static void fixture_make(struct fixture *f)
{
    tc_begin(&f->cap);
    unsigned t = tc_thread(&f->cap, 100, 0);
    for (uint64_t id = 1; id < S_COUNT; id++)
        tc_stack(&f->cap, t, id, stack_def[id][0], stack_def[id][1]);
    tc_alloc(&f->cap, t, 0x10000, 64, S_HOOK);
    f->r = tc_open(&f->cap);
    /* The stacks are known once the events have been read. */
    assert_int_equal(trk_profile_compute(f->r, NULL, &f->prof), 0);
    f->sym = trk_symbolizer_new(f->r, NULL);
    assert_non_null(f->sym);
}

static void fixture_free(struct fixture *f)
{
    trk_symbolizer_free(f->sym);
    trk_profile_free(&f->prof);
    trk_reader_close(f->r);
    tc_free_all(&f->cap);
}

/* The frames of stack, innermost first, by name (function or module+offset). */
static void expect_frames(struct fixture *f, uint64_t stack, int keep, const char *const *names,
                          int n)
{
    struct trk_frame_buf buf = {0};
    const struct trk_frame *fr;
    struct trk_frames_options o = {.keep_allocator_frames = keep};
    int got = trk_stack_frames(f->r, f->sym, stack, &o, &buf, &fr);
    char tmp[256];
    for (int i = 0; i < got && i < n; i++) {
        struct trk_location l = {
            .function = fr[i].function, .module = fr[i].module, .offset = fr[i].offset};
        assert_string_equal(trk_location_name(&l, tmp, sizeof(tmp)), names[i]);
    }
    assert_int_equal(got, n);
    trk_frame_buf_free(&buf);
}

static const char EMPTY_CUDA[] = "at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, "
                                 "std::optional<c10::Device>, std::optional<c10::MemoryFormat>)";
static const char ENGINE[] =
    "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)";

/* Device memory from the autograd thread: the op is the location. */
static void test_cuda_runtime_hidden(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f);
    expect_frames(&f, S_HOOK, 0, (const char *const[]){EMPTY_CUDA, ENGINE, "start_thread"}, 3);
    /* The same from any depth of the runtime: the driver, the runtime's
     * unnamed internals, its entry point. */
    expect_frames(&f, S_CUDART, 0, (const char *const[]){EMPTY_CUDA, ENGINE, "start_thread"}, 3);
    expect_frames(&f, S_CUDAMALLOC, 0, (const char *const[]){EMPTY_CUDA, ENGINE, "start_thread"},
                  3);
    /* --keep-allocator-frames shows them all (the tracker's too). */
    expect_frames(&f, S_HOOK, 1,
                  (const char *const[]){"trk_cuMemAlloc_v2", "libcuda.so.1+0x777",
                                        "libcudart.so.13+0x41b5e", "cudaMalloc",
                                        "libc10_cuda.so+0x41",
                                        "c10::cuda::CUDACachingAllocator::Native::"
                                        "DeviceCachingAllocator::malloc(signed char, "
                                        "unsigned long, CUstream_st*)",
                                        EMPTY_CUDA, ENGINE, "start_thread"},
                  9);
    fixture_free(&f);
}

/* PyTorch's CPU allocator is hidden like malloc under it. */
static void test_cpu_allocator_hidden(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f);
    expect_frames(&f, S_CPU_MALLOC, 0,
                  (const char *const[]){"at::detail::empty_cpu(c10::ArrayRef<long>, "
                                        "c10::ScalarType, bool)",
                                        "start_thread"},
                  2);
    fixture_free(&f);
}

/* Only a run at the inner end goes: a runtime frame with the program's
 * code inside it (a callback) stays. */
static void test_only_inner_end(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f);
    expect_frames(&f, S_USER_RT2, 0, (const char *const[]){"my_gpu_alloc", "start_thread"}, 2);
    expect_frames(&f, S_CALLBACK, 0,
                  (const char *const[]){"my_gpu_alloc", "cudaMalloc", "my_gpu_alloc",
                                        "start_thread"},
                  4);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_runtime_hidden),
        cmocka_unit_test(test_cpu_allocator_hidden),
        cmocka_unit_test(test_only_inner_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
