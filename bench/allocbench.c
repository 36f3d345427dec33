/*
 * allocbench: a malloc/free storm used to measure the overhead of allocation
 * trackers (ours, heaptrack) against an untraced run.
 *
 * Each thread owns a ring of 1024 live blocks. In 'ring' mode every iteration
 * frees a random slot and allocates a new block of 16..4096 bytes (mean ~2 KiB)
 * into it; in 'temp' mode it allocates, touches and frees at once. Every 8th
 * allocation is a calloc and every 16th a realloc. Allocations are made through
 * one of four call paths of depth 3/6/9/12 (plus worker and main), so a tracker
 * has to unwind stacks of 8..18 frames, like a real program would make it.
 *
 * Output (stdout, one line): loop_s=<seconds> events=<n>
 *   loop_s  time of the measured loop only (monotonic clock; startup, the ring
 *           prefill and teardown, and any tracker start/stop are excluded);
 *   events  allocations + frees this program made itself, over its whole run
 *           (a realloc counts as one free plus one allocation), so that
 *           capture size / events is a fair bytes-per-event figure.
 * and on stderr: allocbench: maxrss_kb=<k>, this process's own peak RSS
 * (getrusage), which includes an in-process tracker's memory but not that of
 * helper processes (tracker CLI, heaptrack_interpret).
 *
 * Usage: allocbench [--threads N] [--pairs N] [--mode ring|temp] [--seed S]
 *   --pairs is per thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define RING_SLOTS 1024u
#define MIN_SIZE   16u
#define MAX_SIZE   4096u

/* The call paths must survive the optimiser: no inlining, no cloning, no
 * interprocedural shortcuts, otherwise the frames a tracker unwinds through
 * would silently disappear and the benchmark would get cheaper. */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define NOINLINE __attribute__((noipa))
#endif
#endif
#ifndef NOINLINE
#define NOINLINE __attribute__((noinline))
#endif

enum kind { K_MALLOC, K_CALLOC, K_REALLOC };
enum mode { M_RING, M_TEMP };

/* One allocation request, passed down the call path to the leaf. */
struct req {
    enum kind kind;
    size_t size;
    void *old; /* block to realloc (K_REALLOC only) */
};

/* The leaf: the only place that calls the allocator. The result is stored
 * through a volatile local before returning, so the allocator call is not a
 * tail call and this frame is on the stack when the tracker unwinds. */
NOINLINE static void *leaf(const struct req *r)
{
    void *volatile p;
    switch (r->kind) {
    case K_CALLOC:
        p = calloc(1, r->size);
        break;
    case K_REALLOC:
        p = realloc(r->old, r->size);
        break;
    default:
        p = malloc(r->size);
        break;
    }
    return p;
}

/* A chain link: calls the next level, then reads the result back through a
 * volatile local (again: no tail call, so every link keeps its frame). Each
 * link is a distinct function, so each path has distinct return addresses. */
#define LINK(name, next)                                                                           \
    NOINLINE static void *name(const struct req *r)                                                \
    {                                                                                              \
        void *volatile p = next(r);                                                                \
        return p;                                                                                  \
    }

/* Path A: 3 frames (a2, a1, leaf). */
LINK(a2, leaf)
LINK(a1, a2)
/* Path B: 6 frames. */
LINK(b5, leaf)
LINK(b4, b5)
LINK(b3, b4)
LINK(b2, b3)
LINK(b1, b2)
/* Path C: 9 frames. */
LINK(c8, leaf)
LINK(c7, c8)
LINK(c6, c7)
LINK(c5, c6)
LINK(c4, c5)
LINK(c3, c4)
LINK(c2, c3)
LINK(c1, c2)
/* Path D: 12 frames. */
LINK(d11, leaf)
LINK(d10, d11)
LINK(d9, d10)
LINK(d8, d9)
LINK(d7, d8)
LINK(d6, d7)
LINK(d5, d6)
LINK(d4, d5)
LINK(d3, d4)
LINK(d2, d3)
LINK(d1, d2)

typedef void *(*path_fn)(const struct req *);
static path_fn const paths[4] = {a1, b1, c1, d1};

/* Per-thread state, padded so two threads never share a cache line (false
 * sharing would add noise that has nothing to do with the tracker). */
struct worker {
    _Alignas(64) pthread_t tid;
    unsigned idx;
    uint64_t rng;
    uint64_t events;
    void *ring[RING_SLOTS];
    char pad[64];
};

static enum mode g_mode = M_RING;
static uint64_t g_pairs = 5000000;
static pthread_barrier_t g_start;
static double g_t0; /* loop start, taken by worker 0 right after the barrier */

/* xorshift64*: cheap and good enough; the point is that slot, size and path
 * are not predictable by the allocator or the branch predictor. */
static inline uint64_t next_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static void die_oom(size_t size)
{
    fprintf(stderr, "allocbench: out of memory (%zu bytes)\n", size);
    exit(1);
}

/* Write the first and last byte: the block is used, as a real program would,
 * without turning the benchmark into a memset benchmark. */
static inline void touch(void *p, size_t size, uint64_t v)
{
    unsigned char *c = p;
    c[0] = (unsigned char)v;
    c[size - 1] = (unsigned char)(v >> 8);
}

/* Allocation kind for iteration i: realloc on every 16th, calloc on every 8th
 * (offset so that the two never coincide). */
static inline enum kind kind_of(uint64_t i)
{
    if ((i & 15) == 15)
        return K_REALLOC;
    if ((i & 7) == 3)
        return K_CALLOC;
    return K_MALLOC;
}

NOINLINE static void loop_ring(struct worker *w)
{
    for (uint64_t i = 0; i < g_pairs; i++) {
        uint64_t r = next_rand(&w->rng);
        unsigned slot = (unsigned)(r % RING_SLOTS);
        struct req q = {
            .kind = kind_of(i),
            .size = MIN_SIZE + (size_t)((r >> 16) % (MAX_SIZE - MIN_SIZE + 1)),
            .old = NULL,
        };
        if (q.kind == K_REALLOC) {
            /* realloc replaces the free+malloc pair: one free, one alloc. */
            q.old = w->ring[slot];
        } else {
            free(w->ring[slot]);
        }
        void *p = paths[(r >> 40) & 3](&q);
        if (!p)
            die_oom(q.size);
        touch(p, q.size, r);
        w->ring[slot] = p;
        w->events += 2;
    }
}

NOINLINE static void loop_temp(struct worker *w)
{
    for (uint64_t i = 0; i < g_pairs; i++) {
        uint64_t r = next_rand(&w->rng);
        path_fn path = paths[(r >> 40) & 3];
        struct req q = {
            .kind = kind_of(i),
            .size = MIN_SIZE + (size_t)((r >> 16) % (MAX_SIZE - MIN_SIZE + 1)),
            .old = NULL,
        };
        if (q.kind == K_REALLOC) {
            /* A realloc needs a block to grow: allocate half the size
             * first (1 event), then realloc it (free + alloc). */
            struct req first = {K_MALLOC, q.size / 2, NULL};
            q.old = path(&first);
            if (!q.old)
                die_oom(first.size);
            w->events += 2;
        }
        void *p = path(&q);
        if (!p)
            die_oom(q.size);
        touch(p, q.size, r);
        free(p);
        w->events += 2;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The worker frame sits between the thread entry and the call paths. */
NOINLINE static void *worker(void *arg)
{
    struct worker *w = arg;

    /* Prefill the ring outside the timed loop so the loop runs at a steady
     * live-set size from its first iteration. */
    if (g_mode == M_RING) {
        for (unsigned s = 0; s < RING_SLOTS; s++) {
            uint64_t r = next_rand(&w->rng);
            struct req q = {K_MALLOC, MIN_SIZE + (size_t)((r >> 16) % (MAX_SIZE - MIN_SIZE + 1)),
                            NULL};
            w->ring[s] = paths[(r >> 40) & 3](&q);
            if (!w->ring[s])
                die_oom(q.size);
            w->events++;
        }
    }

    pthread_barrier_wait(&g_start);
    if (w->idx == 0)
        g_t0 = now_s();
    if (g_mode == M_RING)
        loop_ring(w);
    else
        loop_temp(w);
    /* Keep this frame alive until the loop returns: a tail call here would
     * drop 'worker' from every stack. */
    __asm__ volatile("" ::: "memory");
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: allocbench [--threads N] [--pairs N] [--mode ring|temp] [--seed S]\n");
    exit(2);
}

static uint64_t parse_u64(const char *s, const char *opt)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-') {
        fprintf(stderr, "allocbench: bad value for %s: %s\n", opt, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    unsigned threads = 1;
    uint64_t seed = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--threads"))
            threads = (unsigned)parse_u64(v, a);
        else if (!strcmp(a, "--pairs"))
            g_pairs = parse_u64(v, a);
        else if (!strcmp(a, "--seed"))
            seed = parse_u64(v, a);
        else if (!strcmp(a, "--mode")) {
            if (!strcmp(v, "ring"))
                g_mode = M_RING;
            else if (!strcmp(v, "temp"))
                g_mode = M_TEMP;
            else
                usage();
        } else
            usage();
    }
    if (threads < 1 || threads > 256)
        usage();

    /* Worker state is heap-allocated like everything else (and counted). */
    struct worker *ws = aligned_alloc(64, sizeof(*ws) * threads);
    if (!ws)
        die_oom(sizeof(*ws) * threads);
    memset(ws, 0, sizeof(*ws) * threads);
    uint64_t extra_events = 1; /* ws itself */

    /* Worker 0 runs on the main thread, so a 1-thread run has the usual
     * main-thread stack (worker, main, libc start-up frames) under each path;
     * the others are extra pthreads. All are released together by the
     * barrier; timing runs from that release until the last one finishes. */
    pthread_barrier_init(&g_start, NULL, threads);
    for (unsigned t = 0; t < threads; t++) {
        ws[t].idx = t;
        /* Distinct, never-zero stream per thread (xorshift must not be 0). */
        ws[t].rng = (seed + 1) * 0x9E3779B97F4A7C15ULL + t * 0xD1B54A32D192ED03ULL;
        if (!ws[t].rng)
            ws[t].rng = 1;
    }
    for (unsigned t = 1; t < threads; t++) {
        int err = pthread_create(&ws[t].tid, NULL, worker, &ws[t]);
        if (err) {
            fprintf(stderr, "allocbench: pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    worker(&ws[0]);
    for (unsigned t = 1; t < threads; t++)
        pthread_join(ws[t].tid, NULL);
    double t1 = now_s();
    double t0 = g_t0;

    uint64_t events = extra_events;
    for (unsigned t = 0; t < threads; t++) {
        if (g_mode == M_RING) {
            for (unsigned s = 0; s < RING_SLOTS; s++)
                free(ws[t].ring[s]);
            ws[t].events += RING_SLOTS;
        }
        events += ws[t].events;
    }
    pthread_barrier_destroy(&g_start);
    free(ws);
    events++;

    printf("loop_s=%.6f events=%" PRIu64 "\n", t1 - t0, events);
    fflush(stdout);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        fprintf(stderr, "allocbench: maxrss_kb=%ld\n", ru.ru_maxrss);
    return 0;
}
