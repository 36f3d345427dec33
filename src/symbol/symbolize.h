/* SPDX-License-Identifier: MIT
 *
 * symbolize.h - offline symbolization of captured return addresses with
 * elfutils (libdwfl/libdw): function (C++ demangled), source file and line,
 * inlined calls expanded into frames of their own; falling back to the ELF
 * symbol table, then to module+0xoffset.
 *
 * Modules come from the capture (path, load bias, build-id, segments). Debug
 * info is found next to the file, by build-id under /usr/lib/debug/.build-id
 * and every extra debug directory given, and through debuginfod when
 * DEBUGINFOD_URLS is set. A file whose build-id no longer matches the capture
 * is not trusted: one warning, and its frames fall back to module+offset.
 * Each address is resolved once and cached. Must not: read the capture's
 * events, print (warnings go through the callback).
 */
#ifndef TRK_SYMBOLIZE_H
#define TRK_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "tracker/reader.h"

/* One source-level frame. Strings are interned by the symbolizer and stay
 * valid until trk_symbolizer_free. */
struct trk_frame {
    const char *function; /* demangled name; NULL when unknown */
    const char *file;     /* source file path as recorded in DWARF; NULL when unknown */
    uint32_t line;        /* 0 when unknown */
    uint32_t inlined;     /* 1: inlined into the next (outer) frame of the same address */
    const char *module;   /* object file path (the main executable's real path), NULL if none */
    uint64_t offset;      /* address relative to the module's load bias */
    uint64_t ip;          /* the return address as captured */
    uint32_t python;      /* 1: a Python frame (function = code name, file = co_filename,
                           * module NULL); see trk_ip_is_python */
};

struct trk_symbolizer_options {
    const char *const *debug_dirs; /* extra roots searched like /usr/lib/debug */
    size_t ndebug_dirs;
    /* Receives each warning once (a mismatched build-id, say); may be NULL. */
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
};

struct trk_symbolizer;

/* Prepares a symbolizer for the modules of r (all generations). Returns NULL
 * only when memory runs out. r must outlive the symbolizer. */
struct trk_symbolizer *trk_symbolizer_new(const struct trk_reader *r,
                                          const struct trk_symbolizer_options *opts);

/* Resolves one captured return address. Frames come innermost first: the
 * inlined callees of that address, then the function that contains it.
 * Always at least one frame (module+offset, or just the address). Returns
 * the number of frames and points *frames at them (valid until free; for a
 * Python frame only until the next call, the strings until free). */
int trk_symbolize(struct trk_symbolizer *s, uint64_t ip, const struct trk_frame **frames);

void trk_symbolizer_free(struct trk_symbolizer *s);

#endif /* TRK_SYMBOLIZE_H */
