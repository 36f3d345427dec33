/* SPDX-License-Identifier: MIT
 *
 * profile.h - the one-pass aggregation behind every report: per allocation
 * site (stack x thread x memory space, and optionally x Python import
 * chain) how much was allocated, live at the peak, leaked and temporary,
 * plus totals, a size histogram, per-thread and per-allocator splits and a
 * bounded timeline. A Python capture's leaks are taken at the script's end.
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

#include "format/format.h"

#include "analysis/stats.h"
#include "tracker/reader.h"

/* Memory spaces a site can belong to. Each has its own live total and peak.
 * A GPU device's space totals its device memory (kinds device, managed,
 * async, VMM physical, array); its pinned host and imported sites live there
 * too, with their own kind, but never add to the total. */
#define TRK_GPU_DEVICES_MAX 64 /* ordinals 0..63; any other counts as unknown */
enum trk_space {
    TRK_SPACE_HEAP = 0, /* malloc family (requested bytes) */
    TRK_SPACE_MMAP = 1, /* anonymous mappings (page-rounded bytes) */
    TRK_SPACE_GPU0 = 2, /* + device ordinal */
    /* Device -1 (not known when recorded) or an ordinal out of range. */
    TRK_SPACE_GPU_UNKNOWN = TRK_SPACE_GPU0 + TRK_GPU_DEVICES_MAX,
    TRK_SPACE_COUNT,
};

static inline bool trk_space_is_gpu(uint32_t space)
{
    return space >= TRK_SPACE_GPU0 && space < TRK_SPACE_COUNT;
}

/* The ordinal of a GPU space; -1 for TRK_SPACE_GPU_UNKNOWN. */
static inline int32_t trk_space_device(uint32_t space)
{
    return space < TRK_SPACE_GPU_UNKNOWN ? (int32_t)(space - TRK_SPACE_GPU0) : -1;
}

/* The space of a device ordinal (-1 or out of range: TRK_SPACE_GPU_UNKNOWN). */
static inline uint32_t trk_gpu_space(int64_t device)
{
    return device >= 0 && device < TRK_GPU_DEVICES_MAX ? TRK_SPACE_GPU0 + (uint32_t)device
                                                       : TRK_SPACE_GPU_UNKNOWN;
}

/* Kinds whose bytes make up a device's total: memory that occupies the
 * device. Pinned host memory is host RAM, imported memory belongs to
 * another process, reservations and registrations are no memory at all. */
static inline bool trk_gpu_kind_is_device(unsigned kind)
{
    return kind == TRK_GPU_DEVICE || kind == TRK_GPU_MANAGED || kind == TRK_GPU_ASYNC ||
           kind == TRK_GPU_VMM_PHYS || kind == TRK_GPU_ARRAY;
}

/* A selection of spaces in 32 bits, the form reports pass around (calltree
 * options, exports): bit (1 << space) for the host spaces; TRK_SPACES_GPU
 * for every GPU space, narrowed by TRK_SPACES_ONE_DEVICE to the space in
 * bits 16..23 (see trk_spaces_device). 0 means the heap alone. Test with
 * trk_spaces_has, never with a shift of the space. */
#define TRK_SPACES_HOST_MASK  ((1u << TRK_SPACE_GPU0) - 1)
#define TRK_SPACES_GPU        (1u << 8)
#define TRK_SPACES_ONE_DEVICE (1u << 9)

/* The selection of one device's space (ordinal 0..63, or -1: unknown). */
static inline uint32_t trk_spaces_device(int64_t device)
{
    return TRK_SPACES_GPU | TRK_SPACES_ONE_DEVICE | trk_gpu_space(device) << 16;
}

static inline bool trk_spaces_has(uint32_t sel, uint32_t space)
{
    if (sel == 0)
        sel = 1u << TRK_SPACE_HEAP;
    if (space < TRK_SPACE_GPU0)
        return (sel >> space) & 1u;
    if (!(sel & TRK_SPACES_GPU) || space >= TRK_SPACE_COUNT)
        return false;
    return !(sel & TRK_SPACES_ONE_DEVICE) || ((sel >> 16) & 0xFFu) == space;
}

/* A site's memory in words: "heap", "anon mmap", "GPU 0 device",
 * "GPU ? pinned_host" (kind names as trk_gpu_kind_name). Returns buf. */
const char *trk_space_label(uint32_t space, unsigned kind, char *buf, size_t len);

struct trk_profile_options {
    /* Temporary allocation: freed on the thread that allocated it before
     * that thread made more than temp_allocs further allocations (heaptrack's
     * rule is temp_allocs = 1: freed before the next allocation), or, when
     * temp_ns is non-zero, freed within temp_ns of being allocated. */
    uint64_t temp_allocs;     /* default 1 */
    uint64_t temp_ns;         /* default 0 (rule off) */
    unsigned timeline_points; /* upper bound on timeline points, default 2000 */
    /* Host events the GPU driver made inside GPU calls (TRK_EVF_GPU_DRIVER)
     * count like any other unless this is set; then they are left out of
     * every figure and site, as if the driver's own memory were not there
     * (totals.gpu_driver_host still tallies them). */
    bool exclude_gpu_driver_host;
    /* Sites are split by the Python import chain open on their thread when
     * they allocated (trk_site.import, trk_profile.imports): the flamegraph's
     * --by-import. Off, every site has import 0. */
    bool split_by_import;
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
    /* Heap and mmap sites: live at the moment heap + mappings together
     * reached their highest total (`--mmap` reports); 0 elsewhere. */
    uint64_t peak_hm_count, peak_hm_bytes;
    uint64_t leak_count, leak_bytes; /* live at the end (or the script's end:
                                      * trk_stats.leaks_at_script_end) */
    uint64_t temp_count, temp_bytes;
    uint64_t fail_count, fail_bytes; /* GPU allocations the driver refused */
    /* Heap blocks live at the process's exit by leak class (index: TRK_LEAK_*
     * of format.h; 0 unused), from the capture's LEAK records
     * (trk_stats.leaks_classified); all 0 without them. */
    uint64_t cls_count[TRK_LEAK_CLASS_MAX + 1], cls_bytes[TRK_LEAK_CLASS_MAX + 1];
    /* Indirectly lost blocks whose leader (the definitely lost block that
     * leaks them) was allocated here: valgrind's "(D direct, I indirect)". */
    uint64_t led_count, led_bytes;
};

/* trk_site.flags */
#define TRK_SITE_GPU_DRIVER 0x01 /* host memory the GPU driver allocated in a GPU call */
/* A sampled capture's heap site: its figures are estimates, each sampled
 * allocation weighted by the inverse of its odds (analysis/sample_weight.h). */
#define TRK_SITE_SAMPLED 0x02

struct trk_site {
    uint32_t stack;  /* reader stack id; 0 = no stack */
    uint32_t thread; /* index into trk_profile.threads */
    uint32_t space;  /* enum trk_space */
    uint8_t kind;    /* GPU spaces: enum trk_gpu_kind; 0 in host spaces */
    uint8_t flags;   /* TRK_SITE_* */
    uint32_t import; /* split_by_import: index into trk_profile.imports; 0 = no import */
    struct trk_site_stats s;
};

/* One import chain (split_by_import): the module being imported, inside
 * the chain `parent` (0 = a top-level import). Entry 0 is "no import". */
struct trk_import_ctx {
    uint32_t parent;
    char *module; /* owned; NULL for entry 0 */
};

struct trk_thread_info {
    uint32_t tid;
    char *name; /* last name seen, or NULL; owned */
    uint64_t allocations, bytes_allocated, leaked_bytes, peak_bytes; /* heap */
};

struct trk_timeline_point {
    uint64_t t_ns;     /* relative to the capture's clock_base */
    uint64_t heap;     /* live heap bytes (max over the point's interval) */
    uint64_t mmap;     /* live anonymous mapped bytes (max over the interval) */
    uint64_t rss_anon; /* last RSS sample at or before t (0 before the first) */
    uint64_t rss_file;
};

/* One GPU device over the points of trk_profile.timeline. */
struct trk_gpu_series {
    int32_t device;   /* ordinal; -1 = unknown */
    uint64_t *live;   /* live device-memory bytes (max over each point's interval) */
    uint64_t *driver; /* driver-reported usage: last sample at or before the point
                       * (0 before the first) */
};

/* The leak graph by site (profile_led.c): the indirectly lost blocks of
 * site member whose leader, the definitely lost block they hang from, was
 * allocated at site leader (indices into trk_profile.sites). A suppression
 * of the leader's stack hides them with it. */
struct trk_led_edge {
    uint32_t leader, member;
    uint64_t count, bytes;
};

#define TRK_HIST_BUCKETS 64 /* bucket b holds sizes in [2^(b-1), 2^b), bucket 0 size 0 */

struct trk_profile {
    struct trk_stats totals; /* same figures as `tracker stats` */
    struct trk_site *sites;
    size_t nsites;
    struct trk_thread_info *threads;
    size_t nthreads;
    uint64_t peak_t_ns[TRK_SPACE_COUNT]; /* when each space peaked (rel. clock_base) */
    uint64_t peak_bytes[TRK_SPACE_COUNT];
    /* The peak of heap + anonymous mappings together, and when (one
     * instant: not peak_bytes[HEAP] + peak_bytes[MMAP]). */
    uint64_t peak_hm_t_ns, peak_hm_bytes;
    uint64_t end_t_ns;
    uint64_t temporary_allocations, temporary_bytes;
    uint64_t hist_count[TRK_HIST_BUCKETS], hist_bytes[TRK_HIST_BUCKETS]; /* heap sizes */
    struct trk_timeline_point *timeline;
    size_t ntimeline;
    /* One series per device that had GPU memory or a driver sample, by
     * ordinal (unknown last), each ntimeline values long. */
    struct trk_gpu_series *gpu_timeline;
    size_t ngpu_timeline;
    /* split_by_import: the import chains sites refer to (entry 0 = none). */
    struct trk_import_ctx *imports;
    size_t nimports;
    /* Pairs (leader site, member site) of the leak classification at exit,
     * sorted by leader then member; none without LEAK records. */
    struct trk_led_edge *led;
    size_t nled;
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
