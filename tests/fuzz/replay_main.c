/* SPDX-License-Identifier: MIT
 *
 * replay_main.c - a main() for the fuzz targets without libFuzzer: runs
 * LLVMFuzzerTestOneInput once over every file named on the command line or
 * found in a directory named there (not recursive), in name order. This is
 * how the committed corpus runs in the normal test suite, under any
 * compiler and in the sanitizer build. Each input is copied into a buffer of
 * exactly its size, so ASan sees any read past its end. Fails when an
 * argument cannot be read or holds no input at all: an empty replay must not
 * pass silently.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Returns 0, or -1 with a message on stderr. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0) {
        fprintf(stderr, "%s: cannot stat\n", path);
        fclose(f);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    /* malloc(0) may return NULL; a one-byte buffer still has size 0 for the target. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf || fread(buf, 1, size, f) != size) {
        fprintf(stderr, "%s: read failed\n", path);
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
    LLVMFuzzerTestOneInput(buf, size);
    free(buf);
    return 0;
}

/* Runs every regular file of dir; returns how many, or -1. */
static long run_dir(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "%s: %s\n", dir, strerror(errno));
        return -1;
    }
    long count = 0;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (rc == 0 && name[0] != '.') {
            size_t len = strlen(dir) + strlen(name) + 2;
            char *path = malloc(len);
            struct stat st;
            if (!path) {
                rc = -1;
            } else {
                snprintf(path, len, "%s/%s", dir, name);
                if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                    if (run_file(path) < 0)
                        rc = -1;
                    else
                        count++;
                }
                free(path);
            }
        }
        free(names[i]);
    }
    free(names);
    return rc < 0 ? -1 : count;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        long n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) == 0 ? 1 : -1;
        if (n < 0)
            return 1;
        if (n == 0) {
            fprintf(stderr, "%s: no inputs\n", argv[i]);
            return 1;
        }
        total += n;
    }
    printf("replayed %ld inputs without a failure\n", total);
    return 0;
}
