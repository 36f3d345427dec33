/* SPDX-License-Identifier: MIT
 *
 * leak_table.h - the exit scan's live set, as leak_live.c keeps it (an
 * address's latest event, in a table fed by a decoder of the capture's
 * bytes) and leak_track.c feeds it (the writer's pieces as it writes them,
 * or the file read back). Private to src/capture: the decoder inlines the
 * table's calls, so both live in leak_live.c; the feeding does not.
 */
#ifndef TRK_CAPTURE_LEAK_TABLE_H
#define TRK_CAPTURE_LEAK_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "format/record.h"
#include "prim/base.h"

/* addr -> the latest event at it: 24 bytes, the live bit in seq's top bit
 * (a global event count never reaches 2^63). */
struct ent {
    uint64_t addr, seqlive, size;
};

#define LIVE_BIT (1ull << 63)

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
    size_t cap, n;  /* cap a power of two: the hashed range */
    unsigned shift; /* 64 - log2(cap) */
    size_t lim;     /* rehash when n reaches it: cap * 3 / 4 */
    uint64_t wm;
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

static inline size_t table_slots(const struct table *t)
{
    return t->v ? t->cap : 0;
}

/* A table sized for what it holds (the first call makes it). Returns 0, or
 * -1 on no memory. */
int trk_ltable_rehash(struct table *t) TRK_HIDDEN;
/* Takes the slots a rehash left (NULL: gives the spare back). */
void trk_ltable_keep_spare(struct table *t, struct ent *v, size_t cap) TRK_HIDDEN;
/* One piece of a stream (its raw bytes, at its state st) into the table.
 * Returns 0, or -1 where the piece is malformed or memory ran out. */
int trk_ltable_decode(struct table *t, struct trk_rec_state *st, const uint8_t *p,
                      size_t len) TRK_HIDDEN;

#endif
