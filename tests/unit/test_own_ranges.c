/* SPDX-License-Identifier: MIT
 *
 * test_own_ranges.c - the registry of the tracker's own mappings
 * (capture/own_mem.h), which the exit-time leak scan leaves out: every
 * range noted is listed once, page-aligned outwards, across the registry's
 * chunks and from threads noting at once; a forgotten one is not; the
 * ranges trk_own_map hands out are in it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "capture/own_mem.h"

#define BASE     0x100000000000ull
#define PER      700 /* more than two chunks' worth per thread */
#define NTHREADS 4

struct seen {
    uint64_t lo[NTHREADS * PER + 64], hi[NTHREADS * PER + 64];
    size_t n;
};

static void collect(void *ctx, uint64_t lo, uint64_t hi)
{
    struct seen *s = ctx;
    if (s->n < sizeof(s->lo) / sizeof(s->lo[0])) {
        s->lo[s->n] = lo;
        s->hi[s->n] = hi;
    }
    s->n++;
}

static int count(const struct seen *s, uint64_t lo, uint64_t hi)
{
    int c = 0;
    for (size_t i = 0; i < s->n; i++)
        c += s->lo[i] == lo && s->hi[i] == hi;
    return c;
}

static void *noter(void *arg)
{
    uint64_t k = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < PER; i++)
        trk_own_note((void *)(uintptr_t)(BASE + (k * PER + i) * 0x10000 + 8), 4096);
    return NULL;
}

static struct seen seen;

static void test_notes_forget_and_maps(void **state)
{
    (void)state;
    pthread_t th[NTHREADS];
    for (uintptr_t k = 0; k < NTHREADS; k++)
        assert_int_equal(pthread_create(&th[k], NULL, noter, (void *)k), 0);
    for (int k = 0; k < NTHREADS; k++)
        pthread_join(th[k], NULL);
    /* One range forgotten (by its start, as before an munmap). */
    trk_own_forget((void *)(uintptr_t)(BASE + 5 * 0x10000 + 8));
    void *own = trk_own_map(TRK_OWN_WRITER, 3 * 4096 + 1);
    assert_non_null(own);
    memset(&seen, 0, sizeof(seen));
    assert_int_equal(trk_own_ranges(collect, &seen), 0);
    for (uint64_t i = 0; i < NTHREADS * PER; i++) {
        uint64_t lo = BASE + i * 0x10000;
        /* [p, p + len) widened to whole pages: 8 + 4096 bytes span two. */
        assert_int_equal(count(&seen, lo, lo + 8192), i == 5 ? 0 : 1);
    }
    uint64_t o = (uint64_t)(uintptr_t)own;
    assert_int_equal(count(&seen, o, o + 4 * 4096), 1);
    /* The registry's chunks are listed too: beyond the ranges noted. */
    assert_true(seen.n > NTHREADS * PER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notes_forget_and_maps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
