/* SPDX-License-Identifier: MIT
 *
 * own_mem.h - the tracker's own memory in the traced process, counted as it
 * is mapped and given back: intern tables, per-thread states and rings,
 * Python's per-thread blocks, the writer's buffers, the own unwinder's
 * cache and module table, the leak scan's tables at exit, the
 * pre-constructor log and the sampling memos. The figures are mapped
 * bytes (an upper bound of what they make resident) and go into the END
 * trailer (docs/FORMAT.md §2, "own memory"), so that `tracker stats` can say
 * what the tracker cost the process. Lock-free counters only: callable from
 * any hook, never allocates.
 */
#ifndef TRK_CAPTURE_OWN_MEM_H
#define TRK_CAPTURE_OWN_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "prim/base.h"

enum trk_own_cat {
    TRK_OWN_TABLES,   /* stack trie and Python code tables */
    TRK_OWN_THREADS,  /* per-thread capture states with their rings */
    TRK_OWN_PYTHON,   /* Python's per-thread frame blocks */
    TRK_OWN_WRITER,   /* the writer's staging and compression buffers */
    TRK_OWN_UNWIND,   /* the own unwinder's rule cache, module table, walk memos, check scratch */
    TRK_OWN_LEAKSCAN, /* the leak scan's working memory at exit (given back after) */
    TRK_OWN_PREINIT,  /* the log of calls made before the constructor (preinit.c) */
    TRK_OWN_SAMPLE,   /* per-thread call-site memos of --sample-bytes (static TLS) */
    TRK_OWN_NCAT,
};

/* Counts len mapped (+) or given back (-) bytes in category c; objects
 * counts the category's blocks (thread states, Python blocks). */
void trk_own_add(enum trk_own_cat c, int64_t len, int64_t objects) TRK_HIDDEN;
/* One more table generation started because a table reached its cap. */
void trk_own_rotation(void) TRK_HIDDEN;

/* Maps len bytes for category c (trk_sys_mmap) and counts them. */
void *trk_own_map(enum trk_own_cat c, size_t len) TRK_HIDDEN;
/* Unmaps what trk_own_map(c, len) mapped and stops counting it. */
void trk_own_unmap(enum trk_own_cat c, void *p, size_t len) TRK_HIDDEN;
/* len rounded up to whole pages: what a mapping of len bytes counts. */
static inline size_t trk_own_pages(size_t len)
{
    return (len + 4095) & ~(size_t)4095;
}
/* Unmaps what trk_own_map(c, len) mapped, of which `released` bytes
 * were given back with trk_own_release already (and are counted out). */
void trk_own_unmap_rest(enum trk_own_cat c, void *p, size_t len, size_t released) TRK_HIDDEN;
/* Gives back the pages of [p, p + len) (MADV_DONTNEED: the range stays
 * mapped and reads as zeros, so a lock-free reader still probing it is
 * safe) and stops counting them. */
void trk_own_release(enum trk_own_cat c, void *p, size_t len) TRK_HIDDEN;

/* The registry of the tracker's own mappings, which the exit-time leak
 * scan leaves out (leak_roots.c): what it holds - copies of block
 * addresses in the writer's buffers, registers of stopped threads - is not
 * the program's. trk_own_map notes its ranges itself; code mapping with
 * trk_sys_mmap directly notes them, and forgets one (by its start) before
 * unmapping it, lest a later program mapping there be left out. Lock-free
 * and allocation-free (a full chunk maps the next). trk_own_ranges calls
 * fn for each range, the registry's own chunks included, and returns how
 * many ranges could not be registered (no memory). */
void trk_own_note(const void *p, size_t len) TRK_HIDDEN;
void trk_own_forget(const void *p) TRK_HIDDEN;
uint64_t trk_own_ranges(void (*fn)(void *ctx, uint64_t lo, uint64_t hi), void *ctx) TRK_HIDDEN;

/* The END trailer's own-memory fields, in their on-disk order
 * (docs/FORMAT.md): peak total, tables, tables' peak, thread states' bytes
 * and count, Python blocks' bytes and count, writer, table rotations,
 * total; then (appended later) bytes and peak of the unwinder, of the
 * leak scan and of the pre-constructor log, the sampling memos' bytes and
 * count. A fork child's figures include what it
 * inherited still mapped. */
#define TRK_OWN_FIELDS 18
void trk_own_snapshot(uint64_t out[TRK_OWN_FIELDS]) TRK_HIDDEN;

#endif /* TRK_CAPTURE_OWN_MEM_H */
