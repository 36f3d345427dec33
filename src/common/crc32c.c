/* SPDX-License-Identifier: MIT
 *
 * crc32c.c - CRC-32C: the SSE4.2 crc32 instruction where the CPU has it
 * (checked once with cpuid, at the first call), slicing-by-8 tables
 * otherwise. The writer checksums every chunk it writes, so the instruction
 * (8 bytes in ~1 cycle against ~8 table loads) is most of the writer's CRC
 * cost gone. Nothing is set up by a constructor, so the preload can checksum
 * before constructors have run. Never allocates.
 */
#include "crc32c.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static int table_ready;
/* 0: not probed yet, 1: the crc32 instruction, 2: tables. */
static int impl;

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

uint32_t trk_crc32c_soft(uint32_t crc, const void *buf, size_t len)
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

#if defined(__x86_64__)
/* The instruction computes the same reflected CRC-32C as the tables: single
 * bytes up to an 8-byte boundary, then eight bytes per instruction. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        __builtin_memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

int trk_crc32c_hw_available(void)
{
    int i = __atomic_load_n(&impl, __ATOMIC_RELAXED);
    if (!i) {
        unsigned a, b, c, d;
        i = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 1 : 2;
        __atomic_store_n(&impl, i, __ATOMIC_RELAXED);
    }
    return i == 1;
}

uint32_t trk_crc32c(uint32_t crc, const void *buf, size_t len)
{
    if (trk_crc32c_hw_available())
        return crc_hw(crc, buf, len);
    return trk_crc32c_soft(crc, buf, len);
}
#else
int trk_crc32c_hw_available(void)
{
    (void)impl;
    return 0;
}

uint32_t trk_crc32c(uint32_t crc, const void *buf, size_t len)
{
    return trk_crc32c_soft(crc, buf, len);
}
#endif
