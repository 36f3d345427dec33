/* SPDX-License-Identifier: MIT
 *
 * unwind_stop.c - stopped walks: a native walk that ends at a given frame
 * (unwind.h: an object allocator's event in Python's hybrid mode ends at
 * the innermost eval frame), and the small per-thread cache that replays
 * one from a start state seen before. Its entries live in the thread's walk
 * memo (unwind.c), which the caller holds. Must not: allocate, lock or
 * call stdio; it runs on the walk, maybe in a signal handler.
 */
#include <stdatomic.h>
#include <string.h>

#include "capture/unwind_walk.h"

__thread struct trk_unwind_stop trk_unwind_stop TRK_TLS;

/* What a stopped walk read, in order: each frame's return address, and
 * its saved rbp where its rule restores one (kept in the entry only where
 * a later rule reads that rbp: in code without frame pointers rbp is a
 * general register, whose saved value differs from call to call). */
struct sc_rec {
    unsigned nw;
    uint8_t rbp_cfa[SC_WORDS]; /* word i is a return address whose rule used rbp */
    uint8_t is_bp[SC_WORDS];
};

/* Keeps the words of r a later rule needs (from the end back: the walk
 * stops, so rbp after the last frame is read by nobody) into e. */
static void sc_finish(struct sc_ent *e, const struct sc_rec *r)
{
    int live = 0;
    uint8_t keep[SC_WORDS];
    for (unsigned i = r->nw; i-- > 0;) {
        if (r->is_bp[i]) { /* the rbp the step of word i - 1 restored */
            keep[i] = (uint8_t)live;
            live = 0;
        } else {
            keep[i] = 1;
            live |= r->rbp_cfa[i];
        }
    }
    e->needbp = (uint8_t)live;
    unsigned k = 0;
    for (unsigned i = 0; i < r->nw; i++)
        if (keep[i]) {
            e->addr[k] = e->addr[i];
            e->val[k++] = e->val[i];
        }
    e->nw = (uint8_t)k;
}

__attribute__((noinline)) int trk_unwind_walk_stop(struct wstate *w, uintptr_t lo, uintptr_t span)
{
    return walk_until(w, lo, span);
}

/* walk_stop recording what it read into e, leaving e->n 0 when the walk
 * does not fit or needs libunwind. */
__attribute__((noinline)) static int walk_stop_rec(struct wstate *w, uintptr_t lo, uintptr_t span,
                                                   struct sc_ent *e)
{
    int n0 = w->n;
    struct sc_rec rec;
    rec.nw = 0;
    for (;;) {
        uint64_t rule;
        uintptr_t ra;
        int r = w_step(w, &rule, &ra);
        if (r > 0) {
            unsigned slot = (unsigned)(rule >> 19) & 0x1fff, nw = rec.nw;
            if (e && nw + 2 <= SC_WORDS && w->n - n0 < SC_FRAMES) {
                e->addr[nw] = w->sp - 8; /* w->sp is the frame's CFA now */
                e->val[nw] = ra;
                rec.rbp_cfa[nw] = (rule & (1u << 18)) != 0;
                rec.is_bp[nw++] = 0;
                if (slot) {
                    e->addr[nw] = w->sp - 8u * slot;
                    e->val[nw] = w->bp;
                    rec.rbp_cfa[nw] = 0;
                    rec.is_bp[nw++] = 1;
                }
                rec.nw = nw;
            } else {
                e = NULL;
            }
            r = w_take(w, ra);
        }
        if (r < 0)
            return -1;
        if (r == 0 || ra - lo < span)
            break;
    }
    if (e && w->n - n0 <= SC_FRAMES) {
        memcpy(e->ips, w->ips + n0, sizeof(uintptr_t) * (size_t)(w->n - n0));
        sc_finish(e, &rec);
        e->n0 = (uint8_t)n0;
        atomic_signal_fence(memory_order_seq_cst);
        e->n = (uint8_t)(w->n - n0);
    }
    return w->n;
}

/* A stopped walk, from the cache when it holds the walk from this start
 * state and every word it read still reads the same. */
static int sc_hit(const struct sc_ent *e, const struct wstate *w, uint32_t gen)
{
    if (!(e->n && e->pc0 == w->pc && e->sp0 == w->sp && (!e->needbp || e->bp0 == w->bp) &&
          e->gen == gen && e->n0 == w->n && w->n + e->n <= w->max))
        return 0;
    for (unsigned i = 0; i < e->nw; i++)
        if (*(const uintptr_t *)e->addr[i] != e->val[i])
            return 0;
    return 1;
}

/* Two ways a start state (native paths that differ above one allocator
 * call site alternate), the way found last kept. Where under half the
 * walks hit over 256 (json's encoder: deep, varied recursion), recording
 * costs more than hits save: the next 4,096 walks step plainly. */
int trk_unwind_walk_stopped(struct trk_unwind_sc *m, struct wstate *w, uintptr_t lo, uintptr_t span)
{
    if (m->bypass) {
        m->bypass--;
        return trk_unwind_walk_stop(w, lo, span);
    }
    if (++m->walks == 256) {
        if (2 * m->hits < m->walks)
            m->bypass = 4096;
        m->walks = m->hits = 0;
    }
    uint32_t gen = atomic_load_explicit(&trk_unwind_memo_gen, memory_order_acquire);
    uint64_t h = (w->pc ^ (w->sp << 17)) * 0x9E3779B97F4A7C15ULL;
    unsigned set = (unsigned)(h >> (64 - 3)) * 2;
    for (unsigned k = 0; k < 2; k++) {
        struct sc_ent *e = &m->e[set + k];
        if (sc_hit(e, w, gen)) {
            memcpy(w->ips + w->n, e->ips, sizeof(uintptr_t) * e->n);
            m->hits++;
            m->last[set / 2] = (uint8_t)k;
            return w->n + e->n;
        }
    }
    unsigned k = !m->last[set / 2]; /* the other way */
    m->last[set / 2] = (uint8_t)k;
    struct sc_ent *e = &m->e[set + k];
    e->n = 0;
    atomic_signal_fence(memory_order_seq_cst);
    e->pc0 = w->pc;
    e->sp0 = w->sp;
    e->bp0 = w->bp;
    e->gen = gen;
    return w->n <= 255 ? walk_stop_rec(w, lo, span, e) : trk_unwind_walk_stop(w, lo, span);
}
_Static_assert(SC_WAYS == 16, "trk_unwind_walk_stopped takes 3 bits for 8 sets of 2");
