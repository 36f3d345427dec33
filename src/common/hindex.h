/* SPDX-License-Identifier: MIT
 *
 * hindex.h - the open-addressing index behind every interning table outside
 * the traced process (the call tree's strings, locations, children and
 * frame cache; the reports' locations and stacks; the flamegraph's keys):
 * hash -> entry number, the entries themselves kept by the caller, which
 * compares candidates. Header-only; allocates with calloc, so not for the
 * preload. Must not: own entries, or let a table fill (trk_hindex_reserve
 * before every probe that may insert).
 */
#ifndef TRK_HINDEX_H
#define TRK_HINDEX_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

#define TRK_HINDEX_NONE UINT32_MAX

struct trk_hindex {
    uint32_t *idx; /* entry + 1; 0 = empty */
    uint64_t *hash;
    size_t mask, n;
};

static inline int trk_hindex_init(struct trk_hindex *x)
{
    x->mask = 255;
    x->n = 0;
    x->idx = calloc(x->mask + 1, sizeof(*x->idx));
    x->hash = calloc(x->mask + 1, sizeof(*x->hash));
    return x->idx && x->hash ? 0 : -1;
}

static inline void trk_hindex_free(struct trk_hindex *x)
{
    free(x->idx);
    free(x->hash);
    memset(x, 0, sizeof(*x));
}

static inline void trk_hindex_clear(struct trk_hindex *x)
{
    if (x->idx)
        memset(x->idx, 0, (x->mask + 1) * sizeof(*x->idx));
    x->n = 0;
}

/* Slots of hash, in probe order: call with *pos = SIZE_MAX first. Returns
 * the entry in the next slot with this hash, or TRK_HINDEX_NONE at the first empty
 * slot, leaving *pos there for trk_hindex_put. */
static inline uint32_t trk_hindex_next(const struct trk_hindex *x, uint64_t hash, size_t *pos)
{
    if (!x->idx) { /* zeroed, never reserved: empty */
        *pos = 0;
        return TRK_HINDEX_NONE;
    }
    size_t i = *pos == SIZE_MAX ? (size_t)hash & x->mask : (*pos + 1) & x->mask;
    for (;; i = (i + 1) & x->mask) {
        if (!x->idx[i]) {
            *pos = i;
            return TRK_HINDEX_NONE;
        }
        if (x->hash[i] == hash) {
            *pos = i;
            return x->idx[i] - 1;
        }
    }
}

/* Stores entry at pos (the empty slot trk_hindex_next stopped at, with room
 * made by trk_hindex_reserve before that probe). */
static inline void trk_hindex_put(struct trk_hindex *x, size_t pos, uint64_t hash, uint32_t entry)
{
    x->idx[pos] = entry + 1;
    x->hash[pos] = hash;
    x->n++;
}

/* Makes room for one more entry; call before the probe that may insert, so
 * the table never fills (a full table would make probes endless). Returns
 * 0, or -1 when out of memory (the index is unchanged). */
static inline int trk_hindex_reserve(struct trk_hindex *x)
{
    if (x->idx && (x->n + 1) * 10 < (x->mask + 1) * 7)
        return 0;
    size_t cap = x->idx ? (x->mask + 1) * 2 : 256;
    uint32_t *idx = calloc(cap, sizeof(*idx));
    uint64_t *h = calloc(cap, sizeof(*h));
    if (!idx || !h) {
        free(idx);
        free(h);
        return -1;
    }
    for (size_t i = 0; x->idx && i <= x->mask; i++) {
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

#endif /* TRK_HINDEX_H */
