/* SPDX-License-Identifier: MIT
 *
 * leak_exit.c - leaves MB megabytes of heap live at exit, in blocks of
 * BLOCK bytes (default 1024) chained into a list from one global: every
 * block is still reachable and the scan must read all of them, the worst
 * case for a reachability pass. With a third argument "lost" the global is
 * cleared first (everything definitely/indirectly lost). For
 * bench/run_leak_bench.py; not a test.
 */
#include <stdlib.h>
#include <string.h>

void *volatile g_head;

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 1;
    size_t block = argc > 2 ? strtoul(argv[2], NULL, 10) : 1024;
    if (block < sizeof(void *))
        block = sizeof(void *);
    size_t n = (mb << 20) / block;
    void *head = NULL;
    for (size_t i = 0; i < n; i++) {
        void **b = malloc(block);
        if (!b)
            return 1;
        memset(b, 0x11, block); /* touched, and holds no stray pointers */
        b[0] = head;
        head = b;
    }
    g_head = head;
    if (argc > 3 && strcmp(argv[3], "lost") == 0)
        g_head = NULL;
    return 0;
}
