/* SPDX-License-Identifier: MIT
 *
 * leak_mark.c - marking and classification of the live heap blocks, as
 * valgrind memcheck's leak check does it (docs/FORMAT.md §4a): from the
 * roots, a pointer to a block's start makes it reachable and an interior
 * pointer possibly lost; blocks found from a possibly lost block are
 * possibly lost too. Then every block still unreached leads a clique: what
 * it reaches (start or interior) among the unreached is indirectly lost,
 * with it as leader; it is definitely lost. Cycles and self-pointers never
 * make a block reachable. Must not: read memory outside the block set and
 * the ranges its callers give it, or allocate.
 */
#include <cpuid.h>
#include <immintrin.h>

#include "capture/leakscan.h"

/* The block containing w (a pointer to a zero-sized block's start counts),
 * or s->n. */
static inline uint64_t page_bit(const struct trk_lset *s, uint64_t page)
{
    return (page * 0x9E3779B97F4A7C15ULL) >> s->pages_shift;
}

/* About 8 bits a page covered (few false hits), from 2^15 to 2^27 bits
 * (16 MiB); a block's pages are all set, so a clear bit is a sure miss.
 * Blocks over 64 GiB in all go without a filter. */
void trk_lset_index(struct trk_lset *s)
{
    uint64_t npages = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t a = s->v[i].addr, e = a + (s->v[i].size ? s->v[i].size : 1);
        npages += ((e - 1) >> 12) - (a >> 12) + 1;
    }
    if (npages > ((uint64_t)1 << 24)) /* 64 GiB of blocks: setting bits would cost more */
        return;
    unsigned log2 = 15;
    while (log2 < 27 && ((uint64_t)1 << log2) < 8 * npages)
        log2++;
    s->pages_len = ((size_t)1 << log2) / 8;
    s->pages = trk_lmem(s->pages_len);
    if (!s->pages)
        return;
    s->pages_shift = 64 - log2;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t a = s->v[i].addr, e = a + (s->v[i].size ? s->v[i].size : 1);
        for (uint64_t pg = a >> 12; pg <= (e - 1) >> 12; pg++) {
            uint64_t b = page_bit(s, pg);
            s->pages[b >> 6] |= (uint64_t)1 << (b & 63);
        }
    }
}

size_t trk_lset_find(const struct trk_lset *s, uint64_t w)
{
    if (w < s->lo || w >= s->hi)
        return s->n;
    if (s->pages) {
        uint64_t b = page_bit(s, w >> 12);
        if (!(s->pages[b >> 6] & ((uint64_t)1 << (b & 63))))
            return s->n;
    }
    size_t lo = 0, hi = s->n; /* first block with addr > w */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid].addr <= w)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return s->n;
    const struct trk_lblock *b = &s->v[lo - 1];
    if (w == b->addr || w - b->addr < b->size)
        return lo - 1;
    return s->n;
}

/* One word seen from a root (from_reachable) or a possibly lost block. */
static inline void consider(struct trk_lset *s, uint64_t w, int from_reachable)
{
    size_t i = trk_lset_find(s, w);
    if (i == s->n)
        return;
    struct trk_lblock *b = &s->v[i];
    if (b->state == TRK_LB_REACHABLE)
        return;
    if (w == b->addr && from_reachable) {
        b->state = TRK_LB_REACHABLE; /* (re)scan: its children may rise too */
        s->stack[s->sp++] = (uint32_t)i;
    } else if (b->state == TRK_LB_UNREACHED) {
        b->state = TRK_LB_POSSIBLE;
        s->stack[s->sp++] = (uint32_t)i;
    }
}

/* Most words scanned are no pointer into the blocks' extent [lo, hi)
 * (import torch: 9 in 10 of 65 M words, 0.5 G instructions one by one).
 * With AVX2 eight words are tested a branch, and the ones in [lo, hi)
 * taken from the mask. x - lo < span unsigned is, with the sign bit
 * flipped on both sides, a signed compare. Returns the words done (all
 * but fewer than 8). */
TRK_LEAK_RAW_READ __attribute__((target("avx2"))) static size_t
scan_avx2(struct trk_lset *s, const uint64_t *w, size_t n, int from_reachable)
{
    uint64_t lo = s->lo, span = s->hi - s->lo;
    const __m256i vlo = _mm256_set1_epi64x((long long)lo);
    const __m256i sign = _mm256_set1_epi64x((long long)(1ull << 63));
    const __m256i vspan = _mm256_set1_epi64x((long long)(span ^ (1ull << 63)));
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(w + k));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(w + k + 4));
        a = _mm256_xor_si256(_mm256_sub_epi64(a, vlo), sign);
        b = _mm256_xor_si256(_mm256_sub_epi64(b, vlo), sign);
        unsigned m =
            (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(vspan, a))) |
            (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(vspan, b))) << 4;
        while (TRK_UNLIKELY(m)) {
            consider(s, w[k + (unsigned)__builtin_ctz(m)], from_reachable);
            m &= m - 1;
        }
    }
    return k;
}

/* AVX2 with the OS saving the YMM registers (OSXSAVE, XCR0 bits 1-2). */
static int cpu_avx2(void)
{
    static int avx2; /* 0: not probed, 1: yes, 2: no */
    if (!avx2) {
        unsigned a, b, c, d;
        int ok = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) && (c & bit_AVX);
        if (ok) {
            unsigned lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            ok = (lo & 6) == 6 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
        }
        avx2 = ok ? 1 : 2;
    }
    return avx2 == 1;
}

/* A block is pushed at most twice in the whole marking (when it becomes
 * possibly lost, when it becomes reachable): the stack has 2n entries. */
TRK_LEAK_RAW_READ static void scan_words(struct trk_lset *s, const uint64_t *w, size_t n,
                                         int from_reachable)
{
    uint64_t lo = s->lo, span = s->hi - s->lo;
    size_t k = n >= 8 && cpu_avx2() ? scan_avx2(s, w, n, from_reachable) : 0;
    for (; k < n; k++) {
        uint64_t x = w[k];
        if (x - lo < span)
            consider(s, x, from_reachable);
    }
}

static void drain(struct trk_lset *s)
{
    while (s->sp) {
        struct trk_lblock *b = &s->v[s->stack[--s->sp]];
        scan_words(s, (const uint64_t *)(uintptr_t)b->addr, b->size / 8,
                   b->state == TRK_LB_REACHABLE);
    }
}

void trk_lmark_words(struct trk_lset *s, const uint64_t *w, size_t n)
{
    s->root_bytes += n * 8;
    scan_words(s, w, n, 1);
    drain(s);
}

/* [lo, hi) of readable memory, aligned inwards to words. */
void trk_lmark_range(struct trk_lset *s, uint64_t lo, uint64_t hi)
{
    lo = (lo + 7) & ~7ull;
    hi &= ~7ull;
    if (hi > lo)
        trk_lmark_words(s, (const uint64_t *)(uintptr_t)lo, (size_t)((hi - lo) / 8));
}

/* Clique of leader i: everything unreached it reaches becomes indirect. */
static void clique(struct trk_lset *s, uint32_t leader)
{
    s->sp = 0;
    s->stack[s->sp++] = leader;
    while (s->sp) {
        const struct trk_lblock *b = &s->v[s->stack[--s->sp]];
        const uint64_t *w = (const uint64_t *)(uintptr_t)b->addr;
        for (size_t k = 0; k < b->size / 8; k++) {
            size_t i = trk_lset_find(s, w[k]);
            if (i == s->n || i == leader)
                continue;
            struct trk_lblock *c = &s->v[i];
            if (c->state == TRK_LB_UNREACHED) {
                c->state = TRK_LB_INDIRECT;
                c->leader = leader;
                s->stack[s->sp++] = (uint32_t)i;
            }
        }
    }
}

void trk_lmark_finish(struct trk_lset *s)
{
    drain(s);
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].state == TRK_LB_UNREACHED)
            clique(s, (uint32_t)i);
    }
    /* A leader that became indirect later hands its members to its own
     * leader: follow the chain to the definite block, compressing the path
     * as union-find does (a lost list makes each block the leader of the
     * one before it: without it, n^2 steps). */
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].state != TRK_LB_INDIRECT)
            continue;
        uint32_t root = s->v[i].leader;
        for (size_t hop = 0; hop < s->n && s->v[root].state == TRK_LB_INDIRECT; hop++)
            root = s->v[root].leader;
        for (uint32_t k = (uint32_t)i;
             s->v[k].state == TRK_LB_INDIRECT && s->v[k].leader != root;) {
            uint32_t next = s->v[k].leader;
            s->v[k].leader = root;
            k = next;
        }
    }
}
