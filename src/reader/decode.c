/* SPDX-License-Identifier: MIT
 *
 * decode.c - thread streams (docs/FORMAT.md §4): turns the records of each
 * DATA piece into events queued on their stream, and keeps the definition
 * tables (stack trie, modules, thread names). Owns: offset continuity,
 * marking a stream broken, and the per-stream GPU driver scope that tags
 * host events (TRK_EVF_GPU_DRIVER). Must not: order events
 * across streams (merge.c does) or allocate per event.
 */
#include <stdlib.h>
#include <string.h>

#include "common/lz_hist.h"
#include "common/varint.h"
#include "common/zlink.h"
#include "reader/reader_internal.h"

#define NAME_BLOCK            65536
#define MREMAP_DONTUNMAP_FLAG 4 /* linux/mman.h; not in every libc's headers */

/* ---- Stream table -------------------------------------------------------- */

static size_t hash_id(uint32_t id, size_t cap)
{
    return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static int index_grow(struct trk_reader *r)
{
    size_t cap = r->stream_index_cap ? r->stream_index_cap * 2 : 64;
    uint32_t *idx = calloc(cap, sizeof(*idx));
    if (!idx)
        return -1;
    for (size_t i = 0; i < r->nstreams; i++) {
        size_t h = hash_id(r->streams[i].id, cap);
        while (idx[h])
            h = (h + 1) & (cap - 1);
        idx[h] = (uint32_t)i + 1;
    }
    free(r->stream_index);
    r->stream_index = idx;
    r->stream_index_cap = cap;
    return 0;
}

/* Returns the stream's index, creating it; SIZE_MAX when out of memory. */
static size_t stream_lookup(struct trk_reader *r, uint32_t id)
{
    if (r->stream_index_cap) {
        size_t h = hash_id(id, r->stream_index_cap);
        while (r->stream_index[h]) {
            size_t i = r->stream_index[h] - 1;
            if (r->streams[i].id == id)
                return i;
            h = (h + 1) & (r->stream_index_cap - 1);
        }
    }
    if (r->nstreams >= UINT32_MAX - 1)
        return SIZE_MAX;
    if ((r->nstreams + 1) * 2 > r->stream_index_cap && index_grow(r) < 0)
        return SIZE_MAX;
    if (r->nstreams == r->streams_cap) {
        size_t cap = r->streams_cap ? r->streams_cap * 2 : 16;
        struct trk_stream *ns = realloc(r->streams, cap * sizeof(*ns));
        if (!ns)
            return SIZE_MAX;
        r->streams = ns;
        r->streams_cap = cap;
    }
    size_t i = r->nstreams++;
    struct trk_stream *s = &r->streams[i];
    memset(s, 0, sizeof(*s));
    s->id = id;
    size_t h = hash_id(id, r->stream_index_cap);
    while (r->stream_index[h])
        h = (h + 1) & (r->stream_index_cap - 1);
    r->stream_index[h] = (uint32_t)i + 1;
    r->status.streams++;
    return i;
}

/* ---- Definitions ----------------------------------------------------------- */

static void define_stack(struct trk_reader *r, const struct trk_rec *rec)
{
    /* Ids are dense process-wide counters; a wildly larger one is corrupt
     * and must not make us allocate gigabytes. */
    uint64_t limit = 2 * (uint64_t)r->stacks_defined + (1u << 20);
    if (rec->id >= limit) {
        r->status.bad_stacks++;
        return;
    }
    if (rec->id >= r->stacks_cap) {
        size_t cap = r->stacks_cap ? r->stacks_cap : 4096;
        while (cap <= rec->id)
            cap *= 2;
        struct trk_stack_node *n = realloc(r->stacks, cap * sizeof(*n));
        if (!n) {
            r->status.bad_stacks++;
            return;
        }
        for (size_t i = r->stacks_cap; i < cap; i++)
            n[i].parent = UINT64_MAX;
        r->stacks = n;
        r->stacks_cap = cap;
    }
    if (rec->parent == UINT64_MAX) {
        r->status.bad_stacks++; /* that value marks "undefined" here; no writer makes it */
        return;
    }
    struct trk_stack_node *node = &r->stacks[rec->id];
    if (node->parent == UINT64_MAX)
        r->stacks_defined++;
    node->parent = rec->parent;
    node->ip = rec->ip;
}

int trk_reader_stack(const struct trk_reader *r, uint64_t stack_id, uint64_t *ips, int max)
{
    int n = 0;
    uint64_t id = stack_id;
    /* max also bounds a cycle that a corrupt file may contain. */
    while (n < max && id != 0 && id < r->stacks_cap && r->stacks[id].parent != UINT64_MAX) {
        ips[n++] = r->stacks[id].ip;
        id = r->stacks[id].parent;
    }
    return n;
}

static const char *store_name(struct trk_reader *r, const uint8_t *s, size_t len);

/* Python code objects: ids are dense per capture like stack ids, so the same
 * sanity bound applies. A second definition of an id keeps the first. */
static void define_pycode(struct trk_reader *r, const struct trk_rec *rec)
{
    uint64_t limit = 2 * (uint64_t)r->pycodes_defined + (1u << 20);
    if (rec->id >= limit) {
        r->status.bad_stacks++;
        return;
    }
    if (rec->id >= r->pycodes_cap) {
        size_t cap = r->pycodes_cap ? r->pycodes_cap : 1024;
        while (cap <= rec->id)
            cap *= 2;
        struct trk_pycode *n = realloc(r->pycodes, cap * sizeof(*n));
        if (!n)
            return;
        memset(n + r->pycodes_cap, 0, (cap - r->pycodes_cap) * sizeof(*n));
        r->pycodes = n;
        r->pycodes_cap = cap;
    }
    struct trk_pycode *c = &r->pycodes[rec->id];
    if (c->name)
        return;
    c->name = store_name(r, rec->str, rec->str_len);
    c->file = store_name(r, rec->str2, rec->str2_len);
    c->firstline = rec->line > UINT32_MAX ? UINT32_MAX : (uint32_t)rec->line;
    r->pycodes_defined++;
}

const struct trk_pycode *trk_reader_pycode(const struct trk_reader *r, uint64_t id)
{
    if (id == 0 || id >= r->pycodes_cap || !r->pycodes[id].name)
        return NULL;
    return &r->pycodes[id];
}

/* Is this object already known (same load bias, path and build-id)? Then a
 * later snapshot only repeats it: keep one entry, with the newest generation,
 * so memory follows the number of distinct objects, not of snapshots. */
static int module_repeat(struct trk_reader *r, const struct trk_rec *rec)
{
    for (size_t i = r->nmodules; i-- > 0 && i + 64 >= r->nmodules;) {
        struct trk_module *m = &r->modules[i];
        if (m->base == rec->base && m->buildid_len == rec->buildid_len &&
            strlen(m->path) == rec->str_len && memcmp(m->path, rec->str, rec->str_len) == 0 &&
            (rec->buildid_len == 0 || memcmp(m->buildid, rec->buildid, rec->buildid_len) == 0)) {
            if (rec->generation > m->generation)
                m->generation = rec->generation;
            return 1;
        }
    }
    return 0;
}

static void define_module(struct trk_reader *r, const struct trk_rec *rec)
{
    if (module_repeat(r, rec))
        return;
    if (r->nmodules >= TRK_MODULES_MAX) {
        r->status.bad_modules++;
        return;
    }
    if (r->nmodules == r->modules_cap) {
        size_t cap = r->modules_cap ? r->modules_cap * 2 : 32;
        struct trk_module *m = realloc(r->modules, cap * sizeof(*m));
        if (!m)
            return;
        r->modules = m;
        r->modules_cap = cap;
    }
    char *path = malloc(rec->str_len + 1);
    if (!path)
        return;
    memcpy(path, rec->str, rec->str_len);
    path[rec->str_len] = '\0';
    struct trk_module *m = &r->modules[r->nmodules++];
    memset(m, 0, sizeof(*m));
    m->generation = rec->generation;
    m->base = rec->base;
    m->path = path;
    m->buildid_len = (uint32_t)rec->buildid_len;
    memcpy(m->buildid, rec->buildid, rec->buildid_len);
    m->nseg = rec->nseg;
    for (unsigned i = 0; i < rec->nseg; i++) {
        m->seg[i].vaddr = rec->seg[i].vaddr;
        m->seg[i].memsz = rec->seg[i].memsz;
        m->seg[i].flags = rec->seg[i].flags;
    }
}

size_t trk_reader_modules(const struct trk_reader *r, const struct trk_module **mods)
{
    *mods = r->nmodules ? r->modules : NULL;
    return r->nmodules;
}

static const char *store_name(struct trk_reader *r, const uint8_t *s, size_t len)
{
    struct trk_name_block *b = r->names;
    if (!b || b->used + len + 1 > NAME_BLOCK) {
        b = malloc(sizeof(*b) + NAME_BLOCK);
        if (!b)
            return "";
        b->next = r->names;
        b->used = 0;
        r->names = b;
    }
    char *out = b->data + b->used;
    memcpy(out, s, len);
    out[len] = '\0';
    b->used += len + 1;
    return out;
}

/* ---- Records to events ------------------------------------------------------ */

/* Room for two more events (a REALLOC or MREMAP makes two). */
static int queue_reserve(struct trk_stream *s)
{
    if (s->qtail + 2 <= s->qcap)
        return 0;
    size_t live = s->qtail - s->qhead;
    if (s->qhead > 0 && live + 2 <= s->qcap / 2) {
        memmove(s->q, s->q + s->qhead, live * sizeof(*s->q));
        s->qhead = 0;
        s->qtail = live;
        return 0;
    }
    size_t cap = s->qcap ? s->qcap * 2 : 256;
    struct trk_event *q = realloc(s->q, cap * sizeof(*q));
    if (!q)
        return -1;
    s->q = q;
    s->qcap = cap;
    return 0;
}

static struct trk_event *new_event(struct trk_stream *s, const struct trk_rec *rec, uint8_t type)
{
    struct trk_event *e = &s->q[s->qtail++];
    e->seq = rec->seq;
    e->ts = rec->ts;
    e->addr = 0;
    e->size = 0;
    e->stack = 0;
    memset(&e->u, 0, sizeof(e->u));
    e->tid = s->tid;
    e->type = type;
    e->kind = 0;
    e->flags = 0;
    return e;
}

/* Device ordinals are int64 on disk (varint for MEMINFO); anything outside
 * [-1, INT32_MAX] cannot be a real ordinal and reads as unknown. */
static int32_t gpu_device(int64_t d)
{
    return d >= -1 && d <= INT32_MAX ? (int32_t)d : -1;
}

static void gpu_events(struct trk_stream *s, const struct trk_rec *rec)
{
    struct trk_event *e;
    switch (rec->rclass) {
    case TRK_RC_GPU_ALLOC:
    case TRK_RC_GPU_FREE:
    case TRK_RC_GPU_FAIL:
        e = new_event(s, rec,
                      rec->rclass == TRK_RC_GPU_ALLOC  ? TRK_EV_GPU_ALLOC
                      : rec->rclass == TRK_RC_GPU_FREE ? TRK_EV_GPU_FREE
                                                       : TRK_EV_GPU_FAIL);
        e->kind = rec->kind;
        e->u.gpu.device = gpu_device(rec->device);
        e->u.gpu.api = rec->api;
        if (rec->rclass != TRK_RC_GPU_FAIL)
            e->addr = rec->addr;
        if (rec->rclass != TRK_RC_GPU_FREE) {
            e->size = rec->size;
            e->stack = rec->stack;
        }
        if (rec->rclass == TRK_RC_GPU_ALLOC)
            e->u.gpu.stream = rec->stream;
        else if (rec->rclass == TRK_RC_GPU_FAIL)
            e->u.gpu.result = rec->result;
        break;
    case TRK_RC_GPU_MAP:
        e = new_event(s, rec, rec->op == TRK_GPU_OP_MAP ? TRK_EV_GPU_MAP : TRK_EV_GPU_UNMAP);
        e->addr = rec->addr;
        e->size = rec->size;
        e->u.gpu_map.handle = rec->handle;
        e->u.gpu_map.offset = rec->offset;
        e->u.gpu_map.device = gpu_device(rec->device);
        e->u.gpu_map.api = rec->api;
        break;
    case TRK_RC_GPU_MEMINFO:
        e = new_event(s, rec, TRK_EV_GPU_MEMINFO);
        e->u.gpu_meminfo.used = rec->used;
        e->u.gpu_meminfo.total = rec->total;
        /* The record's device is unsigned: a huge one wrapped negative. */
        e->u.gpu_meminfo.device = gpu_device(rec->device);
        break;
    case TRK_RC_GPU_ENTER:
        if (s->gpu_depth < UINT32_MAX)
            s->gpu_depth++;
        s->gpu_flag = TRK_EVF_GPU_DRIVER;
        break;
    case TRK_RC_GPU_EXIT:
        /* An EXIT without its ENTER (the ENTER was in a lost piece, or the
         * file is damaged) must not leave later events tagged. */
        if (s->gpu_depth)
            s->gpu_depth--;
        s->gpu_flag = s->gpu_depth ? TRK_EVF_GPU_DRIVER : 0;
        break;
    default:
        break;
    }
}

/* Two halves of REALLOC/MREMAP: release at seq, acquisition at seq2. */
static void emit_pair(struct trk_stream *s, const struct trk_rec *rec, uint8_t t_old, uint8_t t_new,
                      uint8_t flags)
{
    struct trk_event *o = new_event(s, rec, t_old);
    o->addr = rec->addr;
    o->kind = rec->kind;
    o->flags = flags;
    o->u.pair.seq = rec->seq2;
    o->u.pair.addr = rec->addr2;
    struct trk_event *n = new_event(s, rec, t_new);
    n->seq = rec->seq2;
    n->addr = rec->addr2;
    n->kind = rec->kind;
    n->flags = flags;
    n->stack = rec->stack;
    n->u.pair.seq = rec->seq;
    n->u.pair.addr = rec->addr;
    if (rec->rclass == TRK_RC_MREMAP) {
        o->size = rec->size;
        n->size = rec->size2;
        o->u.pair.flags = n->u.pair.flags = rec->flags;
    } else {
        n->size = rec->size;
    }
}

static void record_to_events(struct trk_reader *r, struct trk_stream *s, const struct trk_rec *rec)
{
    struct trk_event *e;
    uint8_t drv = s->gpu_flag;
    switch (rec->rclass) {
    case TRK_RC_ALLOC:
        e = new_event(s, rec, TRK_EV_ALLOC);
        e->addr = rec->addr;
        e->size = rec->size;
        e->stack = rec->stack;
        e->kind = rec->kind;
        e->flags = drv;
        break;
    case TRK_RC_FREE:
        e = new_event(s, rec, TRK_EV_FREE);
        e->addr = rec->addr;
        e->kind = rec->kind;
        e->flags = drv;
        break;
    case TRK_RC_REALLOC:
        emit_pair(s, rec, TRK_EV_FREE, TRK_EV_ALLOC, TRK_EVF_FROM_REALLOC | drv);
        break;
    case TRK_RC_MMAP:
        e = new_event(s, rec, TRK_EV_MMAP);
        e->addr = rec->addr;
        e->size = rec->size;
        e->stack = rec->stack;
        e->flags = (rec->file == TRK_MAP_FILE ? TRK_EVF_FILE : 0) | drv;
        e->u.map.prot = rec->prot;
        e->u.map.flags = rec->flags;
        break;
    case TRK_RC_MUNMAP:
        e = new_event(s, rec, TRK_EV_MUNMAP);
        e->addr = rec->addr;
        e->size = rec->size;
        e->flags = drv;
        break;
    case TRK_RC_MREMAP:
        emit_pair(s, rec, TRK_EV_MREMAP_OLD, TRK_EV_MREMAP_NEW,
                  ((rec->flags & MREMAP_DONTUNMAP_FLAG) ? TRK_EVF_DONTUNMAP : 0) | drv);
        break;
    case TRK_RC_GPU_ALLOC:
    case TRK_RC_GPU_FREE:
    case TRK_RC_GPU_FAIL:
    case TRK_RC_GPU_MAP:
    case TRK_RC_GPU_MEMINFO:
    case TRK_RC_GPU_ENTER:
    case TRK_RC_GPU_EXIT:
        gpu_events(s, rec);
        break;
    case TRK_RC_THREAD:
        s->tid = (uint32_t)rec->tid;
        e = new_event(s, rec, TRK_EV_THREAD_START);
        e->flags = (rec->flags & TRK_THREAD_INTERNAL) ? TRK_EVF_INTERNAL : 0;
        break;
    case TRK_RC_THREAD_NAME:
        e = new_event(s, rec, TRK_EV_THREAD_NAME);
        e->u.thread_name.tid = rec->tid;
        e->u.thread_name.name = store_name(r, rec->str, rec->str_len);
        break;
    case TRK_RC_THREAD_EXIT:
        new_event(s, rec, TRK_EV_THREAD_EXIT);
        break;
    case TRK_RC_RSS:
        e = new_event(s, rec, TRK_EV_RSS);
        e->u.rss.anon = rec->anon;
        e->u.rss.file = rec->file_bytes;
        break;
    case TRK_RC_LOST:
        e = new_event(s, rec, TRK_EV_LOST);
        e->u.lost.count = rec->count;
        r->lost_records += rec->count;
        r->status.lost_events = r->lost_records + r->end_lost;
        break;
    case TRK_RC_MODULES:
        e = new_event(s, rec, TRK_EV_MODULES);
        e->u.modules.generation = rec->generation;
        e->u.modules.count = rec->count;
        break;
    case TRK_RC_STACK:
        define_stack(r, rec);
        break;
    case TRK_RC_PY_CODE:
        define_pycode(r, rec);
        break;
    case TRK_RC_PY_INFO:
        e = new_event(s, rec, TRK_EV_PY_INFO);
        e->u.py_info.version = rec->version;
        e->u.py_info.flags = rec->flags;
        break;
    case TRK_RC_PY_IMPORT:
        e = new_event(s, rec, TRK_EV_PY_IMPORT);
        e->u.py_import.name = store_name(r, rec->str, rec->str_len);
        break;
    case TRK_RC_PY_IMPORT_END:
        new_event(s, rec, TRK_EV_PY_IMPORT_END);
        break;
    case TRK_RC_PY_MARK:
        e = new_event(s, rec, TRK_EV_PY_MARK);
        e->u.py_mark.what = rec->what;
        break;
    case TRK_RC_LEAK_SCAN:
        e = new_event(s, rec, TRK_EV_LEAK_SCAN);
        e->u.leak_scan.flags = rec->flags;
        e->u.leak_scan.blocks = rec->count;
        e->u.leak_scan.roots = rec->size;
        break;
    case TRK_RC_LEAK:
        e = new_event(s, rec, TRK_EV_LEAK);
        e->addr = rec->addr;
        e->u.leak.cls = rec->leak_class;
        e->u.leak.leader = rec->leader;
        break;
    case TRK_RC_MODULE:
        define_module(r, rec);
        break;
    default:
        break;
    }
}

/* Decodes one record at *pp. Returns 0, or -1 when it is malformed (nothing
 * consumed) or memory ran out. */
static int decode_one(struct trk_reader *r, struct trk_stream *s, const uint8_t **pp,
                      const uint8_t *end, struct trk_rec *rec)
{
    if (trk_rec_decode(pp, end, &s->st, rec) < 0)
        return -1;
    r->status.records++;
    if (queue_reserve(s) < 0)
        return -1;
    record_to_events(r, s, rec);
    return 0;
}

/* ALLOC and FREE are nearly every record of a real capture: decode them
 * straight into the queue, skipping the generic record struct. Returns 0 when
 * done, 1 to leave the record (other tag, malformed, no memory) to the
 * generic path, which then decides. Must agree with trk_rec_decode. */
static inline int decode_heap_fast(struct trk_reader *r, struct trk_stream *s, const uint8_t **pp,
                                   const uint8_t *end)
{
    const uint8_t *p = *pp;
    uint8_t tag = *p++;
    uint8_t cls = tag & TRK_REC_CLASS_MASK, kind = tag & TRK_REC_KIND_MASK;
    uint64_t size = 0, stack = 0;
    if (tag & TRK_REC_COMPACT) {
        /* Room first: trk_dec_compact advances the state as it succeeds. */
        if (queue_reserve(s) < 0)
            return 1;
        kind = (uint8_t)trk_dec_compact(&p, end, tag, &s->st, &size, &stack);
        if (!kind)
            return 1;
        cls = (tag & TRK_REC_COMPACT_ALLOC) ? TRK_REC_ALLOC_BASE : TRK_REC_FREE_BASE;
        goto queue;
    }
    if ((cls != TRK_REC_ALLOC_BASE && cls != TRK_REC_FREE_BASE) || kind == 0 ||
        kind > TRK_ALLOC_KIND_MAX)
        return 1;
    uint64_t seqd, tsd, addrd;
    if (trk_get_varint(&p, end, &seqd) || trk_seq_step_bad(s->st.seq, seqd) ||
        trk_get_varint(&p, end, &tsd) || trk_get_varint(&p, end, &addrd))
        return 1;
    if (cls == TRK_REC_ALLOC_BASE &&
        (trk_get_varint(&p, end, &size) || trk_get_varint(&p, end, &stack)))
        return 1;
    if (queue_reserve(s) < 0)
        return 1;
    s->st.seq += seqd;
    s->st.ts += (uint64_t)trk_unzigzag(tsd);
    s->st.addr += (uint64_t)trk_unzigzag(addrd);
queue:;
    struct trk_event *e = &s->q[s->qtail++];
    e->seq = s->st.seq;
    e->ts = s->st.ts;
    e->addr = s->st.addr;
    e->size = size;
    e->stack = stack;
    memset(&e->u, 0, sizeof(e->u));
    e->tid = s->tid;
    e->type = cls == TRK_REC_ALLOC_BASE ? TRK_EV_ALLOC : TRK_EV_FREE;
    e->kind = kind;
    e->flags = s->gpu_flag; /* the hot path's one concession to GPU scopes */
    r->status.records++;
    *pp = p;
    return 0;
}

static void mark_broken(struct trk_reader *r, struct trk_stream *s, uint64_t lost)
{
    r->status.bytes_lost += lost;
    if (!s->broken)
        r->status.broken_streams++;
    s->broken = true;
}

/* Every piece ends on a record boundary (FORMAT.md §4), so a record that does
 * not decode is corruption, and the rest of the stream is lost with it. */
static void decode_records(struct trk_reader *r, struct trk_stream *s, const uint8_t *p,
                           const uint8_t *end)
{
    struct trk_rec rec;
    size_t before = s->qtail - s->qhead;
    while (p < end) {
        if (decode_heap_fast(r, s, &p, end) == 0)
            continue;
        if (decode_one(r, s, &p, end, &rec) < 0) {
            mark_broken(r, s, (uint64_t)(end - p));
            break;
        }
    }
    r->queued += (s->qtail - s->qhead) - before;
    if (before == 0 && s->qtail > s->qhead)
        trk_merge_push(r, (size_t)(s - r->streams));
}

/* The next piece may be codec 3 or 4 (FORMAT.md §2), whatever this one's codec
 * was: the stream's last 64 KiB are kept, in a buffer that grows with the
 * stream (a capture of 10,000 short threads holds 10,000 histories). */
static int hist_push(struct trk_stream *s, const uint8_t *data, size_t len)
{
    if (len == 0) /* an empty piece: memcpy to a history not yet made is UB */
        return 0;
    if (s->hist_cap < TRK_LZ_HIST && s->hist_len + len > s->hist_cap) {
        size_t cap = s->hist_cap ? s->hist_cap : 1024;
        while (cap < s->hist_len + len && cap < TRK_LZ_HIST)
            cap *= 2;
        if (cap > TRK_LZ_HIST)
            cap = TRK_LZ_HIST;
        uint8_t *b = realloc(s->hist, cap);
        if (!b)
            return -1;
        s->hist = b;
        s->hist_cap = (uint32_t)cap;
    }
    /* below TRK_LZ_HIST the buffer holds all of it, and nothing is dropped */
    trk_lz_hist_push(s->hist, &s->hist_len, data, len);
    return 0;
}

void trk_decode_piece(struct trk_reader *r, struct trk_chunk *c, const uint8_t *data, size_t len)
{
    size_t si = stream_lookup(r, c->stream);
    if (si == SIZE_MAX) {
        r->status.bytes_lost += len;
        return;
    }
    struct trk_stream *s = &r->streams[si];
    if (s->broken) {
        r->status.bytes_lost += len;
        return;
    }
    if (c->arg != s->next_off) {
        /* Delta state cannot be recovered mid-stream (FORMAT.md §2). */
        uint64_t gap = c->arg > s->next_off ? c->arg - s->next_off : 0;
        mark_broken(r, s, gap + len);
        return;
    }
    if (!data) { /* a codec-3 piece that could not be decoded */
        mark_broken(r, s, len);
        return;
    }
    s->next_off += len;
    if (r->info.version >= 6 && hist_push(s, data, len) < 0) {
        mark_broken(r, s, len);
        return;
    }
    decode_records(r, s, data, data + len);
}

int trk_decode_dict(struct trk_reader *r, const struct trk_chunk *c, const uint8_t **dict,
                    size_t *len)
{
    size_t si = stream_lookup(r, c->stream);
    if (si == SIZE_MAX)
        return -1;
    struct trk_stream *s = &r->streams[si];
    if (s->broken || c->arg != s->next_off)
        return -1;
    *dict = s->hist;
    *len = s->hist ? s->hist_len : 0;
    return 0;
}

void trk_decode_lost_piece(struct trk_reader *r, struct trk_chunk *c)
{
    size_t si = stream_lookup(r, c->stream);
    if (si == SIZE_MAX)
        r->status.bytes_lost += c->raw_len;
    else
        mark_broken(r, &r->streams[si], c->raw_len);
}

void trk_decode_free(struct trk_reader *r)
{
    for (size_t i = 0; i < r->nstreams; i++) {
        free(r->streams[i].q);
        free(r->streams[i].hist);
    }
    free(r->streams);
    free(r->stream_index);
    free(r->stacks);
    free(r->pycodes);
    r->pycodes = NULL;
    r->pycodes_cap = 0;
    for (size_t i = 0; i < r->nmodules; i++)
        free((char *)r->modules[i].path);
    free(r->modules);
    while (r->names) {
        struct trk_name_block *n = r->names->next;
        free(r->names);
        r->names = n;
    }
    free(r->raw);
    trk_zlink_free(r->zstd);
    r->zstd = NULL;
    r->streams = NULL;
    r->nstreams = 0;
}
