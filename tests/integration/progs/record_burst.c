/* SPDX-License-Identifier: MIT
 *
 * record_burst.c - T threads, each keeping a window of W live blocks and
 * replacing one per step for N steps (sizes 1..4096 from a fixed sequence,
 * so the byte total is exact), with errno set to a sentinel before every
 * malloc and free and checked after: the hook-to-ring path (its fast path,
 * its slow path when the ring wraps or is full, the writer's wakes) must
 * neither lose nor reorder an event, nor touch the program's errno. Ends
 * with every block freed. Prints errno_bad and bytes (the sum of all
 * requested sizes).
 *
 * usage: record_burst T N W
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common.h"

static unsigned long long steps, window;
static unsigned long long errno_bad, total_bytes;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    unsigned long long x = 0x9E3779B97F4A7C15ull ^ (unsigned long long)(size_t)arg, bad = 0,
                       bytes = 0;
    char **ring = calloc(window, sizeof(*ring));
    if (!ring)
        die("calloc");
    for (unsigned long long i = 0; i < steps + window; i++) {
        unsigned long long slot = i % window;
        if (ring[slot]) {
            errno = EDOM;
            free(ring[slot]);
            bad += errno != EDOM;
        }
        ring[slot] = NULL;
        if (i >= steps)
            continue;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t n = 1 + (size_t)(x % 4096);
        errno = ERANGE;
        char *p = malloc(n);
        bad += errno != ERANGE;
        if (!p)
            die("malloc");
        p[0] = 1;
        ring[slot] = p;
        bytes += n;
    }
    free(ring);
    pthread_mutex_lock(&lock);
    errno_bad += bad;
    total_bytes += bytes;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned long long t = arg_u64(argc, argv, 1, 2);
    steps = arg_u64(argc, argv, 2, 1000);
    window = arg_u64(argc, argv, 3, 64);
    pthread_t th[64];
    if (t > 64 || window == 0)
        die("usage");
    for (unsigned long long i = 0; i < t; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(size_t)(i + 1)))
            die("pthread_create");
    for (unsigned long long i = 0; i < t; i++)
        pthread_join(th[i], NULL);
    put_kv("errno_bad", errno_bad);
    put_kv("bytes", total_bytes);
    return 0;
}
