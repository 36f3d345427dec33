/* SPDX-License-Identifier: MIT
 *
 * profile.h - the one-pass aggregation behind every report: per allocation
 * site (stack x thread x memory space) how much was allocated, live at the
 * peak, leaked and temporary, plus totals, a size histogram, per-thread and
 * per-allocator splits and a bounded timeline.
 *
 * Works on stack ids (not symbols): symbolization happens afterwards, once
 * per distinct address (symbol/symbolize.h), and frame-level trees are built
 * from sites (calltree.h). Memory is bounded by the live set plus the number
 * of sites, never by the length of the capture. Must not: print, symbolize.
 */
#ifndef TRK_PROFILE_H
#define TRK_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/stats.h"
#include "tracker/reader.h"

/* Memory spaces a site can belong to. GPU devices will follow as
 * TRK_SPACE_GPU0 + ordinal. */
enum trk_space {
    TRK_SPACE_HEAP = 0, /* malloc family (requested bytes) */
    TRK_SPACE_MMAP = 1, /* anonymous mappings (page-rounded bytes) */
    TRK_SPACE_COUNT = 2,
};

struct trk_profile_options {
    /* Temporary allocation: freed on the thread that allocated it before
     * that thread made more than temp_allocs further allocations (heaptrack's
     * rule is temp_allocs = 1: freed before the next allocation), or, when
     * temp_ns is non-zero, freed within temp_ns of being allocated. */
    uint64_t temp_allocs;     /* default 1 */
    uint64_t temp_ns;         /* default 0 (rule off) */
    unsigned timeline_points; /* upper bound on timeline points, default 2000 */
    /* Called now and then with bytes consumed so far (progress bars); may be
     * NULL. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
};

/* Figures for one site. "peak" = live at the moment the site's space reached
 * its highest live total (the first time, if that total recurs). */
struct trk_site_stats {
    uint64_t alloc_count, alloc_bytes; /* everything allocated here */
    uint64_t free_count;
    uint64_t peak_count, peak_bytes;
    uint64_t leak_count, leak_bytes;   /* live at the end */
    uint64_t temp_count, temp_bytes;
};

struct trk_site {
    uint32_t stack;  /* reader stack id; 0 = no stack */
    uint32_t thread; /* index into trk_profile.threads */
    uint32_t space;  /* enum trk_space */
    struct trk_site_stats s;
};

struct trk_thread_info {
    uint32_t tid;
    char *name;          /* last name seen, or NULL; owned */
    uint64_t allocations, bytes_allocated, leaked_bytes, peak_bytes; /* heap */
};

struct trk_timeline_point {
    uint64_t t_ns;       /* relative to the capture's clock_base */
    uint64_t heap;       /* live heap bytes (max over the point's interval) */
    uint64_t mmap;       /* live anonymous mapped bytes (max over the interval) */
    uint64_t rss_anon;   /* last RSS sample at or before t (0 before the first) */
    uint64_t rss_file;
};

#define TRK_HIST_BUCKETS 64 /* bucket b holds sizes in [2^(b-1), 2^b), bucket 0 size 0 */

struct trk_profile {
    struct trk_stats totals;      /* same figures as `tracker stats` */
    struct trk_site *sites;
    size_t nsites;
    struct trk_thread_info *threads;
    size_t nthreads;
    uint64_t peak_t_ns[TRK_SPACE_COUNT];   /* when each space peaked (rel. clock_base) */
    uint64_t peak_bytes[TRK_SPACE_COUNT];
    uint64_t end_t_ns;
    uint64_t temporary_allocations, temporary_bytes;
    uint64_t hist_count[TRK_HIST_BUCKETS], hist_bytes[TRK_HIST_BUCKETS]; /* heap sizes */
    struct trk_timeline_point *timeline;
    size_t ntimeline;
};

/* Reads every remaining event of r (one pass) into *out, which is zeroed
 * first. opts may be NULL for defaults. Returns 0; -1 on a read error
 * (trk_reader_error(r) says why); -2 when memory ran out. In every case *out
 * must be released with trk_profile_free. The reader stays open: stacks and
 * modules are still needed to symbolize the sites. */
int trk_profile_compute(struct trk_reader *r, const struct trk_profile_options *opts,
                        struct trk_profile *out);

void trk_profile_free(struct trk_profile *p);

#endif /* TRK_PROFILE_H */
