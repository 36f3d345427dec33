/* SPDX-License-Identifier: MIT
 *
 * peaks_apart.c - heap and mappings peak at different times (issue 10
 * section 4, test_bounded.py):
 *
 *   1. grow_heap mallocs 40 x 100,000 bytes (under the mmap threshold: the
 *      heap proper) and map_small maps 256 pages: heap 4,000,000, mapped
 *      256 pages, together 4,000,000 + 256 pages (the peak of the sum).
 *   2. the heap blocks are freed; map_big maps 768 pages more: mapped 1024
 *      pages (the mapping peak), heap 0, together 1024 pages.
 *   3. everything is unmapped.
 *
 * With 4 KiB pages the heap peak (4,000,000) plus the mapping peak
 * (4,194,304) is 8,194,304 bytes, but heap + mappings never exceeded
 * 5,048,576.
 *
 * usage: peaks_apart       (prints page_size=)
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

static void *blocks[40];

__attribute__((noinline)) static void grow_heap(void)
{
    for (int i = 0; i < 40; i++)
        blocks[i] = malloc(100000);
}

__attribute__((noinline)) static char *map_small(size_t len)
{
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    return p;
}

__attribute__((noinline)) static char *map_big(size_t len)
{
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    return p;
}

int main(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    put_kv("page_size", page);
    grow_heap();
    char *a = map_small(256 * page);
    for (int i = 0; i < 40; i++)
        free(blocks[i]);
    char *b = map_big(768 * page);
    if (munmap(a, 256 * page) != 0 || munmap(b, 768 * page) != 0)
        die("munmap");
    return 0;
}
