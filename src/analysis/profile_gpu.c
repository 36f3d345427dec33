/* SPDX-License-Identifier: MIT
 *
 * profile_gpu.c - the accounting rules of GPU memory in the profile pass
 * (profile.h): which kinds count as a device's memory, how a release finds
 * its allocation (by kind family and address, whatever device or kind the
 * release itself names), refused allocations as "failed" figures of their
 * sites, VMM mapping calls, and the driver's own usage samples. Each device
 * is a space of its own (TRK_SPACE_GPU0 + ordinal) with its live total,
 * peak and timeline series. Must not: count address reservations or host
 * registrations as memory, add pinned host or imported bytes to a device's
 * total, allocate per event, or trust event contents (kinds, devices,
 * sizes and handles are arbitrary).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/profile_internal.h"

/* ---- State, made on first use ----------------------------------------------------- */

static struct trk_prof_gpu *gpu_state(struct trk_prof_ctx *c)
{
    if (!c->gpu) {
        c->gpu = calloc(1, sizeof(*c->gpu));
        if (!c->gpu)
            c->oom = true;
    }
    return c->gpu;
}

/* The device of a GPU space, made with its timeline series when new. */
static struct trk_prof_gpu_dev *gpu_dev(struct trk_prof_ctx *c, uint32_t space)
{
    struct trk_prof_gpu *g = gpu_state(c);
    if (!g || !trk_space_is_gpu(space))
        return NULL;
    uint32_t slot = space - TRK_SPACE_GPU0;
    if (g->dev[slot])
        return g->dev[slot];
    struct trk_prof_gpu_dev *d = calloc(1, sizeof(*d));
    if (!d || trk_prof_tl_gpu_init(c, d) < 0) {
        if (d) {
            free(d->tl_live);
            free(d->tl_driver);
        }
        free(d);
        c->oom = true;
        return NULL;
    }
    d->out.device = trk_space_device(space);
    /* After the script's end nothing new can have leaked. */
    d->leaks_taken = c->py.marked;
    g->dev[slot] = d;
    /* Keep `present` sorted so that every listing comes by ordinal. */
    unsigned i = g->npresent++;
    while (i > 0 && g->present[i - 1] > slot) {
        g->present[i] = g->present[i - 1];
        i--;
    }
    g->present[i] = (uint8_t)slot;
    return d;
}

static struct trk_live_map *gpu_live(struct trk_prof_ctx *c, unsigned family)
{
    struct trk_prof_gpu *g = gpu_state(c);
    if (!g)
        return NULL;
    if (!g->live_ready[family]) {
        if (trk_live_map_init(&g->live[family]) < 0) {
            c->oom = true;
            return NULL;
        }
        g->live_ready[family] = true;
    }
    return &g->live[family];
}

/* ---- Kinds -------------------------------------------------------------------------- */

static unsigned family_of_kind(unsigned kind)
{
    return kind == TRK_GPU_VMM_PHYS ? TRK_PROF_GPU_VMM
           : kind == TRK_GPU_ARRAY  ? TRK_PROF_GPU_ARRAY
                                    : TRK_PROF_GPU_PTR;
}

/* A release whose kind the tracker could not tell: the entry point says
 * which family its argument belongs to. */
static unsigned family_of_api(unsigned api)
{
    switch (api) {
    case TRK_GPU_API_CUMEMRELEASE:
    case TRK_GPU_API_HIPMEMRELEASE:
        return TRK_PROF_GPU_VMM;
    case TRK_GPU_API_CUARRAYDESTROY:
        return TRK_PROF_GPU_ARRAY;
    default:
        return TRK_PROF_GPU_PTR;
    }
}

/* Reservations and registrations are recorded but are no memory. */
static bool kind_is_memory(unsigned kind)
{
    return kind >= TRK_GPU_DEVICE && kind <= TRK_GPU_ARRAY;
}

/* ---- Live figures -------------------------------------------------------------------- */

static inline uint64_t *open_point(struct trk_prof_ctx *c, uint64_t *series)
{
    return &series[c->tl.n - 1];
}

/* A block of kind `kind` joins site s of device d's space. */
static void charge(struct trk_prof_ctx *c, struct trk_prof_gpu_dev *d, struct trk_prof_site *s,
                   unsigned kind, uint64_t size, uint64_t rel)
{
    struct trk_gpu_kind_stats *k = &d->out.by_kind[kind];
    uint32_t space = s->out.space;
    trk_prof_site_add(c, s, size, 1);
    d->kind_live[kind] += size;
    d->kind_count[kind]++;
    if (d->kind_live[kind] > k->peak_bytes)
        k->peak_bytes = d->kind_live[kind];
    if (!trk_gpu_kind_is_device(kind))
        return;
    d->live_bytes += size;
    d->live_count++;
    if (d->live_bytes > d->out.peak_bytes) {
        /* A new maximum of the space: sites save their figures on their
         * next change (trk_prof_touch), as for the heap. */
        d->out.peak_bytes = d->live_bytes;
        c->gen[space]++;
        c->p->peak_t_ns[space] = rel;
        c->p->peak_bytes[space] = d->live_bytes;
    }
    uint64_t *pt = open_point(c, d->tl_live);
    if (d->live_bytes > *pt)
        *pt = d->live_bytes;
}

/* A live block leaves: released (counted as a free) or replaced because its
 * release was lost. */
static void discharge(struct trk_prof_ctx *c, const struct trk_live_block *b, bool freed)
{
    if (b->site >= c->nsites)
        return;
    struct trk_prof_site *s = &c->sites[b->site];
    if (!trk_space_is_gpu(s->out.space))
        return;
    struct trk_prof_gpu_dev *d = c->gpu->dev[s->out.space - TRK_SPACE_GPU0];
    unsigned kind = s->out.kind;
    if (!d || kind > TRK_GPU_KIND_MAX)
        return;
    trk_prof_site_sub(c, s, b->size, 1);
    d->kind_live[kind] = trk_prof_sub_sat(d->kind_live[kind], b->size);
    d->kind_count[kind] = trk_prof_sub_sat(d->kind_count[kind], 1);
    bool dev_mem = trk_gpu_kind_is_device(kind);
    if (dev_mem) {
        d->live_bytes = trk_prof_sub_sat(d->live_bytes, b->size);
        d->live_count = trk_prof_sub_sat(d->live_count, 1);
    }
    if (!freed)
        return;
    s->out.s.free_count++;
    d->out.by_kind[kind].frees++;
    if (dev_mem)
        d->out.frees++;
}

/* ---- Events ---------------------------------------------------------------------------- */

static void on_alloc(struct trk_prof_ctx *c, const struct trk_event *e)
{
    unsigned kind = e->kind;
    if (kind == 0 || kind > TRK_GPU_KIND_MAX)
        return;
    uint64_t rel = trk_prof_rel(c, e->ts);
    trk_prof_tl_at(c, rel);
    uint32_t space = trk_gpu_space(e->u.gpu.device);
    struct trk_prof_gpu_dev *d = gpu_dev(c, space);
    if (!d)
        return;
    d->out.by_kind[kind].allocations++;
    d->out.by_kind[kind].bytes += e->size;
    if (!kind_is_memory(kind))
        return;
    if (trk_gpu_kind_is_device(kind)) {
        d->out.allocations++;
        d->out.bytes_allocated += e->size;
    }
    uint32_t ti = trk_prof_thread_of(c, e->tid);
    if (ti == TRK_PROF_NONE)
        return;
    uint32_t si = trk_prof_site_of(c, ti, e->stack, trk_prof_cls(space, kind, 0));
    if (si == TRK_PROF_NONE)
        return;
    struct trk_prof_site *s = &c->sites[si];
    s->out.s.alloc_count++;
    s->out.s.alloc_bytes += e->size;
    if (e->addr == 0)
        return; /* holds nothing to release */
    struct trk_live_map *m = gpu_live(c, family_of_kind(kind));
    if (!m)
        return;
    uint64_t size = e->size > TRK_LIVE_SIZE_MASK ? TRK_LIVE_SIZE_MASK : e->size;
    struct trk_live_block blk = {.size = size, .ts = e->ts, .site = si}, old;
    int rc = trk_live_map_put(m, e->addr, &blk, &old);
    if (rc < 0) {
        c->oom = true;
        return;
    }
    if (rc == 1)
        discharge(c, &old, false); /* handed out twice: its release was lost */
    charge(c, d, s, kind, size, rel);
}

static void on_free(struct trk_prof_ctx *c, const struct trk_event *e)
{
    unsigned kind = e->kind;
    if (e->addr == 0 || (kind != 0 && !kind_is_memory(kind)))
        return; /* a null release, or of a reservation or registration */
    trk_prof_tl_at(c, trk_prof_rel(c, e->ts));
    struct trk_prof_gpu *g = gpu_state(c);
    if (!g)
        return;
    unsigned first = kind ? family_of_kind(kind) : family_of_api(e->u.gpu.api);
    struct trk_live_block b;
    bool found = g->live_ready[first] && trk_live_map_remove(&g->live[first], e->addr, &b);
    /* Not even the family known: the address may still name a handle. */
    for (unsigned f = 0; !found && kind == 0 && f < TRK_PROF_GPU_FAMILIES; f++)
        if (f != first && g->live_ready[f])
            found = trk_live_map_remove(&g->live[f], e->addr, &b);
    if (found) {
        discharge(c, &b, true);
        return;
    }
    struct trk_prof_gpu_dev *d = gpu_dev(c, trk_gpu_space(e->u.gpu.device));
    if (d)
        d->out.unmatched_frees++;
}

/* Refused allocations hold nothing; their stacks are what a user asks
 * about after an out-of-memory error. */
static void on_fail(struct trk_prof_ctx *c, const struct trk_event *e)
{
    unsigned kind = e->kind;
    if (!kind_is_memory(kind))
        return;
    uint32_t space = trk_gpu_space(e->u.gpu.device);
    struct trk_prof_gpu_dev *d = gpu_dev(c, space);
    if (!d)
        return;
    d->out.failed_allocations++;
    d->out.failed_bytes += e->size;
    uint32_t ti = trk_prof_thread_of(c, e->tid);
    if (ti == TRK_PROF_NONE)
        return;
    uint32_t si = trk_prof_site_of(c, ti, e->stack, trk_prof_cls(space, kind, 0));
    if (si == TRK_PROF_NONE)
        return;
    c->sites[si].out.s.fail_count++;
    c->sites[si].out.s.fail_bytes += e->size;
}

/* Mapping places physical memory counted at its creation: counted as
 * calls only. */
static void on_map(struct trk_prof_ctx *c, const struct trk_event *e)
{
    struct trk_prof_gpu_dev *d = gpu_dev(c, trk_gpu_space(e->u.gpu_map.device));
    if (!d)
        return;
    if (e->type == TRK_EV_GPU_MAP)
        d->out.maps++;
    else
        d->out.unmaps++;
}

static void on_meminfo(struct trk_prof_ctx *c, const struct trk_event *e)
{
    int32_t dev = e->u.gpu_meminfo.device;
    /* A sample of no particular device says nothing about any. */
    if (dev < 0 || dev >= TRK_GPU_DEVICES_MAX)
        return;
    trk_prof_tl_at(c, trk_prof_rel(c, e->ts));
    struct trk_prof_gpu_dev *d = gpu_dev(c, trk_gpu_space(dev));
    if (!d)
        return;
    uint64_t used = e->u.gpu_meminfo.used;
    d->out.driver_samples++;
    d->out.driver_total_bytes = e->u.gpu_meminfo.total;
    if (used > d->out.driver_peak_bytes)
        d->out.driver_peak_bytes = used;
    d->driver_used = used;
    *open_point(c, d->tl_driver) = used;
}

void trk_prof_gpu_event(struct trk_prof_ctx *c, const struct trk_event *e)
{
    switch (e->type) {
    case TRK_EV_GPU_ALLOC:
        on_alloc(c, e);
        break;
    case TRK_EV_GPU_FREE:
        on_free(c, e);
        break;
    case TRK_EV_GPU_FAIL:
        on_fail(c, e);
        break;
    case TRK_EV_GPU_MAP:
    case TRK_EV_GPU_UNMAP:
        on_map(c, e);
        break;
    case TRK_EV_GPU_MEMINFO:
        on_meminfo(c, e);
        break;
    default:
        break;
    }
}

/* ---- End of the pass ------------------------------------------------------------------- */

static void take_leaks(struct trk_prof_gpu_dev *d)
{
    d->out.leaked_bytes = d->live_bytes;
    d->out.leaked_allocations = d->live_count;
    for (unsigned k = 0; k <= TRK_GPU_KIND_MAX; k++) {
        d->out.by_kind[k].leaked_bytes = d->kind_live[k];
        d->out.by_kind[k].leaked_allocations = d->kind_count[k];
    }
    d->leaks_taken = true;
}

void trk_prof_gpu_mark(struct trk_prof_ctx *c)
{
    struct trk_prof_gpu *g = c->gpu;
    for (unsigned i = 0; g && i < g->npresent; i++)
        take_leaks(g->dev[g->present[i]]);
}

int trk_prof_gpu_finish(struct trk_prof_ctx *c)
{
    struct trk_prof_gpu *g = c->gpu;
    if (!g || g->npresent == 0)
        return 0;
    struct trk_gpu_stats *v = calloc(g->npresent, sizeof(*v));
    if (!v)
        return -1;
    for (unsigned i = 0; i < g->npresent; i++) {
        struct trk_prof_gpu_dev *d = g->dev[g->present[i]];
        if (!d->leaks_taken)
            take_leaks(d);
        c->p->peak_bytes[TRK_SPACE_GPU0 + g->present[i]] = d->out.peak_bytes;
        v[i] = d->out;
    }
    c->st->gpu = v;
    c->st->ngpu = g->npresent;
    return 0;
}

void trk_prof_gpu_free(struct trk_prof_ctx *c)
{
    struct trk_prof_gpu *g = c->gpu;
    if (!g)
        return;
    for (unsigned i = 0; i < g->npresent; i++) {
        struct trk_prof_gpu_dev *d = g->dev[g->present[i]];
        free(d->tl_live);
        free(d->tl_driver);
        free(d);
    }
    for (unsigned f = 0; f < TRK_PROF_GPU_FAMILIES; f++)
        if (g->live_ready[f])
            trk_live_map_free(&g->live[f]);
    free(g);
    c->gpu = NULL;
}
