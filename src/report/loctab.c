/* SPDX-License-Identifier: MIT
 *
 * loctab.c - interning of source locations and symbolized stacks for the
 * reports, and the printing of an interned stack (text and JSON). Keys compare by string content,
 * not pointer, because a capture set has one symbolizer per capture (each with its own interned
 * strings) and a diff compares two sets. Must not: print, or keep per-event data.
 */
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"
#include "report/report_internal.h"

/* FNV-1a over a string that may be NULL (told apart from ""). */
static uint64_t hash_str(uint64_t h, const char *s)
{
    if (!s)
        return (h ^ 0xA5) * TRK_FNV_PRIME;
    return (trk_fnv1a_str(h, s) ^ 0xFF) * TRK_FNV_PRIME;
}

const char *trk_rbasename(const char *path)
{
    if (!path)
        return NULL;
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static bool str_eq(const char *a, const char *b)
{
    if (a == b)
        return true;
    return a && b && strcmp(a, b) == 0;
}

void trk_loctab_init(struct trk_loctab *t, bool basenames)
{
    memset(t, 0, sizeof(*t));
    t->basenames = basenames;
}

void trk_loctab_free(struct trk_loctab *t)
{
    free(t->v);
    trk_hindex_free(&t->ix);
    memset(t, 0, sizeof(*t));
}

uint32_t trk_loctab_intern(struct trk_loctab *t, const struct trk_frame *f)
{
    struct trk_rloc l = {
        .function = f->function,
        .file = f->file,
        .module = f->module,
        .line = f->line,
        .python = f->python != 0,
        /* Lines of one function merge; only an unknown function needs its
         * address to stay apart from the other unknowns. */
        .offset = f->function ? 0
                  : f->module ? f->offset
                              : f->ip,
    };
    const char *file = t->basenames ? trk_rbasename(l.file) : l.file;
    const char *module = t->basenames ? trk_rbasename(l.module) : l.module;
    uint64_t h = hash_str(TRK_FNV_OFFSET, l.function);
    h = hash_str(h, file);
    h = hash_str(h, module);
    h = trk_hash_add(h, l.line);
    h = trk_hash_add(h, l.offset);
    h = trk_hash_add(h, l.python);

    if (trk_hindex_reserve(&t->ix) < 0)
        return TRK_NO_ID;
    size_t pos = SIZE_MAX;
    uint32_t k;
    while ((k = trk_hindex_next(&t->ix, h, &pos)) != TRK_HINDEX_NONE) {
        const struct trk_rloc *e = &t->v[k];
        if (e->line == l.line && e->offset == l.offset && e->python == l.python &&
            str_eq(e->function, l.function) &&
            str_eq(t->basenames ? trk_rbasename(e->file) : e->file, file) &&
            str_eq(t->basenames ? trk_rbasename(e->module) : e->module, module))
            return k;
    }
    if (t->n >= TRK_NO_ID - 1 || TRK_GROW(t->v, t->cap, t->n + 1) < 0)
        return TRK_NO_ID;
    t->v[t->n] = l;
    trk_hindex_put(&t->ix, pos, h, (uint32_t)t->n);
    return (uint32_t)t->n++;
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
