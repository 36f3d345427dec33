/* SPDX-License-Identifier: MIT
 *
 * sigslow.c - SIGALRM every US microseconds whose handler makes 10
 * malloc/free pairs DEPTH calls deep, through a frame whose canonical frame
 * address is given as a DWARF expression. libunwind's fast trace cannot
 * follow such a frame (nor a PLT stub, where a signal may land in any
 * program) and falls back to its slow path for the whole stack: the
 * tracker's unwind of each of these allocations takes that path. The main
 * thread counts to N, allocating now and then, outside any hook most of the
 * time, so the handler's calls are recorded (not nested); it also
 * allocates through that frame itself, and prints how many signals it finds
 * blocked at the end (it never blocks any before). If the tracked
 * handler costs more than the timer period, the program never gets past the
 * instruction the first signal interrupted: it hangs. Prints the counts.
 *
 * As in sigalloc.c the handler only uses 48-byte blocks from a primed tcache
 * bin that the main loop never touches, so glibc itself stays consistent.
 *
 * usage: sigslow N US DEPTH
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "common.h"

#define PER_HANDLER 10

void *trk_itest_expr_frame_malloc(size_t n);

#if defined(__x86_64__)
/* malloc(n) from a frame whose CFA rule is DW_CFA_def_cfa_expression
 * (DW_OP_breg7 rsp + 16): the same address as a plain rule, but not one the
 * fast trace accepts. */
__asm__(".text\n"
        ".globl trk_itest_expr_frame_malloc\n"
        ".type trk_itest_expr_frame_malloc, @function\n"
        "trk_itest_expr_frame_malloc:\n"
        ".cfi_startproc\n"
        "push %rbx\n"
        ".cfi_escape 0x0f, 0x02, 0x77, 0x10\n"
        ".cfi_offset rbx, -16\n"
        "call malloc@PLT\n"
        "pop %rbx\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size trk_itest_expr_frame_malloc, .-trk_itest_expr_frame_malloc\n");
#else
void *trk_itest_expr_frame_malloc(size_t n)
{
    return malloc(n);
}
#endif

static volatile sig_atomic_t handled;
static int depth;
static unsigned long long handler_ns; /* for people, not asserted: timing varies */

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void deep(int d)
{
    if (d > 0) {
        deep(d - 1);
        sink(&d);
        return;
    }
    for (int i = 0; i < PER_HANDLER; i++) {
        char *p = trk_itest_expr_frame_malloc(48);
        if (!p)
            die("malloc in handler");
        p[0] = 1;
        free(p);
    }
}

static void on_alarm(int sig)
{
    (void)sig;
    unsigned long long t0 = now_ns();
    deep(depth);
    if (handled >= 10) /* past the cold start */
        handler_ns += now_ns() - t0;
    handled++;
}

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 20000000);
    unsigned long long us = arg_u64(argc, argv, 2, 100);
    depth = (int)arg_u64(argc, argv, 3, 30);

    free(malloc(48)); /* prime the handler's tcache bin */

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    if (us) {
        struct itimerval it = {{0, (long)us}, {0, (long)us}};
        setitimer(ITIMER_REAL, &it, NULL);
    }
    volatile unsigned long long count = 0;
    for (unsigned long long i = 0; i < n; i++) {
        count++;
        if (i % 4096 == 0) {
            /* Also the slow path outside a handler: the signal mask the
             * program set must be what it has afterwards. */
            char *p = i % 8192 ? malloc(200) : trk_itest_expr_frame_malloc(200);
            if (!p)
                die("malloc");
            p[0] = 1;
            free(p);
        }
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    sigset_t now;
    sigprocmask(SIG_SETMASK, NULL, &now);
    unsigned long long blocked = 0;
    for (int sig = 1; sig < 32; sig++)
        blocked += (unsigned long long)(sigismember(&now, sig) == 1);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    put_kv("iters", n);
    put_kv("blocked_signals", blocked);
    put_kv("handled", (unsigned long long)handled);
    put_kv("handler_allocs", (unsigned long long)handled * PER_HANDLER);
    put_kv("handler_avg_ns", handled > 10 ? handler_ns / ((unsigned long long)handled - 10) : 0);
    return 0;
}
