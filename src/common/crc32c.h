/* SPDX-License-Identifier: MIT
 *
 * crc32c.h - CRC-32C (Castagnoli) used by chunk and header checksums.
 * The SSE4.2 instruction where the CPU has it, tables otherwise; never
 * allocates, safe inside the preload.
 */
#ifndef TRK_CRC32C_H
#define TRK_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues a CRC: pass 0 to start. trk_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t trk_crc32c(uint32_t crc, const void *buf, size_t len);

/* The table implementation alone, and whether trk_crc32c uses the CPU's
 * instruction instead (tests compare the two). */
uint32_t trk_crc32c_soft(uint32_t crc, const void *buf, size_t len);
int trk_crc32c_hw_available(void);

#endif /* TRK_CRC32C_H */
