/* SPDX-License-Identifier: MIT
 *
 * calltree.h - source-level views of a profile: the symbolized frames of a
 * stack, and a call tree of locations (function, file, line, module) with
 * self and total values for one selection (peak, leaks, temporary,
 * allocated, failed). Trees can span several captures of a set, each under a
 * process root. The tree is the shared model of `tracker tree`, the
 * flamegraph, speedscope, folded stacks and the Chrome trace.
 *
 * Must not: print or format; read events (profile.h does that once).
 */
#ifndef TRK_CALLTREE_H
#define TRK_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/profile.h"
#include "symbol/symbolize.h"

enum trk_select {
    TRK_SEL_PEAK = 0,  /* live at the peak */
    TRK_SEL_LEAKS,     /* live at the end */
    TRK_SEL_TEMPORARY, /* temporary allocations */
    TRK_SEL_ALLOCATED, /* everything allocated */
    TRK_SEL_FAILED,    /* GPU allocations the driver refused */
};

/* Which value of a site a selection reads. */
void trk_select_value(const struct trk_site_stats *s, enum trk_select sel, uint64_t *bytes,
                      uint64_t *count);
/* The value of a site as a report over the selection of spaces sees it:
 * trk_select_value, except that at the peak with both heap and mappings
 * selected a host site counts what it held at the peak of their sum (one
 * instant), not at its own space's peak. */
/* Whether profile p's leaks are its classes at exit (a leak scan, not a
 * Python process's: those are what was live at its script's end), as
 * `tracker leaks` lists them. */
bool trk_profile_leaks_by_class(const struct trk_profile *p);
/* TRK_SEL_LEAKS by class: the site's blocks of the kinds bits (1 <<
 * TRK_LEAK_*; bit 0, blocks not classified) when p's leaks are by class
 * and the site is a heap site. Returns false (nothing set) otherwise. */
bool trk_site_leak_kinds(const struct trk_profile *p, const struct trk_site *site, unsigned kinds,
                         uint64_t *bytes, uint64_t *count);

void trk_site_value(const struct trk_site *site, enum trk_select sel, uint32_t spaces,
                    uint64_t *bytes, uint64_t *count);
/* Whether the selection of spaces reads heap + mappings as one quantity. */
bool trk_spaces_heap_and_mmap(uint32_t spaces);
const char *trk_select_name(enum trk_select sel);

struct trk_frames_options {
    /* Frames of the allocator itself (operator new/delete and friends,
     * jemalloc's *allocx, the tracker) are dropped from the inner end of a
     * stack unless this is set: the interesting frame is their caller. */
    int keep_allocator_frames;
    /* In a stack with Python frames (a hybrid stack), the interpreter's own
     * native frames (libpython*, or an executable named python[0-9.]*) are
     * hidden, those at the allocation too (the Python line that asked is
     * the site); runpy's Python frames go too. Set this to show them all.
     * Stacks without Python frames are never touched. */
    int python_internals;
    /* Also hide Python frames of the import machinery (importlib's
     * _bootstrap and _bootstrap_external, frozen or not). */
    int hide_imports;
    /* A stack with Python frames shows only them by default: native frames
     * inside the innermost Python frame and between Python frames are
     * hidden (the Python line owns the bytes). Set this for the hybrid
     * stack: native frames too, the interpreter's hidden unless
     * python_internals (which implies this). Stacks without Python frames
     * always keep their native frames. */
    int native;
};

/* The symbolized frames of stack `stack` of capture r, innermost first,
 * inlined frames expanded. Returns the count (0 for stack 0) and points
 * *out at an array owned by `buf` (reused by the next call with it). */
struct trk_frame_buf {
    struct trk_frame *v;
    size_t n, cap;
};
int trk_stack_frames(const struct trk_reader *r, struct trk_symbolizer *s, uint64_t stack,
                     const struct trk_frames_options *o, struct trk_frame_buf *buf,
                     const struct trk_frame **out);
void trk_frame_buf_free(struct trk_frame_buf *buf);

/* The part of a frame's file a report shows: the path below site-packages
 * or the standard library, else the basename (with its directory for
 * __init__.py and the like). A suffix of file; NULL for NULL. */
const char *trk_display_path(const char *file);

/* ---- Call tree ------------------------------------------------------------ */

struct trk_location {
    const char *function; /* NULL when unknown (then module+offset names it) */
    const char *file;
    uint32_t line;
    const char *module;
    uint64_t offset; /* for unknown functions */
    uint32_t kind;   /* TRK_LOC_* */
    uint32_t python; /* 1: a Python frame (function = code name, file = co_filename) */
};

enum trk_loc_kind {
    TRK_LOC_FRAME = 0,
    TRK_LOC_PROCESS = 1, /* synthetic root of one capture: function = "pid N: command" */
    TRK_LOC_THREAD = 2,  /* synthetic level when threads are split */
    TRK_LOC_OTHER = 3,   /* synthetic: children merged below the threshold */
    TRK_LOC_IMPORT = 4,  /* synthetic, by_import: function = "import MODULE" */
};

#define TRK_CTREE_NONE UINT32_MAX /* no node: a site outside the selection */

struct trk_ctree_node {
    uint32_t loc; /* index into locs; node 0 (root) has loc 0, unused */
    uint32_t parent;
    uint32_t first_child;  /* 0 = none */
    uint32_t next_sibling; /* 0 = none */
    uint64_t self_bytes, self_count;
    uint64_t total_bytes, total_count;
};

struct trk_ctree_options {
    enum trk_select select;
    uint32_t spaces;   /* a selection of spaces (profile.h, trk_spaces_has); 0 = heap */
    int inverted;      /* roots are the innermost frames (bottom-up) */
    int split_threads; /* a thread level under each process */
    int64_t thread;    /* only this profile thread index; -1 = all */
    int by_function;   /* location = (function, module): lines merged */
    /* Python: each site under the imports open on its thread when it was
     * made (a profile built with split_by_import), one TRK_LOC_IMPORT level
     * per import, outermost first; sites outside imports keep their paths. */
    int by_import;
    /* Files and modules compare by basename (a diff across builds); a
     * location shows the paths of the first frame seen. */
    int basenames;
    struct trk_frames_options frames;
    /* TRK_SEL_LEAKS: the leak kinds counted in a capture whose leaks are by
     * class (trk_site_leak_kinds); 0: every block live at the end. */
    unsigned leak_kinds;
};

struct trk_ctree {
    struct trk_ctree_options opts;
    struct trk_location *locs;
    size_t nlocs;
    struct trk_ctree_node *nodes; /* nodes[0] is the root */
    size_t nnodes;
    /* internal lookup state follows; treat as opaque */
    void *priv;
};

/* Starts an empty tree. Returns 0 or -1 (out of memory). */
int trk_ctree_init(struct trk_ctree *t, const struct trk_ctree_options *o);

/* Adds the sites of one capture. With process_label non-NULL, its frames go
 * under a TRK_LOC_PROCESS node of that name (use it when a tree spans
 * several captures). Returns 0 or -1 (out of memory). */
int trk_ctree_add(struct trk_ctree *t, const struct trk_profile *p, const struct trk_reader *r,
                  struct trk_symbolizer *s, const char *process_label);

/* trk_ctree_add that also says where each site went: site_node[i] (p->nsites
 * entries) is the node site i adds to, TRK_CTREE_NONE for sites outside the
 * selection. Nodes keep their numbers through finish (not through prune),
 * so a caller can re-sum them by thread or time. */
int trk_ctree_add_sites(struct trk_ctree *t, const struct trk_profile *p,
                        const struct trk_reader *r, struct trk_symbolizer *s,
                        const char *process_label, uint32_t *site_node);

/* The location of frame f as the options key it (line-level unless
 * by_function), added when new: the tree as a table of locations, for
 * reports that group by location and not by path. Location 0 is the
 * root's, so frames number from 1 in the order first seen. Returns
 * TRK_CTREE_NONE when memory ran out. */
uint32_t trk_ctree_location(struct trk_ctree *t, const struct trk_frame *f);

/* Computes totals; call once after the last add. Children are sorted by
 * total bytes, largest first. */
void trk_ctree_finish(struct trk_ctree *t);

/* Merges, under every node, the children whose total is below min_fraction
 * of the root's total into one TRK_LOC_OTHER child. Returns the number of
 * nodes merged away. */
size_t trk_ctree_prune(struct trk_ctree *t, double min_fraction);

void trk_ctree_free(struct trk_ctree *t);

/* The tree's strings (functions, files, modules, labels, and whatever a
 * caller adds), interned by content: equal strings have one id, ids count
 * from 0 in the order strings were first seen. trk_ctree_string_id adds s
 * when new; TRK_CTREE_NONE for NULL or when memory ran out. */
uint32_t trk_ctree_string_id(struct trk_ctree *t, const char *s);
const char *trk_ctree_string(const struct trk_ctree *t, uint32_t id);
size_t trk_ctree_nstrings(const struct trk_ctree *t);

/* A readable name for a location: "function", else "module+0xoffset". */
const char *trk_location_name(const struct trk_location *l, char *buf, size_t len);
/* The same name for a frame as a line-level location of it. */
const char *trk_frame_name(const struct trk_frame *f, char *buf, size_t len);

#endif /* TRK_CALLTREE_H */
