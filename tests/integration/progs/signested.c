/* SPDX-License-Identifier: MIT
 *
 * signested.c - SIGALRM every US microseconds whose handler makes 10
 * malloc/free pairs, while the main thread runs N iterations of
 * mmap/munmap plus malloc/free: most signals land inside one of the
 * interposer's hooks, so the handler's calls are nested in a hook. Prints
 * how many times the handler ran; the caller knows each run made exactly 10
 * allocations and 10 frees.
 *
 * glibc's malloc is not async-signal-safe; as in sigalloc.c the handler only
 * uses 48-byte blocks, one at a time, from a tcache bin primed before the
 * timer starts, and the main loop never touches that bin, so glibc itself
 * can neither deadlock nor corrupt its heap. A hang or a crash is the
 * interposer's.
 *
 * With MAPS = 1 the handler also maps and unmaps one 8 KiB region per run
 * (syscalls, safe anywhere).
 *
 * usage: signested N US [MAPS]   (US = 0: no timer)
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>

#include "common.h"

#define PER_HANDLER 10

static volatile sig_atomic_t handled;
static int maps;

static void on_alarm(int sig)
{
    (void)sig;
    for (int i = 0; i < PER_HANDLER; i++) {
        char *p = malloc(48);
        if (!p)
            die("malloc in handler");
        p[0] = 1;
        free(p);
    }
    if (maps) {
        char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            die("mmap in handler");
        m[0] = 1;
        if (munmap(m, 8192))
            die("munmap in handler");
    }
    handled++;
}

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 100000);
    unsigned long long us = arg_u64(argc, argv, 2, 200);
    maps = (int)arg_u64(argc, argv, 3, 0);

    /* Prime the handler's tcache bin with one free chunk. */
    free(malloc(48));

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
    for (unsigned long long i = 0; i < n; i++) {
        char *m = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            die("mmap");
        m[0] = 1;
        if (munmap(m, 65536))
            die("munmap");
        char *p = malloc(200 + (i % 4) * 16);
        if (!p)
            die("malloc");
        p[0] = 1;
        free(p);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    /* Block it so that a late signal cannot change the count after it is printed. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    put_kv("iters", n);
    put_kv("handled", (unsigned long long)handled);
    put_kv("handler_allocs", (unsigned long long)handled * PER_HANDLER);
    return 0;
}
