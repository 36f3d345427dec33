/* SPDX-License-Identifier: MIT
 *
 * leak_select.c - what the --leaks views (tree, flamegraph) count and how
 * they name it: in a capture with leak classes at exit, the kinds asked
 * for (by default those `tracker leaks` lists: definitely and indirectly
 * lost), so that the views and `leaks` agree; elsewhere every block live
 * at the end, as before. Must not: apply suppressions (`leaks` owns them)
 * or print.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/calltree.h"
#include "report/leak_select.h"
#include "report/report.h"

bool trk_report_leaks_by_class(const struct trk_report_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (trk_profile_leaks_by_class(&s->v[i].prof))
            return true;
    return false;
}

const char *trk_leak_kinds_text(unsigned kinds, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    if ((kinds & TRK_LEAK_SHOW_ALL) == TRK_LEAK_SHOW_ALL) {
        snprintf(buf, len, "all");
        return buf;
    }
    if (kinds & ~1u) /* blocks not classified go with the others, unsaid */
        kinds &= ~1u;
    for (unsigned k = 1; k <= TRK_LEAK_CLASS_MAX + 1; k++) {
        unsigned c = k % (TRK_LEAK_CLASS_MAX + 1); /* unclassified last */
        if (!(kinds & (1u << c)) || at >= len)
            continue;
        int n = snprintf(buf + at, len - at, "%s%s", at ? "," : "", trk_leak_class_name(c));
        at += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

const char *trk_leak_view_title(const struct trk_report_set *s, unsigned kinds, char *buf,
                                size_t len)
{
    if (!kinds || !trk_report_leaks_by_class(s))
        snprintf(buf, len, "leaked (live at the end, still reachable included)");
    else if ((kinds & ~1u) == (1u << TRK_LEAK_DEFINITE | 1u << TRK_LEAK_INDIRECT))
        snprintf(buf, len, "lost at exit (definitely and indirectly)");
    else if ((kinds & TRK_LEAK_SHOW_ALL) == TRK_LEAK_SHOW_ALL)
        snprintf(buf, len, "live at exit (every leak kind)");
    else {
        char k[96];
        snprintf(buf, len, "leaked at exit (%s)", trk_leak_kinds_text(kinds, k, sizeof(k)));
    }
    return buf;
}
