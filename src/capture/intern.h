/* SPDX-License-Identifier: MIT
 *
 * intern.h - the in-process intern table: a key -> dense id map read
 * without locks (the lookup, inline here) and written under a spinlock (the
 * insertion, intern.c). The stack trie ((parent, ip) -> node, stacks.c) and
 * Python's code objects ((code, line table, name) -> id, py_stack.c) are its
 * two users; its memory-ordering argument is at the head of intern.c.
 *
 * A key is one 32-bit word plus `words` 64-bit words (1..TRK_INTERN_WORDS),
 * fixed per table: the stack trie's entry stays 16 bytes. Ids run 1, 2, 3 ...
 * in insertion order; 0 means "none". Never allocates with malloc: tables
 * come from raw mmap and are never unmapped (readers may still probe one);
 * their size is bounded (see struct trk_intern).
 */
#ifndef TRK_CAPTURE_INTERN_H
#define TRK_CAPTURE_INTERN_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/hash.h"
#include "prim/base.h"

#define TRK_INTERN_WORDS 3

/* One slot: id is 0 while empty and is written last, with release. */
struct trk_intern_ent {
    _Atomic uint32_t id;
    _Atomic uint32_t k32;
    _Atomic uint64_t k[];
};

struct trk_intern_tab {
    uint64_t mask;
    unsigned char e[]; /* (mask + 1) slots of trk_intern_stride(words) bytes */
};

/* Bounded: a table doubles until it has max_slots slots; when that one is
 * half full it becomes the previous generation (`prev`, read only under
 * the lock) and an empty table of the same size takes its place. A key
 * found in prev is copied into the new table with its id (its record was
 * written long ago, so an id stays valid for the whole capture); one in
 * neither gets a new id and record. So at most two tables of max_slots
 * are resident, whatever the program does; a key evicted from both costs
 * a second record with a new id, which readers take as any other node
 * (reports merge frames by content). Tables given back are emptied with
 * MADV_DONTNEED, never unmapped: a reader still probing one reads zeros,
 * an empty table, and falls into the locked path. */
struct trk_intern {
    _Atomic(struct trk_intern_tab *) tab; /* NULL until trk_intern_reset */
    _Atomic int lock;
    unsigned words;
    uint64_t count;              /* under lock: keys in tab */
    uint32_t next_id;            /* under lock */
    struct trk_intern_tab *prev; /* under lock: the previous generation, or NULL */
    uint32_t prev_end_id;        /* under lock: next_id when prev was closed */
    uint64_t max_slots;          /* a table's cap, a power of two; 0: TRACKER_TABLE_KB's */
};

static inline uint64_t trk_intern_stride(unsigned words)
{
    return sizeof(struct trk_intern_ent) + (uint64_t)words * sizeof(uint64_t);
}

static inline struct trk_intern_ent *trk_intern_slot(const struct trk_intern_tab *t, unsigned words,
                                                     uint64_t i)
{
    return (struct trk_intern_ent *)(uintptr_t)(t->e + i * trk_intern_stride(words));
}

/* One multiply per word (rotated so the words' order counts), then the full
 * finaliser: the slot is taken from the low bits. */
static inline uint64_t trk_intern_hash(uint32_t k32, const uint64_t *k, unsigned words)
{
    uint64_t x = k32;
    for (unsigned w = 0; w < words; w++)
        x = (x << 23 | x >> 41) ^ k[w] * UINT64_C(0x9E3779B97F4A7C15);
    return trk_mix64(x);
}

/* Probes t for the key: its id, or 0 with *slot the empty slot that ends
 * its probe sequence. Terminates because a table is never over half full. */
static inline uint32_t trk_intern_probe(const struct trk_intern_tab *t, unsigned words,
                                        uint32_t k32, const uint64_t *k, uint64_t *slot)
{
    for (uint64_t i = trk_intern_hash(k32, k, words) & t->mask;; i = (i + 1) & t->mask) {
        struct trk_intern_ent *e = trk_intern_slot(t, words, i);
        uint32_t id = atomic_load_explicit(&e->id, memory_order_acquire);
        if (id == 0) {
            *slot = i;
            return 0;
        }
        if (atomic_load_explicit(&e->k32, memory_order_relaxed) != k32)
            continue;
        unsigned w = 0;
        while (w < words && atomic_load_explicit(&e->k[w], memory_order_relaxed) == k[w])
            w++;
        if (w == words)
            return id;
    }
}

/* Lock-free lookup: the key's id, or 0 when it is not (yet) interned, or
 * is but the table this lookup read was given back under it (growth, a
 * new generation): a 0 only ever means "ask trk_intern_add", which looks
 * again under the lock.
 * words must equal the table's (pass the constant: the probe loop then
 * unrolls). */
static inline uint32_t trk_intern_find(struct trk_intern *in, unsigned words, uint32_t k32,
                                       const uint64_t *k)
{
    const struct trk_intern_tab *t = atomic_load_explicit(&in->tab, memory_order_acquire);
    uint64_t slot;
    return t ? trk_intern_probe(t, words, k32, k, &slot) : 0;
}

/* Called under the table's lock with the id a new key is about to get,
 * before any other thread can see it: emits (and commits) whatever must
 * precede every use of the id. Nonzero: the key is not inserted. */
typedef int (*trk_intern_emit_fn)(void *ctx, uint32_t id);

/* The slow path: takes the lock, looks again, and inserts the key with the
 * next id after emit(ctx, id) succeeded. 0 when emit or growing failed. */
uint32_t trk_intern_add(struct trk_intern *in, uint32_t k32, const uint64_t *k,
                        trk_intern_emit_fn emit, void *ctx) TRK_HIDDEN;

/* trk_intern_add for a table whose k32 is an id of the same table (the
 * stack trie: k32 is the parent node). A parent given its id after the
 * previous generation was closed can have no child there, so that table
 * is not probed for it: on a program whose new stacks add several edges
 * each (import torch: 2.1 M), the probe was a cache miss in a table of
 * TRACKER_TABLE_KB per new edge, for nothing. */
uint32_t trk_intern_add_child(struct trk_intern *in, uint32_t k32, const uint64_t *k,
                              trk_intern_emit_fn emit, void *ctx) TRK_HIDDEN;

static inline uint32_t trk_intern_get(struct trk_intern *in, unsigned words, uint32_t k32,
                                      const uint64_t *k, trk_intern_emit_fn emit, void *ctx)
{
    uint32_t id = trk_intern_find(in, words, k32, k);
    if (TRK_LIKELY(id))
        return id;
    return trk_intern_add(in, k32, k, emit, ctx);
}

/* A fresh empty table of `slots` (a power of two) for keys of `words`
 * words; ids start again at 1 and the lock is released (init, fork child).
 * The old tables stay mapped, their pages given back. -1 (nothing changed
 * but the lock) when mmap failed. */
int trk_intern_reset(struct trk_intern *in, unsigned words, uint64_t slots) TRK_HIDDEN;
/* Held across fork, so the child never inherits a half-written slot. */
void trk_intern_lock(struct trk_intern *in) TRK_HIDDEN;
void trk_intern_unlock(struct trk_intern *in) TRK_HIDDEN;

#endif /* TRK_CAPTURE_INTERN_H */
