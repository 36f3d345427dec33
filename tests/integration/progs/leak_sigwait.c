/* SPDX-License-Identifier: MIT
 *
 * leak_sigwait.c - a program whose signal thread waits for every signal
 * with sigwaitinfo, all signals blocked in every thread (a common server
 * pattern), for test_leak_scan_signals.py. The exit-time leak scan must not
 * send that thread the real-time signal it stops threads with: the thread
 * would take it as the program's own and act on it. The thread says
 * "spurious=SIGNO" for any signal it receives.
 *
 * It keeps a 1111-byte block on its stack (still reachable: a blocked
 * thread's stack is scanned from its stack pointer) and main loses a
 * 2222-byte block (definitely lost).
 *
 * usage: leak_sigwait
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "common.h"

static _Atomic int ready;

__attribute__((noinline)) static void *kept_by_waiter(void)
{
    return malloc(1111); /* @kept */
}

__attribute__((noinline)) static void *lost_by_main(void)
{
    return malloc(2222); /* @lost */
}

static void *waiter(void *arg)
{
    (void)arg;
    void *volatile kept = kept_by_waiter();
    sigset_t all;
    sigfillset(&all);
    atomic_store(&ready, 1);
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&all, &si);
        if (sig > 0)
            put_kv("spurious", (unsigned long long)sig);
        sink(kept);
    }
    return NULL;
}

int main(void)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, waiter, NULL) != 0)
        die("pthread_create");
    while (!atomic_load(&ready)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    /* let the waiter reach sigwaitinfo */
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    void *volatile p = lost_by_main();
    sink(p);
    p = NULL;
    put_kv("ready", 1);
    return 0;
}
