/* SPDX-License-Identifier: MIT
 *
 * intern.c - the intern table's slow path: insertion, growth, reset
 * (intern.h has the lock-free lookup).
 *
 * Memory ordering. Readers take no lock; writers hold in->lock. Claim: a
 * reader that gets id != 0 for key K got K's one id, and its emit() record
 * was committed before; a reader that gets 0 falls to trk_intern_add, which
 * returns K's one id. Why:
 *   1. Slots are written once. A writer fills an empty slot's key words
 *      (relaxed), then its id (release). No slot is ever reused: growth
 *      copies into a new table, a full table at its cap is followed by a
 *      fresh one, and reset starts a new one. Old tables are never unmapped
 *      and never written again; their pages are given back (MADV_DONTNEED),
 *      after which they read as zeros. So a reader still probing one reads
 *      either the slot as it was written or zeros: a zero id ends its probe
 *      (5 below), and a key word read as zero after a nonzero id never
 *      matches, because no key is all zeros (a trie edge's ip and a code
 *      object's address are never 0). A mask read as zero makes the table
 *      one slot, slot 0, which then reads as empty: the probe ends too.
 *      The address space of given-back tables is not reused (a reader
 *      stalled in one could pair an old id with a new key), so each
 *      generation started at the cap costs that much address space, not
 *      memory.
 *   2. A reader loads a slot's id with acquire before its key words. If the
 *      id is nonzero, the release store of that id happened-before, and so
 *      did the key words written before it (and the emit() that preceded it
 *      in the writer's program order): the compare sees the final key, never
 *      a half-written one, so a nonzero id is never paired with a wrong key.
 *   3. A table is published (in->tab, release) only after all its slots are
 *      written; readers load it with acquire, so 2 holds for copied slots.
 *   4. Every table stays at most half full (grow before the insert that
 *      would pass half), and an old table is not written after growth: a
 *      probe always meets an empty slot and ends.
 *   5. An id 0 from a reader may be stale (an old table, or an insert not yet
 *      visible): trk_intern_add looks again under the lock, whose acquire
 *      orders it after every earlier insert's unlock (release), in the
 *      current table and then in the previous generation. So each key is in
 *      a table at most once, ids come from one counter under the lock, and
 *      they are dense: 1..N for N records. A key evicted from both
 *      generations gets a second id; both ids' records are in the capture.
 * All fields are atomics (the strictest of the two tables this replaced:
 * Python's wrote its key words as plain stores, a data race in C11's terms
 * that ThreadSanitizer would report).
 */
#include "capture/intern.h"
#include "capture/own_mem.h"
#include "capture/thread.h"
#include "prim/sys.h"

static uint64_t slots_max(const struct trk_intern *in)
{
    if (in->max_slots)
        return in->max_slots;
    /* TRACKER_TABLE_KB: two of these per intern table at most (the current
     * and the previous generation). 4 MiB holds 128 Ki trie edges. */
    uint64_t want = trk_cfg.table_bytes / trk_intern_stride(in->words), s = 1024;
    while (s * 2 <= want)
        s *= 2;
    return s;
}

static size_t tab_bytes(unsigned words, uint64_t slots)
{
    return sizeof(struct trk_intern_tab) + slots * trk_intern_stride(words);
}

static struct trk_intern_tab *tab_alloc(unsigned words, uint64_t slots)
{
    struct trk_intern_tab *t = trk_own_map(TRK_OWN_TABLES, tab_bytes(words, slots));
    if (t) {
        /* Probed before it is written, by readers too: its pages written
         * first (a table fills at random, so each soon is anyway). */
        trk_sys_prefault(t, tab_bytes(words, slots));
        t->mask = slots - 1;
    }
    return t;
}

/* The table's pages go back; it stays mapped (see the head comment, 1). */
static void tab_release(unsigned words, struct trk_intern_tab *t)
{
    if (t)
        trk_own_release(TRK_OWN_TABLES, t, tab_bytes(words, t->mask + 1));
}

static void slot_put(struct trk_intern_tab *t, unsigned words, uint64_t i, uint32_t k32,
                     const uint64_t *k, uint32_t id)
{
    struct trk_intern_ent *e = trk_intern_slot(t, words, i);
    atomic_store_explicit(&e->k32, k32, memory_order_relaxed);
    for (unsigned w = 0; w < words; w++)
        atomic_store_explicit(&e->k[w], k[w], memory_order_relaxed);
    atomic_store_explicit(&e->id, id, memory_order_release);
}

/* pre: lock held. Doubles the table; readers holding the old pointer keep
 * working and fall into the locked path for anything newer. */
static struct trk_intern_tab *tab_grow(struct trk_intern *in, struct trk_intern_tab *old)
{
    unsigned words = in->words;
    struct trk_intern_tab *n = tab_alloc(words, (old->mask + 1) * 2);
    if (!n)
        return NULL;
    uint64_t k[TRK_INTERN_WORDS];
    for (uint64_t i = 0; i <= old->mask; i++) {
        struct trk_intern_ent *e = trk_intern_slot(old, words, i);
        uint32_t id = atomic_load_explicit(&e->id, memory_order_relaxed);
        if (!id)
            continue;
        uint32_t k32 = atomic_load_explicit(&e->k32, memory_order_relaxed);
        for (unsigned w = 0; w < words; w++)
            k[w] = atomic_load_explicit(&e->k[w], memory_order_relaxed);
        uint64_t slot = 0;
        trk_intern_probe(n, words, k32, k, &slot);
        slot_put(n, words, slot, k32, k, id);
    }
    atomic_store_explicit(&in->tab, n, memory_order_release);
    tab_release(words, old);
    return n;
}

/* pre: lock held. A table with room for one more key: t itself, t doubled,
 * or (t at its cap) a fresh one with t as the previous generation and the
 * generation before given back. NULL when mmap failed. */
static struct trk_intern_tab *make_room(struct trk_intern *in, struct trk_intern_tab *t)
{
    if ((in->count + 1) * 2 <= t->mask + 1)
        return t;
    if (t->mask + 1 < slots_max(in))
        return tab_grow(in, t);
    /* The generation before goes first: never three tables at once. */
    tab_release(in->words, in->prev);
    in->prev = NULL;
    struct trk_intern_tab *n = tab_alloc(in->words, t->mask + 1);
    if (!n)
        return NULL;
    in->prev = t;
    in->prev_end_id = in->next_id;
    in->count = 0;
    trk_own_rotation();
    atomic_store_explicit(&in->tab, n, memory_order_release);
    return n;
}

static uint32_t add(struct trk_intern *in, uint32_t k32, const uint64_t *k, trk_intern_emit_fn emit,
                    void *ctx, int k32_is_id)
{
    unsigned words = in->words;
    uint64_t slot = 0, pslot = 0;
    trk_spin_lock(&in->lock);
    struct trk_intern_tab *t = atomic_load_explicit(&in->tab, memory_order_relaxed);
    uint32_t id = t ? trk_intern_probe(t, words, k32, k, &slot) : 0;
    if (!t || id)
        goto out;
    /* Still known from the previous generation: its id, no new record. */
    int in_prev = in->prev && !(k32_is_id && k32 >= in->prev_end_id);
    uint32_t old = in_prev ? trk_intern_probe(in->prev, words, k32, k, &pslot) : 0;
    struct trk_intern_tab *r = make_room(in, t);
    if (!r)
        goto out;
    if (r != t)
        trk_intern_probe(r, words, k32, k, &slot);
    if (old) {
        id = old;
        in->count++;
        slot_put(r, words, slot, k32, k, id);
    } else if (emit(ctx, in->next_id) == 0) {
        id = in->next_id++;
        in->count++;
        slot_put(r, words, slot, k32, k, id);
    }
out:
    trk_spin_unlock(&in->lock);
    return id;
}

uint32_t trk_intern_add(struct trk_intern *in, uint32_t k32, const uint64_t *k,
                        trk_intern_emit_fn emit, void *ctx)
{
    return add(in, k32, k, emit, ctx, 0);
}

uint32_t trk_intern_add_child(struct trk_intern *in, uint32_t k32, const uint64_t *k,
                              trk_intern_emit_fn emit, void *ctx)
{
    return add(in, k32, k, emit, ctx, 1);
}

int trk_intern_reset(struct trk_intern *in, unsigned words, uint64_t slots)
{
    struct trk_intern_tab *t = tab_alloc(words, slots);
    if (t) {
        /* Init, or a fork child's one thread: the parent's tables are
         * copy-on-write pages nobody here will read again. */
        tab_release(in->words, atomic_load_explicit(&in->tab, memory_order_relaxed));
        tab_release(in->words, in->prev);
        in->prev = NULL;
        in->prev_end_id = 0;
        in->words = words;
        in->count = 0;
        in->next_id = 1;
        atomic_store_explicit(&in->tab, t, memory_order_release);
    }
    atomic_store(&in->lock, 0);
    return t ? 0 : -1;
}

void trk_intern_lock(struct trk_intern *in)
{
    trk_spin_lock(&in->lock);
}

void trk_intern_unlock(struct trk_intern *in)
{
    trk_spin_unlock(&in->lock);
}
