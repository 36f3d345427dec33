/* SPDX-License-Identifier: MIT
 *
 * temporal.h - the second pass behind `tracker flamegraph --temporal`: the
 * heap's life over time in a bounded form (memray's intervals). The run is
 * cut into equal time buckets; each bucket has a "high point", the first
 * moment its live heap was highest. Per profile site, blocks are grouped by
 * the bucket they were allocated in and the bucket they were freed in, each
 * endpoint also telling whether it came after that bucket's high point. That
 * is enough to answer, for any range of buckets and exactly at bucket
 * granularity, both "what was live at the highest point inside the range"
 * and "what was allocated inside the range and not freed by its end".
 *
 * Memory is bounded by the live set plus the number of distinct rows, and
 * rows are bounded by halving the number of buckets (exactly: see
 * trk_temporal_coarsen) whenever they pass max_rows. Must not: print,
 * symbolize, or keep anything per event.
 */
#ifndef TRK_TEMPORAL_H
#define TRK_TEMPORAL_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"
#include "tracker/reader.h"

/* One group of blocks of one site. An endpoint is 2 * bucket + after, where
 * after = 1 when the event came after that bucket's high point. A block is
 * live at the high point of bucket k when from/2 + from%2 <= k < to/2 +
 * to%2. Blocks never freed have to = 2 * nbuckets. */
struct trk_temporal_row {
    uint32_t site; /* index into the profile's sites */
    uint32_t from, to;
    uint64_t bytes, count;
};

struct trk_temporal {
    unsigned nbuckets;   /* a power of two */
    uint64_t bucket_ns;  /* bucket k covers [k, k+1) * bucket_ns after the clock base */
    uint64_t *high;      /* nbuckets: highest live heap bytes inside the bucket */
    uint64_t *high_t_ns; /* nbuckets: when it was first reached (rel. clock base) */
    struct trk_temporal_row *rows;
    size_t nrows;
};

struct trk_temporal_options {
    unsigned buckets; /* rounded up to a power of two; default 256 */
    size_t max_rows;  /* buckets halve while rows exceed this; default 2^20 */
};

/* Reads every remaining event of r (a reader opened afresh on the capture p
 * was computed from) into *out, which is zeroed first. Only heap (malloc
 * family) blocks are covered. Returns 0; -1 on a read error
 * (trk_reader_error(r) says why); -2 when memory ran out. *out must be
 * released with trk_temporal_free in every case. */
int trk_temporal_compute(struct trk_reader *r, const struct trk_profile *p,
                         const struct trk_temporal_options *opts, struct trk_temporal *out);

/* Halves the number of buckets, merging rows that become equal. Exact: the
 * high point of a merged pair is the higher of the two (the earlier on a
 * tie) and every endpoint is re-judged against it. Returns 0, or -1 when
 * one bucket is left (t unchanged) or memory ran out (t stays consistent,
 * possibly with rows left unmerged). */
int trk_temporal_coarsen(struct trk_temporal *t);

void trk_temporal_free(struct trk_temporal *t);

#endif /* TRK_TEMPORAL_H */
