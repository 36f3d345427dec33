/* SPDX-License-Identifier: MIT
 *
 * unwind_cases.c - stacks that are hard to walk, for test_unwind.py: each
 * mode allocates from them many times, and the test runs it with
 * TRACKER_UNWIND_CHECK=1 (every stack walked by both unwinders) and expects
 * no mismatch. Built twice: with frame pointers at -O0 (unwind_cases) and
 * at -O2 without them (unwind_cases_nofp), so that CFA rules are rsp-based.
 *
 *   chain N     N allocations through a chain of frames of different sizes,
 *               some with alloca (rbp-based CFA even without frame pointers)
 *   altstack N  a SIGALRM handler on a sigaltstack allocating (N signals)
 *   longjmp N   allocate deep down, longjmp out, allocate again
 *   dlchurn N DIR   dlopen/dlclose two libraries in turn (same code layout,
 *               other frame sizes, usually the same address), allocating
 *   jit N       machine code in an mmap with its unwind info registered by
 *               __register_frame, calling back into a function that allocates
 *   nounwind N  the same code without registered unwind info
 *   callers N   N allocations from one leaf at one stack depth, reached by
 *               callers that differ one frame up, two frames up, and under
 *               a 40-frame recursion, or that meet again in the middle and
 *               part once more further up: the start of every walk is the
 *               same, only the words further up tell them apart (the walk
 *               memo, src/capture/unwind.c); sizes say which path allocated
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uintptr_t sink;

NOINLINE static void leafalloc(int k)
{
    void *p = malloc(16 + (size_t)(k & 63));
    sink += (uintptr_t)p;
    free(p);
}

NOINLINE static void big_frame(int k)
{
    volatile char buf[4000];
    buf[7] = 1;
    buf[k & 1023] = (char)k;
    leafalloc(k + buf[7]);
}

NOINLINE static void with_alloca(int k)
{
    volatile char *a = __builtin_alloca((size_t)(k & 255) + 16);
    a[0] = (char)k;
    if (k & 1)
        big_frame(k);
    else
        leafalloc(k + a[0]);
}

NOINLINE static void middle(int k, int d)
{
    if (d > 0)
        middle(k, d - 1);
    else
        with_alloca(k);
    sink += (uintptr_t)d;
}

static void run_chain(int n)
{
    for (int i = 0; i < n; i++)
        middle(i, i % 7);
}

/* ---- signal handler on an alternate stack ------------------------------- */

static volatile sig_atomic_t handled;

NOINLINE static void handler_work(int k)
{
    middle(k, 2);
}

static void on_alarm(int sig)
{
    (void)sig;
    handler_work(handled);
    handled++;
}

static void run_altstack(int n)
{
    stack_t ss = {0};
    ss.ss_size = 1 << 16;
    ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_ONSTACK | SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &it, NULL);
    long iters = 0;
    while (handled < n) {
        middle((int)iters, (int)(iters % 5));
        iters++;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    /* and a few raised synchronously, so some land outside the hooks */
    for (int i = 0; i < 50; i++)
        raise(SIGALRM);
    printf("handled=%d\nmain_iters=%ld\n", (int)handled, iters);
}

/* ---- longjmp ---------------------------------------------------------------- */

static jmp_buf jb;

/* Not noreturn to the compiler, so that the recursion below has a way out
 * it can see. */
NOINLINE static void jump_out(int v)
{
    if (v)
        longjmp(jb, v);
}

NOINLINE static void deep_then_jump(int k, int d)
{
    if (d > 0)
        deep_then_jump(k, d - 1);
    else
        leafalloc(k);
    jump_out(d == 0);
}

static void run_longjmp(int n)
{
    for (volatile int i = 0; i < n; i++) {
        if (setjmp(jb) == 0)
            deep_then_jump(i, i % 9);
        else
            middle(i, 1);
    }
}

/* ---- dlopen / dlclose churn ------------------------------------------------- */

static void run_dlchurn(int n, const char *dir)
{
    char a[4096], b[4096];
    snprintf(a, sizeof(a), "%s/libunwind_liba.so", dir);
    snprintf(b, sizeof(b), "%s/libunwind_libb.so", dir);
    int same = 0;
    void *last = NULL;
    for (int i = 0; i < n; i++) {
        void *h = dlopen(i & 1 ? b : a, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            exit(2);
        }
        void (*f)(int) = (void (*)(int))dlsym(h, "unwind_lib_alloc");
        if ((void *)f == last)
            same++;
        last = (void *)f;
        for (int k = 0; k < 20; k++)
            f(k);
        dlclose(h);
    }
    printf("same_address=%d\n", same);
}

/* ---- JIT code ----------------------------------------------------------------- */

extern void __register_frame(void *);
extern void __deregister_frame(void *);

NOINLINE static void jit_target(void)
{
    middle(3, 2);
}

/* sub $8,%rsp; movabs $jit_target,%rax; call *%rax; add $8,%rsp; ret */
static size_t emit_code(uint8_t *c)
{
    size_t i = 0;
    const uint8_t pro[] = {0x48, 0x83, 0xec, 0x08, 0x48, 0xb8};
    memcpy(c + i, pro, sizeof(pro));
    i += sizeof(pro);
    uintptr_t t = (uintptr_t)&jit_target;
    memcpy(c + i, &t, 8);
    i += 8;
    const uint8_t epi[] = {0xff, 0xd0, 0x48, 0x83, 0xc4, 0x08, 0xc3};
    memcpy(c + i, epi, sizeof(epi));
    return i + sizeof(epi);
}

/* A CIE and one FDE for that code, then the zero terminator. */
static size_t emit_eh_frame(uint8_t *e, const uint8_t *code, size_t code_len)
{
    const uint8_t cie[] = {
        0x14, 0, 0, 0,            /* length 20 */
        0, 0, 0, 0,               /* CIE id */
        1, 'z', 'R', 0,           /* version, augmentation */
        1, 0x78, 16,              /* code align 1, data align -8, RA column 16 */
        1, 0x1b,                  /* aug data: FDE pointers pcrel sdata4 */
        0x0c, 7, 8, 0x90, 1, 0, 0 /* def_cfa rsp+8; RA at cfa-8; nops */
    };
    memcpy(e, cie, sizeof(cie));
    uint8_t *f = e + sizeof(cie);
    const uint8_t fde_insns[] = {
        0x44, 0x0e, 16, /* after sub (4 bytes): cfa rsp+16 */
        0x50, 0x0e, 8,  /* after movabs, call, add (16 bytes): cfa rsp+8 */
        0, 0, 0, 0, 0,  /* nops: the FDE ends 4-aligned */
    };
    uint32_t len = 4 + 4 + 4 + 1 + sizeof(fde_insns);
    memcpy(f, &len, 4);
    uint32_t cie_ptr = (uint32_t)(f + 4 - e);
    memcpy(f + 4, &cie_ptr, 4);
    int32_t pc = (int32_t)(code - (f + 8));
    memcpy(f + 8, &pc, 4);
    uint32_t range = (uint32_t)code_len;
    memcpy(f + 12, &range, 4);
    f[16] = 0; /* aug data length */
    memcpy(f + 17, fde_insns, sizeof(fde_insns));
    uint8_t *end = f + 4 + len;
    memset(end, 0, 4);
    return (size_t)(end + 4 - e);
}

static void run_jit(int n, int reg)
{
    uint8_t *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    size_t len = emit_code(m);
    uint8_t *eh = m + 4096;
    emit_eh_frame(eh, m, len);
    if (reg)
        __register_frame(eh);
    void (*fn)(void) = (void (*)(void))m;
    for (int i = 0; i < n; i++)
        fn();
    if (reg)
        __deregister_frame(eh);
    printf("jit_calls=%d\n", n);
}

/* callers: identical frames above one leaf, told apart only higher up (the
 * bodies differ in a constant, so that -O2 folds none of them into another) */
NOINLINE static void c_leaf(size_t size)
{
    void *volatile p = malloc(size);
    sink += (uintptr_t)p;
    free(p);
}
NOINLINE static void c_mid(size_t size)
{
    c_leaf(size);
    sink += 2;
}
NOINLINE static void c_via_a(size_t size)
{
    c_leaf(size);
    sink += 3;
}
NOINLINE static void c_via_b(size_t size)
{
    c_leaf(size);
    sink += 4;
}
NOINLINE static void c_up_a(size_t size)
{
    c_mid(size);
    sink += 5;
}
NOINLINE static void c_up_b(size_t size)
{
    c_mid(size);
    sink += 6;
}
NOINLINE static void c_deep(int d, size_t size)
{
    if (d > 0)
        c_deep(d - 1, size);
    else
        c_leaf(size);
    sink += 7;
}
NOINLINE static void c_top_a(size_t size)
{
    c_deep(40, size);
    sink += 8;
}
NOINLINE static void c_top_b(size_t size)
{
    c_deep(40, size);
    sink += 9;
}

/* Two call sites in s_mid, reached from s_top under s_from_a or s_from_b:
 * a walk that differs at the innermost frame meets the previous walk's
 * frames again at s_mid's (same place, same return address), yet the
 * frame above that differs. */
NOINLINE static void s_mid(int k, size_t size)
{
    if (k)
        c_leaf(size);
    else
        c_leaf(size + 1000);
    sink += 11;
}
NOINLINE static void s_top(int k, size_t size)
{
    s_mid(k, size);
    sink += 12;
}
NOINLINE static void s_from_a(int k)
{
    s_top(k, 401);
    sink += 13;
}
NOINLINE static void s_from_b(int k)
{
    s_top(k, 402);
    sink += 14;
}

static void run_callers(int n)
{
    for (int i = 0; i < n; i++) {
        (i & 1 ? c_via_a : c_via_b)(i & 1 ? 101 : 102);
        (i % 3 ? c_up_a : c_up_b)(i % 3 ? 201 : 202);
        (i % 5 ? c_top_a : c_top_b)(i % 5 ? 301 : 302);
        (i & 1 ? s_from_a : s_from_b)(i & 2);
    }
    printf("callers=%d\n", n);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s chain|altstack|longjmp|dlchurn|jit|nounwind|callers N [dir]\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[2]);
    if (!strcmp(argv[1], "chain"))
        run_chain(n);
    else if (!strcmp(argv[1], "altstack"))
        run_altstack(n);
    else if (!strcmp(argv[1], "longjmp"))
        run_longjmp(n);
    else if (!strcmp(argv[1], "dlchurn") && argc > 3)
        run_dlchurn(n, argv[3]);
    else if (!strcmp(argv[1], "jit"))
        run_jit(n, 1);
    else if (!strcmp(argv[1], "nounwind"))
        run_jit(n, 0);
    else if (!strcmp(argv[1], "callers"))
        run_callers(n);
    else
        return 2;
    printf("done=1\n");
    return 0;
}
