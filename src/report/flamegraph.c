/* SPDX-License-Identifier: MIT
 *
 * flamegraph.c - the flamegraph page (flamegraph.h): the data block as
 * columnar, interned, HTML-safe JSON between the two halves of the embedded
 * viewer, the header and timeline it carries, and the size budget that
 * prunes harder (and halves temporal buckets) until the page fits. The model
 * itself is built in flamegraph_model.c.
 *
 * Must not: print, open files, read events (temporal.c does the second
 * pass), or emit any capture string without trk_flamegraph_json_string.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/temporal.h"
#include "report/flamegraph.h"
#include "report/flamegraph_model.h"
#include "report/flamegraph_procs.h"
#include "report/leak_select.h"
#include "trk_config.h"

#define NONE              TRK_FG_NONE
#define MAX_TEMPORAL_ROWS 200000
#define TIMELINE_POINTS   2000
#define NAME_MAX_BYTES    1024 /* longer names are cut: templates can run to megabytes */

/* The data block's version: docs/FLAMEGRAPH_DATA.md, which viewer/decode.js
 * reads (T.DATA_FORMAT there must match). */
#define TRK_FG_DATA_FORMAT 1

/* ---- The data block ------------------------------------------------------------ */

static void json_u64s(FILE *f, const char *name, const uint64_t *v, size_t n, bool last)
{
    fprintf(f, "\"%s\":[", name);
    for (size_t i = 0; i < n; i++)
        fprintf(f, i ? ",%" PRIu64 : "%" PRIu64, v[i]);
    fputs(last ? "]" : "],", f);
}

/* Locations and strings the page's nodes use, renumbered densely. */
static int write_locs(FILE *f, const struct trk_fg_model *m, const struct trk_fg_pruned *pr)
{
    size_t nl = m->nlocs, ns = trk_ctree_nstrings(&m->tree);
    uint32_t *lmap = malloc((nl + 1) * sizeof(*lmap)), *smap = malloc((ns + 1) * sizeof(*smap));
    uint32_t *lorder = malloc((nl + 1) * sizeof(*lorder));
    uint32_t *sorder = malloc((ns + 1) * sizeof(*sorder));
    int rc = -1;
    if (!lmap || !smap || !lorder || !sorder)
        goto out;
    memset(lmap, 0xff, (nl + 1) * sizeof(*lmap));
    memset(smap, 0xff, (ns + 1) * sizeof(*smap));
    size_t nlo = 0, nso = 0;
    for (size_t i = 1; i < pr->n; i++) {
        uint32_t l = pr->loc[i];
        if (lmap[l] != NONE)
            continue;
        lmap[l] = (uint32_t)nlo;
        lorder[nlo++] = l;
        static const int words[] = {0, 1, 3}; /* function, file, module */
        for (int w = 0; w < 3; w++) {
            uint32_t sid = m->loc_key[l][words[w]];
            if (sid < ns && smap[sid] == NONE) {
                smap[sid] = (uint32_t)nso;
                sorder[nso++] = sid;
            }
        }
    }
    fputs("\"strings\":[", f);
    for (size_t i = 0; i < nso; i++) {
        if (i)
            fputc(',', f);
        trk_flamegraph_json_string(f, trk_ctree_string(&m->tree, sorder[i]), NAME_MAX_BYTES);
    }
    fputs("],\"locs\":{", f);
    /* Columns: the key words of a location (function, file, line, module)
     * with strings renumbered, then its kind. Synthetic locations keep
     * their kind in word 2 and have no file, line or module. */
    static const char *const cols[] = {"fn", "file", "line", "mod", "kind"};
    static const int word[] = {0, 1, 2, 3, -1};
    for (int c = 0; c < 5; c++) {
        fprintf(f, "%s\"%s\":[", c ? "," : "", cols[c]);
        for (size_t i = 0; i < nlo; i++) {
            const uint32_t *k = m->loc_key[lorder[i]];
            unsigned kind = m->loc_kind[lorder[i]];
            long v;
            if (c == 4)
                v = kind;
            else if (c == 0)
                v = smap[k[0]];
            else if (kind >= TRK_FG_PROCESS)
                v = c == 2 ? 0 : -1;
            else if (c == 2)
                v = k[2];
            else
                v = k[word[c]] < ns ? (long)smap[k[word[c]]] : -1;
            fprintf(f, i ? ",%ld" : "%ld", v);
        }
        fputc(']', f);
    }
    fputs("},\"nodes\":{\"up\":[", f);
    for (size_t i = 0; i < pr->n; i++)
        fprintf(f, i ? ",%" PRIu32 : "%" PRIu32, (uint32_t)i - pr->parent[i]);
    fputs("],\"loc\":[", f);
    for (size_t i = 0; i < pr->n; i++)
        fprintf(f, i ? ",%" PRIu32 : "%" PRIu32, i ? lmap[pr->loc[i]] : 0);
    fputs("],\"merged\":{", f);
    bool first = true;
    for (size_t i = 0; i < pr->n; i++)
        if (pr->merged[i]) {
            fprintf(f, "%s\"%zu\":%" PRIu32, first ? "" : ",", i, pr->merged[i]);
            first = false;
        }
    fputs("}},", f);
    rc = 0;
out:
    free(lmap);
    free(smap);
    free(lorder);
    free(sorder);
    return rc;
}

/* Writes an aggregate as columns named by cols (key words, NULL = left
 * out, then "bytes" and "count"); node ids (word 0) are written as deltas
 * from the previous row, which keeps them short. */
static void write_agg(FILE *f, const struct trk_fg_agg *g, const char *const cols[4])
{
    fputc('{', f);
    for (int c = 0; c < 4; c++) {
        if (!cols[c])
            continue;
        fprintf(f, "\"%s\":[", cols[c]);
        for (size_t i = 0; i < g->k.n; i++) {
            long v = (long)g->k.keys[i][c] - (c == 0 && i ? (long)g->k.keys[i - 1][0] : 0);
            fprintf(f, i ? ",%ld" : "%ld", v);
        }
        fputs("],", f);
    }
    json_u64s(f, "bytes", g->bytes, g->k.n, false);
    json_u64s(f, "count", g->count, g->k.n, true);
    fputc('}', f);
}

/* ---- Header and timeline ------------------------------------------------------ */

static void write_caps(FILE *f, const struct trk_report_set *s)
{
    fputs("\"caps\":[", f);
    for (size_t i = 0; i < s->n; i++) {
        const struct trk_report_capture *c = &s->v[i];
        const struct trk_reader_info *in = trk_reader_info(c->r);
        const struct trk_reader_status *st = trk_reader_status(c->r);
        const struct trk_stats *t = &c->prof.totals;
        fprintf(f, "%s{\"pid\":%" PRIu32 ",\"ppid\":%" PRIu32 ",\"argv\":[", i ? "," : "", in->pid,
                in->ppid);
        /* A command line can be huge (and a set can hold thousands): the
         * first capture's keeps 16 KiB of it, the others' 1 KiB. */
        size_t budget = i ? 1024 : 16384;
        for (int a = 0; a < in->argc; a++) {
            size_t len = strlen(in->argv[a]);
            if (a)
                fputc(',', f);
            if (budget == 0) {
                fprintf(f, "\"\\u2026 %d more\"", in->argc - a);
                break;
            }
            trk_flamegraph_json_string(f, in->argv[a], budget);
            budget -= len < budget ? len : budget;
        }
        fputs("],\"exe\":", f);
        trk_flamegraph_json_string(f, in->exe, 4096);
        if (t->python) {
            char v[32];
            fprintf(f, ",\"python\":\"%s\"", trk_python_version(t->python_version, v, sizeof(v)));
            /* pymalloc's objects were not recorded one by one: they live in
             * its arenas, anonymous mappings the heap view leaves out. The
             * page says so (and how to see them). */
            if ((t->python_flags & TRK_PYF_PYMALLOC) && !(t->python_flags & TRK_PYF_ALLOCATORS))
                fputs(",\"pymalloc_arenas\":true", f);
        }
        fprintf(f, ",\"leaks_at\":\"%s\"", t->leaks_at_script_end ? "script_end" : "exit");
        /* Sampled stacks (--sample-bytes): the page says so, and at what rate. */
        if (t->sample_bytes)
            fprintf(f, ",\"sample_bytes\":%" PRIu64, t->sample_bytes);
        fputs(",\"host\":", f);
        trk_flamegraph_json_string(f, in->host, 256);
        fprintf(f,
                ",\"start_ms\":%" PRIu64 ",\"duration_s\":%.6f,\"allocations\":%" PRIu64
                ",\"frees\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64 ",\"peak_heap\":%" PRIu64
                ",\"peak_heap_t\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64
                ",\"leaked_allocations\":%" PRIu64 ",\"temporary_allocations\":%" PRIu64
                ",\"temporary_bytes\":%" PRIu64 ",\"mmap_peak\":%" PRIu64
                ",\"mmap_leaked\":%" PRIu64 ",\"rss_peak\":%" PRIu64 ",\"threads\":%" PRIu64
                ",\"truncated\":%s,\"lost_events\":%" PRIu64 ",\"damaged\":%" PRIu64
                ",\"bytes_lost\":%" PRIu64 "}",
                in->start_realtime / 1000000, t->duration_s, t->allocations, t->frees,
                t->bytes_allocated, t->peak_heap_bytes, c->prof.peak_t_ns[TRK_SPACE_HEAP],
                t->leaked_bytes, t->leaked_allocations, c->prof.temporary_allocations,
                c->prof.temporary_bytes, t->mmap_peak_bytes, t->mmap_leaked_bytes,
                t->rss_peak_bytes, t->threads, st->truncated || t->truncated ? "true" : "false",
                t->lost_events,
                st->checksum_failures + st->bad_chunks + st->broken_streams + st->missing_chunks,
                st->bytes_lost);
    }
    fputs("],", f);
}

/* Memory over time. One capture: its own timeline. Several: their
 * timelines on one clock (CLOCK_MONOTONIC is system-wide), each resampled
 * to a common grid by its highest value per grid step, then summed, and
 * each process's own lines (flamegraph_procs.c): the page labels the sum. */
/* One capture's GPU devices, a line each ("gpu":[{"device":N,"live":[]}]).
 * With --gpu, the peak marked is the device's (the first selected one). */
static void write_gpu_lines(FILE *f, const struct trk_profile *p, const struct trk_report_opts *o,
                            uint64_t *peak_t, uint64_t *peak)
{
    fputs("\"gpu\":[", f);
    bool marked = false;
    for (size_t i = 0; i < p->ngpu_timeline; i++) {
        const struct trk_gpu_series *g = &p->gpu_timeline[i];
        fprintf(f, "%s{\"device\":%" PRId32 ",", i ? "," : "", g->device);
        json_u64s(f, "live", g->live, p->ntimeline, true);
        fputc('}', f);
        uint32_t space = trk_gpu_space(g->device);
        if (o->gpu && !marked && (o->device < 0 || o->device == g->device)) {
            *peak_t = p->peak_t_ns[space];
            *peak = p->peak_bytes[space];
            marked = true;
        }
    }
    fputs("],", f);
}

static int write_timeline(FILE *f, const struct trk_report_set *s, const struct trk_report_opts *o)
{
    const struct trk_profile *p0 = &s->v[0].prof;
    size_t n = s->n == 1 ? p0->ntimeline : TIMELINE_POINTS;
    uint64_t *v = calloc(4 * (n ? n : 1), sizeof(*v));
    if (!v)
        return -1;
    uint64_t *t = v, *heap = v + n, *mmap = v + 2 * n, *rss = v + 3 * n;
    uint64_t grid_origin = 0, grid_step = 1;
    uint64_t peak_t = p0->peak_t_ns[TRK_SPACE_HEAP], peak = p0->peak_bytes[TRK_SPACE_HEAP];
    /* With --mmap the graph shows heap + mappings at their own peak: the
     * marked instant is that one (the two spaces' peaks may lie apart). */
    if (o->mmap && !o->gpu)
        peak_t = p0->peak_hm_t_ns, peak = p0->peak_hm_bytes;
    if (s->n == 1) {
        for (size_t i = 0; i < n; i++) {
            const struct trk_timeline_point *q = &p0->timeline[i];
            t[i] = q->t_ns, heap[i] = q->heap, mmap[i] = q->mmap;
            rss[i] = q->rss_anon + q->rss_file;
        }
    } else {
        uint64_t origin = UINT64_MAX, end = 0;
        for (size_t i = 0; i < s->n; i++) {
            uint64_t b = trk_reader_info(s->v[i].r)->clock_base;
            origin = b < origin ? b : origin;
            end = b + s->v[i].prof.end_t_ns > end ? b + s->v[i].prof.end_t_ns : end;
        }
        uint64_t step = (end - origin) / n + 1;
        grid_origin = origin, grid_step = step;
        uint64_t *one = calloc(3 * n, sizeof(*one));
        if (!one) {
            free(v);
            return -1;
        }
        for (size_t i = 0; i < s->n; i++) {
            const struct trk_profile *p = &s->v[i].prof;
            uint64_t off = trk_reader_info(s->v[i].r)->clock_base - origin;
            trk_fg_resample(p, off, step, n, one);
            for (size_t g = 0; g < n; g++)
                heap[g] += one[g], mmap[g] += one[n + g], rss[g] += one[2 * n + g];
        }
        free(one);
        peak = 0;
        for (size_t g = 0; g < n; g++) {
            t[g] = g * step;
            uint64_t y = heap[g] + (o->mmap && !o->gpu ? mmap[g] : 0);
            if (y > peak)
                peak = y, peak_t = t[g];
        }
    }
    fputs("\"timeline\":{", f);
    json_u64s(f, "t", t, n, false);
    json_u64s(f, "heap", heap, n, false);
    json_u64s(f, "mmap", mmap, n, false);
    json_u64s(f, "rss", rss, n, false);
    if (s->n == 1) { /* several captures: host lines only, per process too */
        write_gpu_lines(f, p0, o, &peak_t, &peak);
    } else if (trk_fg_write_procs(f, s, grid_origin, grid_step, n) < 0) {
        free(v);
        return -1;
    }
    fprintf(f, "\"peak_t\":%" PRIu64 ",\"peak_heap\":%" PRIu64 "},", peak_t, peak);
    free(v);
    return 0;
}

/* ---- The page ------------------------------------------------------------------ */

/* Everything that does not change when the budget loop prunes harder. */
/* What the page shows, for its title: "heap", "heap+mmap", "gpu" (every
 * device) or "gpu N". */
static const char *spaces_label(const struct trk_report_opts *o, char *buf, size_t len)
{
    if (!o->gpu)
        return o->mmap ? "heap+mmap" : "heap";
    if (o->device < 0)
        return "gpu";
    snprintf(buf, len, "gpu %d", (int)o->device);
    return buf;
}

static int write_fixed(FILE *f, struct trk_fg_model *m, const struct trk_report_set *s,
                       const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo)
{
    char label[32];
    fprintf(f,
            "{\"format\":%d,\"tool\":\"tracker %s\",\"select\":\"%s\",\"inverted\":%s,"
            "\"temporal\":%s,\"threads_on\":%s,\"by_import\":%s,\"spaces\":\"%s\","
            "\"allocator_frames\":%s,\"frames\":\"%s\",",
            TRK_FG_DATA_FORMAT, TRK_VERSION, trk_select_name(fo->select),
            fo->inverted ? "true" : "false", fo->temporal ? "true" : "false",
            fo->threads ? "true" : "false", fo->by_import ? "true" : "false",
            spaces_label(o, label, sizeof(label)), o->keep_allocator_frames ? "true" : "false",
            /* Which frames Python stacks show (trk_frames_options): the
             * page says so, and how to get the others. */
            o->python_internals ? "internals"
            : o->native         ? "native"
                                : "python");
    if (fo->select == TRK_SEL_LEAKS && fo->leak_kinds && trk_report_leaks_by_class(s)) {
        /* The page says which leak kinds it counts (leak_select.c). */
        char kinds[96];
        fprintf(f, "\"leak_kinds\":\"%s\",",
                trk_leak_kinds_text(fo->leak_kinds, kinds, sizeof(kinds)));
    }
    write_caps(f, s);
    if (write_timeline(f, s, o) < 0)
        return -1;
    if (trk_fg_threads(m, s, o, fo) < 0)
        return -1;
    if (!fo->threads)
        return 0;
    fputs("\"threads\":[", f);
    for (size_t k = 0; k < m->nshown; k++) {
        const struct trk_report_capture *c = &s->v[m->shown[k].capture];
        const struct trk_thread_info *t = &c->prof.threads[m->shown[k].index];
        fprintf(f, "%s{\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"name\":", k ? "," : "",
                trk_reader_info(c->r)->pid, t->tid);
        trk_flamegraph_json_string(f, t->name, 256);
        fputc('}', f);
    }
    if (m->nothers)
        fprintf(f, "%s{\"pid\":0,\"tid\":0,\"name\":null,\"others\":%zu}", m->nshown ? "," : "",
                m->nothers);
    fputs("],", f);
    return 0;
}

/* Another memory space the page can switch to (device memory of a capture
 * with GPU events, drawn without --gpu): a tree of its own, pruned at the
 * page's threshold, with values for all threads (the thread list is the
 * host tree's). */
#define MAX_ALTS 9 /* every device, then up to 8 devices one by one */
struct alt {
    struct trk_report_opts o;
    struct trk_flamegraph_opts fo;
    struct trk_fg_model m;
    struct trk_fg_pruned pr;
    struct trk_fg_agg self;
    char label[16];
    const char *frames; /* NULL, or how Python stacks differ: "native", "noimports" */
};

struct page {
    struct trk_fg_model m;
    struct trk_fg_pruned pr;
    struct trk_fg_agg self, rows;
    struct trk_temporal t;
    char *fixed;
    size_t fixed_len;
    struct alt alt[MAX_ALTS];
    size_t nalt;
};

static size_t budget_of(const struct trk_flamegraph_opts *fo)
{
    return fo->max_bytes ? fo->max_bytes : 10000000 - 1;
}

/* The variable part for one threshold, into a fresh buffer. */
static int write_data(struct page *pg, const struct trk_report_set *s,
                      const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo,
                      double fraction, char **buf, size_t *len)
{
    if (trk_fg_prune(&pg->m, fraction, &pg->pr) < 0)
        return -1;
    if (fo->temporal) {
        if (trk_fg_temporal_rows(&pg->m, s, fo, &pg->pr, &pg->t, MAX_TEMPORAL_ROWS, &pg->rows) < 0)
            return -1;
    } else if (trk_fg_self_rows(&pg->m, s, o, fo, &pg->pr, &pg->self) < 0) {
        return -1;
    }
    FILE *f = open_memstream(buf, len);
    if (!f)
        return -1;
    fwrite(pg->fixed, 1, pg->fixed_len, f);
    fprintf(f,
            "\"merged\":{\"frames\":%zu,\"threshold_pct\":%.6g,\"asked_pct\":%.6g,"
            "\"budget\":%zu},",
            pg->pr.merged_frames, fraction * 100, fo->threshold_pct, budget_of(fo));
    int rc = write_locs(f, &pg->m, &pg->pr);
    const char *cols[4] = {"node", fo->threads ? "thread" : NULL, NULL, NULL};
    if (fo->temporal) {
        fprintf(f, "\"temporal\":{\"buckets\":%u,\"bucket_ns\":%" PRIu64 ",", pg->t.nbuckets,
                pg->t.bucket_ns);
        json_u64s(f, "high", pg->t.high, pg->t.nbuckets, false);
        json_u64s(f, "high_t", pg->t.high_t_ns, pg->t.nbuckets, false);
        fputs("\"rows\":", f);
        cols[2] = "from", cols[3] = "to";
        write_agg(f, &pg->rows, cols);
        fputs("}}", f);
    } else {
        fputs("\"self\":", f);
        write_agg(f, &pg->self, cols);
        if (pg->nalt)
            fputs(",\"alt\":[", f);
        static const char *const alt_cols[4] = {"node", NULL, NULL, NULL};
        for (size_t i = 0; i < pg->nalt && rc == 0; i++) {
            struct alt *a = &pg->alt[i];
            if (trk_fg_prune(&a->m, fraction, &a->pr) < 0 ||
                trk_fg_self_rows(&a->m, s, &a->o, &a->fo, &a->pr, &a->self) < 0) {
                rc = -1;
                break;
            }
            fprintf(f,
                    "%s{\"spaces\":\"%s\",%s%s%s\"merged\":{\"frames\":%zu,\"threshold_pct\":%.6g,"
                    "\"asked_pct\":%.6g,\"budget\":%zu},",
                    i ? "," : "", a->label, a->frames ? "\"frames\":\"" : "",
                    a->frames ? a->frames : "", a->frames ? "\"," : "", a->pr.merged_frames,
                    fraction * 100, fo->threshold_pct, budget_of(fo));
            rc = write_locs(f, &a->m, &a->pr);
            fputs("\"self\":", f);
            write_agg(f, &a->self, alt_cols);
            fputc('}', f);
        }
        fputs(pg->nalt ? "]}" : "}", f);
    }
    if (fclose(f) != 0 || rc < 0) {
        free(*buf);
        *buf = NULL;
        return -1;
    }
    return 0;
}

static void page_free(struct page *pg)
{
    for (size_t i = 0; i < pg->nalt; i++) {
        trk_fg_model_free(&pg->alt[i].m);
        trk_fg_pruned_free(&pg->alt[i].pr);
        trk_fg_agg_free(&pg->alt[i].self);
    }
    trk_fg_model_free(&pg->m);
    trk_fg_pruned_free(&pg->pr);
    trk_fg_agg_free(&pg->self);
    trk_fg_agg_free(&pg->rows);
    trk_temporal_free(&pg->t);
    free(pg->fixed);
}

/* Device memory beside the host tree: when the page shows host memory of a
 * capture set with GPU events, one tree of every device, and one per device
 * where there are several. Not with --temporal (heap only). The options
 * are copies that borrow o's arrays; they are never freed. */
static int build_alts(struct page *pg, const struct trk_report_set *s,
                      const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo)
{
    if (o->gpu || fo->temporal)
        return 0;
    /* A Python capture drawn Python first: the hybrid tree beside it, and
     * one without the import machinery, for the page's "Stacks" switch
     * (memray's Python-only/hybrid and hide-imports). Not beside device
     * trees: one switch of trees at a time. */
    bool python = false, gpu = false;
    for (size_t i = 0; i < s->n; i++) {
        python = python || s->v[i].prof.totals.python;
        gpu = gpu || s->v[i].prof.ngpu_timeline > 0;
    }
    if (python && !gpu && !o->native && !o->python_internals) {
        for (int k = 0; k < 2; k++) {
            if (k == 1 && o->hide_imports)
                break;
            struct alt *a = &pg->alt[pg->nalt++];
            a->o = *o;
            if (k == 0)
                a->o.native = true;
            else
                a->o.hide_imports = true;
            a->fo = *fo;
            a->fo.threads = false;
            a->frames = k == 0 ? "native" : "noimports";
            /* The page's own spaces (not --gpu here): as spaces_label. */
            snprintf(a->label, sizeof(a->label), "%s", o->mmap ? "heap+mmap" : "heap");
            if (trk_fg_model_build(&a->m, s, &a->o, &a->fo) < 0)
                return -1;
        }
        return 0;
    }
    int32_t dev[MAX_ALTS - 1];
    size_t ndev = 0;
    bool any = false;
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < s->v[i].prof.ngpu_timeline; k++) {
            int32_t d = s->v[i].prof.gpu_timeline[k].device;
            any = true;
            bool seen = d < 0;
            for (size_t j = 0; j < ndev && !seen; j++)
                seen = dev[j] == d;
            if (!seen && ndev < MAX_ALTS - 1)
                dev[ndev++] = d;
        }
    if (!any)
        return 0;
    for (size_t i = 0; i < (ndev > 1 ? ndev + 1 : 1); i++) {
        struct alt *a = &pg->alt[pg->nalt++];
        a->o = *o;
        a->o.gpu = true;
        a->o.mmap = false;
        a->o.device = i ? dev[i - 1] : -1;
        a->fo = *fo;
        a->fo.threads = false;
        /* As spaces_label words it: "gpu" or "gpu N". */
        if (i == 0)
            snprintf(a->label, sizeof(a->label), "gpu");
        else
            snprintf(a->label, sizeof(a->label), "gpu %d", (int)a->o.device);
        if (trk_fg_model_build(&a->m, s, &a->o, &a->fo) < 0)
            return -1;
    }
    return 0;
}

/* The second pass of --temporal, over a new reader of the first capture. */
static int temporal_pass(struct page *pg, const struct trk_report_set *s, char *err, size_t errlen)
{
    struct trk_reader *r;
    if (trk_reader_open(s->v[0].path, &r, err, errlen) < 0)
        return -1;
    int rc = trk_temporal_compute(r, &s->v[0].prof, NULL, &pg->t);
    if (rc == -1)
        snprintf(err, errlen, "%s", trk_reader_error(r));
    else if (rc < 0)
        snprintf(err, errlen, "out of memory");
    trk_reader_close(r);
    return rc < 0 ? -1 : 0;
}

int trk_flamegraph_write(FILE *f, const struct trk_report_set *s, const struct trk_report_opts *o,
                         const struct trk_flamegraph_opts *fo, struct trk_flamegraph_result *res,
                         char *err, size_t errlen)
{
    struct page pg = {0};
    char *buf = NULL;
    size_t len = 0;
    int rc = -1;
    memset(res, 0, sizeof(*res));
    if (trk_fg_model_build(&pg.m, s, o, fo) < 0)
        goto oom;
    if (build_alts(&pg, s, o, fo) < 0)
        goto oom;
    if (fo->temporal && temporal_pass(&pg, s, err, errlen) < 0)
        goto out;
    FILE *fx = open_memstream(&pg.fixed, &pg.fixed_len);
    if (!fx)
        goto oom;
    int fr = write_fixed(fx, &pg.m, s, o, fo);
    if (fclose(fx) != 0 || fr < 0)
        goto oom;

    size_t budget = budget_of(fo);
    size_t frame = trk_viewer_head_len + trk_viewer_tail_len;
    double fraction = fo->threshold_pct > 0 ? fo->threshold_pct / 100 : 0;
    for (;;) {
        free(buf);
        buf = NULL;
        if (write_data(&pg, s, o, fo, fraction, &buf, &len) < 0)
            goto oom;
        if (frame + len <= budget)
            break;
        /* Too big. Temporal rows usually dominate: fewer buckets first,
         * while there are more rows than frames and buckets to spare. */
        bool can_halve = fo->temporal && pg.t.nbuckets > 1, can_raise = fraction < 1;
        if (can_halve && (!can_raise || (pg.rows.k.n > 2 * pg.pr.n && pg.t.nbuckets > 8))) {
            if (trk_temporal_coarsen(&pg.t) < 0)
                goto oom;
        } else if (can_raise) {
            fraction = fraction < 1e-5 ? 1e-5 : fraction * 2 > 1 ? 1 : fraction * 2;
        } else {
            break; /* everything merged already: only the fixed part is left */
        }
    }
    size_t nodes = pg.pr.n, merged = pg.pr.merged_frames;
    for (size_t i = 0; i < pg.nalt; i++) { /* the summary line counts every tree */
        nodes += pg.alt[i].pr.n;
        merged += pg.alt[i].pr.merged_frames;
    }
    fwrite(trk_viewer_head, 1, trk_viewer_head_len, f);
    fwrite(buf, 1, len, f);
    fwrite(trk_viewer_tail, 1, trk_viewer_tail_len, f);
    *res = (struct trk_flamegraph_result){.bytes = frame + len,
                                          .nodes = nodes,
                                          .merged_frames = merged,
                                          .threshold_pct = fraction * 100,
                                          .buckets = fo->temporal ? pg.t.nbuckets : 0};
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    free(buf);
    page_free(&pg);
    return rc;
}
