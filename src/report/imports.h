/* SPDX-License-Identifier: MIT
 *
 * imports.h - the `tracker imports` report: the import tree of a Python
 * capture (analysis/imports.h) as a `python -X importtime`-like text table
 * or as nested JSON nodes, for one capture or, with --all, for every
 * capture of its run (one tree per process). Must not: exit, or print
 * errors itself (they come back in err; warnings and progress go through
 * the callbacks).
 */
#ifndef TRK_REPORT_IMPORTS_H
#define TRK_REPORT_IMPORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* --sort: siblings (top-level imports, and each import's nested ones) in
 * import order or by a column, largest first; the tree stays. */
enum trk_imports_sort {
    TRK_IMPORTS_SORT_ORDER,
    TRK_IMPORTS_SORT_SELF_ALLOC,
    TRK_IMPORTS_SORT_ALLOC, /* cumulative */
    TRK_IMPORTS_SORT_SELF_LIVE,
    TRK_IMPORTS_SORT_LIVE, /* cumulative */
    TRK_IMPORTS_SORT_SELF_TIME,
    TRK_IMPORTS_SORT_TIME, /* cumulative */
};

struct trk_imports_report_opts {
    bool json;
    int sort;           /* enum trk_imports_sort */
    bool all;           /* every capture of the run */
    uint64_t min_bytes; /* subtrees allocating less (cumulatively) are left out */
    /* May be NULL; progress gets the capture being read. */
    void (*progress)(void *ctx, const char *path, uint64_t done, uint64_t total);
    void *progress_ctx;
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
};

/* Writes the report of the capture at path (and its siblings with all).
 * Returns 0; 1 when no capture read holds a Python interpreter (nothing is
 * written; err says so); -1 on an error (unreadable capture, memory), with
 * a one-line message in err. */
int trk_report_imports(const char *path, const struct trk_imports_report_opts *o, FILE *out,
                       char *err, size_t errlen);

#endif /* TRK_REPORT_IMPORTS_H */
