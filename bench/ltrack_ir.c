/* SPDX-License-Identifier: MIT
 *
 * ltrack_ir.c - the writer's live-set upkeep (capture/leak_track.c,
 * trk_ltrack_*, and leak_live.c) replayed from a capture, for counting its
 * instructions per event under callgrind without the traced program around
 * it: under valgrind the writer thread of a traced allocbench runs a flush
 * cycle every event or so, where a real run has one every ~20,000. Each DATA
 * chunk goes in as the writer handed it over, the cycles end at the
 * capture's watermarks, and each begins with the watermark that ends it
 * (what flush_cycle computes up front); its last DATA chunk is handed over
 * as the cycle's last (trk_ltrack_last), as flush_cycle does. Not
 * installed, not a test.
 *
 * Usage: ltrack_ir CAPTURE [cycles|plain]
 *   CAPTURE written with TRACKER_COMPRESS=0 (stored chunks only);
 *   plain: no cycles (every FREE kept as an entry until a watermark).
 * Prints the chunks and blocks live at the end, and whether the set read
 * back from the file (the scan's fallback) is the same (exit status 1 if
 * not).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/leakscan.h"
#include "capture/own_mem.h"
#include "common/varint.h"
#include "format/format.h"

/* Whether the DATA chunk at off is the last before the next watermark (the
 * writer hands that one over as its cycle's last: trk_ltrack_last). */
static int last_in_cycle(const uint8_t *d, size_t n, size_t off)
{
    off += TRK_CHUNK_HEAD + trk_get_le32(d + off + 12);
    while (off + TRK_CHUNK_HEAD <= n && d[off + 4] != TRK_CHUNK_WATERMARK) {
        if (d[off + 4] == TRK_CHUNK_DATA)
            return 0;
        off += TRK_CHUNK_HEAD + trk_get_le32(d + off + 12);
    }
    return 1;
}

static uint64_t next_watermark(const uint8_t *d, size_t n, size_t off)
{
    while (off + TRK_CHUNK_HEAD <= n) {
        if (d[off + 4] == TRK_CHUNK_WATERMARK)
            return trk_get_le64(d + off + 24);
        off += TRK_CHUNK_HEAD + trk_get_le32(d + off + 12);
    }
    return UINT64_MAX;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ltrack_ir CAPTURE [cycles|plain]\n");
        return 2;
    }
    int cycles = argc < 3 || strcmp(argv[2], "plain") != 0;
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc(n);
    if (!d || fread(d, 1, n, f) != n) {
        fprintf(stderr, "ltrack_ir: cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(f);
    size_t off = trk_get_le32(d + 12), chunks = 0;
    trk_ltrack_start();
    if (cycles)
        trk_ltrack_cycle(next_watermark(d, n, off));
    while (off + TRK_CHUNK_HEAD <= n && !memcmp(d + off, TRK_CHUNK_MAGIC, 4)) {
        uint32_t stored = trk_get_le32(d + off + 12);
        uint64_t arg = trk_get_le64(d + off + 24);
        if (d[off + 4] == TRK_CHUNK_DATA) {
            if (d[off + 5] != TRK_CODEC_STORED) {
                fprintf(stderr, "ltrack_ir: a compressed chunk: capture with TRACKER_COMPRESS=0\n");
                return 1;
            }
            if (cycles && last_in_cycle(d, n, off))
                trk_ltrack_last();
            trk_ltrack_piece(trk_get_le32(d + off + 8), arg, d + off + TRK_CHUNK_HEAD, stored);
            chunks++;
        }
        size_t here = off;
        off += TRK_CHUNK_HEAD + stored;
        if (d[here + 4] == TRK_CHUNK_WATERMARK) {
            if (cycles)
                trk_ltrack_cycle(0);
            trk_ltrack_watermark(arg);
            if (cycles)
                trk_ltrack_cycle(next_watermark(d, n, off));
        }
    }
    if (cycles)
        trk_ltrack_cycle(0);
    uint64_t own[TRK_OWN_FIELDS];
    trk_own_snapshot(own); /* fields 12, 13: the leak scan's bytes and peak */
    printf("live-set memory: %.1f MiB, peak %.1f MiB\n", own[12] / 1048576.0, own[13] / 1048576.0);
    struct trk_lset s;
    if (trk_lset_load(&s, -1)) {
        fprintf(stderr, "ltrack_ir: the live set broke\n");
        return 1;
    }
    /* The same set read back from the file (the scan's fallback): the
     * kept one must be it, block for block. */
    struct trk_lset r;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0 || trk_lset_load(&r, fd)) {
        fprintf(stderr, "ltrack_ir: cannot read the set back\n");
        return 1;
    }
    close(fd);
    size_t same = r.n == s.n;
    for (size_t i = 0; same && i < s.n; i++)
        same = s.v[i].addr == r.v[i].addr && s.v[i].size == r.v[i].size;
    printf("chunks=%zu live=%zu read back=%zu %s\n", chunks, s.n, r.n, same ? "same" : "DIFFERENT");
    trk_lset_free(&s);
    trk_lset_free(&r);
    if (!same)
        return 1;
    free(d);
    return 0;
}
