/* SPDX-License-Identifier: MIT
 *
 * linked_pieces.c - the same loop in rounds, with a pause after each long
 * enough for the writer to flush it as its own piece: each piece repeats
 * the one before, which only a codec that sees the stream's earlier bytes
 * (linked LZ4, docs/FORMAT.md §2) can use.
 *
 * usage: linked_pieces ROUNDS N MS - ROUNDS rounds of N malloc/free pairs
 * (sizes 32..144), each followed by MS ms asleep.
 */
#include <stdlib.h>
#include <time.h>

#include "common.h"

static void sleep_ms(unsigned long long ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts))
        ;
}

static void round_of(unsigned long long n)
{
    for (unsigned long long i = 0; i < n; i++) {
        char *p = malloc(32 + (i % 8) * 16);
        if (!p)
            die("malloc");
        p[0] = 1;
        free(p);
    }
}

int main(int argc, char **argv)
{
    unsigned long long rounds = arg_u64(argc, argv, 1, 20);
    unsigned long long n = arg_u64(argc, argv, 2, 500);
    unsigned long long ms = arg_u64(argc, argv, 3, 100);
    for (unsigned long long r = 0; r < rounds; r++) {
        round_of(n);
        sleep_ms(ms);
    }
    return 0;
}
