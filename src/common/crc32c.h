/* SPDX-License-Identifier: MIT
 *
 * crc32c.h - CRC-32C (Castagnoli) used by chunk and header checksums.
 * Table-driven, never allocates, safe inside the preload.
 */
#ifndef TRK_CRC32C_H
#define TRK_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues a CRC: pass 0 to start. trk_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t trk_crc32c(uint32_t crc, const void *buf, size_t len);

#endif /* TRK_CRC32C_H */
