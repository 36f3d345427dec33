/* SPDX-License-Identifier: MIT
 *
 * fuzz_mutator.c - a structure-aware libFuzzer mutator for capture files,
 * linked only into the libFuzzer build of fuzz_reader. Every chunk and the
 * header carry a CRC-32C (docs/FORMAT.md §1-2), so byte-level mutations
 * almost only reach the CRC check and the resynchronisation after it. Here
 * most mutations are followed by recomputing every CRC, and some work inside
 * one chunk: its payload is decompressed, mutated as stream bytes and stored
 * back uncompressed with corrected lengths, so that the record decoder and
 * the merge logic see well-framed garbage. A minority of mutations keeps the
 * CRCs wrong on purpose, to keep the framing paths covered too.
 */
#include <lz4.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/huf.h"
#include "common/varint.h"
#include "format/format.h"
#include "fuzz.h"

#define CHUNKS_MAX 512

struct chunk_ref {
    size_t off, len; /* whole chunk: 32-byte head plus stored payload */
};

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t header_end(const uint8_t *d, size_t size)
{
    if (size < TRK_FMT_HEADER_FIXED + 4 || memcmp(d, TRK_FMT_MAGIC, TRK_FMT_MAGIC_LEN) != 0)
        return 0;
    uint32_t hlen = trk_get_le32(d + 12);
    if (hlen < TRK_FMT_HEADER_FIXED + 4 || hlen > size)
        return 0;
    return hlen;
}

/* Whole chunks in file order, found the way the reader resynchronises: at
 * the next "TKCH" whenever a length does not fit. */
static size_t find_chunks(const uint8_t *d, size_t size, struct chunk_ref *out, size_t max)
{
    size_t n = 0, pos = header_end(d, size);
    while (n < max && pos + TRK_CHUNK_HEAD <= size) {
        const uint8_t *hit = memmem(d + pos, size - pos, TRK_CHUNK_MAGIC, 4);
        if (!hit)
            break;
        pos = (size_t)(hit - d);
        if (pos + TRK_CHUNK_HEAD > size)
            break;
        size_t stored = trk_get_le32(d + pos + 12);
        if (stored > size - pos - TRK_CHUNK_HEAD) {
            pos += 4;
            continue;
        }
        out[n].off = pos;
        out[n].len = TRK_CHUNK_HEAD + stored;
        n++;
        pos += TRK_CHUNK_HEAD + stored;
    }
    return n;
}

static void fix_chunk_crc(uint8_t *h)
{
    uint32_t stored = trk_get_le32(h + 12);
    uint32_t crc = trk_crc32c(0, h + 4, 16);
    crc = trk_crc32c(crc, h + 24, 8);
    crc = trk_crc32c(crc, h + TRK_CHUNK_HEAD, stored);
    trk_put_le32(h + 20, crc);
}

static void fix_crcs(uint8_t *d, size_t size)
{
    size_t hlen = header_end(d, size);
    if (hlen)
        trk_put_le32(d + hlen - 4, trk_crc32c(0, d, hlen - 4));
    struct chunk_ref c[CHUNKS_MAX];
    size_t n = find_chunks(d, size, c, CHUNKS_MAX);
    for (size_t i = 0; i < n; i++)
        fix_chunk_crc(d + c[i].off);
}

/* Replaces chunk c's payload by its raw bytes mutated, stored uncompressed.
 * Returns the new size, or 0 when the chunk cannot be handled. */
static size_t mutate_payload(uint8_t *d, size_t size, size_t max_size, struct chunk_ref c)
{
    uint8_t *h = d + c.off;
    size_t stored = c.len - TRK_CHUNK_HEAD;
    size_t raw = trk_get_le32(h + 16);
    size_t room = max_size - size + stored; /* the most the new payload may take */
    if (raw > room || raw > TRK_CHUNK_RAW_MAX)
        return 0;
    uint8_t *tmp = malloc(room ? room : 1);
    if (!tmp)
        return 0;
    size_t len;
    if (h[5] == TRK_CODEC_HUF) {
        if (raw == 0 || trk_huf_decode(h + TRK_CHUNK_HEAD, stored, tmp, raw) < 0) {
            free(tmp);
            return 0;
        }
        len = raw;
    } else if (h[5] == TRK_CODEC_LZ4) {
        int got = LZ4_decompress_safe((const char *)h + TRK_CHUNK_HEAD, (char *)tmp, (int)stored,
                                      (int)raw);
        if (got < 0) {
            free(tmp);
            return 0;
        }
        len = (size_t)got;
    } else {
        memcpy(tmp, h + TRK_CHUNK_HEAD, stored);
        len = stored;
    }
    len = len ? LLVMFuzzerMutate(tmp, len, room) : 0;
    size_t tail = c.off + c.len;
    size_t new_size = size - stored + len;
    memmove(d + c.off + TRK_CHUNK_HEAD + len, d + tail, size - tail);
    memcpy(d + c.off + TRK_CHUNK_HEAD, tmp, len);
    free(tmp);
    h[5] = TRK_CODEC_STORED;
    trk_put_le32(h + 12, (uint32_t)len);
    trk_put_le32(h + 16, (uint32_t)len);
    return new_size;
}

/* Whole-chunk edits: the merge and continuity logic live on chunk order,
 * stream ids and offsets, which byte flips rarely get right. */
static size_t mutate_chunks(uint8_t *d, size_t size, size_t max_size, uint64_t *rng,
                            const struct chunk_ref *c, size_t n)
{
    size_t i = (size_t)(rng_next(rng) % n), j = (size_t)(rng_next(rng) % n);
    uint8_t *h = d + c[i].off;
    switch (rng_next(rng) % 6) {
    case 0: /* duplicate chunk i before chunk j */
        if (size + c[i].len > max_size)
            return size;
        {
            uint8_t *copy = malloc(c[i].len);
            if (!copy)
                return size;
            memcpy(copy, h, c[i].len);
            memmove(d + c[j].off + c[i].len, d + c[j].off, size - c[j].off);
            memcpy(d + c[j].off, copy, c[i].len);
            free(copy);
        }
        return size + c[i].len;
    case 1: /* delete chunk i */
        memmove(h, h + c[i].len, size - c[i].off - c[i].len);
        return size - c[i].len;
    case 2: /* swap chunk i with its successor */
        if (i + 1 < n && c[i].off + c[i].len == c[i + 1].off) {
            size_t a = c[i].len, b = c[i + 1].len;
            uint8_t *copy = malloc(a);
            if (!copy)
                return size;
            memcpy(copy, h, a);
            memmove(h, h + a, b);
            memcpy(h + b, copy, a);
            free(copy);
        }
        return size;
    case 3: /* move chunk i to chunk j's stream */
        memcpy(h + 8, d + c[j].off + 8, 4);
        return size;
    case 4: /* nudge the offset, or the watermark */
        trk_put_le64(h + 24, trk_get_le64(h + 24) + (rng_next(rng) % 9) - 4);
        return size;
    default: /* retype: DATA, WATERMARK, END or an unknown type */
        h[4] = (uint8_t)(rng_next(rng) % 5);
        return size;
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    uint64_t rng = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 1;
    unsigned op = (unsigned)(rng_next(&rng) % 16);
    struct chunk_ref c[CHUNKS_MAX];
    size_t n = find_chunks(data, size, c, CHUNKS_MAX);
    if (op < 2 || n == 0) /* byte-level, CRCs left as they fall */
        return LLVMFuzzerMutate(data, size, max_size);
    if (op < 8) {
        size_t got = mutate_payload(data, size, max_size, c[rng_next(&rng) % n]);
        if (got)
            size = got;
        else
            size = LLVMFuzzerMutate(data, size, max_size);
    } else if (op < 11) {
        size = mutate_chunks(data, size, max_size, &rng, c, n);
    } else {
        size = LLVMFuzzerMutate(data, size, max_size);
    }
    fix_crcs(data, size);
    return size;
}
