/* SPDX-License-Identifier: MIT
 *
 * calltree.c - the call tree of calltree.h: locations interned by content
 * (strings copied into the tree, so it outlives the symbolizers), nodes as a
 * tree by path (a recursive function appears once per level it occurs at),
 * totals, ordering and pruning. Must not: read events, print, or recurse
 * over the tree (stacks run 1024 frames deep and more): every walk is by
 * node index, relying on children being created after their parent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/calltree.h"
#include "common/grow.h"
#include "common/hindex.h"

#define POOL_BLOCK 65536

/* ---- Private state ------------------------------------------------------------- */

struct pool_block {
    struct pool_block *next;
    size_t used, cap;
    char data[];
};

/* A frame as the current symbolizer spelled it (its strings are interned by
 * it, so pointers identify them): a cache in front of content interning. */
struct frame_key {
    const char *function, *file, *module;
    uint64_t offset;
    uint32_t line;
    uint32_t python;
    uint32_t loc;
};

struct ctree_priv {
    struct pool_block *pool;
    const char **strs;
    size_t nstrs, strs_cap;
    struct trk_hindex str_ix;
    size_t locs_cap;
    struct trk_location *keys; /* what each location is looked up by */
    size_t keys_cap;
    struct trk_hindex loc_ix;
    size_t nodes_cap;
    struct trk_hindex child_ix;
    bool child_stale; /* prune rewrote the nodes: rebuild before the next add */
    struct frame_key *fkeys;
    size_t nfkeys, fkeys_cap;
    struct trk_hindex frame_ix;
    struct trk_frame_buf fb;
};

/* ---- Strings ------------------------------------------------------------------- */

static char *pool_copy(struct ctree_priv *P, const char *s, size_t len)
{
    struct pool_block *b = P->pool;
    if (!b || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > POOL_BLOCK ? len + 1 : POOL_BLOCK;
        b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->next = P->pool;
        b->used = 0;
        b->cap = cap;
        P->pool = b;
    }
    char *out = b->data + b->used;
    memcpy(out, s, len);
    out[len] = '\0';
    b->used += len + 1;
    return out;
}

/* The id of s among the tree's strings, added when new; TRK_HINDEX_NONE
 * when memory runs out. */
static uint32_t intern_id(struct ctree_priv *P, const char *s)
{
    if (trk_hindex_reserve(&P->str_ix) < 0)
        return TRK_HINDEX_NONE;
    uint64_t h = trk_hash_str(s);
    size_t pos = SIZE_MAX;
    uint32_t e;
    while ((e = trk_hindex_next(&P->str_ix, h, &pos)) != TRK_HINDEX_NONE)
        if (strcmp(P->strs[e], s) == 0)
            return e;
    char *copy = pool_copy(P, s, strlen(s));
    if (!copy || P->nstrs >= TRK_HINDEX_NONE - 1 ||
        trk_grow((void **)&P->strs, &P->strs_cap, P->nstrs + 1, sizeof(*P->strs)) < 0)
        return TRK_HINDEX_NONE;
    P->strs[P->nstrs] = copy;
    trk_hindex_put(&P->str_ix, pos, h, (uint32_t)P->nstrs);
    return (uint32_t)P->nstrs++;
}

/* The tree's copy of s (NULL stays NULL); equal strings give one pointer,
 * so locations compare by pointer. *err is set when memory runs out. */
static const char *intern_str(struct ctree_priv *P, const char *s, bool *err)
{
    if (!s)
        return NULL;
    uint32_t e = intern_id(P, s);
    if (e == TRK_HINDEX_NONE) {
        *err = true;
        return NULL;
    }
    return P->strs[e];
}

/* ---- Locations -------------------------------------------------------------------- */

static uint64_t loc_hash(const struct trk_location *l)
{
    uint64_t h = trk_mix64(l->kind + 1 + ((uint64_t)l->python << 32));
    h = trk_hash_add(h, (uint64_t)(uintptr_t)l->function);
    h = trk_hash_add(h, (uint64_t)(uintptr_t)l->file);
    h = trk_hash_add(h, l->line);
    h = trk_hash_add(h, (uint64_t)(uintptr_t)l->module);
    return trk_hash_add(h, l->offset);
}

static bool loc_equal(const struct trk_location *a, const struct trk_location *b)
{
    return a->kind == b->kind && a->python == b->python && a->function == b->function &&
           a->file == b->file && a->line == b->line && a->module == b->module &&
           a->offset == b->offset;
}

/* Index of location key (strings already interned), added when new (then
 * *created is set, when not NULL). */
static uint32_t loc_get(struct trk_ctree *t, const struct trk_location *key, bool *created)
{
    struct ctree_priv *P = t->priv;
    if (trk_hindex_reserve(&P->loc_ix) < 0)
        return TRK_HINDEX_NONE;
    uint64_t h = loc_hash(key);
    size_t pos = SIZE_MAX;
    uint32_t e;
    while ((e = trk_hindex_next(&P->loc_ix, h, &pos)) != TRK_HINDEX_NONE)
        if (loc_equal(&P->keys[e], key))
            return e;
    if (t->nlocs >= TRK_HINDEX_NONE ||
        trk_grow((void **)&t->locs, &P->locs_cap, t->nlocs + 1, sizeof(*t->locs)) < 0 ||
        trk_grow((void **)&P->keys, &P->keys_cap, t->nlocs + 1, sizeof(*P->keys)) < 0)
        return TRK_HINDEX_NONE;
    t->locs[t->nlocs] = *key;
    P->keys[t->nlocs] = *key;
    trk_hindex_put(&P->loc_ix, pos, h, (uint32_t)t->nlocs);
    if (created)
        *created = true;
    return (uint32_t)t->nlocs++;
}

/* A synthetic location (process, thread, other) named label. */
static uint32_t synthetic_loc(struct trk_ctree *t, uint32_t kind, const char *label)
{
    bool err = false;
    struct trk_location key = {.kind = kind, .function = intern_str(t->priv, label, &err)};
    return err ? TRK_HINDEX_NONE : loc_get(t, &key, NULL);
}

static const char *base_of(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path;
}

/* The key a frame is known by: its function, file, line and module (the
 * file and line even without a function: a line table can name them), a
 * frame without a function also by its offset in the module. Under
 * by_function, files and lines are not part of a native frame's key (a
 * function shows the first file seen); under basenames, files and modules compare by
 * basename and show the first paths seen. */
static uint32_t frame_loc_slow(struct trk_ctree *t, const struct trk_frame *f)
{
    struct ctree_priv *P = t->priv;
    bool err = false, base = t->opts.basenames;
    /* A Python frame's line is its location even by function: Python
     * function names repeat across files (<module>, __init__, main), and
     * a Python user reads memory by line (memray does the same). */
    bool file_keyed = !t->opts.by_function || f->python;
    struct trk_location key = {.kind = TRK_LOC_FRAME, .python = f->python ? 1 : 0};
    key.function = intern_str(P, f->function, &err);
    key.module = intern_str(P, base ? base_of(f->module) : f->module, &err);
    if (!f->function)
        key.offset = f->offset;
    if (file_keyed) {
        key.file = intern_str(P, base ? base_of(f->file) : f->file, &err);
        key.line = f->line;
    }
    if (err)
        return TRK_HINDEX_NONE;
    bool created = false;
    uint32_t l = loc_get(t, &key, &created);
    if (l == TRK_HINDEX_NONE || !created)
        return l;
    struct trk_location *shown = &t->locs[l];
    if ((base && file_keyed) || (!file_keyed && f->function))
        shown->file = intern_str(P, f->file, &err);
    if (base)
        shown->module = intern_str(P, f->module, &err);
    return err ? TRK_HINDEX_NONE : l;
}

uint32_t trk_ctree_location(struct trk_ctree *t, const struct trk_frame *f)
{
    return t->priv ? frame_loc_slow(t, f) : TRK_CTREE_NONE;
}

static uint32_t frame_loc(struct trk_ctree *t, const struct trk_frame *f)
{
    struct ctree_priv *P = t->priv;
    if (trk_hindex_reserve(&P->frame_ix) < 0)
        return frame_loc_slow(t, f); /* no cache, still correct */
    uint64_t off = f->function ? 0 : f->offset;
    uint64_t h = trk_mix64((uint64_t)(uintptr_t)f->function);
    h = trk_hash_add(h, (uint64_t)(uintptr_t)f->file);
    h = trk_hash_add(h, (uint64_t)(uintptr_t)f->module);
    h = trk_hash_add(h, f->line);
    h = trk_hash_add(h, off);
    uint32_t py = f->python ? 1 : 0;
    size_t pos = SIZE_MAX;
    uint32_t e;
    while ((e = trk_hindex_next(&P->frame_ix, h, &pos)) != TRK_HINDEX_NONE) {
        const struct frame_key *k = &P->fkeys[e];
        if (k->function == f->function && k->file == f->file && k->module == f->module &&
            k->line == f->line && k->offset == off && k->python == py)
            return k->loc;
    }
    uint32_t loc = frame_loc_slow(t, f);
    if (loc == TRK_HINDEX_NONE || P->nfkeys >= TRK_HINDEX_NONE ||
        trk_grow((void **)&P->fkeys, &P->fkeys_cap, P->nfkeys + 1, sizeof(*P->fkeys)) < 0)
        return loc;
    P->fkeys[P->nfkeys] = (struct frame_key){.function = f->function,
                                             .file = f->file,
                                             .module = f->module,
                                             .offset = off,
                                             .line = f->line,
                                             .python = py,
                                             .loc = loc};
    trk_hindex_put(&P->frame_ix, pos, h, (uint32_t)P->nfkeys);
    P->nfkeys++;
    return loc;
}

/* ---- Nodes ------------------------------------------------------------------------ */

static uint64_t child_hash(uint32_t parent, uint32_t loc)
{
    return trk_mix64((uint64_t)parent << 32 | loc);
}

static uint32_t child_get(struct trk_ctree *t, uint32_t parent, uint32_t loc)
{
    struct ctree_priv *P = t->priv;
    if (trk_hindex_reserve(&P->child_ix) < 0)
        return TRK_HINDEX_NONE;
    uint64_t h = child_hash(parent, loc);
    size_t pos = SIZE_MAX;
    uint32_t e;
    while ((e = trk_hindex_next(&P->child_ix, h, &pos)) != TRK_HINDEX_NONE)
        if (t->nodes[e].parent == parent && t->nodes[e].loc == loc)
            return e;
    if (t->nnodes >= TRK_HINDEX_NONE ||
        trk_grow((void **)&t->nodes, &P->nodes_cap, t->nnodes + 1, sizeof(*t->nodes)) < 0)
        return TRK_HINDEX_NONE;
    uint32_t n = (uint32_t)t->nnodes;
    struct trk_ctree_node *x = &t->nodes[n];
    memset(x, 0, sizeof(*x));
    x->loc = loc;
    x->parent = parent;
    x->next_sibling = t->nodes[parent].first_child;
    t->nodes[parent].first_child = n;
    trk_hindex_put(&P->child_ix, pos, h, n);
    t->nnodes++;
    return n;
}

static int rebuild_children(struct trk_ctree *t)
{
    struct ctree_priv *P = t->priv;
    trk_hindex_clear(&P->child_ix);
    for (uint32_t n = 1; n < t->nnodes; n++) {
        if (trk_hindex_reserve(&P->child_ix) < 0)
            return -1;
        uint64_t h = child_hash(t->nodes[n].parent, t->nodes[n].loc);
        size_t pos = SIZE_MAX;
        while (trk_hindex_next(&P->child_ix, h, &pos) != TRK_HINDEX_NONE)
            ;
        trk_hindex_put(&P->child_ix, pos, h, n);
    }
    P->child_stale = false;
    return 0;
}

/* ---- Public API --------------------------------------------------------------------- */

bool trk_spaces_heap_and_mmap(uint32_t spaces)
{
    return trk_spaces_has(spaces, TRK_SPACE_HEAP) && trk_spaces_has(spaces, TRK_SPACE_MMAP);
}

void trk_site_value(const struct trk_site *site, enum trk_select sel, uint32_t spaces,
                    uint64_t *bytes, uint64_t *count)
{
    if (sel == TRK_SEL_PEAK && site->space <= TRK_SPACE_MMAP && trk_spaces_heap_and_mmap(spaces)) {
        *bytes = site->s.peak_hm_bytes;
        *count = site->s.peak_hm_count;
        return;
    }
    trk_select_value(&site->s, sel, bytes, count);
}

bool trk_profile_leaks_by_class(const struct trk_profile *p)
{
    const struct trk_stats *t = &p->totals;
    return t->leaks_classified && !t->leaks_at_script_end && !t->python;
}

bool trk_site_leak_kinds(const struct trk_profile *p, const struct trk_site *site, unsigned kinds,
                         uint64_t *bytes, uint64_t *count)
{
    if (!kinds || site->space != TRK_SPACE_HEAP || !trk_profile_leaks_by_class(p))
        return false;
    *bytes = *count = 0;
    for (unsigned k = 0; k <= TRK_LEAK_CLASS_MAX; k++) {
        if (!(kinds & (1u << k)))
            continue;
        *bytes += site->s.cls_bytes[k];
        *count += site->s.cls_count[k];
    }
    return true;
}

void trk_select_value(const struct trk_site_stats *s, enum trk_select sel, uint64_t *bytes,
                      uint64_t *count)
{
    switch (sel) {
    case TRK_SEL_PEAK:
        *bytes = s->peak_bytes;
        *count = s->peak_count;
        return;
    case TRK_SEL_LEAKS:
        *bytes = s->leak_bytes;
        *count = s->leak_count;
        return;
    case TRK_SEL_TEMPORARY:
        *bytes = s->temp_bytes;
        *count = s->temp_count;
        return;
    case TRK_SEL_ALLOCATED:
        *bytes = s->alloc_bytes;
        *count = s->alloc_count;
        return;
    case TRK_SEL_FAILED:
        *bytes = s->fail_bytes;
        *count = s->fail_count;
        return;
    }
    *bytes = *count = 0;
}

const char *trk_select_name(enum trk_select sel)
{
    switch (sel) {
    case TRK_SEL_PEAK:
        return "peak";
    case TRK_SEL_LEAKS:
        return "leaks";
    case TRK_SEL_TEMPORARY:
        return "temporary";
    case TRK_SEL_ALLOCATED:
        return "allocated";
    case TRK_SEL_FAILED:
        return "failed";
    }
    return "unknown";
}

int trk_ctree_init(struct trk_ctree *t, const struct trk_ctree_options *o)
{
    memset(t, 0, sizeof(*t));
    if (o)
        t->opts = *o;
    else
        t->opts.thread = -1;
    struct ctree_priv *P = calloc(1, sizeof(*P));
    t->priv = P;
    if (!P || trk_hindex_init(&P->str_ix) < 0 || trk_hindex_init(&P->loc_ix) < 0 ||
        trk_hindex_init(&P->child_ix) < 0 || trk_hindex_init(&P->frame_ix) < 0 ||
        trk_grow((void **)&t->locs, &P->locs_cap, 1, sizeof(*t->locs)) < 0 ||
        trk_grow((void **)&t->nodes, &P->nodes_cap, 1, sizeof(*t->nodes)) < 0) {
        trk_ctree_free(t);
        return -1;
    }
    /* Location 0 belongs to the root; it is not in the location index, so
     * no frame ever maps to it. */
    memset(&t->locs[0], 0, sizeof(t->locs[0]));
    t->nlocs = 1;
    memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
    t->nnodes = 1;
    return 0;
}

/* "thread 123 (name)"; a tid the kernel reused within the capture gets the
 * profile's thread index too, so the two threads stay apart. */
static const char *thread_label(const struct trk_profile *p, uint32_t thread, bool reused,
                                char *buf, size_t len)
{
    if (thread >= p->nthreads) {
        snprintf(buf, len, "thread #%u", thread);
        return buf;
    }
    const struct trk_thread_info *ti = &p->threads[thread];
    int n = snprintf(buf, len, "thread %u", ti->tid);
    if (n > 0 && (size_t)n < len && ti->name && *ti->name)
        n += snprintf(buf + n, len - (size_t)n, " (%s)", ti->name);
    if (n > 0 && (size_t)n < len && reused)
        snprintf(buf + n, len - (size_t)n, " #%u", thread);
    return buf;
}

struct tid_ent {
    uint32_t tid, thread;
};

static int cmp_tid(const void *a, const void *b)
{
    const struct tid_ent *x = a, *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Per thread of p: its node under base, made on first use (TRK_HINDEX_NONE until
 * then), and whether its tid names another thread of p too. */
struct thread_nodes {
    uint32_t *node;
    uint8_t *reused;
};

static int thread_nodes_init(struct thread_nodes *tn, const struct trk_profile *p)
{
    size_t n = p->nthreads;
    tn->node = malloc((n + 1) * sizeof(*tn->node));
    tn->reused = calloc(n + 1, 1);
    struct tid_ent *v = malloc((n + 1) * sizeof(*v));
    if (!tn->node || !tn->reused || !v) {
        free(v);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        tn->node[i] = TRK_HINDEX_NONE;
        v[i] = (struct tid_ent){p->threads[i].tid, (uint32_t)i};
    }
    qsort(v, n, sizeof(*v), cmp_tid);
    for (size_t i = 1; i < n; i++)
        if (v[i].tid == v[i - 1].tid)
            tn->reused[v[i].thread] = tn->reused[v[i - 1].thread] = 1;
    free(v);
    return 0;
}

static void thread_nodes_free(struct thread_nodes *tn)
{
    free(tn->node);
    free(tn->reused);
}

static uint32_t thread_node(struct trk_ctree *t, const struct trk_profile *p,
                            struct thread_nodes *tn, uint32_t base, uint32_t thread)
{
    bool known = thread < p->nthreads;
    if (known && tn->node[thread] != TRK_HINDEX_NONE)
        return tn->node[thread];
    char label[160];
    uint32_t l =
        synthetic_loc(t, TRK_LOC_THREAD,
                      thread_label(p, thread, known && tn->reused[thread], label, sizeof(label)));
    uint32_t n = l == TRK_HINDEX_NONE ? TRK_HINDEX_NONE : child_get(t, base, l);
    if (known)
        tn->node[thread] = n;
    return n;
}

static bool site_selected(const struct trk_ctree *t, const struct trk_site *s)
{
    if (!trk_spaces_has(t->opts.spaces, s->space))
        return false;
    return t->opts.thread < 0 || (uint64_t)t->opts.thread == s->thread;
}

/* by_import: the node of import chain `import` of profile p under base,
 * one "import MODULE" level per open import, outermost first; base itself
 * for allocations outside imports. TRK_HINDEX_NONE when memory ran out. */
static uint32_t import_node(struct trk_ctree *t, const struct trk_profile *p, uint32_t base,
                            uint32_t import)
{
    uint32_t chain[256], n = 0;
    /* Chains are as deep as imports nest; past 256 the outermost are cut
     * (a bound on a corrupt or cyclic table too). */
    for (uint32_t i = import; i && i < p->nimports && n < 256; i = p->imports[i].parent)
        chain[n++] = i;
    uint32_t node = base;
    char label[TRK_PY_STR_MAX + 16];
    while (n-- > 0 && node != TRK_HINDEX_NONE) {
        const char *module = p->imports[chain[n]].module;
        snprintf(label, sizeof(label), "import %s", module ? module : "?");
        uint32_t l = synthetic_loc(t, TRK_LOC_IMPORT, label);
        node = l == TRK_HINDEX_NONE ? TRK_HINDEX_NONE : child_get(t, node, l);
    }
    return node;
}

int trk_ctree_add(struct trk_ctree *t, const struct trk_profile *p, const struct trk_reader *r,
                  struct trk_symbolizer *s, const char *process_label)
{
    return trk_ctree_add_sites(t, p, r, s, process_label, NULL);
}

int trk_ctree_add_sites(struct trk_ctree *t, const struct trk_profile *p,
                        const struct trk_reader *r, struct trk_symbolizer *s,
                        const char *process_label, uint32_t *site_node)
{
    struct ctree_priv *P = t->priv;
    if (!P)
        return -1;
    if (P->child_stale && rebuild_children(t) < 0)
        return -1;
    /* Frame pointers are only meaningful within one symbolizer. */
    trk_hindex_clear(&P->frame_ix);
    P->nfkeys = 0;
    uint32_t base = 0;
    if (process_label) {
        uint32_t l = synthetic_loc(t, TRK_LOC_PROCESS, process_label);
        base = l == TRK_HINDEX_NONE ? TRK_HINDEX_NONE : child_get(t, 0, l);
        if (base == TRK_HINDEX_NONE)
            return -1;
    }
    struct thread_nodes tn = {0};
    if (t->opts.split_threads && thread_nodes_init(&tn, p) < 0) {
        thread_nodes_free(&tn);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; site_node && i < p->nsites; i++)
        site_node[i] = TRK_CTREE_NONE;
    for (size_t i = 0; i < p->nsites && rc == 0; i++) {
        const struct trk_site *site = &p->sites[i];
        if (!site_selected(t, site))
            continue;
        uint64_t bytes, count;
        if (t->opts.select != TRK_SEL_LEAKS ||
            !trk_site_leak_kinds(p, site, t->opts.leak_kinds, &bytes, &count))
            trk_site_value(site, t->opts.select, t->opts.spaces, &bytes, &count);
        if (!bytes && !count)
            continue;
        uint32_t node = base;
        if (t->opts.split_threads)
            node = thread_node(t, p, &tn, base, site->thread);
        if (t->opts.by_import && site->import && node != TRK_HINDEX_NONE)
            node = import_node(t, p, node, site->import);
        const struct trk_frame *fr;
        int n = node == TRK_HINDEX_NONE
                    ? -1
                    : trk_stack_frames(r, s, site->stack, &t->opts.frames, &P->fb, &fr);
        if (n < 0) {
            rc = -1;
            break;
        }
        for (int k = 0; k < n; k++) {
            /* Top-down paths start at the outermost frame. */
            const struct trk_frame *f = t->opts.inverted ? &fr[k] : &fr[n - 1 - k];
            uint32_t l = frame_loc(t, f);
            node = l == TRK_HINDEX_NONE ? TRK_HINDEX_NONE : child_get(t, node, l);
            if (node == TRK_HINDEX_NONE) {
                rc = -1;
                break;
            }
        }
        if (rc == 0) {
            t->nodes[node].self_bytes += bytes;
            t->nodes[node].self_count += count;
            if (site_node)
                site_node[i] = node;
        }
    }
    thread_nodes_free(&tn);
    return rc;
}

struct sort_ent {
    uint64_t bytes, count;
    uint32_t node;
};

static int cmp_ent(const void *a, const void *b)
{
    const struct sort_ent *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Orders every child list by total, largest first (ties: more allocations,
 * then creation order, so output is deterministic). */
static void sort_children(struct trk_ctree *t)
{
    struct sort_ent *v = NULL;
    size_t cap = 0;
    for (uint32_t n = 0; n < t->nnodes; n++) {
        size_t k = 0;
        for (uint32_t c = t->nodes[n].first_child; c; c = t->nodes[c].next_sibling) {
            if (trk_grow((void **)&v, &cap, k + 1, sizeof(*v)) < 0) {
                free(v);
                return; /* unsorted but intact */
            }
            v[k++] = (struct sort_ent){t->nodes[c].total_bytes, t->nodes[c].total_count, c};
        }
        if (k < 2)
            continue;
        qsort(v, k, sizeof(*v), cmp_ent);
        t->nodes[n].first_child = v[0].node;
        for (size_t i = 0; i < k; i++)
            t->nodes[v[i].node].next_sibling = i + 1 < k ? v[i + 1].node : 0;
    }
    free(v);
}

void trk_ctree_finish(struct trk_ctree *t)
{
    if (!t->nnodes)
        return;
    for (size_t n = 0; n < t->nnodes; n++) {
        t->nodes[n].total_bytes = t->nodes[n].self_bytes;
        t->nodes[n].total_count = t->nodes[n].self_count;
    }
    /* Children come after their parent: one backward sweep sums subtrees. */
    for (size_t n = t->nnodes; n-- > 1;) {
        struct trk_ctree_node *x = &t->nodes[n], *up = &t->nodes[x->parent];
        up->total_bytes += x->total_bytes;
        up->total_count += x->total_count;
    }
    sort_children(t);
}

/* ---- Pruning ----------------------------------------------------------------------- */

/* Links node c into parent's child list, keeping it ordered by total. */
static void link_sorted(struct trk_ctree *t, uint32_t parent, uint32_t c)
{
    uint32_t *at = &t->nodes[parent].first_child;
    struct sort_ent me = {t->nodes[c].total_bytes, t->nodes[c].total_count, c};
    while (*at) {
        struct sort_ent x = {t->nodes[*at].total_bytes, t->nodes[*at].total_count, *at};
        if (cmp_ent(&me, &x) < 0)
            break;
        at = &t->nodes[*at].next_sibling;
    }
    t->nodes[c].next_sibling = *at;
    *at = c;
}

/* Merges the small children of node n into one new OTHER child, marking
 * them removed. Returns -1 when memory ran out (n is left as it was). */
static int merge_small(struct trk_ctree *t, uint32_t n, double limit, uint32_t other_loc,
                       uint8_t *removed)
{
    uint64_t bytes = 0, count = 0;
    size_t small = 0;
    for (uint32_t c = t->nodes[n].first_child; c; c = t->nodes[c].next_sibling) {
        if ((double)t->nodes[c].total_bytes < limit) {
            bytes += t->nodes[c].total_bytes;
            count += t->nodes[c].total_count;
            small++;
        }
    }
    if (!small)
        return 0;
    struct ctree_priv *P = t->priv;
    if (t->nnodes >= TRK_HINDEX_NONE ||
        trk_grow((void **)&t->nodes, &P->nodes_cap, t->nnodes + 1, sizeof(*t->nodes)) < 0)
        return -1;
    uint32_t *at = &t->nodes[n].first_child;
    while (*at) {
        uint32_t c = *at;
        if ((double)t->nodes[c].total_bytes < limit) {
            removed[c] = 1;
            *at = t->nodes[c].next_sibling;
        } else {
            at = &t->nodes[c].next_sibling;
        }
    }
    uint32_t o = (uint32_t)t->nnodes++;
    t->nodes[o] = (struct trk_ctree_node){.loc = other_loc,
                                          .parent = n,
                                          .self_bytes = bytes,
                                          .self_count = count,
                                          .total_bytes = bytes,
                                          .total_count = count};
    link_sorted(t, n, o);
    return 0;
}

size_t trk_ctree_prune(struct trk_ctree *t, double min_fraction)
{
    if (!t->priv || t->nnodes < 2 || !(min_fraction > 0) || t->nodes[0].total_bytes == 0)
        return 0;
    double limit = min_fraction * (double)t->nodes[0].total_bytes;
    uint32_t other = synthetic_loc(t, TRK_LOC_OTHER, NULL);
    size_t orig = t->nnodes;
    /* Room for one OTHER node per original node, at most. */
    uint8_t *removed = calloc(2 * orig, 1);
    uint32_t *renum = malloc(2 * orig * sizeof(*renum));
    if (other == TRK_HINDEX_NONE || !removed || !renum) {
        free(removed);
        free(renum);
        return 0;
    }
    /* Parents precede children, so a node's fate is known before its own
     * children are looked at; OTHER nodes (appended) have no children. */
    for (uint32_t n = 0; n < orig; n++) {
        if (n && removed[t->nodes[n].parent])
            removed[n] = 1;
        if (!removed[n] && merge_small(t, n, limit, other, removed) < 0)
            break;
    }
    /* Compact: order is kept, so children still follow their parents. */
    uint32_t k = 0;
    for (uint32_t n = 0; n < t->nnodes; n++)
        renum[n] = removed[n] ? 0 : k++;
    size_t gone = t->nnodes - k;
    for (uint32_t n = 0; n < t->nnodes; n++) {
        if (removed[n])
            continue;
        struct trk_ctree_node x = t->nodes[n];
        x.parent = renum[x.parent];
        x.first_child = x.first_child ? renum[x.first_child] : 0;
        x.next_sibling = x.next_sibling ? renum[x.next_sibling] : 0;
        t->nodes[renum[n]] = x;
    }
    t->nnodes = k;
    ((struct ctree_priv *)t->priv)->child_stale = true;
    free(removed);
    free(renum);
    return gone;
}

void trk_ctree_free(struct trk_ctree *t)
{
    struct ctree_priv *P = t->priv;
    if (P) {
        while (P->pool) {
            struct pool_block *b = P->pool;
            P->pool = b->next;
            free(b);
        }
        free(P->strs);
        free(P->keys);
        free(P->fkeys);
        trk_hindex_free(&P->str_ix);
        trk_hindex_free(&P->loc_ix);
        trk_hindex_free(&P->child_ix);
        trk_hindex_free(&P->frame_ix);
        trk_frame_buf_free(&P->fb);
        free(P);
    }
    free(t->locs);
    free(t->nodes);
    memset(t, 0, sizeof(*t));
}

const char *trk_location_name(const struct trk_location *l, char *buf, size_t len)
{
    switch (l->kind) {
    case TRK_LOC_OTHER:
        return "[other]";
    case TRK_LOC_PROCESS:
        return l->function ? l->function : "[process]";
    case TRK_LOC_THREAD:
        return l->function ? l->function : "[thread]";
    case TRK_LOC_IMPORT:
        return l->function ? l->function : "[import]";
    default:
        break;
    }
    if (l->function)
        return l->function;
    if (!len)
        return "";
    const char *m = l->module && *l->module ? l->module : NULL;
    const char *base = m ? strrchr(m, '/') : NULL;
    base = base ? base + 1 : m;
    if (base)
        snprintf(buf, len, "%s+0x%llx", base, (unsigned long long)l->offset);
    else
        snprintf(buf, len, "0x%llx", (unsigned long long)l->offset);
    return buf;
}

uint32_t trk_ctree_string_id(struct trk_ctree *t, const char *s)
{
    return t->priv && s ? intern_id(t->priv, s) : TRK_CTREE_NONE;
}

const char *trk_ctree_string(const struct trk_ctree *t, uint32_t id)
{
    const struct ctree_priv *P = t->priv;
    return P && id < P->nstrs ? P->strs[id] : NULL;
}

size_t trk_ctree_nstrings(const struct trk_ctree *t)
{
    const struct ctree_priv *P = t->priv;
    return P ? P->nstrs : 0;
}

const char *trk_frame_name(const struct trk_frame *f, char *buf, size_t len)
{
    struct trk_location l = {.function = f->function,
                             .file = f->file,
                             .line = f->line,
                             .module = f->module,
                             .offset = f->offset,
                             .kind = TRK_LOC_FRAME};
    return trk_location_name(&l, buf, len);
}
