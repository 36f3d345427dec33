/* SPDX-License-Identifier: MIT
 *
 * zlink.c - the codec-4 decoder (zlink.h). The encoder is the writer's
 * (capture/lz_link.c).
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createDCtx_advanced */
#include <zstd.h>

#include "common/zlink.h"
#include "format/format.h"

void *trk_zlink_new(void *(*alloc)(void *opaque, size_t n), void (*release)(void *opaque, void *p))
{
    ZSTD_customMem mem = {alloc, release, NULL};
    ZSTD_DCtx *z = alloc ? ZSTD_createDCtx_advanced(mem) : ZSTD_createDCtx();
    if (z && ZSTD_isError(ZSTD_DCtx_setParameter(z, ZSTD_d_windowLogMax, TRK_ZSTD_WINDOW_LOG))) {
        ZSTD_freeDCtx(z);
        z = NULL;
    }
    return z;
}

void trk_zlink_free(void *z)
{
    ZSTD_freeDCtx(z);
}

int trk_zlink_decode(void *z, uint8_t *out, size_t raw_len, const uint8_t *in, size_t stored,
                     const uint8_t *hist, size_t hist_len)
{
    if (!z || ZSTD_isError(ZSTD_DCtx_refPrefix(z, hist_len ? hist : NULL, hist_len)))
        return -1;
    size_t n = ZSTD_decompressDCtx(z, out, raw_len, in, stored);
    return ZSTD_isError(n) || n != raw_len ? -1 : 0;
}
