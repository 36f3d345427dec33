/* SPDX-License-Identifier: MIT
 *
 * flamegraph_model.h - the data model behind the flamegraph page, shared by
 * flamegraph_model.c (which builds it) and flamegraph.c (which writes it as
 * JSON): the call tree of analysis/calltree.h with the node of every profile
 * site, the page's strings and location keys and colour families, the
 * page's thread numbering, pruning into "other" nodes, and the per-node
 * sums the page re-adds per thread and time range.
 * Must not be included outside src/report/flamegraph*.c.
 */
#ifndef TRK_FLAMEGRAPH_MODEL_H
#define TRK_FLAMEGRAPH_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/calltree.h"
#include "analysis/temporal.h"
#include "common/hindex.h"
#include "report/flamegraph.h"
#include "report/report.h"

#define TRK_FG_NONE        UINT32_MAX
#define TRK_FG_MAX_THREADS 255 /* threads listed one by one; the rest share an entry */

/* Colour families of locations; the page (viewer/decode.js) numbers them
 * alike. */
enum trk_fg_kind {
    TRK_FG_APP = 0,
    TRK_FG_LIB,
    TRK_FG_RUNTIME, /* libc, the loader, libstdc++, allocators */
    TRK_FG_PYTHON,  /* the Python interpreter's native code */
    TRK_FG_PYCODE,  /* Python code: a Python frame */
    TRK_FG_GPU,
    TRK_FG_UNKNOWN, /* no module */
    /* Synthetic kinds from here on: no file, line or module. */
    TRK_FG_PROCESS, /* one capture's root */
    TRK_FG_OTHER,   /* frames merged below the threshold */
    TRK_FG_IMPORT,  /* --by-import: a Python import open when the memory was allocated */
};

/* A hash from four u32 words to dense entry numbers (entries are the
 * caller's, indexed alike). */
struct trk_fg_keytab {
    uint32_t (*keys)[4];
    size_t n, cap;
    struct trk_hindex ix;
};

/* Bytes and counts summed per key. */
struct trk_fg_agg {
    struct trk_fg_keytab k;
    uint64_t *bytes, *count;
    size_t cap;
};

void trk_fg_agg_free(struct trk_fg_agg *g);

struct trk_fg_thread {
    uint32_t capture, index; /* capture of the set, profile thread index */
};

struct trk_fg_model {
    /* The call tree (analysis/calltree.h): node 0 is the root, a parent
     * always precedes its children, totals size a node for pruning. */
    struct trk_ctree tree;
    /* Per tree location, then other_loc: the page's key words (function
     * or module+offset, file, line, module) as ids of the tree's strings
     * (trk_ctree_string), TRK_FG_NONE - 1 for "none"; synthetic ones
     * (label, -, kind, -). */
    uint32_t (*loc_key)[4];
    uint8_t *loc_kind; /* enum trk_fg_kind per location */
    size_t nlocs, locs_cap;
    uint32_t **site_node; /* per capture, per site: its node or TRK_FG_NONE */
    size_t ncaps;
    uint32_t other_loc;
    /* Threads (trk_fg_threads): global id = thread_base[capture] + index;
     * thread_out maps it to the page's thread number. */
    size_t *thread_base;
    uint32_t *thread_out;
    struct trk_fg_thread *shown; /* the page's threads, in page order */
    size_t nshown, nothers;      /* nothers share the entry after the shown */
};

/* Builds the tree of every capture of s for the selection fo (all heap
 * allocations with --temporal). Returns 0 or -1 (out of memory); *m must
 * be freed with trk_fg_model_free either way. */
int trk_fg_model_build(struct trk_fg_model *m, const struct trk_report_set *s,
                       const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo);
void trk_fg_model_free(struct trk_fg_model *m);

/* Numbers the threads: those with something in the selection, the ones with
 * most bytes first, TRK_FG_MAX_THREADS of them by name. Returns 0 or -1. */
int trk_fg_threads(struct trk_fg_model *m, const struct trk_report_set *s,
                   const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo);

/* The page's tree for one threshold: rep maps every model node to a page
 * node; page nodes have a parent, a location and, for "other" nodes, how
 * many frames they hold. */
struct trk_fg_pruned {
    uint32_t *rep;
    uint32_t *parent, *loc, *merged;
    size_t n;
    size_t merged_frames;
};

/* Merges, under every kept node, the children smaller than fraction of
 * the whole (and their subtrees) into one "other" node. Returns 0 or -1. */
int trk_fg_prune(struct trk_fg_model *m, double fraction, struct trk_fg_pruned *pr);
void trk_fg_pruned_free(struct trk_fg_pruned *pr);

/* Self values per (page node, page thread) into g (emptied first). */
int trk_fg_self_rows(const struct trk_fg_model *m, const struct trk_report_set *s,
                     const struct trk_report_opts *o, const struct trk_flamegraph_opts *fo,
                     const struct trk_fg_pruned *pr, struct trk_fg_agg *g);

/* Temporal rows of the first capture per (page node, page thread, from,
 * to) into g, halving t's buckets until there are at most max_rows. */
int trk_fg_temporal_rows(const struct trk_fg_model *m, const struct trk_report_set *s,
                         const struct trk_flamegraph_opts *fo, const struct trk_fg_pruned *pr,
                         struct trk_temporal *t, size_t max_rows, struct trk_fg_agg *g);

#endif /* TRK_FLAMEGRAPH_MODEL_H */
