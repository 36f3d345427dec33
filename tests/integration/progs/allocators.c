/* SPDX-License-Identifier: MIT
 *
 * allocators.c - calls every C allocation entry point with fixed sizes,
 * `reps` times: malloc, calloc, realloc (NULL, grow, shrink, to 0),
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * free, free_sized, free_aligned_sized. test_allocators.py holds the same
 * table of sizes and compares by_allocator against it.
 *
 * usage: allocators REPS
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "common.h"

/* C23 functions glibc 2.36 does not have. Declared weak so the program links
 * without them; the preload exports them, so under tracker they resolve. */
extern void free_sized(void *p, size_t size) __attribute__((weak));
extern void free_aligned_sized(void *p, size_t alignment, size_t size) __attribute__((weak));

typedef void (*free_sized_fn)(void *, size_t);
typedef void (*free_aligned_sized_fn)(void *, size_t, size_t);

static void check_align(void *p, size_t a)
{
    if (!p || ((uintptr_t)p & (a - 1)))
        die("allocation failed or misaligned");
}

int main(int argc, char **argv)
{
    unsigned long long reps = arg_u64(argc, argv, 1, 1);
    long page = sysconf(_SC_PAGESIZE);

    /* Looked up in every run, reps 0 included, so whatever dlsym costs
     * cancels out of the differences the harness takes. */
    free_sized_fn fs = (free_sized_fn)dlsym(RTLD_DEFAULT, "free_sized");
    free_aligned_sized_fn fas = (free_aligned_sized_fn)dlsym(RTLD_DEFAULT, "free_aligned_sized");
    if (!fs)
        fs = free_sized; /* weak: NULL when nobody defines it */
    if (!fas)
        fas = free_aligned_sized;
    put_kv("have_free_sized", fs != NULL);
    put_kv("have_free_aligned_sized", fas != NULL);
    put_kv("page_size", (unsigned long long)page);

    for (unsigned long long r = 0; r < reps; r++) {
        char *p = malloc(100);
        check_align(p, 16);
        p[99] = 1;
        free(p);

        p = calloc(10, 30);
        check_align(p, 16);
        if (p[299] != 0)
            die("calloc memory not zeroed");
        free(p);

        p = realloc(NULL, 50); /* an allocation, not a realloc of a block */
        check_align(p, 16);
        p = realloc(p, 5000); /* grow */
        check_align(p, 16);
        p = realloc(p, 20); /* shrink */
        check_align(p, 16);
        errno = 0;
        p = realloc(p, 0); /* glibc frees and returns NULL */
        if (p)
            die("realloc(p, 0) did not free");

        p = reallocarray(NULL, 7, 9);
        check_align(p, 16);
        p = reallocarray(p, 11, 9);
        check_align(p, 16);
        free(p);

        void *q = NULL;
        if (posix_memalign(&q, 64, 1000))
            die("posix_memalign");
        check_align(q, 64);
        free(q);

        q = aligned_alloc(256, 512);
        check_align(q, 256);
        free(q);

        q = memalign(128, 333);
        check_align(q, 128);
        free(q);

        q = valloc(777);
        check_align(q, (size_t)page);
        free(q);

        q = pvalloc(888);
        check_align(q, (size_t)page);
        free(q);

        q = malloc(40);
        check_align(q, 16);
        if (fs)
            fs(q, 40);
        else
            free(q);

        q = aligned_alloc(64, 128);
        check_align(q, 64);
        if (fas)
            fas(q, 64, 128);
        else
            free(q);
    }
    return 0;
}
