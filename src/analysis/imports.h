/* SPDX-License-Identifier: MIT
 *
 * imports.h - memory by Python import (`tracker imports`): one pass over a
 * capture's events that builds the tree of PY_IMPORT / PY_IMPORT_END
 * records per thread and charges every heap or anonymous-mapping
 * acquisition made on a thread with an open import to its innermost one,
 * following each such block until it is released.
 *
 * Figures of a node: allocated = bytes acquired by the import itself
 * (self); cumulative allocated = self plus every nested import; live = of
 * the bytes it acquired itself, those still live when its IMPORT_END came;
 * cumulative live = of the bytes it or any nested import acquired, those
 * still live at that moment. Heap bytes are requested sizes, mappings are
 * whole pages (as in profile.h). An import still open when the capture (or
 * its thread) ends is closed there and marked unfinished.
 *
 * Must not: print, symbolize, or keep per-event history: memory is bounded
 * by the blocks acquired under imports that are still live, the mappings,
 * and the imports themselves.
 */
#ifndef TRK_IMPORTS_H
#define TRK_IMPORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracker/reader.h"

#define TRK_IMPORT_NONE UINT32_MAX

struct trk_import {
    char *module;    /* dotted name, owned */
    uint32_t parent; /* index of the enclosing import; TRK_IMPORT_NONE = top level */
    uint32_t first_child, next_sibling; /* in import order; TRK_IMPORT_NONE = none */
    uint32_t depth;                     /* 0 for a top-level import */
    uint32_t tid;                       /* thread that imported it */
    uint64_t start_ns;                  /* IMPORT, relative to the capture's clock base */
    uint64_t end_ns;                    /* IMPORT_END (or where an unfinished one was closed) */
    bool unfinished;          /* no IMPORT_END: closed at its thread's or the capture's end */
    uint64_t allocations;     /* acquisitions made by the import itself */
    uint64_t allocated_bytes; /* self */
    uint64_t cumulative_allocated_bytes; /* self + nested imports */
    uint64_t live_bytes;                 /* self bytes live at its end */
    uint64_t cumulative_live_bytes;      /* self + nested bytes live at its end */
};

struct trk_imports {
    struct trk_import *v; /* in import order: a parent precedes its children */
    size_t n;
    uint32_t first_top; /* first top-level import, then next_sibling; NONE = none */
    bool python;        /* a PY_INFO record was seen */
    uint64_t python_version;
};

/* Called now and then with the bytes read so far (progress bars); may be
 * NULL. */
typedef void trk_imports_progress_fn(void *ctx, uint64_t done, uint64_t total);

/* Reads every remaining event of r into *out (zeroed first). Returns 0; -1
 * on a read error (trk_reader_error(r) says why); -2 when memory ran out.
 * *out must be freed with trk_imports_free in every case. */
int trk_imports_compute(struct trk_reader *r, trk_imports_progress_fn *progress, void *ctx,
                        struct trk_imports *out);

void trk_imports_free(struct trk_imports *x);

#endif /* TRK_IMPORTS_H */
