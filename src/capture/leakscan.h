/* SPDX-License-Identifier: MIT
 *
 * leakscan.h - leak classification at process exit, valgrind memcheck's way
 * (docs/FORMAT.md §4a): which heap blocks still live at exit are definitely,
 * indirectly or possibly lost, and which are still reachable from the
 * process's roots (data/bss, thread stacks above their stack pointers,
 * registers, TLS, every other writable mapping).
 *
 * The live block set is what the capture this process has written says:
 * kept by the writer thread from the bytes it writes (trk_ltrack_*), or,
 * where that broke, read back through /proc/self/fd; the hot path pays
 * nothing for it either way. Runs once, on the exiting thread, with the writer's flush
 * lock held; never allocates (raw mmap only), never takes a lock a signal
 * handler could need, and gives up (writing a scan record that says so)
 * rather than hang the host.
 */
#ifndef TRK_CAPTURE_LEAKSCAN_H
#define TRK_CAPTURE_LEAKSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "capture/thread.h"

/* Drains what the exiting thread has committed so far into the file: the
 * scan writes its records through the thread's ring and calls this when
 * the ring is full (the writer thread cannot: the caller holds its lock). */
typedef void (*trk_leakscan_drain_fn)(void);

/* pre: flush lock held, every stream flushed to the capture file (fd).
 * `stack_top` is the exiting thread's frame at the tracker's entry: its
 * stack is scanned from there up (our own frames below it are not the
 * program's). Writes LEAK_SCAN and LEAK records into t's stream. */
void trk_leakscan_run(struct trk_thread *t, int fd, const void *stack_top,
                      trk_leakscan_drain_fn drain) TRK_HIDDEN;

/* The live set kept as the capture is written (leak_live.c), so that the
 * scan need not read the file back. pre: the writer's flush lock held.
 * start: once the scan is wanted; piece: each DATA chunk's raw bytes, as
 * written, `off` its stream offset, `slot` the thread state that holds the
 * stream (struct trk_thread's slot: a new stream on a reused state starts
 * at off 0), so the per-stream decoder state is kept per state, not per
 * thread that ever lived; watermark: each WATERMARK written; fork_child:
 * the child's capture starts empty. */
void trk_ltrack_start(void) TRK_HIDDEN;
void trk_ltrack_piece(uint32_t slot, uint64_t off, const uint8_t *p, size_t len) TRK_HIDDEN;
void trk_ltrack_watermark(uint64_t w) TRK_HIDDEN;
/* The writer's flush cycle begins (bound: the watermark it will write,
 * known up front: every event below it is in a piece of this cycle or an
 * earlier one) or ends (0). Pieces outside a cycle are handed over with 0. */
void trk_ltrack_cycle(uint64_t bound) TRK_HIDDEN;
/* The next piece is the cycle's last: no piece of this cycle follows it
 * (its FREEs below the bound are then final at once, without a log). */
void trk_ltrack_last(void) TRK_HIDDEN;
void trk_ltrack_fork_child(void) TRK_HIDDEN;

/* ---- Internal to leak_*.c ---------------------------------------------- */

enum { TRK_LB_UNREACHED = 0, TRK_LB_INDIRECT, TRK_LB_POSSIBLE, TRK_LB_REACHABLE };

/* The scan reads any word of the process, as a leak checker must: never
 * instrumented by AddressSanitizer or ThreadSanitizer where a test links
 * the capture code into a sanitized program (reading their shadow or a
 * redzone faults). */
#define TRK_LEAK_RAW_READ __attribute__((no_sanitize_address, no_sanitize_thread))

struct trk_lblock {
    uint64_t addr, size;
    uint32_t leader; /* INDIRECT: index of the block whose clique it joined */
    uint8_t state;   /* TRK_LB_* */
};

struct trk_lset {
    struct trk_lblock *v;
    size_t n;
    size_t map_len;  /* bytes of v's mapping */
    uint64_t lo, hi; /* [lo, hi): every block's extent */
    /* A bit per hashed page number, set for every page a block covers
     * (trk_lset_index): most words in [lo, hi) are no pointer into the
     * heap, and one bit test answers them without the binary search.
     * NULL: no filter. */
    uint64_t *pages;
    size_t pages_len;
    unsigned pages_shift; /* 64 - log2(bits) */
    uint32_t *stack;      /* mark stack, n entries */
    size_t sp;
    size_t stack_len;
    uint64_t root_bytes; /* bytes scanned as roots */
    uint32_t flags;      /* TRK_LEAKF_* */
};

/* Anonymous memory of our own, freed with lmem_free. */
void *trk_lmem(size_t len) TRK_HIDDEN;
void trk_lmem_free(void *p, size_t len) TRK_HIDDEN;

/* leak_live.c: the heap blocks live at the end of the capture in fd,
 * sorted by address. Returns 0 or -1 (then the scan is not done). */
int trk_lset_load(struct trk_lset *s, int fd) TRK_HIDDEN;
void trk_lset_free(struct trk_lset *s) TRK_HIDDEN;
/* leak_sort.c: v sorted by address; -1 without memory for it. */
int trk_lblocks_sort(struct trk_lblock *v, size_t n) TRK_HIDDEN;

/* leak_mark.c */
void trk_lmark_range(struct trk_lset *s, uint64_t lo, uint64_t hi) TRK_HIDDEN;
void trk_lmark_words(struct trk_lset *s, const uint64_t *w, size_t n) TRK_HIDDEN;
void trk_lmark_finish(struct trk_lset *s) TRK_HIDDEN;
size_t trk_lset_find(const struct trk_lset *s, uint64_t w) TRK_HIDDEN;
/* Builds s->pages for the sorted set (leak_mark.c); without memory for it
 * the set is searched unfiltered. */
void trk_lset_index(struct trk_lset *s) TRK_HIDDEN;

/* leak_roots.c: scans every root into s (stops and resumes the other
 * threads around it). */
void trk_lroots_scan(struct trk_lset *s, const void *stack_top) TRK_HIDDEN;
/* This process is a fork child: its heap holds blocks its capture does
 * not (leak_roots.c). */
void trk_lroots_fork_child(void) TRK_HIDDEN;

#endif /* TRK_CAPTURE_LEAKSCAN_H */
