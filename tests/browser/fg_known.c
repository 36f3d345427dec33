/* SPDX-License-Identifier: MIT
 *
 * fg_known.c - a program with exactly known allocations for the flamegraph
 * browser tests (test_flamegraph.js). Built without inlining so that every
 * function below is a frame of its own. It never prints (no stdio buffer in
 * the figures) and ignores its arguments: the tests pass markup as argv to
 * check that the page shows it as text.
 *
 *   phase_one   2,000,000 bytes, held ~80 ms, freed       (early, not at the peak)
 *   alpha       alpha_alloc: 600,000 bytes, never freed
 *   beta        gamma_fn: 300,000 + its own 100,000, never freed
 *   worker      50,000 bytes on a thread named "<b>th</b>", never freed
 *   phase_two   3,000,000 bytes, held ~80 ms, freed       (the heap peak)
 *
 * So at the peak: phase_two 3,000,000, alpha 600,000, beta 400,000 (gamma_fn
 * 300,000), worker 50,000, plus what libc allocates for the thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static void *keep[4];
static void *volatile sink;

static void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

NOINLINE static void phase_one(void)
{
    char *p = malloc(2000000);
    sink = p;
    nap(80);
    free(p);
}

NOINLINE static void *alpha_alloc(size_t n)
{
    return malloc(n);
}

NOINLINE static void alpha(void)
{
    keep[0] = alpha_alloc(600000);
}

NOINLINE static void gamma_fn(void)
{
    keep[1] = malloc(300000);
}

NOINLINE static void beta(void)
{
    gamma_fn();
    keep[2] = malloc(100000);
}

NOINLINE static void *worker(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "<b>th</b>", 0, 0, 0);
    keep[3] = malloc(50000);
    return NULL;
}

NOINLINE static void phase_two(void)
{
    char *p = malloc(3000000);
    sink = p;
    nap(80);
    free(p);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    phase_one();
    nap(80);
    alpha();
    beta();
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    nap(20);
    phase_two();
    nap(20);
    return 0;
}
