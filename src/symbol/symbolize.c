/* SPDX-License-Identifier: MIT
 *
 * symbolize.c - the public symbolizer (symbolize.h): maps a captured address
 * to the module that held it (the latest generation wins), asks that
 * module's object for frames, and caches the answer per address. Owns the
 * address map, the object table and the ip cache. Must not: read events,
 * print, or open files itself (sym_object.c does).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbol/sym_object.h"
#include "symbol/symbolize.h"

/* A stretch of addresses owned by one module instance. */
struct map_range {
    uint64_t lo, hi;
    uint64_t base;           /* load bias */
    struct trk_sym_obj *obj; /* NULL: [vdso] and the like */
    const char *module;      /* interned path shown in frames */
};

struct obj_slot {
    uint64_t key;
    struct trk_sym_obj *obj; /* NULL: empty */
};

struct cache_slot {
    uint64_t ip;
    const struct trk_frame *frames; /* NULL: empty */
    int n;
};

struct trk_symbolizer {
    const struct trk_reader *r;
    struct trk_sym_ctx ctx;
    struct obj_slot *objs; /* open addressing on (path, build-id) */
    size_t objs_cap, objs_count;
    size_t nmods_mapped; /* how many of the reader's modules the map covers */
    struct map_range *ranges;
    size_t nranges;
    struct cache_slot *cache;
    size_t cache_cap, cache_count;
    struct trk_frame scratch[TRK_SYM_MAX_FRAMES];
    struct trk_frame fallback; /* the answer when memory runs out */
    struct trk_frame pyframe;  /* the answer for a Python frame, valid until the next call */
};

/* ---- Objects ------------------------------------------------------------------- */

static uint64_t obj_key(const char *path, const struct trk_module *m)
{
    uint32_t len = m->buildid_len <= sizeof(m->buildid) ? m->buildid_len : 0;
    return trk_sym_hash(m->buildid, len, (uint64_t)(uintptr_t)path);
}

static int objs_grow(struct trk_symbolizer *s)
{
    size_t cap = s->objs_cap ? s->objs_cap * 2 : 64;
    struct obj_slot *t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < s->objs_cap; i++) {
        if (!s->objs[i].obj)
            continue;
        size_t j = s->objs[i].key & (cap - 1);
        while (t[j].obj)
            j = (j + 1) & (cap - 1);
        t[j] = s->objs[i];
    }
    free(s->objs);
    s->objs = t;
    s->objs_cap = cap;
    return 0;
}

/* The one object for (path, m's build-id), created on first sight. */
static struct trk_sym_obj *obj_get(struct trk_symbolizer *s, const char *path,
                                   const struct trk_module *m, int pseudo)
{
    if ((s->objs_count + 1) * 2 > s->objs_cap && objs_grow(s) != 0)
        return NULL;
    uint64_t key = obj_key(path, m);
    size_t j = key & (s->objs_cap - 1);
    while (s->objs[j].obj) {
        if (s->objs[j].key == key && trk_sym_obj_is(s->objs[j].obj, path, m))
            return s->objs[j].obj;
        j = (j + 1) & (s->objs_cap - 1);
    }
    struct trk_sym_obj *o = trk_sym_obj_new(&s->ctx, path, m, pseudo);
    if (!o)
        return NULL;
    s->objs[j].key = key;
    s->objs[j].obj = o;
    s->objs_count++;
    return o;
}

static int is_pseudo(const char *p)
{
    return strcmp(p, "[vdso]") == 0 || strcmp(p, "linux-vdso.so.1") == 0 ||
           strcmp(p, "linux-gate.so.1") == 0 || strcmp(p, "[vsyscall]") == 0;
}

/* The path a module is shown and opened under: the main executable's is
 * in the header; a relative one is taken from the capture's cwd. */
static const char *module_path(struct trk_symbolizer *s, const struct trk_module *m, int *pseudo)
{
    const struct trk_reader_info *info = trk_reader_info(s->r);
    const char *p = m->path[0] ? m->path : info->exe;
    *pseudo = p[0] == 0 || is_pseudo(p);
    if (p[0] == 0)
        return NULL;
    if (p[0] != '/' && !*pseudo && info->cwd[0] == '/') {
        char buf[PATH_MAX * 2];
        snprintf(buf, sizeof(buf), "%s/%s", info->cwd, p);
        return trk_sym_intern(&s->ctx.strings, buf);
    }
    return trk_sym_intern(&s->ctx.strings, p);
}

/* ---- Address map ---------------------------------------------------------------- */

struct seg {
    uint64_t lo, hi, generation, base;
    size_t order;
    struct trk_sym_obj *obj;
    const char *module;
};

static int seg_cmp(const void *a, const void *b)
{
    const struct seg *x = a, *y = b;
    if (x->generation != y->generation)
        return x->generation < y->generation ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static size_t lower_bound(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Cuts the address space at every segment boundary, lets each segment
 * claim its pieces in generation order (so the latest claims last and
 * wins), then merges neighbouring pieces of the same module instance.
 * Returns -1 when memory runs out (the old map stays). */
static int build_map(struct trk_symbolizer *s, const struct trk_module *mods, size_t nmods)
{
    size_t nseg = 0;
    for (size_t i = 0; i < nmods; i++)
        nseg += mods[i].nseg <= 16 ? mods[i].nseg : 16;
    struct seg *segs = malloc((nseg ? nseg : 1) * sizeof(*segs));
    uint64_t *pts = malloc((2 * nseg + 1) * sizeof(*pts));
    size_t *owner = malloc((2 * nseg + 1) * sizeof(*owner));
    struct map_range *ranges = malloc((2 * nseg + 1) * sizeof(*ranges));
    int rc = -1;
    if (!segs || !pts || !owner || !ranges)
        goto out;

    size_t k = 0;
    for (size_t i = 0; i < nmods; i++) {
        const struct trk_module *m = &mods[i];
        int pseudo;
        const char *path = module_path(s, m, &pseudo);
        struct trk_sym_obj *obj = pseudo ? NULL : obj_get(s, path, m, 0);
        if (!pseudo && !obj)
            goto out;
        uint32_t n = m->nseg <= 16 ? m->nseg : 16;
        for (uint32_t j = 0; j < n; j++) {
            uint64_t lo = m->base + m->seg[j].vaddr;
            uint64_t hi = lo + m->seg[j].memsz;
            if (hi <= lo)
                continue; /* empty or wrapping: nothing sane to map */
            segs[k] = (struct seg){lo, hi, m->generation, m->base, i, obj, path};
            k++;
        }
    }
    qsort(segs, k, sizeof(*segs), seg_cmp);

    size_t npts = 0;
    for (size_t i = 0; i < k; i++) {
        pts[npts++] = segs[i].lo;
        pts[npts++] = segs[i].hi;
    }
    qsort(pts, npts, sizeof(*pts), u64_cmp);
    size_t u = 0;
    for (size_t i = 0; i < npts; i++)
        if (u == 0 || pts[u - 1] != pts[i])
            pts[u++] = pts[i];
    npts = u;
    for (size_t i = 0; i + 1 < npts; i++)
        owner[i] = SIZE_MAX;
    for (size_t i = 0; i < k; i++)
        for (size_t p = lower_bound(pts, npts, segs[i].lo); p + 1 < npts && pts[p] < segs[i].hi;
             p++)
            owner[p] = i;

    size_t nr = 0;
    for (size_t p = 0; p + 1 < npts; p++) {
        if (owner[p] == SIZE_MAX)
            continue;
        const struct seg *g = &segs[owner[p]];
        struct map_range *prev = nr ? &ranges[nr - 1] : NULL;
        if (prev && prev->hi == pts[p] && prev->obj == g->obj && prev->base == g->base &&
            prev->module == g->module) {
            prev->hi = pts[p + 1];
            continue;
        }
        ranges[nr++] = (struct map_range){pts[p], pts[p + 1], g->base, g->obj, g->module};
    }
    free(s->ranges);
    s->ranges = ranges;
    s->nranges = nr;
    ranges = NULL;
    rc = 0;
out:
    free(segs);
    free(pts);
    free(owner);
    free(ranges);
    return rc;
}

static const struct map_range *map_find(const struct trk_symbolizer *s, uint64_t a)
{
    size_t lo = 0, hi = s->nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ranges[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && a < s->ranges[lo - 1].hi)
        return &s->ranges[lo - 1];
    return NULL;
}

/* The reader learns modules as it reads on; answers given before a new
 * snapshot may be wrong after it (an address now mapped), so the cache is
 * emptied. Arrays already handed out stay valid: they live in the arena. */
static void refresh(struct trk_symbolizer *s)
{
    const struct trk_module *mods;
    size_t n = trk_reader_modules(s->r, &mods);
    if (n == s->nmods_mapped || build_map(s, mods, n) != 0)
        return;
    s->nmods_mapped = n;
    if (s->cache_count) {
        memset(s->cache, 0, s->cache_cap * sizeof(*s->cache));
        s->cache_count = 0;
    }
}

/* ---- Cache ------------------------------------------------------------------------ */

static struct cache_slot *cache_slot(struct trk_symbolizer *s, uint64_t ip)
{
    size_t j = trk_sym_mix64(ip) & (s->cache_cap - 1);
    while (s->cache[j].frames && s->cache[j].ip != ip)
        j = (j + 1) & (s->cache_cap - 1);
    return &s->cache[j];
}

static int cache_grow(struct trk_symbolizer *s)
{
    size_t oldcap = s->cache_cap;
    struct cache_slot *old = s->cache;
    size_t cap = oldcap ? oldcap * 2 : 4096;
    struct cache_slot *t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    s->cache = t;
    s->cache_cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].frames)
            *cache_slot(s, old[i].ip) = old[i];
    free(old);
    return 0;
}

/* ---- API -------------------------------------------------------------------------- */

struct trk_symbolizer *trk_symbolizer_new(const struct trk_reader *r,
                                          const struct trk_symbolizer_options *opts)
{
    struct trk_symbolizer *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->r = r;
    trk_sym_strings_init(&s->ctx.strings, &s->ctx.arena);
    size_t ndirs = opts ? opts->ndebug_dirs : 0;
    if (opts) {
        s->ctx.warn = opts->warn;
        s->ctx.warn_ctx = opts->warn_ctx;
    }
    /* Relative dirs are made absolute: elfutils searches build-ids only
     * under absolute ones. A dir with ':' cannot be put in its path. */
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd)))
        cwd[0] = 0;
    s->ctx.debug_dirs = calloc(ndirs + 1, sizeof(char *));
    size_t pathlen = 64;
    if (!s->ctx.debug_dirs)
        goto fail;
    for (size_t i = 0; i < ndirs; i++) {
        const char *d = opts->debug_dirs[i];
        if (!d || !d[0])
            continue;
        char buf[PATH_MAX * 2];
        snprintf(buf, sizeof(buf), "%s%s%s", d[0] == '/' ? "" : cwd, d[0] == '/' ? "" : "/", d);
        if (strchr(buf, ':')) {
            char msg[PATH_MAX * 2 + 64];
            snprintf(msg, sizeof(msg), "%s: a debug directory cannot contain ':'; ignored", buf);
            trk_sym_warn(&s->ctx, msg);
            continue;
        }
        char *copy = strdup(buf);
        if (!copy)
            goto fail;
        s->ctx.debug_dirs[s->ctx.ndebug_dirs++] = copy;
        pathlen += strlen(copy) + 1;
    }
    s->ctx.debug_dirs[s->ctx.ndebug_dirs] = strdup("/usr/lib/debug");
    if (!s->ctx.debug_dirs[s->ctx.ndebug_dirs])
        goto fail;
    s->ctx.ndebug_dirs++;
    /* elfutils' default (next to the file, .debug/, /usr/lib/debug), then
     * the extra roots, searched the same way. */
    s->ctx.debuginfo_path = malloc(pathlen);
    if (!s->ctx.debuginfo_path)
        goto fail;
    strcpy(s->ctx.debuginfo_path, ":.debug:/usr/lib/debug");
    for (size_t i = 0; i + 1 < s->ctx.ndebug_dirs; i++) {
        strcat(s->ctx.debuginfo_path, ":");
        strcat(s->ctx.debuginfo_path, s->ctx.debug_dirs[i]);
    }
    if (cache_grow(s) != 0)
        goto fail;
    return s;
fail:
    trk_symbolizer_free(s);
    return NULL;
}

/* Records frames for ip in the arena and the cache; returns them, or NULL
 * when memory runs out. */
static const struct trk_frame *remember(struct trk_symbolizer *s, uint64_t ip,
                                        const struct trk_frame *f, int n)
{
    if ((s->cache_count + 1) * 2 > s->cache_cap && cache_grow(s) != 0)
        return NULL;
    struct trk_frame *copy = trk_sym_arena_alloc(&s->ctx.arena, (size_t)n * sizeof(*f));
    if (!copy)
        return NULL;
    memcpy(copy, f, (size_t)n * sizeof(*f));
    struct cache_slot *slot = cache_slot(s, ip);
    slot->ip = ip;
    slot->frames = copy;
    slot->n = n;
    s->cache_count++;
    return copy;
}

int trk_symbolize(struct trk_symbolizer *s, uint64_t ip, const struct trk_frame **frames)
{
    /* A Python frame is not an address: its code object carries the name
     * and file, the ip itself the line. Nothing to cache. */
    if (trk_ip_is_python(ip)) {
        const struct trk_pycode *c = trk_reader_pycode(s->r, trk_ip_pycode(ip));
        struct trk_frame *f = &s->pyframe;
        memset(f, 0, sizeof(*f));
        f->function = c ? c->name : "<unknown python code>";
        f->file = c ? c->file : NULL;
        f->line = trk_ip_pyline(ip);
        f->python = 1;
        f->ip = ip;
        *frames = f;
        return 1;
    }
    refresh(s);
    struct cache_slot *slot = cache_slot(s, ip);
    if (slot->frames) {
        *frames = slot->frames;
        return slot->n;
    }

    /* A return address follows its call: ip - 1 is inside the call, which
     * matters when the call ends a function or an inlined range. */
    uint64_t a = ip ? ip - 1 : 0;
    const struct map_range *mr = map_find(s, a);
    struct trk_frame *f = s->scratch;
    int n = 0;
    if (mr && mr->obj)
        n = trk_sym_obj_resolve(mr->obj, a - mr->base, f, TRK_SYM_MAX_FRAMES);
    if (n == 0) {
        memset(f, 0, sizeof(*f));
        n = 1;
    }
    for (int i = 0; i < n; i++) {
        f[i].module = mr ? mr->module : NULL;
        f[i].offset = mr ? ip - mr->base : ip;
        f[i].ip = ip;
    }
    const struct trk_frame *kept = remember(s, ip, f, n);
    if (!kept) {
        s->fallback = f[n - 1];
        s->fallback.inlined = 0;
        *frames = &s->fallback;
        return 1;
    }
    *frames = kept;
    return n;
}

void trk_symbolizer_free(struct trk_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->objs_cap; i++)
        trk_sym_obj_free(s->objs[i].obj);
    free(s->objs);
    free(s->ranges);
    free(s->cache);
    for (size_t i = 0; i < s->ctx.ndebug_dirs; i++)
        free(s->ctx.debug_dirs[i]);
    free(s->ctx.debug_dirs);
    free(s->ctx.debuginfo_path);
    free(s->ctx.warned);
    trk_sym_strings_free(&s->ctx.strings);
    trk_sym_arena_free(&s->ctx.arena);
    free(s);
}
