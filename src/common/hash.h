/* SPDX-License-Identifier: MIT
 *
 * hash.h - the hash functions of the hash tables: a 64-bit finalizer
 * (MurmurHash3's fmix64), FNV-1a over a string and a combiner for keys of
 * several words. Header-only, never allocates, no libc calls: safe inside
 * the preload as in the CLI. Must not: change values lightly (tables only
 * use them for slots, but a better spread is measured in bench/).
 */
#ifndef TRK_HASH_H
#define TRK_HASH_H

#include <stdint.h>

#define TRK_FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define TRK_FNV_PRIME  UINT64_C(0x100000001b3)

/* MurmurHash3's finalizer: every input bit reaches every output bit, so
 * tables may take their slot from the low bits. */
static inline uint64_t trk_mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    return k ^ (k >> 33);
}

/* FNV-1a of a NUL-terminated string, continuing from h (TRK_FNV_OFFSET to
 * start); not mixed. */
static inline uint64_t trk_fnv1a_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * TRK_FNV_PRIME;
    return h;
}

/* A string's hash, mixed: ready for a slot. */
static inline uint64_t trk_hash_str(const char *s)
{
    return trk_mix64(trk_fnv1a_str(TRK_FNV_OFFSET, s));
}

/* Folds word v into hash h (boost's hash_combine, then mixed): for keys of
 * several words. */
static inline uint64_t trk_hash_add(uint64_t h, uint64_t v)
{
    return trk_mix64(h ^ (v + UINT64_C(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2)));
}

#endif /* TRK_HASH_H */
