/* SPDX-License-Identifier: MIT
 *
 * export.h - writers of the formats other tools load: pprof (gzipped
 * profile.proto), speedscope JSON, Chrome/Perfetto trace events and Brendan
 * Gregg's folded stacks. Each renders a selection (peak, leaks, temporary,
 * allocated) of one capture or of a whole capture set.
 *
 * Must not: read events or compute figures (profile.h and calltree.h do),
 * open or name files (the CLI hands in a FILE), or print anything but the
 * format itself.
 */
#ifndef TRK_EXPORT_H
#define TRK_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/report_json.h"
#include "analysis/calltree.h"
#include "analysis/profile.h"
#include "symbol/symbolize.h"

enum trk_export_format {
    TRK_EXPORT_PPROF = 0,
    TRK_EXPORT_SPEEDSCOPE,
    TRK_EXPORT_CHROME,
    TRK_EXPORT_FOLDED,
};

/* One capture of the exported set. The reader stays open: stacks and
 * modules are looked up through it. */
struct trk_export_capture {
    const struct trk_reader *reader;
    const struct trk_profile *profile;
    struct trk_symbolizer *sym;
    uint32_t pid;
    const char *command; /* argv joined by spaces */
    /* "pid N: command", the capture's root frame when the set has several
     * captures; NULL for a single capture. Must equal the process_label the
     * tree was built with. */
    const char *label;
};

struct trk_export {
    const struct trk_export_capture *caps;
    size_t ncaps;
    /* The selection as a call tree of every capture, for folded and
     * speedscope (built with by_function set, optionally inverted):
     * trk_export_write builds it; callers leave it NULL. */
    const struct trk_ctree *tree;
    int inverted; /* folded, speedscope: innermost frame first (bottom-up) */
    enum trk_select select;
    uint32_t spaces; /* a selection of spaces (profile.h, trk_spaces_has); 0 = heap */
    struct trk_frames_options frames;
    const char *name;     /* what the profile is called in viewers */
    const char *exporter; /* "tracker <version>" */
};

/* N of a sampled set (--sample-bytes: per-stack values are estimates), 0
 * when no capture of it was sampled. Each format says so where it can. */
static inline uint64_t trk_export_sample_bytes(const struct trk_export *x)
{
    uint64_t n = 0;
    for (size_t i = 0; i < x->ncaps; i++)
        if (x->caps[i].profile && x->caps[i].profile->totals.sample_bytes > n)
            n = x->caps[i].profile->totals.sample_bytes;
    return n;
}

/* Writes x in format fmt, building the model the format renders from.
 * Returns as the writers below. */
int trk_export_write(FILE *f, enum trk_export_format fmt, const struct trk_export *x, char *err,
                     size_t errlen);

/* Each writer returns 0, or -1 when memory ran out or the data cannot be
 * represented (err says why). Write errors are the caller's to detect with
 * ferror/fclose. */
int trk_export_pprof(FILE *f, const struct trk_export *x, char *err, size_t errlen);
int trk_export_speedscope(FILE *f, const struct trk_export *x, char *err, size_t errlen);
int trk_export_chrome(FILE *f, const struct trk_export *x, char *err, size_t errlen);
int trk_export_folded(FILE *f, const struct trk_export *x, char *err, size_t errlen);

/* Writes s as a JSON string literal: quotes, backslashes and control
 * characters escaped, bytes that are not valid UTF-8 replaced by U+FFFD, so
 * the output is valid JSON whatever a symbol or path contains. NULL writes
 * "". Shared by the JSON formats (trk_json_quote in report_json.c). */
static inline void trk_export_json_string(FILE *f, const char *s)
{
    trk_json_quote(f, s, SIZE_MAX, false);
}

#endif /* TRK_EXPORT_H */
