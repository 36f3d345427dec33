/* SPDX-License-Identifier: MIT
 *
 * loctab.c - source locations and symbolized stacks for the reports, and
 * the printing of an interned stack (text and JSON). Locations are those of
 * analysis/calltree's location table (by content, not pointer: a capture
 * set has one symbolizer per capture and a diff compares two sets); stacks
 * are sequences of their ids. Must not: decide what makes two frames one
 * location (calltree.c does), or keep per-event data.
 */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"
#include "common/hindex.h"
#include "report/report_internal.h"

const char *trk_rbasename(const char *path)
{
    if (!path)
        return NULL;
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void trk_loctab_init(struct trk_loctab *t, bool basenames)
{
    memset(t, 0, sizeof(*t));
    /* Line-level locations of analysis/calltree's table: the one
     * interning of locations, by content across every symbolizer. */
    struct trk_ctree_options o = {.thread = -1, .basenames = basenames};
    t->ok = trk_ctree_init(&t->locs, &o) == 0;
}

void trk_loctab_free(struct trk_loctab *t)
{
    free(t->v);
    trk_ctree_free(&t->locs);
    memset(t, 0, sizeof(*t));
}

uint32_t trk_loctab_intern(struct trk_loctab *t, const struct trk_frame *f)
{
    uint32_t l = t->ok ? trk_ctree_location(&t->locs, f) : TRK_CTREE_NONE;
    if (l == TRK_CTREE_NONE || l == 0 || l > t->n + 1)
        return TRK_NO_ID;
    uint32_t id = l - 1; /* location 0 is the tree's root */
    if (id < t->n)
        return id;
    if (t->n >= TRK_NO_ID - 1 || TRK_GROW(t->v, t->cap, t->n + 1) < 0)
        return TRK_NO_ID;
    const struct trk_location *x = &t->locs.locs[l];
    t->v[t->n++] = (struct trk_rloc){.function = x->function,
                                     .file = x->file,
                                     .module = x->module,
                                     .line = x->line,
                                     .python = x->python != 0,
                                     .offset = x->offset};
    return id;
}

void trk_stacktab_init(struct trk_stacktab *t)
{
    memset(t, 0, sizeof(*t));
}

void trk_stacktab_free(struct trk_stacktab *t)
{
    free(t->ids);
    free(t->v);
    trk_hindex_free(&t->ix);
    memset(t, 0, sizeof(*t));
}

uint32_t trk_stacktab_intern(struct trk_stacktab *t, const uint32_t *locs, uint32_t n)
{
    uint64_t h = trk_mix64(n);
    for (uint32_t i = 0; i < n; i++)
        h = trk_hash_add(h, locs[i]);
    if (trk_hindex_reserve(&t->ix) < 0)
        return TRK_NO_ID;
    size_t pos = SIZE_MAX;
    uint32_t k;
    while ((k = trk_hindex_next(&t->ix, h, &pos)) != TRK_HINDEX_NONE) {
        const struct trk_rstack *e = &t->v[k];
        if (e->len == n && (n == 0 || memcmp(t->ids + e->start, locs, n * sizeof(*locs)) == 0))
            return k;
    }
    if (t->n >= TRK_NO_ID - 1 || TRK_GROW(t->v, t->cap, t->n + 1) < 0 ||
        TRK_GROW(t->ids, t->capids, t->nids + n) < 0)
        return TRK_NO_ID;
    if (n)
        memcpy(t->ids + t->nids, locs, n * sizeof(*locs));
    t->v[t->n] = (struct trk_rstack){.start = t->nids, .len = n};
    t->nids += n;
    trk_hindex_put(&t->ix, pos, h, (uint32_t)t->n);
    return (uint32_t)t->n++;
}

int trk_site_locs(struct trk_site_walker *w, const struct trk_report_capture *c,
                  const struct trk_report_opts *o, uint64_t stack, struct trk_loctab *lt,
                  const uint32_t **ids)
{
    struct trk_frames_options fo = trk_report_frames(o);
    const struct trk_frame *frames = NULL;
    int n = stack ? trk_stack_frames(c->r, c->sym, stack, &fo, &w->fb, &frames) : 0;
    if (n < 0)
        return -1;
    if (TRK_GROW(w->ids, w->cap, (size_t)n + 1) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        w->ids[i] = trk_loctab_intern(lt, &frames[i]);
        if (w->ids[i] == TRK_NO_ID)
            return -1;
    }
    *ids = w->ids;
    return n;
}

void trk_site_walker_free(struct trk_site_walker *w)
{
    trk_frame_buf_free(&w->fb);
    free(w->ids);
    memset(w, 0, sizeof(*w));
}

uint32_t trk_site_stack(struct trk_site_walker *w, const struct trk_report_capture *c,
                        const struct trk_report_opts *o, uint64_t stack, struct trk_loctab *lt,
                        struct trk_stacktab *st)
{
    const uint32_t *ids;
    int n = trk_site_locs(w, c, o, stack, lt, &ids);
    return n < 0 ? TRK_NO_ID : trk_stacktab_intern(st, ids, (uint32_t)n);
}

void trk_rprint_stack(FILE *f, const struct trk_loctab *lt, const struct trk_stacktab *st,
                      uint32_t id)
{
    uint32_t n;
    const uint32_t *ids = trk_stacktab_get(st, id, &n);
    if (n == 0)
        fputs("    (no stack recorded)\n", f);
    for (uint32_t k = 0; k < n; k++) {
        fputs("    at ", f);
        trk_rprint_loc(f, &lt->v[ids[k]]);
        fputc('\n', f);
    }
}

void trk_rjson_stack(struct trk_rjson *j, const struct trk_loctab *lt,
                     const struct trk_stacktab *st, uint32_t id)
{
    uint32_t n;
    const uint32_t *ids = trk_stacktab_get(st, id, &n);
    trk_rjson_begin_array(j, "stack");
    for (uint32_t k = 0; k < n; k++)
        trk_rjson_loc(j, &lt->v[ids[k]]);
    trk_rjson_end_array(j);
}
