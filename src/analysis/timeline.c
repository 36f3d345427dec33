/* SPDX-License-Identifier: MIT
 *
 * timeline.c - the profile's memory-over-time series in at most `cap`
 * points, whatever the length of the capture. Points cover equal power-of-two
 * intervals of the clock; when time runs past the last one, neighbours are
 * merged (keeping the maxima of heap and mappings, the later RSS sample) and
 * the interval doubles. Must not: allocate after init, or lose a maximum:
 * the highest heap value of the capture is always some point's value.
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

/* Halves the number of points: point i becomes the union of 2i and 2i+1. */
static void compress(struct trk_prof_timeline *tl)
{
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
        compress(tl);
    size_t k = (size_t)(rel >> tl->shift);
    /* Points opened now start with the values current before the event
     * that opens them: nothing changed during the gap. */
    struct trk_timeline_point carry = {
        .heap = c->live_bytes,
        .mmap = c->anon_bytes,
        .rss_anon = c->rss_anon,
        .rss_file = c->rss_file,
    };
    while (tl->n <= k)
        tl->pts[tl->n++] = carry;
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
    c->p->timeline = tl->pts;
    c->p->ntimeline = tl->n;
    tl->pts = NULL;
    tl->n = 0;
}
