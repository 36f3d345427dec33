/* SPDX-License-Identifier: MIT
 *
 * huf.h - the HUF chunk codec (docs/FORMAT.md §2): one canonical Huffman
 * code over bytes per chunk, codes of at most TRK_HUF_MAX_LEN bits. Heap
 * records leave ~13% of their bytes to an order-0 code that LZ4, which
 * looks for repeats, cannot find. The encoder runs on the writer thread
 * inside the traced process (never allocates, no libc beyond memset); the
 * decoder treats its input as hostile.
 */
#ifndef TRK_HUF_H
#define TRK_HUF_H

#include <stddef.h>
#include <stdint.h>

#define TRK_HUF_MAX_LEN 11
#define TRK_HUF_TABLE   128 /* the code lengths, a nibble per byte value */

/* Encodes in[0, n) into out; returns the payload length, or 0 when it would
 * not fit in cap bytes (the caller then stores or tries another codec) or
 * when n has fewer than two distinct byte values. */
size_t trk_huf_encode(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

/* What one stream's encoder keeps between pieces (the writer keeps one per
 * stream slot). Counting a piece's bytes and building its code cost ~3.7
 * of the encoder's ~12 instructions per byte, and a stream's byte
 * statistics (heap records) barely move from piece to piece. So the code
 * counted on one piece is reused, smoothed so that every byte value has a
 * code, for the next TRK_HUF_RECOUNT - 1 pieces; sooner where a piece came
 * out more than 1/16 larger than that code promised, or would not fit.
 * Each chunk still carries its own table (docs/FORMAT.md §2): the choice
 * is the encoder's alone. Zeroed: count the next piece. */
#define TRK_HUF_RECOUNT 8
struct trk_huf_enc {
    uint8_t table[TRK_HUF_TABLE]; /* the smoothed lengths, as a chunk carries them */
    uint32_t expect;              /* their cost where counted, bits per 4096 bytes */
    uint8_t age;                  /* pieces since the count (0: count the next) */
};

/* trk_huf_encode with st's code where it is recent, else counting this
 * piece and renewing st. Same result contract; the payload may be a
 * little larger than trk_huf_encode's. */
size_t trk_huf_encode_reuse(struct trk_huf_enc *st, const uint8_t *in, size_t n, uint8_t *out,
                            size_t cap);

/* Decodes a payload of len bytes into exactly raw bytes at out. Returns 0,
 * or -1 when it is malformed (FORMAT.md §2's rules), leaving out undefined. */
int trk_huf_decode(const uint8_t *in, size_t len, uint8_t *out, size_t raw);

#endif /* TRK_HUF_H */
