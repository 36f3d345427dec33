/* SPDX-License-Identifier: MIT
 *
 * report_text.c - the pieces every report prints the same way: byte counts,
 * location names, frames (text and JSON), the per-capture header with its
 * integrity warnings and Python interpreter, GPU device and memory-kind
 * names, and the PyTorch, leaks-at-script-end and pymalloc notes. Must
 * not: compute figures (the report files do).
 */
#include <inttypes.h>
#include <string.h>

#include "report/report_internal.h"
#include "report/sampling.h"

const char *trk_rfmt_grouped(uint64_t v, char *buf, size_t len)
{
    char digits[32];
    int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

const char *trk_rfmt_bytes(uint64_t v, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double d = (double)v;
    int u = 0;
    while (d >= 1024 && u < 6) {
        d /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " B", v);
    else
        snprintf(buf, len, "%.1f %s", d, units[u]);
    return buf;
}

const char *trk_rfmt_delta(int64_t v, char *buf, size_t len)
{
    char b[32];
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    snprintf(buf, len, "%s%s", v > 0 ? "+" : v < 0 ? "-" : "", trk_rfmt_bytes(mag, b, sizeof(b)));
    return buf;
}

int64_t trk_rdelta(uint64_t before, uint64_t after)
{
    if (after >= before)
        return after - before > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(after - before);
    return before - after > (uint64_t)INT64_MAX ? -INT64_MAX : -(int64_t)(before - after);
}

const char *trk_rloc_name(const struct trk_rloc *l, char *buf, size_t len)
{
    if (l->function)
        return l->function;
    if (l->module && *l->module)
        snprintf(buf, len, "%s+0x%" PRIx64, trk_rbasename(l->module), l->offset);
    else
        snprintf(buf, len, "0x%" PRIx64, l->offset);
    return buf;
}

void trk_rprint_loc(FILE *f, const struct trk_rloc *l)
{
    char name[300];
    fputs(trk_rloc_name(l, name, sizeof(name)), f);
    if (l->file && l->line)
        fprintf(f, " (%s:%" PRIu32 ")", trk_display_path(l->file), l->line);
    else if (l->file)
        fprintf(f, " (%s)", trk_display_path(l->file));
    if (l->module && *l->module)
        fprintf(f, " [%s]", trk_rbasename(l->module));
}

void trk_rjson_loc(struct trk_rjson *j, const struct trk_rloc *l)
{
    char name[300];
    trk_rjson_begin_object(j, NULL);
    trk_rjson_string(j, "function", trk_rloc_name(l, name, sizeof(name)));
    trk_rjson_string(j, "file", l->file);
    trk_rjson_u64(j, "line", l->line);
    trk_rjson_string(j, "module", l->module);
    if (l->python)
        trk_rjson_bool(j, "python", true);
    trk_rjson_end_object(j);
}

/* A run that forked a hundred children needs no hundred header lines;
 * integrity warnings still come for every capture. */
#define HEADERS_SHOWN 10

const char *trk_rgpu_name(uint32_t space, char *buf, size_t len)
{
    int32_t d = trk_space_device(space);
    if (d < 0)
        snprintf(buf, len, "GPU ?");
    else
        snprintf(buf, len, "GPU %" PRId32, d);
    return buf;
}

const char *trk_rgpu_kind_text(unsigned kind)
{
    switch (kind) {
    case TRK_GPU_DEVICE:
        return "device memory";
    case TRK_GPU_MANAGED:
        return "managed memory";
    case TRK_GPU_PINNED_HOST:
        return "pinned host memory";
    case TRK_GPU_ASYNC:
        return "pool (async) memory";
    case TRK_GPU_VMM_PHYS:
        return "VMM physical memory";
    case TRK_GPU_IMPORTED:
        return "imported memory";
    case TRK_GPU_ARRAY:
        return "array memory";
    default:
        return "GPU memory";
    }
}

/* "pid N: command - GPU 0 peak device memory X at T s; GPU 1 ... of E s":
 * every selected device that had GPU memory or a driver sample. */
static void gpu_header_line(FILE *f, const struct trk_report_capture *c,
                            const struct trk_report_opts *o)
{
    char a[32], b[32], g[48], name[16];
    const struct trk_profile *p = &c->prof;
    uint32_t sel = trk_report_spaces(o);
    fputs(c->label, f);
    int shown = 0;
    for (size_t i = 0; i < p->totals.ngpu; i++) {
        const struct trk_gpu_stats *d = &p->totals.gpu[i];
        uint32_t space = trk_gpu_space(d->device);
        if (!trk_spaces_has(sel, space))
            continue;
        uint64_t peak = d->peak_bytes;
        if (peak >= 1024)
            snprintf(g, sizeof(g), " (%s bytes)", trk_rfmt_grouped(peak, b, sizeof(b)));
        else
            g[0] = '\0';
        fprintf(f, "%s%s peak device memory %s%s at %.3f s", shown ? "; " : " - ",
                trk_rgpu_name(space, name, sizeof(name)), trk_rfmt_bytes(peak, a, sizeof(a)), g,
                (double)p->peak_t_ns[space] / 1e9);
        if (d->driver_samples)
            fprintf(f, " (driver-reported peak %s)",
                    trk_rfmt_bytes(d->driver_peak_bytes, a, sizeof(a)));
        shown++;
    }
    if (shown)
        fprintf(f, " of %.3f s\n", (double)p->end_t_ns / 1e9);
    else
        fprintf(f, " - no GPU memory recorded%s\n", o->device >= 0 ? " on this device" : "");
}

/* "; Python 3.11.2 (hybrid stacks, pymalloc arenas only)": what the
 * interpreter let the capture see. With --native, that an object's native
 * frames stop at the innermost Python frame (src/python/py_stack.c): the
 * frames under it, which malloc's blocks show, were not recorded. */
static void python_info(FILE *f, const struct trk_stats *t, bool native)
{
    char v[32];
    if (!t->python)
        return;
    uint64_t fl = t->python_flags;
    fprintf(f, "; Python %s (%s, %s)", trk_python_version(t->python_version, v, sizeof(v)),
            fl & TRK_PYF_NATIVE ? "hybrid stacks" : "Python frames only",
            !(fl & TRK_PYF_PYMALLOC)  ? "malloc for objects"
            : fl & TRK_PYF_ALLOCATORS ? "pymalloc objects traced"
                                      : "pymalloc arenas only");
    if (native && (fl & TRK_PYF_NATIVE) && (fl & TRK_PYF_PYMALLOC) && (fl & TRK_PYF_ALLOCATORS))
        fputs("; an object's native frames end at its innermost Python frame", f);
}

static void header_line(FILE *f, const struct trk_report_capture *c,
                        const struct trk_report_opts *o)
{
    char a[32], b[32], g[48];
    const struct trk_profile *p = &c->prof;
    if (o->gpu) {
        gpu_header_line(f, c, o);
        return;
    }
    uint64_t peak = p->peak_bytes[TRK_SPACE_HEAP];
    /* The exact figure too, once the short one rounds. */
    if (peak >= 1024)
        snprintf(g, sizeof(g), " (%s bytes)", trk_rfmt_grouped(peak, b, sizeof(b)));
    else
        g[0] = '\0';
    fprintf(f, "%s - peak heap %s%s at %.3f s of %.3f s", c->label,
            trk_rfmt_bytes(peak, a, sizeof(a)), g, (double)p->peak_t_ns[TRK_SPACE_HEAP] / 1e9,
            (double)p->end_t_ns / 1e9);
    if (o->mmap) {
        fprintf(f, ", peak mapped %s at %.3f s",
                trk_rfmt_bytes(p->peak_bytes[TRK_SPACE_MMAP], b, sizeof(b)),
                (double)p->peak_t_ns[TRK_SPACE_MMAP] / 1e9);
        /* What --mmap reports show: the two together, at one instant. */
        fprintf(f, ", peak heap + mapped %s (%s bytes) at %.3f s",
                trk_rfmt_bytes(p->peak_hm_bytes, a, sizeof(a)),
                trk_rfmt_grouped(p->peak_hm_bytes, b, sizeof(b)), (double)p->peak_hm_t_ns / 1e9);
    }
    python_info(f, &p->totals, o->native);
    fputc('\n', f);
}

static void warning_lines(FILE *f, const struct trk_report_capture *c)
{
    char a[32], b[32];
    const struct trk_stats *t = &c->prof.totals;
    if (t->truncated && t->ends_inside_chunk)
        fprintf(f,
                "warning: %s is truncated inside a chunk (a write was cut short: the disk was "
                "full, or the program is still running); figures cover what was written\n",
                c->path);
    else if (t->truncated)
        fprintf(f, "warning: %s has no end record: %s; figures cover what was written\n", c->path,
                TRK_REPORT_NO_END);
    if (t->lost_events)
        fprintf(f, "warning: %s: %s events were lost by the writer\n", c->path,
                trk_rfmt_grouped(t->lost_events, a, sizeof(a)));
    if (t->checksum_failures || t->bad_chunks || t->broken_streams || t->missing_chunks) {
        char m[64];
        m[0] = '\0';
        if (t->missing_chunks)
            snprintf(m, sizeof(m), ", %s chunk%s missing",
                     trk_rfmt_grouped(t->missing_chunks, a, sizeof(a)),
                     t->missing_chunks == 1 ? "" : "s");
        fprintf(f,
                "warning: %s is damaged: %s corrupt chunks skipped, %s thread streams "
                "broke%s\n",
                c->path, trk_rfmt_grouped(t->checksum_failures + t->bad_chunks, a, sizeof(a)),
                trk_rfmt_grouped(t->broken_streams, b, sizeof(b)), m);
    }
    if (trk_reader_info(c->r)->options & TRK_OPT_HEAP_UNSEEN)
        fprintf(f,
                "warning: %s: the program defines its own malloc, which LD_PRELOAD cannot "
                "interpose: its heap allocations were not seen\n",
                c->path);
}

bool trk_report_heap_unseen(const struct trk_report_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (trk_reader_info(s->v[i].r)->options & TRK_OPT_HEAP_UNSEEN)
            return true;
    return false;
}

void trk_rprint_leaks_note(FILE *f, const struct trk_report_set *const *sets, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < sets[i]->n; k++) {
            const struct trk_report_capture *c = &sets[i]->v[k];
            const struct trk_stats *t = &c->prof.totals;
            if (!t->leaks_at_script_end)
                continue;
            fprintf(f,
                    "note: leaks are what was live when the Python script ended (pid %u at "
                    "%.3f s); frees of the interpreter's teardown do not hide them\n",
                    t->pid, (double)t->script_end_ns / 1e9);
            return;
        }
    }
}

void trk_rprint_pymalloc_hint(FILE *f, const struct trk_report_set *s)
{
    for (size_t k = 0; k < s->n; k++) {
        const struct trk_stats *t = &s->v[k].prof.totals;
        if (!t->python || !(t->python_flags & TRK_PYF_PYMALLOC) ||
            (t->python_flags & TRK_PYF_ALLOCATORS))
            continue;
        fputs("hint: pymalloc's small objects were not traced: they live in 1 MiB arenas "
              "(anonymous mappings, see --mmap), so their leaks show as arena-sized blocks; "
              "record with `tracker run --python-allocators` (or PYTHONMALLOC=malloc) to see "
              "each object\n",
              f);
        return;
    }
}

void trk_rprint_torch_note(FILE *f, const struct trk_report_set *const *sets, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (trk_report_set_uses_torch_cuda(sets[i])) {
            fputs("note: PyTorch's caching allocator holds segments, not tensors: run with "
                  "`tracker run --cuda-no-caching` for tensor-level attribution\n",
                  f);
            return;
        }
    }
}

void trk_rprint_headers(FILE *f, const struct trk_report_set *s, const struct trk_report_opts *o)
{
    for (size_t i = 0; i < s->n; i++) {
        if (i < HEADERS_SHOWN)
            header_line(f, &s->v[i], o);
        else if (i == HEADERS_SHOWN)
            fprintf(f, "... and %zu more captures of the set\n", s->n - HEADERS_SHOWN);
        warning_lines(f, &s->v[i]);
    }
    /* Sampled stacks change what every per-stack figure below means. */
    trk_rsample_line(f, trk_report_set_sample_bytes(s));
}
