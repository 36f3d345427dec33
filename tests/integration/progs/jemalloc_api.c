/* SPDX-License-Identifier: MIT
 *
 * jemalloc_api.c - jemalloc's non-standard API with known sizes, REPS times:
 *   mallocx(100, 0)                      -> dallocx
 *   mallocx(200, MALLOCX_ZERO)           -> rallocx to 5000 -> xallocx to
 *                                           5000+3000 (extra 1000) -> sdallocx
 *   mallocx(4096, MALLOCX_ALIGN(4096))   -> sdallocx with the same flags
 * xallocx returns the block's real size, which only jemalloc knows, so the
 * program prints the sum of what xallocx returned for the harness.
 *
 * usage: jemalloc_api REPS
 */
#include <jemalloc/jemalloc.h>
#include <stdint.h>

#include "common.h"

int main(int argc, char **argv)
{
    unsigned long long reps = arg_u64(argc, argv, 1, 1);
    unsigned long long xsum = 0;
    for (unsigned long long r = 0; r < reps; r++) {
        char *a = mallocx(100, 0);
        if (!a)
            die("mallocx");
        a[99] = 1;
        dallocx(a, 0);

        char *b = mallocx(200, MALLOCX_ZERO);
        if (!b || b[199])
            die("mallocx zero");
        b = rallocx(b, 5000, 0);
        if (!b)
            die("rallocx");
        b[4999] = 1;
        size_t got = xallocx(b, 8000, 1000, 0);
        if (got < 5000)
            die("xallocx shrank the block");
        xsum += got;
        sdallocx(b, got, 0);

        char *c = mallocx(4096, MALLOCX_ALIGN(4096));
        if (!c || ((uintptr_t)c & 4095))
            die("mallocx align");
        c[0] = 1;
        sdallocx(c, 4096, MALLOCX_ALIGN(4096));
    }
    put_kv("xallocx_sum", xsum);
    return 0;
}
