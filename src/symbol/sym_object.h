/* SPDX-License-Identifier: MIT
 *
 * sym_object.h - one object file of a capture (executable or shared library)
 * as the symbolizer sees it: opened lazily through libdwfl at most once,
 * checked against the capture, then asked for the source frames of
 * file-relative addresses. Must not: cache per address (symbolize.c does),
 * know about load biases or generations, print.
 */
#ifndef TRK_SYM_OBJECT_H
#define TRK_SYM_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "symbol/sym_util.h"
#include "symbol/symbolize.h"

/* Inline nesting deeper than this is cut (innermost frames dropped). */
#define TRK_SYM_MAX_FRAMES 64

/* What all objects of one symbolizer share. */
struct trk_sym_ctx {
    struct trk_sym_arena arena;
    struct trk_sym_strings strings;
    char *debuginfo_path; /* elfutils' search path, extra dirs appended */
    char **debug_dirs;    /* absolute roots searched by build-id: extra dirs, then /usr/lib/debug */
    size_t ndebug_dirs;
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
    const char **warned; /* interned messages already sent */
    size_t nwarned, warned_cap;
};

struct trk_sym_obj;

/* A new, unopened object for the file at path (interned) that the capture
 * describes as m (build-id, segments). pseudo: a kernel-provided object
 * ([vdso]) with no file, never opened. NULL when memory runs out. */
struct trk_sym_obj *trk_sym_obj_new(struct trk_sym_ctx *ctx, const char *path,
                                    const struct trk_module *m, int pseudo);

/* Whether obj is the object for path (interned) with m's build-id. */
int trk_sym_obj_is(const struct trk_sym_obj *obj, const char *path, const struct trk_module *m);

/* Fills out[0..max) with the frames at addr, a virtual address of the file
 * already moved back into the call instruction, innermost first; sets only
 * function, file, line and inlined. Returns how many; 0 when nothing is
 * known (the caller shows module+offset). Opens the file on first use. */
int trk_sym_obj_resolve(struct trk_sym_obj *obj, uint64_t addr, struct trk_frame *out, int max);

void trk_sym_obj_free(struct trk_sym_obj *obj);

/* Sends msg through the options' callback unless it was sent before. */
void trk_sym_warn(struct trk_sym_ctx *ctx, const char *msg);

#endif /* TRK_SYM_OBJECT_H */
