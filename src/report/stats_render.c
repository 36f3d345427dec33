/* SPDX-License-Identifier: MIT
 *
 * stats_render.c - the `tracker stats` report: the stats analysis
 * (analysis/stats.h) as an aligned table (a section per GPU device when
 * there was GPU memory, one for the Python interpreter) or as one JSON
 * object. Owns both formats (the JSON keys are a contract with scripts and
 * tests: "gpu" is agreed with the GPU integration tests). Must not: compute
 * anything itself (src/analysis does), exit, or print errors.
 */
#include <inttypes.h>
#include <string.h>

#include "analysis/stats.h"
#include "format/record.h"
#include "report/report_internal.h"
#include "report/report_json.h"
#include "report/sampling.h"

/* "1.2 MiB (1,234,567 bytes)"; small values stay exact. */
static const char *human(uint64_t v, char *buf, size_t len)
{
    char b[32], g[32];
    if (v < 1024)
        return trk_rfmt_bytes(v, buf, len);
    snprintf(buf, len, "%s (%s bytes)", trk_rfmt_bytes(v, b, sizeof(b)),
             trk_rfmt_grouped(v, g, sizeof(g)));
    return buf;
}

/* How the process ended, in words (the END record's reason). Without END
 * the signal is unknown: the capture cannot tell a crash from a worker its
 * parent terminated. */
static const char *ended(const struct trk_stats *s)
{
    if (!s->end_seen)
        return NULL;
    switch (s->end_reason) {
    case TRK_END_EXIT:
        return "exit";
    case TRK_END_EXEC:
        return "exec";
    case TRK_END_UEXIT:
        return "_exit";
    default:
        return "unknown";
    }
}

static void print_warnings(FILE *f, const struct trk_stats *s)
{
    char g[32], g2[32];
    if (s->truncated && s->ends_inside_chunk)
        fprintf(f, "warning: the capture is truncated inside a chunk (a write was cut short: the "
                   "disk was full, or the program is still running); totals cover what was "
                   "written\n");
    else if (s->truncated)
        fprintf(f, "warning: the capture has no end record: %s; totals cover what was written\n",
                TRK_REPORT_NO_END);
    if (s->heap_unseen)
        fprintf(f, "warning: the program defines its own malloc, which LD_PRELOAD cannot "
                   "interpose: its heap allocations were not seen\n");
    if (s->lost_events)
        fprintf(f, "warning: %s events were lost by the writer\n",
                trk_rfmt_grouped(s->lost_events, g, sizeof(g)));
    if (s->unwind_mismatches)
        fprintf(f, "warning: the unwinder check found %s stacks that differ from libunwind's\n",
                trk_rfmt_grouped(s->unwind_mismatches, g, sizeof(g)));
    if (s->checksum_failures)
        fprintf(f, "warning: %s corrupt chunks were skipped (checksum mismatch)\n",
                trk_rfmt_grouped(s->checksum_failures, g, sizeof(g)));
    if (s->bad_chunks)
        fprintf(f, "warning: %s unusable chunks were skipped\n",
                trk_rfmt_grouped(s->bad_chunks, g, sizeof(g)));
    if (s->broken_streams || s->bytes_lost)
        fprintf(f, "warning: %s thread streams broke; %s bytes of records could not be decoded\n",
                trk_rfmt_grouped(s->broken_streams, g, sizeof(g)),
                trk_rfmt_grouped(s->bytes_lost, g2, sizeof(g2)));
    if (s->inherited_missing)
        fprintf(f, "warning: forked child, %s; frees of inherited blocks count as unmatched\n",
                s->inherit_error);
    if (s->missing_chunks)
        fprintf(f,
                "warning: %s chunk%s the writer wrote %s missing (the capture is damaged); "
                "totals cover what is there\n",
                trk_rfmt_grouped(s->missing_chunks, g, sizeof(g)),
                s->missing_chunks == 1 ? "" : "s", s->missing_chunks == 1 ? "is" : "are");
    if (s->truncated || s->lost_events || s->unwind_mismatches || s->checksum_failures ||
        s->bad_chunks || s->broken_streams || s->bytes_lost || s->inherited_missing ||
        s->missing_chunks)
        fprintf(f, "\n");
}

#define ROW "  %-20s %s\n"

/* A device ordinal as a JSON key or a heading: "0", "-1" (unknown). */
static const char *device_key(int32_t device, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRId32, device);
    return buf;
}

static bool kind_occurred(const struct trk_gpu_kind_stats *k)
{
    return k->allocations != 0;
}

/* --device N: only that device's GPU figures; -1 = every device. */
static bool device_shown(const struct trk_stats_report_opts *o, const struct trk_gpu_stats *g)
{
    return o->device < 0 || g->device == o->device;
}

static void print_gpu_table(FILE *f, const struct trk_stats *s,
                            const struct trk_stats_report_opts *o)
{
    char a[96], b[96], c[96], d[96];
    for (size_t i = 0; i < s->ngpu; i++) {
        const struct trk_gpu_stats *g = &s->gpu[i];
        if (!device_shown(o, g))
            continue;
        if (g->device < 0)
            fprintf(f,
                    "\nGPU, device unknown (device memory: device, managed, async, VMM, array)\n");
        else
            fprintf(f, "\nGPU %" PRId32 " (device memory: device, managed, async, VMM, array)\n",
                    g->device);
        fprintf(f, ROW, "Allocations", trk_rfmt_grouped(g->allocations, a, sizeof(a)));
        fprintf(f, ROW, "Frees", trk_rfmt_grouped(g->frees, a, sizeof(a)));
        fprintf(f, ROW, "Bytes allocated", human(g->bytes_allocated, a, sizeof(a)));
        fprintf(f, ROW, "Peak live", human(g->peak_bytes, a, sizeof(a)));
        snprintf(c, sizeof(c), "%s in %s allocation%s", human(g->leaked_bytes, a, sizeof(a)),
                 trk_rfmt_grouped(g->leaked_allocations, b, sizeof(b)),
                 g->leaked_allocations == 1 ? "" : "s");
        fprintf(f, ROW, "Leaked", c);
        if (g->failed_allocations) {
            snprintf(c, sizeof(c), "%s (%s requested)",
                     trk_rfmt_grouped(g->failed_allocations, a, sizeof(a)),
                     trk_rfmt_bytes(g->failed_bytes, b, sizeof(b)));
            fprintf(f, ROW, "Failed allocations", c);
        }
        if (g->unmatched_frees)
            fprintf(f, ROW, "Unmatched frees", trk_rfmt_grouped(g->unmatched_frees, a, sizeof(a)));
        if (g->maps || g->unmaps) {
            snprintf(c, sizeof(c), "%s maps, %s unmaps", trk_rfmt_grouped(g->maps, a, sizeof(a)),
                     trk_rfmt_grouped(g->unmaps, b, sizeof(b)));
            fprintf(f, ROW, "VMM mappings", c);
        }
        if (g->driver_samples) {
            fprintf(f, ROW, "Driver-reported peak", human(g->driver_peak_bytes, a, sizeof(a)));
            if (g->driver_total_bytes)
                fprintf(f, ROW, "Device size", human(g->driver_total_bytes, a, sizeof(a)));
        }
        bool any = false;
        for (unsigned k = 1; k <= TRK_GPU_KIND_MAX; k++) {
            const struct trk_gpu_kind_stats *x = &g->by_kind[k];
            if (!kind_occurred(x))
                continue;
            if (!any)
                fprintf(f, "\n  %-20s %14s %12s %12s %12s\n", "By kind", "allocations", "bytes",
                        "peak", "leaked");
            any = true;
            bool memory = k != TRK_GPU_VA_RESERVE && k != TRK_GPU_HOST_REGISTER;
            fprintf(f, "  %-20s %14s %12s %12s %12s%s\n", trk_gpu_kind_name(k),
                    trk_rfmt_grouped(x->allocations, a, sizeof(a)),
                    trk_rfmt_bytes(x->bytes, b, sizeof(b)),
                    memory ? trk_rfmt_bytes(x->peak_bytes, c, sizeof(c)) : "-",
                    memory ? trk_rfmt_bytes(x->leaked_bytes, d, sizeof(d)) : "-",
                    memory ? "" : "  (not memory)");
        }
    }
}

static void print_driver_host(FILE *f, const struct trk_stats *s)
{
    char a[96], b[96];
    const struct trk_driver_host_stats *h = &s->gpu_driver_host;
    if (!h->allocations && !h->mmap_peak_bytes)
        return;
    fprintf(f, "\nHost memory allocated by the GPU driver (inside GPU calls)\n");
    fprintf(f, ROW, "Allocations", trk_rfmt_grouped(h->allocations, a, sizeof(a)));
    fprintf(f, ROW, "Bytes allocated", human(h->bytes_allocated, a, sizeof(a)));
    fprintf(f, ROW, "Peak live", human(h->peak_bytes, a, sizeof(a)));
    fprintf(f, ROW, "Leaked", human(h->leaked_bytes, a, sizeof(a)));
    if (h->mmap_peak_bytes) {
        fprintf(f, ROW, "Peak mapped", human(h->mmap_peak_bytes, b, sizeof(b)));
        fprintf(f, ROW, "Still mapped", human(h->mmap_leaked_bytes, b, sizeof(b)));
    }
}

/* The agreed "gpu" object: device-memory figures per device, by_kind with
 * the memory kinds that had an allocation. */
static void json_gpu(struct trk_rjson *j, const struct trk_stats *s,
                     const struct trk_stats_report_opts *o)
{
    char key[16];
    trk_rjson_begin_object(j, "gpu");
    for (size_t i = 0; i < s->ngpu; i++) {
        const struct trk_gpu_stats *g = &s->gpu[i];
        if (!device_shown(o, g))
            continue;
        trk_rjson_begin_object(j, device_key(g->device, key, sizeof(key)));
        trk_rjson_u64(j, "allocations", g->allocations);
        trk_rjson_u64(j, "frees", g->frees);
        trk_rjson_u64(j, "bytes_allocated", g->bytes_allocated);
        trk_rjson_u64(j, "peak_bytes", g->peak_bytes);
        trk_rjson_u64(j, "leaked_bytes", g->leaked_bytes);
        trk_rjson_u64(j, "leaked_allocations", g->leaked_allocations);
        trk_rjson_u64(j, "failed_allocations", g->failed_allocations);
        trk_rjson_u64(j, "driver_peak_bytes", g->driver_peak_bytes);
        trk_rjson_begin_object(j, "by_kind");
        for (unsigned k = TRK_GPU_DEVICE; k <= TRK_GPU_ARRAY; k++) {
            const struct trk_gpu_kind_stats *x = &g->by_kind[k];
            if (!kind_occurred(x))
                continue;
            trk_rjson_begin_object(j, trk_gpu_kind_name(k));
            trk_rjson_u64(j, "allocations", x->allocations);
            trk_rjson_u64(j, "bytes", x->bytes);
            trk_rjson_u64(j, "peak_bytes", x->peak_bytes);
            trk_rjson_u64(j, "leaked_bytes", x->leaked_bytes);
            trk_rjson_end_object(j);
        }
        trk_rjson_end_object(j);
        trk_rjson_end_object(j);
    }
    trk_rjson_end_object(j);
    const struct trk_driver_host_stats *h = &s->gpu_driver_host;
    trk_rjson_begin_object(j, "gpu_driver_host");
    trk_rjson_u64(j, "allocations", h->allocations);
    trk_rjson_u64(j, "bytes_allocated", h->bytes_allocated);
    trk_rjson_u64(j, "peak_bytes", h->peak_bytes);
    trk_rjson_u64(j, "leaked_bytes", h->leaked_bytes);
    trk_rjson_u64(j, "mmap_peak_bytes", h->mmap_peak_bytes);
    trk_rjson_u64(j, "mmap_leaked_bytes", h->mmap_leaked_bytes);
    trk_rjson_end_object(j);
}

/* How the interpreter allocated and what the capture holds of it. */
static const char *py_allocator_text(uint64_t flags)
{
    if (!(flags & TRK_PYF_PYMALLOC))
        return "malloc (PYTHONMALLOC=malloc): every object is a heap block";
    if (flags & TRK_PYF_ALLOCATORS)
        return "pymalloc, every object recorded (--python-allocators)";
    return "pymalloc: small objects live in 1 MiB arenas, recorded as mappings";
}

static void print_python(FILE *f, const struct trk_stats *s)
{
    char a[96], b[32];
    if (!s->python && !s->leaks_at_script_end)
        return;
    fprintf(f, "\nPython\n");
    if (s->python) {
        fprintf(f, ROW, "Version", trk_python_version(s->python_version, b, sizeof(b)));
        fprintf(f, ROW, "Stacks",
                s->python_flags & TRK_PYF_NATIVE ? "hybrid: Python and native frames"
                                                 : "Python frames only");
        fprintf(f, ROW, "Object allocator", py_allocator_text(s->python_flags));
    }
    fprintf(f, ROW, "Imports", trk_rfmt_grouped(s->python_imports, a, sizeof(a)));
    if (s->leaks_at_script_end) {
        snprintf(a, sizeof(a), "at %.3f s: leaks are what was live then",
                 (double)s->script_end_ns / 1e9);
        fprintf(f, ROW, "Script ended", a);
    }
}

/* "python": the interpreter, when the capture has one. */
static void json_python(struct trk_rjson *j, const struct trk_stats *s)
{
    char v[32];
    trk_rjson_string(j, "leaks_at", s->leaks_at_script_end ? "script_end" : "exit");
    if (!s->python && !s->leaks_at_script_end)
        return;
    trk_rjson_begin_object(j, "python");
    trk_rjson_string(j, "version",
                     s->python ? trk_python_version(s->python_version, v, sizeof(v)) : NULL);
    trk_rjson_u64(j, "version_hex", s->python_version);
    trk_rjson_bool(j, "native_frames", (s->python_flags & TRK_PYF_NATIVE) != 0);
    trk_rjson_bool(j, "python_allocators", (s->python_flags & TRK_PYF_ALLOCATORS) != 0);
    trk_rjson_bool(j, "pymalloc", (s->python_flags & TRK_PYF_PYMALLOC) != 0);
    trk_rjson_u64(j, "imports", s->python_imports);
    if (s->leaks_at_script_end)
        trk_rjson_double(j, "script_end_s", (double)s->script_end_ns / 1e9);
    trk_rjson_end_object(j);
}

/* The own-memory fields appended after the first ten (docs/FORMAT.md §2):
 * the own unwinder, the leak scan at exit, the pre-constructor log and the
 * sampling memos; each row only where the capture has its fields. */
static void print_own_later(FILE *f, const struct trk_stats *s)
{
    char a[96], b[96], c[192], d[40];
    const uint64_t *o = s->own;
    if (s->own_fields > TRK_OWN_UNWIND_PEAK) {
        snprintf(c, sizeof(c), "%s (at most %s; rule cache and module table)",
                 trk_rfmt_bytes(o[TRK_OWN_UNWIND_BYTES], a, sizeof(a)),
                 trk_rfmt_bytes(o[TRK_OWN_UNWIND_PEAK], b, sizeof(b)));
        fprintf(f, ROW, "Unwinder cache", c);
    }
    if (s->own_fields > TRK_OWN_LEAKSCAN_PEAK) {
        snprintf(c, sizeof(c), "%s at most, at exit (%s kept)",
                 trk_rfmt_bytes(o[TRK_OWN_LEAKSCAN_PEAK], a, sizeof(a)),
                 trk_rfmt_bytes(o[TRK_OWN_LEAKSCAN_BYTES], b, sizeof(b)));
        fprintf(f, ROW, "Leak scan", c);
    }
    if (s->own_fields > TRK_OWN_PREINIT_PEAK && o[TRK_OWN_PREINIT_PEAK]) {
        snprintf(c, sizeof(c), "%s at most (%s kept)",
                 trk_rfmt_bytes(o[TRK_OWN_PREINIT_PEAK], a, sizeof(a)),
                 trk_rfmt_bytes(o[TRK_OWN_PREINIT_BYTES], b, sizeof(b)));
        fprintf(f, ROW, "Before constructor", c);
    }
    uint64_t n = s->own_fields > TRK_OWN_SAMPLE_MEMOS ? o[TRK_OWN_SAMPLE_MEMOS] : 0;
    if (n) {
        snprintf(c, sizeof(c), "%s in %s threads (%s each)",
                 trk_rfmt_bytes(o[TRK_OWN_SAMPLE_BYTES], a, sizeof(a)),
                 trk_rfmt_grouped(n, b, sizeof(b)),
                 trk_rfmt_bytes(o[TRK_OWN_SAMPLE_BYTES] / n, d, sizeof(d)));
        fprintf(f, ROW, "Sampling memos", c);
    }
}

/* The tracker's own memory in the traced process (the END trailer's
 * figures, mapped bytes): only for captures that carry them. */
static void print_own(FILE *f, const struct trk_stats *s)
{
    char a[96], b[96], c[192], d[40];
    if (s->own_fields < TRK_OWN_BASE_FIELDS)
        return;
    const uint64_t *o = s->own;
    fprintf(f, "\nTracker's own memory (mapped in the traced process, at its end)\n");
    fprintf(f, ROW, "Peak", human(o[TRK_OWN_PEAK], a, sizeof(a)));
    fprintf(f, ROW, "Total at end", human(o[TRK_OWN_TOTAL], a, sizeof(a)));
    snprintf(c, sizeof(c), "%s (at most %s; %s generations started at the cap)",
             trk_rfmt_bytes(o[TRK_OWN_TABLES_NOW], a, sizeof(a)),
             trk_rfmt_bytes(o[TRK_OWN_TABLES_PEAK], b, sizeof(b)),
             trk_rfmt_grouped(o[TRK_OWN_ROTATIONS], d, sizeof(d)));
    fprintf(f, ROW, "Stack/code tables", c);
    uint64_t n = o[TRK_OWN_THREAD_STATES];
    snprintf(c, sizeof(c), "%s in %s thread states (%s each)",
             trk_rfmt_bytes(o[TRK_OWN_THREADS_BYTES], a, sizeof(a)),
             trk_rfmt_grouped(n, b, sizeof(b)),
             trk_rfmt_bytes(n ? o[TRK_OWN_THREADS_BYTES] / n : 0, d, sizeof(d)));
    fprintf(f, ROW, "Thread buffers", c);
    n = o[TRK_OWN_PYTHON_BLOCKS];
    if (n) {
        snprintf(c, sizeof(c), "%s in %s blocks (%s each)",
                 trk_rfmt_bytes(o[TRK_OWN_PYTHON_BYTES], a, sizeof(a)),
                 trk_rfmt_grouped(n, b, sizeof(b)),
                 trk_rfmt_bytes(o[TRK_OWN_PYTHON_BYTES] / n, d, sizeof(d)));
        fprintf(f, ROW, "Python per thread", c);
    }
    fprintf(f, ROW, "Writer buffers", human(o[TRK_OWN_WRITER_BYTES], a, sizeof(a)));
    print_own_later(f, s);
}

/* "tracker_memory": the same, null when the capture has none. */
static void json_own(struct trk_rjson *j, const struct trk_stats *s)
{
    if (s->own_fields < TRK_OWN_BASE_FIELDS) {
        trk_rjson_string(j, "tracker_memory", NULL);
        return;
    }
    const uint64_t *o = s->own;
    trk_rjson_begin_object(j, "tracker_memory");
    trk_rjson_u64(j, "peak_bytes", o[TRK_OWN_PEAK]);
    trk_rjson_u64(j, "total_bytes", o[TRK_OWN_TOTAL]);
    trk_rjson_u64(j, "tables_bytes", o[TRK_OWN_TABLES_NOW]);
    trk_rjson_u64(j, "tables_peak_bytes", o[TRK_OWN_TABLES_PEAK]);
    trk_rjson_u64(j, "table_rotations", o[TRK_OWN_ROTATIONS]);
    trk_rjson_u64(j, "thread_bytes", o[TRK_OWN_THREADS_BYTES]);
    trk_rjson_u64(j, "thread_states", o[TRK_OWN_THREAD_STATES]);
    trk_rjson_u64(j, "python_bytes", o[TRK_OWN_PYTHON_BYTES]);
    trk_rjson_u64(j, "python_blocks", o[TRK_OWN_PYTHON_BLOCKS]);
    trk_rjson_u64(j, "writer_bytes", o[TRK_OWN_WRITER_BYTES]);
    /* Fields appended later: null where the writer did not have them. */
    static const struct {
        enum trk_own_field f;
        const char *key;
    } later[] = {
        {TRK_OWN_UNWIND_BYTES, "unwinder_bytes"},
        {TRK_OWN_UNWIND_PEAK, "unwinder_peak_bytes"},
        {TRK_OWN_LEAKSCAN_BYTES, "leak_scan_bytes"},
        {TRK_OWN_LEAKSCAN_PEAK, "leak_scan_peak_bytes"},
        {TRK_OWN_PREINIT_BYTES, "preinit_bytes"},
        {TRK_OWN_PREINIT_PEAK, "preinit_peak_bytes"},
        {TRK_OWN_SAMPLE_BYTES, "sample_memo_bytes"},
        {TRK_OWN_SAMPLE_MEMOS, "sample_memos"},
    };
    for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++) {
        if (s->own_fields > later[i].f)
            trk_rjson_u64(j, later[i].key, o[later[i].f]);
        else
            trk_rjson_string(j, later[i].key, NULL);
    }
    trk_rjson_end_object(j);
}

static void print_table(FILE *f, const char *file, const struct trk_stats *s,
                        const struct trk_stats_report_opts *o)
{
    char a[96], b[96], c[96];
    print_warnings(f, s);
    fprintf(f, "%-22s %s\n", "Capture", file);
    fprintf(f, "%-22s %s\n", "Command", s->command);
    fprintf(f, "%-22s %" PRIu32 "\n", "PID", s->pid);
    fprintf(f, "%-22s %.3f s\n", "Duration", s->duration_s);
    fprintf(f, "%-22s %s\n", "Threads", trk_rfmt_grouped(s->threads, a, sizeof(a)));
    if (s->unwind_checked) /* only with TRACKER_UNWIND_CHECK */
        fprintf(f, "%-22s %s stacks compared with libunwind, %s differ\n", "Unwinder check",
                trk_rfmt_grouped(s->unwind_checked, a, sizeof(a)),
                trk_rfmt_grouped(s->unwind_mismatches, b, sizeof(b)));
    const char *how = ended(s);
    bool exec = how && s->end_reason == TRK_END_EXEC;
    if (exec)
        fprintf(f, "%-22s %s\n", "Ended",
                "by exec: the process became another program (its memory went with the "
                "image)");
    else if (how)
        fprintf(f, "%-22s by %s\n", "Ended", how);
    else
        fprintf(f, "%-22s %s\n", "Ended", "no end record (see the warning above)");
    trk_rsample_row(f, "%-22s %s\n", s->sample_bytes);
    if (o->gpu_only) {
        bool any = false;
        for (size_t i = 0; i < s->ngpu; i++)
            any |= device_shown(o, &s->gpu[i]);
        if (!any)
            fprintf(f, "\nno GPU memory was recorded%s\n", o->device >= 0 ? " on that device" : "");
        print_gpu_table(f, s, o);
        print_driver_host(f, s);
        return;
    }
    fprintf(f, "\nHeap (malloc family, requested sizes)\n");
    fprintf(f, ROW, "Allocations", trk_rfmt_grouped(s->allocations, a, sizeof(a)));
    fprintf(f, ROW, "Frees", trk_rfmt_grouped(s->frees, a, sizeof(a)));
    fprintf(f, ROW, "Bytes allocated", human(s->bytes_allocated, a, sizeof(a)));
    fprintf(f, ROW, "Peak live", human(s->peak_heap_bytes, a, sizeof(a)));
    snprintf(c, sizeof(c), "%s in %s blocks", human(s->leaked_bytes, a, sizeof(a)),
             trk_rfmt_grouped(s->leaked_allocations, b, sizeof(b)));
    fprintf(f, ROW,
            s->leaks_at_script_end ? "Leaked (script end)"
            : exec                 ? "Live at exec"
                                   : "Leaked",
            c);
    if (s->leaks_at_script_end) {
        snprintf(c, sizeof(c), "%s in %s blocks", human(s->exit_leaked_bytes, a, sizeof(a)),
                 trk_rfmt_grouped(s->exit_leaked_allocations, b, sizeof(b)));
        fprintf(f, ROW, "Live at exit", c);
    }
    fprintf(f, ROW, "Unmatched frees", trk_rfmt_grouped(s->unmatched_frees, a, sizeof(a)));
    fprintf(f, "\nAnonymous mappings (mmap family)\n");
    fprintf(f, ROW, "Peak mapped", human(s->mmap_peak_bytes, a, sizeof(a)));
    fprintf(f, ROW, "Still mapped", human(s->mmap_leaked_bytes, a, sizeof(a)));
    fprintf(f, "\nResident memory (sampled)\n");
    fprintf(f, ROW, "Peak RSS", human(s->rss_peak_bytes, a, sizeof(a)));
    fprintf(f, ROW, "Peak anonymous", human(s->rss_anon_peak_bytes, a, sizeof(a)));
    fprintf(f, ROW, "Peak file/shmem", human(s->rss_file_peak_bytes, a, sizeof(a)));

    bool any = false;
    for (unsigned k = 1; k <= TRK_ALLOC_KIND_MAX; k++) {
        const struct trk_alloc_stats *x = &s->by_allocator[k];
        if (!x->allocations && !x->frees && !x->bytes)
            continue;
        if (!any)
            fprintf(f, "\n  %-20s %14s %14s %12s\n", "By allocator", "allocations", "frees",
                    "bytes");
        any = true;
        fprintf(f, "  %-20s %14s %14s %12s\n", trk_alloc_kind_name(k),
                trk_rfmt_grouped(x->allocations, a, sizeof(a)),
                trk_rfmt_grouped(x->frees, b, sizeof(b)), trk_rfmt_bytes(x->bytes, c, sizeof(c)));
    }
    print_python(f, s);
    print_gpu_table(f, s, o);
    print_driver_host(f, s);
    print_own(f, s);
}

static void print_json(FILE *f, const struct trk_stats *s, const struct trk_stats_report_opts *o)
{
    struct trk_rjson j;
    trk_rjson_init(&j, f);
    trk_rjson_begin_object(&j, NULL);
    trk_rjson_u64(&j, "pid", s->pid);
    trk_rjson_string(&j, "command", s->command);
    trk_rjson_string(&j, "ended", ended(s)); /* null: no END record */
    trk_rsample_json(&j, s->sample_bytes);
    if (o->gpu_only) {
        /* --gpu: the run's identity and integrity, then the GPU figures. */
        trk_rjson_double(&j, "duration_s", s->duration_s);
        trk_rjson_bool(&j, "truncated", s->truncated);
        trk_rjson_u64(&j, "lost_events", s->lost_events);
        json_gpu(&j, s, o);
        trk_rjson_end_object(&j);
        trk_rjson_finish(&j);
        return;
    }
    trk_rjson_u64(&j, "allocations", s->allocations);
    trk_rjson_u64(&j, "frees", s->frees);
    trk_rjson_u64(&j, "bytes_allocated", s->bytes_allocated);
    trk_rjson_u64(&j, "peak_heap_bytes", s->peak_heap_bytes);
    trk_rjson_u64(&j, "leaked_bytes", s->leaked_bytes);
    trk_rjson_u64(&j, "leaked_allocations", s->leaked_allocations);
    trk_rjson_u64(&j, "exit_leaked_bytes", s->exit_leaked_bytes);
    trk_rjson_u64(&j, "exit_leaked_allocations", s->exit_leaked_allocations);
    if (s->leaks_classified) { /* docs/FORMAT.md §4a; absent without a leak scan */
        static const char *const names[TRK_LEAK_CLASS_MAX + 1] = {
            "unclassified", "definite", "indirect", "possible", "reachable"};
        trk_rjson_begin_object(&j, "leak_classes");
        for (unsigned k = 0; k <= TRK_LEAK_CLASS_MAX; k++) {
            trk_rjson_begin_object(&j, names[k]);
            trk_rjson_u64(&j, "bytes", s->leak_class_bytes[k]);
            trk_rjson_u64(&j, "count", s->leak_class_count[k]);
            trk_rjson_end_object(&j);
        }
        trk_rjson_u64(&j, "scan_flags", s->leak_scan_flags);
        trk_rjson_end_object(&j);
    }
    trk_rjson_u64(&j, "unmatched_frees", s->unmatched_frees);
    trk_rjson_u64(&j, "inherited_allocations", s->inherited_allocations);
    trk_rjson_u64(&j, "inherited_bytes", s->inherited_bytes);
    trk_rjson_bool(&j, "inherited_missing", s->inherited_missing);
    trk_rjson_u64(&j, "mmap_peak_bytes", s->mmap_peak_bytes);
    trk_rjson_u64(&j, "mmap_leaked_bytes", s->mmap_leaked_bytes);
    trk_rjson_u64(&j, "rss_peak_bytes", s->rss_peak_bytes);
    trk_rjson_u64(&j, "rss_anon_peak_bytes", s->rss_anon_peak_bytes);
    trk_rjson_u64(&j, "rss_file_peak_bytes", s->rss_file_peak_bytes);
    trk_rjson_u64(&j, "threads", s->threads);
    trk_rjson_double(&j, "duration_s", s->duration_s);
    trk_rjson_bool(&j, "truncated", s->truncated);
    if (s->heap_unseen) /* only then: older consumers see the object they know */
        trk_rjson_bool(&j, "heap_unseen", true);
    trk_rjson_u64(&j, "lost_events", s->lost_events);
    trk_rjson_u64(&j, "unwind_checked", s->unwind_checked);
    trk_rjson_u64(&j, "unwind_mismatches", s->unwind_mismatches);
    trk_rjson_u64(&j, "unwind_fallbacks", s->unwind_fallbacks);
    trk_rjson_u64(&j, "checksum_failures", s->checksum_failures);
    trk_rjson_u64(&j, "bad_chunks", s->bad_chunks);
    trk_rjson_u64(&j, "broken_streams", s->broken_streams);
    trk_rjson_u64(&j, "bytes_lost", s->bytes_lost);
    trk_rjson_u64(&j, "missing_chunks", s->missing_chunks);
    trk_rjson_bool(&j, "ends_inside_chunk", s->ends_inside_chunk);
    trk_rjson_u64(&j, "events", s->events);
    trk_rjson_begin_object(&j, "by_allocator");
    for (unsigned k = 1; k <= TRK_ALLOC_KIND_MAX; k++) {
        const struct trk_alloc_stats *x = &s->by_allocator[k];
        if (!x->allocations && !x->frees && !x->bytes)
            continue;
        trk_rjson_begin_object(&j, trk_alloc_kind_name(k));
        trk_rjson_u64(&j, "allocations", x->allocations);
        trk_rjson_u64(&j, "frees", x->frees);
        trk_rjson_u64(&j, "bytes", x->bytes);
        trk_rjson_end_object(&j);
    }
    trk_rjson_end_object(&j);
    json_python(&j, s);
    json_gpu(&j, s, o);
    json_own(&j, s);
    trk_rjson_end_object(&j);
    trk_rjson_finish(&j);
}

void trk_report_stats(FILE *f, const char *file, const struct trk_stats *s,
                      const struct trk_stats_report_opts *o)
{
    if (o->json)
        print_json(f, s, o);
    else
        print_table(f, file, s, o);
}
