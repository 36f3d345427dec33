/* SPDX-License-Identifier: MIT
 *
 * timeline.c - the profile's memory-over-time series in at most `cap`
 * points, whatever the length of the capture. Points cover equal power-of-two
 * intervals of the clock; when time runs past the last one, neighbours are
 * merged (keeping the maxima of heap, mappings and each GPU device's memory,
 * the later RSS and driver samples) and the interval doubles. Each GPU device
 * gets its two series (cap points each) when its first event arrives. Must
 * not: allocate but at init and once per device, or lose a maximum: the
 * highest heap (and device) value of the capture is always some point's
 * value.
 */
#include <stdlib.h>

#include "analysis/profile_internal.h"

#define DEFAULT_POINTS 2000
#define MAX_POINTS     (1u << 20)
#define FIRST_SHIFT    10 /* ~1 us: short captures still get a detailed series */

int trk_prof_tl_init(struct trk_prof_timeline *tl, unsigned points)
{
    if (points == 0)
        points = DEFAULT_POINTS;
    if (points < 2)
        points = 2; /* one point could never make room by merging */
    if (points > MAX_POINTS)
        points = MAX_POINTS;
    tl->pts = malloc(points * sizeof(*tl->pts));
    tl->cap = points;
    tl->n = 0;
    tl->shift = FIRST_SHIFT;
    return tl->pts ? 0 : -1;
}

void trk_prof_tl_free(struct trk_prof_timeline *tl)
{
    free(tl->pts);
    tl->pts = NULL;
    tl->n = 0;
}

static inline uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* The GPU series halve alongside the points. */
static void compress_gpu(struct trk_prof_ctx *c)
{
    struct trk_prof_gpu *g = c->gpu;
    size_t n = c->tl.n;
    for (unsigned d = 0; g && d < g->npresent; d++) {
        struct trk_prof_gpu_dev *dev = g->dev[g->present[d]];
        size_t k = 0;
        for (size_t i = 0; i < n; i += 2, k++) {
            bool pair = i + 1 < n;
            dev->tl_live[k] = pair ? max64(dev->tl_live[i], dev->tl_live[i + 1]) : dev->tl_live[i];
            dev->tl_driver[k] = dev->tl_driver[pair ? i + 1 : i];
        }
    }
}

/* Halves the number of points: point i becomes the union of 2i and 2i+1. */
static void compress(struct trk_prof_ctx *c)
{
    struct trk_prof_timeline *tl = &c->tl;
    if (c->gpu)
        compress_gpu(c);
    size_t n = 0;
    for (size_t i = 0; i < tl->n; i += 2) {
        struct trk_timeline_point m = tl->pts[i];
        if (i + 1 < tl->n) {
            const struct trk_timeline_point *b = &tl->pts[i + 1];
            m.heap = max64(m.heap, b->heap);
            m.mmap = max64(m.mmap, b->mmap);
            m.rss_anon = b->rss_anon;
            m.rss_file = b->rss_file;
        }
        tl->pts[n++] = m;
    }
    tl->n = n;
    tl->shift++;
}

void trk_prof_tl_advance(struct trk_prof_ctx *c, uint64_t rel)
{
    struct trk_prof_timeline *tl = &c->tl;
    /* With cap >= 2 and shift at most 63, rel >> shift <= 1 < cap: ends. */
    while ((rel >> tl->shift) >= tl->cap && tl->shift < 63)
        compress(c);
    size_t k = (size_t)(rel >> tl->shift);
    /* Points opened now start with the values current before the event
     * that opens them: nothing changed during the gap. */
    struct trk_timeline_point carry = {
        .heap = c->live_bytes,
        .mmap = c->anon_bytes,
        .rss_anon = c->rss_anon,
        .rss_file = c->rss_file,
    };
    struct trk_prof_gpu *g = c->gpu;
    for (unsigned d = 0; g && d < g->npresent; d++) {
        struct trk_prof_gpu_dev *dev = g->dev[g->present[d]];
        for (size_t i = tl->n; i <= k; i++) {
            dev->tl_live[i] = dev->live_bytes;
            dev->tl_driver[i] = dev->driver_used;
        }
    }
    while (tl->n <= k)
        tl->pts[tl->n++] = carry;
}

int trk_prof_tl_gpu_init(struct trk_prof_ctx *c, struct trk_prof_gpu_dev *d)
{
    struct trk_prof_timeline *tl = &c->tl;
    /* Zero up to the open point: the device held nothing before. */
    d->tl_live = calloc(tl->cap, sizeof(*d->tl_live));
    d->tl_driver = calloc(tl->cap, sizeof(*d->tl_driver));
    return d->tl_live && d->tl_driver ? 0 : -1;
}

/* Moves each device's series into c->p, in the order of `present`. */
static void export_gpu(struct trk_prof_ctx *c)
{
    struct trk_prof_gpu *g = c->gpu;
    if (!g || g->npresent == 0)
        return;
    struct trk_gpu_series *v = calloc(g->npresent, sizeof(*v));
    if (!v) {
        c->oom = true;
        return;
    }
    for (unsigned d = 0; d < g->npresent; d++) {
        struct trk_prof_gpu_dev *dev = g->dev[g->present[d]];
        v[d] = (struct trk_gpu_series){
            .device = dev->out.device, .live = dev->tl_live, .driver = dev->tl_driver};
        dev->tl_live = dev->tl_driver = NULL;
    }
    c->p->gpu_timeline = v;
    c->p->ngpu_timeline = g->npresent;
}

void trk_prof_tl_export(struct trk_prof_ctx *c, uint64_t end_rel)
{
    struct trk_prof_timeline *tl = &c->tl;
    trk_prof_tl_at(c, end_rel);
    /* Each point is stamped with the end of its interval; the last one with
     * the end of the capture (or the start of its interval, if events ran
     * past the recorded end). */
    for (size_t k = 0; k < tl->n; k++) {
        uint64_t start = (uint64_t)k << tl->shift;
        uint64_t len = (uint64_t)1 << tl->shift;
        uint64_t t = start + len < start ? UINT64_MAX : start + len;
        if (k + 1 == tl->n)
            t = end_rel > start ? end_rel : start;
        tl->pts[k].t_ns = t;
    }
    export_gpu(c);
    c->p->timeline = tl->pts;
    c->p->ntimeline = tl->n;
    tl->pts = NULL;
    tl->n = 0;
}
