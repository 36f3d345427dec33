/* SPDX-License-Identifier: MIT
 *
 * lz_link.h - the writer's linked encoders (codecs 3 and 4, docs/FORMAT.md
 * §2): per stream, LZ4 state and the stream's previous raw bytes.
 * Called with the writer's flush lock held only.
 */
#ifndef TRK_LZ_LINK_H
#define TRK_LZ_LINK_H

#include <stdint.h>

#include "prim/base.h"

/* The longest piece LZ4's HC encoder takes (lz_link.c); the writer keeps
 * its pieces under it where it can wait longer (writer.c). */
#define TRK_LZLINK_HC_MAX (128u << 10)

/* Compresses the stream's piece src[0, len), which starts at stream offset
 * off, against the stream's earlier bytes. Returns the block's size in dst
 * (at most cap), 0 when LZ4 failed (the stream then starts afresh), -1 when
 * the stream has no encoder (no memory): the caller falls back to codec 1.
 * accel is LZ4's acceleration where the encoder does not pick 1 itself,
 * or LZ4's HC encoder takes the piece while its CPU budget lasts (0.5% of
 * a core, lz_link.c). Whatever the caller then writes (codec 3, HUF or
 * stored), the encoder has the piece in its history. */
int trk_lzlink_compress(uint32_t stream, uint64_t off, const uint8_t *src, uint32_t len,
                        uint8_t *dst, int cap, int accel) TRK_HIDDEN;
/* The same piece as one zstd frame (codec 4) whose prefix is the stream's
 * last TRK_LZ_HIST raw bytes: its size in dst, 0 when zstd failed (the
 * piece did not fit in cap), -1 when there is no encoder (no memory). The
 * piece joins the stream's history either way, as above. */
int trk_lzlink_zstd(uint32_t stream, uint64_t off, const uint8_t *src, uint32_t len, uint8_t *dst,
                    int cap) TRK_HIDDEN;
/* Tests: 1, HC takes every piece it may (HC_MIN) whatever its budget; -1,
 * none; 0, the budget decides (the default). */
void trk_lzlink_hc_force(int mode) TRK_HIDDEN;
/* The stream's next piece was not given to trk_lzlink_compress: its
 * encoder's history no longer ends where the stream does. */
void trk_lzlink_drop(uint32_t stream) TRK_HIDDEN;
/* In a fork child: stream ids restart, every encoder starts afresh. */
void trk_lzlink_fork_child(void) TRK_HIDDEN;

#endif
