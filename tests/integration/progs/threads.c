/* SPDX-License-Identifier: MIT
 *
 * threads.c - T threads started together behind a barrier, each making M
 * allocations of S bytes and freeing all but one of them (when M > 0), so the
 * totals are exact: T*M allocations, T*(M-1) frees, T*S leaked.
 *
 * usage: threads T M S
 */
#include <pthread.h>
#include <stdlib.h>

#include "common.h"

static pthread_barrier_t start;
static unsigned long long m_allocs, size;

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    char *keep = NULL;
    for (unsigned long long i = 0; i < m_allocs; i++) {
        char *p = malloc(size);
        if (!p)
            die("malloc");
        p[0] = 1;
        if (!keep)
            keep = p; /* the first block is the thread's one leak */
        else
            free(p);
    }
    sink(keep);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned long long t = arg_u64(argc, argv, 1, 100);
    m_allocs = arg_u64(argc, argv, 2, 100);
    size = arg_u64(argc, argv, 3, 64);
    pthread_t tids[1024];
    if (t > 1024)
        die("too many threads");
    if (t == 0)
        return 0;
    pthread_barrier_init(&start, NULL, (unsigned)t);
    for (unsigned long long i = 0; i < t; i++)
        if (pthread_create(&tids[i], NULL, worker, NULL))
            die("pthread_create");
    for (unsigned long long i = 0; i < t; i++)
        pthread_join(tids[i], NULL);
    pthread_barrier_destroy(&start);
    return 0;
}
