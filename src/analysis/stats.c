/* SPDX-License-Identifier: MIT
 *
 * stats.c - `tracker stats` totals as a view of the profile pass: the
 * accounting rules live in profile.c only, so the totals of every report
 * agree with `tracker stats` by construction. Must not: keep rules of its
 * own, or hold more than the profile does (the live set and the sites).
 */
#include <stdlib.h>

#include "analysis/profile.h"
#include "analysis/stats.h"

int trk_stats_compute(struct trk_reader *r, struct trk_stats *out)
{
    /* The smallest timeline: stats prints none. */
    struct trk_profile_options opts = {.timeline_points = 2};
    struct trk_profile p;
    int rc = trk_profile_compute(r, &opts, &p);
    *out = p.totals;
    p.totals.command = NULL; /* moved to *out */
    trk_profile_free(&p);
    return rc;
}

void trk_stats_free(struct trk_stats *s)
{
    free(s->command);
    s->command = NULL;
}
