/* SPDX-License-Identifier: MIT
 *
 * loctab.c - interning of source locations and symbolized stacks for the
 * reports. Keys compare by string content, not pointer, because a capture
 * set has one symbolizer per capture (each with its own interned strings)
 * and a diff compares two sets. Must not: print, or keep per-event data.
 */
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

/* FNV-1a, then mixed: slots are picked from the low bits. */
static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    if (!s)
        return (h ^ 0xA5) * 0x100000001b3ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return (h ^ 0xFF) * 0x100000001b3ULL;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        h = (h ^ (v & 0xFF)) * 0x100000001b3ULL;
    return h;
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

/* Doubles a slot array of index+1 entries, rehashing each entry by the
 * 64-bit hash stored hash_off bytes into it. */
static int grow_slots(uint32_t **slots, size_t *nslots, size_t n, const void *base, size_t stride,
                      size_t hash_off)
{
    size_t ns = *nslots ? *nslots * 2 : 1024;
    uint32_t *s = calloc(ns, sizeof(*s));
    if (!s)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint64_t h;
        memcpy(&h, (const char *)base + i * stride + hash_off, sizeof(h));
        size_t k = (size_t)h & (ns - 1);
        while (s[k])
            k = (k + 1) & (ns - 1);
        s[k] = (uint32_t)i + 1;
    }
    free(*slots);
    *slots = s;
    *nslots = ns;
    return 0;
}

static int grow_array(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*v, nc * size);
    if (!p)
        return -1;
    *v = p;
    *cap = nc;
    return 0;
}

void trk_loctab_init(struct trk_loctab *t, bool basenames)
{
    memset(t, 0, sizeof(*t));
    t->basenames = basenames;
}

void trk_loctab_free(struct trk_loctab *t)
{
    free(t->v);
    free(t->slots);
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
    uint64_t h = 0xcbf29ce484222325ULL;
    h = hash_str(h, l.function);
    h = hash_str(h, file);
    h = hash_str(h, module);
    h = hash_u64(h, l.line);
    h = hash_u64(h, l.offset);
    h = hash_u64(h, l.python);
    l.hash = mix(h);

    if (t->n * 2 >= t->nslots && grow_slots(&t->slots, &t->nslots, t->n, t->v, sizeof(*t->v),
                                            offsetof(struct trk_rloc, hash)) < 0)
        return TRK_NO_ID;
    size_t k = (size_t)l.hash & (t->nslots - 1);
    while (t->slots[k]) {
        const struct trk_rloc *e = &t->v[t->slots[k] - 1];
        if (e->hash == l.hash && e->line == l.line && e->offset == l.offset &&
            e->python == l.python && str_eq(e->function, l.function) &&
            str_eq(t->basenames ? trk_rbasename(e->file) : e->file, file) &&
            str_eq(t->basenames ? trk_rbasename(e->module) : e->module, module))
            return t->slots[k] - 1;
        k = (k + 1) & (t->nslots - 1);
    }
    if (t->n >= TRK_NO_ID - 1 || grow_array((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) < 0)
        return TRK_NO_ID;
    t->v[t->n] = l;
    t->slots[k] = (uint32_t)++t->n;
    return (uint32_t)(t->n - 1);
}

void trk_stacktab_init(struct trk_stacktab *t)
{
    memset(t, 0, sizeof(*t));
}

void trk_stacktab_free(struct trk_stacktab *t)
{
    free(t->ids);
    free(t->v);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

uint32_t trk_stacktab_intern(struct trk_stacktab *t, const uint32_t *locs, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint32_t i = 0; i < n; i++)
        h = hash_u64(h, locs[i]);
    h = mix(hash_u64(h, n));
    if (t->n * 2 >= t->nslots && grow_slots(&t->slots, &t->nslots, t->n, t->v, sizeof(*t->v),
                                            offsetof(struct trk_rstack, hash)) < 0)
        return TRK_NO_ID;
    size_t k = (size_t)h & (t->nslots - 1);
    while (t->slots[k]) {
        const struct trk_rstack *e = &t->v[t->slots[k] - 1];
        if (e->hash == h && e->len == n &&
            (n == 0 || memcmp(t->ids + e->start, locs, n * sizeof(*locs)) == 0))
            return t->slots[k] - 1;
        k = (k + 1) & (t->nslots - 1);
    }
    if (t->n >= TRK_NO_ID - 1 || grow_array((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) < 0 ||
        grow_array((void **)&t->ids, &t->capids, t->nids + n, sizeof(*t->ids)) < 0)
        return TRK_NO_ID;
    if (n)
        memcpy(t->ids + t->nids, locs, n * sizeof(*locs));
    t->v[t->n] = (struct trk_rstack){.start = t->nids, .len = n, .hash = h};
    t->nids += n;
    t->slots[k] = (uint32_t)++t->n;
    return (uint32_t)(t->n - 1);
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
    if (grow_array((void **)&w->ids, &w->cap, (size_t)n + 1, sizeof(*w->ids)) < 0)
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
