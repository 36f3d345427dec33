/* SPDX-License-Identifier: MIT
 *
 * addr_space.c - how much the program can allocate under an address-space
 * limit: sets RLIMIT_AS to L MiB, then mallocs 1 MiB blocks (each its own
 * mapping) until malloc fails, and prints how many it got. Whatever the
 * tracker reserves in the process comes out of the program's share.
 *
 * It first waits W ms (default 300), as a real program runs a while: the
 * tracker's background threads must not have reserved more by then.
 *
 * usage: addr_space L [W]
 */
#include <stdlib.h>
#include <sys/resource.h>

#include "common.h"

int main(int argc, char **argv)
{
    unsigned long long limit = arg_u64(argc, argv, 1, 200);
    unsigned long long wait_ms = arg_u64(argc, argv, 2, 300);
    sleep_ms(wait_ms);
    struct rlimit rl = {limit << 20, limit << 20};
    if (setrlimit(RLIMIT_AS, &rl))
        die("setrlimit");
    void **blocks = calloc(limit + 1, sizeof(void *));
    if (!blocks)
        die("calloc");
    unsigned long long n = 0;
    while (n <= limit) {
        void *p = malloc(1 << 20);
        if (!p)
            break;
        blocks[n++] = p;
    }
    put_kv("blocks", n);
    for (unsigned long long i = 0; i < n; i++)
        free(blocks[i]);
    free(blocks);
    return 0;
}
