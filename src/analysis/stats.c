/* SPDX-License-Identifier: MIT
 *
 * stats.c - `tracker stats` totals as a view of the profile pass: the
 * accounting rules live in profile.c only, so the totals of every report
 * agree with `tracker stats` by construction; also the names of GPU kinds
 * and spaces, and Python's version, that every output shares. Must not:
 * keep rules of its own, or hold more than the profile does (the live set
 * and the sites).
 */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/profile.h"
#include "analysis/stats.h"

int trk_stats_compute(struct trk_reader *r, struct trk_stats *out)
{
    /* The smallest timeline: stats prints none. */
    struct trk_profile_options opts = {.timeline_points = 2};
    struct trk_profile p;
    int rc = trk_profile_compute(r, &opts, &p);
    *out = p.totals;
    p.totals.command = NULL; /* moved to *out */
    p.totals.gpu = NULL;
    p.totals.ngpu = 0;
    trk_profile_free(&p);
    return rc;
}

const struct trk_gpu_stats *trk_stats_gpu(const struct trk_stats *s, int32_t device)
{
    for (size_t i = 0; i < s->ngpu; i++)
        if (s->gpu[i].device == device)
            return &s->gpu[i];
    return NULL;
}

const char *trk_gpu_kind_name(unsigned kind)
{
    static const char *const names[] = {
        [TRK_GPU_DEVICE] = "device",
        [TRK_GPU_MANAGED] = "managed",
        [TRK_GPU_PINNED_HOST] = "pinned_host",
        [TRK_GPU_ASYNC] = "async",
        [TRK_GPU_VMM_PHYS] = "vmm",
        [TRK_GPU_IMPORTED] = "imported",
        [TRK_GPU_ARRAY] = "array",
        [TRK_GPU_VA_RESERVE] = "va_reserve",
        [TRK_GPU_HOST_REGISTER] = "host_register",
    };
    if (kind >= sizeof(names) / sizeof(names[0]) || !names[kind])
        return "unknown";
    return names[kind];
}

const char *trk_space_label(uint32_t space, unsigned kind, char *buf, size_t len)
{
    if (space == TRK_SPACE_HEAP)
        snprintf(buf, len, "heap");
    else if (space == TRK_SPACE_MMAP)
        snprintf(buf, len, "anon mmap");
    else if (space == TRK_SPACE_GPU_UNKNOWN)
        snprintf(buf, len, "GPU ? %s", trk_gpu_kind_name(kind));
    else if (trk_space_is_gpu(space))
        snprintf(buf, len, "GPU %d %s", (int)trk_space_device(space), trk_gpu_kind_name(kind));
    else
        snprintf(buf, len, "space %u", (unsigned)space);
    return buf;
}

const char *trk_python_version(uint64_t hex, char *buf, size_t len)
{
    /* PY_VERSION_HEX: major, minor, micro bytes, then the release level
     * nibble (0xA alpha, 0xB beta, 0xC candidate, 0xF final) and serial. */
    unsigned major = (unsigned)(hex >> 24) & 0xFF, minor = (unsigned)(hex >> 16) & 0xFF;
    unsigned micro = (unsigned)(hex >> 8) & 0xFF, level = (unsigned)(hex >> 4) & 0xF;
    unsigned serial = (unsigned)hex & 0xF;
    const char *tag = level == 0xA ? "a" : level == 0xB ? "b" : level == 0xC ? "rc" : NULL;
    if (tag)
        snprintf(buf, len, "%u.%u.%u%s%u", major, minor, micro, tag, serial);
    else
        snprintf(buf, len, "%u.%u.%u", major, minor, micro);
    return buf;
}

void trk_stats_free(struct trk_stats *s)
{
    free(s->command);
    s->command = NULL;
    free(s->gpu);
    s->gpu = NULL;
    s->ngpu = 0;
}
