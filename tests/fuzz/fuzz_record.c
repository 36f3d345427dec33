/* SPDX-License-Identifier: MIT
 *
 * fuzz_record.c - fuzz target for the thread-stream record codec
 * (src/format/record.c) and for the reader's own decoding of it. The input is
 * raw stream bytes, not a file: no CRC stands between the fuzzer and the
 * decoder. Owns three properties:
 *   1. trk_rec_decode never reads past end, and on failure leaves *pp and the
 *      state untouched (record.h's contract);
 *   2. whatever it accepts, the encoders write back in at most as many bytes
 *      (they emit the shortest varints) and that decodes to the same record
 *      (the long or the compact form of ALLOC and FREE, as read; except a
 *      record whose time goes back, from a writer before version 4: the
 *      encoders write that as no time passing);
 *   3. the reader, given the bytes as one stream of a well-formed capture
 *      (split in two pieces, one LZ4-compressed, a watermark between), returns
 *      exactly the events reader.h derives from those records, up to the
 *      first malformed one (Python records included: format 4's compact
 *      tags make many more random inputs valid that far), with matching
 *      stacks, modules and status. This
 *      checks the reader's ALLOC/FREE fast path against trk_rec_decode. GPU
 *      records are expected as events (and their driver scopes as
 *      TRK_EVF_GPU_DRIVER on host events) only when reader.h defines that
 *      flag; an older reader must ignore them.
 */
#include <lz4.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/varint.h"
#include "format/format.h"
#include "format/record.h"
#include "fuzz.h"
#include "tracker/reader.h"

#define MREMAP_DONTUNMAP_FLAG 4

/* ---- Properties 1 and 2: the codec alone -------------------------------- */

static uint8_t *reencode(uint8_t *p, struct trk_rec_state *st, const struct trk_rec *r,
                         bool compact)
{
    switch (r->rclass) {
    case TRK_RC_ALLOC:
        if (compact)
            return trk_enc_alloc(p, st, r->kind, r->seq, r->ts, r->addr, r->size, r->stack);
        return trk_enc_alloc_long(p, st, r->kind, r->seq, r->ts, r->addr, r->size, r->stack);
    case TRK_RC_FREE:
        if (compact)
            return trk_enc_free(p, st, r->kind, r->seq, r->ts, r->addr);
        return trk_enc_free_long(p, st, r->kind, r->seq, r->ts, r->addr);
    case TRK_RC_REALLOC:
        return trk_enc_realloc(p, st, r->kind, r->seq, r->seq2, r->ts, r->addr, r->addr2,
                               r->size, r->stack);
    case TRK_RC_MMAP:
        return trk_enc_mmap(p, st, r->seq, r->ts, r->addr, r->size, r->prot, r->flags,
                            r->file == TRK_MAP_FILE, r->stack);
    case TRK_RC_MUNMAP:
        return trk_enc_munmap(p, st, r->seq, r->ts, r->addr, r->size);
    case TRK_RC_MREMAP:
        return trk_enc_mremap(p, st, r->seq, r->seq2, r->ts, r->addr, r->size, r->addr2,
                              r->size2, r->flags, r->stack);
    case TRK_RC_STACK: /* compact: a node record (version 5) */
        if (compact)
            return trk_enc_stack(p, st, r->id, r->parent, r->ip);
        return trk_enc_stack_long(p, st, r->id, r->parent, r->ip);
    case TRK_RC_THREAD:
        return trk_enc_thread(p, st, r->seq, r->ts, r->tid, r->flags);
    case TRK_RC_THREAD_NAME:
        return trk_enc_thread_name(p, st, r->seq, r->ts, r->tid, (const char *)r->str,
                                   r->str_len);
    case TRK_RC_THREAD_EXIT:
        return trk_enc_thread_exit(p, st, r->seq, r->ts);
    case TRK_RC_RSS:
        return trk_enc_rss(p, st, r->seq, r->ts, r->anon, r->file_bytes);
    case TRK_RC_LOST:
        return trk_enc_lost(p, st, r->seq, r->ts, r->count);
    case TRK_RC_MODULES:
        return trk_enc_modules(p, st, r->seq, r->ts, r->generation, r->count);
    case TRK_RC_MODULE:
        return trk_enc_module(p, r->generation, r->base, (const char *)r->str, r->str_len,
                              r->buildid, r->buildid_len, r->seg, r->nseg);
    case TRK_RC_GPU_ALLOC:
        return trk_enc_gpu_alloc(p, st, r->seq, r->ts, r->api, r->kind, r->device, r->addr,
                                 r->size, r->stream, r->stack);
    case TRK_RC_GPU_FREE:
        return trk_enc_gpu_free(p, st, r->seq, r->ts, r->api, r->kind, r->device, r->addr);
    case TRK_RC_GPU_FAIL:
        return trk_enc_gpu_fail(p, st, r->seq, r->ts, r->api, r->kind, r->device, r->size,
                                r->result, r->stack);
    case TRK_RC_GPU_MAP:
        return trk_enc_gpu_map(p, st, r->seq, r->ts, r->api, r->op, r->device, r->addr, r->size,
                               r->handle, r->offset);
    case TRK_RC_GPU_MEMINFO:
        return trk_enc_gpu_meminfo(p, st, r->seq, r->ts, (uint64_t)r->device, r->used,
                                   r->total);
    case TRK_RC_GPU_ENTER:
    case TRK_RC_GPU_EXIT:
        return trk_enc_gpu_scope(p, r->rclass == TRK_RC_GPU_ENTER);
    case TRK_RC_PY_CODE:
        return trk_enc_py_code(p, r->id, r->line, (const char *)r->str, r->str_len,
                               (const char *)r->str2, r->str2_len);
    case TRK_RC_PY_IMPORT:
        return trk_enc_py_import(p, st, r->seq, r->ts, (const char *)r->str, r->str_len);
    case TRK_RC_PY_IMPORT_END:
        return trk_enc_py_import_end(p, st, r->seq, r->ts);
    case TRK_RC_PY_MARK:
        return trk_enc_py_mark(p, st, r->seq, r->ts, r->what);
    case TRK_RC_PY_INFO:
        return trk_enc_py_info(p, st, r->seq, r->ts, r->version, r->flags);
    case TRK_RC_LEAK_SCAN:
        return trk_enc_leak_scan(p, st, r->seq, r->ts, r->flags, r->count, r->size);
    case TRK_RC_LEAK:
        return trk_enc_leak(p, st, r->seq, r->ts, r->addr, r->leak_class, r->leader);
    default:
        trk_fuzz_fail("decoder returned an unknown record class");
    }
}

static bool same_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static bool same_record(const struct trk_rec *a, const struct trk_rec *b)
{
    if (a->rclass != b->rclass || a->kind != b->kind || a->file != b->file ||
        a->seq != b->seq || a->seq2 != b->seq2 || a->ts != b->ts || a->addr != b->addr ||
        a->addr2 != b->addr2 || a->size != b->size || a->size2 != b->size2 ||
        a->stack != b->stack || a->prot != b->prot || a->flags != b->flags ||
        a->tid != b->tid || a->id != b->id || a->parent != b->parent || a->ip != b->ip ||
        a->generation != b->generation || a->count != b->count || a->base != b->base ||
        a->anon != b->anon || a->file_bytes != b->file_bytes || a->nseg != b->nseg ||
        a->api != b->api || a->op != b->op || a->device != b->device ||
        a->stream != b->stream || a->result != b->result || a->handle != b->handle ||
        a->offset != b->offset || a->used != b->used || a->total != b->total ||
        a->line != b->line || a->what != b->what || a->version != b->version ||
        a->leak_class != b->leak_class || a->leader != b->leader)
        return false;
    if (!same_bytes(a->str, a->str_len, b->str, b->str_len) ||
        !same_bytes(a->str2, a->str2_len, b->str2, b->str2_len) ||
        !same_bytes(a->buildid, a->buildid_len, b->buildid, b->buildid_len))
        return false;
    for (unsigned i = 0; i < a->nseg; i++)
        if (a->seg[i].vaddr != b->seg[i].vaddr || a->seg[i].memsz != b->seg[i].memsz ||
            a->seg[i].flags != b->seg[i].flags)
            return false;
    return true;
}

static void check_roundtrip(const struct trk_rec_state *before, const struct trk_rec_state *after,
                            const struct trk_rec *rec, const uint8_t *at, size_t consumed)
{
    static uint8_t buf[TRK_REC_MODULE_MAX + TRK_REC_PY_MAX + TRK_REC_MAX];
    if (rec->seq && rec->ts < before->ts)
        return; /* time going back: only older writers wrote that */
    struct trk_rec_state st = *before;
    bool compact = (*at & TRK_REC_COMPACT) || (*at >= TRK_REC_NODE && *at <= TRK_REC_NODE_ID);
    uint8_t *end = reencode(buf, &st, rec, compact);
    size_t len = (size_t)(end - buf);
    if (len > consumed)
        trk_fuzz_fail("re-encoding a record made it longer");
    if (rec->rclass != TRK_RC_MODULE && memcmp(&st, after, sizeof(st)) != 0)
        trk_fuzz_fail("encoder and decoder disagree on the delta state");
    struct trk_rec again;
    struct trk_rec_state st2 = *before;
    const uint8_t *p = buf;
    if (trk_rec_decode(&p, end, &st2, &again) != 0 || p != end)
        trk_fuzz_fail("a re-encoded record does not decode");
    if (!same_record(rec, &again) || memcmp(&st2, after, sizeof(st2)) != 0)
        trk_fuzz_fail("a re-encoded record decodes differently");
}

/* Decodes everything, stepping one byte past each malformed spot so that the
 * whole input is exercised. Returns how many bytes form the valid prefix (up
 * to the first malformed record), as the reader must see it. */
static size_t codec_pass(const uint8_t *data, size_t size)
{
    struct trk_rec_state st;
    memset(&st, 0, sizeof(st));
    const uint8_t *p = data, *end = data + size;
    size_t prefix = SIZE_MAX;
    while (p < end) {
        struct trk_rec rec;
        struct trk_rec_state before = st;
        const uint8_t *at = p;
        if (trk_rec_decode(&p, end, &st, &rec) != 0) {
            if (p != at || memcmp(&st, &before, sizeof(st)) != 0)
                trk_fuzz_fail("a failed decode moved the pointer or changed the state");
            if (prefix == SIZE_MAX)
                prefix = (size_t)(at - data);
            p = at + 1;
            continue;
        }
        if (p <= at || p > end)
            trk_fuzz_fail("a decode consumed nothing or ran past the end");
        check_roundtrip(&before, &st, &rec, at, (size_t)(p - at));
    }
    return prefix == SIZE_MAX ? size : prefix;
}

/* ---- Property 3: the reader on the same bytes -------------------------- */

struct expect {
    struct trk_event *ev;
    size_t n, cap;
    char (*names)[TRK_THREAD_NAME_MAX + 1]; /* THREAD_NAME text per event, else "" */
    struct trk_rec *mods;                    /* MODULE records in order */
    size_t nmods, mods_cap;
    uint64_t records;
    size_t half;    /* a record boundary near the middle of the prefix, or 0 */
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * elem);
    if (!q)
        trk_fuzz_fail("out of memory in the harness");
    *cap = c;
    return q;
}

static struct trk_event *expect_new(struct expect *x, const struct trk_rec *r, uint32_t tid,
                                    uint8_t type)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        struct trk_event *ev = realloc(x->ev, cap * sizeof(*ev));
        if (ev)
            x->ev = ev;
        char(*names)[TRK_THREAD_NAME_MAX + 1] = realloc(x->names, cap * sizeof(*names));
        if (names)
            x->names = names;
        if (!ev || !names)
            trk_fuzz_fail("out of memory in the harness");
        x->cap = cap;
    }
    struct trk_event *e = &x->ev[x->n];
    memset(e, 0, sizeof(*e));
    x->names[x->n][0] = '\0';
    x->n++;
    e->seq = r->seq;
    e->ts = r->ts;
    e->tid = tid;
    e->type = type;
    return e;
}

#ifdef TRK_EVF_GPU_DRIVER
/* GPU events exist in this reader (reader.h defines their flag with them). */
#define HAVE_GPU_EVENTS 1
#else
#define HAVE_GPU_EVENTS 0
#define TRK_EVF_GPU_DRIVER 0
#endif

/* Per-stream decoding state the events depend on. */
struct stream_ctx {
    uint32_t tid;       /* of the last THREAD record */
    uint32_t gpu_depth; /* GPU_ENTER records not yet closed */
};

#if HAVE_GPU_EVENTS
/* Ordinals outside [-1, INT32_MAX] read as unknown (reader.h). */
static int32_t gpu_device(int64_t d)
{
    return d >= -1 && d <= INT32_MAX ? (int32_t)d : -1;
}

static void expect_gpu(struct expect *x, const struct trk_rec *r, const struct stream_ctx *c)
{
    struct trk_event *e;
    switch (r->rclass) {
    case TRK_RC_GPU_ALLOC:
    case TRK_RC_GPU_FREE:
    case TRK_RC_GPU_FAIL:
        e = expect_new(x, r, c->tid,
                       r->rclass == TRK_RC_GPU_ALLOC  ? TRK_EV_GPU_ALLOC
                       : r->rclass == TRK_RC_GPU_FREE ? TRK_EV_GPU_FREE
                                                      : TRK_EV_GPU_FAIL);
        e->kind = r->kind;
        e->u.gpu.device = gpu_device(r->device);
        e->u.gpu.api = r->api;
        if (r->rclass != TRK_RC_GPU_FAIL)
            e->addr = r->addr;
        if (r->rclass != TRK_RC_GPU_FREE) {
            e->size = r->size;
            e->stack = r->stack;
        }
        if (r->rclass == TRK_RC_GPU_ALLOC)
            e->u.gpu.stream = r->stream;
        if (r->rclass == TRK_RC_GPU_FAIL)
            e->u.gpu.result = r->result;
        break;
    case TRK_RC_GPU_MAP:
        e = expect_new(x, r, c->tid, r->op == TRK_GPU_OP_MAP ? TRK_EV_GPU_MAP : TRK_EV_GPU_UNMAP);
        e->addr = r->addr;
        e->size = r->size;
        e->u.gpu_map.handle = r->handle;
        e->u.gpu_map.offset = r->offset;
        e->u.gpu_map.device = gpu_device(r->device);
        e->u.gpu_map.api = r->api;
        break;
    case TRK_RC_GPU_MEMINFO:
        e = expect_new(x, r, c->tid, TRK_EV_GPU_MEMINFO);
        e->u.gpu_meminfo.used = r->used;
        e->u.gpu_meminfo.total = r->total;
        e->u.gpu_meminfo.device = gpu_device(r->device);
        break;
    default:
        break;
    }
}
#endif

/* The event mapping reader.h documents, written from its text. */
/* The reader keeps one entry per loaded object (trk_reader_modules): a
 * MODULE record equal in base, path and build-id to one of the last 64 kept
 * only raises that one's generation. The cap on their number
 * (TRK_MODULES_MAX, 2^16) cannot be reached by a fuzz input. */
static bool module_repeat(struct expect *x, const struct trk_rec *r)
{
    for (size_t i = x->nmods; i-- > 0 && i + 64 >= x->nmods;) {
        struct trk_rec *w = &x->mods[i];
        size_t plen = strnlen((const char *)w->str, w->str_len); /* the reader's C string */
        if (w->base == r->base && w->buildid_len == r->buildid_len && plen == r->str_len &&
            memcmp(w->str, r->str, r->str_len) == 0 &&
            (r->buildid_len == 0 || memcmp(w->buildid, r->buildid, r->buildid_len) == 0)) {
            if (r->generation > w->generation)
                w->generation = r->generation;
            return true;
        }
    }
    return false;
}

static void expect_record(struct expect *x, const struct trk_rec *r, struct stream_ctx *c)
{
    struct trk_event *e, *o;
    /* Host memory events inside a GPU call are the driver's. */
    uint8_t drv = c->gpu_depth ? TRK_EVF_GPU_DRIVER : 0;
    switch (r->rclass) {
    case TRK_RC_ALLOC:
        e = expect_new(x, r, c->tid, TRK_EV_ALLOC);
        e->addr = r->addr;
        e->size = r->size;
        e->stack = r->stack;
        e->kind = r->kind;
        e->flags = drv;
        break;
    case TRK_RC_FREE:
        e = expect_new(x, r, c->tid, TRK_EV_FREE);
        e->addr = r->addr;
        e->kind = r->kind;
        e->flags = drv;
        break;
    case TRK_RC_REALLOC:
    case TRK_RC_MREMAP: {
        bool remap = r->rclass == TRK_RC_MREMAP;
        uint8_t flags = remap ? ((r->flags & MREMAP_DONTUNMAP_FLAG) ? TRK_EVF_DONTUNMAP : 0)
                              : TRK_EVF_FROM_REALLOC;
        flags |= drv;
        o = expect_new(x, r, c->tid, remap ? TRK_EV_MREMAP_OLD : TRK_EV_FREE);
        o->addr = r->addr;
        o->kind = r->kind;
        o->flags = flags;
        o->u.pair.seq = r->seq2;
        o->u.pair.addr = r->addr2;
        e = expect_new(x, r, c->tid, remap ? TRK_EV_MREMAP_NEW : TRK_EV_ALLOC);
        o = e - 1; /* the array may have moved */
        e->seq = r->seq2;
        e->addr = r->addr2;
        e->kind = r->kind;
        e->flags = flags;
        e->stack = r->stack;
        e->u.pair.seq = r->seq;
        e->u.pair.addr = r->addr;
        if (remap) {
            o->size = r->size;
            e->size = r->size2;
            o->u.pair.flags = e->u.pair.flags = r->flags;
        } else {
            e->size = r->size;
        }
        break;
    }
    case TRK_RC_MMAP:
        e = expect_new(x, r, c->tid, TRK_EV_MMAP);
        e->addr = r->addr;
        e->size = r->size;
        e->stack = r->stack;
        e->flags = (r->file == TRK_MAP_FILE ? TRK_EVF_FILE : 0) | drv;
        e->u.map.prot = r->prot;
        e->u.map.flags = r->flags;
        break;
    case TRK_RC_MUNMAP:
        e = expect_new(x, r, c->tid, TRK_EV_MUNMAP);
        e->addr = r->addr;
        e->size = r->size;
        e->flags = drv;
        break;
    case TRK_RC_THREAD:
        c->tid = (uint32_t)r->tid;
        e = expect_new(x, r, c->tid, TRK_EV_THREAD_START);
        e->flags = (r->flags & TRK_THREAD_INTERNAL) ? TRK_EVF_INTERNAL : 0;
        break;
    case TRK_RC_THREAD_NAME:
        e = expect_new(x, r, c->tid, TRK_EV_THREAD_NAME);
        e->u.thread_name.tid = r->tid;
        memcpy(x->names[x->n - 1], r->str, r->str_len);
        x->names[x->n - 1][r->str_len] = '\0';
        break;
    case TRK_RC_THREAD_EXIT:
        expect_new(x, r, c->tid, TRK_EV_THREAD_EXIT);
        break;
    case TRK_RC_RSS:
        e = expect_new(x, r, c->tid, TRK_EV_RSS);
        e->u.rss.anon = r->anon;
        e->u.rss.file = r->file_bytes;
        break;
    case TRK_RC_LOST:
        e = expect_new(x, r, c->tid, TRK_EV_LOST);
        e->u.lost.count = r->count;
        break;
    case TRK_RC_MODULES:
        e = expect_new(x, r, c->tid, TRK_EV_MODULES);
        e->u.modules.generation = r->generation;
        e->u.modules.count = r->count;
        break;
    case TRK_RC_LEAK_SCAN:
        e = expect_new(x, r, c->tid, TRK_EV_LEAK_SCAN);
        e->u.leak_scan.flags = r->flags;
        e->u.leak_scan.blocks = r->count;
        e->u.leak_scan.roots = r->size;
        break;
    case TRK_RC_LEAK:
        e = expect_new(x, r, c->tid, TRK_EV_LEAK);
        e->addr = r->addr;
        e->u.leak.cls = r->leak_class;
        e->u.leak.leader = r->leader;
        break;
    case TRK_RC_PY_INFO:
        e = expect_new(x, r, c->tid, TRK_EV_PY_INFO);
        e->u.py_info.version = r->version;
        e->u.py_info.flags = r->flags;
        break;
    case TRK_RC_PY_IMPORT: /* the name: not compared */
        expect_new(x, r, c->tid, TRK_EV_PY_IMPORT);
        break;
    case TRK_RC_PY_IMPORT_END:
        expect_new(x, r, c->tid, TRK_EV_PY_IMPORT_END);
        break;
    case TRK_RC_PY_MARK:
        e = expect_new(x, r, c->tid, TRK_EV_PY_MARK);
        e->u.py_mark.what = r->what;
        break;
    case TRK_RC_MODULE:
        if (module_repeat(x, r))
            break;
        x->mods = grow(x->mods, &x->mods_cap, x->nmods + 1, sizeof(*x->mods));
        x->mods[x->nmods++] = *r;
        break;
    case TRK_RC_GPU_ENTER:
        if (c->gpu_depth < UINT32_MAX)
            c->gpu_depth++;
        break;
    case TRK_RC_GPU_EXIT:
        if (c->gpu_depth) /* an EXIT without its ENTER must not tag later events */
            c->gpu_depth--;
        break;
    default:
#if HAVE_GPU_EVENTS
        expect_gpu(x, r, c);
#endif
        break; /* STACK: checked against trk_reader_stack afterwards */
    }
}

static void expect_build(struct expect *x, const uint8_t *data, size_t prefix)
{
    struct trk_rec_state st;
    memset(&st, 0, sizeof(st));
    const uint8_t *p = data, *end = data + prefix;
    struct stream_ctx ctx = {0, 0};
    while (p < end) {
        struct trk_rec rec;
        if (trk_rec_decode(&p, end, &st, &rec) != 0)
            trk_fuzz_fail("the valid prefix does not decode twice");
        x->records++;
        expect_record(x, &rec, &ctx);
        size_t off = (size_t)(p - data);
        if (x->half == 0 && off >= prefix / 2 && p < end)
            x->half = off;
    }
}

static uint8_t *put_chunk(uint8_t *p, uint8_t type, uint8_t codec, uint32_t stream,
                          const uint8_t *payload, uint32_t stored, uint32_t raw, uint64_t arg)
{
    memcpy(p, TRK_CHUNK_MAGIC, 4);
    p[4] = type;
    p[5] = codec;
    trk_put_le16(p + 6, 0);
    trk_put_le32(p + 8, stream);
    trk_put_le32(p + 12, stored);
    trk_put_le32(p + 16, raw);
    trk_put_le64(p + 24, arg);
    if (stored)
        memcpy(p + TRK_CHUNK_HEAD, payload, stored);
    uint32_t crc = trk_crc32c(0, p + 4, 16);
    crc = trk_crc32c(crc, p + 24, 8);
    crc = trk_crc32c(crc, p + TRK_CHUNK_HEAD, stored);
    trk_put_le32(p + 20, crc);
    return p + TRK_CHUNK_HEAD + stored;
}

/* A capture holding data[0, size) as stream 7: the first piece stored, a
 * watermark, the second piece LZ4 when that is smaller (as the writer
 * does), then END. Returns its length; *out is malloc'ed. */
static size_t build_capture(const uint8_t *data, size_t size, size_t half, uint64_t wm,
                            uint8_t **out)
{
    size_t cap = TRK_FMT_HEADER_FIXED + 4 + 4 * TRK_CHUNK_HEAD + size +
                 (size_t)LZ4_compressBound((int)size) + 16;
    uint8_t *f = calloc(1, cap);
    uint8_t *lz = malloc((size_t)LZ4_compressBound((int)size) + 1);
    if (!f || !lz)
        trk_fuzz_fail("out of memory in the harness");
    memcpy(f, TRK_FMT_MAGIC, TRK_FMT_MAGIC_LEN);
    trk_put_le16(f + 8, TRK_FMT_VERSION);
    trk_put_le32(f + 12, TRK_FMT_HEADER_FIXED + 4);
    trk_put_le32(f + 16, 4242);
    trk_put_le32(f + 28, 4096);
    trk_put_le32(f + TRK_FMT_HEADER_FIXED, trk_crc32c(0, f, TRK_FMT_HEADER_FIXED));
    uint8_t *p = f + TRK_FMT_HEADER_FIXED + 4;
    const uint32_t stream = 7;
    p = put_chunk(p, TRK_CHUNK_DATA, TRK_CODEC_STORED, stream, data, (uint32_t)half,
                  (uint32_t)half, 0);
    if (half > 0)
        p = put_chunk(p, TRK_CHUNK_WATERMARK, TRK_CODEC_STORED, 0, NULL, 0, 0, wm);
    size_t rest = size - half;
    int n = rest ? LZ4_compress_default((const char *)data + half, (char *)lz, (int)rest,
                                        LZ4_compressBound((int)rest))
                 : 0;
    if (n > 0 && (size_t)n < rest)
        p = put_chunk(p, TRK_CHUNK_DATA, TRK_CODEC_LZ4, stream, lz, (uint32_t)n,
                      (uint32_t)rest, half);
    else if (rest > 0)
        p = put_chunk(p, TRK_CHUNK_DATA, TRK_CODEC_STORED, stream, data + half,
                      (uint32_t)rest, (uint32_t)rest, half);
    p = put_chunk(p, TRK_CHUNK_END, TRK_CODEC_STORED, 0, NULL, 0, 0, 0);
    free(lz);
    *out = f;
    return (size_t)(p - f);
}

/* Union members compared field by field: copies need not keep padding. */
static bool same_payload(const struct trk_event *a, const struct trk_event *b)
{
    switch (a->type) {
    case TRK_EV_MMAP:
        return a->u.map.prot == b->u.map.prot && a->u.map.flags == b->u.map.flags;
    case TRK_EV_ALLOC:
    case TRK_EV_FREE:
    case TRK_EV_MREMAP_OLD:
    case TRK_EV_MREMAP_NEW:
        return a->u.pair.seq == b->u.pair.seq && a->u.pair.addr == b->u.pair.addr &&
               a->u.pair.flags == b->u.pair.flags;
    case TRK_EV_RSS:
        return a->u.rss.anon == b->u.rss.anon && a->u.rss.file == b->u.rss.file;
    case TRK_EV_LOST:
        return a->u.lost.count == b->u.lost.count;
    case TRK_EV_MODULES:
        return a->u.modules.generation == b->u.modules.generation &&
               a->u.modules.count == b->u.modules.count;
    case TRK_EV_LEAK_SCAN:
        return a->u.leak_scan.flags == b->u.leak_scan.flags &&
               a->u.leak_scan.blocks == b->u.leak_scan.blocks &&
               a->u.leak_scan.roots == b->u.leak_scan.roots;
    case TRK_EV_LEAK:
        return a->u.leak.cls == b->u.leak.cls && a->u.leak.leader == b->u.leak.leader;
    case TRK_EV_PY_INFO:
        return a->u.py_info.version == b->u.py_info.version &&
               a->u.py_info.flags == b->u.py_info.flags;
    case TRK_EV_PY_MARK:
        return a->u.py_mark.what == b->u.py_mark.what;
#if HAVE_GPU_EVENTS
    case TRK_EV_GPU_ALLOC:
    case TRK_EV_GPU_FREE:
    case TRK_EV_GPU_FAIL:
        return a->u.gpu.stream == b->u.gpu.stream && a->u.gpu.result == b->u.gpu.result &&
               a->u.gpu.device == b->u.gpu.device && a->u.gpu.api == b->u.gpu.api;
    case TRK_EV_GPU_MAP:
    case TRK_EV_GPU_UNMAP:
        return a->u.gpu_map.handle == b->u.gpu_map.handle &&
               a->u.gpu_map.offset == b->u.gpu_map.offset &&
               a->u.gpu_map.device == b->u.gpu_map.device && a->u.gpu_map.api == b->u.gpu_map.api;
    case TRK_EV_GPU_MEMINFO:
        return a->u.gpu_meminfo.used == b->u.gpu_meminfo.used &&
               a->u.gpu_meminfo.total == b->u.gpu_meminfo.total &&
               a->u.gpu_meminfo.device == b->u.gpu_meminfo.device;
#endif
    default:
        return true; /* THREAD_START, THREAD_EXIT: no payload */
    }
}

static void compare_event(const struct trk_event *got, const struct trk_event *want,
                          const char *want_name)
{
    if (got->seq != want->seq || got->ts != want->ts || got->addr != want->addr ||
        got->size != want->size || got->stack != want->stack || got->tid != want->tid ||
        got->type != want->type || got->kind != want->kind || got->flags != want->flags)
        trk_fuzz_fail("reader event differs from the decoded record");
    if (want->type == TRK_EV_THREAD_NAME) {
        if (got->u.thread_name.tid != want->u.thread_name.tid ||
            strcmp(got->u.thread_name.name, want_name) != 0)
            trk_fuzz_fail("reader thread name differs from the decoded record");
    } else if (!same_payload(got, want)) {
        trk_fuzz_fail("reader event payload differs from the decoded record");
    }
}

struct stack_def {
    uint64_t id, parent, ip;
    size_t order;
};

static int by_id_then_order(const void *a, const void *b)
{
    const struct stack_def *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Every node id defined by a STACK record answers with the frame of its last
 * definition. Ids below 2^20 are always accepted (decode.c's sanity bound
 * grows from there), so only those are checked. */
static void check_stacks(const struct trk_reader *r, const uint8_t *data, size_t prefix)
{
    struct trk_rec_state st;
    memset(&st, 0, sizeof(st));
    const uint8_t *p = data, *end = data + prefix;
    struct stack_def *defs = NULL;
    size_t n = 0, cap = 0;
    struct trk_rec rec;
    while (p < end && trk_rec_decode(&p, end, &st, &rec) == 0) {
        if (rec.rclass != TRK_RC_STACK || rec.id >= (1u << 20))
            continue;
        defs = grow(defs, &cap, n + 1, sizeof(*defs));
        defs[n] = (struct stack_def){rec.id, rec.parent, rec.ip, n};
        n++;
    }
    if (n)
        qsort(defs, n, sizeof(*defs), by_id_then_order);
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && defs[i + 1].id == defs[i].id)
            continue; /* redefined later */
        /* A parent of 2^64-1 collides with decode.c's "undefined" marker
         * (reported separately), so such nodes are not asserted on. */
        if (defs[i].parent == UINT64_MAX)
            continue;
        uint64_t ip = 0;
        if (trk_reader_stack(r, defs[i].id, &ip, 1) != 1 || ip != defs[i].ip)
            trk_fuzz_fail("trk_reader_stack does not return a defined node's frame");
    }
    free(defs);
}

static void check_modules(const struct trk_reader *r, const struct expect *x)
{
    const struct trk_module *mods;
    size_t n = trk_reader_modules(r, &mods);
    if (n != x->nmods)
        trk_fuzz_fail("reader module count differs from the MODULE records");
    for (size_t i = 0; i < n; i++) {
        const struct trk_module *m = &mods[i];
        const struct trk_rec *w = &x->mods[i];
        if (m->generation != w->generation || m->base != w->base || m->nseg != w->nseg ||
            strlen(m->path) > w->str_len || memcmp(m->path, w->str, strlen(m->path)) != 0 ||
            !same_bytes(m->buildid, m->buildid_len, w->buildid, w->buildid_len))
            trk_fuzz_fail("reader module differs from the MODULE record");
        for (unsigned k = 0; k < m->nseg; k++)
            if (m->seg[k].vaddr != w->seg[k].vaddr || m->seg[k].memsz != w->seg[k].memsz ||
                m->seg[k].flags != w->seg[k].flags)
                trk_fuzz_fail("reader module segment differs from the MODULE record");
    }
}

static void reader_pass(const uint8_t *data, size_t size, size_t prefix)
{
    struct expect x;
    memset(&x, 0, sizeof(x));
    expect_build(&x, data, prefix);
    /* The watermark comes from the input too, so that early release (and
     * the order check behind it) is exercised with arbitrary bounds. */
    uint64_t wm = size >= 8 ? trk_get_le64(data + size - 8) : 0;
    uint8_t *file;
    size_t flen = build_capture(data, size, x.half, wm, &file);
    int fd = trk_fuzz_memfd(file, flen);
    free(file);
    if (fd < 0)
        trk_fuzz_fail("memfd_create failed (environment, not the reader)");
    struct trk_reader *r;
    char err[256];
    if (trk_reader_open_fd(fd, "record.bin", &r, err, sizeof(err)) != 0)
        trk_fuzz_fail("a well-formed capture does not open");
    struct trk_event e;
    size_t i = 0;
    int rc;
    while ((rc = trk_reader_next(r, &e)) == 1) {
        if (i >= x.n)
            trk_fuzz_fail("reader returned more events than the records make");
        compare_event(&e, &x.ev[i], x.names[i]);
        i++;
    }
    if (rc != 0 || i != x.n)
        trk_fuzz_fail("reader returned fewer events than the records make");
    const struct trk_reader_status *s = trk_reader_status(r);
    bool broken = prefix < size;
    if (s->records != x.records || s->events != x.n || s->truncated || !s->end_seen ||
        s->checksum_failures || s->bad_chunks || s->streams != 1 ||
        s->broken_streams != (broken ? 1u : 0u) || s->bytes_lost != size - prefix)
        trk_fuzz_fail("reader status does not match the stream");
    check_modules(r, &x);
    check_stacks(r, data, prefix);
    trk_reader_close(r);
    free(x.ev);
    free(x.names);
    free(x.mods);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t prefix = codec_pass(data, size);
    /* A stream piece is at most 16 MiB raw (FORMAT.md §2). */
    if (size <= TRK_CHUNK_RAW_MAX / 2)
        reader_pass(data, size, prefix);
    return 0;
}
