/* SPDX-License-Identifier: MIT
 *
 * profile_internal.h - the state of one profile pass, shared by its files:
 * profile.c (the accounting rules, event by event), profile_tables.c (sites,
 * threads, mapping ids, the final export) and timeline.c (the bounded
 * timeline). Must not be included outside src/analysis, nor grow anything
 * whose size depends on the number of events: the pass must stay bounded by
 * the live set plus the number of sites.
 */
#ifndef TRK_PROFILE_INTERNAL_H
#define TRK_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/interval_map.h"
#include "analysis/live_map.h"
#include "analysis/profile.h"

#define TRK_PROF_NONE UINT32_MAX /* "no index": out of memory or not found */

/* A site while the pass runs. `out` comes first so that the export can
 * compact the array in place into struct trk_site. */
struct trk_prof_site {
    struct trk_site out;
    uint64_t live_count, live_bytes;
    /* The site's figures at its space's peak, copied lazily: saved_* hold
     * the live values as of generation saved_gen (see trk_prof_touch). */
    uint64_t saved_count, saved_bytes;
    uint64_t saved_gen;
};

struct trk_prof_thread {
    uint32_t tid;
    bool started; /* its own THREAD_START was seen */
    bool exited;  /* THREAD_EXIT seen: a later name or start of this tid is a new thread */
    char *name;
    uint64_t nallocs; /* allocations so far: the ordinal of the temporary rule */
};

struct trk_prof_tid_slot {
    uint32_t tid;
    uint32_t idx1;         /* thread index + 1; 0 = empty slot */
    uint32_t started_once; /* a program THREAD_START of this tid was seen (stats.threads) */
};

/* A direct-mapped cache in front of the site table: a program allocates
 * from a few hot call paths, and a hit costs one compare instead of a probe
 * sequence. */
#define TRK_PROF_SITE_CACHE 256

struct trk_prof_site_cache {
    uint64_t stack; /* as in the event */
    uint32_t thread;
    uint32_t space;
    uint32_t site; /* TRK_PROF_NONE = empty */
};

struct trk_prof_site_slot {
    uint64_t key; /* stack | thread << 32 */
    uint32_t space;
    uint32_t idx1; /* site index + 1; 0 = empty slot */
};

/* One anonymous mapping (an mmap call, or the new half of an mremap): how
 * many disjoint pieces of it are still mapped. A munmap that punches a hole
 * makes two; the mapping ends when its last piece goes. */
struct trk_prof_mapping {
    uint32_t pieces;
    uint32_t next_free;
};

/* The timeline: point k covers [k << shift, (k+1) << shift) ns after the
 * clock base; n - 1 is the open point. When an event falls past cap, pairs
 * are merged and the interval doubles, so memory stays at cap points. */
struct trk_prof_timeline {
    struct trk_timeline_point *pts;
    size_t cap, n;
    unsigned shift;
};

/* MREMAP_OLD waiting for its MREMAP_NEW (one per thread inside mremap,
 * unless the file lost the second half). */
#define TRK_PROF_PENDING_MAX 1024

struct trk_prof_pending {
    uint64_t seq2;
    unsigned attr;
};

struct trk_prof_ctx {
    struct trk_profile *p;
    struct trk_stats *st;
    const struct trk_reader *r;
    uint64_t clock_base, page;
    uint64_t temp_allocs, temp_ns;

    struct trk_live_map live;
    struct trk_imap maps;

    struct trk_prof_site *sites;
    size_t nsites, sites_cap;
    struct trk_prof_site_slot *site_index;
    size_t site_mask; /* capacity - 1 */
    struct trk_prof_site_cache site_cache[TRK_PROF_SITE_CACHE];

    struct trk_prof_thread *threads;
    size_t nthreads, threads_cap;
    struct trk_prof_tid_slot *tid_index;
    size_t tid_mask, ntids;
    uint32_t last_tid, last_thread; /* lookup cache; last_thread NONE = empty */

    struct trk_prof_mapping *mappings;
    size_t nmappings, mappings_cap;
    uint32_t mapping_free; /* free list head, TRK_PROF_NONE = empty */

    uint64_t live_bytes; /* heap */
    uint64_t anon_bytes; /* anonymous mappings */
    uint64_t rss_anon, rss_file;
    uint64_t gen[TRK_SPACE_COUNT]; /* bumped on every new maximum of a space */
    uint64_t last_ts;

    struct trk_prof_pending pending[TRK_PROF_PENDING_MAX];
    size_t npending;

    struct trk_prof_timeline tl;
    bool oom;
};

/* ---- profile_tables.c ------------------------------------------------------ */

int trk_prof_tables_init(struct trk_prof_ctx *c);
void trk_prof_tables_free(struct trk_prof_ctx *c);

/* The current thread entry of tid, created when absent (create) or
 * TRK_PROF_NONE (not found, or out of memory: then c->oom is set). */
uint32_t trk_prof_thread_lookup(struct trk_prof_ctx *c, uint32_t tid, bool create);
void trk_prof_thread_start(struct trk_prof_ctx *c, uint32_t tid);
void trk_prof_thread_exit(struct trk_prof_ctx *c, uint32_t tid);
void trk_prof_thread_name(struct trk_prof_ctx *c, uint64_t tid, const char *name);

/* The site of (stack, thread, space), created when absent; TRK_PROF_NONE
 * when out of memory (c->oom set). */
uint32_t trk_prof_site_lookup(struct trk_prof_ctx *c, uint64_t stack, uint32_t thread,
                              unsigned space);

/* Mapping ids: new (one piece), split (one more piece), drop (one piece
 * fewer; true when that was the last, and the id is recycled). */
uint32_t trk_prof_mapping_new(struct trk_prof_ctx *c);
void trk_prof_mapping_split(struct trk_prof_ctx *c, uint32_t id);
bool trk_prof_mapping_drop(struct trk_prof_ctx *c, uint32_t id);

/* Moves sites and threads into c->p (per-site peaks resolved, per-thread
 * sums). Returns 0 or -1 (out of memory). */
int trk_prof_export(struct trk_prof_ctx *c);

static inline uint32_t trk_prof_thread_of(struct trk_prof_ctx *c, uint32_t tid)
{
    if (c->last_thread != TRK_PROF_NONE && c->last_tid == tid)
        return c->last_thread;
    uint32_t t = trk_prof_thread_lookup(c, tid, true);
    if (t != TRK_PROF_NONE) {
        c->last_tid = tid;
        c->last_thread = t;
    }
    return t;
}

/* Where the site index starts probing for (stack | thread << 32, space). */
static inline size_t trk_prof_site_home(const struct trk_prof_ctx *c, uint64_t key, uint32_t space)
{
    uint64_t k = key ^ (uint64_t)space << 61;
    k ^= k >> 31;
    k *= UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(k ^ (k >> 29)) & c->site_mask;
}

static inline uint32_t trk_prof_site_of(struct trk_prof_ctx *c, uint32_t thread, uint64_t stack,
                                        unsigned space)
{
    uint64_t h =
        (stack ^ (uint64_t)thread << 40 ^ (uint64_t)space << 60) * UINT64_C(0x9E3779B97F4A7C15);
    struct trk_prof_site_cache *e = &c->site_cache[h >> 56];
    if (e->stack == stack && e->thread == thread && e->space == space && e->site != TRK_PROF_NONE)
        return e->site;
    uint32_t s = trk_prof_site_lookup(c, stack, thread, space);
    *e = (struct trk_prof_site_cache){.stack = stack, .thread = thread, .space = space, .site = s};
    return s;
}

/* Call before changing a site's live figures. The first change after its
 * space reached a new maximum saves what the site held at that moment;
 * later changes in the same generation leave the copy alone. */
static inline void trk_prof_touch(struct trk_prof_ctx *c, struct trk_prof_site *s)
{
    uint64_t g = c->gen[s->out.space];
    if (s->saved_gen != g) {
        s->saved_gen = g;
        s->saved_count = s->live_count;
        s->saved_bytes = s->live_bytes;
    }
}

/* ---- timeline.c -------------------------------------------------------------- */

int trk_prof_tl_init(struct trk_prof_timeline *tl, unsigned points);
void trk_prof_tl_free(struct trk_prof_timeline *tl);
/* Opens points up to the one holding rel, carrying the current values. */
void trk_prof_tl_advance(struct trk_prof_ctx *c, uint64_t rel);
/* Extends the timeline to end_rel and moves it into c->p. */
void trk_prof_tl_export(struct trk_prof_ctx *c, uint64_t end_rel);

/* The open point, after making sure it is the one holding rel. Events of
 * several threads may arrive with slightly decreasing times; those stay in
 * the open point. */
static inline struct trk_timeline_point *trk_prof_tl_at(struct trk_prof_ctx *c, uint64_t rel)
{
    struct trk_prof_timeline *tl = &c->tl;
    if ((rel >> tl->shift) >= tl->n)
        trk_prof_tl_advance(c, rel);
    return &tl->pts[tl->n - 1];
}

#endif /* TRK_PROFILE_INTERNAL_H */
