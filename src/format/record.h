/* SPDX-License-Identifier: MIT
 *
 * record.h - the thread-stream record codec (docs/FORMAT.md §4).
 *
 * Encoders are inline because they sit on the preload's hot path: each writes
 * one record into a caller buffer of at least TRK_REC_MAX bytes (module
 * records: TRK_REC_MODULE_MAX) and returns the end. They never allocate and
 * never fail. The decoder (record.c) never trusts its input.
 */
#ifndef TRK_RECORD_H
#define TRK_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/varint.h"
#include "format/format.h"

#define TRK_LIKELY_ENC(x) __builtin_expect(!!(x), 1)

/* Longest fixed record: tag + 8 varints. */
#define TRK_REC_MAX 96
#define TRK_REC_MODULE_MAX                                                                         \
    (1 + 4 * TRK_VARINT_MAX + TRK_MODULE_PATH_MAX + TRK_BUILDID_MAX +                              \
     TRK_MODULE_SEGS_MAX * 3 * TRK_VARINT_MAX + 16)

/* Per-stream delta state; both sides start from all zeros at offset 0.
 * ip is the last native frame (any frame of a version-4 STACK record);
 * sid, pcode and pline, the last node id and Python frame, came with
 * version 5's STACK records (docs/FORMAT.md §4.3). */
struct trk_rec_state {
    uint64_t seq;
    uint64_t ts;
    uint64_t addr;
    uint64_t ip;
    uint64_t sid;
    uint64_t pcode;
    uint64_t pline;
};

/* Is d a malformed seq step from seq? seq strictly increases within a
 * stream (docs/FORMAT.md §4): a step of 0, or one that passes 2^64 - 1 and
 * wraps (to 0, a seq no event has), is corruption. */
static inline int trk_seq_step_bad(uint64_t seq, uint64_t d)
{
    return d == 0 || d > UINT64_MAX - seq;
}

/* ---- Encoders ------------------------------------------------------------ */

/* A stream's timestamps never decrease (docs/FORMAT.md §4.2): a clock that
 * stepped back a little (a TSC fit re-anchored, a CPU migration, a nested
 * call's earlier reading published later) reads as no time passing. */
static inline uint64_t trk_enc_ts(const struct trk_rec_state *st, uint64_t ts)
{
    return ts < st->ts ? st->ts : ts;
}

static inline uint8_t *trk_enc_head(uint8_t *p, struct trk_rec_state *st, uint8_t tag, uint64_t seq,
                                    uint64_t ts)
{
    ts = trk_enc_ts(st, ts);
    *p++ = tag;
    p = trk_put_varint(p, seq - st->seq);
    p = trk_put_svarint(p, (int64_t)(ts - st->ts));
    st->seq = seq;
    st->ts = ts;
    return p;
}

static inline uint8_t *trk_enc_addr(uint8_t *p, struct trk_rec_state *st, uint64_t addr)
{
    p = trk_put_svarint(p, (int64_t)(addr - st->addr));
    st->addr = addr;
    return p;
}

/* ---- Compact ALLOC and FREE (version 4, format.h TRK_REC_COMPACT) ----
 *
 * The two records that make up nearly every capture, in one byte plus the
 * address (plus size and stack): seq and time steps that fit in two bits
 * each ride in the tag, the time step in TRK_COMPACT_TS_SHIFT units (the
 * stream's ts is what the decoder rebuilds, so the rounding never adds up),
 * and heap addresses, which move in multiples of 16, lose four zero bits. */

/* Compact slot + 1 of each allocator kind (0: none), ALLOC row then FREE. */
static const uint8_t trk_compact_slot[2][32] = {
    {[TRK_ALLOC_MALLOC] = 1, [TRK_ALLOC_CALLOC] = 2, [TRK_ALLOC_NEW] = 3, [TRK_ALLOC_PYMALLOC] = 4},
    {[TRK_ALLOC_FREE] = 1,
     [TRK_ALLOC_DELETE] = 2,
     [TRK_ALLOC_PYFREE] = 3,
     [TRK_ALLOC_DELETE_ARRAY] = 4},
};

/* Writes the compact record's tag, seq and time steps and address; returns
 * the end, or NULL (st untouched) when the event needs the long form: a
 * kind without a slot, or an unaligned address delta of 2^62 or more, whose
 * zigzag would leave no room for the flag bit. tq is the time step in
 * TRK_COMPACT_TS_SHIFT units (trk_enc_compact computes it from a ts).
 * Always inlined: the hooks' fast path (capture/ev_inline.h) must not call
 * it, and with the kind a constant there its slot lookup folds away. */
__attribute__((always_inline)) static inline uint8_t *
trk_enc_compact_tq(uint8_t *p, struct trk_rec_state *st, int is_alloc, unsigned kind, uint64_t seq,
                   uint64_t tq, uint64_t addr)
{
    unsigned slot = trk_compact_slot[!is_alloc][kind & 31];
    int64_t d = (int64_t)(addr - st->addr);
    uint64_t a;
    if (TRK_LIKELY_ENC(!(d & 15))) {
        a = trk_zigzag(d >> 4) << 1;
    } else {
        a = trk_zigzag(d);
        if (a >> 63)
            slot = 0;
        a = a << 1 | 1;
    }
    if (!TRK_LIKELY_ENC(slot))
        return NULL;
    unsigned tag = TRK_REC_COMPACT | (is_alloc ? TRK_REC_COMPACT_ALLOC : 0) | (slot - 1) << 4;
    uint64_t sd = seq - st->seq;
    uint8_t *t = p++;
    if (sd - 1 < 3)
        tag |= (unsigned)sd << 2;
    else
        p = trk_put_varint(p, sd);
    if (tq < 3) {
        tag |= (unsigned)tq;
    } else {
        tag |= 3;
        p = trk_put_varint(p, tq);
    }
    *t = (uint8_t)tag;
    st->seq = seq;
    st->ts += tq << TRK_COMPACT_TS_SHIFT;
    st->addr = addr;
    return trk_put_varint(p, a);
}

/* The same for an event at time ts: the step is what takes the stream's ts
 * to ts, rounded down (none when ts is behind it). */
__attribute__((always_inline)) static inline uint8_t *
trk_enc_compact(uint8_t *p, struct trk_rec_state *st, int is_alloc, unsigned kind, uint64_t seq,
                uint64_t ts, uint64_t addr)
{
    uint64_t tq = ts > st->ts ? (ts - st->ts) >> TRK_COMPACT_TS_SHIFT : 0;
    return trk_enc_compact_tq(p, st, is_alloc, kind, seq, tq, addr);
}

/* The long forms (every version): exact ns timestamps, any kind. */
static inline uint8_t *trk_enc_alloc_long(uint8_t *p, struct trk_rec_state *st, unsigned kind,
                                          uint64_t seq, uint64_t ts, uint64_t addr, uint64_t size,
                                          uint64_t stack)
{
    p = trk_enc_head(p, st, (uint8_t)(TRK_REC_ALLOC_BASE | kind), seq, ts);
    p = trk_enc_addr(p, st, addr);
    p = trk_put_varint(p, size);
    return trk_put_varint(p, stack);
}

static inline uint8_t *trk_enc_free_long(uint8_t *p, struct trk_rec_state *st, unsigned kind,
                                         uint64_t seq, uint64_t ts, uint64_t addr)
{
    p = trk_enc_head(p, st, (uint8_t)(TRK_REC_FREE_BASE | kind), seq, ts);
    return trk_enc_addr(p, st, addr);
}

/* What the capture writes: the compact form wherever it can say the event. */
static inline uint8_t *trk_enc_alloc(uint8_t *p, struct trk_rec_state *st, unsigned kind,
                                     uint64_t seq, uint64_t ts, uint64_t addr, uint64_t size,
                                     uint64_t stack)
{
    uint8_t *e = trk_enc_compact(p, st, 1, kind, seq, ts, addr);
    if (!TRK_LIKELY_ENC(e))
        return trk_enc_alloc_long(p, st, kind, seq, ts, addr, size, stack);
    p = trk_put_varint(e, size);
    return trk_put_varint(p, stack);
}

static inline uint8_t *trk_enc_free(uint8_t *p, struct trk_rec_state *st, unsigned kind,
                                    uint64_t seq, uint64_t ts, uint64_t addr)
{
    uint8_t *e = trk_enc_compact(p, st, 0, kind, seq, ts, addr);
    if (!TRK_LIKELY_ENC(e))
        return trk_enc_free_long(p, st, kind, seq, ts, addr);
    return e;
}

static inline uint8_t *trk_enc_realloc(uint8_t *p, struct trk_rec_state *st, unsigned kind,
                                       uint64_t seq, uint64_t seq2, uint64_t ts, uint64_t old,
                                       uint64_t new_addr, uint64_t size, uint64_t stack)
{
    p = trk_enc_head(p, st, (uint8_t)(TRK_REC_REALLOC_BASE | kind), seq, ts);
    p = trk_enc_addr(p, st, old);
    p = trk_put_varint(p, seq2 - seq);
    st->seq = seq2;
    p = trk_enc_addr(p, st, new_addr);
    p = trk_put_varint(p, size);
    return trk_put_varint(p, stack);
}

static inline uint8_t *trk_enc_mmap(uint8_t *p, struct trk_rec_state *st, uint64_t seq, uint64_t ts,
                                    uint64_t addr, uint64_t len, uint64_t prot, uint64_t flags,
                                    int file, uint64_t stack)
{
    p = trk_enc_head(p, st, TRK_REC_MMAP, seq, ts);
    p = trk_enc_addr(p, st, addr);
    p = trk_put_varint(p, len);
    p = trk_put_varint(p, prot);
    p = trk_put_varint(p, flags);
    *p++ = file ? TRK_MAP_FILE : TRK_MAP_ANON;
    return trk_put_varint(p, stack);
}

static inline uint8_t *trk_enc_munmap(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                      uint64_t ts, uint64_t addr, uint64_t len)
{
    p = trk_enc_head(p, st, TRK_REC_MUNMAP, seq, ts);
    p = trk_enc_addr(p, st, addr);
    return trk_put_varint(p, len);
}

static inline uint8_t *trk_enc_mremap(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                      uint64_t seq2, uint64_t ts, uint64_t old, uint64_t oldlen,
                                      uint64_t new_addr, uint64_t newlen, uint64_t flags,
                                      uint64_t stack)
{
    p = trk_enc_head(p, st, TRK_REC_MREMAP, seq, ts);
    p = trk_enc_addr(p, st, old);
    p = trk_put_varint(p, oldlen);
    p = trk_put_varint(p, seq2 - seq);
    st->seq = seq2;
    p = trk_enc_addr(p, st, new_addr);
    p = trk_put_varint(p, newlen);
    p = trk_put_varint(p, flags);
    return trk_put_varint(p, stack);
}

/* The STACK record of every version (tag 0x04): id, parent and the ip as a
 * delta from the stream's last one, whatever its kind. */
static inline uint8_t *trk_enc_stack_long(uint8_t *p, struct trk_rec_state *st, uint64_t id,
                                          uint64_t parent, uint64_t ip)
{
    *p++ = TRK_REC_STACK;
    p = trk_put_varint(p, id);
    p = trk_put_varint(p, parent);
    p = trk_put_svarint(p, (int64_t)(ip - st->ip));
    st->ip = ip;
    st->sid = id;
    return p;
}

/* ---- Node records (version 5, format.h TRK_REC_NODE) ----
 *
 * A new stack's nodes come one after the other, each the caller's child:
 * the id is the stream's last one plus one and the parent the last one,
 * so both ride in the tag. A Python frame is a code id and a line, each a
 * small delta from the stream's last Python frame, and a native one a
 * delta from the last native frame: the kinds no longer take turns in one
 * delta, where every change of kind cost ten bytes (bit 63). */
static inline uint8_t *trk_enc_stack(uint8_t *p, struct trk_rec_state *st, uint64_t id,
                                     uint64_t parent, uint64_t ip)
{
    if (!TRK_LIKELY_ENC(id > st->sid && parent < id))
        return trk_enc_stack_long(p, st, id, parent, ip);
    unsigned py = (unsigned)(ip >> 63), chain = parent == st->sid;
    unsigned bits = (chain ? TRK_NODE_CHAIN : 0) | (py ? TRK_NODE_PY : 0);
    if (id == st->sid + 1) {
        *p++ = (uint8_t)(TRK_REC_NODE | bits);
    } else {
        *p++ = TRK_REC_NODE_ID;
        p = trk_put_varint(p, (id - st->sid - 1) << 2 | bits);
    }
    if (!chain)
        p = trk_put_varint(p, id - parent);
    if (py) {
        uint64_t code = (ip & ~TRK_PYFRAME_BIT) >> TRK_PYFRAME_LINE_BITS,
                 line = ip & TRK_PYFRAME_LINE_MAX;
        p = trk_put_svarint(p, (int64_t)(code - st->pcode));
        p = trk_put_svarint(p, (int64_t)(line - st->pline));
        st->pcode = code;
        st->pline = line;
    } else {
        p = trk_put_svarint(p, (int64_t)(ip - st->ip));
        st->ip = ip;
    }
    st->sid = id;
    return p;
}

/* The fields of a node record after its tag (0x18..0x1C). Sets *id,
 * *parent and *ip and advances *pp and st; returns -1 with neither touched
 * when the record is short or malformed (an id past 2^64 - 1, a parent
 * delta of 0 or above the id, a Python frame out of its bit ranges, a
 * native one with bit 63 set). */
static inline int trk_dec_node(const uint8_t **pp, const uint8_t *end, unsigned tag,
                               struct trk_rec_state *st, uint64_t *id, uint64_t *parent,
                               uint64_t *ip)
{
    const uint8_t *p = *pp;
    uint64_t h = 0, pd, v;
    if (tag == TRK_REC_NODE_ID) {
        if (trk_get_varint(&p, end, &h))
            return -1;
        tag = TRK_REC_NODE | (unsigned)(h & 3);
    }
    if (h >> 2 >= UINT64_MAX - st->sid) /* the id would pass 2^64 - 1 */
        return -1;
    uint64_t n = st->sid + 1 + (h >> 2);
    if (tag & TRK_NODE_CHAIN) {
        pd = n - st->sid;
    } else if (trk_get_varint(&p, end, &pd) || pd == 0 || pd > n) {
        return -1;
    }
    if (trk_get_varint(&p, end, &v))
        return -1;
    if (tag & TRK_NODE_PY) {
        uint64_t code = st->pcode + (uint64_t)trk_unzigzag(v), lz;
        if (trk_get_varint(&p, end, &lz))
            return -1;
        uint64_t line = st->pline + (uint64_t)trk_unzigzag(lz);
        if (code >> (63 - TRK_PYFRAME_LINE_BITS) || line > TRK_PYFRAME_LINE_MAX)
            return -1;
        st->pcode = code;
        st->pline = line;
        *ip = TRK_PYFRAME_BIT | code << TRK_PYFRAME_LINE_BITS | line;
    } else {
        uint64_t a = st->ip + (uint64_t)trk_unzigzag(v);
        if (a & TRK_PYFRAME_BIT) /* P says the kind: a native frame never has it */
            return -1;
        st->ip = a;
        *ip = a;
    }
    st->sid = n;
    *id = n;
    *parent = n - pd;
    *pp = p;
    return 0;
}

static inline uint8_t *trk_enc_thread(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                      uint64_t ts, uint64_t tid, uint64_t flags)
{
    p = trk_enc_head(p, st, TRK_REC_THREAD, seq, ts);
    p = trk_put_varint(p, tid);
    return trk_put_varint(p, flags);
}

static inline uint8_t *trk_enc_thread_exit(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                           uint64_t ts)
{
    return trk_enc_head(p, st, TRK_REC_THREAD_EXIT, seq, ts);
}

/* name is truncated to TRK_THREAD_NAME_MAX bytes. */
static inline uint8_t *trk_enc_thread_name(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                           uint64_t ts, uint64_t tid, const char *name, size_t len)
{
    if (len > TRK_THREAD_NAME_MAX)
        len = TRK_THREAD_NAME_MAX;
    p = trk_enc_head(p, st, TRK_REC_THREAD_NAME, seq, ts);
    p = trk_put_varint(p, tid);
    p = trk_put_varint(p, len);
    memcpy(p, name, len);
    return p + len;
}

static inline uint8_t *trk_enc_rss(uint8_t *p, struct trk_rec_state *st, uint64_t seq, uint64_t ts,
                                   uint64_t anon, uint64_t file)
{
    p = trk_enc_head(p, st, TRK_REC_RSS, seq, ts);
    p = trk_put_varint(p, anon);
    return trk_put_varint(p, file);
}

static inline uint8_t *trk_enc_lost(uint8_t *p, struct trk_rec_state *st, uint64_t seq, uint64_t ts,
                                    uint64_t count)
{
    p = trk_enc_head(p, st, TRK_REC_LOST, seq, ts);
    return trk_put_varint(p, count);
}

static inline uint8_t *trk_enc_modules(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                       uint64_t ts, uint64_t generation, uint64_t count)
{
    p = trk_enc_head(p, st, TRK_REC_MODULES, seq, ts);
    p = trk_put_varint(p, generation);
    return trk_put_varint(p, count);
}

/* GPU records (docs/FORMAT.md §4, GPU). Addresses share the stream's address
 * delta state; device is signed (-1 = not known). */
static inline uint8_t *trk_enc_gpu_head(uint8_t *p, struct trk_rec_state *st, uint8_t tag,
                                        uint64_t seq, uint64_t ts, unsigned api, unsigned kind,
                                        int64_t device)
{
    p = trk_enc_head(p, st, tag, seq, ts);
    *p++ = (uint8_t)api;
    *p++ = (uint8_t)kind;
    return trk_put_svarint(p, device);
}

static inline uint8_t *trk_enc_gpu_alloc(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                         uint64_t ts, unsigned api, unsigned kind, int64_t device,
                                         uint64_t addr, uint64_t size, uint64_t stream,
                                         uint64_t stack)
{
    p = trk_enc_gpu_head(p, st, TRK_REC_GPU_ALLOC, seq, ts, api, kind, device);
    p = trk_enc_addr(p, st, addr);
    p = trk_put_varint(p, size);
    p = trk_put_varint(p, stream);
    return trk_put_varint(p, stack);
}

static inline uint8_t *trk_enc_gpu_free(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                        uint64_t ts, unsigned api, unsigned kind, int64_t device,
                                        uint64_t addr)
{
    p = trk_enc_gpu_head(p, st, TRK_REC_GPU_FREE, seq, ts, api, kind, device);
    return trk_enc_addr(p, st, addr);
}

static inline uint8_t *trk_enc_gpu_fail(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                        uint64_t ts, unsigned api, unsigned kind, int64_t device,
                                        uint64_t size, uint64_t result, uint64_t stack)
{
    p = trk_enc_gpu_head(p, st, TRK_REC_GPU_FAIL, seq, ts, api, kind, device);
    p = trk_put_varint(p, size);
    p = trk_put_varint(p, result);
    return trk_put_varint(p, stack);
}

static inline uint8_t *trk_enc_gpu_map(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                       uint64_t ts, unsigned api, unsigned op, int64_t device,
                                       uint64_t va, uint64_t size, uint64_t handle, uint64_t offset)
{
    p = trk_enc_gpu_head(p, st, TRK_REC_GPU_MAP, seq, ts, api, op, device);
    p = trk_enc_addr(p, st, va);
    p = trk_put_varint(p, size);
    p = trk_put_varint(p, handle);
    return trk_put_varint(p, offset);
}

static inline uint8_t *trk_enc_gpu_meminfo(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                           uint64_t ts, uint64_t device, uint64_t used,
                                           uint64_t total)
{
    p = trk_enc_head(p, st, TRK_REC_GPU_MEMINFO, seq, ts);
    p = trk_put_varint(p, device);
    p = trk_put_varint(p, used);
    return trk_put_varint(p, total);
}

/* GPU_ENTER / GPU_EXIT: one byte each, no seq. */
static inline uint8_t *trk_enc_gpu_scope(uint8_t *p, int enter)
{
    *p++ = enter ? TRK_REC_GPU_ENTER : TRK_REC_GPU_EXIT;
    return p;
}

/* Python records (docs/FORMAT.md §5). Strings are truncated to
 * TRK_PY_STR_MAX; a PY_CODE record needs up to TRK_REC_PY_MAX bytes. */
#define TRK_REC_PY_MAX (1 + 4 * TRK_VARINT_MAX + 2 * TRK_PY_STR_MAX)

static inline uint8_t *trk_enc_py_str(uint8_t *p, const char *s, size_t len)
{
    if (len > TRK_PY_STR_MAX)
        len = TRK_PY_STR_MAX;
    p = trk_put_varint(p, len);
    memcpy(p, s, len);
    return p + len;
}

static inline uint8_t *trk_enc_py_code(uint8_t *p, uint64_t id, uint64_t firstline,
                                       const char *name, size_t name_len, const char *file,
                                       size_t file_len)
{
    *p++ = TRK_REC_PY_CODE;
    p = trk_put_varint(p, id);
    p = trk_put_varint(p, firstline);
    p = trk_enc_py_str(p, name, name_len);
    return trk_enc_py_str(p, file, file_len);
}

static inline uint8_t *trk_enc_py_import(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                         uint64_t ts, const char *name, size_t len)
{
    p = trk_enc_head(p, st, TRK_REC_PY_IMPORT, seq, ts);
    return trk_enc_py_str(p, name, len);
}

static inline uint8_t *trk_enc_py_import_end(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                             uint64_t ts)
{
    return trk_enc_head(p, st, TRK_REC_PY_IMPORT_END, seq, ts);
}

static inline uint8_t *trk_enc_py_mark(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                       uint64_t ts, uint64_t what)
{
    p = trk_enc_head(p, st, TRK_REC_PY_MARK, seq, ts);
    return trk_put_varint(p, what);
}

static inline uint8_t *trk_enc_py_info(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                       uint64_t ts, uint64_t version, uint64_t flags)
{
    p = trk_enc_head(p, st, TRK_REC_PY_INFO, seq, ts);
    p = trk_put_varint(p, version);
    return trk_put_varint(p, flags);
}

/* Leak classification at exit (docs/FORMAT.md §4a). */
static inline uint8_t *trk_enc_leak_scan(uint8_t *p, struct trk_rec_state *st, uint64_t seq,
                                         uint64_t ts, uint64_t flags, uint64_t blocks,
                                         uint64_t roots)
{
    p = trk_enc_head(p, st, TRK_REC_LEAK_SCAN, seq, ts);
    p = trk_put_varint(p, flags);
    p = trk_put_varint(p, blocks);
    return trk_put_varint(p, roots);
}

/* leader: the definite block an indirectly lost one hangs from, else 0;
 * written as a delta from addr (0 = none). */
static inline uint8_t *trk_enc_leak(uint8_t *p, struct trk_rec_state *st, uint64_t seq, uint64_t ts,
                                    uint64_t addr, unsigned cls, uint64_t leader)
{
    p = trk_enc_head(p, st, TRK_REC_LEAK, seq, ts);
    p = trk_enc_addr(p, st, addr);
    *p++ = (uint8_t)cls;
    return trk_put_svarint(p, leader ? (int64_t)(leader - addr) : 0);
}

struct trk_segment {
    uint64_t vaddr;
    uint64_t memsz;
    uint32_t flags;
};

/* path is truncated to TRK_MODULE_PATH_MAX, build-id to TRK_BUILDID_MAX and
 * the segment list to TRK_MODULE_SEGS_MAX. */
uint8_t *trk_enc_module(uint8_t *p, uint64_t generation, uint64_t base, const char *path,
                        size_t path_len, const uint8_t *buildid, size_t buildid_len,
                        const struct trk_segment *segs, unsigned nseg);

/* ---- Decoder ------------------------------------------------------------- */

/* The fields of a compact ALLOC or FREE after its tag byte (format.h
 * TRK_REC_COMPACT), for trk_rec_decode and the reader's fast path. Returns
 * the allocator kind and advances *pp and st, or returns 0 with neither
 * touched when the record is short or malformed (a varint seqd of 0, a
 * time step that would wrap ts). size and stack are set for an ALLOC. */
static inline unsigned trk_dec_compact(const uint8_t **pp, const uint8_t *end, unsigned tag,
                                       struct trk_rec_state *st, uint64_t *size, uint64_t *stack)
{
    static const uint8_t kinds[2][4] = {TRK_COMPACT_FREE_KINDS, TRK_COMPACT_ALLOC_KINDS};
    const uint8_t *p = *pp;
    int alloc = (tag & TRK_REC_COMPACT_ALLOC) != 0;
    uint64_t sd = (tag >> 2) & 3, tq = tag & 3, a;
    if (sd == 0 && trk_get_varint(&p, end, &sd))
        return 0;
    if (trk_seq_step_bad(st->seq, sd))
        return 0;
    if (tq == 3 && trk_get_varint(&p, end, &tq))
        return 0;
    if (trk_get_varint(&p, end, &a))
        return 0;
    if (alloc && (trk_get_varint(&p, end, size) || trk_get_varint(&p, end, stack)))
        return 0;
    uint64_t step = tq << TRK_COMPACT_TS_SHIFT;
    if (tq >> (64 - TRK_COMPACT_TS_SHIFT) || st->ts + step < st->ts)
        return 0;
    int64_t d = trk_unzigzag(a >> 1);
    st->seq += sd;
    st->ts += step;
    st->addr += (a & 1) ? (uint64_t)d : (uint64_t)d << 4;
    *pp = p;
    return kinds[alloc][(tag >> 4) & 3];
}

/* Normalised record classes; tags 0x20.. map to ALLOC/FREE/REALLOC with kind. */
enum trk_rec_class {
    TRK_RC_THREAD = TRK_REC_THREAD,
    TRK_RC_THREAD_NAME = TRK_REC_THREAD_NAME,
    TRK_RC_THREAD_EXIT = TRK_REC_THREAD_EXIT,
    TRK_RC_STACK = TRK_REC_STACK,
    TRK_RC_MODULES = TRK_REC_MODULES,
    TRK_RC_MODULE = TRK_REC_MODULE,
    TRK_RC_RSS = TRK_REC_RSS,
    TRK_RC_LOST = TRK_REC_LOST,
    TRK_RC_MMAP = TRK_REC_MMAP,
    TRK_RC_MUNMAP = TRK_REC_MUNMAP,
    TRK_RC_MREMAP = TRK_REC_MREMAP,
    TRK_RC_GPU_ALLOC = TRK_REC_GPU_ALLOC,
    TRK_RC_GPU_FREE = TRK_REC_GPU_FREE,
    TRK_RC_GPU_FAIL = TRK_REC_GPU_FAIL,
    TRK_RC_GPU_MAP = TRK_REC_GPU_MAP,
    TRK_RC_GPU_MEMINFO = TRK_REC_GPU_MEMINFO,
    TRK_RC_GPU_ENTER = TRK_REC_GPU_ENTER,
    TRK_RC_GPU_EXIT = TRK_REC_GPU_EXIT,
    TRK_RC_PY_CODE = TRK_REC_PY_CODE,
    TRK_RC_PY_IMPORT = TRK_REC_PY_IMPORT,
    TRK_RC_PY_IMPORT_END = TRK_REC_PY_IMPORT_END,
    TRK_RC_PY_MARK = TRK_REC_PY_MARK,
    TRK_RC_PY_INFO = TRK_REC_PY_INFO,
    TRK_RC_LEAK_SCAN = TRK_REC_LEAK_SCAN,
    TRK_RC_LEAK = TRK_REC_LEAK,
    TRK_RC_ALLOC = TRK_REC_ALLOC_BASE,
    TRK_RC_FREE = TRK_REC_FREE_BASE,
    TRK_RC_REALLOC = TRK_REC_REALLOC_BASE,
};

/* One decoded record. Which fields are meaningful depends on rclass; string
 * pointers point into the decoder's input buffer. */
struct trk_rec {
    uint8_t rclass; /* enum trk_rec_class */
    uint8_t kind;   /* allocator id for ALLOC/FREE/REALLOC */
    uint8_t file;   /* MMAP: TRK_MAP_FILE or TRK_MAP_ANON */
    uint64_t seq;   /* 0 for STACK and MODULE */
    uint64_t seq2;  /* REALLOC, MREMAP: seq of the acquisition half */
    uint64_t ts;
    uint64_t addr;  /* ALLOC/FREE/MMAP/MUNMAP addr; REALLOC/MREMAP old addr */
    uint64_t addr2; /* REALLOC/MREMAP new addr */
    uint64_t size;  /* ALLOC/REALLOC size; MMAP/MUNMAP len; MREMAP old len */
    uint64_t size2; /* MREMAP new len */
    uint64_t stack;
    uint64_t prot, flags;             /* MMAP prot/flags; MREMAP flags; THREAD TRK_THREAD_* */
    uint64_t tid;                     /* THREAD, THREAD_NAME */
    uint64_t id, parent, ip;          /* STACK */
    uint64_t generation, count, base; /* MODULES, MODULE; LOST uses count */
    uint64_t anon, file_bytes;        /* RSS */
    uint8_t api;                      /* GPU_*: enum trk_gpu_api; kind holds the gpu kind */
    uint8_t op;                       /* GPU_MAP: TRK_GPU_OP_* */
    int64_t device;                   /* GPU_*: ordinal, -1 unknown */
    uint64_t stream;                  /* GPU_ALLOC */
    uint64_t result;                  /* GPU_FAIL: driver error code */
    uint64_t handle, offset;          /* GPU_MAP */
    uint64_t used, total;             /* GPU_MEMINFO */
    const uint8_t *str;               /* THREAD_NAME name, MODULE path, PY_CODE name,
                                       * PY_IMPORT module */
    size_t str_len;
    const uint8_t *str2; /* PY_CODE file */
    size_t str2_len;
    uint64_t line;      /* PY_CODE first line */
    uint64_t what;      /* PY_MARK */
    uint64_t version;   /* PY_INFO (flags holds its flags) */
    uint8_t leak_class; /* LEAK: TRK_LEAK_* */
    uint64_t leader;    /* LEAK: the leader's address, 0 = none */
    /* LEAK_SCAN: flags holds its flags, count the blocks, size the root bytes */
    const uint8_t *buildid;
    size_t buildid_len;
    unsigned nseg;
    struct trk_segment seg[TRK_MODULE_SEGS_MAX];
};

/* Decodes the record at *pp (before end), updating st. Returns 0 and advances
 * *pp on success; -1 when the input is truncated or malformed, leaving *pp
 * and st untouched. */
int trk_rec_decode(const uint8_t **pp, const uint8_t *end, struct trk_rec_state *st,
                   struct trk_rec *out);

/* Allocator id -> stable lower-case name ("malloc", ...); "unknown" otherwise. */
const char *trk_alloc_kind_name(unsigned kind);

#endif /* TRK_RECORD_H */
