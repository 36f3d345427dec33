/* SPDX-License-Identifier: MIT
 *
 * leak_sort.c - sorts the exit scan's blocks by address (leakscan.h), which
 * the marking's binary search and page filter need (leak_mark.c). Must not:
 * allocate (trk_lmem's raw mappings only) or take a lock.
 */
#include <string.h>

#include "capture/leakscan.h"

static void sift(struct trk_lblock *v, size_t i, size_t n)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && v[c + 1].addr > v[c].addr)
            c++;
        if (v[i].addr >= v[c].addr)
            return;
        struct trk_lblock x = v[i];
        v[i] = v[c];
        v[c] = x;
        i = c;
    }
}

/* Few blocks (a short program's): heapsort, in place; the radix sort's
 * tables would cost more than the sort. */
static void heap_sort(struct trk_lblock *v, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(v, i, n);
    for (size_t end = n; end > 1; end--) {
        struct trk_lblock x = v[0];
        v[0] = v[end - 1];
        v[end - 1] = x;
        sift(v, 0, end - 1);
    }
}

/* LSD radix sort by address, 16 bits a pass over the 64. */
int trk_lblocks_sort(struct trk_lblock *v, size_t n)
{
    if (n < (1u << 16)) {
        heap_sort(v, n);
        return 0;
    }
    size_t len = n * sizeof(*v), clen = 65536 * sizeof(size_t);
    struct trk_lblock *tmp = trk_lmem(len);
    size_t *count = trk_lmem(clen);
    if (!tmp || !count) {
        trk_lmem_free(tmp, len);
        trk_lmem_free(count, clen);
        return -1;
    }
    struct trk_lblock *src = v, *dst = tmp;
    for (unsigned shift = 0; shift < 64; shift += 16) {
        memset(count, 0, clen);
        for (size_t i = 0; i < n; i++)
            count[(src[i].addr >> shift) & 0xFFFF]++;
        size_t sum = 0;
        for (size_t d = 0; d < 65536; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i].addr >> shift) & 0xFFFF]++] = src[i];
        struct trk_lblock *x = src;
        src = dst;
        dst = x;
    }
    /* four passes: the result is back in v */
    trk_lmem_free(tmp, len);
    trk_lmem_free(count, clen);
    return 0;
}
