/* SPDX-License-Identifier: MIT
 *
 * unwind.h - the tracker's own stack walker (unwind.c, unwind_cfi.c): the
 * frames libunwind's unw_backtrace would give, at a fraction of its cost,
 * for the frames whose CFA rule is simple; anything else is left to
 * libunwind (the caller runs it for the whole walk).
 */
#ifndef TRK_CAPTURE_UNWIND_H
#define TRK_CAPTURE_UNWIND_H

#include <stdint.h>

#include "capture/thread.h"

struct trk_unwind_memo;

/* ---- Packed frame rules (unwind_cfi.c) ------------------------------------
 *
 * One 64-bit word per return address: what unwinding one frame needs.
 *   bits  0..15 1 (so that a rule is never 0, the empty slot)
 *   bits 16..17 kind: TRK_UR_STD, TRK_UR_FALLBACK, TRK_UR_LAST (0 = none)
 *   bit  18     CFA is rbp + off (else rsp + off)
 *   bits 19..31 rbp saved at CFA - 8 * slot (0: rbp unchanged)
 *   bits 32..63 CFA offset (signed)
 * The return address is always at CFA - 8 in a STD rule, whose offset is
 * never 0; LAST and FALLBACK rules have offset 0 (unwind.c relies on it). */
enum { TRK_UR_STD = 1, TRK_UR_FALLBACK = 2, TRK_UR_LAST = 3 };

static inline unsigned trk_ur_kind(uint64_t r)
{
    return (unsigned)(r >> 16) & 3;
}
static inline uint64_t trk_ur_pack(unsigned kind, int cfa_rbp, unsigned rbp_slot, int32_t off)
{
    return 1 | ((uint64_t)kind << 16) | ((uint64_t)(cfa_rbp != 0) << 18) |
           ((uint64_t)(rbp_slot & 0x1fff) << 19) | ((uint64_t)(uint32_t)off << 32);
}

/* Reads the rule for `pc` (a return address minus one, or an exact pc for
 * the innermost frame) from the .eh_frame_hdr of the module holding it.
 * Returns 0 when pc is in no known module (not cached: the module table may
 * just not have caught up); never takes a lock. */
uint64_t trk_unwind_rule_lookup(uintptr_t pc) TRK_HIDDEN;
/* .eh_frame_hdr at hdr as the own unwinder reads it (unwind_cfi.c): the
 * number of its (initial location, FDE) pairs, datarel sdata4 from hdr,
 * at *tab, and .eh_frame's address in *eh_frame; 0 for a header that is
 * not what every linker writes. trk_unwind_entry_end: the end of the CIE
 * or FDE at p, from its length word (NULL: a terminator, or 64-bit). The
 * unwind-table trim (eh_trim.c) reads the tables' extent with them. */
uint64_t trk_unwind_hdr_table(uintptr_t hdr, const int32_t **tab, uintptr_t *eh_frame) TRK_HIDDEN;
const uint8_t *trk_unwind_entry_end(const uint8_t *p) TRK_HIDDEN;

/* Rebuilds the module table (dl_iterate_phdr, so never from a signal
 * handler or under the loader lock): at start and whenever the set of
 * loaded objects changed. The cached rules of an object that went away are
 * forgotten (its addresses may come back as another's); trk_unwind_epoch
 * counts such unloads, from 1. */
void trk_unwind_modules_refresh(struct trk_thread *t) TRK_HIDDEN;
extern _Atomic uint32_t trk_unwind_epoch TRK_HIDDEN;
/* Zeroes the cached rules of [lo, hi) (unwind.c). */
void trk_unwind_forget_range(uintptr_t lo, uintptr_t hi) TRK_HIDDEN;

/* ---- The walk (unwind.c) --------------------------------------------------- */

/* A stop frame for the calling thread's walks while span is not 0: a walk
 * ends after the first frame whose return address ra has ra - lo < span, as
 * if max ended it there (and without the walk memo). src/python sets it
 * around the walk of a Python object's stack, whose frames under the
 * evaluation loop it replaces by Python frames (py_stack.c). libunwind's
 * walks ignore it: trk_unwind_stop_cut cuts them alike (stacks.c). */
struct trk_unwind_stop {
    uintptr_t lo, span;
};
extern __thread struct trk_unwind_stop trk_unwind_stop TRK_TLS TRK_HIDDEN;

/* ips[0..n) cut after the stop frame, when a stop is set and found. */
static inline int trk_unwind_stop_cut(const uintptr_t *ips, int n)
{
    if (__builtin_expect(trk_unwind_stop.span != 0, 0))
        for (int i = 0; i < n; i++)
            if (ips[i] - trk_unwind_stop.lo < trk_unwind_stop.span)
                return i + 1;
    return n;
}

/* Configured by TRACKER_UNWIND / TRACKER_UNWIND_CHECK (config.c). */
void trk_unwind_configure(int own, unsigned check_every) TRK_HIDDEN;
/* 1 when the own walker is on. */
extern int trk_unwind_own TRK_HIDDEN;

/* Walks the calling thread's stack into ips (innermost first), leaving out
 * frames in [skip_lo, skip_hi), at most max. Returns the count, or -1 when a
 * frame needs libunwind (signal frames, expressions, no unwind info). */
int trk_unwind_fast(struct trk_unwind_memo *m, uintptr_t *ips, int max, uintptr_t skip_lo,
                    uintptr_t skip_hi) TRK_HIDDEN;

/* The same from a hook's frame: ra its return address, fp its frame
 * pointer; our own frames are not walked at all. Falls back to
 * trk_unwind_fast when fp does not hold ra (a hook without a frame pointer). */
int trk_unwind_fast_fp(struct trk_unwind_memo *m, uintptr_t *ips, int max, uintptr_t skip_lo,
                       uintptr_t skip_hi, uintptr_t ra, uintptr_t fp) TRK_HIDDEN;

/* The calling thread's walk memo (unwind.c, "Walk memo"): NULL walks
 * without one. Raw mmap, counted as the unwinder's own memory; all zeros is
 * an empty memo, so its pages may be given back at any time the thread is
 * not walking. */
struct trk_unwind_memo *trk_unwind_memo_new(void) TRK_HIDDEN;

/* What stacks.c keeps with a memo entry: the stack id of the walk that
 * entry gives whole, the cache epoch it belongs to (thread.h) and the
 * walk's frame count. */
struct trk_memo_id {
    uint32_t id;
    uint16_t epoch, n;
};
/* Right after a walk with m (under the hook's guard, so no other walk on
 * this thread came between): the entry's id slot when one entry gave the
 * whole walk from its first frame, else NULL. */
struct trk_memo_id *trk_unwind_memo_last(struct trk_unwind_memo *m) TRK_HIDDEN;
size_t trk_unwind_memo_size(void) TRK_HIDDEN;

/* Differential check (unwind_check.c) */
void trk_unwind_check_every(unsigned every) TRK_HIDDEN;
/* Differential check (TRACKER_UNWIND_CHECK=N): 1 when this allocation is the
 * one in N to compare; trk_unwind_check_record compares the two walks. */
int trk_unwind_check_due(void) TRK_HIDDEN;
void trk_unwind_check_record(const uintptr_t *own, int n_own, const uintptr_t *ref,
                             int n_ref) TRK_HIDDEN;
/* A per-thread scratch array for the reference walk (raw mmap, lazily). */
uintptr_t *trk_unwind_check_buf(void) TRK_HIDDEN;

void trk_unwind_note_fallback(void) TRK_HIDDEN;

/* Totals for the capture's trailer. */
struct trk_unwind_stats {
    uint64_t checked, mismatches, fallbacks;
};
void trk_unwind_stats_get(struct trk_unwind_stats *s) TRK_HIDDEN;
/* A fork child writes its own capture: its totals start at 0. */
void trk_unwind_fork_child(void) TRK_HIDDEN;

#endif /* TRK_CAPTURE_UNWIND_H */
