/* SPDX-License-Identifier: MIT
 *
 * leak_follow.c - suppressions follow the leak graph in the leaks report,
 * as LeakSanitizer's do: an indirectly lost block whose leader (the
 * definitely lost block it hangs from) is suppressed is suppressed with it,
 * and what a suppression hides leaves the leader's "indirect" figure. Works
 * on the capture's graph by site (trk_profile.led) through
 * trk_suppressions_follow: one node per site as a leader, one per pair.
 * Must not: match patterns (the caller gives each site's own suppression)
 * or print.
 */
#include <stdlib.h>
#include <string.h>

#include "report/leak_follow.h"
#include "report/report.h"

void trk_leak_follow_free(struct trk_leak_follow *f)
{
    free(f->v);
    free(f->hid_count);
    free(f->hid_bytes);
    free(f->led_hidden);
    memset(f, 0, sizeof(*f));
}

/* Nodes: site i is node i (a leader leads itself), pair k node nsites + k
 * (led by its leader site's node). */
static int follow_nodes(const struct trk_profile *p, const int32_t *site_sup, int32_t *hit)
{
    size_t n = p->nsites + p->nled;
    uint32_t *leader = malloc(n * sizeof(*leader));
    if (!leader)
        return -1;
    for (size_t i = 0; i < p->nsites; i++) {
        leader[i] = TRK_SUP_NO_LEADER;
        hit[i] = -1;
    }
    for (size_t k = 0; k < p->nled; k++) {
        const struct trk_led_edge *e = &p->led[k];
        leader[e->leader] = e->leader;
        hit[e->leader] = site_sup[e->leader];
        leader[p->nsites + k] = e->leader;
        hit[p->nsites + k] = site_sup[e->member];
    }
    size_t r = trk_suppressions_follow(leader, hit, n);
    free(leader);
    return r == SIZE_MAX ? -1 : 0;
}

int trk_leak_follow_compute(const struct trk_profile *p, const int32_t *site_sup,
                            struct trk_leak_follow *f)
{
    memset(f, 0, sizeof(*f));
    for (size_t k = 0; k < p->nled; k++)
        if (p->led[k].leader >= p->nsites || p->led[k].member >= p->nsites)
            return 0; /* a damaged graph hides nothing */
    size_t ns = p->nsites ? p->nsites : 1, n = p->nsites + p->nled;
    int32_t *hit = malloc((n ? n : 1) * sizeof(*hit));
    f->v = malloc((p->nled ? p->nled : 1) * sizeof(*f->v));
    f->hid_count = calloc(ns, sizeof(*f->hid_count));
    f->hid_bytes = calloc(ns, sizeof(*f->hid_bytes));
    f->led_hidden = calloc(ns, sizeof(*f->led_hidden));
    if (!hit || !f->v || !f->hid_count || !f->hid_bytes || !f->led_hidden ||
        follow_nodes(p, site_sup, hit) < 0) {
        free(hit);
        return -1;
    }
    for (size_t k = 0; k < p->nled; k++) {
        const struct trk_led_edge *e = &p->led[k];
        int32_t h = hit[p->nsites + k];
        if (h < 0)
            continue;
        f->led_hidden[e->leader] += e->bytes;
        if (site_sup[e->member] >= 0)
            continue; /* hidden by its own stack already */
        f->v[f->n++] = (struct trk_leak_hidden){e->member, h, e->count, e->bytes};
        f->hid_count[e->member] += e->count;
        f->hid_bytes[e->member] += e->bytes;
    }
    free(hit);
    return 0;
}
