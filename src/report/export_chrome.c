/* SPDX-License-Identifier: MIT
 *
 * export_chrome.c - the Trace Event JSON format that Perfetto and
 * chrome://tracing load: memory over time as counter tracks ("heap",
 * "anon mmap", "rss", and with a GPU selection each device's memory and
 * driver-reported usage) per process, process/thread names, and one instant
 * event carrying the selection's largest allocation sites. Timestamps are
 * microseconds since the earliest capture of the set started, so processes
 * of one run line up. Must not: compute values (profile.h does) or emit
 * events the importers reject (every event has ph, pid, tid, name and, but
 * for metadata, ts).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report/export.h"

#define TOP_SITES      20
#define STACK_TEXT_MAX 2048

struct writer {
    FILE *f;
    bool first; /* no event written yet */
};

static void begin_event(struct writer *w, const char *ph, const char *name, uint32_t pid,
                        uint32_t tid)
{
    fputs(w->first ? "\n" : ",\n", w->f);
    w->first = false;
    fprintf(w->f, "{\"ph\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"name\":", ph, pid, tid);
    trk_export_json_string(w->f, name);
}

/* ts in microseconds with nanosecond digits: the format's unit is the
 * microsecond, and allocations happen far closer together than that. */
static void put_us(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

static void put_ts(FILE *f, uint64_t ns)
{
    fputs(",\"ts\":", f);
    put_us(f, ns);
}

static void counter(struct writer *w, const char *name, uint32_t pid, uint64_t ns, uint64_t bytes)
{
    begin_event(w, "C", name, pid, pid);
    put_ts(w->f, ns);
    fprintf(w->f, ",\"args\":{\"bytes\":%" PRIu64 "}}", bytes);
}

static void metadata(struct writer *w, const char *what, uint32_t pid, uint32_t tid,
                     const char *name)
{
    begin_event(w, "M", what, pid, tid);
    fputs(",\"args\":{\"name\":", w->f);
    trk_export_json_string(w->f, name);
    fputs("}}", w->f);
}

/* Heap counter events: every timeline point, plus the exact peak at its own
 * timestamp (a point holds the maximum of its interval, stamped with the
 * interval's time, so without it the peak would show slightly off). */
static void heap_track(struct writer *w, const struct trk_profile *p, uint32_t pid, uint64_t off)
{
    uint64_t pt = p->peak_t_ns[TRK_SPACE_HEAP], pb = p->peak_bytes[TRK_SPACE_HEAP];
    bool peak_done = pb == 0;
    for (size_t i = 0; i < p->ntimeline; i++) {
        const struct trk_timeline_point *tp = &p->timeline[i];
        if (!peak_done && pt <= tp->t_ns) {
            counter(w, "heap", pid, off + pt, pb);
            peak_done = true;
            if (tp->t_ns == pt)
                continue;
        }
        counter(w, "heap", pid, off + tp->t_ns, tp->heap);
    }
    if (!peak_done)
        counter(w, "heap", pid, off + pt, pb);
}

static void other_tracks(struct writer *w, const struct trk_profile *p, uint32_t pid, uint64_t off)
{
    bool mmap = p->peak_bytes[TRK_SPACE_MMAP] > 0, rss = false;
    for (size_t i = 0; i < p->ntimeline; i++)
        if (p->timeline[i].rss_anon || p->timeline[i].rss_file)
            rss = true;
    for (size_t i = 0; mmap && i < p->ntimeline; i++)
        counter(w, "anon mmap", pid, off + p->timeline[i].t_ns, p->timeline[i].mmap);
    for (size_t i = 0; rss && i < p->ntimeline; i++) {
        const struct trk_timeline_point *tp = &p->timeline[i];
        /* Two args of one counter: viewers stack them into total RSS. */
        begin_event(w, "C", "rss", pid, pid);
        put_ts(w->f, off + tp->t_ns);
        fprintf(w->f, ",\"args\":{\"anon\":%" PRIu64 ",\"file\":%" PRIu64 "}}", tp->rss_anon,
                tp->rss_file);
    }
}

/* Each selected device's memory beside the host tracks, the exact peak at
 * its own timestamp as for the heap; and the driver's figure when sampled. */
static void gpu_tracks(struct writer *w, const struct trk_export *x, const struct trk_profile *p,
                       uint32_t pid, uint64_t off)
{
    for (size_t d = 0; d < p->ngpu_timeline; d++) {
        const struct trk_gpu_series *g = &p->gpu_timeline[d];
        uint32_t space = trk_gpu_space(g->device);
        const struct trk_gpu_stats *st = trk_stats_gpu(&p->totals, g->device);
        if (!trk_spaces_has(x->spaces, space) || !st)
            continue;
        char name[64], label[32];
        trk_space_label(space, TRK_GPU_DEVICE, label, sizeof(label));
        snprintf(name, sizeof(name), "%s memory", label);
        uint64_t pt = p->peak_t_ns[space], pb = p->peak_bytes[space];
        bool peak_done = pb == 0;
        for (size_t i = 0; i < p->ntimeline; i++) {
            uint64_t t = p->timeline[i].t_ns;
            if (!peak_done && pt <= t) {
                counter(w, name, pid, off + pt, pb);
                peak_done = true;
                if (t == pt)
                    continue;
            }
            counter(w, name, pid, off + t, g->live[i]);
        }
        if (!peak_done)
            counter(w, name, pid, off + pt, pb);
        if (!st->driver_samples)
            continue;
        snprintf(name, sizeof(name), "GPU %" PRId32 " driver-reported", g->device);
        for (size_t i = 0; i < p->ntimeline; i++)
            counter(w, name, pid, off + p->timeline[i].t_ns, g->driver[i]);
    }
}

/* The moment the selection peaked: the heap's, that of heap + mappings
 * together (one instant of the sum), or with a GPU selection the peak of
 * its largest device. */
static uint64_t selection_peak_t(const struct trk_export *x, const struct trk_profile *p)
{
    if (!(x->spaces & TRK_SPACES_GPU))
        return trk_spaces_heap_and_mmap(x->spaces) ? p->peak_hm_t_ns : p->peak_t_ns[TRK_SPACE_HEAP];
    uint64_t t = 0, best = 0;
    for (uint32_t sp = TRK_SPACE_GPU0; sp < TRK_SPACE_COUNT; sp++) {
        if (trk_spaces_has(x->spaces, sp) && p->peak_bytes[sp] > best) {
            best = p->peak_bytes[sp];
            t = p->peak_t_ns[sp];
        }
    }
    return t;
}

struct ranked {
    const struct trk_site *site;
    uint64_t bytes, count;
};

static int by_bytes(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->site->stack < y->site->stack ? -1 : x->site->stack > y->site->stack;
}

/* "outer;...;inner" of a site's stack, cut at STACK_TEXT_MAX. */
static const char *stack_text(const struct trk_export *x, const struct trk_export_capture *c,
                              uint32_t stack, struct trk_frame_buf *fb, char *out, size_t len)
{
    const struct trk_frame *fr;
    int n = trk_stack_frames(c->reader, c->sym, stack, &x->frames, fb, &fr);
    size_t o = 0;
    out[0] = '\0';
    for (int i = n - 1; i >= 0 && o + 1 < len; i--) {
        char name[512];
        int w = snprintf(out + o, len - o, "%s%s", o ? ";" : "",
                         trk_frame_name(&fr[i], name, sizeof(name)));
        if (w < 0)
            break;
        o += (size_t)w;
    }
    if (n <= 0)
        snprintf(out, len, "[no stack]");
    return out;
}

/* One instant event with the selection's totals and largest sites: at the
 * heap peak for the peak selection, else at the end of the capture. */
static int sites_event(struct writer *w, const struct trk_export *x,
                       const struct trk_export_capture *c, uint64_t off)
{
    const struct trk_profile *p = c->profile;
    struct ranked *rk = malloc((p->nsites ? p->nsites : 1) * sizeof(*rk));
    char *text = malloc(STACK_TEXT_MAX);
    if (!rk || !text) {
        free(rk);
        free(text);
        return -1;
    }
    size_t n = 0;
    uint64_t total = 0, count = 0;
    for (size_t i = 0; i < p->nsites; i++) {
        const struct trk_site *s = &p->sites[i];
        if (!trk_spaces_has(x->spaces, s->space))
            continue;
        uint64_t b, k;
        trk_site_value(s, x->select, x->spaces, &b, &k);
        total += b;
        count += k;
        if (b == 0)
            continue;
        rk[n++] = (struct ranked){.site = s, .bytes = b, .count = k};
    }
    if (n)
        qsort(rk, n, sizeof(*rk), by_bytes);

    uint64_t t = x->select == TRK_SEL_PEAK ? selection_peak_t(x, p) : p->end_t_ns;
    char name[64];
    snprintf(name, sizeof(name), "%s", trk_select_name(x->select));
    begin_event(w, "i", name, c->pid, c->pid);
    put_ts(w->f, off + t);
    fprintf(w->f, ",\"s\":\"p\",\"args\":{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"sites\":[",
            total, count);
    struct trk_frame_buf fb = {0};
    for (size_t i = 0; i < n && i < TOP_SITES; i++) {
        const struct trk_site *s = rk[i].site;
        uint32_t tid = s->thread < p->nthreads ? p->threads[s->thread].tid : 0;
        char space[32];
        fprintf(w->f,
                "%s{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"tid\":%" PRIu32
                ",\"space\":\"%s\",\"stack\":",
                i ? "," : "", rk[i].bytes, rk[i].count, tid,
                trk_space_label(s->space, s->kind, space, sizeof(space)));
        trk_export_json_string(w->f, stack_text(x, c, s->stack, &fb, text, STACK_TEXT_MAX));
        putc('}', w->f);
    }
    fputs("]}}", w->f);
    trk_frame_buf_free(&fb);
    free(rk);
    free(text);
    return 0;
}

int trk_export_chrome(FILE *f, const struct trk_export *x, char *err, size_t errlen)
{
    uint64_t origin = UINT64_MAX;
    for (size_t i = 0; i < x->ncaps; i++) {
        uint64_t b = trk_reader_info(x->caps[i].reader)->clock_base;
        if (b < origin)
            origin = b;
    }
    struct writer w = {.f = f, .first = true};
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    for (size_t i = 0; i < x->ncaps; i++) {
        const struct trk_export_capture *c = &x->caps[i];
        const struct trk_profile *p = c->profile;
        uint64_t off = trk_reader_info(c->reader)->clock_base - origin;
        char label[64];
        metadata(&w, "process_name", c->pid, c->pid,
                 c->command && *c->command ? c->command : "process");
        begin_event(&w, "M", "process_sort_index", c->pid, c->pid);
        fprintf(f, ",\"args\":{\"sort_index\":%zu}}", i);
        for (size_t k = 0; k < p->nthreads; k++) {
            const struct trk_thread_info *th = &p->threads[k];
            /* Threads that never allocated have nothing in the trace (the
             * tracker's own sampler among them). */
            if (th->allocations == 0 && th->tid != c->pid)
                continue;
            if (!th->name)
                snprintf(label, sizeof(label), "thread %" PRIu32, th->tid);
            metadata(&w, "thread_name", c->pid, th->tid, th->name ? th->name : label);
        }
        heap_track(&w, p, c->pid, off);
        other_tracks(&w, p, c->pid, off);
        if (x->spaces & TRK_SPACES_GPU)
            gpu_tracks(&w, x, p, c->pid, off);
        if (sites_event(&w, x, c, off) < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    fputs("\n],\n\"metadata\":{\"exporter\":", f);
    trk_export_json_string(f, x->exporter ? x->exporter : "tracker");
    fputs(",\"name\":", f);
    trk_export_json_string(f, x->name);
    fprintf(f, ",\"selection\":\"%s\"", trk_select_name(x->select));
    if (trk_export_sample_bytes(x)) /* the sites' figures are sampling estimates */
        fprintf(f, ",\"sample_bytes\":%" PRIu64, trk_export_sample_bytes(x));
    fputs(",\"processes\":[", f);
    for (size_t i = 0; i < x->ncaps; i++) {
        const struct trk_export_capture *c = &x->caps[i];
        const struct trk_profile *p = c->profile;
        uint64_t off = trk_reader_info(c->reader)->clock_base - origin;
        fprintf(f, "%s{\"pid\":%" PRIu32 ",\"command\":", i ? "," : "", c->pid);
        trk_export_json_string(f, c->command);
        fprintf(f, ",\"heap_peak_bytes\":%" PRIu64, p->peak_bytes[TRK_SPACE_HEAP]);
        fputs(",\"heap_peak_ts\":", f);
        put_us(f, off + p->peak_t_ns[TRK_SPACE_HEAP]);
        fprintf(f, ",\"mmap_peak_bytes\":%" PRIu64, p->peak_bytes[TRK_SPACE_MMAP]);
        if (x->spaces & TRK_SPACES_GPU) {
            fputs(",\"gpu\":[", f);
            bool first = true;
            for (size_t k = 0; k < p->totals.ngpu; k++) {
                const struct trk_gpu_stats *g = &p->totals.gpu[k];
                uint32_t sp = trk_gpu_space(g->device);
                if (!trk_spaces_has(x->spaces, sp))
                    continue;
                fprintf(f, "%s{\"device\":%" PRId32 ",\"peak_bytes\":%" PRIu64 ",\"peak_ts\":",
                        first ? "" : ",", g->device, g->peak_bytes);
                put_us(f, off + p->peak_t_ns[sp]);
                fprintf(f, ",\"driver_peak_bytes\":%" PRIu64 "}", g->driver_peak_bytes);
                first = false;
            }
            putc(']', f);
        }
        putc('}', f);
    }
    fputs("]}}\n", f);
    return 0;
}
