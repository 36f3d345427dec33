/* SPDX-License-Identifier: MIT
 *
 * test_sample.c - Poisson sampling (src/capture/sample.c) and its estimator
 * (src/analysis/sample_weight.h), checked against their definitions with
 * bounds of five standard deviations (deterministic: fixed seeds):
 *   - an allocation of s bytes is sampled with probability 1 - exp(-s/N),
 *     for sizes far below, near and above N;
 *   - the sample points form a Poisson process: over a run of equal
 *     allocations the mean gap in bytes between samples is N-ish, and a
 *     thread's first allocation is not always sampled;
 *   - a seed repeats its draws exactly;
 *   - the weights: s/p bytes (to the byte), and counts whose mean over many
 *     blocks is 1/p (unbiased rounding), the same for the same block.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/sample_weight.h"
#include "capture/sample.h"
#include "prim/sys.h"

static struct trk_thread thr; /* only tid and stream are read */

/* A fresh thread of the sampler (its TLS reset) under rate n and seed. */
static void reset(uint64_t n, uint64_t seed)
{
    trk_cfg.sample_bytes = n;
    trk_cfg.sample_seed = seed;
    trk_sample_thread_reset();
    thr.tid = trk_pid; /* the main thread: draws from the seed alone */
}

/* The sampler's verdict on one allocation, as trk_stack_sized takes it. */
static int sampled(int64_t s)
{
    int64_t left = trk_tl_sample_left - s;
    if (left > 0) {
        trk_tl_sample_left = left;
        return 0;
    }
    return trk_sample_hit(&thr, s);
}

static void check_rate(uint64_t n, int64_t s, int allocs)
{
    reset(n, 99);
    int k = 0;
    for (int i = 0; i < allocs; i++)
        k += sampled(s);
    double p = -expm1(-(double)s / (double)n);
    double sd = sqrt(allocs * p * (1 - p));
    print_message("N=%llu s=%lld: %d of %d sampled, expected %.1f +- %.1f\n", (unsigned long long)n,
                  (long long)s, k, allocs, allocs * p, sd);
    assert_true(fabs(k - allocs * p) <= 5 * sd + 1);
}

static void test_odds_per_size(void **state)
{
    (void)state;
    check_rate(524288, 64, 400000);   /* p ~ 1.2e-4 */
    check_rate(524288, 2048, 100000); /* p ~ 0.0039 */
    check_rate(4096, 4096, 20000);    /* p ~ 0.63 */
    check_rate(4096, 1 << 16, 2000);  /* p ~ 1 */
    check_rate(1, 64, 1000);          /* p = 1 in double precision */
}

static void test_seed_repeats(void **state)
{
    (void)state;
    uint8_t a[4096], b[4096];
    reset(8192, 7);
    for (int i = 0; i < 4096; i++)
        a[i] = (uint8_t)sampled(100 + i % 900);
    reset(8192, 7);
    for (int i = 0; i < 4096; i++)
        b[i] = (uint8_t)sampled(100 + i % 900);
    assert_memory_equal(a, b, sizeof(a));
    reset(8192, 8);
    for (int i = 0; i < 4096; i++)
        b[i] = (uint8_t)sampled(100 + i % 900);
    assert_memory_not_equal(a, b, sizeof(a));
}

/* The first allocation of a thread is sampled with probability p, not 1:
 * the countdown starts at a draw. */
static void test_first_allocation(void **state)
{
    (void)state;
    int k = 0, runs = 2000;
    for (int r = 0; r < runs; r++) {
        reset(65536, 1000 + (uint64_t)r);
        k += sampled(64);
    }
    assert_true(k < 10); /* p ~ 0.001: expected 2 */
}

static void test_weights(void **state)
{
    (void)state;
    const double n = 524288;
    for (uint64_t s = 1; s < (1u << 24); s = s * 3 + 1) {
        double p = -expm1(-(double)s / n);
        struct trk_sample_w w = trk_sample_weigh(s, n, 1);
        assert_int_equal(w.bytes, (uint64_t)llround((double)s / p));
        assert_true(w.count == (uint64_t)floor(1 / p) || w.count == (uint64_t)ceil(1 / p));
        /* The same block always weighs the same. */
        struct trk_sample_w again = trk_sample_weigh(s, n, 1);
        assert_int_equal(again.count, w.count);
        /* The mean count over many blocks is 1/p. */
        double sum = 0;
        const int blocks = 20000;
        for (int k = 0; k < blocks; k++)
            sum += (double)trk_sample_weigh(s, n, (uint64_t)k).count;
        double frac = 1 / p - floor(1 / p);
        double sd = sqrt(frac * (1 - frac) / blocks);
        assert_true(fabs(sum / blocks - 1 / p) <= 5 * sd + 1e-9);
    }
    /* Size 0 is never sampled; were it given, it weighs nothing. */
    assert_int_equal(trk_sample_weigh(0, n, 1).bytes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_odds_per_size),
        cmocka_unit_test(test_seed_repeats),
        cmocka_unit_test(test_first_allocation),
        cmocka_unit_test(test_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
