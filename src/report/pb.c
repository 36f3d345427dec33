/* SPDX-License-Identifier: MIT
 *
 * pb.c - protobuf wire encoding into growable buffers and a streaming gzip
 * sink over zlib (see pb.h). Must not: know any message schema.
 */
#include "report/pb.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static bool reserve(struct trk_pb *b, size_t more)
{
    if (b->oom)
        return false;
    if (b->len + more <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void put_varint(struct trk_pb *b, uint64_t v)
{
    if (!reserve(b, 10))
        return;
    while (v >= 0x80) {
        b->p[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->len++] = (uint8_t)v;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void put_key(struct trk_pb *b, uint32_t field, unsigned wire)
{
    put_varint(b, ((uint64_t)field << 3) | wire);
}

void trk_pb_reset(struct trk_pb *b)
{
    b->len = 0;
}

void trk_pb_free(struct trk_pb *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

void trk_pb_uint(struct trk_pb *b, uint32_t field, uint64_t v)
{
    put_key(b, field, WIRE_VARINT);
    put_varint(b, v);
}

void trk_pb_int(struct trk_pb *b, uint32_t field, int64_t v)
{
    /* int64 (not sint64): negative values take ten bytes, two's complement. */
    trk_pb_uint(b, field, (uint64_t)v);
}

void trk_pb_bytes(struct trk_pb *b, uint32_t field, const void *p, size_t n)
{
    put_key(b, field, WIRE_LEN);
    put_varint(b, n);
    if (n && reserve(b, n)) {
        memcpy(b->p + b->len, p, n);
        b->len += n;
    }
}

void trk_pb_string(struct trk_pb *b, uint32_t field, const char *s)
{
    trk_pb_bytes(b, field, s, strlen(s));
}

void trk_pb_message(struct trk_pb *b, uint32_t field, const struct trk_pb *sub)
{
    if (sub->oom)
        b->oom = true;
    trk_pb_bytes(b, field, sub->p, sub->len);
}

void trk_pb_packed(struct trk_pb *b, uint32_t field, const uint64_t *v, size_t n)
{
    if (n == 0)
        return;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += varint_len(v[i]);
    put_key(b, field, WIRE_LEN);
    put_varint(b, len);
    for (size_t i = 0; i < n; i++)
        put_varint(b, v[i]);
}

/* ---- gzip ----------------------------------------------------------------- */

struct trk_gz {
    z_stream zs;
    FILE *f;
    int failed;
    unsigned char out[1 << 16];
};

struct trk_gz *trk_gz_open(FILE *f)
{
    struct trk_gz *z = calloc(1, sizeof(*z));
    if (!z)
        return NULL;
    z->f = f;
    /* windowBits 15 + 16 asks zlib for the gzip wrapper pprof expects. */
    if (deflateInit2(&z->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
        free(z);
        return NULL;
    }
    return z;
}

static int pump(struct trk_gz *z, int flush)
{
    int rc;
    do {
        z->zs.next_out = z->out;
        z->zs.avail_out = sizeof(z->out);
        rc = deflate(&z->zs, flush);
        if (rc == Z_STREAM_ERROR)
            return -1;
        size_t have = sizeof(z->out) - z->zs.avail_out;
        if (have && fwrite(z->out, 1, have, z->f) != have)
            return -1;
    } while (z->zs.avail_out == 0);
    return flush == Z_FINISH && rc != Z_STREAM_END ? -1 : 0;
}

int trk_gz_write(struct trk_gz *z, const void *p, size_t n)
{
    if (z->failed)
        return -1;
    const unsigned char *s = p;
    while (n > 0) {
        /* avail_in is 32-bit: feed huge inputs in slices. */
        uInt part = n > (1u << 30) ? (1u << 30) : (uInt)n;
        z->zs.next_in = (unsigned char *)s;
        z->zs.avail_in = part;
        if (pump(z, Z_NO_FLUSH) < 0) {
            z->failed = 1;
            return -1;
        }
        s += part;
        n -= part;
    }
    return 0;
}

int trk_gz_close(struct trk_gz *z)
{
    if (!z)
        return -1;
    int rc = z->failed ? -1 : 0;
    if (rc == 0) {
        z->zs.next_in = NULL;
        z->zs.avail_in = 0;
        rc = pump(z, Z_FINISH);
    }
    deflateEnd(&z->zs);
    free(z);
    return rc;
}
