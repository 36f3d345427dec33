/* SPDX-License-Identifier: MIT
 *
 * varint.h - LEB128 / zigzag and little-endian primitives shared by the
 * in-process encoder and the offline decoder. Header-only, never allocates,
 * safe inside the preload. Decoders take an end pointer and never read past it.
 */
#ifndef TRK_VARINT_H
#define TRK_VARINT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TRK_VARINT_MAX 10

static inline uint64_t trk_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t trk_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Writes v at p (room for TRK_VARINT_MAX bytes assumed); returns the end. */
static inline uint8_t *trk_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *trk_put_svarint(uint8_t *p, int64_t v)
{
    return trk_put_varint(p, trk_zigzag(v));
}

/* Reads a varint from [*pp, end). Returns 0 and advances *pp, or -1 when the
 * input ends first or the varint is longer than 10 bytes (corrupt). */
static inline int trk_get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return -1;
}

static inline int trk_get_svarint(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
    uint64_t v;
    if (trk_get_varint(pp, end, &v))
        return -1;
    *out = trk_unzigzag(v);
    return 0;
}

static inline void trk_put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void trk_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void trk_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t trk_get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t trk_get_le32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t trk_get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

#endif /* TRK_VARINT_H */
