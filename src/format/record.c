/* SPDX-License-Identifier: MIT
 *
 * record.c - the out-of-line half of the record codec: the module record
 * encoder (rare, long) and the decoder. The decoder treats its input as
 * hostile: every length is checked against the end pointer, and a record that
 * does not fit is reported, never guessed at. Never allocates.
 */
#include "format/record.h"

static const char *const kind_names[TRK_ALLOC_KIND_MAX + 1] = {
    [TRK_ALLOC_MALLOC] = "malloc",
    [TRK_ALLOC_CALLOC] = "calloc",
    [TRK_ALLOC_REALLOC] = "realloc",
    [TRK_ALLOC_REALLOCARRAY] = "reallocarray",
    [TRK_ALLOC_POSIX_MEMALIGN] = "posix_memalign",
    [TRK_ALLOC_ALIGNED_ALLOC] = "aligned_alloc",
    [TRK_ALLOC_MEMALIGN] = "memalign",
    [TRK_ALLOC_VALLOC] = "valloc",
    [TRK_ALLOC_PVALLOC] = "pvalloc",
    [TRK_ALLOC_MALLOCX] = "mallocx",
    [TRK_ALLOC_RALLOCX] = "rallocx",
    [TRK_ALLOC_XALLOCX] = "xallocx",
    [TRK_ALLOC_FREE] = "free",
    [TRK_ALLOC_FREE_SIZED] = "free_sized",
    [TRK_ALLOC_FREE_ALIGNED_SIZED] = "free_aligned_sized",
    [TRK_ALLOC_DALLOCX] = "dallocx",
    [TRK_ALLOC_SDALLOCX] = "sdallocx",
    [TRK_ALLOC_PYMALLOC] = "pymalloc",
    [TRK_ALLOC_PYCALLOC] = "pycalloc",
    [TRK_ALLOC_PYREALLOC] = "pyrealloc",
    [TRK_ALLOC_PYFREE] = "pyfree",
    [TRK_ALLOC_NEW] = "new",
    [TRK_ALLOC_NEW_ARRAY] = "new[]",
    [TRK_ALLOC_DELETE] = "delete",
    [TRK_ALLOC_DELETE_ARRAY] = "delete[]",
};

const char *trk_alloc_kind_name(unsigned kind)
{
    if (kind == 0 || kind > TRK_ALLOC_KIND_MAX || !kind_names[kind])
        return "unknown";
    return kind_names[kind];
}

uint8_t *trk_enc_module(uint8_t *p, uint64_t generation, uint64_t base, const char *path,
                        size_t path_len, const uint8_t *buildid, size_t buildid_len,
                        const struct trk_segment *segs, unsigned nseg)
{
    if (path_len > TRK_MODULE_PATH_MAX)
        path_len = TRK_MODULE_PATH_MAX;
    if (buildid_len > TRK_BUILDID_MAX)
        buildid_len = TRK_BUILDID_MAX;
    if (nseg > TRK_MODULE_SEGS_MAX)
        nseg = TRK_MODULE_SEGS_MAX;
    *p++ = TRK_REC_MODULE;
    p = trk_put_varint(p, generation);
    p = trk_put_varint(p, base);
    p = trk_put_varint(p, path_len);
    if (path_len) /* memcpy from NULL is undefined even for 0 bytes */
        memcpy(p, path, path_len);
    p += path_len;
    p = trk_put_varint(p, buildid_len);
    if (buildid_len)
        memcpy(p, buildid, buildid_len);
    p += buildid_len;
    p = trk_put_varint(p, nseg);
    for (unsigned i = 0; i < nseg; i++) {
        p = trk_put_varint(p, segs[i].vaddr);
        p = trk_put_varint(p, segs[i].memsz);
        p = trk_put_varint(p, segs[i].flags);
    }
    return p;
}

/* ---- Decoding helpers: each returns -1 on short or malformed input ---- */

#define GETV(dst)                                                                                  \
    do {                                                                                           \
        if (trk_get_varint(&p, end, &(dst)))                                                       \
            return -1;                                                                             \
    } while (0)

#define GETZ(dst)                                                                                  \
    do {                                                                                           \
        if (trk_get_svarint(&p, end, &(dst)))                                                      \
            return -1;                                                                             \
    } while (0)

static int get_head(const uint8_t **pp, const uint8_t *end, struct trk_rec_state *s,
                    struct trk_rec *r)
{
    const uint8_t *p = *pp;
    uint64_t seqd;
    int64_t tsd;
    GETV(seqd);
    GETZ(tsd);
    if (trk_seq_step_bad(s->seq, seqd))
        return -1; /* seq strictly increases within a stream */
    s->seq += seqd;
    s->ts += (uint64_t)tsd;
    r->seq = s->seq;
    r->ts = s->ts;
    *pp = p;
    return 0;
}

static int get_addr(const uint8_t **pp, const uint8_t *end, struct trk_rec_state *s, uint64_t *out)
{
    const uint8_t *p = *pp;
    int64_t d;
    GETZ(d);
    s->addr += (uint64_t)d;
    *out = s->addr;
    *pp = p;
    return 0;
}

static int get_bytes(const uint8_t **pp, const uint8_t *end, size_t max, const uint8_t **out,
                     size_t *len)
{
    const uint8_t *p = *pp;
    uint64_t n;
    GETV(n);
    if (n > max || n > (uint64_t)(end - p))
        return -1;
    *out = p;
    *len = (size_t)n;
    *pp = p + n;
    return 0;
}

/* Decodes into a scratch state so that a failure leaves the caller's state
 * as it was: a reader can then report exactly where the stream broke. */
int trk_rec_decode(const uint8_t **pp, const uint8_t *end, struct trk_rec_state *st,
                   struct trk_rec *r)
{
    const uint8_t *p = *pp;
    struct trk_rec_state s = *st;
    uint64_t v;
    int64_t z;

    if (p >= end)
        return -1;
    uint8_t tag = *p++;
    memset(r, 0, offsetof(struct trk_rec, seg));
    if (tag & TRK_REC_COMPACT) {
        r->kind = (uint8_t)trk_dec_compact(&p, end, tag, &s, &r->size, &r->stack);
        if (!r->kind)
            return -1;
        r->rclass = (tag & TRK_REC_COMPACT_ALLOC) ? TRK_RC_ALLOC : TRK_RC_FREE;
        r->seq = s.seq;
        r->ts = s.ts;
        r->addr = s.addr;
        goto done;
    }
    r->kind = tag & TRK_REC_KIND_MASK;

    switch (tag & TRK_REC_CLASS_MASK) {
    case TRK_REC_ALLOC_BASE:
    case TRK_REC_FREE_BASE:
    case TRK_REC_REALLOC_BASE:
        if (r->kind == 0 || r->kind > TRK_ALLOC_KIND_MAX)
            return -1;
        r->rclass = tag & TRK_REC_CLASS_MASK;
        if (get_head(&p, end, &s, r) || get_addr(&p, end, &s, &r->addr))
            return -1;
        if (r->rclass == TRK_RC_REALLOC) {
            GETV(v);
            if (trk_seq_step_bad(s.seq, v))
                return -1;
            s.seq += v;
            r->seq2 = s.seq;
            if (get_addr(&p, end, &s, &r->addr2))
                return -1;
        }
        if (r->rclass != TRK_RC_FREE) {
            GETV(r->size);
            GETV(r->stack);
        }
        goto done;
    case 0:
        break;
    default:
        return -1;
    }

    r->kind = 0;
    r->rclass = tag;
    switch (tag) {
    case TRK_REC_THREAD:
        if (get_head(&p, end, &s, r))
            return -1;
        GETV(r->tid);
        GETV(r->flags);
        break;
    case TRK_REC_THREAD_NAME:
        if (get_head(&p, end, &s, r))
            return -1;
        GETV(r->tid);
        if (get_bytes(&p, end, TRK_THREAD_NAME_MAX, &r->str, &r->str_len))
            return -1;
        break;
    case TRK_REC_THREAD_EXIT:
        if (get_head(&p, end, &s, r))
            return -1;
        break;
    case TRK_REC_STACK:
        GETV(r->id);
        GETV(r->parent);
        GETZ(z);
        if (r->id == 0)
            return -1;
        s.ip += (uint64_t)z;
        r->ip = s.ip;
        s.sid = r->id;
        break;
    case TRK_REC_NODE:
    case TRK_REC_NODE + 1:
    case TRK_REC_NODE + 2:
    case TRK_REC_NODE + 3:
    case TRK_REC_NODE_ID:
        if (trk_dec_node(&p, end, tag, &s, &r->id, &r->parent, &r->ip))
            return -1;
        r->rclass = TRK_RC_STACK;
        break;
    case TRK_REC_MODULES:
        if (get_head(&p, end, &s, r))
            return -1;
        GETV(r->generation);
        GETV(r->count);
        break;
    case TRK_REC_MODULE:
        GETV(r->generation);
        GETV(r->base);
        if (get_bytes(&p, end, TRK_MODULE_PATH_MAX, &r->str, &r->str_len) ||
            get_bytes(&p, end, TRK_BUILDID_MAX, &r->buildid, &r->buildid_len))
            return -1;
        GETV(v);
        if (v > TRK_MODULE_SEGS_MAX)
            return -1;
        r->nseg = (unsigned)v;
        for (unsigned i = 0; i < r->nseg; i++) {
            uint64_t f;
            GETV(r->seg[i].vaddr);
            GETV(r->seg[i].memsz);
            GETV(f);
            r->seg[i].flags = (uint32_t)f;
        }
        break;
    case TRK_REC_RSS:
        if (get_head(&p, end, &s, r))
            return -1;
        GETV(r->anon);
        GETV(r->file_bytes);
        break;
    case TRK_REC_LOST:
        if (get_head(&p, end, &s, r))
            return -1;
        GETV(r->count);
        break;
    case TRK_REC_MMAP:
        if (get_head(&p, end, &s, r) || get_addr(&p, end, &s, &r->addr))
            return -1;
        GETV(r->size);
        GETV(r->prot);
        GETV(r->flags);
        if (p >= end || *p > TRK_MAP_FILE)
            return -1;
        r->file = *p++;
        GETV(r->stack);
        break;
    case TRK_REC_MUNMAP:
        if (get_head(&p, end, &s, r) || get_addr(&p, end, &s, &r->addr))
            return -1;
        GETV(r->size);
        break;
    case TRK_REC_GPU_ALLOC:
    case TRK_REC_GPU_FREE:
    case TRK_REC_GPU_FAIL:
    case TRK_REC_GPU_MAP:
        if (get_head(&p, end, &s, r) || end - p < 2)
            return -1;
        r->api = *p++;
        r->kind = *p++;
        GETZ(r->device);
        if (tag == TRK_REC_GPU_MAP) {
            r->op = r->kind;
            r->kind = 0;
            if (r->op != TRK_GPU_OP_MAP && r->op != TRK_GPU_OP_UNMAP)
                return -1;
        } else if (r->kind > TRK_GPU_KIND_MAX || (r->kind == 0 && tag != TRK_REC_GPU_FREE)) {
            return -1; /* a free may not know its kind; the reader finds it */
        }
        if (tag == TRK_REC_GPU_FAIL) {
            GETV(r->size);
            GETV(r->result);
            GETV(r->stack);
            break;
        }
        if (get_addr(&p, end, &s, &r->addr))
            return -1;
        if (tag == TRK_REC_GPU_ALLOC) {
            GETV(r->size);
            GETV(r->stream);
            GETV(r->stack);
        } else if (tag == TRK_REC_GPU_MAP) {
            GETV(r->size);
            GETV(r->handle);
            GETV(r->offset);
        }
        break;
    case TRK_REC_GPU_MEMINFO:
        if (get_head(&p, end, &s, r))
            return -1;
        GETV(v);
        r->device = (int64_t)v;
        GETV(r->used);
        GETV(r->total);
        break;
    case TRK_REC_GPU_ENTER:
    case TRK_REC_GPU_EXIT:
        break;
    case TRK_REC_PY_CODE:
        GETV(r->id);
        GETV(r->line);
        if (r->id == 0 || get_bytes(&p, end, TRK_PY_STR_MAX, &r->str, &r->str_len) ||
            get_bytes(&p, end, TRK_PY_STR_MAX, &r->str2, &r->str2_len))
            return -1;
        break;
    case TRK_REC_PY_IMPORT:
        if (get_head(&p, end, &s, r) || get_bytes(&p, end, TRK_PY_STR_MAX, &r->str, &r->str_len))
            return -1;
        break;
    case TRK_REC_PY_IMPORT_END:
        if (get_head(&p, end, &s, r))
            return -1;
        break;
    case TRK_REC_PY_MARK:
        if (get_head(&p, end, &s, r))
            return -1;
        GETV(r->what);
        break;
    case TRK_REC_PY_INFO:
        if (get_head(&p, end, &s, r))
            return -1;
        GETV(r->version);
        GETV(r->flags);
        break;
    case TRK_REC_LEAK_SCAN:
        if (get_head(&p, end, &s, r))
            return -1;
        GETV(r->flags);
        GETV(r->count);
        GETV(r->size);
        break;
    case TRK_REC_LEAK:
        if (get_head(&p, end, &s, r) || get_addr(&p, end, &s, &r->addr) || p >= end)
            return -1;
        r->leak_class = *p++;
        if (r->leak_class == 0 || r->leak_class > TRK_LEAK_CLASS_MAX)
            return -1;
        GETZ(z);
        r->leader = z ? r->addr + (uint64_t)z : 0;
        if (z && !r->leader)
            return -1; /* no block at address 0: 0 means "no leader" only as z = 0 */
        break;
    case TRK_REC_MREMAP:
        if (get_head(&p, end, &s, r) || get_addr(&p, end, &s, &r->addr))
            return -1;
        GETV(r->size);
        GETV(v);
        if (trk_seq_step_bad(s.seq, v))
            return -1;
        s.seq += v;
        r->seq2 = s.seq;
        if (get_addr(&p, end, &s, &r->addr2))
            return -1;
        GETV(r->size2);
        GETV(r->flags);
        GETV(r->stack);
        break;
    default:
        return -1;
    }
done:
    *st = s;
    *pp = p;
    return 0;
}
