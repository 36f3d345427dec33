/* SPDX-License-Identifier: MIT
 *
 * sym_util.h - private helpers of the symbolizer: a bump arena whose memory
 * never moves (frames and strings handed to callers stay valid until the
 * symbolizer is freed), string interning on top of it, C++ demangling and a
 * 64-bit hash. Must not: know about ELF, DWARF or captures.
 */
#ifndef TRK_SYM_UTIL_H
#define TRK_SYM_UTIL_H

#include <stddef.h>
#include <stdint.h>

struct trk_sym_arena {
    struct trk_sym_block *head;
};

/* Returns size bytes aligned to 16, or NULL when memory runs out. */
void *trk_sym_arena_alloc(struct trk_sym_arena *a, size_t size);
void trk_sym_arena_free(struct trk_sym_arena *a);

/* A set of unique strings: equal strings intern to the same pointer, so
 * that callers may compare names by pointer and duplicates cost nothing. */
struct trk_sym_strings {
    struct trk_sym_arena *arena;
    const char **slots;
    uint64_t *hashes;
    size_t cap, count;
};

void trk_sym_strings_init(struct trk_sym_strings *t, struct trk_sym_arena *arena);
/* The interned copy of the len bytes at s (NUL added); NULL when memory runs
 * out. */
const char *trk_sym_intern_n(struct trk_sym_strings *t, const char *s, size_t len);
const char *trk_sym_intern(struct trk_sym_strings *t, const char *s);
void trk_sym_strings_free(struct trk_sym_strings *t);

/* Interns name, demangled first when it is an Itanium C++ symbol ("_Z...");
 * a name the demangler rejects is kept as it is. NULL in, NULL out. */
const char *trk_sym_intern_demangled(struct trk_sym_strings *t, const char *name);

uint64_t trk_sym_hash(const void *p, size_t len, uint64_t seed);
uint64_t trk_sym_mix64(uint64_t x);

#endif /* TRK_SYM_UTIL_H */
