/* SPDX-License-Identifier: MIT
 *
 * config.h - the capture engine's settings (TRACKER_* environment, read once
 * at start by config.c). Settings of the layers above live with them
 * (src/python/python.h).
 */
#ifndef TRK_CAPTURE_CONFIG_H
#define TRK_CAPTURE_CONFIG_H

#include <stdint.h>

#include "prim/base.h"

#define TRK_DEPTH_DEFAULT 128
#define TRK_DEPTH_MAX     1024
#define TRK_STACK_CACHE   4096 /* per-thread whole-stack cache entries, power of 2 */

/* ---- Configuration (TRACKER_* environment, read once at start) ---------- */

struct trk_config {
    int depth;           /* stack depth cap */
    int track_mmap;      /* record the mmap family */
    int follow_fork;     /* forked children write their own capture */
    int quiet;           /* no notices on stderr (errors still print once) */
    int force;           /* replace existing capture files */
    int rss_ms;          /* RSS sampling period, 0 = off */
    int flush_ms;        /* writer flush period */
    int lz4_accel;       /* LZ4 acceleration of the writer (1 = LZ4_compress_default) */
    uint32_t ring_size;  /* per-thread buffer bytes, power of two */
    int cuda_no_caching; /* PYTORCH_NO_CUDA_MEMORY_CACHING set, not empty */
    /* the cap of one intern table generation, bytes (intern.h) */
    uint64_t table_bytes;
    /* Poisson sampling (sample.h): mean bytes between sampled allocations,
     * 0 = off (every allocation gets its whole stack); the draws' seed,
     * never 0 once loaded (a random one unless TRACKER_SAMPLE_SEED set it). */
    uint64_t sample_bytes;
    uint64_t sample_seed;
    int heap_unseen; /* the program's malloc is not ours (TRK_OPT_HEAP_UNSEEN) */
    int compress;    /* compress chunks where it pays (writer.c) */
};

extern struct trk_config trk_cfg TRK_HIDDEN;

void trk_config_load(void) TRK_HIDDEN;

#endif /* TRK_CAPTURE_CONFIG_H */
