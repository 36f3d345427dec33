/* SPDX-License-Identifier: MIT
 *
 * key_dtor.c - allocation while threads and the process are being torn down.
 * Each of T threads sets a pthread key whose destructor runs after the
 * thread's start routine returned, when a preload's own per-thread state may
 * already be gone. The destructor allocates KS bytes and leaks them, frees a
 * second block, and sets the key again once so that it runs a second round
 * (POSIX repeats destructors while values remain). An atexit handler leaks
 * one more block of KS bytes after main returned.
 *
 * Per thread with DTOR=1: 4 allocations, 2 frees, 2*KS leaked; plus 1
 * allocation of KS leaked at exit.
 *
 * usage: key_dtor T DTOR KS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "common.h"

static pthread_key_t key;
static unsigned long long ks;

static void destructor(void *value)
{
    char *leak = malloc(ks);
    char *tmp = malloc(ks + 1);
    if (!leak || !tmp)
        die("malloc in destructor");
    leak[0] = 1;
    tmp[0] = 1;
    sink(leak);
    free(tmp);
    /* First round sets the value again, to be called once more. */
    if ((uintptr_t)value == 1)
        pthread_setspecific(key, (void *)2);
}

static void *worker(void *arg)
{
    pthread_setspecific(key, arg);
    return NULL;
}

static void at_exit(void)
{
    char *p = malloc(ks);
    if (!p)
        die("malloc at exit");
    p[0] = 1;
    sink(p);
}

int main(int argc, char **argv)
{
    unsigned long long t = arg_u64(argc, argv, 1, 8);
    unsigned long long dtor = arg_u64(argc, argv, 2, 1);
    ks = arg_u64(argc, argv, 3, 1000);
    if (t > 256)
        die("too many threads");
    pthread_key_create(&key, dtor ? destructor : NULL);
    if (dtor)
        atexit(at_exit);
    pthread_t tids[256];
    /* One after the other, so that thread exit never overlaps thread start. */
    for (unsigned long long i = 0; i < t; i++) {
        if (pthread_create(&tids[i], NULL, worker, (void *)1))
            die("pthread_create");
        pthread_join(tids[i], NULL);
    }
    return 0;
}
