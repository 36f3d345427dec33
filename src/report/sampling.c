/* SPDX-License-Identifier: MIT
 *
 * sampling.c - the words every report uses for a sampled capture (see
 * sampling.h and README "Sampling"). Totals are exact in such a capture
 * (every event is recorded); what is estimated is how bytes and counts
 * split over stacks.
 */
#include "report/sampling.h"
#include "report/report_internal.h"

uint64_t trk_report_set_sample_bytes(const struct trk_report_set *s)
{
    uint64_t n = 0;
    for (size_t i = 0; s && i < s->n; i++) {
        uint64_t k = s->v[i].prof.totals.sample_bytes;
        if (k > n)
            n = k;
    }
    return n;
}

static const char *phrase(uint64_t n, char *buf, size_t len)
{
    char a[32];
    snprintf(buf, len,
             "sampled at %s bytes: whole stacks for a Poisson sample of the allocations (one "
             "per %s bytes on average), per-stack figures are estimates scaled from it; "
             "totals are exact",
             trk_rfmt_grouped(n, a, sizeof(a)), a);
    return buf;
}

void trk_rsample_line(FILE *f, uint64_t n)
{
    char buf[256];
    if (n)
        fprintf(f, "%s\n", phrase(n, buf, sizeof(buf)));
}

void trk_rsample_row(FILE *f, const char *row_fmt, uint64_t n)
{
    char a[32], buf[128];
    if (!n)
        return;
    snprintf(buf, sizeof(buf), "stacks sampled at %s bytes (totals exact)",
             trk_rfmt_grouped(n, a, sizeof(a)));
    fprintf(f, row_fmt, "Sampling", buf);
}

void trk_rsample_json(struct trk_rjson *j, uint64_t n)
{
    char buf[256];
    if (!n)
        return;
    trk_rjson_u64(j, "sample_bytes", n);
    trk_rjson_string(j, "sampling", phrase(n, buf, sizeof(buf)));
}
