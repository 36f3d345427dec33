/* SPDX-License-Identifier: MIT
 *
 * handoff.c - total-order stress. T threads form a ring; each allocates ITERS
 * blocks, hands every one to the next thread through a lock-free
 * single-producer/single-consumer queue, and frees every block it receives
 * from the previous thread. With one malloc arena (M_ARENA_MAX = 1) and block
 * sizes above the tcache limit, an address freed by one thread is handed out
 * again to another almost at once, so a reader that ordered a free after the
 * reuse of its address would report frees of unknown blocks and wrong live
 * totals.
 *
 * Before the ring starts every thread allocates W anchor blocks of 4096 bytes
 * and waits at a barrier, so T*W*4096 bytes are provably live at once; they
 * are freed at the end. After the ring each thread leaks L blocks of
 * LEAK_SIZE bytes. At any moment a thread holds at most Q queued blocks plus
 * one in hand and one just received, each at most MAX_SIZE bytes.
 *
 * The program also counts how often it received an address whose last free
 * happened on another thread (through a racy table, good enough as a lower
 * bound), so the test can tell that it really exercised cross-thread reuse.
 *
 * usage: handoff T ITERS L [W]
 */
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define Q 64          /* queue capacity, a power of two */
#define MAX_T 16 /* thread ids fit in the low 4 bits of an aligned address */
#define ANCHOR_SIZE 4096
#define LEAK_SIZE 10007
#define MAX_SIZE 4000

/* Tcache-sized blocks mixed with larger ones that go through the shared
 * arena's bins, where cross-thread reuse happens. */
static const size_t sizes[] = {1100, 24, 2000, 4000, 1500, 100, 3000, 1040};
#define NSIZES (sizeof sizes / sizeof sizes[0])

struct ring {
    _Alignas(64) _Atomic size_t head; /* next slot the consumer reads */
    _Alignas(64) _Atomic size_t tail; /* next slot the producer writes */
    void *slot[Q];
};

static struct ring rings[MAX_T];

/* Address -> (address | id of the thread that last freed it). */
#define REUSE_SLOTS (1u << 16)
static _Atomic uintptr_t last_free[REUSE_SLOTS];
static _Atomic unsigned long long cross_reuse;

static size_t slot_of(const void *p)
{
    return ((uintptr_t)p >> 4) % REUSE_SLOTS;
}
static unsigned long long nthreads, iters, leaks, anchors;
static pthread_barrier_t start;

static int push(struct ring *r, void *p)
{
    size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t - atomic_load_explicit(&r->head, memory_order_acquire) == Q)
        return 0;
    r->slot[t % Q] = p;
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return 1;
}

static void *pop(struct ring *r)
{
    size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (h == atomic_load_explicit(&r->tail, memory_order_acquire))
        return NULL;
    void *p = r->slot[h % Q];
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return p;
}

static void *worker(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    struct ring *in = &rings[id], *out = &rings[(id + 1) % nthreads];
    void *anchor[256];

    for (unsigned long long i = 0; i < anchors; i++) {
        anchor[i] = malloc(ANCHOR_SIZE);
        if (!anchor[i])
            die("malloc");
        memset(anchor[i], 0xa5, ANCHOR_SIZE);
    }
    pthread_barrier_wait(&start);

    unsigned long long produced = 0, consumed = 0, cross = 0;
    char *hand = NULL;
    while (produced < iters || consumed < iters) {
        int progress = 0;
        if (produced < iters) {
            if (!hand) {
                size_t sz = sizes[(produced + id) % NSIZES];
                hand = malloc(sz);
                if (!hand)
                    die("malloc");
                uintptr_t was = atomic_load_explicit(&last_free[slot_of(hand)],
                                                     memory_order_relaxed);
                if ((was & ~(uintptr_t)15) == (uintptr_t)hand && (was & 15) != id)
                    cross++;
                /* Sender id and size, checked by the receiver. */
                hand[0] = (char)id;
                memcpy(hand + 8, &sz, sizeof sz);
            }
            if (push(out, hand)) {
                hand = NULL;
                produced++;
                progress = 1;
            }
        }
        char *p = pop(in);
        if (p) {
            size_t sz;
            memcpy(&sz, p + 8, sizeof sz);
            if ((uintptr_t)(unsigned char)p[0] != (id + nthreads - 1) % nthreads || sz > MAX_SIZE)
                die("corrupt hand-off");
            atomic_store_explicit(&last_free[slot_of(p)], (uintptr_t)p | id,
                                  memory_order_relaxed);
            free(p);
            consumed++;
            progress = 1;
        }
        if (!progress)
            sched_yield();
    }
    atomic_fetch_add(&cross_reuse, cross);
    for (unsigned long long i = 0; i < leaks; i++) {
        char *l = malloc(LEAK_SIZE);
        if (!l)
            die("malloc");
        l[LEAK_SIZE - 1] = 1;
        sink(l);
    }
    for (unsigned long long i = 0; i < anchors; i++)
        free(anchor[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    nthreads = arg_u64(argc, argv, 1, 4);
    iters = arg_u64(argc, argv, 2, 250000);
    leaks = arg_u64(argc, argv, 3, 3);
    anchors = arg_u64(argc, argv, 4, 16);
    if (nthreads < 1 || nthreads > MAX_T || anchors > 256)
        die("bad arguments");
    /* One arena for every thread: freed chunks are reused across threads. */
    mallopt(M_ARENA_MAX, 1);
    pthread_barrier_init(&start, NULL, (unsigned)nthreads);
    pthread_t tids[MAX_T];
    for (uintptr_t i = 0; i < nthreads; i++)
        if (pthread_create(&tids[i], NULL, worker, (void *)i))
            die("pthread_create");
    for (unsigned long long i = 0; i < nthreads; i++)
        pthread_join(tids[i], NULL);
    put_kv("anchor_bytes", nthreads * anchors * ANCHOR_SIZE);
    put_kv("inflight_max_bytes", nthreads * (Q + 2) * (unsigned long long)MAX_SIZE);
    put_kv("leak_size", LEAK_SIZE);
    put_kv("cross_thread_reuse", atomic_load(&cross_reuse));
    return 0;
}
