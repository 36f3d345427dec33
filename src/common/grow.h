/* SPDX-License-Identifier: MIT
 *
 * grow.h - growing an array by doubling: the one copy of what every table
 * of the reader, analysis and report layers needs. Header-only. trk_grow
 * uses realloc, so it is for code outside the traced process;
 * trk_grow_with takes the allocator as a callback (the preload's arena, an
 * mmap), so in-process code can share the arithmetic without malloc.
 * Must not: shrink, or zero new elements (callers set what they add).
 */
#ifndef TRK_GROW_H
#define TRK_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Resizes block p of old_bytes to new_bytes, keeping its contents; returns
 * the block or NULL (p untouched). */
typedef void *(*trk_resize_fn)(void *ctx, void *p, size_t old_bytes, size_t new_bytes);

/* The capacity, doubling from first (or *cap), that holds need elements of
 * elem bytes: 0 when that would overflow. */
static inline size_t trk_grow_cap(size_t cap, size_t need, size_t elem, size_t first)
{
    size_t n = cap ? cap : first;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem)
            return 0;
        n *= 2;
    }
    return n > SIZE_MAX / elem ? 0 : n;
}

/* Makes *v (of *cap elements of elem bytes) hold at least need elements,
 * through resize. Returns 0, or -1 (out of memory or overflow; *v and *cap
 * unchanged). */
static inline int trk_grow_with(void **v, size_t *cap, size_t need, size_t elem,
                                trk_resize_fn resize, void *ctx)
{
    if (need <= *cap)
        return 0;
    size_t n = trk_grow_cap(*cap, need, elem, 64);
    void *p = n ? resize(ctx, *v, *cap * elem, n * elem) : NULL;
    if (!p)
        return -1;
    *v = p;
    *cap = n;
    return 0;
}

static inline void *trk_grow_realloc(void *ctx, void *p, size_t old_bytes, size_t new_bytes)
{
    (void)ctx;
    (void)old_bytes;
    return realloc(p, new_bytes);
}

/* trk_grow_with on the C heap: for the CLI side only. */
static inline int trk_grow(void **v, size_t *cap, size_t need, size_t elem)
{
    return trk_grow_with(v, cap, need, elem, trk_grow_realloc, NULL);
}

/* trk_grow for a typed array pointer: TRK_GROW(arr, cap, need). */
#define TRK_GROW(arr, cap, need) trk_grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

#endif /* TRK_GROW_H */
