/* SPDX-License-Identifier: MIT
 *
 * leak_gate.c - whether the captures a leak gate (`tracker leaks
 * --fail-on-leak`) reads can vouch for "no leaks" at all: a capture that
 * ends without its END record (killed, still running), one that is damaged
 * or holds no event, or one whose program defines its own malloc (its heap
 * was not seen) proves nothing, and a gate that passed on it would read as
 * "no leaks" (issue 11). Must not: judge the leak figures themselves (the
 * command does) or print.
 */

#include "report/report_internal.h"

bool trk_leak_gate_usable(const struct trk_report_set *s, char *why, size_t len)
{
    if (s->n == 0) {
        snprintf(why, len, "no capture to judge");
        return false;
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct trk_report_capture *c = &s->v[i];
        const struct trk_stats *t = &c->prof.totals;
        if (t->truncated) {
            snprintf(why, len, "%s is truncated (%s): its leaks are unknown", c->path,
                     t->ends_inside_chunk ? "a write was cut short" : TRK_REPORT_NO_END);
            return false;
        }
        if (t->checksum_failures || t->bad_chunks || t->broken_streams || t->missing_chunks) {
            snprintf(why, len, "%s is damaged: its leaks are unknown", c->path);
            return false;
        }
        /* An image that exec'd has nothing to judge (leaks.c): no event
         * in it before the exec is no gap. */
        if (t->events == 0 && !(t->end_seen && t->end_reason == TRK_END_EXEC)) {
            snprintf(why, len, "%s holds no event: its leaks are unknown", c->path);
            return false;
        }
        if (trk_reader_info(c->r)->options & TRK_OPT_HEAP_UNSEEN) {
            snprintf(why, len,
                     "%s: the program defines its own malloc, which was not seen: its leaks "
                     "are unknown",
                     c->path);
            return false;
        }
    }
    return true;
}
