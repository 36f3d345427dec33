/* SPDX-License-Identifier: MIT
 *
 * leak_live.c - the heap blocks live at exit (leakscan.h): the decoder that
 * feeds the table of each address's event with the highest seq
 * (leak_table.c) the chunks' records the way docs/FORMAT.md §2 and §4
 * define them, with the table's per-record operations inlined. Keeping
 * the highest seq is order-independent, so streams are read in file order
 * without merging them. What feeds it, the writer's pieces or the file
 * read back, is leak_track.c's. The hooks keep no table for the scan. Must
 * not: allocate (raw mmap only) or trust the bytes beyond what it needs.
 */
#include <string.h>

#include "capture/leak_table.h"
#include "capture/leakscan.h"
#include "common/varint.h"
#include "format/record.h"

static int table_put_slow(struct table *t, uint64_t addr, uint64_t seq, int live, uint64_t size);
static int free_final(struct table *t, uint64_t addr, uint64_t seq);
static int replay(struct table *t);

/* Empties the slot e (linear probing's backward shift: an entry further
 * on in the run whose home is not between the hole and itself moves into
 * the hole, so that no probe meets an empty slot before its entry). The
 * caller counts it out. */
static inline void table_unlink(struct ent *v, size_t cap, struct ent *e)
{
    size_t i = (size_t)(e - v), j = i;
    for (;;) {
        j = j + 1 == cap ? 0 : j + 1;
        if (!v[j].addr) /* never full: a run ends */
            break;
        size_t h = slot_of(v[j].addr, cap);
        if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
            v[i] = v[j];
            i = j;
        }
    }
    v[i].addr = 0;
}

/* seq relative to the base (struct ent), at most REL_MASK; re-based first
 * where it is more. -1 (as a uint64_t): the set cannot go on
 * (trk_ltable_rebase). */
static inline uint64_t rel_of(struct table *t, uint64_t seq)
{
    uint64_t rel = seq - t->base + 1; /* 0 (seq base - 1) says "older", as it is */
    if (TRK_UNLIKELY(rel > REL_MASK)) {
        if (trk_ltable_rebase(t, seq))
            return UINT64_MAX;
        rel = seq - t->base + 1;
    }
    return rel;
}

/* Inlined: called once or twice a record, its call cost was a third of it. */
__attribute__((always_inline)) static inline int table_put(struct table *t, uint64_t addr,
                                                           uint64_t seq, int live, uint64_t size)
{
    if (!addr)
        return 0;
    if (TRK_UNLIKELY(t->armed) && replay(t))
        return -1;
    if (!live && seq < t->bound)
        return free_final(t, addr, seq);
    if (t->n >= t->lim && trk_ltable_rehash(t))
        return -1;
    uint64_t rel = rel_of(t, seq);
    if (rel > REL_MASK)
        return -1;
    struct ent *e = ent_find(t->v, t->cap, addr);
    if (!e->addr) {
        t->n++;
        e->addr = addr;
    } else if ((e->seq & REL_MASK) > rel) {
        return 0; /* a later event of another stream already decided it */
    }
    if (TRK_UNLIKELY(size >= SIZE_BIG)) {
        if (trk_ltable_big_put(t, addr, size))
            return -1;
        size = SIZE_BIG;
    }
    e->seq = (uint32_t)rel | (live ? LIVE_BIT : 0);
    e->size = (uint32_t)size;
    return 0;
}

/* table_put after a rehash (not inlined: the inlined one's rare path). */
static __attribute__((noinline)) int table_put_slow(struct table *t, uint64_t addr, uint64_t seq,
                                                    int live, uint64_t size)
{
    return table_put(t, addr, seq, live, size);
}

/* The cycle's FREEs put back as entries (a later piece of the cycle
 * touches the heap, or the log is full): the rest of the cycle keeps its
 * FREEs as entries too. */
static int replay(struct table *t)
{
    size_t n = t->ndel;
    t->ndel = 0;
    t->armed = 0;
    t->bound = 0;
    t->replayed = 1;
    for (size_t i = 0; i < n; i++)
        if (table_put(t, t->dels[i].addr, t->dels[i].seq, 0, 0))
            return -1;
    return 0;
}

/* At most this many FREEs a cycle are logged (1 MiB); past it, replay. */
#define DEL_MAX (1u << 16)

/* A FREE below the cycle's bound: the address's entry goes (if older),
 * the FREE is logged. */
static __attribute__((noinline)) int free_final(struct table *t, uint64_t addr, uint64_t seq)
{
    if (!t->last && t->ndel == t->del_cap) {
        size_t nc = t->del_cap ? 2 * t->del_cap : 4096;
        struct del *nv = nc <= DEL_MAX ? trk_lmem(nc * sizeof(*nv)) : NULL;
        if (!nv) {
            if (replay(t))
                return -1;
            return table_put(t, addr, seq, 0, 0);
        }
        if (t->dels)
            memcpy(nv, t->dels, t->ndel * sizeof(*nv));
        trk_lmem_free(t->dels, t->del_cap * sizeof(*nv));
        t->dels = nv;
        t->del_cap = nc;
    }
    uint64_t rel = rel_of(t, seq);
    if (rel > REL_MASK)
        return -1;
    struct ent *e = ent_find(t->v, t->cap, addr);
    if (e->addr && (e->seq & REL_MASK) <= rel) {
        table_unlink(t->v, t->cap, e);
        t->n--;
    }
    if (!t->last)
        t->dels[t->ndel++] = (struct del){addr, seq};
    return 0;
}

/* Python's own allocator's blocks live inside its arenas (mmaps, which are
 * scanned as roots); they are not heap blocks of their own here. */
static int is_heap_kind(unsigned k)
{
    return k < TRK_ALLOC_PYMALLOC || k > TRK_ALLOC_PYFREE;
}

static int apply(struct table *t, const struct trk_rec *r)
{
    if (!is_heap_kind(r->kind))
        return 0;
    switch (r->rclass) {
    case TRK_RC_ALLOC:
        return table_put(t, r->addr, r->seq, 1, r->size);
    case TRK_RC_FREE:
        return table_put(t, r->addr, r->seq, 0, 0);
    case TRK_RC_REALLOC:
        if (table_put(t, r->addr, r->seq, 0, 0))
            return -1;
        return table_put(t, r->addr2, r->seq2, 1, r->size);
    default:
        return 0;
    }
}

/* Varints read a word at a time, so the fast paths take only records that
 * start SLACK bytes or more before the piece's end (a compact record reads
 * at most 1 + 5 * 8 + 8 bytes): pieces are read in place, in the writer's
 * ring too (trk_ltrack_piece), and nothing past them may be touched. The
 * last few records of a piece go to the exact decoders. */
#define SLACK 64

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;
    __builtin_memcpy(&v, p, 8); /* -fno-builtin: a call otherwise */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

#define VARINT_STOPS 0x8080808080808080ull

/* The varint at *pp if it has at most 8 bytes (every one a heap record's
 * fields hold below 2^56), branch-free past the two shortest: returns 0, or
 * 1 to leave the record to the exact decoder. */
static inline int get_var8(const uint8_t **pp, uint64_t *out)
{
    uint64_t w = load_le64(*pp);
    if (!(w & 0x80)) {
        *out = w & 0x7f;
        *pp += 1;
        return 0;
    }
    if (!(w & 0x8000)) {
        *out = (w & 0x7f) | ((w >> 1) & 0x3f80);
        *pp += 2;
        return 0;
    }
    if (!(w & 0x800000)) { /* a heap address delta's usual length */
        *out = (w & 0x7f) | ((w >> 1) & 0x3f80) | ((w >> 2) & 0x1fc000);
        *pp += 3;
        return 0;
    }
    uint64_t stops = ~w & VARINT_STOPS;
    if (!stops)
        return 1;
    unsigned last = (unsigned)__builtin_ctzll(stops); /* bit 7 of the last byte */
    *pp += (last >> 3) + 1;
    uint64_t x = w & ((2ull << last) - 1) & ~VARINT_STOPS; /* its 7-bit groups, then fold */
    x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
    x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
    *out = (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
    return 0;
}

/* Past a varint of at most 8 bytes whose value the scan does not need. */
static inline int skip_var8(const uint8_t **pp)
{
    uint64_t stops = ~load_le64(*pp) & VARINT_STOPS;
    if (!stops)
        return 1;
    *pp += ((unsigned)__builtin_ctzll(stops) >> 3) + 1;
    return 0;
}

/* Compact tag bits 6..4 (A KK, docs/FORMAT.md §4.1) of Python's own
 * allocator: pymalloc (ALLOC slot 3) and pyfree (FREE slot 2). */
#define COMPACT_PY_SLOTS (1u << 7 | 1u << 2)

/* What a record's tag tells compact_run, in one load (a dozen instructions
 * of bit tests on the writer's path for every event before): */
enum {
    CT_SD = 3,      /* seqd 1..3 in the tag (0: a varint follows) */
    CT_ALLOC = 4,   /* size and stack follow the address */
    CT_PY = 8,      /* Python's own allocator: no heap block */
    CT_NODE = 0x10, /* a node record with its id in the tag (0x18..0x1B) */
    CT_SLOW = 0x40, /* seqd or tsq follow the tag */
    CT_STOP = 0x80, /* not a compact record */
};
#define CT_INFO(t)                                                                                 \
    ((t) < 0x80 ? ((t) >> 2 == TRK_REC_NODE >> 2 ? CT_STOP | CT_NODE | ((t)&3) : CT_STOP)          \
                : ((((t) >> 2) & 3) | ((t)&0x40 ? CT_ALLOC : 0) |                                  \
                   ((COMPACT_PY_SLOTS >> (((t) >> 4) & 7)) & 1 ? CT_PY : 0) |                      \
                   ((((t) >> 2) & 3) == 0 || ((t)&3) == 3 ? CT_SLOW : 0)))
#define CT4(t)  CT_INFO(t), CT_INFO((t) + 1), CT_INFO((t) + 2), CT_INFO((t) + 3)
#define CT16(t) CT4(t), CT4((t) + 4), CT4((t) + 8), CT4((t) + 12)
#define CT64(t) CT16(t), CT16((t) + 16), CT16((t) + 32), CT16((t) + 48)
static const uint8_t ct_info[256] = {CT64(0), CT64(64), CT64(128), CT64(192)};

/* Past a node record's fields (docs/FORMAT.md §4.3), tag at *pp - 1, when
 * they fit in 8 bytes: [pd] unless C, then one varint for a native frame
 * or two for a Python one (C and P, the tag's bits 1 and 0, are info's).
 * Returns 1 to leave the record to skip_node. */
static inline int skip_node8(const uint8_t **pp, unsigned info)
{
    uint64_t stops = ~load_le64(*pp) & VARINT_STOPS;
    if (!(info & TRK_NODE_CHAIN))
        stops &= stops - 1;
    if (info & TRK_NODE_PY)
        stops &= stops - 1;
    if (!stops)
        return 1;
    *pp += ((unsigned)__builtin_ctzll(stops) >> 3) + 1;
    return 0;
}

/* A run of compact ALLOCs and FREEs (docs/FORMAT.md §4.1), nearly every
 * heap record since format 4, decoded for what the scan needs: seq and
 * address, and an ALLOC's size; the time step and the stack id are only
 * stepped over (no record the scan reads needs the stream's ts). Stops at
 * `lim` (SLACK before the piece's end), at any other record, and at what
 * it leaves to the exact decoder (a varint over 8 bytes, a bad record).
 * The stream state and the table's fields live in locals meanwhile: every
 * store into the table could alias them (all uint64_t), and reloading them
 * after each one was a fifth of the cost. Returns 0, or -1 on no memory. */
__attribute__((always_inline)) static inline int compact_body(struct table *t,
                                                              struct trk_rec_state *st,
                                                              const uint8_t **pp,
                                                              const uint8_t *lim, int cycle)
{
    const uint8_t *p = *pp;
    uint64_t seq = st->seq, addr = st->addr, bound = cycle ? t->bound : 0;
    int last = cycle && t->last;
    struct ent *v = t->v, *end = v + t->cap;
    size_t room = t->lim - t->n; /* inserts before the next rehash */
    size_t cap = t->cap;
    uint64_t base1 = t->base - 1; /* seq - base1: the relative seq (struct ent) */
    int rc = 0;
    /* The locals again after a call that may have moved the table. */
#define RELOAD()                                                                                   \
    do {                                                                                           \
        v = t->v;                                                                                  \
        room = t->lim - t->n;                                                                      \
        cap = t->cap;                                                                              \
        end = v + cap;                                                                             \
        base1 = t->base - 1;                                                                       \
        bound = cycle ? t->bound : 0;                                                              \
    } while (0)
    while (p < lim) {
        unsigned info = ct_info[*p];
        const uint8_t *q = p + 1;
        uint64_t sd = info & CT_SD, a, size = 0;
        if (info >= CT_SLOW) {
            /* A Python program's node records come between its heap
             * records: stepped over here, not by leaving the run for
             * each (import_many.py --python-allocators: ~40% of its
             * records, and leaving and entering the run cost more than
             * the rest of a record). */
            if ((info & ~3u) == (CT_STOP | CT_NODE)) {
                if (skip_node8(&q, info))
                    break;
                p = q;
                continue;
            }
            if ((info & CT_STOP) || (!sd && (get_var8(&q, &sd) || !sd)) ||
                ((*p & 3) == 3 && skip_var8(&q)))
                break;
        }
        if (get_var8(&q, &a) || ((info & CT_ALLOC) && (get_var8(&q, &size) || skip_var8(&q))))
            break;
        p = q;
        seq += sd;
        addr += (uint64_t)trk_unzigzag(a >> 1) << ((~a & 1) << 2); /* bit 0 clear: 16-byte units */
        if ((info & CT_PY) || !addr)
            continue;
        uint64_t rel = seq - base1; /* 0 (seq base - 1) says "older", as it is */
        if (TRK_UNLIKELY(rel > REL_MASK)) {
            rc = trk_ltable_rebase(t, seq);
            if (rc)
                break;
            RELOAD();
            rel = seq - base1;
        }
        struct ent *e = &v[slot_of(addr, cap)];
        while (e->addr != addr && e->addr) /* ent_find, with end kept in a register */
            e = e + 1 == end ? v : e + 1;
        if (cycle && !(info & CT_ALLOC) && seq < bound) { /* final: see struct table */
            if (last || TRK_LIKELY(t->ndel < t->del_cap)) {
                if (e->addr && (e->seq & REL_MASK) <= rel) {
                    table_unlink(v, cap, e);
                    room++;
                }
                if (!last)
                    t->dels[t->ndel++] = (struct del){addr, seq};
                continue;
            }
            t->n = t->lim - room; /* the log grows, or is put back */
            rc = free_final(t, addr, seq);
            if (rc)
                break;
            RELOAD();
            continue;
        }
        if (!e->addr) {
            if (!room) { /* full: rehashed, the record goes in through table_put */
                t->n = t->lim - room;
                rc = trk_ltable_rehash(t);
                if (!rc)
                    rc = table_put_slow(t, addr, seq, (info & CT_ALLOC) != 0, size);
                if (rc)
                    break;
                RELOAD();
                continue;
            }
            room--;
            e->addr = addr;
        } else if ((e->seq & REL_MASK) > rel) {
            continue; /* a later event of another stream decided it */
        }
        if (TRK_UNLIKELY(size >= SIZE_BIG)) {
            rc = trk_ltable_big_put(t, addr, size);
            if (rc)
                break;
            size = SIZE_BIG;
        }
        e->seq = (uint32_t)rel | (uint32_t)(info & CT_ALLOC) << 29; /* CT_ALLOC: LIVE_BIT */
        e->size = (uint32_t)size;
    }
    st->seq = seq;
    st->addr = addr;
    t->n = t->lim - room;
    *pp = p;
    return rc;
#undef RELOAD
}

/* In a writer's cycle with a bound (struct table), or not (the read-back,
 * pieces outside cycles, cycles kept the old way). */
static int compact_run(struct table *t, struct trk_rec_state *st, const uint8_t **pp,
                       const uint8_t *lim)
{
    /* A later piece of the writer's cycle about to touch the heap. */
    if (TRK_UNLIKELY(t->armed) && *pp < lim && ct_info[**pp] < CT_STOP && replay(t))
        return -1;
    return t->bound ? compact_body(t, st, pp, lim, 1) : compact_body(t, st, pp, lim, 0);
}

/* The compact record the fast path left (a long varint, or a bad record),
 * through the decoder trk_rec_decode itself uses (record.h), so the two
 * cannot disagree. Same returns as fast_heap. */
static int exact_compact(struct table *t, struct trk_rec_state *st, const uint8_t **pp,
                         const uint8_t *end)
{
    const uint8_t *p = *pp + 1;
    unsigned tag = **pp;
    uint64_t size = 0, stack;
    unsigned kind = trk_dec_compact(&p, end, tag, st, &size, &stack);
    if (!kind)
        return 1; /* trk_rec_decode fails it the same way, where it broke */
    *pp = p;
    if (!is_heap_kind(kind))
        return 0;
    int alloc = (tag & TRK_REC_COMPACT_ALLOC) != 0;
    return table_put(t, st->addr, st->seq, alloc, alloc ? size : 0) ? -1 : 0;
}

/* A STACK record (a call-site node; sampled captures write one per new
 * site): nothing the scan needs but the ip its successor's delta is from. */
static int skip_stack(struct trk_rec_state *st, const uint8_t **pp, const uint8_t *end)
{
    const uint8_t *p = *pp + 1;
    uint64_t id, parent, z;
    if (end - p < SLACK || get_var8(&p, &id) || id == 0 || skip_var8(&p) || get_var8(&p, &z) ||
        p > end) {
        p = *pp + 1; /* a long varint, or past the piece: exactly */
        if (trk_get_varint(&p, end, &id) || id == 0 || trk_get_varint(&p, end, &parent) ||
            trk_get_varint(&p, end, &z))
            return 1;
    }
    st->ip += (uint64_t)trk_unzigzag(z);
    st->sid = id;
    *pp = p;
    return 0;
}

/* A node record (version 5): nothing the scan needs, not even the
 * stream's node id or frame (no record it reads refers to them, and none
 * carries a seq or an address), so its fields are only stepped over,
 * exactly; compact_body steps over most of them itself. */
static int skip_node(const uint8_t **pp, const uint8_t *end)
{
    const uint8_t *p = *pp + 1;
    uint64_t h = **pp & 3u, v;
    if (**pp == TRK_REC_NODE_ID && trk_get_varint(&p, end, &h))
        return 1;
    int n = !(h & TRK_NODE_CHAIN) + 1 + (int)(h & TRK_NODE_PY);
    while (n-- > 0)
        if (trk_get_varint(&p, end, &v))
            return 1;
    *pp = p;
    return 0;
}

/* A varint: word at a time (at most 8 bytes, else 1) or exactly. */
static inline int get_v(const uint8_t **pp, const uint8_t *end, int word, uint64_t *out)
{
    return word ? get_var8(pp, out) : trk_get_varint(pp, end, out);
}

/* ALLOC, FREE and REALLOC are nearly every record: decoded here without
 * the generic record (whose clearing alone cost more than the rest).
 * Returns 0 when done, 1 to leave the record to trk_rec_decode. */
static int fast_heap(struct table *t, struct trk_rec_state *st, const uint8_t **pp,
                     const uint8_t *end)
{
    const uint8_t *p = *pp;
    unsigned tag = *p, cls = tag & TRK_REC_CLASS_MASK, kind = tag & TRK_REC_KIND_MASK;
    if (tag & TRK_REC_COMPACT)
        return exact_compact(t, st, pp, end);
    if (tag == TRK_REC_STACK)
        return skip_stack(st, pp, end);
    if (tag - TRK_REC_NODE <= TRK_REC_NODE_ID - TRK_REC_NODE)
        return skip_node(pp, end);
    if ((cls != TRK_REC_ALLOC_BASE && cls != TRK_REC_FREE_BASE && cls != TRK_REC_REALLOC_BASE) ||
        kind == 0 || kind > TRK_ALLOC_KIND_MAX)
        return 1;
    p++;
    /* Word at a time where the piece has SLACK left (a long record holds
     * at most seven varints, 57 bytes with the tag): allocbench's reallocs
     * took ~8 instructions a byte through the exact decoder. */
    int word = end - p >= SLACK;
    uint64_t seqd, seq2d = 0, size = 0, stack, tsz, az, nz = 0;
    if (get_v(&p, end, word, &seqd) || trk_seq_step_bad(st->seq, seqd) ||
        get_v(&p, end, word, &tsz) || get_v(&p, end, word, &az))
        return 1;
    if (cls == TRK_REC_REALLOC_BASE &&
        (get_v(&p, end, word, &seq2d) || trk_seq_step_bad(st->seq + seqd, seq2d) ||
         get_v(&p, end, word, &nz)))
        return 1;
    if (cls != TRK_REC_FREE_BASE && (get_v(&p, end, word, &size) || get_v(&p, end, word, &stack)))
        return 1;
    int64_t tsd = trk_unzigzag(tsz), ad = trk_unzigzag(az), nd = trk_unzigzag(nz);
    uint64_t seq = st->seq + seqd, addr = st->addr + (uint64_t)ad, addr2 = addr + (uint64_t)nd;
    st->seq = seq + seq2d;
    st->ts += (uint64_t)tsd;
    st->addr = cls == TRK_REC_REALLOC_BASE ? addr2 : addr;
    *pp = p;
    if (!is_heap_kind(kind))
        return 0;
    if (cls == TRK_REC_ALLOC_BASE)
        return table_put(t, addr, seq, 1, size) ? -1 : 0;
    if (table_put(t, addr, seq, 0, 0))
        return -1;
    return cls == TRK_REC_REALLOC_BASE && table_put(t, addr2, seq + seq2d, 1, size) ? -1 : 0;
}

int trk_ltable_decode(struct table *t, struct trk_rec_state *st, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    struct trk_rec r;
    while (p < end) {
        if (end - p >= SLACK && compact_run(t, st, &p, end - SLACK))
            return -1;
        if (p >= end)
            break;
        int rc = fast_heap(t, st, &p, end);
        if (rc < 0)
            return -1;
        if (rc == 0)
            continue;
        if (trk_rec_decode(&p, end, st, &r))
            return -1;
        if (apply(t, &r))
            return -1;
    }
    return 0;
}
