/* SPDX-License-Identifier: MIT
 *
 * flamegraph.h - `tracker flamegraph`: one self-contained HTML page (the
 * viewer/ sources, embedded at build time) carrying a selection of a capture
 * set as columnar, interned JSON: the call tree of the selection, per-thread
 * values when asked, the memory timeline and, with --temporal, the interval
 * rows of analysis/temporal.h.
 *
 * The page stays under a size budget whatever the capture: frames below a
 * share threshold merge into one "other" node per parent, and when the data
 * would still not fit, the threshold rises (and the temporal buckets halve)
 * until it does; the page says what was merged. Every string from the capture
 * is escaped so that nothing in it can end the data block or run as markup.
 *
 * Must not: open or name the output file, print (errors come back in err),
 * or read events itself (profile.h and temporal.h do).
 */
#ifndef TRK_FLAMEGRAPH_H
#define TRK_FLAMEGRAPH_H

#include "report/report_json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/calltree.h"
#include "report/report.h"

struct trk_flamegraph_opts {
    enum trk_select select;
    bool inverted;        /* roots are the allocating frames */
    bool threads;         /* per-thread values and a thread filter in the page */
    bool temporal;        /* interval rows: time ranges chosen on the chart */
    bool by_import;       /* under "import X" roots (set loaded with by_import; not temporal) */
    double threshold_pct; /* frames under this share of the whole merge into "other" */
    size_t max_bytes;     /* size budget of the page; 0 = under 10 MB (10^7 bytes) */
    /* --leaks: the leak kinds counted where a capture has classes at exit
     * (TRK_LEAK_SHOW_* bits of report.h; 0: every block live at the end). */
    unsigned leak_kinds;
};

/* What the page ended up holding, for the command's summary line. */
struct trk_flamegraph_result {
    size_t bytes;         /* page size */
    size_t nodes;         /* frames in the page */
    size_t merged_frames; /* frames merged into "other" nodes */
    double threshold_pct; /* the threshold used (may exceed the one asked) */
    unsigned buckets;     /* temporal buckets (0 without --temporal) */
};

/* Writes the page for capture set s to f. With fo->temporal, reads the
 * first capture of s again (a second pass over its events, through a new
 * reader on its path). Returns 0, or -1 with a one-line message in err
 * (memory, an unreadable capture on the second pass). Write errors are the
 * caller's to detect with ferror/fclose. */
int trk_flamegraph_write(FILE *f, const struct trk_report_set *s, const struct trk_report_opts *o,
                         const struct trk_flamegraph_opts *fo, struct trk_flamegraph_result *res,
                         char *err, size_t errlen);

/* Writes s as a JSON string literal that is also safe inside an HTML
 * <script> element: '<', '>', '&', U+2028 and U+2029 are \u-escaped,
 * control characters escaped, bytes that are not UTF-8 become U+FFFD, and
 * more than max bytes of input are cut (on a character boundary) with an
 * ellipsis. NULL writes "". */
static inline void trk_flamegraph_json_string(FILE *f, const char *s, size_t max)
{
    trk_json_quote(f, s, max, true);
}

/* The viewer page, split where the data goes (generated at build time from
 * viewer/ by scripts/embed.py). */
extern const unsigned char trk_viewer_head[];
extern const size_t trk_viewer_head_len;
extern const unsigned char trk_viewer_tail[];
extern const size_t trk_viewer_tail_len;

#endif /* TRK_FLAMEGRAPH_H */
