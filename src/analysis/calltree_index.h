/* SPDX-License-Identifier: MIT
 *
 * calltree_index.h - the small open-addressing index behind the call tree's
 * lookups (strings, locations, children, the per-symbolizer frame cache):
 * hash -> entry number, the entries themselves kept by the caller, which
 * compares candidates. Private to calltree.c. Must not: own entries, or let
 * a table fill (index_reserve before every probe that may insert).
 */
#ifndef TRK_CALLTREE_INDEX_H
#define TRK_CALLTREE_INDEX_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TRK_CT_NONE UINT32_MAX

struct trk_ct_index {
    uint32_t *idx; /* entry + 1; 0 = empty */
    uint64_t *hash;
    size_t mask, n;
};

static inline int index_init(struct trk_ct_index *x)
{
    x->mask = 255;
    x->n = 0;
    x->idx = calloc(x->mask + 1, sizeof(*x->idx));
    x->hash = calloc(x->mask + 1, sizeof(*x->hash));
    return x->idx && x->hash ? 0 : -1;
}

static inline void index_free(struct trk_ct_index *x)
{
    free(x->idx);
    free(x->hash);
    memset(x, 0, sizeof(*x));
}

static inline void index_clear(struct trk_ct_index *x)
{
    memset(x->idx, 0, (x->mask + 1) * sizeof(*x->idx));
    x->n = 0;
}

/* Slots of hash, in probe order: call with *pos = SIZE_MAX first. Returns
 * the entry in the next slot with this hash, or TRK_CT_NONE at the first empty
 * slot, leaving *pos there for index_put. */
static inline uint32_t index_next(const struct trk_ct_index *x, uint64_t hash, size_t *pos)
{
    size_t i = *pos == SIZE_MAX ? (size_t)hash & x->mask : (*pos + 1) & x->mask;
    for (;; i = (i + 1) & x->mask) {
        if (!x->idx[i]) {
            *pos = i;
            return TRK_CT_NONE;
        }
        if (x->hash[i] == hash) {
            *pos = i;
            return x->idx[i] - 1;
        }
    }
}

/* Stores entry at pos (the empty slot index_next stopped at, with room
 * made by index_reserve before that probe). */
static inline void index_put(struct trk_ct_index *x, size_t pos, uint64_t hash, uint32_t entry)
{
    x->idx[pos] = entry + 1;
    x->hash[pos] = hash;
    x->n++;
}

/* Makes room for one more entry; call before the probe that may insert, so
 * the table never fills (a full table would make probes endless). Returns
 * 0, or -1 when out of memory (the index is unchanged). */
static inline int index_reserve(struct trk_ct_index *x)
{
    if ((x->n + 1) * 10 < (x->mask + 1) * 7)
        return 0;
    size_t cap = (x->mask + 1) * 2;
    uint32_t *idx = calloc(cap, sizeof(*idx));
    uint64_t *h = calloc(cap, sizeof(*h));
    if (!idx || !h) {
        free(idx);
        free(h);
        return -1;
    }
    for (size_t i = 0; i <= x->mask; i++) {
        if (!x->idx[i])
            continue;
        size_t k = (size_t)x->hash[i] & (cap - 1);
        while (idx[k])
            k = (k + 1) & (cap - 1);
        idx[k] = x->idx[i];
        h[k] = x->hash[i];
    }
    free(x->idx);
    free(x->hash);
    x->idx = idx;
    x->hash = h;
    x->mask = cap - 1;
    return 0;
}

static inline uint64_t mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    return k ^ (k >> 33);
}

static inline uint64_t hash_str(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * UINT64_C(0x100000001b3);
    return mix64(h);
}

static inline uint64_t hash_add(uint64_t h, uint64_t v)
{
    return mix64(h ^ (v + UINT64_C(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2)));
}

#endif /* TRK_CALLTREE_INDEX_H */
