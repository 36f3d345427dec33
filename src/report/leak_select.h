/* SPDX-License-Identifier: MIT
 *
 * leak_select.h - what `tree --leaks` and `flamegraph --leaks` count
 * (leak_select.c): the leak classes `tracker leaks` lists by default.
 */
#ifndef TRK_REPORT_LEAK_SELECT_H
#define TRK_REPORT_LEAK_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include "report/report_internal.h"

/* Whether a capture of s has its leaks by class (analysis/calltree.h,
 * trk_profile_leaks_by_class). */
bool trk_report_leaks_by_class(const struct trk_report_set *s);
/* "definite,indirect": the kinds bits as --kinds takes them. */
const char *trk_leak_kinds_text(unsigned kinds, char *buf, size_t len);
/* The title of a --leaks view: what its figures are. */
const char *trk_leak_view_title(const struct trk_report_set *s, unsigned kinds, char *buf,
                                size_t len);

#endif /* TRK_REPORT_LEAK_SELECT_H */
