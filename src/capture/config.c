/* SPDX-License-Identifier: MIT
 *
 * config.c - reads the TRACKER_* environment once, at start, into trk_cfg.
 * Called from the preload constructor; uses getenv only (no allocation).
 * Out-of-range values fall back to defaults rather than failing the host.
 */
#include <stdlib.h>

#include "capture/config.h"

struct trk_config trk_cfg = {
    .depth = TRK_DEPTH_DEFAULT,
    .track_mmap = 1,
    .follow_fork = 1,
    .quiet = 0,
    .force = 0,
    .rss_ms = 10,
    .flush_ms = 10,
    .lz4_accel = 4,
    .ring_size = 512u << 10,
};

/* Parses a decimal integer in [lo, hi]; returns def when absent or invalid. */
static long env_long(const char *name, long def, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (hi + 1) * 10)
            return def;
        v = v * 10 + (*p - '0');
    }
    return (v < lo || v > hi) ? def : v;
}

void trk_config_load(void)
{
    trk_cfg.depth = (int)env_long("TRACKER_DEPTH", TRK_DEPTH_DEFAULT, 1, TRK_DEPTH_MAX);
    trk_cfg.track_mmap = (int)env_long("TRACKER_MMAP", 1, 0, 1);
    trk_cfg.follow_fork = (int)env_long("TRACKER_FOLLOW_FORK", 1, 0, 1);
    trk_cfg.quiet = (int)env_long("TRACKER_QUIET", 0, 0, 1);
    trk_cfg.force = (int)env_long("TRACKER_FORCE", 0, 0, 1);
    trk_cfg.rss_ms = (int)env_long("TRACKER_RSS_MS", 10, 0, 60000);
    trk_cfg.flush_ms = (int)env_long("TRACKER_FLUSH_MS", 10, 1, 1000);
    trk_cfg.lz4_accel = (int)env_long("TRACKER_LZ4_ACCEL", 4, 1, 65537);

    /* The ring must hold the longest record (a module) several times over,
     * and a DATA chunk is at most 16 MiB raw. Round down to a power of two. */
    long kb = env_long("TRACKER_BUFFER_KB", 512, 64, 16384);
    uint32_t size = 64u << 10;
    while ((uint64_t)size * 2 <= (uint64_t)kb << 10)
        size *= 2;
    trk_cfg.ring_size = size;
}

/* For the layers above, which read their own settings (src/python). */
long trk_config_env_long(const char *name, long def, long lo, long hi)
{
    return env_long(name, def, lo, hi);
}
