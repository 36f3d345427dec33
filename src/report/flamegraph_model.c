/* SPDX-License-Identifier: MIT
 *
 * flamegraph_model.c - builds the model of flamegraph_model.h: strings and
 * locations interned by content, the call tree built from the profile's
 * sites (remembering each site's node, which the page needs to re-sum nodes
 * per thread and per time range and which a plain call tree does not keep),
 * colour families, thread numbering, --by-import's synthetic import frames,
 * pruning into "other" nodes and the per-node sums. Must not: write JSON or print (flamegraph.c
 * writes), or read events.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/flamegraph_model.h"

#define NONE TRK_FG_NONE

/* ---- Small tools ----------------------------------------------------------- */

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*v, n * elem);
    if (!p)
        return -1;
    *v = p;
    *cap = n;
    return 0;
}

static inline uint64_t mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    return k ^ (k >> 33);
}

static inline uint64_t hadd(uint64_t h, uint64_t v)
{
    return mix64(h ^ (v + UINT64_C(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2)));
}

static int keytab_rehash(struct trk_fg_keytab *t, size_t nslots)
{
    uint32_t *s = calloc(nslots, sizeof(*s));
    if (!s)
        return -1;
    free(t->slots);
    t->slots = s;
    t->mask = nslots - 1;
    for (size_t i = 0; i < t->n; i++) {
        const uint32_t *k = t->keys[i];
        size_t h = (size_t)hadd(hadd(hadd(mix64(k[0]), k[1]), k[2]), k[3]) & t->mask;
        while (t->slots[h])
            h = (h + 1) & t->mask;
        t->slots[h] = (uint32_t)i + 1;
    }
    return 0;
}

/* Entry of key, added when absent (*added set); NONE when out of memory. */
static uint32_t keytab_get(struct trk_fg_keytab *t, uint32_t a, uint32_t b, uint32_t c, uint32_t d,
                           bool *added)
{
    if ((t->n + 1) * 2 > t->mask + 1 && keytab_rehash(t, t->mask ? (t->mask + 1) * 2 : 256) < 0)
        return NONE;
    size_t h = (size_t)hadd(hadd(hadd(mix64(a), b), c), d) & t->mask;
    for (; t->slots[h]; h = (h + 1) & t->mask) {
        const uint32_t *k = t->keys[t->slots[h] - 1];
        if (k[0] == a && k[1] == b && k[2] == c && k[3] == d)
            return t->slots[h] - 1;
    }
    if (t->n >= NONE - 1 || grow((void **)&t->keys, &t->cap, t->n + 1, sizeof(*t->keys)) < 0)
        return NONE;
    memcpy(t->keys[t->n], (uint32_t[4]){a, b, c, d}, sizeof(t->keys[0]));
    t->slots[h] = (uint32_t)t->n + 1;
    *added = true;
    return (uint32_t)t->n++;
}

static void keytab_free(struct trk_fg_keytab *t)
{
    free(t->keys);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static int agg_add(struct trk_fg_agg *g, const uint32_t key[4], uint64_t bytes, uint64_t count)
{
    bool added = false;
    uint32_t e = keytab_get(&g->k, key[0], key[1], key[2], key[3], &added);
    if (e == NONE)
        return -1;
    if (added) {
        size_t c1 = g->cap;
        if (grow((void **)&g->bytes, &c1, e + 1, sizeof(*g->bytes)) < 0 ||
            grow((void **)&g->count, &g->cap, e + 1, sizeof(*g->count)) < 0)
            return -1;
        g->bytes[e] = g->count[e] = 0;
    }
    g->bytes[e] += bytes;
    g->count[e] += count;
    return 0;
}

void trk_fg_agg_free(struct trk_fg_agg *g)
{
    keytab_free(&g->k);
    free(g->bytes);
    free(g->count);
    memset(g, 0, sizeof(*g));
}

/* ---- Strings, locations and the tree -------------------------------------- */

static uint32_t str_id(struct trk_fg_model *m, const char *s)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (const char *p = s; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3u;
    h = mix64(h);
    bool added = false;
    /* Collisions are told apart by content through the extra key word. */
    for (uint32_t salt = 0;; salt++) {
        uint32_t e = keytab_get(&m->str_ix, (uint32_t)h, (uint32_t)(h >> 32), salt, 0, &added);
        if (e == NONE)
            return NONE;
        if (added) {
            char *copy = strdup(s);
            if (!copy || grow((void **)&m->strs, &m->strs_cap, e + 1, sizeof(*m->strs)) < 0) {
                free(copy);
                return NONE;
            }
            m->strs[e] = copy;
            m->nstrs = e + 1;
            return e;
        }
        if (strcmp(m->strs[e], s) == 0)
            return e;
    }
}

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p ? p : "";
}

/* The colour family of a frame, from its module (and, for the
 * interpreter, its function). */
static enum trk_fg_kind classify(const struct trk_frame *f, const char *exe)
{
    static const char *const gpu[] = {"libcuda",     "libcudart", "libnvidia",  "libcublas",
                                      "libcudnn",    "libnccl",   "libcufft",   "libcurand",
                                      "libcusparse", "libamdhip", "libhip",     "librocm",
                                      "libhsa",      "libze_",    "libOpenCL",  "libtorch_cuda",
                                      "libc10_cuda", "librccl",   "librocblas", "libmiopen"};
    static const char *const runtime[] = {
        "libc.so",       "libc-",       "libm.so",     "libpthread",  "ld-linux",
        "ld64.so",       "libstdc++",   "libgcc_s",    "libdl.so",    "librt.so",
        "libtracker.so", "libjemalloc", "libtcmalloc", "libmimalloc", "libc++",
        "libunwind",     "libresolv",   "libnss_",     "linux-vdso",  "[vdso]"};
    const char *fn = f->function ? f->function : "";
    if (f->python)
        return TRK_FG_PYCODE;
    if (!f->module)
        return has_prefix(fn, "_Py") || has_prefix(fn, "Py") ? TRK_FG_PYTHON : TRK_FG_UNKNOWN;
    const char *b = base_name(f->module);
    if (has_prefix(b, "libpython") || has_prefix(b, "python") || has_prefix(fn, "_Py") ||
        has_prefix(fn, "Py"))
        return TRK_FG_PYTHON;
    for (size_t i = 0; i < sizeof(gpu) / sizeof(gpu[0]); i++)
        if (has_prefix(b, gpu[i]))
            return TRK_FG_GPU;
    for (size_t i = 0; i < sizeof(runtime) / sizeof(runtime[0]); i++)
        if (has_prefix(b, runtime[i]))
            return TRK_FG_RUNTIME;
    if (strcmp(f->module, exe) == 0 || strcmp(b, base_name(exe)) == 0)
        return TRK_FG_APP;
    return TRK_FG_LIB;
}

/* The location of a frame: function (or module+offset), file, line, module
 * and kind. NONE when memory ran out. */
static uint32_t loc_of(struct trk_fg_model *m, const struct trk_frame *f, const char *exe)
{
    char name[64];
    const char *fn = f->function;
    if (!fn) {
        if (f->module)
            snprintf(name, sizeof(name), "%.40s+0x%" PRIx64, base_name(f->module), f->offset);
        else
            snprintf(name, sizeof(name), "0x%" PRIx64, f->ip);
        fn = name;
    }
    uint32_t a = str_id(m, fn), b = f->file ? str_id(m, f->file) : NONE - 1;
    uint32_t d = f->module ? str_id(m, f->module) : NONE - 1;
    if (a == NONE || b == NONE || d == NONE)
        return NONE;
    bool added = false;
    uint32_t l = keytab_get(&m->loc_ix, a, b, f->line, d, &added);
    if (l != NONE && added) {
        if (grow((void **)&m->loc_kind, &m->kind_cap, l + 1, 1) < 0)
            return NONE;
        m->loc_kind[l] = (uint8_t)classify(f, exe);
    }
    return l;
}

/* A synthetic location (a process root, "other"). */
static uint32_t synthetic_loc(struct trk_fg_model *m, const char *label, enum trk_fg_kind kind)
{
    uint32_t a = str_id(m, label);
    bool added = false;
    uint32_t l = a == NONE ? NONE : keytab_get(&m->loc_ix, a, NONE - 1, kind, NONE - 1, &added);
    if (l != NONE && added) {
        if (grow((void **)&m->loc_kind, &m->kind_cap, l + 1, 1) < 0)
            return NONE;
        m->loc_kind[l] = (uint8_t)kind;
    }
    return l;
}

static uint32_t child_of(struct trk_fg_model *m, uint32_t parent, uint32_t loc)
{
    bool added = false;
    uint32_t n = keytab_get(&m->node_ix, parent, loc, 0, 0, &added);
    if (n != NONE && added) {
        size_t c1 = m->val_cap;
        if (grow((void **)&m->val_bytes, &c1, n + 1, sizeof(uint64_t)) < 0 ||
            grow((void **)&m->val_count, &m->val_cap, n + 1, sizeof(uint64_t)) < 0)
            return NONE;
        m->val_bytes[n] = m->val_count[n] = 0;
    }
    return n;
}

/* Whether a site is drawn, and the value that sizes it for pruning. */
static bool site_value(const struct trk_site *site, const struct trk_report_opts *o,
                       const struct trk_flamegraph_opts *fo, uint64_t *bytes, uint64_t *count)
{
    if (fo->temporal) {
        *bytes = site->s.alloc_bytes;
        *count = site->s.alloc_count;
        return site->space == TRK_SPACE_HEAP && *count;
    }
    trk_select_value(&site->s, fo->select, bytes, count);
    bool space = trk_spaces_has(trk_report_spaces(o), site->space);
    return space && (*bytes || *count);
}

/* --by-import: the node of import chain `import` of profile p under base,
 * one synthetic "import MODULE" frame per open import, outermost first;
 * base itself for allocations outside imports. NONE when memory ran out. */
static uint32_t import_node(struct trk_fg_model *m, const struct trk_profile *p, uint32_t base,
                            uint32_t import)
{
    uint32_t chain[256], n = 0;
    /* Chains are as deep as imports nest; past 256 the outermost are cut
     * (a bound on a corrupt or cyclic table too). */
    for (uint32_t i = import; i && i < p->nimports && n < 256; i = p->imports[i].parent)
        chain[n++] = i;
    uint32_t node = base;
    char label[TRK_PY_STR_MAX + 16];
    while (n-- > 0 && node != NONE) {
        const char *module = p->imports[chain[n]].module;
        snprintf(label, sizeof(label), "import %s", module ? module : "?");
        uint32_t l = synthetic_loc(m, label, TRK_FG_IMPORT);
        node = l == NONE ? NONE : child_of(m, node, l);
    }
    return node;
}

/* Adds the sites of capture ci under the root (or its process node). */
static int add_capture(struct trk_fg_model *m, const struct trk_report_set *s, size_t ci,
                       const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo)
{
    const struct trk_report_capture *c = &s->v[ci];
    const struct trk_profile *p = &c->prof;
    const char *exe = trk_reader_info(c->r)->exe;
    struct trk_frames_options fro = trk_report_frames(o);
    struct trk_frame_buf fb = {0};
    struct trk_fg_keytab by_stack = {0}; /* (stack, import) -> node: threads share stacks */
    uint32_t *stack_node = NULL;
    size_t sn_cap = 0;
    int rc = -1;
    m->site_node[ci] = malloc((p->nsites ? p->nsites : 1) * sizeof(uint32_t));
    if (!m->site_node[ci])
        return -1;
    uint32_t base = 0;
    if (s->n > 1) {
        uint32_t l = synthetic_loc(m, c->label, TRK_FG_PROCESS);
        if (l == NONE || (base = child_of(m, 0, l)) == NONE)
            return -1;
    }
    for (size_t i = 0; i < p->nsites; i++) {
        const struct trk_site *site = &p->sites[i];
        uint64_t bytes, count;
        m->site_node[ci][i] = NONE;
        if (!site_value(site, o, fo, &bytes, &count))
            continue;
        bool added = false;
        uint32_t import = fo->by_import ? site->import : 0;
        uint32_t e = keytab_get(&by_stack, site->stack, import, 0, 0, &added);
        if (e == NONE || grow((void **)&stack_node, &sn_cap, e + 1, sizeof(*stack_node)) < 0)
            goto out;
        if (added) {
            const struct trk_frame *fr;
            int n = trk_stack_frames(c->r, c->sym, site->stack, &fro, &fb, &fr);
            if (n < 0)
                goto out;
            uint32_t node = import ? import_node(m, p, base, import) : base;
            for (int k = 0; k < n && node != NONE; k++) {
                const struct trk_frame *f = fo->inverted ? &fr[k] : &fr[n - 1 - k];
                uint32_t l = loc_of(m, f, exe);
                node = l == NONE ? NONE : child_of(m, node, l);
            }
            if (node == NONE)
                goto out;
            stack_node[e] = node;
        }
        uint32_t node = stack_node[e];
        m->site_node[ci][i] = node;
        m->val_bytes[node] += bytes;
        m->val_count[node] += count;
    }
    rc = 0;
out:
    trk_frame_buf_free(&fb);
    keytab_free(&by_stack);
    free(stack_node);
    return rc;
}

/* Totals: children come after their parent, so one backward sweep. */
static void sum_tree(struct trk_fg_model *m)
{
    for (size_t n = m->node_ix.n; n-- > 1;) {
        uint32_t up = m->node_ix.keys[n][0];
        m->val_bytes[up] += m->val_bytes[n];
        m->val_count[up] += m->val_count[n];
    }
}

int trk_fg_model_build(struct trk_fg_model *m, const struct trk_report_set *s,
                       const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo)
{
    memset(m, 0, sizeof(*m));
    m->site_node = calloc(s->n ? s->n : 1, sizeof(*m->site_node));
    if (!m->site_node)
        return -1;
    m->ncaps = s->n;
    /* Node 0, the root, keyed apart from every real (parent, location). */
    if (child_of(m, NONE, NONE) != 0)
        return -1;
    for (size_t i = 0; i < s->n; i++)
        if (add_capture(m, s, i, o, fo) < 0)
            return -1;
    sum_tree(m);
    m->other_loc = synthetic_loc(m, "[other]", TRK_FG_OTHER);
    return m->other_loc == NONE ? -1 : 0;
}

void trk_fg_model_free(struct trk_fg_model *m)
{
    for (size_t i = 0; m->site_node && i < m->ncaps; i++)
        free(m->site_node[i]);
    free(m->site_node);
    for (size_t i = 0; i < m->nstrs; i++)
        free(m->strs[i]);
    free(m->strs);
    keytab_free(&m->str_ix);
    keytab_free(&m->loc_ix);
    keytab_free(&m->node_ix);
    free(m->loc_kind);
    free(m->val_bytes);
    free(m->val_count);
    free(m->thread_base);
    free(m->thread_out);
    free(m->shown);
    memset(m, 0, sizeof(*m));
}

/* ---- Threads ------------------------------------------------------------------ */

struct gthread {
    uint32_t capture, index;
    uint64_t bytes, count;
};

static int by_bytes_desc(const void *a, const void *b)
{
    const struct gthread *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->capture != y->capture ? (x->capture < y->capture ? -1 : 1)
                                    : (x->index < y->index ? -1 : x->index > y->index);
}

int trk_fg_threads(struct trk_fg_model *m, const struct trk_report_set *s,
                   const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo)
{
    m->thread_base = calloc(s->n + 1, sizeof(*m->thread_base));
    if (!m->thread_base)
        return -1;
    for (size_t i = 0; i < s->n; i++)
        m->thread_base[i + 1] = m->thread_base[i] + s->v[i].prof.nthreads;
    size_t n = m->thread_base[s->n];
    struct gthread *g = calloc(n + 1, sizeof(*g));
    m->thread_out = calloc(n + 1, sizeof(*m->thread_out));
    m->shown = calloc(n + 1, sizeof(*m->shown));
    if (!g || !m->thread_out || !m->shown) {
        free(g);
        return -1;
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct trk_profile *p = &s->v[i].prof;
        for (size_t t = 0; t < p->nthreads; t++)
            g[m->thread_base[i] + t] = (struct gthread){(uint32_t)i, (uint32_t)t, 0, 0};
        for (size_t k = 0; k < p->nsites; k++) {
            uint64_t b, c;
            if (p->sites[k].thread < p->nthreads && site_value(&p->sites[k], o, fo, &b, &c)) {
                g[m->thread_base[i] + p->sites[k].thread].bytes += b;
                g[m->thread_base[i] + p->sites[k].thread].count += c;
            }
        }
    }
    /* Threads with nothing in the selection (the tracker's own, say) are
     * left out of the list: they would only ever show an empty graph. */
    qsort(g, n, sizeof(*g), by_bytes_desc);
    size_t active = 0;
    while (active < n && (g[active].bytes || g[active].count))
        active++;
    m->nshown = active > TRK_FG_MAX_THREADS ? TRK_FG_MAX_THREADS : active;
    m->nothers = active - m->nshown;
    for (size_t k = 0; k < n; k++) {
        m->thread_out[m->thread_base[g[k].capture] + g[k].index] =
            (uint32_t)(k < m->nshown ? k : m->nshown);
        if (k < m->nshown)
            m->shown[k] = (struct trk_fg_thread){g[k].capture, g[k].index};
    }
    free(g);
    return 0;
}

/* The page's thread number of a site's thread (0 without --threads). */
static uint32_t thread_of(const struct trk_fg_model *m, const struct trk_profile *p, size_t ci,
                          uint32_t thread, const struct trk_flamegraph_opts *fo)
{
    if (!fo->threads || thread >= p->nthreads)
        return 0;
    return m->thread_out[m->thread_base[ci] + thread];
}

/* ---- Pruning --------------------------------------------------------------- */

int trk_fg_prune(struct trk_fg_model *m, double fraction, struct trk_fg_pruned *pr)
{
    size_t n = m->node_ix.n;
    uint32_t *other = malloc(n * sizeof(*other));
    trk_fg_pruned_free(pr);
    pr->rep = malloc(n * sizeof(*pr->rep));
    /* At most one "other" node per node: the page has fewer than 2n. */
    pr->parent = malloc(2 * n * sizeof(*pr->parent));
    pr->loc = malloc(2 * n * sizeof(*pr->loc));
    pr->merged = calloc(2 * n, sizeof(*pr->merged));
    if (!other || !pr->rep || !pr->parent || !pr->loc || !pr->merged) {
        free(other);
        return -1;
    }
    const uint64_t *val = m->val_bytes[0] ? m->val_bytes : m->val_count;
    double limit = fraction * (double)val[0];
    pr->rep[0] = 0;
    pr->parent[0] = pr->loc[0] = 0;
    pr->n = 1;
    other[0] = NONE;
    uint8_t *kept = calloc(n, 1);
    if (!kept) {
        free(other);
        return -1;
    }
    kept[0] = 1;
    for (size_t i = 1; i < n; i++) {
        uint32_t up = m->node_ix.keys[i][0];
        other[i] = NONE;
        if (kept[up] && (double)val[i] >= limit && val[i]) {
            kept[i] = 1;
            pr->rep[i] = (uint32_t)pr->n;
            pr->parent[pr->n] = pr->rep[up];
            pr->loc[pr->n++] = m->node_ix.keys[i][1];
        } else if (kept[up]) {
            if (other[up] == NONE) {
                other[up] = (uint32_t)pr->n;
                pr->parent[pr->n] = pr->rep[up];
                pr->loc[pr->n++] = m->other_loc;
            }
            pr->rep[i] = other[up];
            pr->merged[other[up]]++;
            pr->merged_frames++;
        } else {
            pr->rep[i] = pr->rep[up];
            pr->merged[pr->rep[up]]++;
            pr->merged_frames++;
        }
    }
    free(kept);
    free(other);
    return 0;
}

void trk_fg_pruned_free(struct trk_fg_pruned *pr)
{
    free(pr->rep);
    free(pr->parent);
    free(pr->loc);
    free(pr->merged);
    memset(pr, 0, sizeof(*pr));
}

/* Self values of the page's nodes, per thread with --threads. */
int trk_fg_self_rows(const struct trk_fg_model *m, const struct trk_report_set *s,
                     const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo,
                     const struct trk_fg_pruned *pr, struct trk_fg_agg *g)
{
    trk_fg_agg_free(g);
    for (size_t ci = 0; ci < s->n; ci++) {
        const struct trk_profile *p = &s->v[ci].prof;
        for (size_t i = 0; i < p->nsites; i++) {
            uint32_t node = m->site_node[ci][i];
            uint64_t b, c;
            if (node == NONE || !site_value(&p->sites[i], o, fo, &b, &c))
                continue;
            uint32_t th = thread_of(m, p, ci, p->sites[i].thread, fo);
            if (agg_add(g, (uint32_t[4]){pr->rep[node], th, 0, 0}, b, c) < 0)
                return -1;
        }
    }
    return 0;
}

/* Temporal rows of the first capture on the page's nodes; buckets halve
 * until they fit MAX_TEMPORAL_ROWS (or max_rows, when smaller). */
int trk_fg_temporal_rows(const struct trk_fg_model *m, const struct trk_report_set *s,
                         const struct trk_flamegraph_opts *fo, const struct trk_fg_pruned *pr,
                         struct trk_temporal *t, size_t max_rows, struct trk_fg_agg *g)
{
    const struct trk_profile *p = &s->v[0].prof;
    for (;;) {
        trk_fg_agg_free(g);
        for (size_t i = 0; i < t->nrows; i++) {
            const struct trk_temporal_row *r = &t->rows[i];
            uint32_t node = r->site < p->nsites ? m->site_node[0][r->site] : NONE;
            if (node == NONE)
                continue;
            uint32_t th = thread_of(m, p, 0, p->sites[r->site].thread, fo);
            if (agg_add(g, (uint32_t[4]){pr->rep[node], th, r->from, r->to}, r->bytes, r->count) <
                0)
                return -1;
        }
        if (g->k.n <= max_rows || t->nbuckets <= 1)
            return 0;
        if (trk_temporal_coarsen(t) < 0)
            return -1;
    }
}
