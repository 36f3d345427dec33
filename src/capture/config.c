/* SPDX-License-Identifier: MIT
 *
 * config.c - reads the TRACKER_* environment once, at start, into trk_cfg.
 * Called from the preload constructor; uses getenv only (no allocation).
 * Names, defaults and ranges come from the one table, common/env_options.h;
 * out-of-range values fall back to defaults rather than failing the host.
 */
#include <stdlib.h>

#include "capture/config.h"
#include "capture/events.h"
#include "capture/sample.h"
#include "capture/unwind.h"
#include "common/env_options.h"

/* The defaults hold until trk_config_load runs (and when it never does). */
struct trk_config trk_cfg = {
    .depth = TRK_ENV_DEPTH_DEF,
    .track_mmap = TRK_ENV_MMAP_DEF,
    .follow_fork = TRK_ENV_FOLLOW_FORK_DEF,
    .quiet = TRK_ENV_QUIET_DEF,
    .force = TRK_ENV_FORCE_DEF,
    .rss_ms = TRK_ENV_RSS_MS_DEF,
    .flush_ms = TRK_ENV_FLUSH_MS_DEF,
    .lz4_accel = TRK_ENV_LZ4_ACCEL_DEF,
    .compress = TRK_ENV_COMPRESS_DEF,
    .ring_size = (uint32_t)TRK_ENV_BUFFER_KB_DEF << 10,
    .table_bytes = (uint64_t)TRK_ENV_TABLE_KB_DEF << 10,
};

/* The table's ranges are the ones the capture engine is built for. */
_Static_assert(TRK_ENV_DEPTH_DEF == TRK_DEPTH_DEFAULT && TRK_ENV_DEPTH_MAX == TRK_DEPTH_MAX,
               "TRACKER_DEPTH in env_options.h and capture.h");

void trk_config_load(void)
{
    trk_cfg.depth = (int)trk_env_long(TRK_ENV_DEPTH);
    trk_cfg.track_mmap = (int)trk_env_long(TRK_ENV_MMAP);
    trk_cfg.follow_fork = (int)trk_env_long(TRK_ENV_FOLLOW_FORK);
    trk_cfg.quiet = (int)trk_env_long(TRK_ENV_QUIET);
    trk_cfg.force = (int)trk_env_long(TRK_ENV_FORCE);
    trk_cfg.rss_ms = (int)trk_env_long(TRK_ENV_RSS_MS);
    trk_cfg.flush_ms = (int)trk_env_long(TRK_ENV_FLUSH_MS);
    trk_cfg.lz4_accel = (int)trk_env_long(TRK_ENV_LZ4_ACCEL);
    trk_heap_coarse = !trk_env_long(TRK_ENV_HEAP_TSC);
    /* Not ours, PyTorch's (docs/GPU_INTERNALS.md §8): recorded in the header
     * so that reports know GPU events are tensors, not cached segments. */
    const char *nc = getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    trk_cfg.cuda_no_caching = nc && *nc;
    trk_cfg.table_bytes = (uint64_t)trk_env_long(TRK_ENV_TABLE_KB) << 10;
    trk_cfg.sample_bytes = (uint64_t)trk_env_long(TRK_ENV_SAMPLE_BYTES);
    trk_cfg.sample_seed = (uint64_t)trk_env_long(TRK_ENV_SAMPLE_SEED);
    trk_sample_init();
    trk_unwind_configure((int)trk_env_long(TRK_ENV_UNWIND),
                         (unsigned)trk_env_long(TRK_ENV_UNWIND_CHECK));
    trk_cfg.compress = (int)trk_env_long(TRK_ENV_COMPRESS);

    /* The ring must hold the longest record (a module) several times over,
     * and a DATA chunk is at most 16 MiB raw. Round down to a power of two. */
    long kb = trk_env_long(TRK_ENV_BUFFER_KB);
    uint32_t size = (uint32_t)TRK_ENV_BUFFER_KB_MIN << 10;
    while ((uint64_t)size * 2 <= (uint64_t)kb << 10)
        size *= 2;
    trk_cfg.ring_size = size;
}
