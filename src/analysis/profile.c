/* SPDX-License-Identifier: MIT
 *
 * profile.c - the one pass over a capture's events behind every report
 * (profile.h), and the accounting rules of host memory: what counts as heap,
 * how realloc and mremap halves pair up, how a partial munmap is charged to
 * the sites that mapped those bytes, when a site's figures are taken for the
 * peak, what counts as temporary, and how host memory the GPU driver
 * allocated inside GPU calls is tallied or hidden. GPU memory has its own
 * rules in profile_gpu.c, Python's records theirs in profile_python.c.
 * `tracker stats` is a view of this pass (stats.c). Must not: read the file
 * itself (the reader does), symbolize, allocate per event, or trust event
 * contents (sizes and addresses are arbitrary).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile_internal.h"
#include "analysis/sample_weight.h"

/* Progress is reported every this many events. */
#define PROGRESS_EVERY (UINT64_C(1) << 20)

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

/* ---- Site figures ------------------------------------------------------------ */

/* A space's live total changed upwards: a new maximum starts a generation,
 * so every site saves its figure on its next change (trk_prof_touch). Equal
 * totals later do not count: the earliest moment of the peak wins. */
static inline void new_max(struct trk_prof_ctx *c, unsigned space, uint64_t rel)
{
    c->gen[space]++;
    c->p->peak_t_ns[space] = rel;
}

/* Heap or mappings grew: the same for their sum, a quantity of its own
 * (`--mmap` reports show it), whose peak is one instant where both
 * spaces' peaks may not coincide. */
static inline void hm_grew(struct trk_prof_ctx *c, uint64_t rel)
{
    uint64_t sum = c->live_bytes + c->anon_bytes;
    if (sum > c->p->peak_hm_bytes) {
        c->p->peak_hm_bytes = sum;
        c->p->peak_hm_t_ns = rel;
        c->gen_hm++;
    }
}

/* ---- Host memory of the GPU driver ------------------------------------------------ */

/* Heap bytes the driver allocated inside GPU calls are tallied apart from
 * the totals they also count in (or, hidden, only here). */
static void driver_heap_add(struct trk_prof_ctx *c, uint64_t bytes)
{
    c->drv_live += bytes;
    if (c->drv_live > c->st->gpu_driver_host.peak_bytes)
        c->st->gpu_driver_host.peak_bytes = c->drv_live;
}

static void driver_mapped_add(struct trk_prof_ctx *c, uint64_t bytes)
{
    c->drv_mapped += bytes;
    if (c->drv_mapped > c->st->gpu_driver_host.mmap_peak_bytes)
        c->st->gpu_driver_host.mmap_peak_bytes = c->drv_mapped;
}

/* What a block of a site stands for: itself, or at a sampled site its
 * estimate (the same figures its allocation added). */
static inline struct trk_sample_w site_weight(const struct trk_prof_ctx *c,
                                              const struct trk_prof_site *s,
                                              const struct trk_live_block *b)
{
    if (__builtin_expect(s->out.flags & TRK_SITE_SAMPLED, 0))
        return trk_sample_weigh(b->size, c->sample_n, b->ord & TRK_LIVE_ORD_MASK);
    uint64_t size = b->size;
    return (struct trk_sample_w){size, 1};
}

/* A live block replaced by a new one at its address: its free was lost, so
 * it stops counting wherever it counted. */
static void drop_replaced(struct trk_prof_ctx *c, const struct trk_live_block *old)
{
    if (old->site == TRK_PROF_HIDDEN) {
        c->drv_live = trk_prof_sub_sat(c->drv_live, old->size);
        c->hidden_blocks = trk_prof_sub_sat(c->hidden_blocks, 1);
        return;
    }
    c->live_bytes = trk_prof_sub_sat(c->live_bytes, old->size);
    if (old->site >= c->nsites)
        return;
    struct trk_prof_site *s = &c->sites[old->site];
    struct trk_sample_w w = site_weight(c, s, old);
    trk_prof_site_sub(c, s, w.bytes, w.count);
    if (s->out.flags & TRK_SITE_GPU_DRIVER)
        c->drv_live = trk_prof_sub_sat(c->drv_live, old->size);
}

/* exclude_gpu_driver_host: the block is kept (so that its free is known and
 * does not count as unmatched) but adds to no figure but the tally. */
static void hide_alloc(struct trk_prof_ctx *c, const struct trk_event *e)
{
    struct trk_driver_host_stats *d = &c->st->gpu_driver_host;
    d->allocations++;
    d->bytes_allocated += e->size;
    if (e->addr == 0)
        return;
    trk_prof_tl_at(c, trk_prof_rel(c, e->ts));
    uint64_t size = e->size > TRK_LIVE_SIZE_MASK ? TRK_LIVE_SIZE_MASK : e->size;
    struct trk_live_block blk = {.size = size, .ts = e->ts, .site = TRK_PROF_HIDDEN}, old;
    int rc = trk_live_map_put(&c->live, e->addr, &blk, &old);
    if (rc < 0) {
        c->oom = true;
        return;
    }
    if (rc == 1)
        drop_replaced(c, &old);
    c->hidden_blocks++;
    driver_heap_add(c, size);
}

/* ---- Heap ----------------------------------------------------------------------- */

static inline unsigned hist_bucket(uint64_t size)
{
    if (size == 0)
        return 0;
    unsigned b = 64u - (unsigned)__builtin_clzll(size);
    return b < TRK_HIST_BUCKETS ? b : TRK_HIST_BUCKETS - 1;
}

/* The heap block e made live at site si: into the live map, its site, the
 * heap total and its peaks. Shared by the program's allocations and the
 * blocks a fork child inherited; inlined like alloc_block, for the same
 * reason. */
static inline __attribute__((always_inline)) void heap_block_live(struct trk_prof_ctx *c,
                                                                  const struct trk_event *e,
                                                                  uint32_t si, uint64_t ord,
                                                                  bool drv, struct trk_sample_w w)
{
    struct trk_stats *st = c->st;
    uint64_t rel = trk_prof_rel(c, e->ts);
    struct trk_timeline_point *pt = trk_prof_tl_at(c, rel);
    uint64_t size = e->size > TRK_LIVE_SIZE_MASK ? TRK_LIVE_SIZE_MASK : e->size;
    struct trk_live_block blk = {.size = size, .ts = e->ts, .ord = ord, .site = si}, old;
    int rc = trk_live_map_put(&c->live, e->addr, &blk, &old);
    if (rc < 0) {
        c->oom = true;
        return;
    }
    /* A block handed out twice means its free was lost: replace it. */
    if (rc == 1)
        drop_replaced(c, &old);
    if (si != TRK_PROF_UNSAMPLED)
        trk_prof_site_add(c, &c->sites[si], w.bytes, w.count);
    c->live_bytes += size;
    if (drv)
        driver_heap_add(c, size);
    if (c->live_bytes > st->peak_heap_bytes) {
        st->peak_heap_bytes = c->live_bytes;
        new_max(c, TRK_SPACE_HEAP, rel);
    }
    hm_grew(c, rel);
    if (c->live_bytes > pt->heap)
        pt->heap = c->live_bytes;
}

/* The heap rules, for the program's blocks (drv false) and the driver's
 * (drv true, the class of driver sites). Always inlined: with constant
 * arguments the program's path carries nothing of the driver's. */
static inline __attribute__((always_inline)) void
alloc_block(struct trk_prof_ctx *c, const struct trk_event *e, uint32_t cls, bool drv)
{
    struct trk_stats *st = c->st;
    struct trk_profile *p = c->p;
    st->allocations++;
    st->bytes_allocated += e->size;
    if (e->kind <= TRK_ALLOC_KIND_MAX) {
        st->by_allocator[e->kind].allocations++;
        st->by_allocator[e->kind].bytes += e->size;
    }
    unsigned b = hist_bucket(e->size);
    p->hist_count[b]++;
    p->hist_bytes[b] += e->size;

    uint32_t ti = trk_prof_thread_of(c, e->tid);
    if (ti == TRK_PROF_NONE)
        return;
    uint64_t ord = ++c->threads[ti].nallocs;
    /* A sampled capture's stacks: each sampled block weighs what it stands
     * for; one sampling passed over has only its call site and no site. */
    if (__builtin_expect(c->sample_n > 0, 0) && e->stack)
        cls |= (uint32_t)TRK_SITE_SAMPLED << 24;
    uint32_t si = trk_prof_site_of(c, ti, e->stack, cls);
    if (si == TRK_PROF_NONE)
        return;
    struct trk_sample_w w = {e->size > TRK_LIVE_SIZE_MASK ? TRK_LIVE_SIZE_MASK : e->size, 1};
    if (si == TRK_PROF_UNSAMPLED) {
        if (e->addr)
            heap_block_live(c, e, si, ord, drv, w);
        return;
    }
    struct trk_prof_site *s = &c->sites[si];
    if (__builtin_expect(s->out.flags & TRK_SITE_SAMPLED, 0))
        w = trk_sample_weigh(w.bytes, c->sample_n, ord & TRK_LIVE_ORD_MASK);
    s->out.s.alloc_count += w.count;
    s->out.s.alloc_bytes += w.bytes;
    if (e->addr == 0)
        return; /* a failed allocation holds nothing */

    heap_block_live(c, e, si, ord, drv, w);
}

/* Host memory the GPU driver allocated: tallied, then counted (or hidden). */
static __attribute__((noinline)) void driver_alloc(struct trk_prof_ctx *c,
                                                   const struct trk_event *e)
{
    if (c->hide_driver) {
        hide_alloc(c, e);
        return;
    }
    c->st->gpu_driver_host.allocations++;
    c->st->gpu_driver_host.bytes_allocated += e->size;
    alloc_block(c, e, trk_prof_cls(TRK_SPACE_HEAP, 0, TRK_SITE_GPU_DRIVER), true);
}

/* A block a fork child inherited live from its parent (TRK_EVF_INHERITED):
 * live memory from the start, in the peak and the leaks until freed, but no
 * allocation of this process. It sits at its site (stack 0: the parent's
 * stacks are not in this file) like any live block. */
static __attribute__((noinline)) void inherited_alloc(struct trk_prof_ctx *c,
                                                      const struct trk_event *e)
{
    struct trk_stats *st = c->st;
    st->inherited_allocations++;
    st->inherited_bytes += e->size;
    uint32_t ti = trk_prof_thread_of(c, e->tid);
    if (ti == TRK_PROF_NONE)
        return;
    uint32_t si = trk_prof_site_of(c, ti, e->stack, TRK_SPACE_HEAP);
    if (si == TRK_PROF_NONE)
        return;
    uint64_t size = e->size > TRK_LIVE_SIZE_MASK ? TRK_LIVE_SIZE_MASK : e->size;
    heap_block_live(c, e, si, c->threads[ti].nallocs, false, (struct trk_sample_w){size, 1});
}

static void on_alloc(struct trk_prof_ctx *c, const struct trk_event *e)
{
    if (__builtin_expect(e->flags & (TRK_EVF_GPU_DRIVER | TRK_EVF_INHERITED), 0)) {
        if (e->flags & TRK_EVF_INHERITED)
            inherited_alloc(c, e);
        else
            driver_alloc(c, e);
    } else {
        alloc_block(c, e, TRK_SPACE_HEAP, false);
    }
}

/* Temporary: freed on the allocating thread before it made temp_allocs
 * further allocations (heaptrack's rule with 1), or within temp_ns. A
 * realloc's release counts like a free, as in heaptrack. */
static bool is_temporary(struct trk_prof_ctx *c, const struct trk_event *e,
                         const struct trk_live_block *b, const struct trk_prof_site *s)
{
    if (c->temp_ns && e->ts >= b->ts && e->ts - b->ts <= c->temp_ns)
        return true;
    uint32_t ti = c->last_thread != TRK_PROF_NONE && c->last_tid == e->tid
                      ? c->last_thread
                      : trk_prof_thread_lookup(c, e->tid, false);
    if (ti != s->out.thread || ti == TRK_PROF_NONE)
        return false;
    uint64_t further = (c->threads[ti].nallocs - b->ord) & TRK_LIVE_ORD_MASK;
    return further < c->temp_allocs;
}

/* A free that found nothing live (b NULL), or a block without a real site:
 * hidden driver memory, or a site lost to an out-of-memory. */
static __attribute__((noinline)) void odd_free(struct trk_prof_ctx *c, const struct trk_event *e,
                                               const struct trk_live_block *b)
{
    struct trk_stats *st = c->st;
    /* Hidden driver memory: its free is no free either (nor is a hidden
     * driver free of something never seen). */
    if (b && b->site == TRK_PROF_HIDDEN) {
        c->drv_live = trk_prof_sub_sat(c->drv_live, b->size);
        c->hidden_blocks = trk_prof_sub_sat(c->hidden_blocks, 1);
        return;
    }
    if (!b && (e->flags & TRK_EVF_GPU_DRIVER) && c->hide_driver)
        return;
    st->frees++;
    if (e->kind <= TRK_ALLOC_KIND_MAX)
        st->by_allocator[e->kind].frees++;
    if (!b)
        st->unmatched_frees++;
    else
        c->live_bytes = trk_prof_sub_sat(c->live_bytes, b->size);
}

static void on_free(struct trk_prof_ctx *c, const struct trk_event *e)
{
    struct trk_stats *st = c->st;
    if (e->addr == 0)
        return; /* free(NULL) releases nothing and is not a free */
    trk_prof_tl_at(c, trk_prof_rel(c, e->ts));
    struct trk_live_block b;
    if (!trk_live_map_remove(&c->live, e->addr, &b)) {
        odd_free(c, e, NULL);
        return;
    }
    if (__builtin_expect(b.site >= c->nsites, 0)) {
        odd_free(c, e, &b);
        return;
    }
    st->frees++;
    if (e->kind <= TRK_ALLOC_KIND_MAX)
        st->by_allocator[e->kind].frees++;
    c->live_bytes = trk_prof_sub_sat(c->live_bytes, b.size);
    struct trk_prof_site *s = &c->sites[b.site];
    struct trk_sample_w w = site_weight(c, s, &b);
    trk_prof_site_sub(c, s, w.bytes, w.count);
    s->out.s.free_count += w.count;
    if (__builtin_expect(s->out.flags & TRK_SITE_GPU_DRIVER, 0))
        c->drv_live = trk_prof_sub_sat(c->drv_live, b.size);
    if (s->out.space == TRK_SPACE_HEAP && is_temporary(c, e, &b, s)) {
        s->out.s.temp_count += w.count;
        s->out.s.temp_bytes += w.bytes;
        c->p->temporary_allocations += w.count;
        c->p->temporary_bytes += w.bytes;
    }
}

/* ---- Mappings ----------------------------------------------------------------- */

/* Mapping lengths are rounded to whole pages, as the kernel maps them. */
static uint64_t range_end(const struct trk_prof_ctx *c, uint64_t addr, uint64_t len)
{
    uint64_t rounded = len + (c->page - len % c->page) % c->page;
    if (rounded < len || addr + rounded < addr)
        return UINT64_MAX; /* a corrupt length; clamp rather than wrap */
    return addr + rounded;
}

/* Interval-map notification: bytes of an anonymous range went away. The
 * range's tag says whose they were (site) and which mapping (id). */
static void map_take(void *ctx, unsigned attr, uint64_t tag, uint64_t bytes, int whole)
{
    struct trk_prof_ctx *c = ctx;
    if (attr != TRK_ATTR_ANON)
        return;
    uint32_t si = (uint32_t)tag, mi = (uint32_t)(tag >> 32);
    if (si >= c->nsites)
        return;
    struct trk_prof_site *s = &c->sites[si];
    trk_prof_site_sub(c, s, bytes, 0);
    if (s->out.flags & TRK_SITE_GPU_DRIVER)
        c->drv_mapped = trk_prof_sub_sat(c->drv_mapped, bytes);
    if (whole && trk_prof_mapping_drop(c, mi)) {
        s->live_count = trk_prof_sub_sat(s->live_count, 1);
        s->out.s.free_count++;
    }
}

static void map_split(void *ctx, unsigned attr, uint64_t tag)
{
    if (attr == TRK_ATTR_ANON)
        trk_prof_mapping_split(ctx, (uint32_t)(tag >> 32));
}

static void anon_sub(struct trk_prof_ctx *c, const uint64_t removed[TRK_ATTR_COUNT])
{
    c->anon_bytes = trk_prof_sub_sat(c->anon_bytes, removed[TRK_ATTR_ANON]);
    c->drv_mapped = trk_prof_sub_sat(c->drv_mapped, removed[TRK_ATTR_HIDDEN]);
}

/* Maps [addr, end) with attr; anonymous ranges are charged to the site of
 * (stack, thread of e) as one new mapping. */
static void map_insert(struct trk_prof_ctx *c, const struct trk_event *e, uint64_t end,
                       unsigned attr)
{
    uint64_t addr = e->addr;
    uint64_t removed[TRK_ATTR_COUNT] = {0};
    uint64_t rel = trk_prof_rel(c, e->ts);
    struct trk_timeline_point *pt = trk_prof_tl_at(c, rel);
    unsigned drv = e->flags & TRK_EVF_GPU_DRIVER;
    if (drv && c->hide_driver && attr == TRK_ATTR_ANON)
        attr = TRK_ATTR_HIDDEN;
    uint64_t len = end > addr ? end - addr : 0;
    if (attr != TRK_ATTR_ANON) {
        if (trk_imap_insert(&c->maps, addr, end, attr, removed) < 0) {
            c->oom = true;
            return;
        }
        anon_sub(c, removed);
        if (attr == TRK_ATTR_HIDDEN)
            driver_mapped_add(c, len);
        return;
    }
    uint32_t ti = trk_prof_thread_of(c, e->tid);
    if (ti == TRK_PROF_NONE)
        return;
    uint32_t si = trk_prof_site_of(c, ti, e->stack,
                                   drv ? trk_prof_cls(TRK_SPACE_MMAP, 0, TRK_SITE_GPU_DRIVER)
                                       : TRK_SPACE_MMAP);
    if (si == TRK_PROF_NONE)
        return;
    c->sites[si].out.s.alloc_count++;
    c->sites[si].out.s.alloc_bytes += len;
    if (len == 0)
        return; /* maps nothing */
    uint32_t mi = trk_prof_mapping_new(c);
    if (mi == TRK_PROF_NONE)
        return;
    uint64_t tag = si | (uint64_t)mi << 32;
    if (trk_imap_insert_tagged(&c->maps, addr, end, attr, tag, removed) < 0) {
        c->oom = true;
        return;
    }
    anon_sub(c, removed);
    trk_prof_site_add(c, &c->sites[si], len, 1);
    c->anon_bytes += len;
    if (drv)
        driver_mapped_add(c, len);
    else
        trk_prof_py_arenas(c, len, 1);
    if (c->anon_bytes > c->st->mmap_peak_bytes) {
        c->st->mmap_peak_bytes = c->anon_bytes;
        new_max(c, TRK_SPACE_MMAP, rel);
    }
    hm_grew(c, rel);
    if (c->anon_bytes > pt->mmap)
        pt->mmap = c->anon_bytes;
}

static void on_munmap(struct trk_prof_ctx *c, const struct trk_event *e)
{
    uint64_t removed[TRK_ATTR_COUNT] = {0};
    trk_prof_tl_at(c, trk_prof_rel(c, e->ts));
    if (trk_imap_remove(&c->maps, e->addr, range_end(c, e->addr, e->size), removed) < 0)
        c->oom = true;
    anon_sub(c, removed);
    if (removed[TRK_ATTR_ANON])
        trk_prof_py_arenas(c, e->size, -1); /* pymalloc frees an arena whole */
}

static void on_remap_old(struct trk_prof_ctx *c, const struct trk_event *e)
{
    uint64_t end = range_end(c, e->addr, e->size);
    uint64_t bytes[TRK_ATTR_COUNT] = {0};
    trk_prof_tl_at(c, trk_prof_rel(c, e->ts));
    if (e->flags & TRK_EVF_DONTUNMAP) {
        trk_imap_overlap(&c->maps, e->addr, end, bytes);
    } else {
        if (trk_imap_remove(&c->maps, e->addr, end, bytes) < 0)
            c->oom = true;
        anon_sub(c, bytes);
    }
    /* mremap works within one mapping, so its kind carries to the new range;
     * a range never seen mapped stays untracked wherever it moves, and a
     * hidden one stays hidden. */
    unsigned attr = bytes[TRK_ATTR_ANON]     ? TRK_ATTR_ANON
                    : bytes[TRK_ATTR_HIDDEN] ? TRK_ATTR_HIDDEN
                    : bytes[TRK_ATTR_FILE]   ? TRK_ATTR_FILE
                                             : TRK_ATTR_UNKNOWN;
    if (c->npending == TRK_PROF_PENDING_MAX) {
        memmove(c->pending, c->pending + 1, (TRK_PROF_PENDING_MAX - 1) * sizeof(c->pending[0]));
        c->npending--;
    }
    c->pending[c->npending].seq2 = e->u.pair.seq;
    c->pending[c->npending].attr = attr;
    c->npending++;
}

/* The new range belongs to the mremap's own call site, as a realloc's new
 * block belongs to the realloc's caller. */
static void on_remap_new(struct trk_prof_ctx *c, const struct trk_event *e)
{
    unsigned attr = TRK_ATTR_UNKNOWN;
    for (size_t i = c->npending; i-- > 0;) {
        if (c->pending[i].seq2 == e->seq) {
            attr = c->pending[i].attr;
            c->pending[i] = c->pending[--c->npending];
            break;
        }
    }
    map_insert(c, e, range_end(c, e->addr, e->size), attr);
}

/* ---- The pass -------------------------------------------------------------------- */

static void on_rss(struct trk_prof_ctx *c, const struct trk_event *e)
{
    struct trk_stats *st = c->st;
    uint64_t anon = e->u.rss.anon, file = e->u.rss.file;
    uint64_t total = anon + file;
    if (total < anon)
        total = UINT64_MAX;
    if (total > st->rss_peak_bytes)
        st->rss_peak_bytes = total;
    if (anon > st->rss_anon_peak_bytes)
        st->rss_anon_peak_bytes = anon;
    if (file > st->rss_file_peak_bytes)
        st->rss_file_peak_bytes = file;
    struct trk_timeline_point *pt = trk_prof_tl_at(c, trk_prof_rel(c, e->ts));
    c->rss_anon = pt->rss_anon = anon;
    c->rss_file = pt->rss_file = file;
}

/* A LEAK record: the class of a block live at exit, added to its site. */
static void on_leak(struct trk_prof_ctx *c, const struct trk_event *e)
{
    struct trk_live_block b;
    if (e->u.leak.cls == 0 || e->u.leak.cls > TRK_LEAK_CLASS_MAX ||
        !trk_live_map_get(&c->live, e->addr, &b) || b.site >= c->nsites)
        return;
    struct trk_site_stats *s = &c->sites[b.site].out.s;
    s->cls_count[e->u.leak.cls]++;
    s->cls_bytes[e->u.leak.cls] += b.size;
    struct trk_live_block l;
    if (e->u.leak.cls == TRK_LEAK_INDIRECT && trk_live_map_get(&c->live, e->u.leak.leader, &l) &&
        l.site < c->nsites) {
        c->sites[l.site].out.s.led_count++;
        c->sites[l.site].out.s.led_bytes += b.size;
        trk_prof_led_add(c, l.site, b.site, b.size);
    }
    c->st->leak_class_count[e->u.leak.cls]++;
    c->st->leak_class_bytes[e->u.leak.cls] += b.size;
}

static void on_event(struct trk_prof_ctx *c, const struct trk_event *e)
{
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
        map_insert(c, e, range_end(c, e->addr, e->size),
                   (e->flags & TRK_EVF_FILE) ? TRK_ATTR_FILE : TRK_ATTR_ANON);
        break;
    case TRK_EV_MUNMAP:
        on_munmap(c, e);
        break;
    case TRK_EV_MREMAP_OLD:
        on_remap_old(c, e);
        break;
    case TRK_EV_MREMAP_NEW:
        on_remap_new(c, e);
        break;
    case TRK_EV_RSS:
        on_rss(c, e);
        break;
    case TRK_EV_THREAD_START:
        if (!(e->flags & TRK_EVF_INTERNAL))
            trk_prof_thread_start(c, e->tid);
        break;
    case TRK_EV_THREAD_EXIT:
        trk_prof_thread_exit(c, e->tid);
        break;
    case TRK_EV_THREAD_NAME:
        trk_prof_thread_name(c, e->u.thread_name.tid, e->u.thread_name.name);
        break;
    case TRK_EV_GPU_ALLOC:
    case TRK_EV_GPU_FREE:
    case TRK_EV_GPU_FAIL:
    case TRK_EV_GPU_MAP:
    case TRK_EV_GPU_UNMAP:
    case TRK_EV_GPU_MEMINFO:
        trk_prof_gpu_event(c, e);
        break;
    case TRK_EV_PY_INFO:
    case TRK_EV_PY_IMPORT:
    case TRK_EV_PY_IMPORT_END:
    case TRK_EV_PY_MARK:
        trk_prof_py_event(c, e);
        break;
    case TRK_EV_LEAK_SCAN:
        c->st->leaks_classified = true;
        c->st->leak_scan_flags = e->u.leak_scan.flags;
        break;
    case TRK_EV_LEAK:
        on_leak(c, e);
        break;
    default:
        break;
    }
}

/* With many sites the site index misses the cache too; its slot can be
 * guessed ahead when the thread is the last one seen (a wrong guess only
 * costs the hint). */
static inline void prefetch(const struct trk_prof_ctx *c, const struct trk_event *e)
{
    if (e->type == TRK_EV_ALLOC || e->type == TRK_EV_FREE)
        trk_live_map_prefetch(&c->live, e->addr);
    if (e->type == TRK_EV_ALLOC && e->stack <= UINT32_MAX && c->last_tid == e->tid &&
        c->last_thread != TRK_PROF_NONE) {
        uint64_t key = e->stack | (uint64_t)c->last_thread << 32;
        __builtin_prefetch(&c->site_index[trk_prof_site_home(c, key, TRK_SPACE_HEAP)], 0, 1);
    }
}

static int ctx_init(struct trk_prof_ctx *c, struct trk_reader *r,
                    const struct trk_profile_options *opts, struct trk_profile *out)
{
    const struct trk_reader_info *in = trk_reader_info(r);
    c->p = out;
    c->st = &out->totals;
    c->r = r;
    c->clock_base = in->clock_base;
    c->page =
        in->page_size >= 512 && (in->page_size & (in->page_size - 1)) == 0 ? in->page_size : 4096;
    c->temp_allocs = opts && opts->temp_allocs ? opts->temp_allocs : 1;
    c->temp_ns = opts ? opts->temp_ns : 0;
    c->hide_driver = opts && opts->exclude_gpu_driver_host;
    c->split = opts && opts->split_by_import;
    c->sample_n = (double)in->sample_bytes;
    c->st->sample_bytes = in->sample_bytes;
    trk_imap_init(&c->maps);
    trk_imap_set_sink(&c->maps,
                      &(struct trk_imap_sink){.take = map_take, .split = map_split, .ctx = c});
    int rc = trk_prof_tables_init(c);
    if (trk_prof_tl_init(&c->tl, opts ? opts->timeline_points : 0) < 0)
        rc = -1;
    if (trk_live_map_init(&c->live) < 0)
        rc = -1;
    return rc;
}

static void ctx_free(struct trk_prof_ctx *c)
{
    if (c->live.slots)
        trk_live_map_free(&c->live);
    trk_prof_gpu_free(c);
    trk_prof_py_free(c);
    trk_prof_led_free(c);
    trk_imap_free(&c->maps);
    trk_prof_tables_free(c);
    trk_prof_tl_free(&c->tl);
    free(c);
}

static void finish_totals(struct trk_prof_ctx *c, struct trk_reader *r)
{
    struct trk_profile *p = c->p;
    struct trk_stats *st = c->st;
    const struct trk_reader_info *in = trk_reader_info(r);
    const struct trk_reader_status *rs = trk_reader_status(r);
    const struct trk_prof_py *py = &c->py;
    /* A Python script's leaks are what was live when its code finished
     * (profile_python.c took them then); otherwise what is live now. */
    st->exit_leaked_bytes = c->live_bytes;
    st->exit_leaked_allocations = trk_prof_sub_sat(trk_live_map_count(&c->live), c->hidden_blocks);
    if (st->leaks_classified) {
        uint64_t nb = 0, nc = 0;
        for (int k = 1; k <= TRK_LEAK_CLASS_MAX; k++) {
            nb += st->leak_class_bytes[k];
            nc += st->leak_class_count[k];
        }
        st->leak_class_bytes[0] = trk_prof_sub_sat(st->exit_leaked_bytes, nb);
        st->leak_class_count[0] = trk_prof_sub_sat(st->exit_leaked_allocations, nc);
    }
    st->leaked_bytes = py->marked ? py->live_bytes : st->exit_leaked_bytes;
    st->leaked_allocations = py->marked ? py->live_blocks : st->exit_leaked_allocations;
    st->mmap_leaked_bytes = py->marked ? py->anon_bytes : c->anon_bytes;
    st->gpu_driver_host.leaked_bytes = py->marked ? py->drv_live : c->drv_live;
    st->gpu_driver_host.mmap_leaked_bytes = py->marked ? py->drv_mapped : c->drv_mapped;
    st->truncated = rs->truncated;
    st->end_seen = rs->end_seen;
    st->end_reason = rs->end_reason;
    st->lost_events = rs->lost_events;
    st->unwind_checked = rs->unwind_checked;
    st->unwind_mismatches = rs->unwind_mismatches;
    st->unwind_fallbacks = rs->unwind_fallbacks;
    st->checksum_failures = rs->checksum_failures;
    st->bad_chunks = rs->bad_chunks;
    st->broken_streams = rs->broken_streams;
    st->bytes_lost = rs->bytes_lost;
    st->events = rs->events;
    st->inherited_missing = rs->inherited_missing;
    snprintf(st->inherit_error, sizeof(st->inherit_error), "%s", trk_reader_inherit_error(c->r));
    st->missing_chunks = rs->missing_chunks;
    st->ends_inside_chunk = rs->ends_inside_chunk;
    st->own_fields = rs->own_fields;
    memcpy(st->own, rs->own, sizeof(st->own));
    st->heap_unseen = (in->options & TRK_OPT_HEAP_UNSEEN) != 0;
    uint64_t end = rs->end_seen ? rs->end_ts : c->last_ts;
    st->duration_s = end > in->clock_base ? (double)(end - in->clock_base) / 1e9 : 0.0;
    p->end_t_ns = trk_prof_rel(c, end);
    p->peak_bytes[TRK_SPACE_HEAP] = st->peak_heap_bytes;
    p->peak_bytes[TRK_SPACE_MMAP] = st->mmap_peak_bytes;
}

int trk_profile_compute(struct trk_reader *r, const struct trk_profile_options *opts,
                        struct trk_profile *out)
{
    memset(out, 0, sizeof(*out));
    const struct trk_reader_info *in = trk_reader_info(r);
    out->totals.pid = in->pid;
    out->totals.command = join_argv(in);
    struct trk_prof_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return -2;
    /* Batches let us prefetch live-map slots PREFETCH events ahead, so the
     * cache misses of a large live set overlap instead of queueing. */
    enum { BATCH = 256, PREFETCH = 16 };
    struct trk_event *evs = malloc(BATCH * sizeof(*evs));
    if (ctx_init(c, r, opts, out) < 0 || !evs || !out->totals.command) {
        free(evs);
        ctx_free(c);
        return -2;
    }
    void (*progress)(void *, uint64_t, uint64_t) = opts ? opts->progress : NULL;
    uint64_t done = 0, next_report = PROGRESS_EVERY;
    int rc = 0;
    while (!c->oom && (rc = trk_reader_next_batch(r, evs, BATCH)) > 0) {
        for (int i = 0; i < rc && i < PREFETCH; i++)
            prefetch(c, &evs[i]);
        for (int i = 0; i < rc; i++) {
            if (i + PREFETCH < rc)
                prefetch(c, &evs[i + PREFETCH]);
            on_event(c, &evs[i]);
        }
        done += (uint64_t)rc;
        if (progress && done >= next_report) {
            uint64_t at, size;
            trk_reader_progress(r, &at, &size);
            progress(opts->progress_ctx, at, size);
            next_report = done + PROGRESS_EVERY;
        }
    }
    free(evs);
    if (c->oom)
        rc = 0;
    finish_totals(c, r);
    if (!c->oom && trk_prof_gpu_finish(c) < 0)
        c->oom = true;
    bool oom = c->oom;
    if (!oom) {
        trk_prof_tl_export(c, out->end_t_ns);
        if (trk_prof_export(c) < 0 || trk_prof_py_export(c) < 0 || c->oom)
            oom = true;
        trk_prof_led_export(c);
    }
    ctx_free(c);
    if (progress && rc >= 0 && !oom) {
        uint64_t at, size;
        trk_reader_progress(r, &at, &size);
        progress(opts->progress_ctx, size ? size : at, size ? size : at);
    }
    if (rc < 0)
        return -1;
    return oom ? -2 : 0;
}

void trk_profile_free(struct trk_profile *p)
{
    trk_stats_free(&p->totals);
    for (size_t i = 0; i < p->nthreads; i++)
        free(p->threads[i].name);
    free(p->threads);
    free(p->sites);
    free(p->timeline);
    for (size_t i = 0; i < p->ngpu_timeline; i++) {
        free(p->gpu_timeline[i].live);
        free(p->gpu_timeline[i].driver);
    }
    free(p->gpu_timeline);
    for (size_t i = 0; i < p->nimports; i++)
        free(p->imports[i].module);
    free(p->imports);
    free(p->led);
    memset(p, 0, sizeof(*p));
}
