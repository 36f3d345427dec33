/* SPDX-License-Identifier: MIT
 *
 * sym_util.c - the symbolizer's arena, string interning and demangling.
 * Owns every string and frame array the symbolizer returns. Must not: free
 * or move anything before trk_sym_arena_free (callers keep raw pointers).
 */
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "symbol/sym_util.h"

/* The Itanium C++ ABI demangler from libstdc++ (cxxabi.h is C++ only).
 * Returns a malloc'd string, or NULL with *status != 0. */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

#define BLOCK_MIN (64u * 1024u)

struct trk_sym_block {
    struct trk_sym_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *trk_sym_arena_alloc(struct trk_sym_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    struct trk_sym_block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > BLOCK_MIN ? size : BLOCK_MIN;
        b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        /* A large one-off request gets a block of its own behind the head,
         * so that the head's remaining room is not wasted. */
        if (a->head && cap > BLOCK_MIN) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += size;
    return p;
}

void trk_sym_arena_free(struct trk_sym_arena *a)
{
    struct trk_sym_block *b = a->head;
    while (b) {
        struct trk_sym_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

uint64_t trk_sym_mix64(uint64_t x)
{
    return trk_mix64(x); /* common/hash.h: the one copy of the finaliser */
}

uint64_t trk_sym_hash(const void *p, size_t len, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull ^ seed; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < len; i++) {
        h ^= s[i];
        h *= 0x100000001b3ull;
    }
    return trk_sym_mix64(h);
}

void trk_sym_strings_init(struct trk_sym_strings *t, struct trk_sym_arena *arena)
{
    memset(t, 0, sizeof(*t));
    t->arena = arena;
}

static int strings_grow(struct trk_sym_strings *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    const char **slots = calloc(cap, sizeof(*slots));
    uint64_t *hashes = calloc(cap, sizeof(*hashes));
    if (!slots || !hashes) {
        free(slots);
        free(hashes);
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i])
            continue;
        size_t j = t->hashes[i] & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
        hashes[j] = t->hashes[i];
    }
    free(t->slots);
    free(t->hashes);
    t->slots = slots;
    t->hashes = hashes;
    t->cap = cap;
    return 0;
}

const char *trk_sym_intern_n(struct trk_sym_strings *t, const char *s, size_t len)
{
    if ((t->count + 1) * 2 > t->cap && strings_grow(t) != 0)
        return NULL;
    uint64_t h = trk_sym_hash(s, len, 0);
    size_t j = h & (t->cap - 1);
    while (t->slots[j]) {
        if (t->hashes[j] == h && strncmp(t->slots[j], s, len) == 0 && t->slots[j][len] == 0)
            return t->slots[j];
        j = (j + 1) & (t->cap - 1);
    }
    char *copy = trk_sym_arena_alloc(t->arena, len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s, len);
    copy[len] = 0;
    t->slots[j] = copy;
    t->hashes[j] = h;
    t->count++;
    return copy;
}

const char *trk_sym_intern(struct trk_sym_strings *t, const char *s)
{
    return s ? trk_sym_intern_n(t, s, strlen(s)) : NULL;
}

void trk_sym_strings_free(struct trk_sym_strings *t)
{
    free(t->slots);
    free(t->hashes);
    t->slots = NULL;
    t->hashes = NULL;
    t->cap = t->count = 0;
}

const char *trk_sym_intern_demangled(struct trk_sym_strings *t, const char *name)
{
    if (!name)
        return NULL;
    if (name[0] == '_' && name[1] == 'Z') {
        int status = -1;
        char *d = __cxa_demangle(name, NULL, NULL, &status);
        if (d && status == 0) {
            const char *r = trk_sym_intern(t, d);
            free(d);
            return r;
        }
        free(d);
    }
    return trk_sym_intern(t, name);
}
