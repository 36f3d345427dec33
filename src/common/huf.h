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

/* Decodes a payload of len bytes into exactly raw bytes at out. Returns 0,
 * or -1 when it is malformed (FORMAT.md §2's rules), leaving out undefined. */
int trk_huf_decode(const uint8_t *in, size_t len, uint8_t *out, size_t raw);

#endif /* TRK_HUF_H */
