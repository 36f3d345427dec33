/* SPDX-License-Identifier: MIT
 *
 * leak_table.h - the exit scan's live set: an address's latest event, in a
 * table (leak_table.c) fed by a decoder of the capture's bytes
 * (leak_live.c, which inlines the table's per-record operations), which
 * leak_track.c feeds in turn (the writer's pieces as it writes them, or
 * the file read back). Private to src/capture.
 */
#ifndef TRK_CAPTURE_LEAK_TABLE_H
#define TRK_CAPTURE_LEAK_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "format/record.h"
#include "prim/base.h"

/* addr -> the latest event at it, 16 bytes: the table is the tracker's
 * largest memory in a program with a big live heap (24-byte entries at
 * 3/8 to 3/4 full held 24 MiB, and 36 MiB while growing, of `import torch`
 * 2.11's +63 MB peak RSS; bench/results_gpu.md). Two fields are narrowed:
 *
 * seq: the live bit (31) and the event's seq relative to the table's
 * `base` (bits 0-30: seq - base + 1, or 0 for an event older than base).
 * base is at most the watermark, so every event still to come has a seq
 * at or above it: an entry older than base loses to any of them, and 0
 * says so. A rehash re-bases to the watermark; an event 2^31 or more past
 * base re-bases at once (trk_ltable_rebase), and one still that far past
 * the watermark (2^31 events while a thread held the watermark back) ends
 * the set: the scan then says it was not done, rather than guess.
 *
 * size: the requested size, or SIZE_BIG for one of 4 GiB - 1 or more,
 * whose exact size is in the table's `big` side table (struct bigtab).
 *
 * addr 0: an empty slot (no heap block starts at 0). */
struct ent {
    uint64_t addr;
    uint32_t seq, size;
};

_Static_assert(sizeof(struct ent) == 16, "a table slot is 16 bytes");

#define LIVE_BIT (1u << 31)
#define REL_MASK (LIVE_BIT - 1)
#define SIZE_BIG UINT32_MAX

/* addr -> size of the blocks whose size did not fit an entry: looked up
 * only when the scan collects the set. Linear probing, never deleting:
 * stale entries (freed blocks) go at its rebuild (leak_live.c). */
struct bigtab {
    struct {
        uint64_t addr, size;
    } * v;
    size_t cap, n;
};

/* wm: the latest WATERMARK read (docs/FORMAT.md §2): every event not read
 * yet has seq >= wm. A FREE entry below it can no longer hide an older event
 * (none is left to read) and only says "not live", as no entry does: it is
 * dropped at the next rehash. Without that the table held every address the
 * program ever used (128 MiB for `import torch`) instead of those live or
 * freed since the last watermark (~10 ms).
 *
 * Linear probing, wrapping at the end. (Spare slots past the end instead
 * of the wrap, with a grow where a run reached them, doubled the table of
 * `import torch`: at 3/4 full, runs of hundreds of slots are normal in a
 * table of a million.) */

/* A FREE the writer's cycle made final (see struct table). */
struct del {
    uint64_t addr, seq;
};

struct table {
    struct ent *v;
    size_t cap, n; /* cap: any multiple of ENT_PAGE; slots by fastrange */
    size_t lim;    /* rehash when n reaches it: 3/4 or 7/8 of cap (trk_ltable_rehash) */
    uint64_t wm;
    uint64_t base; /* of the entries' relative seqs (struct ent) */
    struct bigtab big;
    /* The writer's cycle (trk_ltrack_cycle; 0 elsewhere): every event
     * below `bound` is in a piece of this cycle or an earlier one. A FREE
     * below it then leaves no entry (it removes the address's), for no
     * older event of the address can come after this cycle; within the
     * cycle, a later piece may still hold one, so the FREE goes to `dels`,
     * and a later piece of the cycle that touches the heap first puts them
     * back as the entries they would have been (`armed`, replay). Without
     * that every FREE of a cycle (~25,000 per 10 ms on allocbench) stayed
     * in the table until the next watermark and rehash: a 1.5 MiB table,
     * a cache miss or two per event, ~20 ns of the writer's ~30. */
    uint64_t bound;
    struct del *dels;
    size_t ndel, del_cap;
    int armed, replayed;
    /* The piece being read is the cycle's last (trk_ltrack_last): its
     * FREEs below the bound need no log, no piece of the cycle follows.
     * With one allocating thread that is every FREE: no log at all (it was
     * 16 bytes a FREE written and 1 MiB held, ~4 instructions and most of
     * the writer's cache-line writes an event). `closed`: that piece was
     * read; another one in the cycle would break the proof. */
    int last, closed;
    /* The table a rehash left, kept for the next one of the same size
     * (trk_ltable_rehash): NULL, or spare_cap slots. */
    struct ent *spare;
    size_t spare_cap;
};

/* Slots a page of the table holds: capacities are whole pages, so that a
 * rehash can give the old table back a page range at a time. */
#define ENT_PAGE (4096 / sizeof(struct ent))

static inline size_t table_slots(const struct table *t)
{
    return t->v ? t->cap : 0;
}

/* Fibonacci hashing scaled to the table (fastrange: the product's top
 * bits times cap, cap any size); its middle bits, taken before, left runs
 * of neighbouring heap addresses in neighbouring slots, and the probes
 * twice as long. The slot grows with the hash whatever cap is, so a table
 * read in slot order is read in hash order: a rehash fills the new table
 * front to back as it reads the old one (trk_ltable_rehash). */
static inline size_t slot_of(uint64_t a, size_t cap)
{
    uint64_t h = (a >> 4) * 0x9E3779B97F4A7C15ull;
    return (size_t)(((unsigned __int128)h * cap) >> 64);
}

/* The entry's seq (struct ent), or 0 for one older than the base. */
static inline uint64_t ent_seq(const struct table *t, const struct ent *e)
{
    uint32_t rel = e->seq & REL_MASK;
    return rel ? t->base + rel - 1 : 0;
}

/* e's seq field re-based from the table's base to `base` (at least it,
 * and at most REL_MASK - 1 below every seq the table holds), live bit kept. */
static inline uint32_t ent_rebased(const struct table *t, const struct ent *e, uint64_t base)
{
    uint64_t sq = ent_seq(t, e);
    return (e->seq & LIVE_BIT) | (uint32_t)(sq < base ? 0 : sq - base + 1);
}

/* The slot holding addr, or the empty slot ending its probe (linear
 * probing over cap slots of v, wrapping). */
static inline struct ent *ent_find(struct ent *v, size_t cap, uint64_t addr)
{
    struct ent *e = &v[slot_of(addr, cap)], *end = v + cap;
    while (e->addr != addr && e->addr)
        e = e + 1 == end ? v : e + 1;
    return e;
}

/* Re-bases the entries to the watermark for an event 2^31 or more past
 * the base (struct ent). Returns -1 where seq is still that far past it (or
 * below it: no event still to come is), and the set cannot go on. */
int trk_ltable_rebase(struct table *t, uint64_t seq) TRK_HIDDEN;
/* addr's exact size, before its entry says SIZE_BIG. 0, or -1 on no memory. */
int trk_ltable_big_put(struct table *t, uint64_t addr, uint64_t size) TRK_HIDDEN;

/* A table sized for what it holds (the first call makes it). Returns 0, or
 * -1 on no memory. */
int trk_ltable_rehash(struct table *t) TRK_HIDDEN;
/* Takes the slots a rehash left (NULL: gives the spare back). */
void trk_ltable_keep_spare(struct table *t, struct ent *v, size_t cap) TRK_HIDDEN;
/* Gives back all of the table's memory; t is then empty. */
void trk_ltable_free(struct table *t) TRK_HIDDEN;
/* One piece of a stream (its raw bytes, at its state st) into the table.
 * Returns 0, or -1 where the piece is malformed or memory ran out. */
int trk_ltable_decode(struct table *t, struct trk_rec_state *st, const uint8_t *p,
                      size_t len) TRK_HIDDEN;
/* The live blocks, each once, in slot order: fn(ctx, addr, size) for
 * each. With `release`, the table's pages are given back as the walk
 * passes them (the scan's copy grows as the table goes) and the table is
 * freed after. */
void trk_ltable_each_live(struct table *t, int release,
                          void (*fn)(void *ctx, uint64_t addr, uint64_t size),
                          void *ctx) TRK_HIDDEN;
/* Live entries in the table. */
size_t trk_ltable_live(const struct table *t) TRK_HIDDEN;

#endif
