/* SPDX-License-Identifier: MIT
 *
 * stats.h - whole-capture totals (`tracker stats`): heap, mmap, RSS, threads
 * and integrity, computed in one pass over a reader. Must not: print (the
 * CLI formats), or keep per-event history: memory is bounded by the live set.
 */
#ifndef TRK_STATS_H
#define TRK_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "format/format.h"
#include "tracker/reader.h"

struct trk_alloc_stats {
    uint64_t allocations; /* ALLOC events of this kind, realloc halves included */
    uint64_t frees;       /* FREE events of this kind */
    uint64_t bytes;       /* requested bytes of those allocations */
};

/* Heap figures use requested sizes and count malloc-family blocks only;
 * mmap figures count anonymous mappings, lengths rounded up to the page. */
struct trk_stats {
    uint32_t pid;
    char *command;                /* argv joined by spaces; owned, see trk_stats_free */
    uint64_t allocations;         /* a realloc of a live pointer is a free plus an allocation */
    uint64_t frees;               /* FREE events of a non-NULL address, matched or not */
    uint64_t bytes_allocated;
    uint64_t peak_heap_bytes;     /* highest live requested bytes */
    uint64_t leaked_bytes;        /* live at the end */
    uint64_t leaked_allocations;
    uint64_t unmatched_frees;     /* frees of addresses not live (changed nothing) */
    uint64_t mmap_peak_bytes;     /* highest live anonymous mapped bytes */
    uint64_t mmap_leaked_bytes;   /* anonymous bytes still mapped at the end */
    uint64_t rss_peak_bytes;      /* highest anon + file over RSS samples */
    uint64_t rss_anon_peak_bytes;
    uint64_t rss_file_peak_bytes;
    uint64_t threads;             /* distinct program thread ids that started a stream */
    double duration_s;            /* END (or last event if truncated) - clock_base */
    bool truncated;
    uint64_t lost_events;
    uint64_t checksum_failures;
    uint64_t bad_chunks;
    uint64_t broken_streams;
    uint64_t bytes_lost;
    uint64_t events;
    struct trk_alloc_stats by_allocator[TRK_ALLOC_KIND_MAX + 1]; /* index: allocator id */
};

/* Reads every remaining event of r and fills *out (zeroed first). Returns 0;
 * -1 on a read error (trk_reader_error(r) says why); -2 when memory ran out.
 * In every case *out must be released with trk_stats_free. */
int trk_stats_compute(struct trk_reader *r, struct trk_stats *out);

/* Frees what trk_stats_compute allocated; s may be zeroed. */
void trk_stats_free(struct trk_stats *s);

#endif /* TRK_STATS_H */
