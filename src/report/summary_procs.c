/* SPDX-License-Identifier: MIT
 *
 * summary_procs.c - the per-process table of `tracker summary` over several
 * captures of one run (fork and exec children, Pool workers): one row per
 * capture with its pid, command, peak heap, peak RSS and leaks, or per
 * (capture, device) with --gpu. Each peak is that process's (and device's)
 * own instant: peaks of different processes or devices are never added into
 * one figure, which would be a moment that never existed (issue 10 §4-5).
 * Must not: compute figures (profile.c does), print the location table.
 */
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"
#include "report/summary_procs.h"

/* GPU devices with memory in the selection, over the set. */
static unsigned gpu_devices(const struct trk_report_set *s, const struct trk_report_opts *o)
{
    uint32_t sel = trk_report_spaces(o), seen = 0;
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < s->v[i].prof.totals.ngpu; k++) {
            uint32_t sp = trk_gpu_space(s->v[i].prof.totals.gpu[k].device);
            if (trk_spaces_has(sel, sp) && s->v[i].prof.totals.gpu[k].peak_bytes)
                seen |= 1u << sp;
        }
    return (unsigned)__builtin_popcount(seen);
}

const char *trk_peak_phrase(const struct trk_report_set *s, const struct trk_report_opts *o)
{
    bool procs = s->n > 1, devs = o->gpu && gpu_devices(s, o) > 1;
    if (procs && devs)
        return "each process's and device's own peak";
    if (devs)
        return "each device's own peak";
    if (procs)
        return "each process's own peak";
    return "the peak";
}

/* The figure rows are ranked by: the heap peak, or with --gpu the largest
 * selected device's peak. */
static uint64_t rank_of(const struct trk_report_capture *c, const struct trk_report_opts *o)
{
    if (!o->gpu)
        return c->prof.peak_bytes[TRK_SPACE_HEAP];
    uint64_t best = 0;
    uint32_t sel = trk_report_spaces(o);
    for (size_t k = 0; k < c->prof.totals.ngpu; k++) {
        const struct trk_gpu_stats *g = &c->prof.totals.gpu[k];
        if (trk_spaces_has(sel, trk_gpu_space(g->device)) && g->peak_bytes > best)
            best = g->peak_bytes;
    }
    return best;
}

struct ranked {
    size_t index;
    uint64_t rank;
};

static int cmp_ranked(const void *pa, const void *pb)
{
    const struct ranked *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank > b->rank ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* The captures to show, largest first, at most limit (0: all). Returns the
 * number shown, NULL order on allocation failure (then: set order). */
static size_t order(const struct trk_report_set *s, const struct trk_report_opts *o, size_t limit,
                    struct ranked **out)
{
    struct ranked *v = malloc((s->n ? s->n : 1) * sizeof(*v));
    if (v) {
        for (size_t i = 0; i < s->n; i++)
            v[i] = (struct ranked){.index = i, .rank = rank_of(&s->v[i], o)};
        qsort(v, s->n, sizeof(*v), cmp_ranked);
    }
    *out = v;
    return limit && limit < s->n ? limit : s->n;
}

/* The command without the label's "pid N: ". */
static const char *command_of(const struct trk_report_capture *c)
{
    const char *p = strstr(c->label, ": ");
    return p ? p + 2 : c->label;
}

static void text_host_row(FILE *out, const struct trk_report_capture *c)
{
    char a[32], b[32], d[32], e[32];
    const struct trk_stats *t = &c->prof.totals;
    fprintf(out, "%8u %10s %10s %10s %10s  %s\n", t->pid,
            trk_rfmt_bytes(c->prof.peak_bytes[TRK_SPACE_HEAP], a, sizeof(a)),
            t->rss_peak_bytes ? trk_rfmt_bytes(t->rss_peak_bytes, b, sizeof(b)) : "-",
            trk_rfmt_bytes(t->leaked_bytes, d, sizeof(d)),
            trk_rfmt_grouped(t->leaked_allocations, e, sizeof(e)), command_of(c));
}

static void text_gpu_rows(FILE *out, const struct trk_report_capture *c,
                          const struct trk_report_opts *o)
{
    char a[32], b[32], d[32], name[16];
    const struct trk_stats *t = &c->prof.totals;
    uint32_t sel = trk_report_spaces(o);
    for (size_t k = 0; k < t->ngpu; k++) {
        const struct trk_gpu_stats *g = &t->gpu[k];
        uint32_t sp = trk_gpu_space(g->device);
        if (!trk_spaces_has(sel, sp))
            continue;
        fprintf(out, "%8u %6s %10s %10s %10s  %s\n", t->pid, trk_rgpu_name(sp, name, sizeof(name)),
                trk_rfmt_bytes(g->peak_bytes, a, sizeof(a)),
                g->driver_samples ? trk_rfmt_bytes(g->driver_peak_bytes, b, sizeof(b)) : "-",
                trk_rfmt_bytes(g->leaked_bytes, d, sizeof(d)), command_of(c));
    }
}

void trk_summary_print_processes(FILE *out, const struct trk_report_set *s,
                                 const struct trk_report_opts *o, size_t limit)
{
    if (s->n < 2)
        return; /* the header line says it all */
    struct ranked *v;
    size_t shown = order(s, o, limit, &v);
    fprintf(out,
            "\nprocesses (each %s is that process's own, at its own instant; they are not "
            "added up)\n",
            o->gpu ? "device's peak" : "peak");
    if (o->gpu)
        fprintf(out, "%8s %6s %10s %10s %10s  %s\n", "pid", "device", "peak", "driver", "leaked",
                "command");
    else
        fprintf(out, "%8s %10s %10s %10s %10s  %s\n", "pid", "peak heap", "peak RSS", "leaked",
                "blocks", "command");
    for (size_t i = 0; i < shown; i++) {
        const struct trk_report_capture *c = &s->v[v ? v[i].index : i];
        if (o->gpu)
            text_gpu_rows(out, c, o);
        else
            text_host_row(out, c);
    }
    if (shown < s->n)
        fprintf(out, "... %zu more processes (-n 0 shows all)\n", s->n - shown);
    free(v);
}

static void json_gpu(struct trk_rjson *j, const struct trk_report_capture *c,
                     const struct trk_report_opts *o)
{
    const struct trk_stats *t = &c->prof.totals;
    uint32_t sel = trk_report_spaces(o);
    trk_rjson_begin_object(j, "gpu");
    for (size_t k = 0; k < t->ngpu; k++) {
        const struct trk_gpu_stats *g = &t->gpu[k];
        if (!trk_spaces_has(sel, trk_gpu_space(g->device)))
            continue;
        char key[16];
        snprintf(key, sizeof(key), "%d", (int)g->device);
        trk_rjson_begin_object(j, key);
        trk_rjson_u64(j, "peak_bytes", g->peak_bytes);
        trk_rjson_u64(j, "driver_peak_bytes", g->driver_peak_bytes);
        trk_rjson_u64(j, "leaked_bytes", g->leaked_bytes);
        trk_rjson_end_object(j);
    }
    trk_rjson_end_object(j);
}

void trk_summary_json_processes(struct trk_rjson *j, const struct trk_report_set *s,
                                const struct trk_report_opts *o, size_t limit)
{
    struct ranked *v;
    size_t shown = order(s, o, limit, &v);
    trk_rjson_begin_array(j, "processes");
    for (size_t i = 0; i < shown; i++) {
        const struct trk_report_capture *c = &s->v[v ? v[i].index : i];
        const struct trk_stats *t = &c->prof.totals;
        trk_rjson_begin_object(j, NULL);
        trk_rjson_u64(j, "pid", t->pid);
        trk_rjson_string(j, "command", command_of(c));
        trk_rjson_string(j, "capture", c->path);
        trk_rjson_u64(j, "peak_heap_bytes", c->prof.peak_bytes[TRK_SPACE_HEAP]);
        if (o->mmap) {
            trk_rjson_u64(j, "peak_mmap_bytes", c->prof.peak_bytes[TRK_SPACE_MMAP]);
            trk_rjson_u64(j, "peak_heap_mmap_bytes", c->prof.peak_hm_bytes);
        }
        if (t->rss_peak_bytes)
            trk_rjson_u64(j, "peak_rss_bytes", t->rss_peak_bytes);
        trk_rjson_u64(j, "leaked_bytes", t->leaked_bytes);
        trk_rjson_u64(j, "leaked_allocations", t->leaked_allocations);
        if (o->gpu)
            json_gpu(j, c, o);
        trk_rjson_end_object(j);
    }
    trk_rjson_end_array(j);
    if (shown < s->n)
        trk_rjson_u64(j, "processes_omitted", s->n - shown);
    free(v);
}
