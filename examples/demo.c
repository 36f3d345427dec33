/* SPDX-License-Identifier: MIT
 *
 * demo.c - the bundled example for the README's first command: a small
 * program with a known shape (a cache that leaks, a worker pool that churns,
 * an anonymous mapping) to record and read back with `tracker stats`.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define WORKERS 4

struct entry {
    struct entry *next;
    char key[48];
};

static struct entry *cache;

/* Leaks on purpose: the cache is never torn down. */
static void cache_put(int i)
{
    struct entry *e = malloc(sizeof(*e));
    snprintf(e->key, sizeof(e->key), "key-%d", i);
    e->next = cache;
    cache = e;
}

/* Churn: short-lived buffers of varying size, all freed. */
static void *worker(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg;
    for (int i = 0; i < 20000; i++) {
        size_t n = 32 + (size_t)(rand_r(&seed) % 4096);
        char *buf = malloc(n);
        memset(buf, i, n);
        free(buf);
    }
    return NULL;
}

int main(void)
{
    pthread_t th[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(size_t)(i + 1));
    for (int i = 0; i < 1000; i++)
        cache_put(i);
    size_t len = 8u << 20;
    char *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map != MAP_FAILED) {
        memset(map, 1, len);
        munmap(map, len / 2);
        munmap(map + len / 2, len / 2);
    }
    for (int i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);
    printf("demo: done (1000 cache entries leaked on purpose)\n");
    return 0;
}
