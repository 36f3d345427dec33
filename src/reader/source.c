/* SPDX-License-Identifier: MIT
 *
 * source.c - buffered file input and chunk framing (docs/FORMAT.md §2).
 * Owns: large reads into a sliding window, CRC checks, resynchronisation on
 * "TKCH" after corruption, and deciding whether the file's tail is truncated.
 * Must not: look inside DATA payloads (decode.c does), or trust any length
 * before its CRC has been checked against bounds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/varint.h"
#include "reader/reader_internal.h"

/* Small captures (most of a run's children, fuzz inputs) get a small window;
 * once a file proves larger than that, reads go in large blocks so that
 * syscalls stay out of profiles. */
#define SRC_FIRST ((size_t)64 << 10)
#define SRC_BLOCK ((size_t)4 << 20)

void trk_src_init(struct trk_src *s, int fd)
{
    memset(s, 0, sizeof(*s));
    s->fd = fd;
}

void trk_src_free(struct trk_src *s)
{
    free(s->buf);
    s->buf = NULL;
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

size_t trk_src_ensure(struct trk_src *s, size_t n)
{
    size_t avail = s->len - s->pos;
    if (avail >= n || s->eof)
        return avail;
    if (s->pos + n > s->cap) {
        /* Slide the unread bytes to the front; grow for a chunk larger than
         * the window, or once the file proved larger than the first one. */
        if (s->pos > 0) {
            memmove(s->buf, s->buf + s->pos, avail);
            s->off += s->pos;
            s->len = avail;
            s->pos = 0;
        }
        size_t want = s->cap == 0 ? SRC_FIRST : s->off > 0 ? SRC_BLOCK : s->cap;
        if (n > s->cap || want > s->cap) {
            size_t cap = want;
            while (cap < n)
                cap *= 2;
            uint8_t *nb = realloc(s->buf, cap);
            if (!nb) {
                s->err = ENOMEM;
                s->eof = true;
                return avail;
            }
            s->buf = nb;
            s->cap = cap;
        }
    }
    while (s->len - s->pos < n) {
        ssize_t got = read(s->fd, s->buf + s->len, s->cap - s->len);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            s->err = errno;
            s->eof = true;
            break;
        }
        if (got == 0) {
            s->eof = true;
            break;
        }
        s->len += (size_t)got;
    }
    return s->len - s->pos;
}

/* Moves pos to the next "TKCH" at or after pos + skip. Returns true when one
 * is found; false at the end of the file, with everything consumed. */
static bool src_seek_magic(struct trk_src *s, size_t skip)
{
    size_t avail = trk_src_ensure(s, skip);
    s->pos += skip < avail ? skip : avail;
    for (;;) {
        avail = s->len - s->pos;
        const uint8_t *hit = memmem(s->buf + s->pos, avail, TRK_CHUNK_MAGIC, 4);
        if (hit) {
            s->pos = (size_t)(hit - s->buf);
            return true;
        }
        if (s->eof) {
            s->pos = s->len;
            return false;
        }
        /* Keep a possible partial magic at the end of the window. */
        size_t keep = avail < 3 ? avail : 3;
        s->pos = s->len - keep;
        if (trk_src_ensure(s, keep + 1) <= keep) {
            s->pos = s->len;
            return false;
        }
    }
}

static uint32_t chunk_crc(const uint8_t *h, const uint8_t *payload, size_t stored)
{
    uint32_t crc = trk_crc32c(0, h + 4, 16);
    crc = trk_crc32c(crc, h + 24, 8);
    return trk_crc32c(crc, payload, stored);
}

/* A framing failure: corruption, unless a chunk cut off by the end of the
 * file is being searched (then it may be part of that chunk's payload, and
 * trk_src_next_chunk decides later which it was). */
static void src_bad(struct trk_reader *r)
{
    if (r->cut_pending)
        r->cut_pending++;
    else
        r->status.checksum_failures++;
}

/* The chunk at pos claims more bytes than the file has left. If a good chunk
 * follows, the claim was a damaged length; if none does, the writer was cut
 * off inside this chunk: truncation (FORMAT.md §2), not corruption. */
static bool src_cut_chunk(struct trk_reader *r, size_t skip)
{
    if (!r->cut_pending)
        r->cut_pending = 1;
    return src_seek_magic(&r->src, skip);
}

/* The bytes at pos cannot form a whole chunk before the end of the file.
 * Returns true when a later chunk was found to continue with. */
static bool src_bad_tail(struct trk_reader *r, size_t avail)
{
    struct trk_src *s = &r->src;
    size_t m = avail < 4 ? avail : 4;
    if (memcmp(s->buf + s->pos, TRK_CHUNK_MAGIC, m) == 0)
        return src_cut_chunk(r, m);
    src_bad(r);
    return src_seek_magic(s, 1);
}

/* End of the file: failures held back for a cut-off chunk were inside it. */
static int src_end(struct trk_reader *r)
{
    if (r->cut_pending) {
        r->status.truncated = true;
        r->status.ends_inside_chunk = true;
        r->cut_pending = 0;
    }
    return 0;
}

int trk_src_next_chunk(struct trk_reader *r, struct trk_chunk *c)
{
    struct trk_src *s = &r->src;
    for (;;) {
        size_t avail = trk_src_ensure(s, TRK_CHUNK_HEAD);
        if (s->err)
            goto read_error;
        if (avail == 0)
            return src_end(r);
        if (avail < TRK_CHUNK_HEAD) {
            if (src_bad_tail(r, avail))
                continue;
            return src_end(r);
        }
        const uint8_t *h = s->buf + s->pos;
        if (memcmp(h, TRK_CHUNK_MAGIC, 4) != 0) {
            src_bad(r);
            if (!src_seek_magic(s, 1))
                return src_end(r);
            continue;
        }
        uint32_t stored = trk_get_le32(h + 12);
        uint32_t raw = trk_get_le32(h + 16);
        size_t need = TRK_CHUNK_HEAD + (size_t)stored;
        if (raw > TRK_CHUNK_RAW_MAX || stored > TRK_STORED_MAX) {
            /* A length no writer produces: the header itself is damaged,
             * unless it runs past the end of the file (then it is the last
             * chunk, cut off, or a damaged one that a good chunk follows). */
            bool found;
            if (r->file_size && s->off + s->pos + need > r->file_size) {
                found = src_cut_chunk(r, 4);
            } else {
                src_bad(r);
                found = src_seek_magic(s, 4);
            }
            if (!found)
                return src_end(r);
            continue;
        }
        avail = trk_src_ensure(s, need);
        if (s->err)
            goto read_error;
        if (avail < need) {
            if (src_bad_tail(r, avail))
                continue;
            return src_end(r);
        }
        h = s->buf + s->pos;
        if (chunk_crc(h, h + TRK_CHUNK_HEAD, stored) != trk_get_le32(h + 20)) {
            src_bad(r);
            if (!src_seek_magic(s, 4))
                return src_end(r);
            continue;
        }
        /* A good chunk after a cut-off one: that length was damage. */
        r->status.checksum_failures += r->cut_pending;
        r->cut_pending = 0;
        c->type = h[4];
        c->codec = h[5];
        c->reserved = trk_get_le16(h + 6);
        c->stream = trk_get_le32(h + 8);
        c->stored_len = stored;
        c->raw_len = raw;
        c->arg = trk_get_le64(h + 24);
        c->payload = h + TRK_CHUNK_HEAD;
        s->pos += need;
        return 1;
    }
read_error:
    trk_reader_set_error(r, "read failed: %s", strerror(s->err));
    return -1;
}
