/* SPDX-License-Identifier: MIT
 *
 * tls_dlopen.c - dlopens N copies of a library with its own TLS
 * (progs/tls_lib.c, copied N times by the test), touching each one's
 * thread-local and allocating through it after each load. Past the DTV's
 * initial slots every load makes the loader resize this thread's DTV with
 * malloc: a hook that unwinds there must not re-enter the loader (glibc
 * then frees the old DTV twice), and what the unwinder itself calls inside
 * our hook is no lost event of the program.
 * Usage: tls_dlopen DIR N   (loads DIR/libtls_0.so .. libtls_{N-1}.so)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int n = atoi(argv[2]);
    long total = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/libtls_%d.so", argv[1], i);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        long (*touch)(int) = (long (*)(int))dlsym(h, "tls_touch");
        if (!touch)
            return 1;
        total += touch(i);
        free(malloc(100 + (size_t)i)); /* one pair per load, through our hooks */
    }
    printf("loaded=%d\ntotal=%ld\n", n, total);
    return 0;
}
