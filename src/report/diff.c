/* SPDX-License-Identifier: MIT
 *
 * diff.c - `tracker diff BEFORE AFTER`: per symbolized stack, how the bytes
 * live at the peak and the bytes leaked changed between two captures (or
 * capture sets). Stacks are keyed by their frames' function, file and module
 * basenames and lines, never by addresses, so two runs (or two builds in
 * different directories) still line up. Must not: read events or decide an
 * exit status.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"
#include "report/sampling.h"

struct drow {
    uint32_t stack;
    uint64_t peak[2], leaked[2];
};

struct drows {
    struct drow *v;
    size_t cap;
};

static struct drow *row_at(struct drows *d, uint32_t stack)
{
    if (stack >= d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 256;
        while (nc <= stack)
            nc *= 2;
        struct drow *p = realloc(d->v, nc * sizeof(*p));
        if (!p)
            return NULL;
        memset(p + d->cap, 0, (nc - d->cap) * sizeof(*p));
        d->v = p;
        d->cap = nc;
    }
    d->v[stack].stack = stack;
    return &d->v[stack];
}

static uint64_t mag(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static int cmp_rows(const void *pa, const void *pb)
{
    const struct drow *x = *(const struct drow *const *)pa, *y = *(const struct drow *const *)pb;
    uint64_t xp = mag(trk_rdelta(x->peak[0], x->peak[1]));
    uint64_t xl = mag(trk_rdelta(x->leaked[0], x->leaked[1]));
    uint64_t yp = mag(trk_rdelta(y->peak[0], y->peak[1]));
    uint64_t yl = mag(trk_rdelta(y->leaked[0], y->leaked[1]));
    uint64_t xm = xp > xl ? xp : xl, ym = yp > yl ? yp : yl;
    if (xm != ym)
        return xm > ym ? -1 : 1;
    if (xp != yp)
        return xp > yp ? -1 : 1;
    if (xl != yl)
        return xl > yl ? -1 : 1;
    /* Unchanged rows: the biggest first. */
    if (x->peak[1] != y->peak[1])
        return x->peak[1] > y->peak[1] ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int add_set(const struct trk_report_set *s, int side, const struct trk_report_opts *o,
                   struct trk_loctab *lt, struct trk_stacktab *st, struct drows *d,
                   struct trk_site_walker *w, uint64_t *peak, uint64_t *leaked)
{
    for (size_t ci = 0; ci < s->n; ci++) {
        const struct trk_report_capture *c = &s->v[ci];
        /* Heap and mappings together peak at one instant of their own,
         * not at the sum of their two peaks. */
        bool hm = trk_spaces_heap_and_mmap(trk_report_spaces(o));
        if (hm)
            *peak += c->prof.peak_hm_bytes;
        for (uint32_t sp = 0; sp < TRK_SPACE_COUNT; sp++)
            if (trk_report_space_on(o, sp) && !(hm && sp <= TRK_SPACE_MMAP))
                *peak += c->prof.peak_bytes[sp];
        for (size_t si = 0; si < c->prof.nsites; si++) {
            const struct trk_site *site = &c->prof.sites[si];
            uint64_t peak_bytes, peak_count;
            trk_site_value(site, TRK_SEL_PEAK, trk_report_spaces(o), &peak_bytes, &peak_count);
            if (!trk_report_space_on(o, site->space) || (!peak_bytes && !site->s.leak_bytes))
                continue;
            uint32_t sid = trk_site_stack(w, c, o, site->stack, lt, st);
            struct drow *r = sid == TRK_NO_ID ? NULL : row_at(d, sid);
            if (!r)
                return -1;
            r->peak[side] += peak_bytes;
            r->leaked[side] += site->s.leak_bytes;
            *leaked += site->s.leak_bytes;
        }
    }
    return 0;
}

/* What the rows past the limit add up to. */
struct omitted {
    uint64_t peak[2], leaked[2];
};

static struct omitted count_omitted(struct drow *const *rows, size_t n, size_t shown)
{
    struct omitted m = {{0, 0}, {0, 0}};
    for (size_t i = shown; i < n; i++)
        for (int k = 0; k < 2; k++) {
            m.peak[k] += rows[i]->peak[k];
            m.leaked[k] += rows[i]->leaked[k];
        }
    return m;
}

/* "+1,234", "-5", "0": exact bytes, for the line of what was left out. */
static const char *fmt_signed(int64_t v, char *buf, size_t len)
{
    char g[32];
    snprintf(buf, len, "%s%s",
             v > 0   ? "+"
             : v < 0 ? "-"
                     : "",
             trk_rfmt_grouped(mag(v), g, sizeof(g)));
    return buf;
}

static void print_change(FILE *out, const char *what, uint64_t before, uint64_t after)
{
    char a[32], b[32], c[32];
    fprintf(out, "%s %s (%s -> %s)", what, trk_rfmt_delta(trk_rdelta(before, after), a, sizeof(a)),
            trk_rfmt_bytes(before, b, sizeof(b)), trk_rfmt_bytes(after, c, sizeof(c)));
}

static void print_text(FILE *out, const struct trk_report_set *before,
                       const struct trk_report_set *after, const struct trk_report_opts *o,
                       const struct trk_loctab *lt, const struct trk_stacktab *st,
                       struct drow *const *rows, size_t nrows, size_t limit, const uint64_t peak[2],
                       const uint64_t leaked[2])
{
    fputs("before: ", out);
    trk_rprint_headers(out, before, o);
    fputs("after:  ", out);
    trk_rprint_headers(out, after, o);
    const struct trk_report_set *both[2] = {before, after};
    trk_rprint_torch_note(out, both, 2);
    trk_rprint_leaks_note(out, both, 2);
    size_t changed = 0;
    while (changed < nrows && (rows[changed]->peak[0] != rows[changed]->peak[1] ||
                               rows[changed]->leaked[0] != rows[changed]->leaked[1]))
        changed++;
    size_t shown = limit && limit < changed ? limit : changed;
    for (size_t i = 0; i < shown; i++) {
        const struct drow *r = rows[i];
        fputc('\n', out);
        print_change(out, "peak", r->peak[0], r->peak[1]);
        fputs(", ", out);
        print_change(out, "leaked", r->leaked[0], r->leaked[1]);
        fputc('\n', out);
        trk_rprint_stack(out, lt, st, r->stack);
    }
    if (changed == 0) {
        fputs("\nno stack changed\n", out);
    } else if (shown < changed) {
        struct omitted m = count_omitted(rows, changed, shown);
        char a[40], b[40];
        fprintf(out,
                "\n... %zu more changed stack%s not shown: peak %s bytes, leaked %s bytes "
                "(-n N shows more, -n 0 all)\n",
                changed - shown, changed - shown == 1 ? "" : "s",
                fmt_signed(trk_rdelta(m.peak[0], m.peak[1]), a, sizeof(a)),
                fmt_signed(trk_rdelta(m.leaked[0], m.leaked[1]), b, sizeof(b)));
    }
    fputs("\nTOTAL: ", out);
    print_change(out,
                 o->gpu    ? "peak device memory"
                 : o->mmap ? "peak (heap + mapped)"
                           : "peak heap",
                 peak[0], peak[1]);
    fputs(", ", out);
    print_change(out, "leaked", leaked[0], leaked[1]);
    fputc('\n', out);
}

/* Every stack with a figure on either side is listed, changed or not (as
 * before the limit), the largest changes first; the limit cuts the list
 * and a last row with an empty stack and "omitted": N sums the other N. */
static void print_json(FILE *out, const struct trk_loctab *lt, const struct trk_stacktab *st,
                       struct drow *const *rows, size_t nrows, size_t limit,
                       const uint64_t sampled[2])
{
    struct trk_rjson j;
    size_t shown = limit && limit < nrows ? limit : nrows;
    trk_rjson_init(&j, out);
    trk_rjson_begin_array(&j, NULL);
    for (size_t i = 0; i < shown; i++) {
        const struct drow *r = rows[i];
        trk_rjson_begin_object(&j, NULL);
        trk_rjson_stack(&j, lt, st, r->stack);
        /* The document is an array (scripts rely on it): each row says
         * which side's figures are sampling estimates. */
        if (sampled[0])
            trk_rjson_u64(&j, "sample_bytes_before", sampled[0]);
        if (sampled[1])
            trk_rjson_u64(&j, "sample_bytes_after", sampled[1]);
        trk_rjson_u64(&j, "peak_before", r->peak[0]);
        trk_rjson_u64(&j, "peak_after", r->peak[1]);
        trk_rjson_i64(&j, "peak_delta", trk_rdelta(r->peak[0], r->peak[1]));
        trk_rjson_u64(&j, "leaked_before", r->leaked[0]);
        trk_rjson_u64(&j, "leaked_after", r->leaked[1]);
        trk_rjson_i64(&j, "leaked_delta", trk_rdelta(r->leaked[0], r->leaked[1]));
        trk_rjson_end_object(&j);
    }
    if (shown < nrows) {
        struct omitted m = count_omitted(rows, nrows, shown);
        trk_rjson_begin_object(&j, NULL);
        trk_rjson_begin_array(&j, "stack");
        trk_rjson_end_array(&j);
        trk_rjson_u64(&j, "peak_before", m.peak[0]);
        trk_rjson_u64(&j, "peak_after", m.peak[1]);
        trk_rjson_i64(&j, "peak_delta", trk_rdelta(m.peak[0], m.peak[1]));
        trk_rjson_u64(&j, "leaked_before", m.leaked[0]);
        trk_rjson_u64(&j, "leaked_after", m.leaked[1]);
        trk_rjson_i64(&j, "leaked_delta", trk_rdelta(m.leaked[0], m.leaked[1]));
        trk_rjson_u64(&j, "omitted", nrows - shown);
        trk_rjson_end_object(&j);
    }
    trk_rjson_end_array(&j);
    trk_rjson_finish(&j);
}

int trk_report_diff(const struct trk_report_set *before, const struct trk_report_set *after,
                    const struct trk_report_opts *o, size_t limit, FILE *out, char *err,
                    size_t errlen)
{
    struct trk_loctab lt;
    struct trk_stacktab st;
    struct trk_site_walker w = {0};
    struct drows d = {0};
    struct drow **rows = NULL;
    uint64_t peak[2] = {0, 0}, leaked[2] = {0, 0};
    int rc = -1;
    trk_loctab_init(&lt, true);
    trk_stacktab_init(&st);
    if (add_set(before, 0, o, &lt, &st, &d, &w, &peak[0], &leaked[0]) < 0 ||
        add_set(after, 1, o, &lt, &st, &d, &w, &peak[1], &leaked[1]) < 0)
        goto oom;
    rows = malloc((st.n ? st.n : 1) * sizeof(*rows));
    if (!rows)
        goto oom;
    size_t nrows = 0;
    for (size_t i = 0; i < st.n && i < d.cap; i++) {
        struct drow *r = &d.v[i];
        if (r->peak[0] || r->peak[1] || r->leaked[0] || r->leaked[1])
            rows[nrows++] = r;
    }
    qsort(rows, nrows, sizeof(*rows), cmp_rows);
    if (o->json)
        print_json(
            out, &lt, &st, rows, nrows, limit,
            (uint64_t[2]){trk_report_set_sample_bytes(before), trk_report_set_sample_bytes(after)});
    else
        print_text(out, before, after, o, &lt, &st, rows, nrows, limit, peak, leaked);
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "diff: out of memory");
done:
    free(rows);
    free(d.v);
    trk_site_walker_free(&w);
    trk_stacktab_free(&st);
    trk_loctab_free(&lt);
    return rc;
}
