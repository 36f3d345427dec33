/* SPDX-License-Identifier: MIT
 *
 * report.h - the text and JSON reports behind `tracker summary`, `tree`,
 * `leaks`, `diff` and `stats`: loading a capture set (readers, profiles,
 * symbolizers), the options those commands share, and one entry point per
 * report. The command files parse argv (src/cli: the option tables) and
 * call in here. Must not: exit, or print errors itself (they come back in err
 * buffers; warnings and progress go through the callbacks in the options).
 */
#ifndef TRK_REPORT_H
#define TRK_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/calltree.h"
#include "analysis/profile.h"
#include "symbol/symbolize.h"

/* ---- Options shared by the report commands -------------------------------- */

struct trk_report_opts {
    const char **debug_dirs; /* --debug-dir, in order; array owned, strings borrowed */
    size_t ndebug_dirs;
    bool all; /* the whole capture set, not just FILE */
    bool keep_allocator_frames;
    bool python_internals; /* show the interpreter's frames in hybrid Python stacks */
    bool hide_imports;     /* hide importlib's Python frames */
    bool native;           /* hybrid Python stacks: native frames beside Python's */
    bool mmap;             /* anonymous mappings count beside the heap */
    bool gpu;              /* --gpu, --device: GPU memory instead of host memory */
    int32_t device;        /* --device N; -1 = every device */
    bool no_driver_host;   /* leave out host memory the GPU driver allocated */
    bool json;
    bool no_progress;
    bool by_import;       /* profiles split sites by Python import chain (flamegraph --by-import) */
    uint64_t temp_allocs; /* temporary rule (profile.h); default 1 */
    uint64_t temp_ns;     /* 0 = time rule off */
    /* Set by the caller. progress gets the capture being read; warn gets
     * symbolizer warnings (possibly repeated across captures: dedupe there). */
    void (*progress)(void *ctx, const char *path, uint64_t done, uint64_t total);
    void *progress_ctx;
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
};

/* Resets o to the defaults. */
void trk_report_opts_init(struct trk_report_opts *o);
void trk_report_opts_free(struct trk_report_opts *o);

/* The frame options (calltree.h) the report options ask for. */
struct trk_frames_options trk_report_frames(const struct trk_report_opts *o);

/* ---- Capture sets ------------------------------------------------------- */

struct trk_report_capture {
    char *path;
    struct trk_reader *r;
    struct trk_symbolizer *sym;
    struct trk_profile prof;
    bool have_prof;
    char label[200]; /* "pid N: command", the process root of trees */
};

struct trk_report_set {
    struct trk_report_capture *v;
    size_t n;
};

/* A file beside a root capture named like a member of its set,
 * <stem>.<pid>.bin or <stem>.<pid>.<n>.bin (docs/FORMAT.md §6). */
struct trk_capture_sibling {
    char *path;
    unsigned long pid, n; /* from the name */
};

/* Lists root's siblings by name only, sorted by (pid, n); whether each
 * belongs to the same run (header session) is the caller's check. Returns 0,
 * or -1 when memory ran out; *out is freed with trk_capture_siblings_free
 * either way. */
int trk_capture_siblings(const char *root, struct trk_capture_sibling **out, size_t *nout);
void trk_capture_siblings_free(struct trk_capture_sibling *v, size_t n);

/* The captures a report covers: path, and with all every sibling of the
 * same run (same header session), by pid. A sibling that cannot be opened
 * is skipped with a warning (a child killed before its header). Returns 0,
 * or -1 with a one-line message in err (path unreadable, no memory); *paths
 * is freed with trk_capture_set_paths_free either way. */
int trk_capture_set_paths(const char *path, bool all, void (*warn)(void *, const char *),
                          void *warn_ctx, char ***paths, size_t *n, char *err, size_t errlen);
void trk_capture_set_paths_free(char **paths, size_t n);

/* "pid N: argv..." on one line, cut with "..." to fit cap bytes. */
void trk_report_label(char *label, size_t cap, const struct trk_reader_info *in);

/* Opens path (and with o->all its sibling captures of the same session,
 * ordered by pid), profiles each and prepares its symbolizer. Returns 0, or
 * -1 with a one-line message in err; *s must be freed either way. */
int trk_report_set_load(struct trk_report_set *s, const char *path, const struct trk_report_opts *o,
                        char *err, size_t errlen);
void trk_report_set_free(struct trk_report_set *s);

/* The selection of spaces (profile.h, trk_spaces_has) for calltree.h and
 * site filtering: heap, plus mmap with --mmap; with --gpu every GPU device
 * instead, with --device N that one. */
uint32_t trk_report_spaces(const struct trk_report_opts *o);

/* Whether a capture of the set loaded PyTorch's CUDA libraries without
 * --cuda-no-caching (then text reports carry a note about its caching
 * allocator). */
bool trk_report_set_uses_torch_cuda(const struct trk_report_set *s);

/* ---- The reports ----------------------------------------------------------
 * Each writes to out and returns 0, or -1 when memory ran out (message in
 * err). */

int trk_report_summary(const struct trk_report_set *s, const struct trk_report_opts *o, size_t rows,
                       bool rows_given, FILE *out, char *err, size_t errlen);

struct trk_tree_report_opts {
    enum trk_select select;
    bool inverted;
    double threshold_pct;  /* children below this share of the root merge into [other] */
    uint64_t max_children; /* the largest children shown under each node (0 = all); one
                            * line (JSON: the parent's "omitted") counts the rest */
    /* --leaks: the leak kinds counted where a capture has classes at exit
     * (TRK_LEAK_SHOW_* bits; 0: every block live at the end). */
    unsigned leak_kinds;
};
int trk_report_tree(const struct trk_report_set *s, const struct trk_report_opts *o,
                    const struct trk_tree_report_opts *t, FILE *out, char *err, size_t errlen);

struct trk_suppressions;

/* Whether a capture of s could not see the program's malloc (it defines
 * its own: TRK_OPT_HEAP_UNSEEN): its heap figures, leaks included, are
 * not the program's. */
bool trk_report_heap_unseen(const struct trk_report_set *s);

/* Whether every capture of s can vouch for its leaks (leak_gate.c): false,
 * with a one-line reason in why, when one is truncated, damaged, holds no
 * event or did not see the program's malloc. */
bool trk_leak_gate_usable(const struct trk_report_set *s, char *why, size_t len);
#define TRK_LEAK_UNSCANNED (TRK_LEAK_CLASS_MAX + 1)

struct trk_leak_totals {
    uint64_t leaked_bytes, leaked_count, stacks; /* the classes listed (all, unclassified) */
    uint64_t suppressed_bytes, suppressed_count, suppressed_stacks;
    /* Of those, indirectly lost blocks hidden only because their leader
     * was (suppressions follow the leak graph: leak_follow.c). */
    uint64_t followed_bytes, followed_count;
    /* By leak class (index TRK_LEAK_* of format.h; 0: not classified), not
     * suppressed, listed or not. classified: some capture had a leak scan. */
    bool classified;
    uint64_t cls_bytes[TRK_LEAK_CLASS_MAX + 1], cls_count[TRK_LEAK_CLASS_MAX + 1];
    uint64_t cls_stacks[TRK_LEAK_CLASS_MAX + 1];
    /* What --fail-on-leak judges, by class at the process's exit (a Python
     * capture listed at its script's end included), suppressions applied
     * to what is listed; index TRK_LEAK_UNSCANNED: blocks of captures
     * without a leak scan. */
    uint64_t gate_bytes[TRK_LEAK_UNSCANNED + 1], gate_count[TRK_LEAK_UNSCANNED + 1];
    bool exit_classes_apart; /* a capture listed at its script's end has exit classes */
};

/* Which leak classes a leaks report lists: bit (1 << TRK_LEAK_*), bit 0
 * for blocks not classified (always listed by default). */
#define TRK_LEAK_SHOW_DEFAULT (1u << 0 | 1u << TRK_LEAK_DEFINITE | 1u << TRK_LEAK_INDIRECT)
#define TRK_LEAK_SHOW_ALL     0x1Fu
/* --fail-on-leak's default: definitely and indirectly lost, and every
 * block of a capture without a leak scan (what it always counted). */
#define TRK_LEAK_FAIL_DEFAULT                                                                      \
    (1u << TRK_LEAK_DEFINITE | 1u << TRK_LEAK_INDIRECT | 1u << TRK_LEAK_UNSCANNED)
struct trk_leak_select {
    unsigned show;
    /* A Python capture's leaks are what was live at the script's end
     * (unclassified); at_exit takes the process's exit and its classes. */
    bool at_exit;
};
/* Parses "definite,indirect,possible,reachable,unclassified,all" into bits;
 * -1 on a bad word. */
int trk_leak_kinds_parse(const char *list, unsigned *out);
const char *trk_leak_class_name(unsigned cls);
/* sup may be NULL; its hit counters are updated. *totals gets the figures
 * --fail-on-leak judges (every group, shown or not). limit: the largest
 * groups shown (0 = all); the rest are counted in one line (JSON: a last
 * {"omitted": {...}} entry). */
int trk_report_leaks(const struct trk_report_set *s, const struct trk_report_opts *o,
                     struct trk_suppressions *sup, size_t limit, FILE *out,
                     struct trk_leak_totals *totals, char *err, size_t errlen);
/* The same, listing the classes sel selects (NULL: the default). */
int trk_report_leaks_sel(const struct trk_report_set *s, const struct trk_report_opts *o,
                         const struct trk_leak_select *sel, struct trk_suppressions *sup,
                         size_t limit, FILE *out, struct trk_leak_totals *totals, char *err,
                         size_t errlen);

int trk_report_diff(const struct trk_report_set *before, const struct trk_report_set *after,
                    const struct trk_report_opts *o, size_t rows, FILE *out, char *err,
                    size_t errlen);

/* ---- Stats (stats_render.c) ------------------------------------------------ */

struct trk_stats;
struct trk_stats_report_opts {
    bool json;
    bool gpu_only;  /* --gpu, --device: the run's identity, then GPU figures only */
    int64_t device; /* --device N; -1 = every device */
};
/* Writes the totals of the capture at file (the stats analysis s) as a
 * table or, with o->json, one JSON object. */
void trk_report_stats(FILE *f, const char *file, const struct trk_stats *s,
                      const struct trk_stats_report_opts *o);

/* ---- Suppressions (LeakSanitizer-style "leak:PATTERN" lines) -------------- */

/* Where a pattern is looked for in a leak's stack (innermost frame first,
 * allocator frames already dropped). A file's "leak:" lines are ANY, as
 * LeakSanitizer's; the default set also uses the two narrower ones. */
enum trk_sup_scope {
    TRK_SUP_ANY,  /* any frame's function, file or module */
    TRK_SUP_TOP,  /* the innermost frame's function, file or module */
    TRK_SUP_CTOR, /* a module's own constructor: the innermost frames are all in
                   * a module matching the pattern, and the next one is the
                   * loader running constructors */
};

struct trk_suppression {
    char *pattern;
    uint64_t hit_bytes, hit_count, hit_stacks; /* what it hid */
    enum trk_sup_scope scope;
    bool builtin;      /* from the default set (suppress_defaults.c) */
    const char *about; /* the default's one-line reason; NULL for a file's */
};
struct trk_suppressions {
    struct trk_suppression *v;
    size_t n;
};

/* Reads a suppressions file. Returns 0, or -1 with "FILE:LINE: why" (or an
 * I/O message) in err; *s must be freed either way. */
int trk_suppressions_load(struct trk_suppressions *s, const char *path, char *err, size_t errlen);
void trk_suppressions_free(struct trk_suppressions *s);

/* LSan matching: text contains pattern, where '*' matches any run of
 * characters, a leading '^' anchors the start and a trailing '$' the end. */
bool trk_suppression_match(const char *pattern, const char *text);

/* One frame of a leak's stack as suppressions see it (NULL: unknown). */
struct trk_sup_frame {
    const char *function, *file, *module;
};
/* The index of the first suppression of s that hides a leak allocated at
 * f[0..n) (innermost first), or -1. */
int32_t trk_suppressions_find(const struct trk_suppressions *s, const struct trk_sup_frame *f,
                              size_t n);

/* The default set (suppress_defaults.c): the C library's, the loader's and
 * libstdc++'s one-time state, which every program leaves live at exit.
 * Appends it to s; returns 0, or -1 when memory ran out. */
int trk_suppressions_add_defaults(struct trk_suppressions *s);
/* Writes the default set as one table (--print-suppressions). */
void trk_suppressions_print_defaults(FILE *f);

/* Suppressions follow the leak graph, as LeakSanitizer's do: a block lost
 * only because its leader (the lost block it hangs from) is lost goes with
 * it. leader[i] is the block whose loss makes block i lost: i itself for a
 * directly lost block, another index for an indirectly lost one (a chain
 * is followed to its end), TRK_SUP_NO_LEADER for a block that is not lost.
 * hit[i] (in: suppression index matching block i's own stack, or -1) gets
 * the index of the suppression that hides the block: its own, else its
 * leader's. Returns the number of blocks hidden through a leader, SIZE_MAX
 * when memory ran out (hit unchanged). O(n).
 * (suppress_follow.c; the leader map comes from the leak classification
 * at exit.) */
#define TRK_SUP_NO_LEADER UINT32_MAX
size_t trk_suppressions_follow(const uint32_t *leader, int32_t *hit, size_t n);

#endif /* TRK_REPORT_H */
