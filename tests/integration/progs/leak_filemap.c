/* SPDX-License-Identifier: MIT
 *
 * leak_filemap.c - a 64 MiB file in the page cache, mapped private and
 * writable, for test_leak_scan_signals.py: the exit-time leak scan must read
 * only the page the program wrote (a copy of its own), not the file's
 * cached pages, which reading would map in (64 MiB more RSS at exit).
 *
 * The one written page holds the only pointer to a 1111-byte block (still
 * reachable through the mapping); main loses a 2222-byte block (definitely
 * lost).
 *
 * usage: leak_filemap FILE   (created, 64 MiB; the caller removes it)
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

#define FILE_SIZE (64u << 20)

static char chunk[1 << 20];

__attribute__((noinline)) static void *kept_by_map(void)
{
    return malloc(1111); /* @kept */
}

__attribute__((noinline)) static void *lost_by_main(void)
{
    return malloc(2222); /* @lost */
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: leak_filemap FILE");
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die("open");
    for (size_t i = 0; i < sizeof(chunk); i++)
        chunk[i] = (char)(i * 7 + 1); /* no zero pages, no pointers */
    for (unsigned done = 0; done < FILE_SIZE; done += sizeof(chunk))
        if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
            die("write");
    char *map = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
        die("mmap");
    close(fd);
    /* The only reference to the kept block, on a page of the mapping that
     * is now the program's own copy. */
    *(void *volatile *)(map + 3 * 4096 + 8) = kept_by_map();
    void *volatile p = lost_by_main();
    sink(p);
    p = NULL;
    put_kv("ready", 1);
    return 0;
}
