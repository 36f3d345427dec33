/* SPDX-License-Identifier: MIT
 *
 * preinit.c - the log of the program's allocations made before the
 * preload's constructor (preinit.h). The loader runs the constructors of
 * the program's libraries before ours, and they allocate: libstdc++ its
 * 72,704-byte emergency exception pool in every C++ program, any library
 * whatever its start-up keeps or leaks. Dropping them made those leaks
 * invisible and lost_events said nothing (issue 11).
 *
 * There is no configuration, capture file or thread state yet, so the log
 * needs none: its memory is one raw mapping made by the first call (only
 * the pages used are touched, unmapped after the replay), entries are
 * claimed with one atomic add, and each is published by its own flag, so
 * a library constructor's thread may log too. Stacks are unwound at the
 * call, as for any event, and interned at the replay.
 *
 * Must not: allocate, take a lock, or use anything the constructor has not
 * set up (trk_cfg, the writer, trk_tl_thread).
 */
#include <stdbool.h>
#include <string.h>

#include "capture/events.h"
#include "capture/own_mem.h"
#include "capture/preinit.h"
#include "capture/stacks.h"
#include "prim/sys.h"

#define LOG_BYTES  (32u << 20) /* reserved; ~150,000 calls of 25 frames */
#define LOG_FRAMES TRK_DEPTH_DEFAULT

struct entry {
    _Atomic uint32_t ready; /* 1 once the fields below are written */
    uint8_t op, kind;
    uint16_t nips;
    uint64_t size;
    uintptr_t addr, old;
    uintptr_t ips[]; /* nips, innermost first */
};

_Atomic int trk_preinit_closed;
static _Atomic(uint8_t *) log_mem; /* NULL: not mapped yet; (void *)1: mapping failed */
static _Atomic size_t log_used;
static _Atomic uint64_t log_lost;

static uint8_t *log_map(void)
{
    uint8_t *m = atomic_load_explicit(&log_mem, memory_order_acquire);
    if (TRK_LIKELY(m))
        return m == (uint8_t *)1 ? NULL : m;
    uint8_t *fresh = trk_own_map(TRK_OWN_PREINIT, LOG_BYTES);
    uint8_t *expect = NULL;
    if (atomic_compare_exchange_strong(&log_mem, &expect, fresh ? fresh : (uint8_t *)1)) {
        trk_own_note(fresh, LOG_BYTES); /* its block addresses are no roots */
        return fresh;
    }
    if (fresh) /* another thread mapped it first */
        trk_own_unmap(TRK_OWN_PREINIT, fresh, LOG_BYTES);
    return expect == (uint8_t *)1 ? NULL : expect;
}

void trk_preinit_log(unsigned op, unsigned kind, uintptr_t addr, uintptr_t old, uint64_t size,
                     uintptr_t ra)
{
    uintptr_t ips[LOG_FRAMES + 16];
    int n = trk_stack_unwind_raw(ips, (int)(sizeof(ips) / sizeof(ips[0])));
    /* Our own frames end at the hook: the stack starts at its caller. */
    int first = 0;
    for (int i = 0; i < n; i++)
        if (ips[i] == ra) {
            first = i;
            break;
        }
    n -= first;
    if (n > LOG_FRAMES)
        n = LOG_FRAMES;
    if (n < 0)
        n = 0;
    size_t need = (sizeof(struct entry) + (size_t)n * sizeof(uintptr_t) + 7) & ~(size_t)7;
    uint8_t *m = log_map();
    size_t at = m ? atomic_fetch_add(&log_used, need) : LOG_BYTES;
    if (at + need > LOG_BYTES || atomic_load(&trk_preinit_closed)) {
        atomic_fetch_add(&log_lost, 1);
        return;
    }
    struct entry *e = (struct entry *)(m + at);
    e->op = (uint8_t)op;
    e->kind = (uint8_t)kind;
    e->nips = (uint16_t)n;
    e->size = size;
    e->addr = addr;
    e->old = old;
    memcpy(e->ips, ips + first, (size_t)n * sizeof(uintptr_t));
    atomic_store_explicit(&e->ready, 1, memory_order_release);
}

static void replay_one(struct trk_thread *t, const struct entry *e)
{
    int n = e->nips < trk_cfg.depth ? e->nips : trk_cfg.depth;
    if (e->op == TRK_PRE_FREE) {
        trk_ev_free(t, e->kind, (const void *)e->addr);
        return;
    }
    uint32_t stack = trk_stack_intern(t, e->ips, n);
    if (e->op == TRK_PRE_ALLOC) {
        trk_ev_alloc(t, e->kind, (const void *)e->addr, e->size, stack);
        return;
    }
    uint64_t seq = trk_ev_begin(t);
    trk_ev_realloc(t, e->kind, seq, (const void *)e->old, (const void *)e->addr, e->size, stack);
}

void trk_preinit_replay(struct trk_thread *t)
{
    if (atomic_exchange(&trk_preinit_closed, 1))
        return;
    uint8_t *m = atomic_exchange(&log_mem, (uint8_t *)1);
    size_t used = atomic_load(&log_used);
    uint64_t lost = atomic_load(&log_lost);
    if (m == (uint8_t *)1)
        m = NULL;
    bool all_ready = true;
    for (size_t at = 0; m && at < used && at < LOG_BYTES;) {
        const struct entry *e = (const struct entry *)(m + at);
        /* An entry another thread (a library constructor's) is still
         * writing: it and the rest are lost, not waited for; its size is
         * not known yet. */
        if (!atomic_load_explicit(&e->ready, memory_order_acquire)) {
            all_ready = false;
            lost++;
            break;
        }
        if (t)
            replay_one(t, e);
        at += (sizeof(struct entry) + (size_t)e->nips * sizeof(uintptr_t) + 7) & ~(size_t)7;
    }
    if (t && lost)
        trk_ev_lost(t, lost);
    /* used was read after closing, and a logger claims its entry before it
     * checks for that: every entry that may still be written was claimed
     * by then. One of them unfinished: the writer may still be in it, so
     * the mapping stays. */
    if (m && all_ready)
        trk_own_unmap(TRK_OWN_PREINIT, m, LOG_BYTES);
}
