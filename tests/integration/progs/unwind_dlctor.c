/* SPDX-License-Identifier: MIT
 *
 * unwind_dlctor.c - dlopens and dlcloses libunwind_dlctor_lib.so (in DIR)
 * N times, from two callers at different depths: its constructor
 * allocates with the tracker's dlopen wrapper mid-stack
 * (test_unwind_memo.py). Usage: unwind_dlctor N DIR; prints done=1.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static char path[4096];

__attribute__((noinline)) static void load_once(void)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(2);
    }
    dlclose(h);
}

__attribute__((noinline)) static void load_deeper(int d)
{
    volatile int pad[16];
    pad[d & 15] = d;
    if (d > 0)
        load_deeper(d - 1);
    else
        load_once();
    (void)pad[d & 15];
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s N DIR\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]);
    snprintf(path, sizeof(path), "%s/libunwind_dlctor_lib.so", argv[2]);
    for (int i = 0; i < n; i++) {
        if (i & 1)
            load_deeper(i % 3);
        else
            load_once();
    }
    printf("done=1\n");
    return 0;
}
