/* SPDX-License-Identifier: MIT
 *
 * temporal.c - the interval pass of temporal.h: one read of the events,
 * heap blocks followed from allocation to free, rows keyed by (site, from,
 * to), exact bucket halving. Owns the "high point" bookkeeping. Must not:
 * print, symbolize, keep anything per event (rows are aggregated, the live
 * set is the only per-block state), or assign sites itself: a block's site is
 * the profile's site of its (stack, thread id).
 *
 * A bucket's high point is only known when the bucket ends, yet a block
 * freed inside the bucket has to be filed when it is freed. So the pass keeps
 * a provisional high point P (the last new maximum so far, or the start of
 * the bucket): a free files its row as "after P", and a later new maximum
 * moves every row filed since then to "before P" (a free never raises the
 * maximum, so those frees all came before the new one). Each row is moved at
 * most once per filing, which keeps the pass linear.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/live_map.h"
#include "analysis/sample_weight.h"
#include "analysis/temporal.h"
#include "common/grow.h"
#include "common/hash.h"

#define NONE UINT32_MAX

/* ---- Rows: (site, from, to) -> index, open addressing -------------------- */

struct rowtab {
    struct trk_temporal_row *v;
    size_t n, cap;
    uint8_t *pending; /* per row: listed in `moves` (filed after P) */
    size_t pcap;
    uint32_t *slots; /* row + 1; 0 = empty */
    size_t mask;
};

static uint64_t row_hash(uint32_t site, uint32_t from, uint32_t to)
{
    return trk_mix64((uint64_t)site << 32 ^ (uint64_t)from << 16 ^ to);
}

static int rowtab_rehash(struct rowtab *t, size_t nslots)
{
    uint32_t *s = calloc(nslots, sizeof(*s));
    if (!s)
        return -1;
    free(t->slots);
    t->slots = s;
    t->mask = nslots - 1;
    for (size_t i = 0; i < t->n; i++) {
        const struct trk_temporal_row *r = &t->v[i];
        size_t k = (size_t)row_hash(r->site, r->from, r->to) & t->mask;
        while (t->slots[k])
            k = (k + 1) & t->mask;
        t->slots[k] = (uint32_t)i + 1;
    }
    return 0;
}

/* The row of a key, created empty when absent; NONE when memory ran out. */
static uint32_t rowtab_get(struct rowtab *t, uint32_t site, uint32_t from, uint32_t to)
{
    if ((t->n + 1) * 2 > t->mask + 1 && rowtab_rehash(t, (t->mask + 1) * 2) < 0)
        return NONE;
    size_t k = (size_t)row_hash(site, from, to) & t->mask;
    for (; t->slots[k]; k = (k + 1) & t->mask) {
        const struct trk_temporal_row *r = &t->v[t->slots[k] - 1];
        if (r->site == site && r->from == from && r->to == to)
            return t->slots[k] - 1;
    }
    if (t->n >= NONE - 1 || trk_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) < 0 ||
        trk_grow((void **)&t->pending, &t->pcap, t->n + 1, 1) < 0)
        return NONE;
    t->v[t->n] = (struct trk_temporal_row){.site = site, .from = from, .to = to};
    t->pending[t->n] = 0;
    t->slots[k] = (uint32_t)t->n + 1;
    return (uint32_t)t->n++;
}

/* Drops emptied rows (left behind by moves) and rebuilds the index. */
static int rowtab_compact(struct rowtab *t)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].count || t->v[i].bytes)
            t->v[k++] = t->v[i];
    t->n = k;
    size_t nslots = 1024;
    while (nslots < t->n * 2 + 2)
        nslots *= 2;
    return rowtab_rehash(t, nslots);
}

/* ---- Exact halving -------------------------------------------------------- */

/* An endpoint 2b+f re-judged against the high point of its merged pair
 * (first_wins[m]: the pair's first bucket holds the higher point). */
static uint32_t coarse_end(uint32_t e, unsigned nb, const uint8_t *first_wins)
{
    if (e >= 2 * nb)
        return nb; /* never freed: 2 * (nb / 2) */
    uint32_t b = e / 2, f = e % 2, m = b / 2;
    bool first = (b % 2) == 0;
    if (first == (bool)first_wins[m])
        return 2 * m + f;
    return 2 * m + (first ? 0 : 1); /* before the pair's high point, or after it */
}

/* Halves t's buckets; ord (may be NULL) is the pass's high-point ordinals,
 * halved alike. */
static int coarsen(struct trk_temporal *t, struct rowtab *rt, uint64_t *ord)
{
    unsigned nb = t->nbuckets;
    if (nb < 2)
        return -1;
    uint8_t *fw = malloc(nb / 2);
    if (!fw)
        return -1;
    for (unsigned m = 0; m < nb / 2; m++) {
        fw[m] = t->high[2 * m] >= t->high[2 * m + 1];
        unsigned w = fw[m] ? 2 * m : 2 * m + 1;
        t->high[m] = t->high[w];
        t->high_t_ns[m] = t->high_t_ns[w];
        if (ord)
            ord[m] = ord[w];
    }
    for (size_t i = 0; i < rt->n; i++) {
        rt->v[i].from = coarse_end(rt->v[i].from, nb, fw);
        rt->v[i].to = coarse_end(rt->v[i].to, nb, fw);
    }
    free(fw);
    t->nbuckets = nb / 2;
    t->bucket_ns *= 2;
    /* Rows that became equal merge: sort-free, through a fresh index. */
    struct rowtab merged = {0};
    if (rowtab_rehash(&merged, 1024) < 0)
        return -1;
    for (size_t i = 0; i < rt->n; i++) {
        const struct trk_temporal_row *r = &rt->v[i];
        if (!r->count && !r->bytes)
            continue;
        uint32_t k = rowtab_get(&merged, r->site, r->from, r->to);
        if (k == NONE) {
            free(merged.v);
            free(merged.pending);
            free(merged.slots);
            return -1; /* rows already re-judged: t is consistent, just unmerged */
        }
        merged.v[k].bytes += r->bytes;
        merged.v[k].count += r->count;
    }
    free(rt->v);
    free(rt->pending);
    free(rt->slots);
    *rt = merged;
    return 0;
}

/* ---- Site lookup: (stack, tid) -> the profile's heap site ----------------- */

struct sitetab {
    uint64_t *keys; /* stack */
    uint32_t *tids;
    uint32_t *idx1; /* site + 1; 0 = empty */
    size_t mask;
};

static int sitetab_build(struct sitetab *s, const struct trk_profile *p)
{
    size_t n = 64;
    while (n < p->nsites * 2 + 2)
        n *= 2;
    s->mask = n - 1;
    s->keys = calloc(n, sizeof(*s->keys));
    s->tids = calloc(n, sizeof(*s->tids));
    s->idx1 = calloc(n, sizeof(*s->idx1));
    if (!s->keys || !s->tids || !s->idx1)
        return -1;
    for (size_t i = 0; i < p->nsites; i++) {
        const struct trk_site *site = &p->sites[i];
        if (site->space != TRK_SPACE_HEAP || site->thread >= p->nthreads)
            continue;
        uint32_t tid = p->threads[site->thread].tid;
        size_t k = (size_t)trk_mix64(site->stack ^ (uint64_t)tid << 40) & s->mask;
        bool dup = false;
        for (; s->idx1[k]; k = (k + 1) & s->mask)
            dup |= s->keys[k] == site->stack && s->tids[k] == tid;
        /* A tid reused by a later thread: the first thread keeps it. */
        if (!dup) {
            s->keys[k] = site->stack;
            s->tids[k] = tid;
            s->idx1[k] = (uint32_t)i + 1;
        }
    }
    return 0;
}

static uint32_t sitetab_find(const struct sitetab *s, uint64_t stack, uint32_t tid)
{
    size_t k = (size_t)trk_mix64(stack ^ (uint64_t)tid << 40) & s->mask;
    for (; s->idx1[k]; k = (k + 1) & s->mask)
        if (s->keys[k] == stack && s->tids[k] == tid)
            return s->idx1[k] - 1;
    return NONE;
}

static void sitetab_free(struct sitetab *s)
{
    free(s->keys);
    free(s->tids);
    free(s->idx1);
}

/* ---- The pass ------------------------------------------------------------- */

struct pass {
    struct trk_temporal *t;
    struct rowtab rows;
    struct sitetab sites;
    struct trk_live_map live;
    uint64_t *ord;   /* nbuckets: ordinal of each bucket's high point */
    uint32_t *moves; /* rows filed after the provisional high point */
    size_t nmoves, moves_cap;
    uint64_t clock_base, width0;
    unsigned level; /* buckets halved this many times */
    unsigned cur;   /* the open bucket */
    uint64_t live_bytes, max, max_ord, max_t;
    uint64_t ordinal;    /* heap events so far */
    uint64_t last_stack; /* one-entry site cache: loops allocate at one site */
    uint32_t last_tid, last_site;
    size_t max_rows;
    const struct trk_profile *p;
    double sample_n; /* --sample-bytes of a sampled capture, else 0 */
    bool oom;
};

/* What a block stands for at its site: itself, or at a sampled site its
 * estimate (sample_weight.h), keyed by its ordinal like the profile's. */
static inline struct trk_sample_w weigh(const struct pass *s, uint32_t site, uint64_t size,
                                        uint64_t key)
{
    if (s->sample_n > 0 && site < s->p->nsites && (s->p->sites[site].flags & TRK_SITE_SAMPLED))
        return trk_sample_weigh(size, s->sample_n, key);
    return (struct trk_sample_w){size, 1};
}

static void close_bucket(struct pass *s)
{
    s->t->high[s->cur] = s->max;
    s->t->high_t_ns[s->cur] = s->max_t;
    s->ord[s->cur] = s->max_ord;
    for (size_t i = 0; i < s->nmoves; i++)
        s->rows.pending[s->moves[i]] = 0; /* their "after" is final now */
    s->nmoves = 0;
}

/* Starts bucket b: its high point so far is its very start. */
static void open_bucket(struct pass *s, unsigned b)
{
    s->cur = b;
    s->max = s->live_bytes;
    s->max_ord = s->ordinal;
    s->max_t = (uint64_t)b * s->t->bucket_ns;
}

static void advance(struct pass *s, unsigned b)
{
    close_bucket(s);
    for (unsigned k = s->cur + 1; k < b; k++) {
        open_bucket(s, k);
        close_bucket(s);
    }
    /* Halving is only exact between closed pairs: do it as an even bucket
     * opens, when every bucket before it is closed. */
    while (s->rows.n > s->max_rows && b % 2 == 0 && s->t->nbuckets > 1) {
        if (coarsen(s->t, &s->rows, s->ord) < 0) {
            s->oom = true;
            break;
        }
        s->level++;
        b /= 2;
    }
    open_bucket(s, b);
}

static unsigned bucket_of(const struct pass *s, uint64_t ts)
{
    uint64_t rel = ts > s->clock_base ? ts - s->clock_base : 0;
    uint64_t b = rel / (s->width0 << s->level);
    return b >= s->t->nbuckets ? s->t->nbuckets - 1 : (unsigned)b;
}

/* Files a block freed now (the event at ordinal `ordinal`). */
static void file_free(struct pass *s, const struct trk_live_block *b)
{
    if (b->site == NONE)
        return;
    unsigned ba = (unsigned)(b->ord >> s->level);
    uint64_t high = ba == s->cur ? s->max_ord : s->ord[ba];
    uint32_t from = 2 * ba + (b->ts > high);
    uint32_t k = rowtab_get(&s->rows, b->site, from, 2 * s->cur + 1);
    if (k == NONE) {
        s->oom = true;
        return;
    }
    struct trk_sample_w w = weigh(s, b->site, b->size, b->ts);
    s->rows.v[k].bytes += w.bytes;
    s->rows.v[k].count += w.count;
    if (!s->rows.pending[k]) {
        if (trk_grow((void **)&s->moves, &s->moves_cap, s->nmoves + 1, sizeof(*s->moves)) < 0) {
            s->oom = true;
            return;
        }
        s->rows.pending[k] = 1;
        s->moves[s->nmoves++] = k;
    }
}

/* A new maximum: everything filed since the last one happened before it. */
static void new_max(struct pass *s, uint64_t rel)
{
    s->max = s->live_bytes;
    s->max_ord = s->ordinal;
    s->max_t = rel;
    uint32_t cur_after = 2 * s->cur + 1;
    for (size_t i = 0; i < s->nmoves; i++) {
        uint32_t k = s->moves[i];
        struct trk_temporal_row r = s->rows.v[k];
        s->rows.pending[k] = 0;
        s->rows.v[k].bytes = s->rows.v[k].count = 0;
        uint32_t from = r.from == cur_after ? cur_after - 1 : r.from;
        uint32_t to = cur_after - 1;
        uint32_t d = rowtab_get(&s->rows, r.site, from, to);
        if (d == NONE) {
            s->oom = true;
            break;
        }
        s->rows.v[d].bytes += r.bytes;
        s->rows.v[d].count += r.count;
    }
    s->nmoves = 0;
}

static uint32_t site_of(struct pass *s, uint64_t stack, uint32_t tid)
{
    if (s->last_site == NONE || s->last_stack != stack || s->last_tid != tid) {
        s->last_site = sitetab_find(&s->sites, stack, tid);
        s->last_stack = stack;
        s->last_tid = tid;
    }
    return s->last_site;
}

static void on_event(struct pass *s, const struct trk_event *e)
{
    if (e->type != TRK_EV_ALLOC && e->type != TRK_EV_FREE)
        return;
    unsigned b = bucket_of(s, e->ts);
    if (b > s->cur)
        advance(s, b);
    s->ordinal++;
    struct trk_live_block old;
    if (e->type == TRK_EV_FREE) {
        if (e->addr && trk_live_map_remove(&s->live, e->addr, &old)) {
            s->live_bytes -= old.size;
            file_free(s, &old);
        }
        return;
    }
    if (e->addr == 0)
        return; /* a failed allocation holds nothing */
    uint64_t size = e->size > TRK_LIVE_SIZE_MASK ? TRK_LIVE_SIZE_MASK : e->size;
    /* The fine bucket goes in `ord` so that later halvings can shift it. */
    struct trk_live_block blk = {.size = size,
                                 .ts = s->ordinal,
                                 .ord = (uint64_t)s->cur << s->level,
                                 .site = site_of(s, e->stack, e->tid)};
    int rc = trk_live_map_put(&s->live, e->addr, &blk, &old);
    if (rc < 0) {
        s->oom = true;
        return;
    }
    if (rc == 1) { /* its free was lost: the old block ends here, as in the profile */
        s->live_bytes -= old.size;
        file_free(s, &old);
    }
    s->live_bytes += size;
    if (s->live_bytes > s->max) {
        uint64_t rel = e->ts > s->clock_base ? e->ts - s->clock_base : 0;
        new_max(s, rel);
    }
}

/* Closes the last bucket and files every block still live. */
static void finish(struct pass *s)
{
    unsigned nb = s->t->nbuckets;
    if (s->cur + 1 < nb)
        advance(s, nb - 1);
    close_bucket(s);
    const struct trk_live_map *m = &s->live;
    for (size_t i = 0; m->slots && i <= m->mask && !s->oom; i++) {
        const struct trk_live_slot *sl = &m->slots[i];
        if (!sl->addr || sl->site == NONE)
            continue;
        /* The slot's ord_lo holds the fine bucket (it is far below 2^32). */
        unsigned ba = (unsigned)(sl->ord_lo >> s->level);
        uint32_t from = 2 * ba + (sl->ts > s->ord[ba]);
        uint32_t k = rowtab_get(&s->rows, sl->site, from, 2 * s->t->nbuckets);
        if (k == NONE) {
            s->oom = true;
            break;
        }
        struct trk_sample_w w = weigh(s, sl->site, sl->meta & TRK_LIVE_SIZE_MASK, sl->ts);
        s->rows.v[k].bytes += w.bytes;
        s->rows.v[k].count += w.count;
    }
}

int trk_temporal_compute(struct trk_reader *r, const struct trk_profile *p,
                         const struct trk_temporal_options *opts, struct trk_temporal *out)
{
    memset(out, 0, sizeof(*out));
    unsigned want = opts && opts->buckets ? opts->buckets : 256;
    if (want > (1u << 20))
        want = 1u << 20;
    unsigned nb = 1;
    while (nb < want)
        nb *= 2;
    struct pass s = {.t = out, .last_site = NONE, .p = p};
    s.sample_n = (double)p->totals.sample_bytes;
    s.max_rows = opts && opts->max_rows ? opts->max_rows : (size_t)1 << 20;
    s.clock_base = trk_reader_info(r)->clock_base;
    s.width0 = (p->end_t_ns + nb) / nb; /* ceil((end + 1) / nb) */
    if (s.width0 == 0)
        s.width0 = 1;
    out->nbuckets = nb;
    out->bucket_ns = s.width0;
    out->high = calloc(nb, sizeof(*out->high));
    out->high_t_ns = calloc(nb, sizeof(*out->high_t_ns));
    s.ord = calloc(nb, sizeof(*s.ord));
    enum { BATCH = 256 };
    struct trk_event *evs = malloc(BATCH * sizeof(*evs));
    int rc = 0;
    if (!out->high || !out->high_t_ns || !s.ord || !evs || rowtab_rehash(&s.rows, 1024) < 0 ||
        sitetab_build(&s.sites, p) < 0 || trk_live_map_init(&s.live) < 0) {
        s.oom = true;
    } else {
        open_bucket(&s, 0);
        while (!s.oom && (rc = trk_reader_next_batch(r, evs, BATCH)) > 0)
            for (int i = 0; i < rc; i++)
                on_event(&s, &evs[i]);
        if (!s.oom && rc >= 0)
            finish(&s);
        if (!s.oom && rowtab_compact(&s.rows) < 0)
            s.oom = true;
        while (!s.oom && s.rows.n > s.max_rows && out->nbuckets > 1)
            if (coarsen(out, &s.rows, NULL) < 0)
                s.oom = true;
    }
    out->rows = s.rows.v;
    out->nrows = s.rows.n;
    free(s.rows.pending);
    free(s.rows.slots);
    free(s.moves);
    free(s.ord);
    free(evs);
    sitetab_free(&s.sites);
    trk_live_map_free(&s.live);
    if (rc < 0)
        return -1;
    return s.oom ? -2 : 0;
}

int trk_temporal_coarsen(struct trk_temporal *t)
{
    struct rowtab rt = {.v = t->rows, .n = t->nrows, .cap = t->nrows};
    int rc = coarsen(t, &rt, NULL);
    free(rt.pending);
    free(rt.slots);
    t->rows = rt.v;
    t->nrows = rt.n;
    return rc;
}

void trk_temporal_free(struct trk_temporal *t)
{
    free(t->high);
    free(t->high_t_ns);
    free(t->rows);
    memset(t, 0, sizeof(*t));
}
