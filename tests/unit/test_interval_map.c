/* SPDX-License-Identifier: MIT
 *
 * test_interval_map.c - src/analysis/interval_map.c against a naive model:
 * one cell per byte of a small address window, each naming the range that
 * holds it. Random inserts, removes and overlap queries must give the same
 * bytes removed per attribute, the same notifications (every piece taken,
 * with its attribute, tag and whether the range is gone; every split) and
 * the same number of ranges; a final remove of everything proves each
 * range's bounds and tag. Plus the named cases: a hole, front and back cuts,
 * a range spanning several, empty ranges, and growth of the node pool.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/interval_map.h"

/* Far from 0 so that 64-bit arithmetic, not small numbers, is exercised. */
#define BASE UINT64_C(0x7ffff0000000)
#define N    160 /* bytes in the model's window */

/* ---- The model ------------------------------------------------------------ */

struct range {
    unsigned attr;
    uint64_t tag;
};

struct model {
    int cell[N]; /* range id holding the byte, -1 = unmapped */
    struct range ranges[200000];
    int nranges;
};

static int model_new_range(struct model *m, unsigned attr, uint64_t tag)
{
    assert_true(m->nranges < (int)(sizeof(m->ranges) / sizeof(m->ranges[0])));
    m->ranges[m->nranges] = (struct range){attr, tag};
    return m->nranges++;
}

static unsigned model_count(const struct model *m)
{
    unsigned n = 0;
    for (int i = 0; i < N; i++)
        if (m->cell[i] >= 0 && (i == 0 || m->cell[i - 1] != m->cell[i]))
            n++;
    return n;
}

/* ---- Notifications, recorded ---------------------------------------------- */

struct take {
    unsigned attr;
    uint64_t tag, bytes;
    int whole;
};

struct sink_log {
    struct take takes[N + 4];
    int ntakes;
    int splits;
};

static void on_take(void *ctx, unsigned attr, uint64_t tag, uint64_t bytes, int whole)
{
    struct sink_log *l = ctx;
    assert_true(l->ntakes < N + 4);
    l->takes[l->ntakes++] = (struct take){attr, tag, bytes, whole};
}

static void on_split(void *ctx, unsigned attr, uint64_t tag)
{
    (void)attr;
    (void)tag;
    ((struct sink_log *)ctx)->splits++;
}

static int take_cmp(const void *a, const void *b)
{
    const struct take *x = a, *y = b;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
    if (x->attr != y->attr)
        return x->attr < y->attr ? -1 : 1;
    return x->whole - y->whole;
}

/* Removes [s, e) from the model, writing the notifications the map must give
 * into want (sorted) and returning how many splits it must report. */
static int model_remove(struct model *m, int s, int e, uint64_t removed[TRK_ATTR_COUNT],
                        struct sink_log *want)
{
    want->ntakes = 0;
    int splits = 0;
    for (int i = s; i < e;) {
        int id = m->cell[i];
        if (id < 0) {
            i++;
            continue;
        }
        int j = i;
        while (j < e && m->cell[j] == id)
            j++;
        bool before = i > 0 && m->cell[i - 1] == id;
        bool after = j < N && m->cell[j] == id;
        for (int k = i; k < j; k++)
            m->cell[k] = -1;
        if (before && after) { /* a hole: the part after becomes its own range */
            int nid = model_new_range(m, m->ranges[id].attr, m->ranges[id].tag);
            for (int k = j; k < N && m->cell[k] == id; k++)
                m->cell[k] = nid;
            splits++;
        }
        removed[m->ranges[id].attr] += (uint64_t)(j - i);
        want->takes[want->ntakes++] = (struct take){m->ranges[id].attr, m->ranges[id].tag,
                                                    (uint64_t)(j - i), !before && !after};
        i = j;
    }
    qsort(want->takes, (size_t)want->ntakes, sizeof(struct take), take_cmp);
    return splits;
}

/* ---- Checks ---------------------------------------------------------------- */

static void check_same(struct sink_log *got, struct sink_log *want, const uint64_t got_removed[],
                       const uint64_t want_removed[])
{
    for (int a = 0; a < TRK_ATTR_COUNT; a++)
        assert_int_equal(got_removed[a], want_removed[a]);
    qsort(got->takes, (size_t)got->ntakes, sizeof(struct take), take_cmp);
    assert_int_equal(got->ntakes, want->ntakes);
    for (int i = 0; i < want->ntakes; i++) {
        assert_int_equal(got->takes[i].attr, want->takes[i].attr);
        assert_int_equal(got->takes[i].tag, want->takes[i].tag);
        assert_int_equal(got->takes[i].bytes, want->takes[i].bytes);
        assert_int_equal(got->takes[i].whole, want->takes[i].whole);
    }
    assert_int_equal(got->splits, want->splits);
}

static void check_overlap(const struct trk_imap *map, const struct model *m, int s, int e)
{
    uint64_t got[TRK_ATTR_COUNT] = {0}, want[TRK_ATTR_COUNT] = {0};
    trk_imap_overlap(map, BASE + (uint64_t)s, BASE + (uint64_t)e, got);
    for (int i = s; i < e; i++)
        if (m->cell[i] >= 0)
            want[m->ranges[m->cell[i]].attr]++;
    for (int a = 0; a < TRK_ATTR_COUNT; a++)
        assert_int_equal(got[a], want[a]);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* One random run: ops operations, ranges up to maxlen bytes long. */
static void random_run(uint64_t seed, int ops, int maxlen)
{
    static struct model m;
    m.nranges = 0;
    for (int i = 0; i < N; i++)
        m.cell[i] = -1;
    struct trk_imap map;
    trk_imap_init(&map);
    struct sink_log got, want;
    struct trk_imap_sink sink = {on_take, on_split, &got};
    trk_imap_set_sink(&map, &sink);
    for (int op = 0; op < ops; op++) {
        int s = (int)(rnd(&seed) % N);
        int e = s + (int)(rnd(&seed) % (uint64_t)maxlen);
        if (e > N)
            e = N;
        uint64_t gr[TRK_ATTR_COUNT] = {0}, wr[TRK_ATTR_COUNT] = {0};
        memset(&got, 0, sizeof(got));
        uint64_t kind = rnd(&seed) % 8;
        if (kind < 4) {
            unsigned attr = (unsigned)(rnd(&seed) % TRK_ATTR_COUNT);
            uint64_t tag = (uint64_t)op << 8 | attr; /* unique per range */
            assert_int_equal(
                trk_imap_insert_tagged(&map, BASE + (uint64_t)s, BASE + (uint64_t)e, attr, tag, gr),
                0);
            want.splits = model_remove(&m, s, e, wr, &want);
            if (s < e) {
                int id = model_new_range(&m, attr, tag);
                for (int i = s; i < e; i++)
                    m.cell[i] = id;
            }
        } else if (kind < 7) {
            assert_int_equal(trk_imap_remove(&map, BASE + (uint64_t)s, BASE + (uint64_t)e, gr), 0);
            want.splits = model_remove(&m, s, e, wr, &want);
        } else {
            check_overlap(&map, &m, s, e);
            continue;
        }
        check_same(&got, &want, gr, wr);
        assert_int_equal(map.count, model_count(&m));
    }
    check_overlap(&map, &m, 0, N);
    for (int i = 0; i < N; i++)
        check_overlap(&map, &m, i, i + 1);
    /* Everything out: each surviving range reported whole, with its tag. */
    uint64_t gr[TRK_ATTR_COUNT] = {0}, wr[TRK_ATTR_COUNT] = {0};
    memset(&got, 0, sizeof(got));
    assert_int_equal(trk_imap_remove(&map, 0, UINT64_MAX, gr), 0);
    want.splits = model_remove(&m, 0, N, wr, &want);
    check_same(&got, &want, gr, wr);
    assert_int_equal(map.count, 0);
    trk_imap_free(&map);
}

/* ---- Tests ------------------------------------------------------------------ */

static void test_random_short_ranges(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++)
        random_run(seed * UINT64_C(0x9E3779B97F4A7C15), 4000, 12);
}

static void test_random_long_ranges(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++)
        random_run(seed * UINT64_C(0xD1B54A32D192ED03), 4000, N);
}

/* The four shapes of a remove, with exact figures. */
static void test_cuts(void **state)
{
    (void)state;
    struct trk_imap map;
    trk_imap_init(&map);
    struct sink_log log = {0};
    struct trk_imap_sink sink = {on_take, on_split, &log};
    trk_imap_set_sink(&map, &sink);
    uint64_t r[TRK_ATTR_COUNT] = {0};
    assert_int_equal(trk_imap_insert_tagged(&map, 1000, 2000, TRK_ATTR_FILE, 7, r), 0);
    assert_int_equal(trk_imap_insert(&map, 3000, 4000, TRK_ATTR_ANON, r), 0);
    assert_int_equal(map.count, 2);
    assert_int_equal(log.ntakes, 0);
    /* A hole: one range becomes two, one split, the range survives. */
    assert_int_equal(trk_imap_remove(&map, 1200, 1300, r), 0);
    assert_int_equal(r[TRK_ATTR_FILE], 100);
    assert_int_equal(map.count, 3);
    assert_int_equal(log.splits, 1);
    assert_int_equal(log.ntakes, 1);
    assert_int_equal(log.takes[0].tag, 7);
    assert_int_equal(log.takes[0].whole, 0);
    /* Front and back cuts. */
    memset(r, 0, sizeof(r));
    assert_int_equal(trk_imap_remove(&map, 900, 1100, r), 0);
    assert_int_equal(trk_imap_remove(&map, 3900, 5000, r), 0);
    assert_int_equal(r[TRK_ATTR_FILE], 100);
    assert_int_equal(r[TRK_ATTR_ANON], 100);
    assert_int_equal(map.count, 3);
    /* One remove across all three: [1100,1200) [1300,2000) [3000,3900). */
    memset(r, 0, sizeof(r));
    log.ntakes = 0;
    assert_int_equal(trk_imap_remove(&map, 0, 10000, r), 0);
    assert_int_equal(r[TRK_ATTR_FILE], 800);
    assert_int_equal(r[TRK_ATTR_ANON], 900);
    assert_int_equal(log.ntakes, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(log.takes[i].whole, 1);
    assert_int_equal(map.count, 0);
    /* Empty ranges do nothing. */
    assert_int_equal(trk_imap_insert(&map, 5, 5, TRK_ATTR_ANON, r), 0);
    assert_int_equal(trk_imap_insert(&map, 6, 5, TRK_ATTR_ANON, r), 0);
    assert_int_equal(map.count, 0);
    trk_imap_free(&map);
}

/* Many ranges (the node pool grows and recycles) in an order that would
 * make an unbalanced tree a list. */
static void test_many_ranges(void **state)
{
    (void)state;
    struct trk_imap map;
    trk_imap_init(&map);
    uint64_t r[TRK_ATTR_COUNT] = {0};
    for (uint64_t i = 0; i < 100000; i++)
        assert_int_equal(trk_imap_insert(&map, i * 8192, i * 8192 + 4096, TRK_ATTR_ANON, r), 0);
    assert_int_equal(map.count, 100000);
    assert_int_equal(r[TRK_ATTR_ANON], 0);
    uint64_t b[TRK_ATTR_COUNT] = {0};
    trk_imap_overlap(&map, 2048, 8192 * 10, b);
    assert_int_equal(b[TRK_ATTR_ANON], 10 * 4096 - 2048);
    /* Every other one out, then back as file ranges: freed nodes reused. */
    for (uint64_t i = 0; i < 100000; i += 2)
        assert_int_equal(trk_imap_remove(&map, i * 8192, i * 8192 + 8192, r), 0);
    assert_int_equal(r[TRK_ATTR_ANON], 50000 * 4096);
    uint32_t used = map.used;
    for (uint64_t i = 0; i < 100000; i += 2)
        assert_int_equal(trk_imap_insert(&map, i * 8192, i * 8192 + 4096, TRK_ATTR_FILE, r), 0);
    assert_int_equal(map.used, used);
    assert_int_equal(map.count, 100000);
    memset(b, 0, sizeof(b));
    trk_imap_overlap(&map, 0, UINT64_MAX, b);
    assert_int_equal(b[TRK_ATTR_ANON], 50000 * 4096);
    assert_int_equal(b[TRK_ATTR_FILE], 50000 * 4096);
    trk_imap_free(&map);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_short_ranges),
        cmocka_unit_test(test_random_long_ranges),
        cmocka_unit_test(test_cuts),
        cmocka_unit_test(test_many_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
