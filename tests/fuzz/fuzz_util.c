/* SPDX-License-Identifier: MIT
 *
 * fuzz_util.c - helpers every fuzz target links: inputs as in-memory files,
 * and the one way a property violation ends a run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

int trk_fuzz_memfd(const uint8_t *data, size_t size)
{
    int fd = memfd_create("trk-fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void trk_fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz: property violated: %s\n", what);
    abort();
}
