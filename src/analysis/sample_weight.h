/* SPDX-License-Identifier: MIT
 *
 * sample_weight.h - what one sampled allocation stands for in a capture
 * made with --sample-bytes N (docs/FORMAT.md §5.1). An allocation of s bytes
 * is sampled with probability p = 1 - exp(-s/N) (a Poisson process of rate
 * 1/N over the allocated bytes), so weighting each sampled one by 1/p - s/p
 * bytes, 1/p allocations - makes every per-stack sum an unbiased estimate
 * of the true one (the Horvitz-Thompson estimator heapprofd and tcmalloc
 * use). Counts are whole numbers: 1/p is rounded up or down by a hash of
 * a key of the block (its allocating thread's allocation ordinal, which
 * repeats from run to run where addresses do not) and its size, with the
 * odds that keep it unbiased; the same block gets the same count when it
 * is freed. Must not: know about
 * events, sites or reports.
 */
#ifndef TRK_SAMPLE_WEIGHT_H
#define TRK_SAMPLE_WEIGHT_H

#include <math.h>
#include <stdint.h>

#include "common/hash.h"

struct trk_sample_w {
    uint64_t bytes, count;
};

static inline struct trk_sample_w trk_sample_weigh(uint64_t size, double n, uint64_t key)
{
    if (size == 0 || n <= 0)
        return (struct trk_sample_w){size, 1};
    double p = -expm1(-(double)size / n);
    if (!(p > 0)) /* underflow: a size negligible beside N */
        p = (double)size / n;
    double inv = 1.0 / p;
    if (inv > 1e15) /* N from a damaged header: keep every figure an integer */
        inv = 1e15;
    double whole = floor(inv);
    /* A uniform number in [0, 1) from the block, 53 bits. */
    double u = (double)(trk_mix64(key ^ trk_mix64(size)) >> 11) * (1.0 / 9007199254740992.0);
    uint64_t count = (uint64_t)whole + (u < inv - whole ? 1u : 0u);
    double bytes = (double)size * inv;
    return (struct trk_sample_w){
        bytes < 9e18 ? (uint64_t)llround(bytes) : UINT64_C(9000000000000000000), count};
}

#endif /* TRK_SAMPLE_WEIGHT_H */
