/* SPDX-License-Identifier: MIT
 *
 * linked_pieces.c - the same loop in rounds, with a pause after each long
 * enough for the writer to flush it as its own piece: each piece repeats
 * the one before, which only a codec that sees the stream's earlier bytes
 * (linked LZ4, docs/FORMAT.md §2) can use.
 *
 * usage: linked_pieces ROUNDS N MS [CHURN] - ROUNDS rounds of N malloc/free
 * pairs (sizes 32..144), each followed by MS ms asleep. With CHURN, first
 * CHURN threads start and end one after another (each a stream id more),
 * then a second thread runs the rounds between the main one's (with CHURN 14
 * or 15 its stream id equals the main thread's or the sampler's modulo
 * 16), and a round's sizes are random (16..2063, the same every round): a
 * round alone barely compresses, against the round before it nearly all
 * of it goes.
 */
#include <pthread.h>
#include <stdlib.h>

#include "common.h"

static int random_sizes;

static void round_of(unsigned long long n)
{
    unsigned long long x = 88172645463325252ull; /* xorshift64, the same each round */
    for (unsigned long long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char *p = malloc(random_sizes ? 16 + x % 2048 : 32 + (i % 8) * 16);
        if (!p)
            die("malloc");
        p[0] = 1;
        free(p);
    }
}

static unsigned long long rounds, n, ms;

static void *rounds_of(void *arg)
{
    for (unsigned long long r = 0; r < rounds; r++) {
        round_of(n);
        sleep_ms(ms);
    }
    return arg;
}

/* The second thread's rounds fall between the main thread's: rounds that
 * ran at once interleaved their seqs, so a round's seq deltas, and its
 * bytes, changed from round to round. */
static void *rounds_between(void *arg)
{
    sleep_ms(ms / 2);
    return rounds_of(arg);
}

static void *one_pair(void *arg)
{
    free(malloc(16)); /* a state, so a stream id */
    return arg;
}

static void spawn(pthread_t *th, void *(*fn)(void *))
{
    if (pthread_create(th, NULL, fn, NULL))
        die("pthread_create");
}

int main(int argc, char **argv)
{
    rounds = arg_u64(argc, argv, 1, 20);
    n = arg_u64(argc, argv, 2, 500);
    ms = arg_u64(argc, argv, 3, 100);
    if (argc <= 4) {
        rounds_of(NULL);
        return 0;
    }
    random_sizes = 1;
    pthread_t th;
    for (unsigned long long k = arg_u64(argc, argv, 4, 0); k > 0; k--) {
        spawn(&th, one_pair);
        pthread_join(th, NULL);
    }
    spawn(&th, rounds_between);
    rounds_of(NULL);
    pthread_join(th, NULL);
    return 0;
}
