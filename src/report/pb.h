/* SPDX-License-Identifier: MIT
 *
 * pb.h - the smallest protobuf encoder that pprof needs (varints, packed
 * varints, length-delimited strings and embedded messages) and a gzip
 * sink to stream the result through zlib. Owns the wire encoding and the
 * compression only. Must not: know any message schema (export_pprof.c does)
 * or hold more than one message in memory at a time when streaming.
 *
 * Buffers never fail loudly: an allocation failure sets `oom`, later calls
 * do nothing, and the caller checks the flag once at the end.
 */
#ifndef TRK_PB_H
#define TRK_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct trk_pb {
    uint8_t *p;
    size_t len, cap;
    bool oom;
};

/* Empties b, keeping its memory for the next message. */
void trk_pb_reset(struct trk_pb *b);
void trk_pb_free(struct trk_pb *b);

/* Field helpers. Zero-valued scalars are still written: proto3 readers
 * treat both the same, and writing them keeps the code free of special
 * cases. */
void trk_pb_uint(struct trk_pb *b, uint32_t field, uint64_t v);
void trk_pb_int(struct trk_pb *b, uint32_t field, int64_t v);
void trk_pb_bytes(struct trk_pb *b, uint32_t field, const void *p, size_t n);
void trk_pb_string(struct trk_pb *b, uint32_t field, const char *s);
/* An embedded message: sub's bytes, length-prefixed. */
void trk_pb_message(struct trk_pb *b, uint32_t field, const struct trk_pb *sub);
/* A packed repeated varint field (omitted when n is 0). */
void trk_pb_packed(struct trk_pb *b, uint32_t field, const uint64_t *v, size_t n);

/* gzip writer: deflate with a gzip wrapper (windowBits 15 + 16). */
struct trk_gz;

/* Returns NULL when memory runs out. */
struct trk_gz *trk_gz_open(FILE *f);
/* Compresses n bytes to the file. Returns 0, or -1 on a zlib or write
 * error (sticky: later writes fail too). */
int trk_gz_write(struct trk_gz *z, const void *p, size_t n);
/* Flushes the trailer and frees z (also after an error). Returns 0 or -1. */
int trk_gz_close(struct trk_gz *z);

#endif /* TRK_PB_H */
