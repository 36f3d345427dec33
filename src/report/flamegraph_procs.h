/* SPDX-License-Identifier: MIT
 *
 * flamegraph_procs.h - the page's timeline over several captures of one run:
 * each capture resampled to a common grid, and the per-process lines the
 * page shows instead of one sum (FLAMEGRAPH_DATA.md, `timeline.procs`).
 */
#ifndef TRK_FLAMEGRAPH_PROCS_H
#define TRK_FLAMEGRAPH_PROCS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/report.h"

/* At most this many processes get lines of their own: the largest heap
 * peaks (the page stays bounded; "procs_omitted" says how many did not). */
#define TRK_FG_PROCS_MAX 16

/* Capture p on the grid of n steps of step ns, its clock offset off ns
 * after the grid's origin: one[g] heap, one[n + g] mmap, one[2n + g] RSS,
 * the highest value of each within step g. */
void trk_fg_resample(const struct trk_profile *p, uint64_t off, uint64_t step, size_t n,
                     uint64_t *one);

/* "procs":[{"cap":i,"pid":N,"heap":[],"mmap":[],"rss":[]}...],
 * ("procs_omitted":k,) for a set of several captures. Returns 0, -1 out of
 * memory. */
int trk_fg_write_procs(FILE *f, const struct trk_report_set *s, uint64_t origin, uint64_t step,
                       size_t n);

#endif /* TRK_FLAMEGRAPH_PROCS_H */
