/* SPDX-License-Identifier: MIT
 *
 * gpu_dump.c - prints, as one JSON object, every GPU record of a capture
 * exactly as the hooks wrote it (docs/FORMAT.md §4), for test_gpu.py:
 *
 *   {"gpu": [{"rec": "alloc"|"free"|"fail"|"map"|"unmap"|"meminfo", "seq",
 *             "tid", "api", "kind", "device", "addr", "size", "stream",
 *             "result", "handle", "offset", "used", "total", "stack",
 *             "frames": [function names, innermost first]}...],
 *    "driver_host": [{"rec": "alloc"|"free"|"mmap"|"munmap", "size"}...],
 *    "scopes": {"enter": N, "exit": N, "unbalanced": N},
 *    "broken_streams": N}
 *
 * "driver_host" lists the host events recorded between a thread's
 * GPU_ENTER and GPU_EXIT. The GPU records are decoded straight from the
 * chunks with the format codec (independent of the reader's GPU support);
 * stacks and modules come from the reader and the symbolizer. A test tool:
 * it allocates freely and exits 1 on any error.
 */
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/huf.h"
#include "common/zlink.h"
#include "format/record.h"
#include "symbol/symbolize.h"
#include "tracker/reader.h"

struct stream {
    uint32_t id;
    uint8_t *buf;
    size_t len, cap;
    int broken;
};

static struct stream *streams;
static size_t nstreams;

static struct stream *stream_of(uint32_t id)
{
    for (size_t i = 0; i < nstreams; i++)
        if (streams[i].id == id)
            return &streams[i];
    streams = realloc(streams, (nstreams + 1) * sizeof(*streams));
    memset(&streams[nstreams], 0, sizeof(*streams));
    streams[nstreams].id = id;
    return &streams[nstreams++];
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void append(struct stream *s, const uint8_t *p, size_t n)
{
    if (s->len + n > s->cap) {
        s->cap = (s->len + n) * 2;
        s->buf = realloc(s->buf, s->cap);
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
}

static int read_chunks(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *file = malloc((size_t)size);
    if (fread(file, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(file);
        return -1;
    }
    fclose(f);
    size_t pos = le32(file + 12);
    static uint8_t raw[16u << 20];
    while (pos + 32 <= (size_t)size && memcmp(file + pos, "TKCH", 4) == 0) {
        const uint8_t *h = file + pos;
        uint32_t stored = le32(h + 12), rawlen = le32(h + 16);
        if (pos + 32 + stored > (size_t)size)
            break;
        if (h[4] == 1) {
            struct stream *s = stream_of(le32(h + 8));
            const uint8_t *payload = h + 32;
            if (h[5] == TRK_CODEC_HUF) {
                if (rawlen > sizeof(raw) || trk_huf_decode(payload, stored, raw, rawlen) < 0) {
                    free(file);
                    return -1;
                }
                payload = raw;
            } else if (h[5] == TRK_CODEC_LZ4_LINK) { /* the stream so far is its history */
                size_t hl = s->len < 65536 ? s->len : 65536;
                int n = LZ4_decompress_safe_usingDict(
                    (const char *)payload, (char *)raw, (int)stored, (int)sizeof(raw),
                    s->len ? (const char *)s->buf + s->len - hl : NULL, (int)hl);
                if (n < 0 || (uint32_t)n != rawlen || le64(h + 24) != s->len) {
                    free(file);
                    return -1;
                }
                payload = raw;
            } else if (h[5] == TRK_CODEC_ZSTD_LINK) { /* the same history, as a prefix */
                static void *z;
                size_t hl = s->len < 65536 ? s->len : 65536;
                if (!z)
                    z = trk_zlink_new(NULL, NULL);
                if (trk_zlink_decode(z, raw, rawlen, payload, stored, hl ? s->buf + s->len - hl : NULL, hl) ||
                    le64(h + 24) != s->len) {
                    free(file);
                    return -1;
                }
                payload = raw;
            } else if (h[5] == 1) {
                int n = LZ4_decompress_safe((const char *)payload, (char *)raw, (int)stored,
                                            (int)sizeof(raw));
                if (n < 0 || (uint32_t)n != rawlen) {
                    free(file);
                    return -1;
                }
                payload = raw;
            }
            if (le64(h + 24) == s->len)
                append(s, payload, rawlen);
            else
                s->broken = 1;
        }
        pos += 32 + stored;
    }
    free(file);
    return 0;
}

struct gpu_rec {
    struct trk_rec r;
    uint64_t tid;
};

static struct gpu_rec *recs;
static size_t nrecs;
static unsigned long enters, exits, unbalanced;

static void decode_streams(void)
{
    printf("\"driver_host\": [");
    int first = 1;
    for (size_t i = 0; i < nstreams; i++) {
        struct stream *s = &streams[i];
        struct trk_rec_state st;
        memset(&st, 0, sizeof(st));
        const uint8_t *p = s->buf, *end = s->buf + s->len;
        uint64_t tid = 0;
        int depth = 0;
        struct trk_rec r;
        for (;;) {
            memset(&r, 0, sizeof(r));
            if (p >= end || trk_rec_decode(&p, end, &st, &r) != 0)
                break;
            const char *host = NULL;
            switch (r.rclass) {
            case TRK_RC_THREAD:
                tid = r.tid;
                break;
            case TRK_RC_GPU_ENTER:
                enters++;
                if (depth++)
                    unbalanced++;
                break;
            case TRK_RC_GPU_EXIT:
                exits++;
                if (--depth)
                    unbalanced++, depth = 0;
                break;
            case TRK_RC_GPU_ALLOC: case TRK_RC_GPU_FREE: case TRK_RC_GPU_FAIL:
            case TRK_RC_GPU_MAP: case TRK_RC_GPU_MEMINFO:
                recs = realloc(recs, (nrecs + 1) * sizeof(*recs));
                recs[nrecs].r = r;
                recs[nrecs++].tid = tid;
                break;
            case TRK_RC_ALLOC: case TRK_RC_REALLOC:
                host = "alloc";
                break;
            case TRK_RC_FREE:
                host = "free";
                break;
            case TRK_RC_MMAP:
                host = "mmap";
                break;
            case TRK_RC_MUNMAP:
                host = "munmap";
                break;
            default:
                break;
            }
            if (host && depth > 0) {
                printf("%s{\"rec\": \"%s\", \"size\": %llu, \"tid\": %llu}", first ? "" : ", ",
                       host, (unsigned long long)r.size, (unsigned long long)tid);
                first = 0;
            }
        }
        if (depth)
            unbalanced++;
        if (p != end)
            s->broken = 1;
    }
    printf("],\n");
}

static void print_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        putchar(*s >= 0x20 ? *s : '?');
    }
    putchar('"');
}

static void print_frames(struct trk_reader *rd, struct trk_symbolizer *sym, uint64_t stack)
{
    uint64_t ips[256];
    int n = stack ? trk_reader_stack(rd, stack, ips, 256) : 0;
    printf("[");
    int first = 1;
    for (int i = 0; i < n; i++) {
        const struct trk_frame *fr;
        int k = trk_symbolize(sym, ips[i], &fr);
        for (int j = 0; j < k; j++) {
            char buf[512];
            const char *name = fr[j].function;
            if (!name) {
                snprintf(buf, sizeof(buf), "%s+0x%llx", fr[j].module ? fr[j].module : "?",
                         (unsigned long long)fr[j].offset);
                name = buf;
            }
            printf("%s", first ? "" : ", ");
            print_string(name);
            first = 0;
        }
    }
    printf("]");
}

static const char *rec_name(const struct trk_rec *r)
{
    switch (r->rclass) {
    case TRK_RC_GPU_ALLOC:
        return "alloc";
    case TRK_RC_GPU_FREE:
        return "free";
    case TRK_RC_GPU_FAIL:
        return "fail";
    case TRK_RC_GPU_MAP:
        return r->op == TRK_GPU_OP_MAP ? "map" : "unmap";
    default:
        return "meminfo";
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gpu_dump CAPTURE\n");
        return 2;
    }
    if (read_chunks(argv[1]) != 0) {
        fprintf(stderr, "gpu_dump: cannot read %s\n", argv[1]);
        return 1;
    }
    char err[512];
    struct trk_reader *rd;
    if (trk_reader_open(argv[1], &rd, err, sizeof(err)) != 0) {
        fprintf(stderr, "gpu_dump: %s\n", err);
        return 1;
    }
    struct trk_event ev;
    while (trk_reader_next(rd, &ev) > 0)
        ;
    struct trk_symbolizer *sym = trk_symbolizer_new(rd, NULL);

    printf("{");
    decode_streams();
    printf("\"gpu\": [\n");
    for (size_t i = 0; i < nrecs; i++) {
        const struct trk_rec *r = &recs[i].r;
        printf("  {\"rec\": \"%s\", \"seq\": %llu, \"tid\": %llu, \"api\": %u, \"kind\": %u, "
               "\"device\": %lld, \"addr\": %llu, \"size\": %llu, \"stream\": %llu, "
               "\"result\": %llu, \"handle\": %llu, \"offset\": %llu, \"used\": %llu, "
               "\"total\": %llu, \"stack\": %llu, \"frames\": ",
               rec_name(r), (unsigned long long)r->seq, (unsigned long long)recs[i].tid,
               r->api, r->kind, (long long)r->device, (unsigned long long)r->addr,
               (unsigned long long)r->size, (unsigned long long)r->stream,
               (unsigned long long)r->result, (unsigned long long)r->handle,
               (unsigned long long)r->offset, (unsigned long long)r->used,
               (unsigned long long)r->total, (unsigned long long)r->stack);
        print_frames(rd, sym, r->stack);
        printf("}%s\n", i + 1 < nrecs ? "," : "");
    }
    unsigned long broken = 0;
    for (size_t i = 0; i < nstreams; i++)
        broken += (unsigned long)streams[i].broken;
    printf("], \"scopes\": {\"enter\": %lu, \"exit\": %lu, \"unbalanced\": %lu}, "
           "\"broken_streams\": %lu}\n",
           enters, exits, unbalanced, broken);
    trk_symbolizer_free(sym);
    trk_reader_close(rd);
    for (size_t i = 0; i < nstreams; i++)
        free(streams[i].buf);
    free(streams);
    free(recs);
    return 0;
}
