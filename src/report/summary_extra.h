/* SPDX-License-Identifier: MIT
 *
 * summary_extra.h - size histogram and thread split of `tracker summary`.
 */
#ifndef TRK_SUMMARY_EXTRA_H
#define TRK_SUMMARY_EXTRA_H

#include <stdio.h>

#include "report/report.h"
#include "report/report_json.h"

void trk_summary_print_extra(FILE *out, const struct trk_report_set *s,
                             const struct trk_report_opts *o);
void trk_summary_json_extra(struct trk_rjson *j, const struct trk_report_set *s,
                            const struct trk_report_opts *o);

#endif /* TRK_SUMMARY_EXTRA_H */
