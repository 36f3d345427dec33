/* SPDX-License-Identifier: MIT
 *
 * imports.c - the import pass of imports.h: per thread a stack of open
 * imports, every acquisition on a thread with an open import charged to the
 * innermost one, and each such heap block (live_map.h, keyed by address,
 * its site the import) or anonymous range (interval_map.h, tagged with the
 * import) followed until released, so that an import's live bytes can be
 * read when it ends. Must not: print, symbolize, or keep anything for
 * memory acquired outside imports beyond the set of mappings (a munmap or
 * mremap must know what it takes).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/imports.h"
#include "analysis/interval_map.h"
#include "analysis/live_map.h"

#define NONE           TRK_IMPORT_NONE
#define PENDING_MAX    1024
#define PROGRESS_EVERY (UINT64_C(1) << 20) /* events between progress reports */

struct thread_slot {
    uint32_t tid;
    uint32_t used; /* 0 = empty */
    uint32_t top;  /* innermost open import, NONE = none */
};

struct pending {
    uint64_t seq2;
    unsigned attr;
};

struct pass {
    struct trk_imports *out;
    size_t cap;
    uint64_t *cur_live;   /* per import: bytes it acquired that are live now */
    uint32_t *last_child; /* per import, and [n] for the top level */
    uint32_t last_top;
    struct thread_slot *threads;
    size_t tmask, nthreads;
    uint32_t nopen; /* open imports over all threads */
    struct trk_live_map live;
    struct trk_imap maps;
    struct pending pending[PENDING_MAX];
    size_t npending;
    uint64_t clock_base, page, last_ts;
    bool oom;
};

static uint64_t rel(const struct pass *p, uint64_t ts)
{
    return ts > p->clock_base ? ts - p->clock_base : 0;
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
    return b > a ? 0 : a - b;
}

/* ---- Threads ----------------------------------------------------------------- */

static size_t tid_home(uint32_t tid, size_t mask)
{
    uint64_t k = tid * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(k >> 32) & mask;
}

/* The slot of tid, made when absent; NULL when memory ran out. */
static struct thread_slot *thread_slot(struct pass *p, uint32_t tid)
{
    if ((p->nthreads + 1) * 2 > p->tmask + 1) {
        size_t ncap = p->threads ? (p->tmask + 1) * 2 : 64;
        struct thread_slot *t = calloc(ncap, sizeof(*t));
        if (!t) {
            p->oom = true;
            return NULL;
        }
        for (size_t i = 0; p->threads && i <= p->tmask; i++) {
            if (!p->threads[i].used)
                continue;
            size_t h = tid_home(p->threads[i].tid, ncap - 1);
            while (t[h].used)
                h = (h + 1) & (ncap - 1);
            t[h] = p->threads[i];
        }
        free(p->threads);
        p->threads = t;
        p->tmask = ncap - 1;
    }
    size_t h = tid_home(tid, p->tmask);
    while (p->threads[h].used && p->threads[h].tid != tid)
        h = (h + 1) & p->tmask;
    if (!p->threads[h].used) {
        p->threads[h] = (struct thread_slot){.tid = tid, .used = 1, .top = NONE};
        p->nthreads++;
    }
    return &p->threads[h];
}

/* The innermost open import of tid, NONE when none. */
static uint32_t open_import(struct pass *p, uint32_t tid)
{
    if (!p->nopen)
        return NONE;
    struct thread_slot *t = thread_slot(p, tid);
    return t ? t->top : NONE;
}

/* ---- Imports ------------------------------------------------------------------- */

static int grow(struct pass *p)
{
    struct trk_imports *o = p->out;
    if (o->n < p->cap)
        return 0;
    size_t ncap = p->cap ? p->cap * 2 : 64;
    struct trk_import *v = realloc(o->v, ncap * sizeof(*v));
    if (v)
        o->v = v;
    uint64_t *cl = realloc(p->cur_live, ncap * sizeof(*cl));
    if (cl)
        p->cur_live = cl;
    uint32_t *lc = realloc(p->last_child, ncap * sizeof(*lc));
    if (lc)
        p->last_child = lc;
    if (!v || !cl || !lc || o->n >= NONE - 1)
        return -1;
    p->cap = ncap;
    return 0;
}

static void on_import(struct pass *p, const struct trk_event *e)
{
    struct thread_slot *t = thread_slot(p, e->tid);
    if (!t || grow(p) < 0) {
        p->oom = true;
        return;
    }
    struct trk_imports *o = p->out;
    uint32_t i = (uint32_t)o->n++;
    uint32_t parent = t->top;
    char *name = strdup(e->u.py_import.name ? e->u.py_import.name : "?");
    if (!name)
        p->oom = true;
    o->v[i] = (struct trk_import){
        .module = name,
        .parent = parent,
        .first_child = NONE,
        .next_sibling = NONE,
        .depth = parent == NONE ? 0 : o->v[parent].depth + 1,
        .tid = e->tid,
        .start_ns = rel(p, e->ts),
    };
    p->cur_live[i] = 0;
    p->last_child[i] = NONE;
    /* Children keep import order: appended after the last one. */
    uint32_t *last = parent == NONE ? &p->last_top : &p->last_child[parent];
    if (*last == NONE) {
        if (parent == NONE)
            o->first_top = i;
        else
            o->v[parent].first_child = i;
    } else {
        o->v[*last].next_sibling = i;
    }
    *last = i;
    t->top = i;
    p->nopen++;
}

/* Ends import i at ts: its live figures are read now. */
static void close_import(struct pass *p, uint32_t i, uint64_t ts, bool unfinished)
{
    struct trk_import *x = &p->out->v[i];
    x->end_ns = rel(p, ts);
    x->unfinished = unfinished;
    x->live_bytes = p->cur_live[i];
    /* The subtree, walked by links (no recursion: imports nest deeply). */
    uint64_t sum = p->cur_live[i];
    uint32_t n = x->first_child;
    while (n != NONE) {
        const struct trk_import *y = &p->out->v[n];
        sum += p->cur_live[n];
        if (y->first_child != NONE) {
            n = y->first_child;
            continue;
        }
        while (n != i && p->out->v[n].next_sibling == NONE)
            n = p->out->v[n].parent;
        n = n == i ? NONE : p->out->v[n].next_sibling;
    }
    x->cumulative_live_bytes = sum;
    if (p->nopen)
        p->nopen--;
}

static void on_import_end(struct pass *p, const struct trk_event *e)
{
    struct thread_slot *t = p->nopen ? thread_slot(p, e->tid) : NULL;
    if (!t || t->top == NONE)
        return; /* nothing open on this thread: changes nothing */
    uint32_t i = t->top;
    close_import(p, i, e->ts, false);
    t->top = p->out->v[i].parent;
}

/* Closes every import still open on thread t (innermost first). */
static void close_thread(struct pass *p, struct thread_slot *t, uint64_t ts)
{
    while (t->top != NONE) {
        uint32_t i = t->top;
        close_import(p, i, ts, true);
        t->top = p->out->v[i].parent;
    }
}

/* ---- Heap -------------------------------------------------------------------------- */

static void release_block(struct pass *p, const struct trk_live_block *b)
{
    if (b->site < p->out->n)
        p->cur_live[b->site] = sub_sat(p->cur_live[b->site], b->size);
}

static void on_alloc(struct pass *p, const struct trk_event *e)
{
    if (e->addr == 0)
        return; /* a failed allocation holds nothing */
    uint32_t i = open_import(p, e->tid);
    struct trk_live_block old;
    if (i == NONE) {
        /* Outside imports nothing is followed, but a block handed out
         * again at a followed address means its free was lost. */
        if (trk_live_map_count(&p->live) && trk_live_map_remove(&p->live, e->addr, &old))
            release_block(p, &old);
        return;
    }
    uint64_t size = e->size > TRK_LIVE_SIZE_MASK ? TRK_LIVE_SIZE_MASK : e->size;
    struct trk_live_block b = {.size = size, .ts = e->ts, .site = i};
    int rc = trk_live_map_put(&p->live, e->addr, &b, &old);
    if (rc < 0) {
        p->oom = true;
        return;
    }
    if (rc == 1)
        release_block(p, &old);
    p->out->v[i].allocations++;
    p->out->v[i].allocated_bytes += size;
    p->cur_live[i] += size;
}

static void on_free(struct pass *p, const struct trk_event *e)
{
    struct trk_live_block b;
    if (e->addr && trk_live_map_count(&p->live) && trk_live_map_remove(&p->live, e->addr, &b))
        release_block(p, &b);
}

/* ---- Mappings ------------------------------------------------------------------------ */

/* Whole pages, as the kernel maps them (and as profile.c counts). */
static uint64_t range_end(const struct pass *p, uint64_t addr, uint64_t len)
{
    uint64_t rounded = len + (p->page - len % p->page) % p->page;
    if (rounded < len || addr + rounded < addr)
        return UINT64_MAX;
    return addr + rounded;
}

/* Interval-map notification: bytes of a range went away; a tag is the
 * import that mapped them, + 1. */
static void map_take(void *ctx, unsigned attr, uint64_t tag, uint64_t bytes, int whole)
{
    struct pass *p = ctx;
    (void)whole;
    if (attr == TRK_ATTR_ANON && tag && tag - 1 < p->out->n)
        p->cur_live[tag - 1] = sub_sat(p->cur_live[tag - 1], bytes);
}

/* Maps [e->addr, end) with attr; anonymous bytes acquired on a thread with
 * an open import are that import's. */
static void map_insert(struct pass *p, const struct trk_event *e, uint64_t end, unsigned attr)
{
    uint64_t removed[TRK_ATTR_COUNT] = {0};
    uint64_t len = end > e->addr ? end - e->addr : 0;
    uint32_t i = attr == TRK_ATTR_ANON && len ? open_import(p, e->tid) : NONE;
    if (i != NONE) {
        p->out->v[i].allocations++;
        p->out->v[i].allocated_bytes += len;
    }
    if (trk_imap_insert_tagged(&p->maps, e->addr, end, attr, i == NONE ? 0 : (uint64_t)i + 1,
                               removed) < 0) {
        p->oom = true;
        return;
    }
    if (i != NONE)
        p->cur_live[i] += len;
}

static void on_remap_old(struct pass *p, const struct trk_event *e)
{
    uint64_t end = range_end(p, e->addr, e->size);
    uint64_t bytes[TRK_ATTR_COUNT] = {0};
    if (e->flags & TRK_EVF_DONTUNMAP)
        trk_imap_overlap(&p->maps, e->addr, end, bytes);
    else if (trk_imap_remove(&p->maps, e->addr, end, bytes) < 0)
        p->oom = true;
    /* The new range is of the kind of the old one (profile.c's rule). */
    unsigned attr = bytes[TRK_ATTR_ANON]   ? TRK_ATTR_ANON
                    : bytes[TRK_ATTR_FILE] ? TRK_ATTR_FILE
                                           : TRK_ATTR_UNKNOWN;
    if (p->npending == PENDING_MAX) {
        memmove(p->pending, p->pending + 1, (PENDING_MAX - 1) * sizeof(p->pending[0]));
        p->npending--;
    }
    p->pending[p->npending++] = (struct pending){.seq2 = e->u.pair.seq, .attr = attr};
}

static void on_remap_new(struct pass *p, const struct trk_event *e)
{
    unsigned attr = TRK_ATTR_UNKNOWN;
    for (size_t k = p->npending; k-- > 0;) {
        if (p->pending[k].seq2 == e->seq) {
            attr = p->pending[k].attr;
            p->pending[k] = p->pending[--p->npending];
            break;
        }
    }
    map_insert(p, e, range_end(p, e->addr, e->size), attr);
}

static void on_munmap(struct pass *p, const struct trk_event *e)
{
    uint64_t removed[TRK_ATTR_COUNT] = {0};
    if (trk_imap_remove(&p->maps, e->addr, range_end(p, e->addr, e->size), removed) < 0)
        p->oom = true;
}

/* ---- The pass ---------------------------------------------------------------------- */

static void on_event(struct pass *p, const struct trk_event *e)
{
    if (e->ts > p->last_ts)
        p->last_ts = e->ts;
    switch (e->type) {
    case TRK_EV_ALLOC:
        on_alloc(p, e);
        break;
    case TRK_EV_FREE:
        on_free(p, e);
        break;
    case TRK_EV_MMAP:
        map_insert(p, e, range_end(p, e->addr, e->size),
                   (e->flags & TRK_EVF_FILE) ? TRK_ATTR_FILE : TRK_ATTR_ANON);
        break;
    case TRK_EV_MUNMAP:
        on_munmap(p, e);
        break;
    case TRK_EV_MREMAP_OLD:
        on_remap_old(p, e);
        break;
    case TRK_EV_MREMAP_NEW:
        on_remap_new(p, e);
        break;
    case TRK_EV_PY_INFO:
        p->out->python = true;
        p->out->python_version = e->u.py_info.version;
        break;
    case TRK_EV_PY_IMPORT:
        on_import(p, e);
        break;
    case TRK_EV_PY_IMPORT_END:
        on_import_end(p, e);
        break;
    case TRK_EV_THREAD_EXIT:
        if (p->nopen) {
            struct thread_slot *t = thread_slot(p, e->tid);
            if (t)
                close_thread(p, t, e->ts);
        }
        break;
    default:
        break;
    }
}

/* Cumulative allocations: children follow their parent, so one backward
 * sweep adds every subtree into its root. */
static void finish(struct pass *p, uint64_t end_ts)
{
    struct trk_imports *o = p->out;
    for (size_t t = 0; p->nopen && p->threads && t <= p->tmask; t++)
        if (p->threads[t].used)
            close_thread(p, &p->threads[t], end_ts);
    for (size_t i = 0; i < o->n; i++)
        o->v[i].cumulative_allocated_bytes = o->v[i].allocated_bytes;
    for (size_t i = o->n; i-- > 0;)
        if (o->v[i].parent != NONE)
            o->v[o->v[i].parent].cumulative_allocated_bytes += o->v[i].cumulative_allocated_bytes;
}

int trk_imports_compute(struct trk_reader *r, trk_imports_progress_fn *progress, void *ctx,
                        struct trk_imports *out)
{
    memset(out, 0, sizeof(*out));
    out->first_top = NONE;
    const struct trk_reader_info *in = trk_reader_info(r);
    struct pass *p = calloc(1, sizeof(*p));
    enum { BATCH = 256 };
    struct trk_event *evs = malloc(BATCH * sizeof(*evs));
    if (!p || !evs || trk_live_map_init(&p->live) < 0) {
        free(evs);
        free(p);
        return -2;
    }
    p->out = out;
    p->last_top = NONE;
    p->clock_base = in->clock_base;
    p->page =
        in->page_size >= 512 && (in->page_size & (in->page_size - 1)) == 0 ? in->page_size : 4096;
    trk_imap_init(&p->maps);
    trk_imap_set_sink(&p->maps, &(struct trk_imap_sink){.take = map_take, .ctx = p});
    int rc = 0;
    uint64_t done = 0, at, size;
    while (!p->oom && (rc = trk_reader_next_batch(r, evs, BATCH)) > 0) {
        for (int i = 0; i < rc; i++)
            on_event(p, &evs[i]);
        if (progress && (done += (uint64_t)rc) >= PROGRESS_EVERY) {
            done = 0;
            trk_reader_progress(r, &at, &size);
            progress(ctx, at, size);
        }
    }
    const struct trk_reader_status *st = trk_reader_status(r);
    finish(p, st->end_seen && st->end_ts > p->last_ts ? st->end_ts : p->last_ts);
    bool oom = p->oom;
    free(evs);
    trk_live_map_free(&p->live);
    trk_imap_free(&p->maps);
    free(p->threads);
    free(p->cur_live);
    free(p->last_child);
    free(p);
    if (oom)
        return -2;
    return rc < 0 ? -1 : 0;
}

void trk_imports_free(struct trk_imports *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->v[i].module);
    free(x->v);
    memset(x, 0, sizeof(*x));
    x->first_top = NONE;
}
