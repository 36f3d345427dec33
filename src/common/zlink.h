/* SPDX-License-Identifier: MIT
 *
 * zlink.h - the decoder of codec 4 (linked zstd, docs/FORMAT.md §2): one
 * zstd frame decoded against its stream's history as a raw prefix. Shared
 * by the reader, the exit scan's read-back inside the traced process and
 * the GPU test tool, so that they accept the same frames. Must not know
 * streams or histories: the caller keeps those (common/lz_hist.h).
 */
#ifndef TRK_COMMON_ZLINK_H
#define TRK_COMMON_ZLINK_H

#include <stddef.h>
#include <stdint.h>

/* A decoder whose memory comes from alloc/release (inside the traced
 * process: never malloc), or from malloc when both are NULL. Referencing a
 * prefix makes zstd allocate a dictionary object, so even a decoder on
 * fixed memory needs them. NULL when there is no memory. */
void *trk_zlink_new(void *(*alloc)(void *opaque, size_t n), void (*release)(void *opaque, void *p));
void trk_zlink_free(void *z);
/* The frame at in[0, stored) into out, against hist[0, hist_len): 0 when it
 * decodes to exactly raw_len bytes, else -1 (a bad chunk). Frames whose
 * window is over TRK_ZSTD_WINDOW_LOG are refused. */
int trk_zlink_decode(void *z, uint8_t *out, size_t raw_len, const uint8_t *in, size_t stored,
                     const uint8_t *hist, size_t hist_len);

#endif /* TRK_COMMON_ZLINK_H */
