/* SPDX-License-Identifier: MIT
 *
 * live_map.h - the live heap set: an open-addressing hash map from block
 * address to what the profile needs to know when the block is freed: its
 * requested size, its site, the allocating thread's allocation ordinal and
 * its timestamp (the temporary-allocation rules). Owns its memory, which
 * stays proportional to the live set (tens of millions of blocks, 32 bytes
 * each). Must not: know about events or statistics; address 0 is reserved as
 * the empty key.
 */
#ifndef TRK_LIVE_MAP_H
#define TRK_LIVE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sizes are clamped to 56 bits (no allocation can be larger); the upper 8
 * bits of that word hold bits 32..39 of the ordinal. */
#define TRK_LIVE_SIZE_MASK ((UINT64_C(1) << 56) - 1)
/* Ordinals are kept modulo 2^40: the temporary rule only compares ordinals a
 * few allocations apart, so a wrap after 10^12 allocations of one thread
 * could only misjudge a block freed exactly k * 2^40 allocations later. */
#define TRK_LIVE_ORD_MASK ((UINT64_C(1) << 40) - 1)

/* What the map stores per block. */
struct trk_live_block {
    uint64_t size; /* requested bytes, clamped to TRK_LIVE_SIZE_MASK */
    uint64_t ts;   /* allocation time */
    uint64_t ord;  /* allocating thread's allocation ordinal, mod 2^40 */
    uint32_t site; /* the profile's site index */
};

struct trk_live_slot {
    uint64_t addr; /* 0 = empty */
    uint64_t meta; /* size | ord bits 32..39 << 56 */
    uint64_t ts;
    uint32_t site;
    uint32_t ord_lo;
};

struct trk_live_map {
    struct trk_live_slot *slots;
    size_t mask;    /* capacity - 1; capacity is a power of two */
    unsigned shift; /* 64 - log2(capacity) */
    size_t count;
    size_t grow_at;
};

/* Returns 0, or -1 when out of memory. */
int trk_live_map_init(struct trk_live_map *m);
void trk_live_map_free(struct trk_live_map *m);

/* Inserts or replaces addr (nonzero). Returns 1 when it replaced an entry
 * (*old set), 0 when it inserted, -1 when out of memory. */
int trk_live_map_put(struct trk_live_map *m, uint64_t addr, const struct trk_live_block *b,
                     struct trk_live_block *old);

/* Removes addr. Returns true and sets *out when it was present; false
 * otherwise. */
bool trk_live_map_remove(struct trk_live_map *m, uint64_t addr, struct trk_live_block *out);

/* Whether addr is live; sets *out when it is. */
bool trk_live_map_get(const struct trk_live_map *m, uint64_t addr, struct trk_live_block *out);

/* Fibonacci hashing: the high bits of the product mix in every address bit,
 * so 16-byte aligned heap addresses still spread evenly. */
static inline size_t trk_live_map_home(const struct trk_live_map *m, uint64_t addr)
{
    return (size_t)((addr * UINT64_C(0x9E3779B97F4A7C15)) >> m->shift);
}

/* Hints that addr will be looked up soon: a large live set misses the cache
 * on nearly every operation, so callers prefetch a few events ahead. */
static inline void trk_live_map_prefetch(const struct trk_live_map *m, uint64_t addr)
{
    __builtin_prefetch(&m->slots[trk_live_map_home(m, addr)], 1, 1);
}

static inline size_t trk_live_map_count(const struct trk_live_map *m)
{
    return m->count;
}

#endif /* TRK_LIVE_MAP_H */
