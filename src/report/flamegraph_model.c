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

#include "common/grow.h"
#include "common/hash.h"
#include "report/flamegraph_model.h"

#define NONE TRK_FG_NONE

/* ---- Small tools ----------------------------------------------------------- */

static uint64_t key_hash(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    return trk_hash_add(trk_hash_add(trk_hash_add(trk_mix64(a), b), c), d);
}

/* Entry of key, added when absent (*added set); NONE when out of memory. */
static uint32_t keytab_get(struct trk_fg_keytab *t, uint32_t a, uint32_t b, uint32_t c, uint32_t d,
                           bool *added)
{
    if (trk_hindex_reserve(&t->ix) < 0)
        return NONE;
    uint64_t h = key_hash(a, b, c, d);
    size_t pos = SIZE_MAX;
    uint32_t e;
    while ((e = trk_hindex_next(&t->ix, h, &pos)) != TRK_HINDEX_NONE) {
        const uint32_t *k = t->keys[e];
        if (k[0] == a && k[1] == b && k[2] == c && k[3] == d)
            return e;
    }
    if (t->n >= NONE - 1 || trk_grow((void **)&t->keys, &t->cap, t->n + 1, sizeof(*t->keys)) < 0)
        return NONE;
    memcpy(t->keys[t->n], (uint32_t[4]){a, b, c, d}, sizeof(t->keys[0]));
    trk_hindex_put(&t->ix, pos, h, (uint32_t)t->n);
    *added = true;
    return (uint32_t)t->n++;
}

static void keytab_free(struct trk_fg_keytab *t)
{
    free(t->keys);
    trk_hindex_free(&t->ix);
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
        if (trk_grow((void **)&g->bytes, &c1, e + 1, sizeof(*g->bytes)) < 0 ||
            trk_grow((void **)&g->count, &g->cap, e + 1, sizeof(*g->count)) < 0)
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

/* The id of string s among the tree's strings. NONE when memory ran out. */
static uint32_t str_id(struct trk_fg_model *m, const char *s)
{
    return trk_ctree_string_id(&m->tree, s);
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
static enum trk_fg_kind classify(const struct trk_location *f, const char *exe)
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

/* Appends the page's key of a location: function (or module+offset), file,
 * line, module, and its kind. Returns -1 when memory ran out. */
static int add_loc_key(struct trk_fg_model *m, const struct trk_location *l, const char *exe)
{
    if (trk_grow((void **)&m->loc_key, &m->locs_cap, m->nlocs + 1, sizeof(*m->loc_key)) < 0)
        return -1;
    size_t c = m->nlocs;
    if (trk_grow((void **)&m->loc_kind, &c, m->nlocs + 1, 1) < 0)
        return -1;
    uint32_t *k = m->loc_key[m->nlocs];
    if (l->kind != TRK_LOC_FRAME) {
        /* Synthetic: a process root, an import, "other". */
        enum trk_fg_kind kind = l->kind == TRK_LOC_PROCESS  ? TRK_FG_PROCESS
                                : l->kind == TRK_LOC_IMPORT ? TRK_FG_IMPORT
                                                            : TRK_FG_OTHER;
        k[0] = str_id(m, l->function ? l->function : "[other]");
        k[1] = k[3] = NONE - 1;
        k[2] = kind;
        m->loc_kind[m->nlocs++] = (uint8_t)kind;
        return k[0] == NONE ? -1 : 0;
    }
    char name[64];
    const char *fn = l->function;
    if (!fn) {
        /* Frames without a module have their address as offset. */
        if (l->module)
            snprintf(name, sizeof(name), "%.40s+0x%" PRIx64, base_name(l->module), l->offset);
        else
            snprintf(name, sizeof(name), "0x%" PRIx64, l->offset);
        fn = name;
    }
    k[0] = str_id(m, fn);
    k[1] = l->file ? str_id(m, l->file) : NONE - 1;
    k[2] = l->line;
    k[3] = l->module ? str_id(m, l->module) : NONE - 1;
    m->loc_kind[m->nlocs++] = (uint8_t)classify(l, exe);
    return k[0] == NONE || k[1] == NONE || k[3] == NONE ? -1 : 0;
}

/* Whether a site is drawn, and the value that sizes it for pruning. */
static bool site_value(const struct trk_profile *p, const struct trk_site *site,
                       const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo,
                       uint64_t *bytes, uint64_t *count)
{
    if (fo->temporal) {
        *bytes = site->s.alloc_bytes;
        *count = site->s.alloc_count;
        return site->space == TRK_SPACE_HEAP && *count;
    }
    if (fo->select != TRK_SEL_LEAKS || !trk_site_leak_kinds(p, site, fo->leak_kinds, bytes, count))
        trk_site_value(site, fo->select, trk_report_spaces(o), bytes, count);
    bool space = trk_spaces_has(trk_report_spaces(o), site->space);
    return space && (*bytes || *count);
}

/* Adds the sites of capture ci under the root (or its process node), and
 * the page's keys of the locations it brought. */
static int add_capture(struct trk_fg_model *m, const struct trk_report_set *s, size_t ci)
{
    const struct trk_report_capture *c = &s->v[ci];
    const struct trk_profile *p = &c->prof;
    m->site_node[ci] = malloc((p->nsites ? p->nsites : 1) * sizeof(uint32_t));
    if (!m->site_node[ci] || trk_ctree_add_sites(&m->tree, p, c->r, c->sym,
                                                 s->n > 1 ? c->label : NULL, m->site_node[ci]) < 0)
        return -1;
    /* Location 0 is the root's: it gets a key too, so keys index alike. */
    const char *exe = trk_reader_info(c->r)->exe;
    while (m->nlocs < m->tree.nlocs)
        if (add_loc_key(m, &m->tree.locs[m->nlocs], exe) < 0)
            return -1;
    return 0;
}

int trk_fg_model_build(struct trk_fg_model *m, const struct trk_report_set *s,
                       const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo)
{
    memset(m, 0, sizeof(*m));
    /* Line-level, as drawn; --temporal sizes the tree by every heap
     * allocation (the page re-sums it per time range). */
    struct trk_ctree_options to = {.select = fo->temporal ? TRK_SEL_ALLOCATED : fo->select,
                                   .spaces = fo->temporal ? 0 : trk_report_spaces(o),
                                   .inverted = fo->inverted,
                                   .thread = -1,
                                   .by_import = fo->by_import,
                                   .frames = trk_report_frames(o),
                                   .leak_kinds = fo->leak_kinds};
    if (trk_ctree_init(&m->tree, &to) < 0)
        return -1;
    m->site_node = calloc(s->n ? s->n : 1, sizeof(*m->site_node));
    if (!m->site_node)
        return -1;
    m->ncaps = s->n;
    for (size_t i = 0; i < s->n; i++)
        if (add_capture(m, s, i) < 0)
            return -1;
    trk_ctree_finish(&m->tree);
    m->other_loc = (uint32_t)m->nlocs;
    struct trk_location other = {.kind = TRK_LOC_OTHER};
    return add_loc_key(m, &other, NULL);
}

void trk_fg_model_free(struct trk_fg_model *m)
{
    for (size_t i = 0; m->site_node && i < m->ncaps; i++)
        free(m->site_node[i]);
    free(m->site_node);
    trk_ctree_free(&m->tree);
    free(m->loc_key);
    free(m->loc_kind);
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
            if (p->sites[k].thread < p->nthreads && site_value(p, &p->sites[k], o, fo, &b, &c)) {
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
    size_t n = m->tree.nnodes;
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
    const struct trk_ctree_node *nd = m->tree.nodes;
    bool by_count = nd[0].total_bytes == 0; /* --allocated of zero-sized blocks */
#define VAL(i) (by_count ? nd[i].total_count : nd[i].total_bytes)
    double limit = fraction * (double)VAL(0);
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
        uint32_t up = nd[i].parent;
        other[i] = NONE;
        if (kept[up] && (double)VAL(i) >= limit && VAL(i)) {
            kept[i] = 1;
            pr->rep[i] = (uint32_t)pr->n;
            pr->parent[pr->n] = pr->rep[up];
            pr->loc[pr->n++] = nd[i].loc;
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
#undef VAL
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
            if (node == NONE || !site_value(p, &p->sites[i], o, fo, &b, &c))
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
