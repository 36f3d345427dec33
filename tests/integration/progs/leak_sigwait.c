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
 * Mode "signalfd": the thread reads a signalfd of every signal instead
 * (all blocked, never waiting in sigwaitinfo).
 *
 * usage: leak_sigwait [signalfd]
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>

#include "common.h"

static _Atomic int ready;
static int use_signalfd;

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
    if (use_signalfd) {
        int fd = signalfd(-1, &all, SFD_CLOEXEC);
        if (fd < 0)
            die("signalfd");
        atomic_store(&ready, 1);
        for (;;) {
            struct signalfd_siginfo si;
            if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                put_kv("spurious", si.ssi_signo);
            sink(kept);
        }
    }
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

int main(int argc, char **argv)
{
    use_signalfd = argc > 1 && strcmp(argv[1], "signalfd") == 0;
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
