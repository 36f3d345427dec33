/* SPDX-License-Identifier: MIT
 *
 * stats.h - whole-capture totals (`tracker stats`): heap, mmap, RSS, threads,
 * GPU devices, the Python interpreter and integrity, computed in one pass
 * over a reader. Must not: print (the CLI formats), or keep per-event
 * history: memory is bounded by the live set.
 */
#ifndef TRK_STATS_H
#define TRK_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/format.h"
#include "tracker/reader.h"

struct trk_alloc_stats {
    uint64_t allocations; /* ALLOC events of this kind, realloc halves included */
    uint64_t frees;       /* FREE events of this kind */
    uint64_t bytes;       /* requested bytes of those allocations */
};

/* One GPU memory kind on one device. */
struct trk_gpu_kind_stats {
    uint64_t allocations, bytes;               /* successful allocations, requested bytes */
    uint64_t frees;                            /* releases matched to an allocation of this kind */
    uint64_t peak_bytes;                       /* highest live bytes of this kind */
    uint64_t leaked_bytes, leaked_allocations; /* live at the end */
};

/* One GPU device. The top-level figures count device memory only (kinds
 * device, managed, async, VMM physical, array: trk_gpu_kind_is_device);
 * pinned host and imported memory appear in by_kind alone. Reservations
 * (kind 8) and host registrations (kind 9) are counted in by_kind as
 * calls, never as memory: their peak and leak figures stay 0. */
struct trk_gpu_stats {
    int32_t device; /* ordinal; -1 = unknown (or out of range) */
    uint64_t allocations, frees, bytes_allocated;
    uint64_t peak_bytes; /* highest live device memory */
    uint64_t leaked_bytes, leaked_allocations;
    uint64_t failed_allocations; /* refused by the driver (any memory kind) */
    uint64_t failed_bytes;
    uint64_t unmatched_frees;    /* releases of nothing live (charged to the record's device) */
    uint64_t maps, unmaps;       /* VMM mapping calls (placement, not memory) */
    uint64_t driver_samples;     /* GPU_MEMINFO records */
    uint64_t driver_peak_bytes;  /* highest driver-reported usage */
    uint64_t driver_total_bytes; /* the device's size, as last reported */
    struct trk_gpu_kind_stats by_kind[TRK_GPU_KIND_MAX + 1]; /* index: enum trk_gpu_kind */
};

/* Host memory the GPU driver allocated inside GPU calls (TRK_EVF_GPU_DRIVER
 * events), tallied apart whether or not the profile counts it. */
struct trk_driver_host_stats {
    uint64_t allocations, bytes_allocated;       /* heap */
    uint64_t peak_bytes, leaked_bytes;           /* live heap bytes */
    uint64_t mmap_peak_bytes, mmap_leaked_bytes; /* anonymous mappings */
};

/* Heap figures use requested sizes and count malloc-family blocks only;
 * mmap figures count anonymous mappings, lengths rounded up to the page. */
struct trk_stats {
    uint32_t pid;
    char *command;        /* argv joined by spaces; owned, see trk_stats_free */
    uint64_t allocations; /* a realloc of a live pointer is a free plus an allocation */
    uint64_t frees;       /* FREE events of a non-NULL address, matched or not */
    uint64_t bytes_allocated;
    uint64_t peak_heap_bytes; /* highest live requested bytes */
    uint64_t leaked_bytes;    /* live at the end (see leaks_at_script_end) */
    uint64_t leaked_allocations;
    uint64_t unmatched_frees; /* frees of addresses not live (changed nothing) */
    /* A fork child's blocks inherited live from its parent (counted in the
     * peak and the leaks, not in allocations); inherited_missing when the
     * child's capture says it was forked but the parent's capture could not
     * be read (inherit_error says why): frees of inherited blocks are then
     * unmatched. */
    uint64_t inherited_allocations, inherited_bytes;
    bool inherited_missing;
    char inherit_error[512];
    uint64_t mmap_peak_bytes;   /* highest live anonymous mapped bytes */
    uint64_t mmap_leaked_bytes; /* anonymous bytes still mapped at the end */
    uint64_t rss_peak_bytes;    /* highest anon + file over RSS samples */
    uint64_t rss_anon_peak_bytes;
    uint64_t rss_file_peak_bytes;
    uint64_t threads;  /* distinct program thread ids that started a stream */
    double duration_s; /* END (or last event if truncated) - clock_base */
    bool truncated;
    bool end_seen;       /* the capture ends with END: end_reason is valid */
    uint32_t end_reason; /* enum trk_end_reason of format.h: exit, exec, _exit */
    uint64_t lost_events;
    uint64_t unwind_checked, unwind_mismatches, unwind_fallbacks; /* TRACKER_UNWIND_CHECK */
    uint64_t checksum_failures;
    uint64_t bad_chunks;
    uint64_t broken_streams;
    uint64_t bytes_lost;
    uint64_t events;
    uint64_t missing_chunks; /* counted by END, absent from the file */
    bool ends_inside_chunk;  /* truncated by a cut-short write (disk full?) */
    /* The tracker's own memory in the traced process, as the END trailer
     * gave it (trk_reader_status.own, enum trk_own_field); own_fields 0:
     * not recorded. */
    uint32_t own_fields;
    uint64_t own[TRK_READER_OWN_MAX];
    bool heap_unseen; /* TRK_OPT_HEAP_UNSEEN: the program's own malloc was not seen */
    struct trk_alloc_stats by_allocator[TRK_ALLOC_KIND_MAX + 1]; /* index: allocator id */
    /* Python (PY_INFO, PY_IMPORT, PY_MARK records). */
    bool python;             /* the interpreter said hello (a PY_INFO record) */
    uint64_t python_version; /* PY_VERSION_HEX, 0x030b02f0 for 3.11.2 */
    uint64_t python_flags;   /* TRK_PYF_* of format.h */
    uint64_t python_imports; /* PY_IMPORT records */
    /* Anonymous mappings of exactly pymalloc's arena size (1 MiB since
     * 3.10, 256 KiB before): the arenas' own peak, apart from every other
     * mapping (a CUDA process reserves gigabytes of address space). */
    uint64_t py_arena_peak_bytes;
    /* A TRK_PY_MARK_SCRIPT_END was seen: the leaked_* figures (here, per
     * site and per thread) are what was live at that moment; frees during
     * the interpreter's teardown still count as frees but hide no leak. */
    bool leaks_at_script_end;
    uint64_t script_end_ns; /* when, relative to the clock base */
    /* Heap live at the end of the capture, whatever the mark says (what
     * valgrind calls "in use at exit"). */
    uint64_t exit_leaked_bytes, exit_leaked_allocations;
    /* --sample-bytes N of a sampled capture (0: not sampled). The figures
     * above stay exact (every event is recorded); per-site and per-thread
     * figures and the temporary ones are estimates (analysis/sample_weight.h). */
    uint64_t sample_bytes;
    /* The tracker classified the heap live at exit (LEAK_SCAN record,
     * docs/FORMAT.md §4a): leak_scan_flags are its TRK_LEAKF_*, and the
     * heap blocks live at exit add up by class (index TRK_LEAK_*; index 0:
     * live at exit but not classified, e.g. inherited at fork). */
    bool leaks_classified;
    uint64_t leak_scan_flags;
    uint64_t leak_class_bytes[TRK_LEAK_CLASS_MAX + 1], leak_class_count[TRK_LEAK_CLASS_MAX + 1];
    struct trk_driver_host_stats gpu_driver_host;
    /* Devices with a GPU event, by ordinal (unknown last); owned, NULL when
     * none (see trk_stats_free). */
    struct trk_gpu_stats *gpu;
    size_t ngpu;
};

/* Reads every remaining event of r and fills *out (zeroed first). Returns 0;
 * -1 on a read error (trk_reader_error(r) says why); -2 when memory ran out.
 * In every case *out must be released with trk_stats_free. */
int trk_stats_compute(struct trk_reader *r, struct trk_stats *out);

/* The figures of device ordinal `device` (-1: unknown), NULL when it had
 * no GPU event. */
const struct trk_gpu_stats *trk_stats_gpu(const struct trk_stats *s, int32_t device);

/* Stable lower-case name of a GPU memory kind ("device", "managed",
 * "pinned_host", "async", "vmm", "imported", "array", "va_reserve",
 * "host_register"); "unknown" otherwise. */
const char *trk_gpu_kind_name(unsigned kind);

/* PY_VERSION_HEX as Python prints it: "3.11.2", "3.13.0a1", "3.12.0rc2".
 * Returns buf. */
const char *trk_python_version(uint64_t hex, char *buf, size_t len);

/* Frees what trk_stats_compute allocated; s may be zeroed. */
void trk_stats_free(struct trk_stats *s);

#endif /* TRK_STATS_H */
