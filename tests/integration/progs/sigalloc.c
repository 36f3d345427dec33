/* SPDX-License-Identifier: MIT
 *
 * sigalloc.c - SIGALRM at a high rate (every US microseconds) whose handler
 * mallocs and frees, while the main thread mallocs and frees in a loop; runs
 * until the handler ran H times (or the main loop made MAXI iterations).
 *
 * glibc's malloc is not async-signal-safe, so the program is arranged so that
 * glibc itself can never deadlock or corrupt its heap: the handler only uses
 * 48-byte blocks, served from and returned to a tcache bin primed before the
 * timer starts (no arena lock), and the main loop never touches that bin.
 * A hang or a crash is therefore the interposer's. Prints the counts.
 *
 * usage: sigalloc H US MAXI
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "common.h"

static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
    (void)sig;
    char *p = malloc(48);
    if (!p)
        die("malloc in handler");
    p[0] = 1;
    free(p);
    handled++;
}

int main(int argc, char **argv)
{
    unsigned long long target = arg_u64(argc, argv, 1, 5000);
    unsigned long long us = arg_u64(argc, argv, 2, 50);
    unsigned long long maxi = arg_u64(argc, argv, 3, 50000000);

    /* Prime the handler's tcache bin with one free chunk. */
    free(malloc(48));

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, (long)us}, {0, (long)us}};
    unsigned long long iters = 0;
    if (target) {
        setitimer(ITIMER_REAL, &it, NULL);
        while ((unsigned long long)handled < target && iters < maxi) {
            char *p = malloc(200 + (iters % 4) * 16);
            if (!p)
                die("malloc");
            p[0] = 1;
            free(p);
            iters++;
        }
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
    }
    /* Block it so that a late signal cannot change the count after it is printed. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    put_kv("main_iters", iters);
    put_kv("handled", (unsigned long long)handled);
    return 0;
}
