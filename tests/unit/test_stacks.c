/* SPDX-License-Identifier: MIT
 *
 * test_stacks.c - the in-process stack interner (src/capture/stacks.c):
 * repeated stacks cost nothing, new ones cost exactly their new edges, ids
 * rebuild the original frames, concurrent interning defines every edge
 * exactly once, table growth keeps every id, and libunwind capture sees the
 * caller's real frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "capture/capture.h"

#define RING (8u << 20)

static struct trk_thread *mk_thread(void)
{
    size_t head = (sizeof(struct trk_thread) + 4095) & ~(size_t)4095;
    uint8_t *mem = trk_sys_mmap(head + RING);
    assert_non_null(mem);
    struct trk_thread *t = (struct trk_thread *)mem;
    t->ring = mem + head;
    t->ring_mask = RING - 1;
    atomic_store(&t->floor, UINT64_MAX);
    return t;
}

/* Decoded STACK definitions of one or more rings, indexed by node id. */
struct nodes {
    uint64_t *parent, *ip;
    uint32_t *defs; /* how many times each id was defined */
    size_t cap;
};

static void nodes_init(struct nodes *n, size_t cap)
{
    n->parent = calloc(cap, sizeof(uint64_t));
    n->ip = calloc(cap, sizeof(uint64_t));
    n->defs = calloc(cap, sizeof(uint32_t));
    n->cap = cap;
}

static void nodes_free(struct nodes *n)
{
    free(n->parent);
    free(n->ip);
    free(n->defs);
}

/* Returns the number of STACK records in t's ring. */
static size_t decode_ring(struct trk_thread *t, struct nodes *n)
{
    const uint8_t *p = t->ring, *end = t->ring + t->head;
    struct trk_rec_state st = {0};
    struct trk_rec r;
    size_t count = 0;
    while (p < end) {
        assert_int_equal(trk_rec_decode(&p, end, &st, &r), 0);
        if (r.rclass != TRK_RC_STACK)
            continue;
        assert_true(r.id < n->cap);
        n->parent[r.id] = r.parent;
        n->ip[r.id] = r.ip;
        n->defs[r.id]++;
        count++;
    }
    return count;
}

static int rebuild(const struct nodes *n, uint32_t id, uintptr_t *out, int max)
{
    int d = 0;
    while (id && d < max) {
        assert_true(n->defs[id] == 1);
        out[d++] = n->ip[id];
        id = (uint32_t)n->parent[id];
    }
    return d;
}

static int setup(void **state)
{
    (void)state;
    trk_cfg.depth = TRK_DEPTH_DEFAULT;
    assert_int_equal(trk_stacks_init(), 0);
    return 0;
}

static void test_repeat_costs_nothing(void **state)
{
    (void)state;
    struct trk_thread *t = mk_thread();
    uintptr_t a[] = {0x4030, 0x4020, 0x4010}; /* innermost first */
    uintptr_t b[] = {0x4040, 0x4020, 0x4010};
    uint32_t ia = trk_stack_intern(t, a, 3);
    uint64_t after_a = t->head;
    assert_int_not_equal(ia, 0);
    assert_int_equal(trk_stack_intern(t, a, 3), ia);
    assert_int_equal(t->head, after_a); /* cached: no bytes written */
    uint32_t ib = trk_stack_intern(t, b, 3);
    assert_int_not_equal(ib, ia);

    struct nodes n;
    nodes_init(&n, 64);
    assert_int_equal(decode_ring(t, &n), 4); /* 3 edges for a, 1 new for b */
    uintptr_t out[8];
    assert_int_equal(rebuild(&n, ia, out, 8), 3);
    assert_memory_equal(out, a, sizeof(a));
    assert_int_equal(rebuild(&n, ib, out, 8), 3);
    assert_memory_equal(out, b, sizeof(b));
    /* b shares a's two outer nodes */
    assert_int_equal(n.parent[ib], n.parent[ia]);
    assert_int_equal(trk_stack_intern(t, a, 0), 0);
    nodes_free(&n);
}

/* A stack whose cache slot was taken by another keeps its id through the
 * shared trie, without redefining any node. */
static void test_cache_eviction_keeps_ids(void **state)
{
    (void)state;
    struct trk_thread *t = mk_thread();
    enum { N = 3 * TRK_STACK_CACHE };
    static uint32_t ids[N];
    uintptr_t s[4];
    for (int i = 0; i < N; i++) {
        s[0] = 0x10000 + (uintptr_t)i, s[1] = 0x500, s[2] = 0x400, s[3] = 0x300;
        ids[i] = trk_stack_intern(t, s, 4);
    }
    uint64_t head = t->head;
    for (int i = 0; i < N; i++) {
        s[0] = 0x10000 + (uintptr_t)i, s[1] = 0x500, s[2] = 0x400, s[3] = 0x300;
        assert_int_equal(trk_stack_intern(t, s, 4), ids[i]);
    }
    assert_int_equal(t->head, head);
    struct nodes n;
    nodes_init(&n, N + 64);
    assert_int_equal(decode_ring(t, &n), N + 3);
    nodes_free(&n);
}

#define POOL 500
#define THREADS 4
#define ROUNDS 4000

static uintptr_t pool[POOL][40];
static int pool_depth[POOL];
static struct trk_thread *workers[THREADS];
static uint32_t got[THREADS][ROUNDS];
static int which[THREADS][ROUNDS];

static void *intern_worker(void *arg)
{
    int w = (int)(intptr_t)arg;
    unsigned seed = (unsigned)w * 7919u + 1;
    for (int r = 0; r < ROUNDS; r++) {
        int k = rand_r(&seed) % POOL;
        which[w][r] = k;
        got[w][r] = trk_stack_intern(workers[w], pool[k], pool_depth[k]);
    }
    return NULL;
}

static void test_concurrent_defines_each_edge_once(void **state)
{
    (void)state;
    assert_int_equal(trk_stacks_init(), 0);
    unsigned seed = 42;
    for (int k = 0; k < POOL; k++) {
        pool_depth[k] = 1 + rand_r(&seed) % 40;
        for (int d = 0; d < pool_depth[k]; d++) /* few distinct outer frames: shared prefixes */
            pool[k][d] = 0x1000 + (uintptr_t)(rand_r(&seed) % (d < pool_depth[k] - 3 ? 64 : 4));
    }
    pthread_t th[THREADS];
    for (int w = 0; w < THREADS; w++) {
        workers[w] = mk_thread();
        pthread_create(&th[w], NULL, intern_worker, (void *)(intptr_t)w);
    }
    for (int w = 0; w < THREADS; w++)
        pthread_join(th[w], NULL);

    struct nodes n;
    nodes_init(&n, 1u << 20);
    size_t defs = 0;
    for (int w = 0; w < THREADS; w++)
        defs += decode_ring(workers[w], &n);
    for (size_t id = 1; id <= defs; id++)
        assert_int_equal(n.defs[id], 1); /* ids dense, each defined once */
    for (int w = 0; w < THREADS; w++) {
        for (int r = 0; r < ROUNDS; r++) {
            uintptr_t out[64];
            int k = which[w][r];
            assert_int_not_equal(got[w][r], 0);
            assert_int_equal(rebuild(&n, got[w][r], out, 64), pool_depth[k]);
            assert_memory_equal(out, pool[k], sizeof(uintptr_t) * (size_t)pool_depth[k]);
        }
    }
    nodes_free(&n);
}

static void test_growth_keeps_every_id(void **state)
{
    (void)state;
    assert_int_equal(trk_stacks_init(), 0);
    struct trk_thread *t = mk_thread();
    enum { N = 150000 }; /* initial table holds 32k edges before growing */
    uint32_t *ids = malloc(N * sizeof(uint32_t));
    for (int i = 0; i < N; i++) {
        uintptr_t s[2] = {0x100000 + (uintptr_t)i * 16, 0x77};
        ids[i] = trk_stack_intern(t, s, 2);
        assert_int_not_equal(ids[i], 0);
    }
    memset(t->cache, 0, sizeof(t->cache)); /* force the trie path */
    for (int i = 0; i < N; i += 7) {
        uintptr_t s[2] = {0x100000 + (uintptr_t)i * 16, 0x77};
        assert_int_equal(trk_stack_intern(t, s, 2), ids[i]);
    }
    struct nodes n;
    nodes_init(&n, N + 16);
    assert_int_equal(decode_ring(t, &n), N + 1);
    uintptr_t out[4];
    assert_int_equal(rebuild(&n, ids[N - 1], out, 4), 2);
    assert_int_equal(out[0], 0x100000 + (uintptr_t)(N - 1) * 16);
    nodes_free(&n);
    free(ids);
}

/* A run of stacks that are all new turns the whole-stack cache off for a
 * while (stacks.c: fewer than 1 in 16 hits); stacks interned then still
 * get their ids from the trie, define no node twice, and stacks seen
 * before (in and out of that while) keep theirs. */
static void test_cache_bypass_keeps_ids(void **state)
{
    (void)state;
    assert_int_equal(trk_stacks_init(), 0);
    struct trk_thread *t = mk_thread();
    enum { N = 6000 };
    static uint32_t ids[N];
    uintptr_t s[5];
    for (int i = 0; i < N; i++) { /* all new: the bypass starts after 256 */
        s[0] = 0x20000 + (uintptr_t)i, s[1] = 0x9000 + (uintptr_t)(i % 7), s[2] = 0x600,
        s[3] = 0x500, s[4] = 0x400;
        ids[i] = trk_stack_intern(t, s, 5);
        assert_int_not_equal(ids[i], 0);
    }
    uint64_t head = t->head;
    for (int r = 0; r < 2; r++)
        for (int i = N; i-- > 0;) {
            s[0] = 0x20000 + (uintptr_t)i, s[1] = 0x9000 + (uintptr_t)(i % 7), s[2] = 0x600,
            s[3] = 0x500, s[4] = 0x400;
            assert_int_equal(trk_stack_intern(t, s, 5), ids[i]);
        }
    assert_int_equal(t->head, head); /* nothing defined again */
    struct nodes n;
    nodes_init(&n, 2 * N + 64);
    assert_int_equal(decode_ring(t, &n), N + 3 + 7);
    uintptr_t out[8];
    assert_int_equal(rebuild(&n, ids[N - 1], out, 8), 5);
    assert_int_equal(out[0], 0x20000 + N - 1);
    assert_int_equal(out[1], 0x9000 + (N - 1) % 7);
    nodes_free(&n);
}

/* New edges are encoded in the ring in place where a record fits before
 * its end, and through a copy that wraps where it does not: the records
 * read back whole across the wrap, each node with its parent and ip. */
static void test_edges_across_the_ring_end(void **state)
{
    (void)state;
    assert_int_equal(trk_stacks_init(), 0);
    struct trk_thread *t = mk_thread();
    uint64_t start = RING - 7; /* an empty ring, 7 bytes before its end */
    t->head = start;
    atomic_store(&t->consumed, start);
    atomic_store(&t->committed, start);
    uintptr_t s[12];
    for (int i = 0; i < 12; i++)
        s[i] = 0x7f1234560000 + (uintptr_t)i * 0x1111;
    uint32_t id = trk_stack_intern(t, s, 12);
    assert_int_not_equal(id, 0);
    assert_int_equal(atomic_load(&t->committed), t->head);
    size_t len = (size_t)(t->head - start);
    uint8_t *lin = malloc(len);
    for (size_t i = 0; i < len; i++)
        lin[i] = t->ring[(start + i) & t->ring_mask];
    const uint8_t *p = lin, *end = lin + len;
    struct trk_rec_state st = {0};
    struct trk_rec r;
    struct nodes n;
    nodes_init(&n, 64);
    size_t count = 0;
    while (p < end) {
        assert_int_equal(trk_rec_decode(&p, end, &st, &r), 0);
        assert_int_equal(r.rclass, TRK_RC_STACK);
        assert_true(r.id < n.cap);
        n.parent[r.id] = r.parent;
        n.ip[r.id] = r.ip;
        n.defs[r.id]++;
        count++;
    }
    assert_int_equal(count, 12);
    uintptr_t out[16];
    assert_int_equal(rebuild(&n, id, out, 16), 12);
    assert_memory_equal(out, s, sizeof(s));
    nodes_free(&n);
    free(lin);
}

static struct trk_thread *unwind_thread;
static uint32_t unwind_id;
static void *ret_addr[3];

__attribute__((noinline)) static void level3(void)
{
    ret_addr[2] = __builtin_return_address(0);
    unwind_id = trk_stack(unwind_thread);
    __asm__ volatile("" ::: "memory"); /* keep the call a real call */
}

__attribute__((noinline)) static void level2(void)
{
    ret_addr[1] = __builtin_return_address(0);
    level3();
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void level1(void)
{
    ret_addr[0] = __builtin_return_address(0);
    level2();
    __asm__ volatile("" ::: "memory");
}

static void test_unwind_sees_callers(void **state)
{
    (void)state;
    assert_int_equal(trk_stacks_init(), 0);
    unwind_thread = mk_thread();
    trk_self_lo = trk_self_hi = 0; /* keep every frame: this binary is "us" */
    level1();
    assert_int_not_equal(unwind_id, 0);
    struct nodes n;
    nodes_init(&n, 4096);
    decode_ring(unwind_thread, &n);
    uintptr_t out[256];
    int d = rebuild(&n, unwind_id, out, 256);
    /* level3's caller chain: the return addresses into level2, level1 and
     * this test function appear, innermost first and in order. */
    int found = 0;
    for (int i = 0; i < d && found < 3; i++)
        if (out[i] == (uintptr_t)ret_addr[2 - found])
            found++;
    assert_int_equal(found, 3);
    nodes_free(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_repeat_costs_nothing, setup),
        cmocka_unit_test_setup(test_cache_eviction_keeps_ids, setup),
        cmocka_unit_test(test_concurrent_defines_each_edge_once),
        cmocka_unit_test(test_growth_keeps_every_id),
        cmocka_unit_test(test_cache_bypass_keeps_ids),
        cmocka_unit_test(test_edges_across_the_ring_end),
        cmocka_unit_test(test_unwind_sees_callers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
