/* SPDX-License-Identifier: MIT
 *
 * profile_internal.h - the state of one profile pass, shared by its files:
 * profile.c (the accounting rules of host memory, event by event),
 * profile_gpu.c (the rules of GPU memory), profile_tables.c (sites,
 * threads, mapping ids, the final export), profile_python.c (the Python
 * records: import chains, the script-end mark) and timeline.c (the bounded
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
/* The site of a live block the profile hides (driver host memory with
 * exclude_gpu_driver_host): kept only so that its free is recognised. No
 * real site index reaches it (tables stop at UINT32_MAX - 1 entries). */
#define TRK_PROF_HIDDEN (UINT32_MAX - 1)
/* The "site" of a heap block that sampling passed over (its stack is its
 * call site alone, sample_weight.h): counted in every total, in no site,
 * since the sampled blocks' weights already stand for it there. */
#define TRK_PROF_UNSAMPLED (UINT32_MAX - 2)

/* A site's class: its space, GPU kind and TRK_SITE_* flags in one word,
 * the part of a site's key beside (stack, thread). Host classes without
 * flags are the bare space, so the hot heap path computes nothing. */
static inline uint32_t trk_prof_cls(uint32_t space, unsigned kind, unsigned flags)
{
    return space | (uint32_t)kind << 16 | (uint32_t)flags << 24;
}

/* A site while the pass runs. `out` comes first so that the export can
 * compact the array in place into struct trk_site. */
struct trk_prof_site {
    struct trk_site out;
    uint64_t live_count, live_bytes;
    /* The site's figures at its space's peak, copied lazily: saved_* hold
     * the live values as of generation saved_gen (see trk_prof_touch). */
    uint64_t saved_count, saved_bytes;
    uint64_t saved_gen;
    /* The same at the peak of heap + mappings together (heap and mmap
     * sites only): that peak is one instant of its own, not the sum of the
     * two spaces' peaks, which may lie seconds apart. */
    uint64_t hm_count, hm_bytes;
    uint64_t hm_gen;
    /* What it held at the Python script's end (TRK_PY_MARK_SCRIPT_END),
     * its leak figures when the mark came; 0 for a site made after it. */
    uint64_t mark_count, mark_bytes;
};

struct trk_prof_thread {
    uint32_t tid;
    bool started; /* its own THREAD_START was seen */
    bool exited;  /* THREAD_EXIT seen: a later name or start of this tid is a new thread */
    char *name;
    uint64_t nallocs; /* allocations so far: the ordinal of the temporary rule */
    /* split_by_import: the import chain open on this thread (0 = none), and
     * the key thread of (this thread, that chain) + 1, 0 until needed
     * (trk_prof_key_thread). */
    uint32_t import, keyth;
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
    uint32_t cls;  /* trk_prof_cls */
    uint32_t site; /* TRK_PROF_NONE = empty */
};

struct trk_prof_site_slot {
    uint64_t key; /* stack | thread << 32 */
    uint32_t cls;
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

/* GPU live blocks are keyed by (family, address): VMM and array handles are
 * not addresses and may equal a device pointer, so each family has its own
 * map. One map per family serves every device: a pointer is unique across
 * the devices of a process (UVA), and a free may be recorded with another
 * device current (or none) than its allocation. */
enum trk_prof_gpu_family {
    TRK_PROF_GPU_PTR = 0, /* device, managed, pinned host, async, imported */
    TRK_PROF_GPU_VMM = 1, /* VMM physical allocation handles */
    TRK_PROF_GPU_ARRAY = 2,
    TRK_PROF_GPU_FAMILIES = 3,
};

#define TRK_PROF_GPU_SLOTS (TRK_SPACE_COUNT - TRK_SPACE_GPU0) /* index: space - GPU0 */

struct trk_prof_gpu_dev {
    struct trk_gpu_stats out;
    uint64_t live_bytes, live_count; /* device memory */
    uint64_t kind_live[TRK_GPU_KIND_MAX + 1], kind_count[TRK_GPU_KIND_MAX + 1];
    uint64_t driver_used;          /* last driver sample */
    uint64_t *tl_live, *tl_driver; /* the timeline's series, tl.cap points each */
    bool leaks_taken;              /* out's leak figures were set at the script's end */
};

/* Made at the first GPU event: a host-only capture pays nothing for it. */
struct trk_prof_gpu {
    struct trk_prof_gpu_dev *dev[TRK_PROF_GPU_SLOTS]; /* NULL until the device has an event */
    struct trk_live_map live[TRK_PROF_GPU_FAMILIES];
    bool live_ready[TRK_PROF_GPU_FAMILIES];
    uint8_t present[TRK_PROF_GPU_SLOTS]; /* slots of dev[] in use, in ascending order */
    unsigned npresent;
};

/* The Python side of a pass (profile_python.c). With split_by_import a
 * site's key holds a "key thread" instead of the thread: one per (thread,
 * import chain) pair, so sites split by chain while the site index and its
 * cache stay as they are. */
struct trk_prof_key_thread {
    uint32_t thread, import;
};

struct trk_prof_py {
    /* Import chains, interned by (parent, module): entry 0 is "none". */
    struct trk_import_ctx *chains;
    size_t nchains, chains_cap;
    uint32_t *chain_index; /* open addressing: entry + 1, 0 = empty */
    size_t chain_mask;
    struct trk_prof_key_thread *keys;
    size_t nkeys, keys_cap;
    uint32_t *key_index; /* entry + 1 */
    size_t key_mask;
    /* The totals at the script's end, when it came. */
    bool marked;
    uint64_t live_bytes, live_blocks, anon_bytes, drv_live, drv_mapped;
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

    uint64_t live_bytes;  /* heap */
    uint64_t anon_bytes;  /* anonymous mappings */
    uint64_t arena_bytes; /* of them, mappings of pymalloc's arena size */
    uint64_t rss_anon, rss_file;
    uint64_t gen[TRK_SPACE_COUNT]; /* bumped on every new maximum of a space */
    uint64_t gen_hm;               /* bumped on every new maximum of heap + mappings */
    uint64_t last_ts;

    bool hide_driver;         /* exclude_gpu_driver_host */
    uint64_t drv_live;        /* live heap bytes the GPU driver allocated */
    uint64_t drv_mapped;      /* anonymous bytes it mapped */
    uint64_t hidden_blocks;   /* hidden blocks in `live` (not leaks of the program) */
    struct trk_prof_gpu *gpu; /* NULL until the first GPU event */

    struct trk_prof_pending pending[TRK_PROF_PENDING_MAX];
    size_t npending;

    struct trk_prof_timeline tl;
    bool split;      /* split_by_import */
    double sample_n; /* --sample-bytes N of a sampled capture, else 0 */
    struct trk_prof_py py;
    struct trk_led_edge *led; /* profile_led.c */
    size_t nled, led_cap;
    bool oom;
};

/* Event time relative to the capture's clock base (earlier times read 0). */
static inline uint64_t trk_prof_rel(const struct trk_prof_ctx *c, uint64_t ts)
{
    return ts > c->clock_base ? ts - c->clock_base : 0;
}

static inline uint64_t trk_prof_sub_sat(uint64_t a, uint64_t b)
{
    return b > a ? 0 : a - b;
}

/* ---- profile_tables.c ------------------------------------------------------ */

int trk_prof_tables_init(struct trk_prof_ctx *c);
void trk_prof_tables_free(struct trk_prof_ctx *c);

/* The current thread entry of tid, created when absent (create) or
 * TRK_PROF_NONE (not found, or out of memory: then c->oom is set). */
uint32_t trk_prof_thread_lookup(struct trk_prof_ctx *c, uint32_t tid, bool create);
void trk_prof_thread_start(struct trk_prof_ctx *c, uint32_t tid);
void trk_prof_thread_exit(struct trk_prof_ctx *c, uint32_t tid);
void trk_prof_thread_name(struct trk_prof_ctx *c, uint64_t tid, const char *name);

/* The site of (stack, thread, class), created when absent; TRK_PROF_NONE
 * when out of memory (c->oom set). */
uint32_t trk_prof_site_lookup(struct trk_prof_ctx *c, uint64_t stack, uint32_t thread,
                              uint32_t cls);

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

/* x rotated right by n (0 < n < 64): one instruction. */
static inline uint64_t trk_prof_rotr(uint64_t x, unsigned n)
{
    return x >> n | x << (64 - n);
}

/* Where the site index starts probing for (stack | thread << 32, class).
 * Rotating the class puts the host classes 0 and 1 in the top bits (one
 * operation on the hot path) and the rest of a GPU class in the low ones. */
static inline size_t trk_prof_site_home(const struct trk_prof_ctx *c, uint64_t key, uint32_t cls)
{
    uint64_t k = key ^ trk_prof_rotr(cls, 3);
    k ^= k >> 31;
    k *= UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(k ^ (k >> 29)) & c->site_mask;
}

/* ---- profile_python.c ---------------------------------------------------------- */

/* PY_INFO, PY_IMPORT, PY_IMPORT_END, PY_MARK. */
void trk_prof_py_event(struct trk_prof_ctx *c, const struct trk_event *e);
/* The key thread standing for thread index ti under its open import chain
 * (split_by_import); TRK_PROF_NONE when memory ran out. */
uint32_t trk_prof_key_thread(struct trk_prof_ctx *c, uint32_t ti);
/* The thread and import chain a key thread stands for. */
void trk_prof_key_resolve(const struct trk_prof_ctx *c, uint32_t key, uint32_t *thread,
                          uint32_t *import);
/* Moves the import chains into c->p. Returns 0 or -1 (out of memory). */
int trk_prof_py_export(struct trk_prof_ctx *c);
void trk_prof_py_free(struct trk_prof_ctx *c);
/* An anonymous mapping of len bytes made (sign 1) or unmapped (-1): counted
 * in trk_stats.py_arena_peak_bytes when it has pymalloc's arena size. */
void trk_prof_py_arenas(struct trk_prof_ctx *c, uint64_t len, int sign);

/* ---- profile_led.c ---------------------------------------------------------- */

/* One indirectly lost block of site member whose leader (the definitely
 * lost block it hangs from) was allocated at site leader. */
void trk_prof_led_add(struct trk_prof_ctx *c, uint32_t leader, uint32_t member, uint64_t bytes);
/* Moves the merged pairs into c->p (cannot fail). */
void trk_prof_led_export(struct trk_prof_ctx *c);
void trk_prof_led_free(struct trk_prof_ctx *c);

/* ---- Sites -------------------------------------------------------------------- */

/* The site of (stack, thread index, class); with split_by_import the
 * thread's open import chain is part of the key. */
static inline uint32_t trk_prof_site_of(struct trk_prof_ctx *c, uint32_t thread, uint64_t stack,
                                        uint32_t cls)
{
    if (__builtin_expect(c->split, 0)) {
        thread = trk_prof_key_thread(c, thread);
        if (thread == TRK_PROF_NONE)
            return TRK_PROF_NONE;
    }
    uint64_t h =
        (stack ^ (uint64_t)thread << 40 ^ trk_prof_rotr(cls, 4)) * UINT64_C(0x9E3779B97F4A7C15);
    struct trk_prof_site_cache *e = &c->site_cache[h >> 56];
    if (e->stack == stack && e->thread == thread && e->cls == cls && e->site != TRK_PROF_NONE)
        return e->site;
    uint32_t s = trk_prof_site_lookup(c, stack, thread, cls);
    *e = (struct trk_prof_site_cache){.stack = stack, .thread = thread, .cls = cls, .site = s};
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
    if (s->out.space <= TRK_SPACE_MMAP && s->hm_gen != c->gen_hm) {
        s->hm_gen = c->gen_hm;
        s->hm_count = s->live_count;
        s->hm_bytes = s->live_bytes;
    }
}

static inline void trk_prof_site_add(struct trk_prof_ctx *c, struct trk_prof_site *s,
                                     uint64_t bytes, uint64_t count)
{
    trk_prof_touch(c, s);
    s->live_bytes += bytes;
    s->live_count += count;
}

static inline void trk_prof_site_sub(struct trk_prof_ctx *c, struct trk_prof_site *s,
                                     uint64_t bytes, uint64_t count)
{
    trk_prof_touch(c, s);
    s->live_bytes = trk_prof_sub_sat(s->live_bytes, bytes);
    s->live_count = trk_prof_sub_sat(s->live_count, count);
}

/* ---- profile_gpu.c ----------------------------------------------------------- */

/* GPU_ALLOC, GPU_FREE, GPU_FAIL, GPU_MAP, GPU_UNMAP, GPU_MEMINFO. */
void trk_prof_gpu_event(struct trk_prof_ctx *c, const struct trk_event *e);
/* The script's end: every device's leak figures are what it holds now. */
void trk_prof_gpu_mark(struct trk_prof_ctx *c);
/* Leak figures, and the devices' figures moved into c->st->gpu. Returns 0
 * or -1 (out of memory). */
int trk_prof_gpu_finish(struct trk_prof_ctx *c);
void trk_prof_gpu_free(struct trk_prof_ctx *c);

/* ---- timeline.c -------------------------------------------------------------- */

int trk_prof_tl_init(struct trk_prof_timeline *tl, unsigned points);
void trk_prof_tl_free(struct trk_prof_timeline *tl);
/* Opens points up to the one holding rel, carrying the current values. */
void trk_prof_tl_advance(struct trk_prof_ctx *c, uint64_t rel);
/* Extends the timeline to end_rel and moves it into c->p. */
void trk_prof_tl_export(struct trk_prof_ctx *c, uint64_t end_rel);
/* Gives device d its series, zero up to the open point. Returns 0 or -1. */
int trk_prof_tl_gpu_init(struct trk_prof_ctx *c, struct trk_prof_gpu_dev *d);

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
