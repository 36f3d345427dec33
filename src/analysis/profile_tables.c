/* SPDX-License-Identifier: MIT
 *
 * profile_tables.c - the lookup tables of a profile pass: sites keyed by
 * (stack, thread, class: space, GPU kind, flags), thread entries keyed by tid (a tid reused after
 * its thread exited gets a new entry), anonymous-mapping ids, and the export of all that into
 * struct trk_profile at the end. Must not: interpret events (profile.c does) or allocate per event:
 * tables only grow by doubling.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/profile_internal.h"

/* Site and thread indexes are uint32_t with TRK_PROF_NONE reserved. */
#define INDEX_MAX (UINT32_MAX - 1)

static inline size_t mix(uint64_t k)
{
    k ^= k >> 31;
    k *= UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(k ^ (k >> 29));
}

/* Grows an array of elements of size `elem` to hold one more. */
static int reserve(void **v, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : first;
    if (ncap < *cap || ncap > SIZE_MAX / elem)
        return -1;
    void *p = realloc(*v, ncap * elem);
    if (!p)
        return -1;
    *v = p;
    *cap = ncap;
    return 0;
}

int trk_prof_tables_init(struct trk_prof_ctx *c)
{
    c->site_mask = 1023;
    c->site_index = calloc(c->site_mask + 1, sizeof(*c->site_index));
    c->tid_mask = 63;
    c->tid_index = calloc(c->tid_mask + 1, sizeof(*c->tid_index));
    c->last_thread = TRK_PROF_NONE;
    c->mapping_free = TRK_PROF_NONE;
    for (size_t i = 0; i < TRK_PROF_SITE_CACHE; i++)
        c->site_cache[i].site = TRK_PROF_NONE;
    return c->site_index && c->tid_index ? 0 : -1;
}

void trk_prof_tables_free(struct trk_prof_ctx *c)
{
    for (size_t i = 0; i < c->nthreads; i++)
        free(c->threads[i].name);
    free(c->threads);
    free(c->tid_index);
    free(c->sites);
    free(c->site_index);
    free(c->mappings);
    c->threads = NULL;
    c->tid_index = NULL;
    c->sites = NULL;
    c->site_index = NULL;
    c->mappings = NULL;
    c->nthreads = c->nsites = c->nmappings = 0;
}

/* ---- Threads ---------------------------------------------------------------- */

static struct trk_prof_tid_slot *tid_slot(struct trk_prof_ctx *c, uint32_t tid)
{
    size_t h = mix(tid) & c->tid_mask;
    while (c->tid_index[h].idx1 && c->tid_index[h].tid != tid)
        h = (h + 1) & c->tid_mask;
    return &c->tid_index[h];
}

static int tid_grow(struct trk_prof_ctx *c)
{
    size_t ncap = (c->tid_mask + 1) * 2;
    struct trk_prof_tid_slot *n = calloc(ncap, sizeof(*n));
    if (!n)
        return -1;
    struct trk_prof_tid_slot *old = c->tid_index;
    size_t old_cap = c->tid_mask + 1;
    c->tid_index = n;
    c->tid_mask = ncap - 1;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].idx1)
            *tid_slot(c, old[i].tid) = old[i];
    free(old);
    return 0;
}

/* A new entry for tid, installed as the tid's current one. */
static uint32_t thread_new(struct trk_prof_ctx *c, uint32_t tid)
{
    if (c->nthreads >= INDEX_MAX ||
        reserve((void **)&c->threads, &c->threads_cap, c->nthreads, sizeof(*c->threads), 16) < 0)
        goto oom;
    if ((c->ntids + 1) * 2 > c->tid_mask + 1 && tid_grow(c) < 0)
        goto oom;
    struct trk_prof_tid_slot *slot = tid_slot(c, tid);
    if (!slot->idx1) {
        slot->tid = tid;
        c->ntids++;
    }
    uint32_t i = (uint32_t)c->nthreads++;
    slot->idx1 = i + 1;
    struct trk_prof_thread *t = &c->threads[i];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    c->last_thread = TRK_PROF_NONE; /* the tid may now mean another entry */
    return i;
oom:
    c->oom = true;
    return TRK_PROF_NONE;
}

uint32_t trk_prof_thread_lookup(struct trk_prof_ctx *c, uint32_t tid, bool create)
{
    struct trk_prof_tid_slot *slot = tid_slot(c, tid);
    if (slot->idx1)
        return slot->idx1 - 1;
    return create ? thread_new(c, tid) : TRK_PROF_NONE;
}

void trk_prof_thread_start(struct trk_prof_ctx *c, uint32_t tid)
{
    uint32_t t = trk_prof_thread_lookup(c, tid, false);
    /* An entry made earlier by a name given from another thread is this
     * thread's; a started one belongs to an earlier thread of the same tid. */
    if (t == TRK_PROF_NONE || c->threads[t].started)
        t = thread_new(c, tid);
    if (t == TRK_PROF_NONE)
        return;
    c->threads[t].started = true;
    struct trk_prof_tid_slot *slot = tid_slot(c, tid);
    if (!slot->started_once) {
        slot->started_once = 1;
        c->st->threads++;
    }
}

void trk_prof_thread_exit(struct trk_prof_ctx *c, uint32_t tid)
{
    uint32_t t = trk_prof_thread_lookup(c, tid, false);
    if (t != TRK_PROF_NONE)
        c->threads[t].exited = true;
}

void trk_prof_thread_name(struct trk_prof_ctx *c, uint64_t tid, const char *name)
{
    if (tid > UINT32_MAX || !name)
        return;
    uint32_t t = trk_prof_thread_lookup(c, (uint32_t)tid, false);
    if (t == TRK_PROF_NONE || c->threads[t].exited)
        t = thread_new(c, (uint32_t)tid); /* named before its first event */
    if (t == TRK_PROF_NONE)
        return;
    /* Names are at most TRK_THREAD_NAME_MAX bytes (the reader's record
     * limit) and arrive rarely: a copy each time is fine. */
    char *copy = strdup(name);
    if (!copy) {
        c->oom = true;
        return;
    }
    free(c->threads[t].name);
    c->threads[t].name = copy;
}

/* ---- Sites ------------------------------------------------------------------- */

static size_t site_home(const struct trk_prof_ctx *c, uint64_t key, uint32_t cls)
{
    return trk_prof_site_home(c, key, cls);
}

static int site_grow(struct trk_prof_ctx *c)
{
    size_t ncap = (c->site_mask + 1) * 2;
    struct trk_prof_site_slot *n = calloc(ncap, sizeof(*n));
    if (!n)
        return -1;
    struct trk_prof_site_slot *old = c->site_index;
    size_t old_cap = c->site_mask + 1;
    c->site_index = n;
    c->site_mask = ncap - 1;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].idx1)
            continue;
        size_t h = site_home(c, old[i].key, old[i].cls);
        while (n[h].idx1)
            h = (h + 1) & c->site_mask;
        n[h] = old[i];
    }
    free(old);
    return 0;
}

/* The site's index, or TRK_PROF_NONE with *slot at the empty slot where it
 * would go. */
static uint32_t site_find(struct trk_prof_ctx *c, uint64_t key, uint32_t cls, size_t *slot)
{
    size_t h = site_home(c, key, cls);
    for (;;) {
        struct trk_prof_site_slot *s = &c->site_index[h];
        if (!s->idx1)
            break;
        if (s->key == key && s->cls == cls)
            return s->idx1 - 1;
        h = (h + 1) & c->site_mask;
    }
    *slot = h;
    return TRK_PROF_NONE;
}

uint32_t trk_prof_site_lookup(struct trk_prof_ctx *c, uint64_t stack, uint32_t thread, uint32_t cls)
{
    size_t h;
    uint64_t key = (stack > UINT32_MAX ? 0 : stack) | (uint64_t)thread << 32;
    uint32_t space = cls & 0xFFFFu;
    if (space >= TRK_SPACE_COUNT)
        return TRK_PROF_NONE; /* a caller's bug; never index gen[] with it */
    uint32_t i = site_find(c, key, cls, &h);
    if (i != TRK_PROF_NONE)
        return i;
    /* Stack ids of a sound capture are dense and defined before use; an id
     * that names no stack is corruption and would only multiply sites, so it
     * counts as "no stack". Checked once, when a site is made. */
    uint64_t ip = 0;
    if (stack > UINT32_MAX || (stack != 0 && trk_reader_stack(c->r, stack, &ip, 1) == 0)) {
        stack = 0;
        key = (uint64_t)thread << 32;
        i = site_find(c, key, cls, &h);
        if (i != TRK_PROF_NONE)
            return i;
    }
    /* Sampling passed this heap block over: no site (profile.c). */
    if (stack != 0 && (cls >> 24) & TRK_SITE_SAMPLED && trk_ip_is_callsite(ip))
        return TRK_PROF_UNSAMPLED;
    if (c->nsites >= TRK_PROF_UNSAMPLED ||
        reserve((void **)&c->sites, &c->sites_cap, c->nsites, sizeof(*c->sites), 256) < 0)
        goto oom;
    if ((c->nsites + 1) * 10 > (c->site_mask + 1) * 7) {
        if (site_grow(c) < 0)
            goto oom;
        h = site_home(c, key, cls);
        while (c->site_index[h].idx1)
            h = (h + 1) & c->site_mask;
    }
    i = (uint32_t)c->nsites++;
    c->site_index[h] = (struct trk_prof_site_slot){.key = key, .cls = cls, .idx1 = i + 1};
    struct trk_prof_site *s = &c->sites[i];
    memset(s, 0, sizeof(*s));
    s->out.stack = (uint32_t)stack;
    /* With split_by_import `thread` is a key thread: (thread, chain). */
    trk_prof_key_resolve(c, thread, &s->out.thread, &s->out.import);
    s->out.space = space;
    s->out.kind = (uint8_t)(cls >> 16);
    s->out.flags = (uint8_t)(cls >> 24);
    /* It held nothing at the current peak, whenever that was. */
    s->saved_gen = c->gen[space];
    s->hm_gen = c->gen_hm;
    return i;
oom:
    c->oom = true;
    return TRK_PROF_NONE;
}

/* ---- Mapping ids ------------------------------------------------------------- */

uint32_t trk_prof_mapping_new(struct trk_prof_ctx *c)
{
    uint32_t id = c->mapping_free;
    if (id != TRK_PROF_NONE) {
        c->mapping_free = c->mappings[id].next_free;
    } else {
        if (c->nmappings >= INDEX_MAX || reserve((void **)&c->mappings, &c->mappings_cap,
                                                 c->nmappings, sizeof(*c->mappings), 64) < 0) {
            c->oom = true;
            return TRK_PROF_NONE;
        }
        id = (uint32_t)c->nmappings++;
    }
    c->mappings[id].pieces = 1;
    c->mappings[id].next_free = TRK_PROF_NONE;
    return id;
}

void trk_prof_mapping_split(struct trk_prof_ctx *c, uint32_t id)
{
    if (id < c->nmappings && c->mappings[id].pieces)
        c->mappings[id].pieces++;
}

bool trk_prof_mapping_drop(struct trk_prof_ctx *c, uint32_t id)
{
    if (id >= c->nmappings || c->mappings[id].pieces == 0)
        return false;
    if (--c->mappings[id].pieces)
        return false;
    c->mappings[id].next_free = c->mapping_free;
    c->mapping_free = id;
    return true;
}

/* ---- Export ------------------------------------------------------------------- */

int trk_prof_export(struct trk_prof_ctx *c)
{
    struct trk_profile *p = c->p;
    if (c->nthreads) {
        p->threads = calloc(c->nthreads, sizeof(*p->threads));
        if (!p->threads)
            return -1;
        p->nthreads = c->nthreads;
        for (size_t i = 0; i < c->nthreads; i++) {
            p->threads[i].tid = c->threads[i].tid;
            p->threads[i].name = c->threads[i].name;
            c->threads[i].name = NULL;
        }
    }
    for (size_t i = 0; i < c->nsites; i++) {
        struct trk_prof_site *s = &c->sites[i];
        struct trk_site_stats *o = &s->out.s;
        /* Untouched since its space's last new maximum: what it holds now
         * is what it held then. */
        if (s->saved_gen == c->gen[s->out.space]) {
            o->peak_count = s->saved_count;
            o->peak_bytes = s->saved_bytes;
        } else {
            o->peak_count = s->live_count;
            o->peak_bytes = s->live_bytes;
        }
        if (s->out.space > TRK_SPACE_MMAP) {
            o->peak_hm_count = o->peak_hm_bytes = 0;
        } else if (s->hm_gen == c->gen_hm) {
            o->peak_hm_count = s->hm_count;
            o->peak_hm_bytes = s->hm_bytes;
        } else {
            o->peak_hm_count = s->live_count;
            o->peak_hm_bytes = s->live_bytes;
        }
        o->leak_count = c->py.marked ? s->mark_count : s->live_count;
        o->leak_bytes = c->py.marked ? s->mark_bytes : s->live_bytes;
        if (c->st->leaks_classified && s->out.space == TRK_SPACE_HEAP) {
            uint64_t nb = 0, nc = 0; /* index 0: live at exit, not classified */
            for (int k = 1; k <= TRK_LEAK_CLASS_MAX; k++) {
                nb += o->cls_bytes[k];
                nc += o->cls_count[k];
            }
            o->cls_bytes[0] = trk_prof_sub_sat(s->live_bytes, nb);
            o->cls_count[0] = trk_prof_sub_sat(s->live_count, nc);
        }
        if (s->out.space == TRK_SPACE_HEAP && s->out.thread < p->nthreads) {
            struct trk_thread_info *t = &p->threads[s->out.thread];
            t->allocations += o->alloc_count;
            t->bytes_allocated += o->alloc_bytes;
            t->leaked_bytes += o->leak_bytes;
            t->peak_bytes += o->peak_bytes;
        }
    }
    /* Compact in place: out is the first member, so element i moves down. */
    struct trk_site *out = (struct trk_site *)(void *)c->sites;
    for (size_t i = 0; i < c->nsites; i++)
        memmove(&out[i], &c->sites[i].out, sizeof(*out));
    if (c->nsites) {
        struct trk_site *shrunk = realloc(out, c->nsites * sizeof(*out));
        p->sites = shrunk ? shrunk : out;
    } else {
        free(c->sites);
    }
    p->nsites = c->nsites;
    c->sites = NULL;
    c->nsites = c->sites_cap = 0;
    return 0;
}
