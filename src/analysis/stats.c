/* SPDX-License-Identifier: MIT
 *
 * stats.c - one pass over the merged events computing the totals of
 * struct trk_stats. Owns the accounting rules (what counts as heap, how
 * realloc and mremap halves pair up). Must not: read the file itself (the
 * reader does) or hold more than the live heap set and the live mappings.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/interval_map.h"
#include "analysis/live_map.h"
#include "analysis/stats.h"

/* An MREMAP_OLD whose MREMAP_NEW has not been seen yet; there is one per
 * thread inside mremap at most, unless the file lost the second half. */
#define PENDING_MAX 1024

struct pending_remap {
    uint64_t seq2;
    unsigned attr;
};

struct stats_ctx {
    struct trk_stats *st;
    struct trk_live_map live;
    struct trk_live_map tids;
    struct trk_imap maps;
    uint64_t page;
    uint64_t live_bytes;
    uint64_t anon_bytes;
    uint64_t last_ts;
    struct pending_remap pending[PENDING_MAX];
    size_t npending;
    bool oom;
};

static char *join_argv(const struct trk_reader_info *in)
{
    size_t len = 1;
    for (int i = 0; i < in->argc; i++)
        len += strlen(in->argv[i]) + 1;
    char *s = malloc(len);
    if (!s)
        return NULL;
    char *p = s;
    for (int i = 0; i < in->argc; i++) {
        if (i)
            *p++ = ' ';
        size_t n = strlen(in->argv[i]);
        memcpy(p, in->argv[i], n);
        p += n;
    }
    *p = '\0';
    return s;
}

/* Mapping lengths are rounded to whole pages, as the kernel maps them. */
static uint64_t range_end(const struct stats_ctx *c, uint64_t addr, uint64_t len)
{
    uint64_t rounded = len + (c->page - len % c->page) % c->page;
    if (rounded < len || addr + rounded < addr)
        return UINT64_MAX; /* a corrupt length; clamp rather than wrap */
    return addr + rounded;
}

static void anon_sub(struct stats_ctx *c, const uint64_t removed[TRK_ATTR_COUNT])
{
    uint64_t a = removed[TRK_ATTR_ANON];
    c->anon_bytes = a > c->anon_bytes ? 0 : c->anon_bytes - a;
}

static void anon_add(struct stats_ctx *c, uint64_t bytes)
{
    c->anon_bytes += bytes;
    if (c->anon_bytes > c->st->mmap_peak_bytes)
        c->st->mmap_peak_bytes = c->anon_bytes;
}

static void map_insert(struct stats_ctx *c, uint64_t addr, uint64_t end, unsigned attr)
{
    uint64_t removed[TRK_ATTR_COUNT] = {0};
    if (trk_imap_insert(&c->maps, addr, end, attr, removed) < 0)
        c->oom = true;
    anon_sub(c, removed);
    if (attr == TRK_ATTR_ANON)
        anon_add(c, end - addr);
}

static void on_remap_old(struct stats_ctx *c, const struct trk_event *e)
{
    uint64_t end = range_end(c, e->addr, e->size);
    uint64_t bytes[TRK_ATTR_COUNT] = {0};
    if (e->flags & TRK_EVF_DONTUNMAP) {
        trk_imap_overlap(&c->maps, e->addr, end, bytes);
    } else {
        if (trk_imap_remove(&c->maps, e->addr, end, bytes) < 0)
            c->oom = true;
        anon_sub(c, bytes);
    }
    /* mremap works within one mapping, so its kind carries to the new range;
     * a range never seen mapped stays untracked wherever it moves. */
    unsigned attr = bytes[TRK_ATTR_ANON]   ? TRK_ATTR_ANON
                    : bytes[TRK_ATTR_FILE] ? TRK_ATTR_FILE
                                           : TRK_ATTR_UNKNOWN;
    if (c->npending == PENDING_MAX) {
        memmove(c->pending, c->pending + 1, (PENDING_MAX - 1) * sizeof(c->pending[0]));
        c->npending--;
    }
    c->pending[c->npending].seq2 = e->u.pair.seq;
    c->pending[c->npending].attr = attr;
    c->npending++;
}

static void on_remap_new(struct stats_ctx *c, const struct trk_event *e)
{
    unsigned attr = TRK_ATTR_UNKNOWN;
    for (size_t i = c->npending; i-- > 0;) {
        if (c->pending[i].seq2 == e->seq) {
            attr = c->pending[i].attr;
            c->pending[i] = c->pending[--c->npending];
            break;
        }
    }
    map_insert(c, e->addr, range_end(c, e->addr, e->size), attr);
}

static void on_alloc(struct stats_ctx *c, const struct trk_event *e)
{
    struct trk_stats *st = c->st;
    st->allocations++;
    st->bytes_allocated += e->size;
    if (e->kind <= TRK_ALLOC_KIND_MAX) {
        st->by_allocator[e->kind].allocations++;
        st->by_allocator[e->kind].bytes += e->size;
    }
    if (e->addr == 0)
        return; /* a failed allocation holds nothing */
    uint64_t old = 0;
    int rc = trk_live_map_put(&c->live, e->addr, e->size, e->kind, &old);
    if (rc < 0) {
        c->oom = true;
        return;
    }
    /* A block handed out twice means its free was lost: replace it. */
    if (rc == 1)
        c->live_bytes -= old;
    c->live_bytes += e->size;
    if (c->live_bytes > st->peak_heap_bytes)
        st->peak_heap_bytes = c->live_bytes;
}

static void on_free(struct stats_ctx *c, const struct trk_event *e)
{
    struct trk_stats *st = c->st;
    if (e->addr == 0)
        return; /* free(NULL) releases nothing and is not a free */
    st->frees++;
    if (e->kind <= TRK_ALLOC_KIND_MAX)
        st->by_allocator[e->kind].frees++;
    uint64_t size;
    if (trk_live_map_remove(&c->live, e->addr, &size, NULL))
        c->live_bytes -= size;
    else
        st->unmatched_frees++;
}

static void on_event(struct stats_ctx *c, const struct trk_event *e)
{
    struct trk_stats *st = c->st;
    uint64_t removed[TRK_ATTR_COUNT] = {0};
    if (e->ts > c->last_ts)
        c->last_ts = e->ts;
    switch (e->type) {
    case TRK_EV_ALLOC:
        on_alloc(c, e);
        break;
    case TRK_EV_FREE:
        on_free(c, e);
        break;
    case TRK_EV_MMAP:
        map_insert(c, e->addr, range_end(c, e->addr, e->size),
                   (e->flags & TRK_EVF_FILE) ? TRK_ATTR_FILE : TRK_ATTR_ANON);
        break;
    case TRK_EV_MUNMAP:
        if (trk_imap_remove(&c->maps, e->addr, range_end(c, e->addr, e->size), removed) < 0)
            c->oom = true;
        anon_sub(c, removed);
        break;
    case TRK_EV_MREMAP_OLD:
        on_remap_old(c, e);
        break;
    case TRK_EV_MREMAP_NEW:
        on_remap_new(c, e);
        break;
    case TRK_EV_RSS: {
        uint64_t total = e->u.rss.anon + e->u.rss.file;
        if (total > st->rss_peak_bytes)
            st->rss_peak_bytes = total;
        if (e->u.rss.anon > st->rss_anon_peak_bytes)
            st->rss_anon_peak_bytes = e->u.rss.anon;
        if (e->u.rss.file > st->rss_file_peak_bytes)
            st->rss_file_peak_bytes = e->u.rss.file;
        break;
    }
    case TRK_EV_THREAD_START: {
        uint64_t old;
        if (e->flags & TRK_EVF_INTERNAL)
            break;
        /* Keyed tid + 1: the map reserves 0. */
        int rc = trk_live_map_put(&c->tids, (uint64_t)e->tid + 1, 0, 0, &old);
        if (rc == 0)
            st->threads++;
        else if (rc < 0)
            c->oom = true;
        break;
    }
    default:
        break;
    }
}

static inline void prefetch(const struct stats_ctx *c, const struct trk_event *e)
{
    if (e->type == TRK_EV_ALLOC || e->type == TRK_EV_FREE)
        trk_live_map_prefetch(&c->live, e->addr);
}

int trk_stats_compute(struct trk_reader *r, struct trk_stats *out)
{
    memset(out, 0, sizeof(*out));
    const struct trk_reader_info *in = trk_reader_info(r);
    out->pid = in->pid;
    out->command = join_argv(in);
    struct stats_ctx *c = calloc(1, sizeof(*c));
    if (!c || !out->command)
        goto oom;
    c->st = out;
    c->page = in->page_size >= 512 && (in->page_size & (in->page_size - 1)) == 0
                  ? in->page_size
                  : 4096;
    trk_imap_init(&c->maps);
    if (trk_live_map_init(&c->live) < 0)
        goto oom;
    if (trk_live_map_init(&c->tids) < 0) {
        trk_live_map_free(&c->live);
        goto oom;
    }

    /* Batches let us prefetch live-map slots PREFETCH events ahead, so the
     * cache misses of a large live set overlap instead of queueing. */
    enum { BATCH = 256, PREFETCH = 16 };
    struct trk_event *evs = malloc(BATCH * sizeof(*evs));
    if (!evs) {
        trk_live_map_free(&c->live);
        trk_live_map_free(&c->tids);
        goto oom;
    }
    int rc;
    while ((rc = trk_reader_next_batch(r, evs, BATCH)) > 0 && !c->oom) {
        for (int i = 0; i < rc && i < PREFETCH; i++)
            prefetch(c, &evs[i]);
        for (int i = 0; i < rc; i++) {
            if (i + PREFETCH < rc)
                prefetch(c, &evs[i + PREFETCH]);
            on_event(c, &evs[i]);
        }
    }
    free(evs);

    const struct trk_reader_status *rs = trk_reader_status(r);
    out->leaked_bytes = c->live_bytes;
    out->leaked_allocations = trk_live_map_count(&c->live);
    out->mmap_leaked_bytes = c->anon_bytes;
    out->truncated = rs->truncated;
    out->lost_events = rs->lost_events;
    out->checksum_failures = rs->checksum_failures;
    out->bad_chunks = rs->bad_chunks;
    out->broken_streams = rs->broken_streams;
    out->bytes_lost = rs->bytes_lost;
    out->events = rs->events;
    uint64_t end = rs->end_seen ? rs->end_ts : c->last_ts;
    out->duration_s = end > in->clock_base ? (double)(end - in->clock_base) / 1e9 : 0.0;
    bool oom = c->oom;
    trk_live_map_free(&c->live);
    trk_live_map_free(&c->tids);
    trk_imap_free(&c->maps);
    free(c);
    if (rc < 0)
        return -1;
    return oom ? -2 : 0;
oom:
    free(c);
    return -2;
}

void trk_stats_free(struct trk_stats *s)
{
    free(s->command);
    s->command = NULL;
}
