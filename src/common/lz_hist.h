/* SPDX-License-Identifier: MIT
 *
 * lz_hist.h - a stream's history for the linked LZ4 codec (codec 3,
 * docs/FORMAT.md §2): the last raw bytes of a thread stream, at most
 * TRK_LZ_HIST of them, which a codec-3 piece is decoded against. Shared by
 * the readers (src/reader, the leak scan's read-back); header-only, never
 * allocates (the caller owns a TRK_LZ_HIST-byte buffer), safe inside the
 * preload. Must not know codecs: it only keeps bytes.
 */
#ifndef TRK_LZ_HIST_H
#define TRK_LZ_HIST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* LZ4 matches reach at most 65,535 bytes back, so 64 KiB of history is all
 * a block can refer to. */
#define TRK_LZ_HIST 65536u

/* buf[0, *len) was the last min(TRK_LZ_HIST, bytes seen) bytes of a stream;
 * afterwards it is the same with p[0, n) appended. */
static inline void trk_lz_hist_push(uint8_t *buf, uint32_t *len, const uint8_t *p, size_t n)
{
    if (n >= TRK_LZ_HIST) {
        memcpy(buf, p + (n - TRK_LZ_HIST), TRK_LZ_HIST);
        *len = TRK_LZ_HIST;
        return;
    }
    size_t keep = *len;
    if (keep + n > TRK_LZ_HIST) {
        size_t drop = keep + n - TRK_LZ_HIST;
        memmove(buf, buf + drop, keep - drop);
        keep -= drop;
    }
    memcpy(buf + keep, p, n);
    *len = (uint32_t)(keep + n);
}

#endif
