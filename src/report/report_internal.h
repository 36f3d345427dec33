/* SPDX-License-Identifier: MIT
 *
 * report_internal.h - helpers shared by the report files only: interning of
 * source locations and of symbolized stacks (so that sites of different
 * threads, stack ids or even captures group by what the user sees), number
 * formatting, and the frame and header printers. Must not be included
 * outside src/report.
 */
#ifndef TRK_REPORT_INTERNAL_H
#define TRK_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/hindex.h"
#include "report/report.h"
#include "report/report_json.h"

#define TRK_NO_ID UINT32_MAX

/* What a capture without an END record means (no chunk cut short): the
 * signal is not recorded, so every likely case is named, not "killed". */
#define TRK_REPORT_NO_END                                                                          \
    "the process ended by a signal (killed, crashed, or terminated by its parent, as "             \
    "multiprocessing's Pool ends its workers) or is still running"

/* One location (function, file, line, module). Strings belong to the
 * table. An unknown function is told apart by its offset in the module (or
 * its address when no module holds it). */
struct trk_rloc {
    const char *function, *file, *module;
    uint32_t line;
    bool python; /* a Python frame (function = code name, file = co_filename) */
    uint64_t offset;
};

/* Locations interned by analysis/calltree's location table (line-level),
 * numbered from 0 in the order first seen, as struct trk_rloc. */
struct trk_loctab {
    struct trk_rloc *v;
    size_t n, cap;
    struct trk_ctree locs;
    bool ok; /* locs could be set up */
};

void trk_loctab_init(struct trk_loctab *t, bool basenames);
/* Returns the location's id, TRK_NO_ID when memory ran out. */
uint32_t trk_loctab_intern(struct trk_loctab *t, const struct trk_frame *f);
void trk_loctab_free(struct trk_loctab *t);

/* Sequences of location ids (symbolized stacks, innermost first). */
struct trk_rstack {
    size_t start;
    uint32_t len;
};
struct trk_stacktab {
    uint32_t *ids;
    size_t nids, capids;
    struct trk_rstack *v;
    size_t n, cap;
    struct trk_hindex ix;
};

void trk_stacktab_init(struct trk_stacktab *t);
uint32_t trk_stacktab_intern(struct trk_stacktab *t, const uint32_t *locs, uint32_t n);
static inline const uint32_t *trk_stacktab_get(const struct trk_stacktab *t, uint32_t id,
                                               uint32_t *len)
{
    *len = t->v[id].len;
    return t->ids + t->v[id].start;
}
void trk_stacktab_free(struct trk_stacktab *t);

/* Symbolizes a site's stack into location ids (frames hidden as the
 * options say: trk_report_frames). */
struct trk_site_walker {
    struct trk_frame_buf fb;
    uint32_t *ids;
    size_t cap;
};
/* Returns the count (*ids valid until the next call), -1 out of memory. */
int trk_site_locs(struct trk_site_walker *w, const struct trk_report_capture *c,
                  const struct trk_report_opts *o, uint64_t stack, struct trk_loctab *lt,
                  const uint32_t **ids);
void trk_site_walker_free(struct trk_site_walker *w);

/* trk_site_locs, then the stack interned in st: the stack's id, TRK_NO_ID
 * when memory ran out. */
uint32_t trk_site_stack(struct trk_site_walker *w, const struct trk_report_capture *c,
                        const struct trk_report_opts *o, uint64_t stack, struct trk_loctab *lt,
                        struct trk_stacktab *st);

/* Whether a site's space is one the report covers. */
static inline bool trk_report_space_on(const struct trk_report_opts *o, uint32_t space)
{
    return trk_spaces_has(trk_report_spaces(o), space);
}

/* ---- Text ----------------------------------------------------------------- */

const char *trk_rbasename(const char *path);
/* "1,234,567" */
const char *trk_rfmt_grouped(uint64_t v, char *buf, size_t len);
/* "123 B", "1.2 MiB" */
const char *trk_rfmt_bytes(uint64_t v, char *buf, size_t len);
/* "+1.2 MiB", "-12 B", "0 B" */
const char *trk_rfmt_delta(int64_t v, char *buf, size_t len);
/* The function name, else "module+0xoffset", else "0xaddress". */
const char *trk_rloc_name(const struct trk_rloc *l, char *buf, size_t len);
/* "function (file:line) [module]", leaving out what is unknown. */
void trk_rprint_loc(FILE *f, const struct trk_rloc *l);
/* Stack st_id of st as "    at LOCATION" lines, innermost first, or
 * "    (no stack recorded)" (loctab.c). */
void trk_rprint_stack(FILE *f, const struct trk_loctab *lt, const struct trk_stacktab *st,
                      uint32_t id);
/* {"function", "file", "line", "module"}: paths in full, function never null;
 * "python": true on Python frames. */
void trk_rjson_loc(struct trk_rjson *j, const struct trk_rloc *l);
/* Stack id of st as the array "stack" of its locations (loctab.c). */
void trk_rjson_stack(struct trk_rjson *j, const struct trk_loctab *lt,
                     const struct trk_stacktab *st, uint32_t id);
/* One line per capture ("pid N: command - peak heap X at T s", or with
 * --gpu each selected device's peak) and a warning line for each integrity
 * problem. */
void trk_rprint_headers(FILE *f, const struct trk_report_set *s, const struct trk_report_opts *o);
/* One line when a capture of the n sets took its leaks at the Python
 * script's end (trk_stats.leaks_at_script_end). */
void trk_rprint_leaks_note(FILE *f, const struct trk_report_set *const *sets, size_t n);
/* One line when a capture of s ran pymalloc without tracing its objects:
 * their leaks are hidden in arenas; how to see them. */
void trk_rprint_pymalloc_hint(FILE *f, const struct trk_report_set *s);
/* The PyTorch caching-allocator note, one line, when any of the n sets
 * loaded PyTorch's CUDA libraries. */
void trk_rprint_torch_note(FILE *f, const struct trk_report_set *const *sets, size_t n);
/* "GPU 0", or "GPU ?" for the unknown device. */
const char *trk_rgpu_name(uint32_t space, char *buf, size_t len);
/* What a GPU site's memory is, for text: "device memory", "pinned host memory". */
const char *trk_rgpu_kind_text(unsigned kind);
/* Saturating signed difference after - before. */
int64_t trk_rdelta(uint64_t before, uint64_t after);

#endif /* TRK_REPORT_INTERNAL_H */
