/* SPDX-License-Identifier: MIT
 *
 * summary.c - `tracker summary`: per source location (function, file, line,
 * module) the bytes live at the peak whose innermost frame it is (own), the
 * bytes live at the peak whose stack holds it (total, a recursive stack
 * counted once), and the allocations made with it innermost. With --gpu,
 * the same for device memory, plus the locations of the allocations the
 * driver refused. Must not: parse options or read events (the profile did).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/summary_extra.h"
#include "report/python_note.h"
#include "report/summary_procs.h"
#include "common/grow.h"
#include "report/report_internal.h"
#include "report/sampling.h"

struct acc {
    uint64_t own, total, allocs;
    uint64_t own_live; /* blocks live at the peak with it innermost (allocs: the whole run) */
    uint64_t failed_bytes, failed; /* refused GPU allocations made with it innermost */
    uint64_t mark;                 /* the last stack that added to total */
    uint32_t depth;                /* least distance from an innermost frame, + 1 (0 = unset) */
};

struct row {
    uint32_t loc;
    const struct acc *a;
};

static int cmp_rows(const void *pa, const void *pb, void *ctx)
{
    const struct row *x = pa, *y = pb;
    const struct trk_loctab *lt = ctx;
    if (x->a->own != y->a->own)
        return x->a->own > y->a->own ? -1 : 1;
    if (x->a->total != y->a->total)
        return x->a->total > y->a->total ? -1 : 1;
    if (x->a->allocs != y->a->allocs)
        return x->a->allocs > y->a->allocs ? -1 : 1;
    /* Equal figures (a chain of callers): the nearest the allocation first,
     * then by name and line for stable output. */
    if (x->a->depth != y->a->depth)
        return x->a->depth < y->a->depth ? -1 : 1;
    const struct trk_rloc *l = &lt->v[x->loc], *m = &lt->v[y->loc];
    int c = strcmp(l->function ? l->function : "", m->function ? m->function : "");
    if (c)
        return c;
    if (l->line != m->line)
        return l->line < m->line ? -1 : 1;
    return x->loc < y->loc ? -1 : x->loc > y->loc;
}

/* Refused allocations: the most bytes first, then as cmp_rows. */
static int cmp_failed(const void *pa, const void *pb, void *ctx)
{
    const struct row *x = pa, *y = pb;
    if (x->a->failed_bytes != y->a->failed_bytes)
        return x->a->failed_bytes > y->a->failed_bytes ? -1 : 1;
    if (x->a->failed != y->a->failed)
        return x->a->failed > y->a->failed ? -1 : 1;
    return cmp_rows(pa, pb, ctx);
}

/* Room for need accumulators, the new ones zeroed. */
static int acc_reserve(struct acc **v, size_t *cap, size_t need)
{
    size_t old = *cap;
    if (trk_grow((void **)v, cap, need, sizeof(**v)) < 0)
        return -1;
    if (*cap > old) /* need 0 leaves *v NULL: memset(NULL, 0, 0) is undefined */
        memset(*v + old, 0, (*cap - old) * sizeof(**v));
    return 0;
}

static void print_failed(FILE *out, const struct trk_loctab *lt, const struct row *failed,
                         size_t nfailed, size_t limit)
{
    char a[32], b[32];
    if (nfailed == 0)
        return;
    size_t shown = limit && limit < nfailed ? limit : nfailed;
    fprintf(out, "\nGPU allocations the driver refused\n%10s %12s  %s\n", "requested", "refusals",
            "location");
    for (size_t i = 0; i < shown; i++) {
        const struct acc *x = failed[i].a;
        fprintf(out, "%10s %12s  ", trk_rfmt_bytes(x->failed_bytes, a, sizeof(a)),
                trk_rfmt_grouped(x->failed, b, sizeof(b)));
        trk_rprint_loc(out, &lt->v[failed[i].loc]);
        fputc('\n', out);
    }
    if (shown < nfailed)
        fprintf(out, "... %zu more locations (-n 0 shows all)\n", nfailed - shown);
}

/* What the row limit left out. */
struct omitted {
    uint64_t own, own_live, allocs;
};

static struct omitted count_omitted(const struct row *rows, size_t n, size_t shown)
{
    struct omitted m = {0, 0, 0};
    for (size_t i = shown; i < n; i++) {
        m.own += rows[i].a->own;
        m.own_live += rows[i].a->own_live;
        m.allocs += rows[i].a->allocs;
    }
    return m;
}

static void print_text(FILE *out, const struct trk_report_set *s, const struct trk_report_opts *o,
                       const struct trk_loctab *lt, const struct row *rows, size_t nrows,
                       size_t shown, size_t limit)
{
    char a[32], b[32], c[32], d[32];
    trk_rprint_headers(out, s, o);
    trk_rprint_torch_note(out, &s, 1);
    trk_rprint_arenas_note(out, s, o);
    trk_summary_print_processes(out, s, o, limit);
    fputc('\n', out);
    if (nrows == 0) {
        fprintf(out, "no %s with a stack were recorded\n",
                o->gpu ? "GPU allocations" : "allocations");
        return;
    }
    /* Two counts, because "allocations" alone was read both ways. Over
     * several processes a row adds what each had live at its own peak. */
    fprintf(out,
            "own/total: bytes live at %s made here (innermost frame) / below here;\n"
            "at peak: own blocks live at the peak; allocations: made here over the whole run\n",
            trk_peak_phrase(s, o));
    if (!o->keep_allocator_frames)
        fputs("allocator frames (malloc, operator new, the GPU runtimes and drivers, PyTorch's "
              "allocators) are hidden: --keep-allocator-frames shows them\n",
              out);
    fputc('\n', out);
    fprintf(out, "%10s %10s %10s %12s  %s\n", "own", "total", "at peak", "allocations", "location");
    for (size_t i = 0; i < shown; i++) {
        const struct acc *x = rows[i].a;
        fprintf(out, "%10s %10s %10s %12s  ", trk_rfmt_bytes(x->own, a, sizeof(a)),
                trk_rfmt_bytes(x->total, b, sizeof(b)), trk_rfmt_grouped(x->own_live, d, sizeof(d)),
                trk_rfmt_grouped(x->allocs, c, sizeof(c)));
        trk_rprint_loc(out, &lt->v[rows[i].loc]);
        fputc('\n', out);
    }
    if (shown < nrows) {
        struct omitted m = count_omitted(rows, nrows, shown);
        fprintf(out,
                "... %zu more location%s, %s bytes own at the peak not shown (-n N shows more, -n "
                "0 all)\n",
                nrows - shown, nrows - shown == 1 ? "" : "s",
                trk_rfmt_grouped(m.own, a, sizeof(a)));
    }
}

/* "gpu": {"<ordinal>": {"peak_bytes", "driver_peak_bytes"}} of one capture:
 * each selected device's own peak (devices are never added together). */
static void json_gpu_peaks(struct trk_rjson *j, const struct trk_report_set *s,
                           const struct trk_report_opts *o)
{
    uint64_t peak[TRK_SPACE_COUNT] = {0}, driver[TRK_SPACE_COUNT] = {0};
    bool seen[TRK_SPACE_COUNT] = {false};
    uint32_t sel = trk_report_spaces(o);
    for (size_t i = 0; i < s->n; i++) {
        const struct trk_stats *t = &s->v[i].prof.totals;
        for (size_t k = 0; k < t->ngpu; k++) {
            uint32_t sp = trk_gpu_space(t->gpu[k].device);
            if (!trk_spaces_has(sel, sp))
                continue;
            seen[sp] = true;
            peak[sp] += t->gpu[k].peak_bytes;
            driver[sp] += t->gpu[k].driver_peak_bytes;
        }
    }
    trk_rjson_begin_object(j, "gpu");
    for (uint32_t sp = TRK_SPACE_GPU0; sp < TRK_SPACE_COUNT; sp++) {
        if (!seen[sp])
            continue;
        char key[16];
        snprintf(key, sizeof(key), "%d", (int)trk_space_device(sp));
        trk_rjson_begin_object(j, key);
        trk_rjson_u64(j, "peak_bytes", peak[sp]);
        trk_rjson_u64(j, "driver_peak_bytes", driver[sp]);
        trk_rjson_end_object(j);
    }
    trk_rjson_end_object(j);
}

static void print_json(FILE *out, const struct trk_report_set *s, const struct trk_report_opts *o,
                       const struct trk_loctab *lt, const struct row *rows, size_t nrows,
                       size_t shown, const struct row *failed, size_t nfailed, size_t limit)
{
    struct trk_rjson j;
    char name[300];
    uint64_t heap = 0, mapped = 0, both = 0;
    for (size_t i = 0; i < s->n; i++) {
        heap += s->v[i].prof.peak_bytes[TRK_SPACE_HEAP];
        mapped += s->v[i].prof.peak_bytes[TRK_SPACE_MMAP];
        both += s->v[i].prof.peak_hm_bytes;
    }
    trk_rjson_init(&j, out);
    trk_rjson_begin_object(&j, NULL);
    trk_rsample_json(&j, trk_report_set_sample_bytes(s));
    /* Peaks of one process only: several processes peak at different
     * instants, so their peaks are in "processes", each its own, never
     * added into one figure of a moment that did not exist. */
    if (s->n == 1) {
        trk_rjson_u64(&j, "peak_heap_bytes", heap);
        if (o->mmap) {
            /* The peak of the two together (one instant), which own and
             * total_bytes are taken at. */
            trk_rjson_u64(&j, "peak_mmap_bytes", mapped);
            trk_rjson_u64(&j, "peak_heap_mmap_bytes", both);
        }
        if (o->gpu)
            json_gpu_peaks(&j, s, o);
    }
    trk_rjson_arenas_note(&j, s, o);
    trk_summary_json_processes(&j, s, o, limit);
    trk_rjson_begin_array(&j, "locations");
    for (size_t i = 0; i < shown; i++) {
        const struct trk_rloc *l = &lt->v[rows[i].loc];
        trk_rjson_begin_object(&j, NULL);
        trk_rjson_string(&j, "function", trk_rloc_name(l, name, sizeof(name)));
        trk_rjson_string(&j, "file", l->file);
        trk_rjson_u64(&j, "line", l->line);
        trk_rjson_string(&j, "module", l->module);
        if (l->python)
            trk_rjson_bool(&j, "python", true);
        trk_rjson_u64(&j, "own_bytes", rows[i].a->own);
        trk_rjson_u64(&j, "total_bytes", rows[i].a->total);
        trk_rjson_u64(&j, "own_count", rows[i].a->own_live);
        trk_rjson_u64(&j, "allocations", rows[i].a->allocs);
        trk_rjson_end_object(&j);
    }
    trk_rjson_end_array(&j);
    if (shown < nrows) {
        struct omitted m = count_omitted(rows, nrows, shown);
        trk_rjson_begin_object(&j, "omitted");
        trk_rjson_u64(&j, "locations", nrows - shown);
        trk_rjson_u64(&j, "own_bytes", m.own);
        trk_rjson_u64(&j, "own_count", m.own_live);
        trk_rjson_u64(&j, "allocations", m.allocs);
        trk_rjson_end_object(&j);
    }
    if (o->gpu) {
        trk_rjson_begin_array(&j, "failed");
        for (size_t i = 0; i < nfailed; i++) {
            const struct trk_rloc *l = &lt->v[failed[i].loc];
            trk_rjson_begin_object(&j, NULL);
            trk_rjson_string(&j, "function", trk_rloc_name(l, name, sizeof(name)));
            trk_rjson_string(&j, "file", l->file);
            trk_rjson_u64(&j, "line", l->line);
            trk_rjson_string(&j, "module", l->module);
            trk_rjson_u64(&j, "failed_bytes", failed[i].a->failed_bytes);
            trk_rjson_u64(&j, "failed_allocations", failed[i].a->failed);
            trk_rjson_end_object(&j);
        }
        trk_rjson_end_array(&j);
    }
    trk_summary_json_extra(&j, s, o);
    trk_rjson_end_object(&j);
    trk_rjson_finish(&j);
}

int trk_report_summary(const struct trk_report_set *s, const struct trk_report_opts *o,
                       size_t nrows_max, bool rows_given, FILE *out, char *err, size_t errlen)
{
    struct trk_loctab lt;
    struct trk_site_walker w = {0};
    struct acc *acc = NULL;
    size_t cap = 0;
    struct row *rows = NULL, *failed = NULL;
    uint64_t serial = 0;
    int rc = -1;
    trk_loctab_init(&lt, false);

    uint32_t spaces = trk_report_spaces(o);
    for (size_t ci = 0; ci < s->n; ci++) {
        const struct trk_report_capture *c = &s->v[ci];
        for (size_t si = 0; si < c->prof.nsites; si++) {
            const struct trk_site *site = &c->prof.sites[si];
            if (!trk_report_space_on(o, site->space))
                continue;
            /* At the peak of what is shown: with --mmap, of heap + mappings. */
            uint64_t peak_bytes, peak_count;
            trk_site_value(site, TRK_SEL_PEAK, spaces, &peak_bytes, &peak_count);
            if (!peak_bytes && !site->s.alloc_count && !site->s.fail_count)
                continue;
            const uint32_t *ids;
            int n = trk_site_locs(&w, c, o, site->stack, &lt, &ids);
            if (n < 0 || acc_reserve(&acc, &cap, lt.n) < 0)
                goto oom;
            if (n == 0)
                continue; /* no stack: nothing to attribute it to */
            acc[ids[0]].own += peak_bytes;
            acc[ids[0]].allocs += site->s.alloc_count;
            acc[ids[0]].own_live += peak_count;
            acc[ids[0]].failed_bytes += site->s.fail_bytes;
            acc[ids[0]].failed += site->s.fail_count;
            serial++;
            for (int k = 0; k < n; k++) {
                struct acc *x = &acc[ids[k]];
                if (x->mark != serial) {
                    x->mark = serial;
                    x->total += peak_bytes;
                }
                if (!x->depth || (uint32_t)k + 1 < x->depth)
                    x->depth = (uint32_t)k + 1;
            }
        }
    }

    size_t nrows = 0, nfailed = 0;
    rows = malloc((lt.n ? lt.n : 1) * sizeof(*rows));
    failed = malloc((lt.n ? lt.n : 1) * sizeof(*failed));
    if (!rows || !failed)
        goto oom;
    for (size_t i = 0; i < lt.n; i++) {
        if (acc[i].own || acc[i].total || acc[i].allocs)
            rows[nrows++] = (struct row){.loc = (uint32_t)i, .a = &acc[i]};
        if (acc[i].failed)
            failed[nfailed++] = (struct row){.loc = (uint32_t)i, .a = &acc[i]};
    }
    qsort_r(rows, nrows, sizeof(*rows), cmp_rows, &lt);
    qsort_r(failed, nfailed, sizeof(*failed), cmp_failed, &lt);
    /* 20 rows unless asked, in the table and in JSON alike: no default
     * output grows with the capture (a long run has locations by the
     * hundred thousand). -n 0 means all; "omitted" sums the rest. */
    (void)rows_given;
    size_t limit = nrows_max;
    size_t shown = limit && limit < nrows ? limit : nrows;
    if (o->json) {
        print_json(out, s, o, &lt, rows, nrows, shown, failed, nfailed, limit);
    } else {
        print_text(out, s, o, &lt, rows, nrows, shown, limit);
        print_failed(out, &lt, failed, nfailed, limit);
        trk_summary_print_extra(out, s, o);
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "summary: out of memory");
done:
    free(rows);
    free(failed);
    free(acc);
    trk_site_walker_free(&w);
    trk_loctab_free(&lt);
    return rc;
}
