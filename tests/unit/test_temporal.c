/* SPDX-License-Identifier: MIT
 *
 * test_temporal.c - exact bucket halving (trk_temporal_coarsen in
 * src/analysis/temporal.c) on hand-made rows, against the two questions the
 * rows exist to answer, computed naively before and after: per site, the
 * bytes live at each bucket's high point (after halving: at the high point
 * of the pair's winner, the higher bucket, the earlier on a tie), and the
 * bytes allocated inside a bucket range and not freed by its end. Halving
 * repeats down to one bucket; totals are kept, equal rows merge, and a
 * single bucket cannot be halved.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/temporal.h"

#define SITES 4

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* temporal.h: live at the high point of bucket k when
 * from/2 + from%2 <= k < to/2 + to%2. */
static unsigned pos(uint32_t e)
{
    return e / 2 + e % 2;
}

static uint64_t live_at(const struct trk_temporal *t, uint32_t site, unsigned k)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        const struct trk_temporal_row *r = &t->rows[i];
        if (r->site == site && pos(r->from) <= k && k < pos(r->to))
            sum += r->bytes;
    }
    return sum;
}

/* Allocated in buckets [a, b] and still live after bucket b. */
static uint64_t left_over(const struct trk_temporal *t, uint32_t site, unsigned a, unsigned b)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        const struct trk_temporal_row *r = &t->rows[i];
        if (r->site == site && r->from / 2 >= a && r->from / 2 <= b && r->to / 2 > b)
            sum += r->bytes;
    }
    return sum;
}

static void totals(const struct trk_temporal *t, uint64_t bytes[SITES], uint64_t count[SITES])
{
    memset(bytes, 0, SITES * sizeof(*bytes));
    memset(count, 0, SITES * sizeof(*count));
    for (size_t i = 0; i < t->nrows; i++) {
        bytes[t->rows[i].site] += t->rows[i].bytes;
        count[t->rows[i].site] += t->rows[i].count;
    }
}

/* A random fine table: nb buckets, nrows blocks (duplicate keys allowed, as
 * a real pass never makes them but halving must cope with any). High points
 * come from a small range so that ties are common. */
static void make(struct trk_temporal *t, unsigned nb, size_t nrows, uint64_t *seed)
{
    memset(t, 0, sizeof(*t));
    t->nbuckets = nb;
    t->bucket_ns = 1000;
    t->high = malloc(nb * sizeof(*t->high));
    t->high_t_ns = malloc(nb * sizeof(*t->high_t_ns));
    t->rows = malloc(nrows * sizeof(*t->rows));
    assert_non_null(t->high);
    assert_non_null(t->high_t_ns);
    assert_non_null(t->rows);
    for (unsigned k = 0; k < nb; k++) {
        t->high[k] = rnd(seed) % 4;
        t->high_t_ns[k] = k * 1000 + rnd(seed) % 1000;
    }
    for (size_t i = 0; i < nrows; i++) {
        uint32_t from = (uint32_t)(rnd(seed) % (2 * nb));
        uint32_t to =
            from + (uint32_t)(rnd(seed) % (2 * nb - from + 1)); /* up to 2nb: never freed */
        t->rows[i] = (struct trk_temporal_row){
            .site = (uint32_t)(rnd(seed) % SITES),
            .from = from,
            .to = to,
            .bytes = 1 + rnd(seed) % 1000,
            .count = 1 + rnd(seed) % 3,
        };
    }
    t->nrows = nrows;
}

static void halve_and_check(struct trk_temporal *t)
{
    unsigned nb = t->nbuckets;
    /* Expected, from the fine table. */
    unsigned win[256];
    uint64_t high[256], high_t[256];
    uint64_t live[SITES][256], left[SITES][64];
    for (unsigned m = 0; m < nb / 2; m++) {
        win[m] = t->high[2 * m] >= t->high[2 * m + 1] ? 2 * m : 2 * m + 1;
        high[m] = t->high[win[m]];
        high_t[m] = t->high_t_ns[win[m]];
    }
    for (uint32_t s = 0; s < SITES; s++) {
        for (unsigned m = 0; m < nb / 2; m++)
            live[s][m] = live_at(t, s, win[m]);
        for (unsigned a = 0; a < nb / 2 && a < 8; a++)
            for (unsigned b = a; b < nb / 2 && b < 8; b++)
                left[s][a * 8 + b] = left_over(t, s, 2 * a, 2 * b + 1);
    }
    uint64_t tb[SITES], tc[SITES], tb2[SITES], tc2[SITES];
    totals(t, tb, tc);
    uint64_t bucket_ns = t->bucket_ns;

    assert_int_equal(trk_temporal_coarsen(t), 0);

    assert_int_equal(t->nbuckets, nb / 2);
    assert_int_equal(t->bucket_ns, 2 * bucket_ns);
    for (unsigned m = 0; m < nb / 2; m++) {
        assert_int_equal(t->high[m], high[m]);
        assert_int_equal(t->high_t_ns[m], high_t[m]);
    }
    for (uint32_t s = 0; s < SITES; s++) {
        for (unsigned m = 0; m < nb / 2; m++)
            assert_int_equal(live_at(t, s, m), live[s][m]);
        for (unsigned a = 0; a < nb / 2 && a < 8; a++)
            for (unsigned b = a; b < nb / 2 && b < 8; b++)
                assert_int_equal(left_over(t, s, a, b), left[s][a * 8 + b]);
    }
    totals(t, tb2, tc2);
    for (uint32_t s = 0; s < SITES; s++) {
        assert_int_equal(tb2[s], tb[s]);
        assert_int_equal(tc2[s], tc[s]);
    }
    /* Rows are distinct keys, endpoints within range. */
    for (size_t i = 0; i < t->nrows; i++) {
        assert_true(t->rows[i].from <= t->rows[i].to);
        assert_true(t->rows[i].to <= 2 * t->nbuckets);
        for (size_t j = i + 1; j < t->nrows; j++)
            assert_false(t->rows[i].site == t->rows[j].site && t->rows[i].from == t->rows[j].from &&
                         t->rows[i].to == t->rows[j].to);
    }
}

static void test_halving_random(void **state)
{
    (void)state;
    uint64_t seed = UINT64_C(0x243F6A8885A308D3);
    for (int run = 0; run < 60; run++) {
        struct trk_temporal t;
        make(&t, run % 2 ? 64 : 16, 300, &seed);
        while (t.nbuckets > 1)
            halve_and_check(&t);
        assert_int_equal(trk_temporal_coarsen(&t), -1); /* one bucket: unchanged */
        assert_int_equal(t.nbuckets, 1);
        trk_temporal_free(&t);
    }
}

/* By hand: two buckets, the second higher. Of three blocks allocated in
 * bucket 0, the one freed in bucket 1 after its high point was live there
 * and stays live at the merged high point; the one freed in bucket 1 before
 * it was not, and its row merges with that of a block that lived and died
 * inside bucket 0. */
static void test_halving_by_hand(void **state)
{
    (void)state;
    struct trk_temporal t = {.nbuckets = 2, .bucket_ns = 10};
    t.high = malloc(2 * sizeof(uint64_t));
    t.high_t_ns = malloc(2 * sizeof(uint64_t));
    t.rows = malloc(3 * sizeof(*t.rows));
    assert_non_null(t.high);
    assert_non_null(t.high_t_ns);
    assert_non_null(t.rows);
    t.high[0] = 100, t.high[1] = 200;
    t.high_t_ns[0] = 3, t.high_t_ns[1] = 17;
    t.rows[0] = (struct trk_temporal_row){.site = 0, .from = 1, .to = 2, .bytes = 10, .count = 1};
    t.rows[1] = (struct trk_temporal_row){.site = 0, .from = 1, .to = 3, .bytes = 20, .count = 1};
    t.rows[2] = (struct trk_temporal_row){.site = 0, .from = 0, .to = 1, .bytes = 40, .count = 1};
    t.nrows = 3;
    assert_int_equal(trk_temporal_coarsen(&t), 0);
    assert_int_equal(t.nbuckets, 1);
    assert_int_equal(t.high[0], 200);
    assert_int_equal(t.high_t_ns[0], 17);
    assert_int_equal(t.bucket_ns, 20);
    /* Endpoints: from 1 -> 0 (before the winner's high point), to 2 -> 0
     * and to 3 -> 1 (bucket 1 is the winner: flags kept); row 2: 0 -> 0,
     * 1 -> 0. */
    assert_int_equal(live_at(&t, 0, 0), 20);
    uint64_t b[SITES], c[SITES];
    totals(&t, b, c);
    assert_int_equal(b[0], 70);
    assert_int_equal(c[0], 3);
    assert_int_equal(t.nrows, 2); /* (0,0,0) merged: 10 + 40 bytes */
    trk_temporal_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_halving_random),
        cmocka_unit_test(test_halving_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
