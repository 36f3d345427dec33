/* SPDX-License-Identifier: MIT
 *
 * env_options.h - the one table of the TRACKER_* environment variables, the
 * contract between `tracker run` and libtracker.so (as mimalloc's options[]):
 * name, kind, default, range, whether it propagates, one line of help.
 *
 * Read by every side that spells a variable: cli/cmd_run.c sets them,
 * capture/config.c and capture/output.c read them, preload/hooks_proc.c
 * re-adds the propagating ones to an exec'd child's rebuilt environment.
 * tests/integration/test_env_table.py parses this file: it checks every entry
 * across an exec with an emptied environment, and that README.md documents
 * exactly these variables with these defaults. Header-only and constant:
 * the injected library reads it without allocating or stdio.
 */
#ifndef TRK_ENV_OPTIONS_H
#define TRK_ENV_OPTIONS_H

#include <stdlib.h>

/* What a value is. INTERNAL: set by `tracker run` or by the first traced
 * process to tie the captures of one run together, not for people. */
enum trk_env_kind {
    TRK_ENV_BOOL,     /* 0 or 1 */
    TRK_ENV_UINT,     /* decimal in [min, max]; anything else reads as the default */
    TRK_ENV_ENUM,     /* one of the decimal values min..max */
    TRK_ENV_PATH,     /* a file name, read as is */
    TRK_ENV_INTERNAL, /* a number written by us (pid, fd, session hex) */
};

/* Flags. PROPAGATE: an exec'd or spawned child whose rebuilt environment
 * lacks it gets the starting program's value added (README "Exec and the
 * preload"). CLI: read by `tracker` itself, never by libtracker.so. */
#define TRK_ENV_PROPAGATE 1
#define TRK_ENV_CLI       2

/* X(ID, kind, default, min, max, flags, help). The variable is TRACKER_<ID>.
 * For PATH and INTERNAL entries default/min/max are unused (0). */
#define TRK_ENV_TABLE(X)                                                                           \
    X(OUTPUT, PATH, 0, 0, 0, TRK_ENV_PROPAGATE,                                                    \
      "capture path of the first process; others write <stem>.<pid>.bin")                          \
    X(OUTPUT_FD, INTERNAL, 0, 0, 0, 0,                                                             \
      "descriptor of the capture `tracker run` created; read once, by the first process")          \
    X(ROOT_PID, INTERNAL, 0, 0, 0, TRK_ENV_PROPAGATE,                                              \
      "pid of the first traced process of the run")                                                \
    X(SESSION, INTERNAL, 0, 0, 0, TRK_ENV_PROPAGATE,                                               \
      "random id (hex) shared by every capture of the run")                                        \
    X(FORCE, BOOL, 0, 0, 1, TRK_ENV_PROPAGATE, "1: replace existing captures")                     \
    X(DEPTH, UINT, 128, 1, 1024, TRK_ENV_PROPAGATE, "stack depth cap, frames")                     \
    X(MMAP, BOOL, 1, 0, 1, TRK_ENV_PROPAGATE, "0: do not record the mmap family")                  \
    X(FOLLOW_FORK, BOOL, 1, 0, 1, TRK_ENV_PROPAGATE, "0: forked children are not tracked")         \
    X(BUFFER_KB, UINT, 512, 64, 16384, TRK_ENV_PROPAGATE, "per-thread buffer, KiB")                \
    X(TABLE_KB, UINT, 4096, 64, 1048576, TRK_ENV_PROPAGATE,                                        \
      "cap of a stack or code table, KiB (two generations each at most)")                          \
    X(RSS_MS, UINT, 10, 0, 60000, TRK_ENV_PROPAGATE, "RSS sampling period, ms (0 = off)")          \
    X(FLUSH_MS, UINT, 10, 1, 1000, TRK_ENV_PROPAGATE,                                              \
      "writer flush period, ms (up to 4 periods while the program writes little)")                 \
    X(LZ4_ACCEL, UINT, 4, 1, 65537, TRK_ENV_PROPAGATE,                                             \
      "LZ4 acceleration of the writer on long pieces (1 = best compression, higher = less CPU)")   \
    X(HEAP_TSC, BOOL, 0, 0, 1, TRK_ENV_PROPAGATE,                                                  \
      "1: read the TSC at each heap event (~10 ns); 0: heap times up to a 4 ms tick + 1 ms early") \
    X(COMPRESS, BOOL, 1, 0, 1, TRK_ENV_PROPAGATE,                                                  \
      "0: write capture chunks uncompressed (less writer CPU, captures ~15% larger)")              \
    X(PYTHON, ENUM, 2, 0, 2, TRK_ENV_PROPAGATE,                                                    \
      "Python frames: 0 off, 1 Python frames only, 2 hybrid (native and Python)")                  \
    X(PYTHON_ALLOCATORS, BOOL, 0, 0, 1, TRK_ENV_PROPAGATE,                                         \
      "1: record each Python object (pymalloc), not just its arenas")                              \
    X(SAMPLE_BYTES, UINT, 0, 0, 1073741824, TRK_ENV_PROPAGATE,                                     \
      "Poisson sampling: mean bytes between sample points (0 = off: whole stacks)")                \
    X(SAMPLE_SEED, UINT, 0, 0, 2147483647, TRK_ENV_PROPAGATE,                                      \
      "seed of the sampling draws (0 = a new one per process)")                                    \
    X(LEAK_SCAN, BOOL, 1, 0, 1, TRK_ENV_PROPAGATE,                                                 \
      "0: no leak classification (reachability scan) at exit")                                     \
    X(UNWIND, BOOL, 1, 0, 1, TRK_ENV_PROPAGATE,                                                    \
      "0: libunwind walks every stack (1: the own unwinder, libunwind for unusual frames)")        \
    X(UNWIND_CHECK, UINT, 0, 0, 1000000000, TRK_ENV_PROPAGATE,                                     \
      "N > 0: also walk 1 in N stacks with libunwind and count mismatches (`tracker stats`)")      \
    X(QUIET, BOOL, 0, 0, 1, TRK_ENV_PROPAGATE, "1: no notices")                                    \
    X(DISABLE, BOOL, 0, 0, 1, 0,                                                                   \
      "1: load but record nothing (and start exec'd children as they ask)")                        \
    X(LIB, PATH, 0, 0, 0, TRK_ENV_CLI, "the libtracker.so `tracker run` preloads")

/* A string literal, so that it joins literals beside it in messages. */
#define TRK_ENV_NAME(id) "TRACKER_" #id

enum trk_env_id {
#define TRK_ENV_ID_(id, kind, def, lo, hi, flags, help) TRK_ENV_##id,
    TRK_ENV_TABLE(TRK_ENV_ID_)
#undef TRK_ENV_ID_
        TRK_ENV_COUNT
};

/* TRK_ENV_<ID>_DEF, _MIN, _MAX as constant expressions (option ranges,
 * static assertions). */
enum {
#define TRK_ENV_LIM_(id, kind, def, lo, hi, flags, help)                                           \
    TRK_ENV_##id##_DEF = (def), TRK_ENV_##id##_MIN = (lo), TRK_ENV_##id##_MAX = (hi),
    TRK_ENV_TABLE(TRK_ENV_LIM_)
#undef TRK_ENV_LIM_
};

struct trk_env_option {
    const char *name;
    enum trk_env_kind kind;
    int flags;
    long def, min, max;
    const char *help;
};

/* The table as data, indexed by enum trk_env_id. */
static inline const struct trk_env_option *trk_env_option(enum trk_env_id id)
{
    static const struct trk_env_option table[TRK_ENV_COUNT] = {
#define TRK_ENV_ROW_(id, kind, def, lo, hi, flags, help)                                           \
    {TRK_ENV_NAME(id), TRK_ENV_##kind, flags, def, lo, hi, help},
        TRK_ENV_TABLE(TRK_ENV_ROW_)
#undef TRK_ENV_ROW_
    };
    return &table[id];
}

/* Parses a decimal integer in [lo, hi]; def when absent, empty, malformed or
 * out of range (a bad setting must not fail the host program). */
static inline long trk_env_parse(const char *s, long def, long lo, long hi)
{
    if (!s || !*s)
        return def;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (hi + 1) * 10)
            return def;
        v = v * 10 + (*p - '0');
    }
    return (v < lo || v > hi) ? def : v;
}

/* A BOOL, UINT or ENUM entry's value from the environment (getenv only). */
static inline long trk_env_long(enum trk_env_id id)
{
    const struct trk_env_option *o = trk_env_option(id);
    return trk_env_parse(getenv(o->name), o->def, o->min, o->max);
}

#endif /* TRK_ENV_OPTIONS_H */
