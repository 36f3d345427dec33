/* SPDX-License-Identifier: MIT
 *
 * summary_procs.h - the per-process table of `tracker summary` (several
 * captures of one run): each process's own peaks, never added up.
 */
#ifndef TRK_SUMMARY_PROCS_H
#define TRK_SUMMARY_PROCS_H

#include <stdio.h>

#include "report/report.h"
#include "report/report_json.h"

/* "the peak", or where one figure adds several processes' or GPU devices'
 * peaks (each its own instant), "each process's own peak", "each device's
 * own peak", or both: what a report's "live at ..." really is. */
const char *trk_peak_phrase(const struct trk_report_set *s, const struct trk_report_opts *o);

/* Text: nothing for one capture; the largest `limit` processes (0: all). */
void trk_summary_print_processes(FILE *out, const struct trk_report_set *s,
                                 const struct trk_report_opts *o, size_t limit);
/* JSON "processes" array (and "processes_omitted" when bounded). */
void trk_summary_json_processes(struct trk_rjson *j, const struct trk_report_set *s,
                                const struct trk_report_opts *o, size_t limit);

#endif /* TRK_SUMMARY_PROCS_H */
