/* SPDX-License-Identifier: MIT
 *
 * lz_link.c - the writer's linked LZ4 encoder (codec 3, docs/FORMAT.md §2).
 *
 * The writer flushes each thread's new bytes every ~10 ms, and a Python
 * program's stream hands it 1-16 KiB pieces: LZ4 on each piece alone finds
 * only the repeats inside it, though the loop that made the piece made the
 * previous one too. Here each stream keeps an LZ4 stream state whose
 * dictionary is the stream's last raw bytes (up to 64 KiB), which the
 * reader keeps as well (common/lz_hist.h): json_roundtrip.py's capture
 * went from 70 to ~50 KB (bench/results_size.md).
 *
 * Owns: the per-stream encoder slots (mapped at a stream's first piece,
 * whichever thread writes it: a raw mmap, no malloc; never unmapped),
 * their history. Must not: write chunks or decide codecs (the
 * writer does), or run without the writer's flush lock.
 */
#include <lz4.h>
#include <string.h>

#include "capture/lz_link.h"
#include "capture/own_mem.h"
#include "common/lz_hist.h"

/* Streams map to slots by id modulo NSLOT; a stream that finds its slot
 * taken by another takes it over, and the other starts afresh when it
 * comes back: still correct (an encoder with less history only finds fewer
 * matches), and programs with more than NSLOT busy threads are the heap-
 * record-heavy ones where HUF, not LZ4, wins anyway. */
#define NSLOT 16
/* Pieces up to HIST_ROOM - TRK_LZ_HIST bytes are copied behind the history
 * (LZ4's prefix mode, which sees all of it); longer ones are compressed in
 * place with the history as an external dictionary. */
#define HIST_ROOM (2 * TRK_LZ_HIST)
/* LZ4's thorough setting (acceleration 1) where it is cheap: on short
 * pieces (a program that makes them makes few bytes a second), on a
 * stream's first EARLY_BYTES (written once: a Python program's start-up,
 * 40-100 KiB of stack nodes, shrank ~10% more; an empty script's capture
 * 39.4 -> 35.3 KB, for under a millisecond), and on a stream whose last
 * piece shrank this much (a loop's records: LZ4 spends its time per
 * literal, and there are few). Elsewhere the caller's. */
#define SHORT_PIECE 16384
#define EARLY_BYTES (256u << 10)
#define DENSE       4

struct slot {
    LZ4_stream_t lz;
    uint32_t stream; /* UINT32_MAX: free */
    uint32_t hlen;   /* the encoder's dictionary ends at hist + hlen */
    uint32_t dense;  /* the last piece shrank DENSE-fold or more */
    uint64_t next;   /* stream offset just after the history */
    uint8_t hist[HIST_ROOM];
};

static struct slot *slots[NSLOT];

int trk_lzlink_compress(uint32_t stream, uint64_t off, const uint8_t *src, uint32_t len,
                        uint8_t *dst, int cap, int accel)
{
    struct slot **sp = &slots[stream % NSLOT], *s = *sp;
    if (!s) {
        if (!(s = trk_own_map(TRK_OWN_WRITER, sizeof(*s))))
            return -1;
        s->stream = UINT32_MAX;
        *sp = s;
    }
    if (s->stream != stream || s->next != off) {
        /* A new stream, or one whose pieces bypassed us: no history (a
         * block that uses less than the reader's dictionary is still
         * exact). */
        LZ4_initStream(&s->lz, sizeof(s->lz));
        s->stream = stream;
        s->hlen = 0;
        s->dense = 0;
    }
    if (len < SHORT_PIECE || off < EARLY_BYTES || s->dense)
        accel = 1;
    int n;
    if (len <= HIST_ROOM - TRK_LZ_HIST) {
        if (s->hlen + len > HIST_ROOM)
            s->hlen = (uint32_t)LZ4_saveDict(&s->lz, (char *)s->hist, (int)TRK_LZ_HIST);
        memcpy(s->hist + s->hlen, src, len);
        n = LZ4_compress_fast_continue(&s->lz, (const char *)s->hist + s->hlen, (char *)dst,
                                       (int)len, cap, accel);
        s->hlen += len;
    } else {
        n = LZ4_compress_fast_continue(&s->lz, (const char *)src, (char *)dst, (int)len, cap,
                                       accel);
        /* src is the ring's: the history must not point into it */
        s->hlen = (uint32_t)LZ4_saveDict(&s->lz, (char *)s->hist, (int)TRK_LZ_HIST);
    }
    if (n <= 0) {
        s->stream = UINT32_MAX;
        return 0;
    }
    s->next = off + len;
    s->dense = (uint32_t)n * DENSE <= len;
    return n;
}

void trk_lzlink_drop(uint32_t stream)
{
    struct slot *s = slots[stream % NSLOT];
    if (s && s->stream == stream)
        s->stream = UINT32_MAX;
}

void trk_lzlink_fork_child(void)
{
    for (int i = 0; i < NSLOT; i++)
        if (slots[i])
            slots[i]->stream = UINT32_MAX;
}
