/* SPDX-License-Identifier: MIT
 *
 * lset_file.h - what test_leak_live.c and test_leak_collide.c share: a
 * capture built in memory, chunk by chunk, and the live set taken from it
 * (read back from the file, or the one the writer's tracking kept). Static
 * functions: a test includes it once, after cmocka.h.
 */
#ifndef TRK_TEST_LSET_FILE_H
#define TRK_TEST_LSET_FILE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/leakscan.h"
#include "common/varint.h"
#include "format/format.h"

struct file {
    uint8_t *p;
    size_t n, cap;
};

static void put(struct file *f, const void *p, size_t n)
{
    assert_true(f->n + n <= f->cap);
    memcpy(f->p + f->n, p, n);
    f->n += n;
}

static void chunk(struct file *f, unsigned type, unsigned codec, uint32_t stream,
                  const uint8_t *payload, uint32_t stored, uint32_t raw, uint64_t arg)
{
    uint8_t h[TRK_CHUNK_HEAD] = {0};
    memcpy(h, TRK_CHUNK_MAGIC, 4);
    h[4] = (uint8_t)type;
    h[5] = (uint8_t)codec;
    trk_put_le32(h + 8, stream);
    trk_put_le32(h + 12, stored);
    trk_put_le32(h + 16, raw);
    trk_put_le64(h + 24, arg);
    put(f, h, sizeof h);
    if (stored)
        put(f, payload, stored);
}

/* An empty capture of `cap` bytes at most, its file header written. */
static struct file file_new(size_t cap)
{
    struct file f = {.cap = cap};
    f.p = malloc(f.cap);
    assert_non_null(f.p);
    uint8_t head[16] = {0};
    memcpy(head, TRK_FMT_MAGIC, TRK_FMT_MAGIC_LEN);
    trk_put_le32(head + 12, 16);
    put(&f, head, sizeof head);
    return f;
}

/* The live set into *s, and f freed. Kept (track): the file is not read (an
 * empty one would fail the read-back), the writer's set is taken. */
static void lset_take(struct trk_lset *s, struct file *f, int track)
{
    int fd = memfd_create("capture", 0);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, f->p, track ? 0 : f->n), (ssize_t)(track ? 0 : f->n));
    free(f->p);
    f->p = NULL;
    assert_int_equal(trk_lset_load(s, fd), 0);
    close(fd);
}

#endif
