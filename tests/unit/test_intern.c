/* SPDX-License-Identifier: MIT
 *
 * test_intern.c - the lock-free intern table (src/capture/intern.c): ids
 * dense 1..N in insertion order, every key distinct by every word, emit
 * called once per new key with its id and before the id is visible,
 * growth across many doublings keeping every id, generations at a cap
 * (ids kept while a key is in one of two, a new one after), a failed emit inserting
 * nothing, and concurrent inserts of overlapping keys from several threads
 * (with lock-free readers beside them) giving each key exactly one id,
 * and trie-shaped keys (trk_intern_add_child) getting the ids trk_intern_add
 * gives them.
 * scripts/test.sh also runs it under ThreadSanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "capture/intern.h"

/* What emit saw, by id: written under the table's lock, before the id is
 * published, so a reader that found the id may read it (intern.c, 2.). */
#define MAXID 40000
static uint32_t emitted_k32[MAXID + 1];
static uint64_t emitted_k[MAXID + 1][TRK_INTERN_WORDS];
static unsigned emits[MAXID + 1];
static unsigned emit_fail_at; /* an id whose emit fails, 0: none */

struct emit_ctx {
    uint32_t k32;
    const uint64_t *k;
    unsigned words;
};

static int emit(void *ctx, uint32_t id)
{
    struct emit_ctx *c = ctx;
    if (id == emit_fail_at)
        return -1;
    assert_true(id >= 1 && id <= MAXID);
    emits[id]++;
    emitted_k32[id] = c->k32;
    memcpy(emitted_k[id], c->k, c->words * sizeof(uint64_t));
    return 0;
}

static int setup(void **state)
{
    (void)state;
    memset(emits, 0, sizeof(emits));
    emit_fail_at = 0;
    return 0;
}

static uint32_t get3(struct trk_intern *in, uint32_t k32, uint64_t a, uint64_t b, uint64_t c)
{
    const uint64_t k[3] = {a, b, c};
    struct emit_ctx e = {k32, k, 3};
    return trk_intern_get(in, 3, k32, k, emit, &e);
}

static uint32_t find3(struct trk_intern *in, uint32_t k32, uint64_t a, uint64_t b, uint64_t c)
{
    const uint64_t k[3] = {a, b, c};
    return trk_intern_find(in, 3, k32, k);
}

/* 8 slots to start, 20000 keys: 12 doublings. Keys differ in one word
 * each (k32, or one of the three), so a compare that skipped a word would
 * merge two of them. */
static void test_dense_ids_across_growth(void **state)
{
    (void)state;
    static struct trk_intern in;
    assert_int_equal(trk_intern_reset(&in, 3, 8), 0);
    assert_int_equal(find3(&in, 0, 1, 2, 3), 0);
    const uint32_t n = 20000;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = i % 4, v = i / 4 + 1;
        uint32_t id = get3(&in, w == 0 ? v : 0, w == 1 ? v : 0, w == 2 ? v : 0, w == 3 ? v : 0);
        assert_int_equal(id, i + 1);
        assert_int_equal(emits[id], 1);
    }
    assert_true(atomic_load(&in.tab)->mask + 1 >= 2 * (uint64_t)n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = i % 4, v = i / 4 + 1;
        uint32_t k32 = w == 0 ? v : 0;
        uint64_t a = w == 1 ? v : 0, b = w == 2 ? v : 0, c = w == 3 ? v : 0;
        assert_int_equal(find3(&in, k32, a, b, c), i + 1);
        assert_int_equal(get3(&in, k32, a, b, c), i + 1); /* no new id, no emit */
        assert_int_equal(emits[i + 1], 1);
        assert_int_equal(emitted_k32[i + 1], k32);
        assert_true(emitted_k[i + 1][0] == a && emitted_k[i + 1][1] == b &&
                    emitted_k[i + 1][2] == c);
    }
    assert_int_equal(find3(&in, 0, 0, 0, 0), 0);
    assert_int_equal(emits[n + 1], 0);
}

/* A cap of 64 slots (32 keys a generation), 1000 keys: the table never
 * grows past the cap; a key still in the current or the previous
 * generation keeps its id without a new emit; a key forgotten by both is
 * emitted again under the next id, once; ids stay dense. */
static void test_generations_at_the_cap(void **state)
{
    (void)state;
    static struct trk_intern in;
    assert_int_equal(trk_intern_reset(&in, 3, 8), 0);
    in.max_slots = 64;
    const uint32_t n = 1000;
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(get3(&in, 0, i + 1, 7, 7), i + 1);
    assert_int_equal(atomic_load(&in.tab)->mask + 1, 64);
    assert_non_null(in.prev);
    /* The newest 32 keys are in one of the two generations. */
    for (uint32_t i = n - 32; i < n; i++) {
        assert_int_equal(get3(&in, 0, i + 1, 7, 7), i + 1);
        assert_int_equal(emits[i + 1], 1);
    }
    /* The first key is in neither: a second record, the next id. */
    assert_int_equal(get3(&in, 0, 1, 7, 7), n + 1);
    assert_int_equal(emits[n + 1], 1);
    assert_int_equal(emitted_k[n + 1][0], 1);
    assert_int_equal(get3(&in, 0, 1, 7, 7), n + 1);
    assert_int_equal(emits[n + 1], 1);
    assert_int_equal(atomic_load(&in.tab)->mask + 1, 64);
    in.max_slots = 0;
}

/* A failed emit inserts nothing and uses up no id; reset starts over. */
static void test_failed_emit_and_reset(void **state)
{
    (void)state;
    static struct trk_intern in;
    assert_int_equal(trk_intern_reset(&in, 3, 4), 0);
    assert_int_equal(get3(&in, 0, 10, 0, 0), 1);
    emit_fail_at = 2;
    assert_int_equal(get3(&in, 0, 20, 0, 0), 0);
    assert_int_equal(find3(&in, 0, 20, 0, 0), 0);
    emit_fail_at = 0;
    assert_int_equal(get3(&in, 0, 30, 0, 0), 2);
    assert_int_equal(get3(&in, 0, 20, 0, 0), 3);
    assert_int_equal(trk_intern_reset(&in, 3, 4), 0);
    assert_int_equal(find3(&in, 0, 10, 0, 0), 0);
    assert_int_equal(get3(&in, 0, 30, 0, 0), 1);
}

/* The trie's shape: one 64-bit word beside the 32-bit one. */
#define NKEYS    12000
#define NTHREADS 4
static struct trk_intern shared;
static uint32_t got[NTHREADS][NKEYS];
static _Atomic int go, writers_done;
static _Atomic unsigned reader_hits;

static uint32_t key32(uint32_t i)
{
    return i % 97;
}

static uint64_t key64(uint32_t i)
{
    return 0x7f0000000000ULL + (uint64_t)(i / 97) * 16;
}

static uint32_t get1(uint32_t i)
{
    uint64_t k = key64(i);
    struct emit_ctx e = {key32(i), &k, 1};
    return trk_intern_get(&shared, 1, key32(i), &k, emit, &e);
}

/* Each writer walks all keys from its own start, stride and direction, so
 * every key is raced for by several writers in a different order. */
static void *writer(void *arg)
{
    uint32_t w = (uint32_t)(uintptr_t)arg;
    while (!atomic_load(&go))
        ;
    for (uint32_t j = 0; j < NKEYS; j++) {
        uint32_t i = (w * 3001 + (w & 1 ? NKEYS - j : j) * 7) % NKEYS;
        uint32_t id = get1(i);
        if (id == 0 || id > NKEYS)
            return (void *)1;
        got[w][i] = id;
        /* 0 is allowed: another writer may have grown the table and given
         * back the pages of the one this lookup read (intern.h). */
        uint64_t k = key64(i);
        uint32_t found = trk_intern_find(&shared, 1, key32(i), &k);
        if (found != id && found != 0)
            return (void *)2;
    }
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

/* A lock-free reader beside the writers: any id it finds must be the one
 * emitted for exactly that key. */
static void *reader(void *arg)
{
    (void)arg;
    while (!atomic_load(&go))
        ;
    uint32_t i = 0;
    while (atomic_load(&writers_done) < NTHREADS) {
        uint64_t k = key64(i);
        uint32_t id = trk_intern_find(&shared, 1, key32(i), &k);
        if (id) {
            if (id > NKEYS || emitted_k32[id] != key32(i) || emitted_k[id][0] != k)
                return (void *)3;
            atomic_fetch_add(&reader_hits, 1);
        }
        i = (i + 1) % NKEYS;
    }
    return NULL;
}

static void test_concurrent_one_id_per_key(void **state)
{
    (void)state;
    assert_int_equal(trk_intern_reset(&shared, 1, 4), 0);
    pthread_t th[NTHREADS + 1];
    for (uintptr_t w = 0; w < NTHREADS; w++)
        assert_int_equal(pthread_create(&th[w], NULL, writer, (void *)w), 0);
    assert_int_equal(pthread_create(&th[NTHREADS], NULL, reader, NULL), 0);
    atomic_store(&go, 1);
    for (int w = 0; w <= NTHREADS; w++) {
        void *rc;
        assert_int_equal(pthread_join(th[w], &rc), 0);
        assert_ptr_equal(rc, NULL);
    }
    static unsigned seen[NKEYS + 1];
    for (uint32_t i = 0; i < NKEYS; i++) {
        for (int w = 1; w < NTHREADS; w++)
            assert_int_equal(got[w][i], got[0][i]);
        uint32_t id = got[0][i];
        assert_int_equal(seen[id]++, 0); /* no two keys share an id */
        assert_int_equal(emits[id], 1);
        assert_int_equal(emitted_k32[id], key32(i));
        assert_true(emitted_k[id][0] == key64(i));
    }
    /* NKEYS distinct ids in 1..NKEYS: exactly 1..NKEYS, dense. */
    assert_int_equal(emits[NKEYS + 1], 0);
    assert_true(atomic_load(&shared.tab)->mask + 1 >= 2 * (uint64_t)NKEYS);
}

/* The same race with a cap of 64 slots: generations start all the time
 * while lock-free readers probe tables whose pages are being given back.
 * Keys may get several ids now, but every id any thread gets or finds is
 * one emitted for exactly its key. */
#define GKEYS 2000
static _Atomic int ggo, gdone;

static void *gen_writer(void *arg)
{
    uint32_t w = (uint32_t)(uintptr_t)arg;
    while (!atomic_load(&ggo))
        ;
    for (uint32_t j = 0; j < GKEYS; j++) {
        uint32_t i = (w * 701 + (w & 1 ? GKEYS - j : j) * 7) % GKEYS;
        uint32_t id = get1(i);
        if (id == 0 || id > MAXID || emitted_k32[id] != key32(i) || emitted_k[id][0] != key64(i))
            return (void *)1;
    }
    atomic_fetch_add(&gdone, 1);
    return NULL;
}

static void *gen_reader(void *arg)
{
    (void)arg;
    while (!atomic_load(&ggo))
        ;
    for (uint32_t i = 0; atomic_load(&gdone) < NTHREADS; i = (i + 1) % GKEYS) {
        uint64_t k = key64(i);
        uint32_t id = trk_intern_find(&shared, 1, key32(i), &k);
        if (id && (id > MAXID || emitted_k32[id] != key32(i) || emitted_k[id][0] != k))
            return (void *)3;
    }
    return NULL;
}

static void test_concurrent_generations(void **state)
{
    (void)state;
    assert_int_equal(trk_intern_reset(&shared, 1, 4), 0);
    shared.max_slots = 64;
    pthread_t th[NTHREADS + 1];
    for (uintptr_t w = 0; w < NTHREADS; w++)
        assert_int_equal(pthread_create(&th[w], NULL, gen_writer, (void *)w), 0);
    assert_int_equal(pthread_create(&th[NTHREADS], NULL, gen_reader, NULL), 0);
    atomic_store(&ggo, 1);
    for (int w = 0; w <= NTHREADS; w++) {
        void *rc;
        assert_int_equal(pthread_join(th[w], &rc), 0);
        assert_ptr_equal(rc, NULL);
    }
    assert_int_equal(atomic_load(&shared.tab)->mask + 1, 64);
    for (uint32_t id = 1; id <= MAXID; id++)
        assert_true(emits[id] <= 1); /* each id emitted once */
    shared.max_slots = 0;
}

/* A trie-shaped workload (k32 a parent id of the same table) through
 * trk_intern_add_child, which skips the previous generation for parents
 * newer than it, against the same through trk_intern_add, which always
 * probes it: the same ids and the same number of emits, key by key, with
 * a cap of 64 slots so that generations turn over many times. A skip for
 * a parent that is in the previous generation would give its child a
 * second id here. */
static uint32_t trie_step(struct trk_intern *in, int child, uint32_t parent, uint64_t ip)
{
    struct emit_ctx e = {parent, &ip, 1};
    uint32_t id = trk_intern_find(in, 1, parent, &ip);
    if (id)
        return id;
    return child ? trk_intern_add_child(in, parent, &ip, emit, &e)
                 : trk_intern_add(in, parent, &ip, emit, &e);
}

static void test_child_keys_same_ids(void **state)
{
    (void)state;
    static struct trk_intern a, b;
    static uint32_t ida[6000], idb[6000];
    for (int child = 0; child < 2; child++) {
        struct trk_intern *in = child ? &b : &a;
        uint32_t *ids = child ? idb : ida;
        assert_int_equal(trk_intern_reset(in, 1, 8), 0);
        in->max_slots = 64;
        unsigned seed = 7, k = 0;
        for (int s = 0; s < 1000; s++) {
            /* 6 levels a stack; outer ones from a few values, so that old
             * parents recur after generations turned over */
            uint32_t node = 0;
            for (int d = 0; d < 6; d++) {
                uint64_t ip = 0x1000 + (uint64_t)(rand_r(&seed) % (d < 2 ? 3u : 40u));
                node = trie_step(in, child, node, ip);
                assert_int_not_equal(node, 0);
                ids[k++] = node;
            }
        }
    }
    assert_memory_equal(ida, idb, sizeof(ida));
    assert_true(a.next_id > 64); /* generations did turn over */
    assert_int_equal(a.next_id, b.next_id);
    a.max_slots = b.max_slots = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_dense_ids_across_growth, setup),
        cmocka_unit_test_setup(test_generations_at_the_cap, setup),
        cmocka_unit_test_setup(test_failed_emit_and_reset, setup),
        cmocka_unit_test_setup(test_concurrent_one_id_per_key, setup),
        cmocka_unit_test_setup(test_concurrent_generations, setup),
        cmocka_unit_test_setup(test_child_keys_same_ids, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
