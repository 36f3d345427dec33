/* SPDX-License-Identifier: MIT
 *
 * stacks_peaks.c - where the peak is, for the report tests.
 *
 *   equal: alloc_a allocates 4 x 1000 bytes and frees them, then alloc_b
 *          allocates 2 x 2000 (the same 4000) and frees them: two equal
 *          peaks, and the first (alloc_a's) is the one reports attribute.
 *   end:   grow_end allocates 5 x 3000 bytes and never frees: the peak is
 *          the very last event.
 *   mmap:  map_a maps 16 pages and unmaps 6 in the middle, then map_b maps
 *          10: the mapped peak is 20 pages, 10 from each site; everything is
 *          unmapped afterwards.
 *
 * usage: stacks_peaks equal|end|mmap      (prints page_size=)
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

static void *blocks[8];

__attribute__((noinline)) static void alloc_a(void)
{
    for (int i = 0; i < 4; i++)
        blocks[i] = malloc(1000); /* @alloc_a_malloc */
}

__attribute__((noinline)) static void alloc_b(void)
{
    for (int i = 0; i < 2; i++)
        blocks[i] = malloc(2000); /* @alloc_b_malloc */
}

__attribute__((noinline)) static void free_blocks(int n)
{
    for (int i = 0; i < n; i++)
        free(blocks[i]);
}

__attribute__((noinline)) static void grow_end(void)
{
    for (int i = 0; i < 5; i++)
        blocks[i] = malloc(3000); /* @grow_end_malloc */
}

__attribute__((noinline)) static char *map_a(size_t len)
{
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* @map_a_mmap */
    if (p == MAP_FAILED)
        die("mmap");
    return p;
}

__attribute__((noinline)) static char *map_b(size_t len)
{
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* @map_b_mmap */
    if (p == MAP_FAILED)
        die("mmap");
    return p;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    put_kv("page_size", page);
    if (strcmp(mode, "equal") == 0) {
        alloc_a();
        free_blocks(4);
        alloc_b();
        free_blocks(2);
    } else if (strcmp(mode, "end") == 0) {
        grow_end();
        sink(blocks[0]);
    } else if (strcmp(mode, "mmap") == 0) {
        char *a = map_a(16 * page);
        if (munmap(a + 5 * page, 6 * page) != 0) /* hole: pages 5..10 */
            die("munmap");
        char *b = map_b(10 * page);
        if (munmap(a, 5 * page) != 0 || munmap(a + 11 * page, 5 * page) != 0 ||
            munmap(b, 10 * page) != 0)
            die("munmap");
    } else {
        die("usage: stacks_peaks equal|end|mmap");
    }
    return 0;
}
