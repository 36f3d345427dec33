/* SPDX-License-Identifier: MIT
 *
 * tcap.h - a tiny capture writer for unit tests (docs/FORMAT.md): header,
 * DATA chunks with the stored codec, a WATERMARK after each flush, END, and
 * a reader opened on the result. Shared by the profile, call-tree and GPU
 * profile tests so that one writer follows the format. Test code only.
 */
#ifndef TRK_TEST_TCAP_H
#define TRK_TEST_TCAP_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/crc32c.h"
#include "format/record.h"
#include "tracker/reader.h"

/* ---- A tiny capture writer (docs/FORMAT.md): header, DATA chunks with the
 * stored codec, a WATERMARK after each flush, END. Events get consecutive
 * seqs; c->ts is the time of the next event. Heap events use the long
 * record forms, which keep exact ns times (the compact ones of §4.1 round
 * to 1024 ns). ---------------------------------------------------------------- */

#ifndef TC_STREAMS
#define TC_STREAMS 16
#endif
#define TC_FLUSH_AT (256u << 10)
#define CLOCK_BASE  UINT64_C(1000000000)
#define PAGE        4096u

struct tc_stream {
    struct trk_rec_state st;
    uint8_t *buf;
    size_t len, cap;
    uint64_t off;
};

struct tcap {
    uint8_t *file;
    size_t len, cap;
    struct tc_stream s[TC_STREAMS];
    unsigned ns;
    uint64_t seq, ts, chunks;
};

static inline void tc_put(struct tcap *c, const void *p, size_t n)
{
    if (c->len + n > c->cap) {
        c->cap = (c->len + n) * 2;
        c->file = realloc(c->file, c->cap);
        assert_non_null(c->file);
    }
    memcpy(c->file + c->len, p, n);
    c->len += n;
}

static inline void le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void tc_chunk(struct tcap *c, uint8_t type, uint32_t stream, uint64_t arg,
                     const uint8_t *payload, size_t n)
{
    uint8_t h[TRK_CHUNK_HEAD] = {0};
    memcpy(h, TRK_CHUNK_MAGIC, 4);
    h[4] = type;
    h[5] = TRK_CODEC_STORED;
    le(h + 8, stream, 4);
    le(h + 12, n, 4);
    le(h + 16, n, 4);
    le(h + 24, arg, 8);
    uint32_t crc = trk_crc32c(0, h + 4, 16);
    crc = trk_crc32c(crc, h + 24, 8);
    crc = trk_crc32c(crc, payload, n);
    le(h + 20, crc, 4);
    tc_put(c, h, sizeof(h));
    tc_put(c, payload, n);
    c->chunks++;
}

static inline void tc_begin(struct tcap *c)
{
    memset(c, 0, sizeof(*c));
    static const char argv[] = "prog\0--flag";
    uint8_t h[TRK_FMT_HEADER_FIXED + TRK_FMT_TLV_HEAD + sizeof(argv) + 4] = {0};
    uint32_t len = (uint32_t)sizeof(h);
    memcpy(h, TRK_FMT_MAGIC, 8);
    le(h + 8, TRK_FMT_VERSION, 2);
    le(h + 12, len, 4);
    le(h + 16, 4242, 4);
    le(h + 20, 1, 4);
    le(h + 24, 4242, 4);
    le(h + 28, PAGE, 4);
    le(h + 40, CLOCK_BASE, 8);
    le(h + 56, 128, 4);
    le(h + 60, TRK_OPT_MMAP | TRK_OPT_RSS, 4);
    le(h + 64, TRK_TLV_CMDLINE, 2);
    le(h + 68, sizeof(argv), 4);
    memcpy(h + 72, argv, sizeof(argv));
    le(h + len - 4, trk_crc32c(0, h, len - 4), 4);
    tc_put(c, h, len);
    c->ts = CLOCK_BASE;
}

static inline void tc_at(struct tcap *c, uint64_t rel_ns)
{
    c->ts = CLOCK_BASE + rel_ns;
}

static inline void tc_flush(struct tcap *c)
{
    for (unsigned i = 0; i < c->ns; i++) {
        struct tc_stream *s = &c->s[i];
        if (!s->len)
            continue;
        tc_chunk(c, TRK_CHUNK_DATA, i + 1, s->off, s->buf, s->len);
        s->off += s->len;
        s->len = 0;
    }
    uint8_t none = 0;
    tc_chunk(c, TRK_CHUNK_WATERMARK, 0, c->seq + 1, &none, 0);
}

/* Room for one record of up to need bytes in stream s; tc_commit ends it. */
static inline uint8_t *tc_room_n(struct tcap *c, unsigned s, size_t need)
{
    struct tc_stream *st = &c->s[s];
    while (st->len + need > st->cap) {
        st->cap = st->cap ? st->cap * 2 : 4096;
        st->buf = realloc(st->buf, st->cap);
        assert_non_null(st->buf);
    }
    return st->buf + st->len;
}

/* Room for one fixed-size record (or a thread name) in stream s. */
static inline uint8_t *tc_room(struct tcap *c, unsigned s)
{
    return tc_room_n(c, s, TRK_REC_MAX + TRK_THREAD_NAME_MAX);
}

static inline void tc_commit(struct tcap *c, unsigned s, uint8_t *end)
{
    c->s[s].len = (size_t)(end - c->s[s].buf);
    if (c->s[s].len > TC_FLUSH_AT)
        tc_flush(c);
}

/* A new stream for thread tid; returns its handle. */
static inline unsigned tc_thread(struct tcap *c, uint32_t tid, int internal)
{
    assert_true(c->ns < TC_STREAMS);
    unsigned s = c->ns++;
    uint8_t *p = tc_room(c, s);
    p = trk_enc_thread(p, &c->s[s].st, ++c->seq, c->ts, tid, internal ? TRK_THREAD_INTERNAL : 0);
    tc_commit(c, s, p);
    return s;
}

static inline void tc_stack(struct tcap *c, unsigned s, uint64_t id, uint64_t parent, uint64_t ip)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_stack(p, &c->s[s].st, id, parent, ip));
}

static inline void tc_alloc(struct tcap *c, unsigned s, uint64_t addr, uint64_t size, uint64_t stack)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s,
              trk_enc_alloc_long(p, &c->s[s].st, TRK_ALLOC_MALLOC, ++c->seq, c->ts, addr, size, stack));
}

static inline void tc_free(struct tcap *c, unsigned s, uint64_t addr)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_free_long(p, &c->s[s].st, TRK_ALLOC_FREE, ++c->seq, c->ts, addr));
}

static inline void tc_realloc(struct tcap *c, unsigned s, uint64_t old, uint64_t new_addr, uint64_t size,
                       uint64_t stack)
{
    uint8_t *p = tc_room(c, s);
    uint64_t seq = ++c->seq, seq2 = ++c->seq;
    tc_commit(c, s,
              trk_enc_realloc(p, &c->s[s].st, TRK_ALLOC_REALLOC, seq, seq2, c->ts, old, new_addr,
                              size, stack));
}

static inline void tc_mmap(struct tcap *c, unsigned s, uint64_t addr, uint64_t len, uint64_t stack,
                    int file)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(
        c, s,
        trk_enc_mmap(p, &c->s[s].st, ++c->seq, c->ts, addr, len, 3, file ? 1 : 0x22, file, stack));
}

static inline void tc_munmap(struct tcap *c, unsigned s, uint64_t addr, uint64_t len)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_munmap(p, &c->s[s].st, ++c->seq, c->ts, addr, len));
}

static inline void tc_mremap(struct tcap *c, unsigned s, uint64_t old, uint64_t oldlen, uint64_t new_addr,
                      uint64_t newlen, uint64_t flags, uint64_t stack)
{
    uint8_t *p = tc_room(c, s);
    uint64_t seq = ++c->seq, seq2 = ++c->seq;
    tc_commit(c, s,
              trk_enc_mremap(p, &c->s[s].st, seq, seq2, c->ts, old, oldlen, new_addr, newlen, flags,
                             stack));
}

static inline void tc_name(struct tcap *c, unsigned s, uint32_t tid, const char *name)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_thread_name(p, &c->s[s].st, ++c->seq, c->ts, tid, name, strlen(name)));
}

static inline void tc_exit(struct tcap *c, unsigned s)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_thread_exit(p, &c->s[s].st, ++c->seq, c->ts));
}

static inline void tc_rss(struct tcap *c, unsigned s, uint64_t anon, uint64_t file)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_rss(p, &c->s[s].st, ++c->seq, c->ts, anon, file));
}

/* ---- Python records (docs/FORMAT.md §5) ------------------------------------ */

/* A heap event of allocator `kind` (TRK_ALLOC_PYMALLOC, ...). */
static inline void tc_alloc_kind(struct tcap *c, unsigned s, unsigned kind, uint64_t addr,
                                 uint64_t size, uint64_t stack)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_alloc_long(p, &c->s[s].st, kind, ++c->seq, c->ts, addr, size, stack));
}

static inline void tc_free_kind(struct tcap *c, unsigned s, unsigned kind, uint64_t addr)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_free_long(p, &c->s[s].st, kind, ++c->seq, c->ts, addr));
}

/* Code object `id`: its (qualified) name, file and first line. */
static inline void tc_py_code(struct tcap *c, unsigned s, uint64_t id, const char *name,
                              const char *file, uint64_t firstline)
{
    uint8_t *p = tc_room_n(c, s, TRK_REC_PY_MAX);
    tc_commit(c, s,
              trk_enc_py_code(p, id, firstline, name, strlen(name), file, strlen(file)));
}

/* The stack ip of a Python frame: code object `code` at `line`. */
static inline uint64_t tc_pyip(uint64_t code, uint32_t line)
{
    return TRK_PYFRAME_BIT | code << TRK_PYFRAME_LINE_BITS | line;
}

static inline void tc_py_import(struct tcap *c, unsigned s, const char *name)
{
    uint8_t *p = tc_room_n(c, s, TRK_REC_MAX + TRK_PY_STR_MAX);
    tc_commit(c, s, trk_enc_py_import(p, &c->s[s].st, ++c->seq, c->ts, name, strlen(name)));
}

static inline void tc_py_import_end(struct tcap *c, unsigned s)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_py_import_end(p, &c->s[s].st, ++c->seq, c->ts));
}

static inline void tc_py_mark(struct tcap *c, unsigned s, uint64_t what)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_py_mark(p, &c->s[s].st, ++c->seq, c->ts, what));
}

static inline void tc_py_info(struct tcap *c, unsigned s, uint64_t version, uint64_t flags)
{
    uint8_t *p = tc_room(c, s);
    tc_commit(c, s, trk_enc_py_info(p, &c->s[s].st, ++c->seq, c->ts, version, flags));
}

/* Finishes the file (END at c->ts) and opens a reader on a copy of it. */
static inline struct trk_reader *tc_open(struct tcap *c)
{
    tc_flush(c);
    uint8_t end[5 * TRK_VARINT_MAX], *p = end;
    p = trk_put_varint(p, c->ts);
    p = trk_put_varint(p, TRK_END_EXIT);
    p = trk_put_varint(p, c->chunks);
    p = trk_put_varint(p, 0);
    p = trk_put_varint(p, c->ns);
    tc_chunk(c, TRK_CHUNK_END, 0, 0, end, (size_t)(p - end));
    int fd = memfd_create("capture", 0);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, c->file, c->len), (ssize_t)c->len);
    lseek(fd, 0, SEEK_SET);
    struct trk_reader *r = NULL;
    char err[256];
    assert_int_equal(trk_reader_open_fd(fd, "test", &r, err, sizeof(err)), 0);
    return r;
}

static inline void tc_free_all(struct tcap *c)
{
    for (unsigned i = 0; i < TC_STREAMS; i++)
        free(c->s[i].buf);
    free(c->file);
}

/* Defines stacks 1..n in stream s (frame ip 0x1000 * id, no parent). */
static inline void tc_stacks(struct tcap *c, unsigned s, uint64_t n)
{
    for (uint64_t id = 1; id <= n; id++)
        tc_stack(c, s, id, 0, 0x1000 * id);
}

#endif /* TRK_TEST_TCAP_H */
