/* SPDX-License-Identifier: MIT
 *
 * leak_table.c - the exit scan's live set table (leak_table.h): its
 * memory, growth and re-basing, the side table of sizes past an entry's
 * 32 bits, and the read-out for the scan. The decoder that fills it, with
 * the table's per-record operations inlined, is leak_live.c. Must not:
 * allocate (raw mmap only, counted as the leak scan's own memory).
 */
#include <string.h>

#include "capture/leak_table.h"
#include "capture/leakscan.h"
#include "capture/own_mem.h"
#include "prim/sys.h"

/* Counted as the tracker's own memory (own_mem.h): its peak is what the
 * scan cost the process at exit. */
void *trk_lmem(size_t len)
{
    return len ? trk_own_map(TRK_OWN_LEAKSCAN, len) : NULL;
}

void trk_lmem_free(void *p, size_t len)
{
    trk_own_unmap(TRK_OWN_LEAKSCAN, p, len);
}

static inline int ent_keep(const struct table *t, const struct ent *e)
{
    return e->addr && ((e->seq & LIVE_BIT) || ent_seq(t, e) >= t->wm);
}

/* Up to this many slots (2 MiB) a rehash keeps the table it leaves for
 * the next one, which takes it when it needs that size or up to 4 times
 * less: the writer's live set with several threads (FREEs kept as entries
 * until a watermark, struct table) rehashes every few thousand FREEs at
 * about the same size, and a fresh mapping each time cost its page faults
 * and, at the unmap, a TLB shootdown interrupting the program's threads on
 * the other CPU (allocbench, 2 threads: 22,000 -> 6,000 page faults, CPU
 * -5 to -10%, bench/results_twothread.md). Bigger ones (`import torch`) go
 * back as the rehash reads them: a spare would double them. */
#define SPARE_MAX (1u << 17)

/* nc empty slots: the spare when it has that size (trk_ltable_rehash makes nc
 * the spare's size where it may), else fresh memory. */
static struct ent *table_mem(struct table *t, size_t nc)
{
    if (t->spare && t->spare_cap == nc) {
        struct ent *nv = t->spare;
        t->spare = NULL;
        memset(nv, 0, nc * sizeof(*nv));
        return nv;
    }
    return trk_lmem(nc * sizeof(struct ent));
}

/* The slots a rehash left (cap of them): kept as the spare if small
 * enough, any older spare given back. */
void trk_ltable_keep_spare(struct table *t, struct ent *v, size_t cap)
{
    trk_lmem_free(t->spare, t->spare ? t->spare_cap * sizeof(*v) : 0);
    t->spare = NULL;
    if (v && cap <= SPARE_MAX) {
        t->spare = v;
        t->spare_cap = cap;
    } else {
        trk_lmem_free(v, v ? cap * sizeof(*v) : 0);
    }
}

/* A table read in slot order fills its successor (or the scan's block
 * list) in order, so where the pages it has passed go back as it goes (1
 * MiB at a time) the two hold about one table's pages at any time, not
 * two: `import torch` 2.11's table grew from 12 to 24 MiB with both held.
 * (Each give-back interrupts the program's other CPU for its TLB: 64 KiB
 * at a time made 300 such interrupts in one rehash of that table.)
 * walk_pass: slot i was read; walk_end: the walk is done, v unmapped. */
#define WALK_STEP (256 * ENT_PAGE)

static inline void walk_pass(struct ent *v, size_t i, size_t *released)
{
    if ((i + 1) % WALK_STEP == 0) {
        trk_own_release(TRK_OWN_LEAKSCAN, v + i + 1 - WALK_STEP, WALK_STEP * sizeof(*v));
        *released += WALK_STEP * sizeof(*v);
    }
}

static void walk_end(struct ent *v, size_t cap, size_t released)
{
    trk_own_unmap_rest(TRK_OWN_LEAKSCAN, v, cap * sizeof(*v), released);
}

/* Prefaults (trk_sys_prefault) the pages of a fresh table up to slot k's
 * and the next one before the rehash reads them: its probes read before
 * they write. The walk fills the new table in order and touches ahead of
 * it, so that the old table's pages still go back as fast as the new
 * one's come; an entry of a run that wrapped (near the end, early in the
 * walk) touches only its own pages (touching twice changes nothing).
 * *pg: the pages below it are touched. */
static inline void touch_to(struct ent *nv, size_t nc, size_t *pg, size_t k)
{
    size_t want = k / ENT_PAGE + 2, pages = (nc + ENT_PAGE - 1) / ENT_PAGE;
    if (want <= *pg)
        return;
    size_t from = want - *pg > 16 ? want - 2 : *pg; /* a jump: its pages only */
    if (want > pages)
        want = pages;
    trk_sys_prefault(nv + from * ENT_PAGE, (want - from) * ENT_PAGE * sizeof(*nv));
    if (from == *pg)
        *pg = want;
}

/* Rehash into a table sized for the entries still needed, so that the
 * next rehash is at least cap / 4 inserts away (amortized O(1) a put); it
 * may shrink. Up to SPARE_MAX slots (allocbench's tables, a thread's
 * churn) half full after it and rehashed 3/4 full: short probes. Bigger
 * ones are memory (a live heap of millions of blocks): 11/20 full after
 * it and rehashed 4/5 full, 20 to 29 bytes a live block; a table whose
 * every entry is needed (the writer's cycles leave no dead ones: struct
 * table) then grows by 1.45 times. (1/2 to 3/4 held `import torch` 2.11's
 * 626,000 blocks in 18 MiB, not 14, for 7% fewer instructions; 7/8 cost
 * 26% more, mostly in removals' backward shifts over long runs. Doubling
 * powers of two, 3/8 to 3/4 full, cost 43 bytes a live block after a
 * growth, 64 before entries were 16 bytes.) The seqs are re-based to the
 * watermark on the way. */
static size_t table_size(size_t keep, size_t *lim)
{
    int big = 2 * keep > SPARE_MAX;
    size_t nc = big ? keep / 11 * 20 : 2 * keep < 4096 ? 4096 : 2 * keep;
    nc = (nc + ENT_PAGE - 1) / ENT_PAGE * ENT_PAGE;
    *lim = big ? nc / 5 * 4 : nc / 4 * 3;
    return nc;
}

int trk_ltable_rehash(struct table *t)
{
    size_t keep = 0, old = table_slots(t);
    for (size_t i = 0; i < old; i++)
        keep += ent_keep(t, &t->v[i]);
    size_t lim, nc = table_size(keep, &lim);
    /* a spare up to 4 times that size is taken whole: fewer rehashes; one
     * smaller than the table now needs goes (a table that outgrew it had
     * kept 2 MiB for nothing) */
    if (t->spare && nc <= t->spare_cap && t->spare_cap <= 4 * nc) {
        nc = t->spare_cap; /* at most SPARE_MAX: a small table's */
        lim = nc / 4 * 3;
    } else if (t->spare && t->spare_cap < nc)
        trk_ltable_keep_spare(t, NULL, 0);
    struct ent *nv = table_mem(t, nc);
    if (!nv)
        return -1;
    uint64_t base = t->wm > t->base ? t->wm : t->base;
    int release = old > SPARE_MAX;
    size_t released = 0, touched = 0;
    for (size_t i = 0; i < old; i++) {
        const struct ent *e = &t->v[i];
        if (ent_keep(t, e)) {
            size_t k = slot_of(e->addr, nc);
            touch_to(nv, nc, &touched, k);
            while (nv[k].addr)
                k = k + 1 == nc ? 0 : k + 1;
            nv[k].addr = e->addr;
            nv[k].size = e->size;
            nv[k].seq = ent_rebased(t, e, base);
        }
        if (release)
            walk_pass(t->v, i, &released);
    }
    if (release)
        walk_end(t->v, old, released);
    else
        trk_ltable_keep_spare(t, t->v, old);
    t->v = nv;
    t->cap = nc;
    t->n = keep;
    t->lim = lim;
    t->base = base;
    return 0;
}

/* An event 2^31 or more past the base (struct ent): the entries re-based
 * to the watermark, in place. Returns -1 where seq is still that far past
 * it (or below it: no event still to come is), and the set cannot go on. */
int trk_ltable_rebase(struct table *t, uint64_t seq)
{
    uint64_t base = t->wm;
    if (seq < base || seq - base >= REL_MASK || base <= t->base)
        return -1;
    for (size_t i = 0; i < table_slots(t); i++) {
        struct ent *e = &t->v[i];
        if (e->addr)
            e->seq = ent_rebased(t, e, base);
    }
    t->base = base;
    return 0;
}

/* ---- Sizes of 4 GiB - 1 and more (struct bigtab) ------------------------ */

/* The table's live entry at addr still says its size is in bigtab. */
static int big_needed(const struct table *t, uint64_t addr)
{
    if (!t->v)
        return 0;
    const struct ent *e = ent_find(t->v, t->cap, addr);
    return e->addr == addr && (e->seq & LIVE_BIT) && e->size == SIZE_BIG;
}

static void big_set(struct bigtab *b, uint64_t addr, uint64_t size)
{
    size_t k = slot_of(addr, b->cap);
    while (b->v[k].addr && b->v[k].addr != addr)
        k = k + 1 == b->cap ? 0 : k + 1;
    b->n += !b->v[k].addr;
    b->v[k].addr = addr;
    b->v[k].size = size;
}

/* addr's exact size, before its entry says SIZE_BIG. A full side table is
 * rebuilt with the entries still needed, at least twice their number. */
int trk_ltable_big_put(struct table *t, uint64_t addr, uint64_t size)
{
    struct bigtab *b = &t->big;
    if ((b->n + 1) * 4 > b->cap * 3) {
        size_t keep = 0;
        for (size_t i = 0; i < b->cap; i++)
            keep += b->v[i].addr && big_needed(t, b->v[i].addr);
        size_t nc = 256;
        while (nc < 4 * (keep + 1))
            nc *= 2;
        struct bigtab nb = {.v = trk_lmem(nc * sizeof(*b->v)), .cap = nc};
        if (!nb.v)
            return -1;
        for (size_t i = 0; i < b->cap; i++)
            if (b->v[i].addr && big_needed(t, b->v[i].addr))
                big_set(&nb, b->v[i].addr, b->v[i].size);
        trk_lmem_free(b->v, b->cap * sizeof(*b->v));
        *b = nb;
    }
    big_set(b, addr, size);
    return 0;
}

static uint64_t big_get(const struct bigtab *b, uint64_t addr)
{
    if (!b->cap)
        return SIZE_BIG;
    size_t k = slot_of(addr, b->cap);
    while (b->v[k].addr && b->v[k].addr != addr)
        k = k + 1 == b->cap ? 0 : k + 1;
    return b->v[k].addr ? b->v[k].size : SIZE_BIG;
}

/* ---- The table's life and its read-out ---------------------------------- */

void trk_ltable_free(struct table *t)
{
    trk_lmem_free(t->v, table_slots(t) * sizeof(*t->v));
    t->v = NULL;
    trk_ltable_keep_spare(t, NULL, 0);
    trk_lmem_free(t->dels, t->del_cap * sizeof(*t->dels));
    trk_lmem_free(t->big.v, t->big.cap * sizeof(*t->big.v));
    memset(t, 0, sizeof(*t));
}

size_t trk_ltable_live(const struct table *t)
{
    size_t n = 0;
    for (size_t i = 0; i < table_slots(t); i++)
        n += t->v[i].addr && (t->v[i].seq & LIVE_BIT);
    return n;
}

void trk_ltable_each_live(struct table *t, int release,
                          void (*fn)(void *ctx, uint64_t addr, uint64_t size), void *ctx)
{
    size_t released = 0;
    for (size_t i = 0; i < table_slots(t); i++) {
        const struct ent *e = &t->v[i];
        if (e->addr && (e->seq & LIVE_BIT))
            fn(ctx, e->addr, e->size == SIZE_BIG ? big_get(&t->big, e->addr) : e->size);
        if (release)
            walk_pass(t->v, i, &released);
    }
    if (release && t->v) {
        walk_end(t->v, t->cap, released);
        t->v = NULL;
        trk_ltable_free(t);
    }
}
