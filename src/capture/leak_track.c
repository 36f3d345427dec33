/* SPDX-License-Identifier: MIT
 *
 * leak_track.c - what feeds the exit scan's live set (leak_table.h): the
 * writer thread hands each piece over as it writes it (trk_ltrack_*, kept
 * per flush cycle), and where that set was lost the file is read back
 * through its descriptor, every codec undone; then the set is collected
 * for the scan (trk_lset_load). Must not: allocate (raw mmap only) or
 * trust the file beyond what it needs.
 */
#include <fcntl.h>
#include <lz4.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/leak_table.h"
#include "capture/leakscan.h"
#include "common/huf.h"
#include "common/lz_hist.h"
#include "common/varint.h"
#include "common/zlink.h"
#include "format/format.h"
#include "prim/sys.h"

struct streams {
    struct trk_rec_state *v;
    size_t cap;
    /* per stream: its last raw bytes, for codec 3 (common/lz_hist.h) */
    struct hist {
        uint8_t *b; /* TRK_LZ_HIST bytes, mapped at the stream's first piece */
        uint32_t len;
    } * h;
};

static struct trk_rec_state *stream_state(struct streams *s, uint32_t id)
{
    if (id >= (1u << 22))
        return NULL;
    if (id >= s->cap) {
        size_t nc = s->cap ? s->cap : 1024;
        while (nc <= id)
            nc *= 2;
        struct trk_rec_state *nv = trk_lmem(nc * sizeof(*nv));
        struct hist *nh = trk_lmem(nc * sizeof(*nh));
        if (!nv || !nh) {
            trk_lmem_free(nv, nv ? nc * sizeof(*nv) : 0);
            trk_lmem_free(nh, nh ? nc * sizeof(*nh) : 0);
            return NULL;
        }
        if (s->v) {
            memcpy(nv, s->v, s->cap * sizeof(*nv));
            memcpy(nh, s->h, s->cap * sizeof(*nh));
        }
        trk_lmem_free(s->v, s->cap * sizeof(*s->v));
        trk_lmem_free(s->h, s->cap * sizeof(*s->h));
        s->v = nv;
        s->h = nh;
        s->cap = nc;
    }
    return &s->v[id];
}

static void streams_free(struct streams *s)
{
    for (size_t i = 0; i < s->cap; i++)
        trk_lmem_free(s->h[i].b, s->h[i].b ? TRK_LZ_HIST : 0);
    trk_lmem_free(s->v, s->cap * sizeof(*s->v));
    trk_lmem_free(s->h, s->cap * sizeof(*s->h));
}

/* Appends a piece to its stream's history (codec 3 of version 6 decodes
 * against it, whatever this piece's codec). */
static int hist_push(struct hist *h, const uint8_t *p, size_t n)
{
    if (!h->b && !(h->b = trk_lmem(TRK_LZ_HIST)))
        return -1;
    trk_lz_hist_push(h->b, &h->len, p, n);
    return 0;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
    uint8_t *p = buf;
    while (len) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

/* Sized to the largest chunk read so far, not to the format's bound
 * (16 MiB each): pieces are usually far smaller. */
struct bufs {
    uint8_t *stored, *raw;
    size_t stored_cap, raw_cap;
    void *zstd; /* the codec-4 decoder (common/zlink.h), at the first such chunk */
};

/* The codec-4 decoder's memory (common/zlink.h): raw mappings with their
 * length ahead. Only the exit scan's read-back comes here. */
static void *zmem_alloc(void *opaque, size_t n)
{
    (void)opaque;
    uint64_t *p = trk_lmem(n + 16);
    if (!p)
        return NULL;
    p[0] = n + 16;
    return p + 2;
}

static void zmem_free(void *opaque, void *q)
{
    (void)opaque;
    if (q)
        trk_lmem_free((uint64_t *)q - 2, ((uint64_t *)q)[-2]);
}

static int buf_fit(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : (64u << 10);
    while (nc < need)
        nc *= 2;
    uint8_t *nv = trk_lmem(nc);
    if (!nv)
        return -1;
    trk_lmem_free(*p, *cap);
    *p = nv;
    *cap = nc;
    return 0;
}

#define STORED_MAX (TRK_CHUNK_RAW_MAX + TRK_CHUNK_RAW_MAX / 255 + 16)

/* Every DATA chunk of the file, in file order. */
static int read_chunks(int fd, struct table *t, struct streams *ss, struct bufs *b)
{
    uint8_t h[TRK_CHUNK_HEAD];
    if (read_at(fd, h, 16, 0) || memcmp(h, TRK_FMT_MAGIC, TRK_FMT_MAGIC_LEN))
        return -1;
    uint64_t off = trk_get_le32(h + 12);
    while (read_at(fd, h, TRK_CHUNK_HEAD, off) == 0) {
        if (memcmp(h, TRK_CHUNK_MAGIC, 4))
            return -1;
        uint32_t stored = trk_get_le32(h + 12), raw = trk_get_le32(h + 16);
        off += TRK_CHUNK_HEAD;
        if (h[4] == TRK_CHUNK_WATERMARK && trk_get_le64(h + 24) > t->wm)
            t->wm = trk_get_le64(h + 24);
        if (h[4] == TRK_CHUNK_DATA) {
            if (stored > STORED_MAX || raw > TRK_CHUNK_RAW_MAX ||
                buf_fit(&b->stored, &b->stored_cap, stored) || buf_fit(&b->raw, &b->raw_cap, raw) ||
                read_at(fd, b->stored, stored, off))
                return -1;
            const uint8_t *piece = b->stored;
            uint32_t id = trk_get_le32(h + 8);
            struct trk_rec_state *st = stream_state(ss, id);
            if (!st)
                return -1;
            struct hist *hs = &ss->h[id];
            if (h[5] == TRK_CODEC_LZ4_LINK) { /* our own file: version 6 */
                int n = LZ4_decompress_safe_usingDict((const char *)b->stored, (char *)b->raw,
                                                      (int)stored, (int)raw, (const char *)hs->b,
                                                      (int)hs->len);
                if (n != (int)raw)
                    return -1;
                piece = b->raw;
            } else if (h[5] == TRK_CODEC_ZSTD_LINK) { /* version 7, --python-allocators */
                if (!b->zstd)
                    b->zstd = trk_zlink_new(zmem_alloc, zmem_free);
                if (trk_zlink_decode(b->zstd, b->raw, raw, b->stored, stored, hs->b, hs->len))
                    return -1;
                piece = b->raw;
            } else if (h[5] == TRK_CODEC_LZ4) {
                int n = LZ4_decompress_safe((const char *)b->stored, (char *)b->raw, (int)stored,
                                            (int)raw);
                if (n != (int)raw)
                    return -1;
                piece = b->raw;
            } else if (h[5] == TRK_CODEC_HUF) { /* the writer thread's, where it beat LZ4 */
                if (trk_huf_decode(b->stored, stored, b->raw, raw))
                    return -1;
                piece = b->raw;
            } else {
                raw = stored;
            }
            if (trk_get_le64(h + 24) == 0)
                memset(st, 0, sizeof(*st));
            if (hist_push(hs, piece, raw) || trk_ltable_decode(t, st, piece, raw))
                return -1;
        }
        off += stored;
    }
    return 0;
}

static void put_block(void *ctx, uint64_t addr, uint64_t size)
{
    struct trk_lset *s = ctx;
    s->v[s->n++] = (struct trk_lblock){.addr = addr, .size = size};
}

/* The table's live blocks into s, sorted and indexed for the scan; the
 * table is given back as they are copied (leak_table.h), so that the
 * copy's memory comes as the table's goes. */
static int collect(struct trk_lset *s, struct table *t)
{
    size_t n = trk_ltable_live(t);
    s->map_len = (n ? n : 1) * sizeof(*s->v);
    s->v = trk_lmem(s->map_len);
    if (!s->v)
        return -1;
    trk_ltable_each_live(t, 1, put_block, s);
    s->stack_len = (2 * n + 1) * sizeof(*s->stack); /* leak_mark.c: 2 pushes a block */
    s->stack = trk_lmem(s->stack_len);
    if (!s->stack || trk_lblocks_sort(s->v, s->n))
        return -1;
    s->lo = s->n ? s->v[0].addr : 1;
    s->hi = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t e = s->v[i].addr + (s->v[i].size ? s->v[i].size : 1);
        if (e > s->hi)
            s->hi = e;
    }
    trk_lset_index(s);
    return 0;
}

/* ---- The live set kept as the capture is written (issue 12) -------------
 *
 * Reading the whole capture back at exit cost the scan ~200-270
 * instructions per event of the run, half of them undoing the writer's
 * HUF or LZ4. The writer hands each DATA piece's raw bytes here as it
 * writes them (flush lock held, so in file order), and the same decoder
 * and table as the read-back keep the set current; at exit the scan only
 * collects it. The bytes and their order are the file's, so the result is
 * the read-back's; the read-back stays for when this broke (no memory).
 * The table costs what the read-back's would at exit, held for the run:
 * live blocks plus those freed since the last watermark (own_mem.h counts
 * it as the leak scan's). */
static struct {
    struct table t;
    struct streams ss;
    int state;     /* TRACK_* */
    unsigned skip; /* cycles still kept the old way (trk_ltrack_cycle) */
} track;

enum { TRACK_OFF, TRACK_ON, TRACK_BROKEN };

static void track_drop(int state)
{
    trk_ltable_free(&track.t);
    streams_free(&track.ss);
    memset(&track, 0, sizeof(track));
    track.state = state;
}

void trk_ltrack_start(void)
{
    if (track.state == TRACK_OFF)
        track.state = TRACK_ON;
}

void trk_ltrack_piece(uint32_t slot, uint64_t off, const uint8_t *p, size_t len)
{
    if (track.state != TRACK_ON)
        return;
    struct trk_rec_state *st = stream_state(&track.ss, slot);
    if (!st || (!track.t.v && trk_ltable_rehash(&track.t))) {
        track_drop(TRACK_BROKEN);
        return;
    }
    if (off == 0) /* as a reader does at a stream's first piece */
        memset(st, 0, sizeof(*st));
    if (track.t.closed) { /* a piece after the cycle's last: the set can no longer be proven */
        track_drop(TRACK_BROKEN);
        return;
    }
    track.t.armed = track.t.ndel != 0; /* a later piece of the cycle */
    int rc = trk_ltable_decode(&track.t, st, p, len);
    track.t.closed = track.t.last;
    track.t.last = 0;
    if (rc)
        track_drop(TRACK_BROKEN);
}

void trk_ltrack_last(void)
{
    /* Only inside a cycle with a bound (a replayed one has none): outside
     * one no FREE is taken as final anyway. */
    if (track.state == TRACK_ON && track.t.bound)
        track.t.last = 1;
}

void trk_ltrack_cycle(uint64_t bound)
{
    if (track.state != TRACK_ON)
        return;
    /* The last cycle's FREEs are final: nothing below its bound is left. */
    track.t.ndel = 0;
    track.t.armed = 0;
    track.t.last = 0;
    track.t.closed = 0;
    /* Where a cycle had to put its FREEs back (several threads' pieces
     * touch the heap), the log and the replay only cost: the next 16
     * cycles keep FREEs as entries from the start, as before the bound. */
    if (bound && track.t.replayed) {
        track.t.replayed = 0;
        track.skip = 16;
    }
    if (bound && track.skip) {
        track.skip--;
        bound = 0;
    }
    track.t.bound = bound;
}

void trk_ltrack_watermark(uint64_t w)
{
    if (w > track.t.wm)
        track.t.wm = w;
}

/* A fork child's capture starts empty: so does its set (the parent's
 * blocks are the child's inherited heap, leak_roots.c). */
void trk_ltrack_fork_child(void)
{
    if (track.state != TRACK_OFF)
        track_drop(TRACK_ON);
}

int trk_lset_load(struct trk_lset *s, int fd)
{
    memset(s, 0, sizeof(*s));
    if (track.state == TRACK_ON && track.t.v) {
        int rc = collect(s, &track.t);
        track_drop(TRACK_OFF); /* the scan runs once; what follows is its own */
        if (rc == 0)
            return 0;
        trk_lset_free(s);
        memset(s, 0, sizeof(*s));
    }
    char path[64] = "/proc/self/fd/";
    size_t l = strlen(path);
    l += trk_u64_to_dec(path + l, (uint64_t)fd);
    path[l] = 0;
    int rfd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (rfd < 0)
        return -1;
    struct table t = {0};
    struct streams ss = {0};
    struct bufs b = {0};
    int rc = -1;
    if (trk_ltable_rehash(&t) == 0 && read_chunks(rfd, &t, &ss, &b) == 0)
        rc = collect(s, &t);
    syscall(SYS_close, rfd);
    trk_lmem_free(b.stored, b.stored_cap);
    trk_lmem_free(b.raw, b.raw_cap);
    trk_zlink_free(b.zstd);
    trk_ltable_free(&t);
    streams_free(&ss);
    if (rc)
        trk_lset_free(s);
    return rc;
}

void trk_lset_free(struct trk_lset *s)
{
    trk_lmem_free(s->v, s->map_len);
    trk_lmem_free(s->stack, s->stack_len);
    if (s->pages)
        trk_lmem_free(s->pages, s->pages_len);
    s->v = NULL;
    s->stack = NULL;
    s->pages = NULL;
    s->n = 0;
}
