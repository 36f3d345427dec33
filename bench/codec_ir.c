/* SPDX-License-Identifier: MIT
 *
 * codec_ir.c - the writer's codec work per raw byte of heap event records,
 * for callgrind (bench/record_ir.py runs it at two repetition counts and
 * divides the difference). Under allocbench the writer's share moves by
 * +-50 instructions per event from run to run (whether a piece reached
 * LZ_MIN_LEN, which codec won), so its cost is counted here instead, on a
 * fixed 64 KiB piece of allocbench-like compact ALLOC/FREE records: the
 * same LZ4-then-HUF decision as src/capture/writer.c, LZ4 tried on one
 * piece in LZ_REPROBE when it saves nothing, and HUF's code reused from
 * piece to piece as the writer does (trk_huf_encode_reuse; "count" as the
 * second argument counts every piece, trk_huf_encode, as before).
 *
 * usage: codec_ir REPS [count]
 */
#include <lz4.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/huf.h"
#include "format/record.h"

#define PIECE      (1u << 16)
#define LZ_REPROBE 8 /* as src/capture/writer.c */

static uint8_t piece[PIECE], lz[PIECE * 2], huf[PIECE];
static char lz_state[1 << 15];

/* allocbench's ring: 1024 live blocks of 16..4096 bytes, one freed and one
 * allocated per step, call-site stacks up to 5000. */
static size_t fill(void)
{
    struct trk_rec_state st = {0};
    uint64_t x = 88172645463325252ull, seq = 0, ts = 1000000, live[1024] = {0};
    uint8_t *p = piece;
    while ((size_t)(p - piece) < PIECE - 2 * TRK_REC_MAX) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned slot = (unsigned)(x % 1024);
        if (live[slot])
            p = trk_enc_free(p, &st, TRK_ALLOC_FREE, ++seq, ts += 300 + x % 700, live[slot]);
        live[slot] = 0x5555550000ull + ((x >> 20) % (1u << 22)) * 16;
        p = trk_enc_alloc(p, &st, TRK_ALLOC_MALLOC, ++seq, ts += 300 + x % 900, live[slot],
                          16 + (x >> 40) % 4081, 1 + (x >> 30) % 5000);
    }
    return (size_t)(p - piece);
}

int main(int argc, char **argv)
{
    long reps = argc > 1 ? atol(argv[1]) : 1;
    int count = argc > 2 && strcmp(argv[2], "count") == 0;
    struct trk_huf_enc st = {0};
    size_t len = fill(), out = 0;
    for (long r = 0; r < reps; r++) {
        size_t l = len;
        if (r % LZ_REPROBE == 0) {
            int n = LZ4_compress_fast_extState(lz_state, (const char *)piece, (char *)lz, (int)len,
                                               (int)sizeof(lz), 1);
            if (n > 0 && (size_t)n <= len - len / 16)
                l = (size_t)n;
        }
        size_t h = l <= len / 2 ? 0
                   : count      ? trk_huf_encode(piece, len, huf, l - 1)
                                : trk_huf_encode_reuse(&st, piece, len, huf, l - 1);
        out += h ? h : l;
    }
    printf("piece=%zu out=%zu\n", len, reps ? out / (size_t)reps : 0);
    return 0;
}
