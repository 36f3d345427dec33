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
    int depth;          /* stack depth cap */
    int track_mmap;     /* record the mmap family */
    int follow_fork;    /* forked children write their own capture */
    int quiet;          /* no notices on stderr (errors still print once) */
    int force;          /* replace existing capture files */
    int rss_ms;         /* RSS sampling period, 0 = off */
    int flush_ms;       /* writer flush period */
    int lz4_accel;      /* LZ4 acceleration of the writer (1 = LZ4_compress_default) */
    int compress;       /* compress chunks where it pays (writer.c) */
    uint32_t ring_size; /* per-thread buffer bytes, power of two */
};

extern struct trk_config trk_cfg TRK_HIDDEN;

void trk_config_load(void) TRK_HIDDEN;

#endif /* TRK_CAPTURE_CONFIG_H */
