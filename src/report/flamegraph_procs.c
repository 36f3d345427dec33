/* SPDX-License-Identifier: MIT
 *
 * flamegraph_procs.c - the page's timeline over several captures of one run
 * (flamegraph_procs.h). The sum of every process's RSS is not any process's
 * memory (shared pages count in each: 1.58 GiB against a largest process
 * of 789 MiB), so the page draws each process's own lines and labels the
 * sum for what it is. Must not: write the rest of the page (flamegraph.c).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/flamegraph_procs.h"
#include "report/report_internal.h"

void trk_fg_resample(const struct trk_profile *p, uint64_t off, uint64_t step, size_t n,
                     uint64_t *one)
{
    memset(one, 0, 3 * n * sizeof(*one));
    for (size_t k = 0; k < p->ntimeline; k++) {
        const struct trk_timeline_point *q = &p->timeline[k];
        uint64_t to = k + 1 < p->ntimeline ? p->timeline[k + 1].t_ns : p->end_t_ns;
        size_t g0 = (size_t)((off + q->t_ns) / step), g1 = (size_t)((off + to) / step);
        for (size_t g = g0; g <= g1 && g < n; g++) {
            uint64_t r = q->rss_anon + q->rss_file;
            one[g] = q->heap > one[g] ? q->heap : one[g];
            one[n + g] = q->mmap > one[n + g] ? q->mmap : one[n + g];
            one[2 * n + g] = r > one[2 * n + g] ? r : one[2 * n + g];
        }
    }
}

static void u64s(FILE *f, const char *name, const uint64_t *v, size_t n, bool last)
{
    fprintf(f, "\"%s\":[", name);
    for (size_t i = 0; i < n; i++)
        fprintf(f, i ? ",%" PRIu64 : "%" PRIu64, v[i]);
    fputs(last ? "]" : "],", f);
}

struct by_peak {
    size_t index;
    uint64_t peak;
};

static int cmp_peak(const void *pa, const void *pb)
{
    const struct by_peak *a = pa, *b = pb;
    if (a->peak != b->peak)
        return a->peak > b->peak ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

int trk_fg_write_procs(FILE *f, const struct trk_report_set *s, uint64_t origin, uint64_t step,
                       size_t n)
{
    uint64_t *one = calloc(3 * (n ? n : 1), sizeof(*one));
    struct by_peak *v = malloc(s->n * sizeof(*v));
    if (!one || !v) {
        free(one);
        free(v);
        return -1;
    }
    for (size_t i = 0; i < s->n; i++)
        v[i] = (struct by_peak){i, s->v[i].prof.peak_bytes[TRK_SPACE_HEAP]};
    qsort(v, s->n, sizeof(*v), cmp_peak);
    size_t shown = s->n < TRK_FG_PROCS_MAX ? s->n : TRK_FG_PROCS_MAX;
    /* The largest peaks get lines, drawn in the set's order (root first). */
    fputs("\"procs\":[", f);
    size_t written = 0;
    for (size_t i = 0; i < s->n; i++) {
        bool keep = false;
        for (size_t k = 0; k < shown; k++)
            keep = keep || v[k].index == i;
        if (!keep)
            continue;
        const struct trk_report_capture *c = &s->v[i];
        uint64_t off = trk_reader_info(c->r)->clock_base - origin;
        trk_fg_resample(&c->prof, off, step, n, one);
        fprintf(f, "%s{\"cap\":%zu,\"pid\":%" PRIu32 ",", written++ ? "," : "", i,
                trk_reader_info(c->r)->pid);
        u64s(f, "heap", one, n, false);
        u64s(f, "mmap", one + n, n, false);
        u64s(f, "rss", one + 2 * n, n, true);
        fputc('}', f);
    }
    fputs("],", f);
    if (shown < s->n)
        fprintf(f, "\"procs_omitted\":%zu,", s->n - shown);
    free(one);
    free(v);
    return 0;
}
