/* SPDX-License-Identifier: MIT
 *
 * crc32c.c - slicing-by-8 CRC-32C. The tables are filled on first use, not
 * by a constructor, so the preload can checksum before constructors have run.
 * Never allocates.
 */
#include "crc32c.h"

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static int table_ready;

static void crc32c_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (POLY & (0u - (c & 1)));
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
    /* Racing initialisers compute identical tables, so a benign race is fine;
     * the flag is only an optimisation. */
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t trk_crc32c(uint32_t crc, const void *buf, size_t len)
{
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        crc32c_init();
    const uint8_t *p = buf;
    crc = ~crc;
    while (len >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
              table[4][lo >> 24] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^
              table[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}
