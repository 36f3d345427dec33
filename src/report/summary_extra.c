/* SPDX-License-Identifier: MIT
 *
 * summary_extra.c - the two small tables at the end of `tracker summary`:
 * heap allocation sizes (log2 histogram) and the per-thread split, summed
 * over the captures of the set. Host memory only: GPU views skip them.
 * Must not: aggregate events (the profile did), or allocate.
 */
#include "report/report.h"
#include "report/report_internal.h"
#include "report/report_json.h"
#include "report/summary_extra.h"

/* Bucket b holds sizes in [2^(b-1), 2^b); bucket 0 is size 0. */
static uint64_t bucket_min(unsigned b)
{
    return b == 0 ? 0 : (uint64_t)1 << (b - 1);
}

static uint64_t bucket_max(unsigned b)
{
    return b == 0 ? 0 : b >= 64 ? UINT64_MAX : ((uint64_t)1 << b) - 1;
}

static void sum_hist(const struct trk_report_set *s, uint64_t *count, uint64_t *bytes)
{
    for (unsigned b = 0; b < TRK_HIST_BUCKETS; b++)
        count[b] = bytes[b] = 0;
    for (size_t ci = 0; ci < s->n; ci++) {
        const struct trk_profile *p = &s->v[ci].prof;
        for (unsigned b = 0; b < TRK_HIST_BUCKETS; b++) {
            count[b] += p->hist_count[b];
            bytes[b] += p->hist_bytes[b];
        }
    }
}

void trk_summary_print_extra(FILE *out, const struct trk_report_set *s,
                             const struct trk_report_opts *o)
{
    if (o->gpu)
        return;
    uint64_t count[TRK_HIST_BUCKETS], bytes[TRK_HIST_BUCKETS], total = 0;
    char a[32], b[32], c[32], d[32];
    sum_hist(s, count, bytes);
    for (unsigned k = 0; k < TRK_HIST_BUCKETS; k++)
        total += count[k];
    if (total) {
        fprintf(out, "\nheap allocation sizes\n%23s %12s %10s  %s\n", "size", "allocations",
                "bytes", "share of allocations");
        for (unsigned k = 0; k < TRK_HIST_BUCKETS; k++) {
            if (!count[k])
                continue;
            int bar = (int)((count[k] * 40 + total - 1) / total);
            fprintf(out, "%10s - %10s %12s %10s  ", trk_rfmt_bytes(bucket_min(k), a, sizeof(a)),
                    trk_rfmt_bytes(bucket_max(k), b, sizeof(b)),
                    trk_rfmt_grouped(count[k], c, sizeof(c)),
                    trk_rfmt_bytes(bytes[k], d, sizeof(d)));
            for (int i = 0; i < bar; i++)
                fputc('#', out);
            fputc('\n', out);
        }
    }
    size_t nthreads = 0;
    for (size_t ci = 0; ci < s->n; ci++)
        nthreads += s->v[ci].prof.nthreads;
    if (nthreads < 2)
        return; /* one thread: the totals above already say it all */
    fprintf(out, "\nthreads\n%8s %8s %12s %10s %10s %10s  %s\n", "pid", "tid", "allocations",
            "allocated", "at peak", "leaked", "name");
    for (size_t ci = 0; ci < s->n; ci++) {
        const struct trk_profile *p = &s->v[ci].prof;
        for (size_t t = 0; t < p->nthreads; t++) {
            const struct trk_thread_info *th = &p->threads[t];
            char e[32];
            fprintf(out, "%8u %8u %12s %10s %10s %10s  %s\n", p->totals.pid, th->tid,
                    trk_rfmt_grouped(th->allocations, a, sizeof(a)),
                    trk_rfmt_bytes(th->bytes_allocated, b, sizeof(b)),
                    trk_rfmt_bytes(th->peak_bytes, c, sizeof(c)),
                    trk_rfmt_bytes(th->leaked_bytes, e, sizeof(e)), th->name ? th->name : "");
        }
    }
}

void trk_summary_json_extra(struct trk_rjson *j, const struct trk_report_set *s,
                            const struct trk_report_opts *o)
{
    if (o->gpu)
        return;
    uint64_t count[TRK_HIST_BUCKETS], bytes[TRK_HIST_BUCKETS];
    sum_hist(s, count, bytes);
    trk_rjson_begin_array(j, "size_histogram");
    for (unsigned k = 0; k < TRK_HIST_BUCKETS; k++) {
        if (!count[k])
            continue;
        trk_rjson_begin_object(j, NULL);
        trk_rjson_u64(j, "min_size", bucket_min(k));
        trk_rjson_u64(j, "max_size", bucket_max(k));
        trk_rjson_u64(j, "allocations", count[k]);
        trk_rjson_u64(j, "bytes", bytes[k]);
        trk_rjson_end_object(j);
    }
    trk_rjson_end_array(j);
    trk_rjson_begin_array(j, "threads");
    for (size_t ci = 0; ci < s->n; ci++) {
        const struct trk_profile *p = &s->v[ci].prof;
        for (size_t t = 0; t < p->nthreads; t++) {
            const struct trk_thread_info *th = &p->threads[t];
            trk_rjson_begin_object(j, NULL);
            trk_rjson_u64(j, "pid", p->totals.pid);
            trk_rjson_u64(j, "tid", th->tid);
            trk_rjson_string(j, "name", th->name);
            trk_rjson_u64(j, "allocations", th->allocations);
            trk_rjson_u64(j, "bytes_allocated", th->bytes_allocated);
            trk_rjson_u64(j, "peak_bytes", th->peak_bytes);
            trk_rjson_u64(j, "leaked_bytes", th->leaked_bytes);
            trk_rjson_end_object(j);
        }
    }
    trk_rjson_end_array(j);
}
