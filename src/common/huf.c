/* SPDX-License-Identifier: MIT
 *
 * huf.c - the HUF chunk codec (docs/FORMAT.md §2, huf.h). Code lengths come
 * from a plain Huffman construction over the chunk's byte counts, limited to
 * TRK_HUF_MAX_LEN bits; codes are the canonical ones, written most
 * significant bit first. Never allocates.
 */
#include "huf.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#define NSYM 256

/* Code lengths for the counts (0 for absent symbols): a Huffman code, then,
 * where it is deeper than TRK_HUF_MAX_LEN, the long codes cut to that and
 * the Kraft sum brought back to at most 1 by lengthening the rarest
 * symbols' codes, and any room left given back to the most frequent ones.
 * Returns the number of symbols present. */
static unsigned build_lengths(const uint32_t c[NSYM], uint8_t len[NSYM])
{
    /* Leaves sorted by count: a Shell sort, at most 256 of them and one
     * sort per chunk, so it must stay far from n^2. */
    uint16_t leaf[NSYM];
    unsigned n = 0;
    for (unsigned s = 0; s < NSYM; s++)
        if (c[s])
            leaf[n++] = (uint16_t)s;
    memset(len, 0, NSYM);
    if (n < 2)
        return n;
    static const unsigned gaps[] = {109, 41, 19, 5, 1};
    for (unsigned g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
        unsigned gap = gaps[g];
        for (unsigned i = gap; i < n; i++) {
            uint16_t v = leaf[i];
            unsigned j = i;
            while (j >= gap && c[leaf[j - gap]] > c[v]) {
                leaf[j] = leaf[j - gap];
                j -= gap;
            }
            leaf[j] = v;
        }
    }
    /* Two-queue Huffman: leaves 0..n-1, internal nodes n..2n-2 made in
     * non-decreasing weight order; parent[] links every node up. */
    uint64_t w[2 * NSYM];
    uint16_t parent[2 * NSYM];
    for (unsigned i = 0; i < n; i++)
        w[i] = c[leaf[i]];
    unsigned li = 0, ni = n, made = n;
    while (made < 2 * n - 1) {
        unsigned pick[2];
        for (int k = 0; k < 2; k++)
            pick[k] = (li < n && (ni >= made || w[li] <= w[ni])) ? li++ : ni++;
        w[made] = w[pick[0]] + w[pick[1]];
        parent[pick[0]] = parent[pick[1]] = (uint16_t)made;
        made++;
    }
    uint8_t depth[2 * NSYM];
    depth[2 * n - 2] = 0;
    for (int i = (int)(2 * n - 3); i >= 0; i--)
        depth[i] = (uint8_t)(depth[parent[i]] + 1);
    const uint32_t full = 1u << TRK_HUF_MAX_LEN;
    uint32_t kraft = 0;
    for (unsigned i = 0; i < n; i++) {
        if (depth[i] > TRK_HUF_MAX_LEN)
            depth[i] = TRK_HUF_MAX_LEN;
        kraft += full >> depth[i];
    }
    /* Over 1: lengthen from the rarest (n <= 256 codes of the longest
     * length always fit, so this ends). */
    for (unsigned i = 0; i < n && kraft > full; i++)
        while (depth[i] < TRK_HUF_MAX_LEN && kraft > full) {
            depth[i]++;
            kraft -= full >> depth[i];
        }
    /* Room left: shorten from the most frequent while it fits. */
    for (unsigned i = n; i-- > 0;)
        while (depth[i] > 1 && kraft + (full >> depth[i]) <= full) {
            kraft += full >> depth[i];
            depth[i]--;
        }
    for (unsigned i = 0; i < n; i++)
        len[leaf[i]] = depth[i];
    return n;
}

/* Canonical codes (FORMAT.md §2): by length, then by byte value. */
static void canonical(const uint8_t len[NSYM], uint16_t code[NSYM])
{
    unsigned nlen[TRK_HUF_MAX_LEN + 1] = {0};
    for (unsigned s = 0; s < NSYM; s++)
        nlen[len[s]]++;
    nlen[0] = 0;
    unsigned next[TRK_HUF_MAX_LEN + 1], c = 0;
    for (unsigned l = 1; l <= TRK_HUF_MAX_LEN; l++) {
        c = (c + nlen[l - 1]) << 1;
        next[l] = c;
    }
    for (unsigned s = 0; s < NSYM; s++)
        if (len[s])
            code[s] = (uint16_t)next[len[s]]++;
}

/* The codes of in[0, n) from p on; returns the end. lim: how far the
 * buffer goes (the result is known to fit). Compiled twice: with BMI2 the
 * variable shifts need no count register.
 *
 * acc keeps the nb bits not yet written in its low bits (the bits above
 * them are already written). The main loop adds five codes (55 bits at
 * most, nb < 8 before) and then writes all complete bytes with one 8-byte
 * big-endian store, of which the bytes past the complete ones are
 * rewritten by the next store: ~7 instructions per byte where one check
 * and 4-byte write per two codes took ~9 (callgrind). Codes and lengths
 * come from separate tables of 64-bit entries (a load each, rather than a
 * load, a mask, a shift and a widening). The bits are the same either way.
 * Returns NULL where the codes would pass lim (possible only when the
 * lengths were not counted on this input: trk_huf_encode_reuse). */
__attribute__((always_inline)) static inline uint8_t *encode_body(const uint8_t *in, size_t n,
                                                                  const uint64_t code[NSYM],
                                                                  const uint64_t len[NSYM],
                                                                  uint8_t *p, const uint8_t *lim)
{
    uint64_t acc = 0, nb = 0;
    size_t i = 0;
    /* A turn moves p by at most 7 bytes (nb < 8 plus five codes: 62 bits),
     * so how many turns the buffer still holds is known up front: the
     * inner loop tests only i (~0.6 instructions per byte less). */
    for (;;) {
        size_t room = lim - p >= 8 ? (size_t)(lim - p - 8) / 7 + 1 : 0;
        size_t turns = (n - i) / 5 < room ? (n - i) / 5 : room;
        if (!turns)
            break;
        const uint8_t *q = in + i, *qend = q + 5 * turns;
        for (; q < qend; q += 5) {
#pragma GCC unroll 5
            for (int k = 0; k < 5; k++) {
                unsigned c = q[k];
                acc = acc << len[c] | code[c];
                nb += len[c];
            }
            uint64_t v = __builtin_bswap64(acc << (64 - nb)); /* nb >= 5: a code has a bit */
            __builtin_memcpy(p, &v, 8);
            p += nb >> 3;
            nb &= 7;
        }
        i += 5 * turns;
    }
    /* The tail (and the end of a buffer too short for 8-byte stores): a
     * code at a time, whole bytes as they complete. */
    for (; i < n; i++) {
        unsigned c = in[i];
        acc = acc << len[c] | code[c];
        nb += len[c];
        while (nb >= 8) {
            if (p == lim)
                return NULL; /* only a reused table's codes can run past lim */
            nb -= 8;
            *p++ = (uint8_t)(acc >> nb);
        }
    }
    if (nb) {
        if (p == lim)
            return NULL;
        *p++ = (uint8_t)(acc << (8 - nb));
    }
    return p;
}

#if defined(__x86_64__)
__attribute__((target("bmi2"))) static uint8_t *encode_bmi2(const uint8_t *in, size_t n,
                                                            const uint64_t code[NSYM],
                                                            const uint64_t len[NSYM], uint8_t *p,
                                                            const uint8_t *lim)
{
    return encode_body(in, n, code, len, p, lim);
}
#endif

#if defined(__x86_64__)
static int cpu_bmi2(void)
{
    static int bmi2; /* 0: not probed, 1: yes, 2: no */
    if (!bmi2) {
        unsigned a, b, c, d;
        bmi2 = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_BMI2) ? 1 : 2;
    }
    return bmi2 == 1;
}
#endif

static uint8_t *encode_bits(const uint8_t *in, size_t n, const uint64_t code[NSYM],
                            const uint64_t len[NSYM], uint8_t *p, const uint8_t *lim)
{
#if defined(__x86_64__)
    if (cpu_bmi2())
        return encode_bmi2(in, n, code, len, p, lim);
#endif
    return encode_body(in, n, code, len, p, lim);
}

/* Byte counts of in[0, n). Two tables so that consecutive equal bytes do
 * not wait on each other; eight bytes per turn, so that the loop's own
 * count is a fraction of an instruction per byte. */
static void count_bytes(const uint8_t *in, size_t n, uint32_t count[NSYM])
{
    uint32_t count2[NSYM] = {0};
    memset(count, 0, NSYM * sizeof(count[0]));
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
#pragma GCC unroll 4
        for (int k = 0; k < 8; k += 2) {
            count[in[i + k]]++;
            count2[in[i + k + 1]]++;
        }
    }
    for (; i < n; i++)
        count[in[i]]++;
    for (unsigned s = 0; s < NSYM; s++)
        count[s] += count2[s];
}

/* Writes the table of len and the codes of in[0, n) to out; returns the
 * payload length, or 0 where it would pass cap (known beforehand when len
 * was counted on in, found while writing otherwise). */
static size_t encode_with(const uint8_t len[NSYM], const uint8_t *in, size_t n, uint8_t *out,
                          size_t cap)
{
    uint16_t code[NSYM];
    canonical(len, code);
    for (unsigned s = 0; s < NSYM; s += 2)
        out[s / 2] = (uint8_t)(len[s] | len[s + 1] << 4);
    /* 64-bit entries: loaded straight into the registers the shifts use. */
    uint64_t code64[NSYM], len64[NSYM];
    for (unsigned s = 0; s < NSYM; s++) {
        code64[s] = len[s] ? code[s] : 0;
        len64[s] = len[s];
    }
    uint8_t *p = encode_bits(in, n, code64, len64, out + TRK_HUF_TABLE, out + cap);
    return p ? (size_t)(p - out) : 0;
}

static uint64_t code_bits(const uint32_t count[NSYM], const uint8_t len[NSYM])
{
    uint64_t bits = 0;
    for (unsigned s = 0; s < NSYM; s++)
        bits += (uint64_t)count[s] * len[s];
    return bits;
}

size_t trk_huf_encode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    uint32_t count[NSYM];
    count_bytes(in, n, count);
    uint8_t len[NSYM];
    if (n > UINT32_MAX || build_lengths(count, len) < 2 || cap < TRK_HUF_TABLE)
        return 0;
    if (TRK_HUF_TABLE + (code_bits(count, len) + 7) / 8 > cap)
        return 0; /* known before writing a single code */
    return encode_with(len, in, n, out, cap);
}

/* The counted path of trk_huf_encode_reuse: this piece gets its exact
 * code (as trk_huf_encode), and st the smoothed one for the next pieces:
 * built from 16 * count + 1, so that every byte value keeps a code (those
 * absent here get the longest) while the present ones keep nearly their
 * lengths. st->expect: what the smoothed code costs on this piece, in
 * bits per TRK_HUF_EXPECT_ONE input bytes. */
#define TRK_HUF_EXPECT_ONE 4096u
static size_t encode_recount(struct trk_huf_enc *st, const uint8_t *in, size_t n, uint8_t *out,
                             size_t cap)
{
    st->age = 0;
    uint32_t count[NSYM], smooth[NSYM];
    count_bytes(in, n, count);
    uint8_t len[NSYM];
    if (n > UINT32_MAX / 32 || build_lengths(count, len) < 2 || cap < TRK_HUF_TABLE)
        return 0;
    uint64_t bits = code_bits(count, len);
    if (TRK_HUF_TABLE + (bits + 7) / 8 > cap)
        return 0;
    for (unsigned s = 0; s < NSYM; s++)
        smooth[s] = count[s] * 16 + 1;
    uint8_t sl[NSYM];
    build_lengths(smooth, sl); /* all 256 present: every length 1..TRK_HUF_MAX_LEN */
    for (unsigned s = 0; s < NSYM; s += 2)
        st->table[s / 2] = (uint8_t)(sl[s] | sl[s + 1] << 4);
    st->expect = (uint32_t)(code_bits(count, sl) * TRK_HUF_EXPECT_ONE / n);
    st->age = 1;
    return encode_with(len, in, n, out, cap);
}

size_t trk_huf_encode_reuse(struct trk_huf_enc *st, const uint8_t *in, size_t n, uint8_t *out,
                            size_t cap)
{
    if (!st->age || st->age >= TRK_HUF_RECOUNT || n > UINT32_MAX / 32 || cap < TRK_HUF_TABLE)
        return encode_recount(st, in, n, out, cap);
    uint8_t len[NSYM];
    for (unsigned s = 0; s < NSYM; s++)
        len[s] = (st->table[s / 2] >> (4 * (s & 1))) & 15;
    size_t m = encode_with(len, in, n, out, cap);
    if (!m) /* the old code does not fit here: count this piece after all */
        return encode_recount(st, in, n, out, cap);
    st->age++;
    /* Worse than the table promised by more than 1/16: the bytes have
     * changed; count the next piece. */
    uint64_t want = (uint64_t)st->expect * n / TRK_HUF_EXPECT_ONE;
    if ((uint64_t)(m - TRK_HUF_TABLE) * 8 > want + want / 16 + 64)
        st->age = 0;
    return m;
}

static inline uint64_t load_be64(const uint8_t *p)
{
    uint64_t v;
    __builtin_memcpy(&v, p, 8); /* the preload builds with -fno-builtin */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The bulk of a chunk whose code is complete (the Kraft sum exactly 1, as
 * every Huffman code is): then every TRK_HUF_MAX_LEN-bit prefix begins a
 * code, so no lookup can fail and five codes go per refill unchecked (the
 * checks were half of the decoder's cost, which the leak scan at exit pays
 * for every event: leakscan.h). Stops where fewer than 8 input bytes or
 * output symbols are left; the caller's loop, with its checks, finishes.
 * Returns the symbols written; *acc and *nb as the caller's loop keeps them. */
__attribute__((always_inline)) static inline size_t
decode_body(const uint16_t *table, const uint8_t **pp, const uint8_t *end, uint8_t *out, size_t raw,
            uint64_t *accp, unsigned *nbp)
{
    const uint8_t *p = *pp;
    uint64_t acc = *accp;
    unsigned nb = *nbp;
    size_t i = 0;
#define HUF_ONE()                                                                                  \
    do {                                                                                           \
        uint16_t e = table[acc >> (64 - TRK_HUF_MAX_LEN)];                                         \
        out[i++] = (uint8_t)e;                                                                     \
        acc <<= e >> 8;                                                                            \
        nb -= e >> 8;                                                                              \
    } while (0)
    while (end - p >= 8 && raw - i >= 5) {
        acc |= load_be64(p) >> nb; /* then at least 56 valid bits: five codes */
        unsigned take = (63 - nb) >> 3;
        p += take;
        nb += take << 3;
        HUF_ONE();
        HUF_ONE();
        HUF_ONE();
        HUF_ONE();
        HUF_ONE();
    }
#undef HUF_ONE
    *pp = p;
    *accp = acc;
    *nbp = nb;
    return i;
}

#if defined(__x86_64__)
__attribute__((target("bmi2"))) static size_t decode_bmi2(const uint16_t *table, const uint8_t **pp,
                                                          const uint8_t *end, uint8_t *out,
                                                          size_t raw, uint64_t *accp, unsigned *nbp)
{
    return decode_body(table, pp, end, out, raw, accp, nbp);
}
#endif

/* Compiled twice, as the encoder: its shifts by a code's length too. */
static size_t decode_complete(const uint16_t *table, const uint8_t **pp, const uint8_t *end,
                              uint8_t *out, size_t raw, uint64_t *accp, unsigned *nbp)
{
#if defined(__x86_64__)
    if (cpu_bmi2())
        return decode_bmi2(table, pp, end, out, raw, accp, nbp);
#endif
    return decode_body(table, pp, end, out, raw, accp, nbp);
}

int trk_huf_decode(const uint8_t *in, size_t len, uint8_t *out, size_t raw)
{
    if (len < TRK_HUF_TABLE || raw == 0)
        return -1;
    uint8_t l[NSYM];
    unsigned present = 0;
    uint32_t kraft = 0;
    for (unsigned s = 0; s < NSYM; s++) {
        l[s] = (uint8_t)((in[s / 2] >> (4 * (s & 1))) & 15);
        if (l[s] > TRK_HUF_MAX_LEN)
            return -1;
        if (l[s]) {
            present++;
            kraft += 1u << (TRK_HUF_MAX_LEN - l[s]);
        }
    }
    if (present < 2 || kraft > 1u << TRK_HUF_MAX_LEN)
        return -1; /* not a prefix code */
    uint16_t code[NSYM];
    canonical(l, code);
    /* Every TRK_HUF_MAX_LEN-bit prefix maps to exactly one code: the symbol
     * and its length, packed. */
    uint16_t table[1u << TRK_HUF_MAX_LEN];
    memset(table, 0, sizeof(table)); /* length 0: no code starts so */
    for (unsigned s = 0; s < NSYM; s++) {
        if (!l[s])
            continue;
        unsigned shift = TRK_HUF_MAX_LEN - l[s];
        for (unsigned k = (unsigned)code[s] << shift; k < (unsigned)(code[s] + 1) << shift; k++)
            table[k] = (uint16_t)(s | l[s] << 8);
    }
    const uint8_t *p = in + TRK_HUF_TABLE, *end = in + len;
    /* nb valid bits at the top of acc; the bits below them are either zero
     * or the next input bits, which the next refill ORs in again. */
    uint64_t acc = 0;
    unsigned nb = 0;
    size_t i = 0;
    if (kraft == 1u << TRK_HUF_MAX_LEN)
        i = decode_complete(table, &p, end, out, raw, &acc, &nb);
    while (i < raw) {
        if (end - p >= 8) {
            /* Eight bytes at once: at least 56 valid bits, five codes. */
            uint64_t v = (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 |
                         (uint64_t)p[3] << 32 | (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
                         (uint64_t)p[6] << 8 | p[7];
            acc |= v >> nb;
            unsigned take = (63 - nb) >> 3;
            p += take;
            nb += take << 3;
            for (int k = 0; k < 5 && i < raw; k++) {
                uint16_t e = table[acc >> (64 - TRK_HUF_MAX_LEN)];
                unsigned el = e >> 8;
                if (el == 0)
                    return -1; /* no such code */
                out[i++] = (uint8_t)e;
                acc <<= el;
                nb -= el;
            }
            continue;
        }
        while (nb <= 56 && p < end) {
            acc |= (uint64_t)*p++ << (56 - nb);
            nb += 8;
        }
        uint16_t e = table[acc >> (64 - TRK_HUF_MAX_LEN)];
        unsigned el = e >> 8;
        if (el == 0 || el > nb)
            return -1; /* no such code, or the codes ran past the payload */
        out[i++] = (uint8_t)e;
        acc <<= el;
        nb -= el;
    }
    /* Exactly the codes, then fewer than 8 zero bits. */
    if (p != end || nb >= 8 || acc != 0)
        return -1;
    return 0;
}
