/* SPDX-License-Identifier: MIT
 *
 * unwind_walk.h - what the own unwinder's files share inside src/capture:
 * the rule cache's table (unwind.c owns it), one walk step over the
 * calling thread's stack, and the stopped walks' per-thread cache
 * (unwind_stop.c). Internal: only unwind.c and unwind_stop.c include it.
 * Must not: allocate, lock or call stdio (every function here runs on the
 * walk, inside the traced process, possibly in a signal handler).
 */
#ifndef TRK_CAPTURE_UNWIND_WALK_H
#define TRK_CAPTURE_UNWIND_WALK_H

#include <stdatomic.h>
#include <stdint.h>

#include "capture/unwind.h"

/* The rule cache (unwind.c): one packed CFA rule per return address. */
struct rc_ent {
    _Atomic uintptr_t key;
    _Atomic uint64_t val;
};
struct rc_table {
    unsigned bits;
    _Atomic unsigned used;
    struct rc_ent e[];
};
extern _Atomic(struct rc_table *) trk_unwind_rct TRK_HIDDEN;
/* Rules are fixed while this is: a dlclose or __deregister_frame bumps it. */
extern _Atomic uint32_t trk_unwind_memo_gen TRK_HIDDEN;
uint64_t trk_unwind_rule_slow(uintptr_t pc) TRK_HIDDEN;

/* ---- The walk -------------------------------------------------------------- */

/* A walk in progress: where it is, and what it has given. */
struct wstate {
    uintptr_t pc, sp, bp;
    uintptr_t *ips;
    int n, max, skipped;
    uintptr_t skip_lo, span;
    unsigned recorded; /* frames stepped with a rule (memo_record) */
};

/* One frame's return address, as walk() takes it: 1 the walk goes on, 0
 * it has ended (an address under 0x4000, or max reached), -1 libunwind's. */
static inline int w_take(struct wstate *w, uintptr_t ra)
{
    if (TRK_UNLIKELY(ra < 0x4000))
        return 0;
    if (TRK_LIKELY(ra - w->skip_lo >= w->span)) {
        w->ips[w->n++] = ra;
        if (w->n == w->max)
            return 0;
    } else if (++w->skipped > 64) {
        return -1;
    }
    w->pc = ra - 1;
    return 1;
}

/* The rule for pc, from the shared cache (trk_unwind_rule_slow on a miss). */
static inline uint64_t w_rule(uintptr_t pc)
{
    struct rc_table *t = atomic_load_explicit(&trk_unwind_rct, memory_order_acquire);
    const struct rc_ent *re = &t->e[(pc * 0x9E3779B97F4A7C15ULL) >> (64 - t->bits)];
    uint64_t rule = atomic_load_explicit(&re->val, memory_order_relaxed);
    if (TRK_UNLIKELY(atomic_load_explicit(&re->key, memory_order_relaxed) != pc || rule == 0))
        rule = trk_unwind_rule_slow(pc);
    return rule;
}

/* One frame: its rule applied to w's state, which moves to the caller's
 * frame (rsp, rbp; the pc is w_take's). 1: *ra is the frame's return
 * address, *rule its rule; 0: the walk ends here (a LAST rule); -1:
 * libunwind's. */
static inline int w_step(struct wstate *w, uint64_t *rule, uintptr_t *ra)
{
    uint64_t r = w_rule(w->pc);
    uintptr_t cfa = ((r & (1u << 18)) ? w->bp : w->sp) + (uintptr_t)(intptr_t)(int32_t)(r >> 32);
    /* The caller's frame is above ours on the same stack (a signal frame,
     * the only way to switch stacks, is never STD): anything else is a bad
     * rbp or bad unwind info, libunwind's to judge. LAST and FALLBACK
     * rules have offset 0, so that this one test also sends them off the
     * fast path. */
    if (TRK_UNLIKELY(cfa - w->sp - 1 >= (1u << 28)))
        return trk_ur_kind(r) == TRK_UR_LAST ? 0 : -1;
    *ra = ((const uintptr_t *)cfa)[-1];
    unsigned slot = (unsigned)(r >> 19) & 0x1fff;
    if (slot)
        w->bp = ((const uintptr_t *)cfa)[-(intptr_t)slot];
    w->sp = cfa;
    *rule = r;
    return 1;
}

/* The walk proper, from w's state (pc a lookup address), w->n frames
 * already in w->ips, ending also after a frame whose return address is in
 * [lo, lo + span) (a stopped walk, unwind_stop.c). Returns the count or -1. */
static inline int walk_until(struct wstate *w, uintptr_t lo, uintptr_t span)
{
    for (;;) {
        uint64_t rule;
        uintptr_t ra;
        int r = w_step(w, &rule, &ra);
        if (r > 0)
            r = w_take(w, ra);
        if (r <= 0)
            return r < 0 ? -1 : w->n;
        if (ra - lo < span)
            return w->n;
    }
}

/* A walk with no stop frame: span 0 compiles the stop test away. */
static inline int walk(struct wstate *w)
{
    return walk_until(w, 0, 0);
}

/* ---- Stopped walks ------------------------------------------------------------
 *
 * A stopped walk (unwind.h) is a few frames (py_alloc_churn: 4.2 a walk),
 * which stepping gives for less than finding and replaying a memo entry
 * that runs on past the stop. Like a memo walk it is a pure function of
 * its start state, of the rules (fixed while trk_unwind_memo_gen is) and of the stack
 * words it reads, so a small per-thread cache keeps, per start state, the
 * words read in order and the frames given: a walk from that state that
 * finds each word as read gives those frames (each address compared follows
 * from words already found equal, so it is one the walk would read). Python
 * objects come from a few native paths, each again and again. */
#define SC_WAYS   16
#define SC_FRAMES 16
#define SC_WORDS  (2 * SC_FRAMES)
struct sc_ent {
    uintptr_t pc0, sp0, bp0;
    uint32_t gen;
    uint8_t n0, n, nw; /* n 0: empty (all zeros is an empty cache) */
    uint8_t needbp;    /* a rule reads the start rbp: bp0 is part of the key */
    uintptr_t ips[SC_FRAMES];
    uintptr_t addr[SC_WORDS], val[SC_WORDS];
};
struct trk_unwind_sc {
    struct sc_ent e[SC_WAYS];
    uint8_t last[SC_WAYS / 2]; /* per set of 2, the way found last */
    uint32_t walks, hits, bypass;
};

/* walk() that also ends after the stop frame [lo, lo + span). */
int trk_unwind_walk_stop(struct wstate *w, uintptr_t lo, uintptr_t span) TRK_HIDDEN;
/* The same, from c when it holds this walk (the caller holds the memo). */
int trk_unwind_walk_stopped(struct trk_unwind_sc *c, struct wstate *w, uintptr_t lo,
                            uintptr_t span) TRK_HIDDEN;

#endif
