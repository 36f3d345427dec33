/* SPDX-License-Identifier: MIT
 *
 * test_writer.c - the in-process writer (src/capture/writer.c, output.c,
 * events.c) end to end, read back through the public reader: several
 * threads recording through small rings (so producers wait on the writer),
 * every event arrives once, in global seq order, each thread's events in
 * program order; the trailer is written; a capture cut short reads as
 * truncated with a clean prefix; and the writer's wait between cycles
 * follows what the cycles carried.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "capture/capture.h"
#include "tracker/reader.h"

#define THREADS 4
#define PAIRS 40000

static char path[256];

static void *producer(void *arg)
{
    uintptr_t base = 0x10000000u * (1 + (uintptr_t)arg);
    struct trk_thread *t = trk_enter();
    assert_non_null(t);
    for (uintptr_t i = 0; i < PAIRS; i++) {
        trk_ev_alloc(t, TRK_ALLOC_MALLOC, (void *)(base + i * 32), 1 + i % 100, 0);
        trk_ev_free(t, TRK_ALLOC_FREE, (void *)(base + i * 32));
    }
    trk_leave();
    return NULL;
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof(path), "/tmp/trk_test_writer.%d.bin", (int)getpid());
    unlink(path);
    setenv("TRACKER_OUTPUT", path, 1);
    char pid[16];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    setenv("TRACKER_ROOT_PID", pid, 1);
    setenv("TRACKER_BUFFER_KB", "64", 1); /* small rings: producers must wait */
    setenv("TRACKER_RSS_MS", "1", 1);
    trk_pid = getpid();
    trk_config_load();
    trk_modules_init();
    assert_int_equal(trk_threads_init(), 0);
    assert_int_equal(trk_stacks_init(), 0);
    assert_int_equal(trk_output_open(0), 0);
    atomic_store(&trk_active, 1);
    assert_int_equal(trk_writer_start(), 0);

    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, producer, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    trk_writer_finish(TRK_END_EXIT, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

/* Reads a capture and checks order; returns heap events seen. */
static uint64_t read_all(const char *file, int *truncated)
{
    struct trk_reader *r;
    char err[256];
    assert_int_equal(trk_reader_open(file, &r, err, sizeof(err)), 0);
    struct trk_event ev;
    uint64_t last_seq = 0, heap = 0;
    uint64_t next_i[THREADS + 1] = {0};
    int expect_free[THREADS + 1] = {0};
    int rc;
    while ((rc = trk_reader_next(r, &ev)) == 1) {
        assert_true(ev.seq > last_seq);
        last_seq = ev.seq;
        if (ev.type != TRK_EV_ALLOC && ev.type != TRK_EV_FREE)
            continue;
        heap++;
        unsigned w = (unsigned)(ev.addr / 0x10000000u) - 1;
        assert_true(w < THREADS);
        uint64_t i = (ev.addr % 0x10000000u) / 32;
        /* per thread: alloc i, free i, alloc i+1, ... */
        assert_int_equal(i, next_i[w]);
        assert_int_equal(ev.type == TRK_EV_FREE, expect_free[w]);
        if (ev.type == TRK_EV_ALLOC)
            assert_int_equal(ev.size, 1 + i % 100);
        else
            next_i[w]++;
        expect_free[w] = !expect_free[w];
    }
    assert_int_equal(rc, 0);
    *truncated = trk_reader_status(r)->truncated;
    trk_reader_close(r);
    return heap;
}

static void test_every_event_once_in_order(void **state)
{
    (void)state;
    int truncated = -1;
    assert_int_equal(read_all(path, &truncated), (uint64_t)THREADS * PAIRS * 2);
    assert_int_equal(truncated, 0);
}

static void test_cut_capture_reads_as_truncated(void **state)
{
    (void)state;
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *buf = malloc((size_t)size);
    assert_int_equal(fread(buf, 1, (size_t)size, in), (size_t)size);
    fclose(in);
    char cut[300];
    snprintf(cut, sizeof(cut), "%s.cut", path);
    for (int k = 1; k <= 3; k++) {
        FILE *out = fopen(cut, "wb");
        fwrite(buf, 1, (size_t)(size * k / 4), out);
        fclose(out);
        int truncated = 0;
        uint64_t n = read_all(cut, &truncated);
        assert_int_equal(truncated, 1);
        assert_true(n < (uint64_t)THREADS * PAIRS * 2);
    }
    unlink(cut);
    free(buf);
}

/* The wait, in flush periods, after cycles of the given sizes: a quiet
 * program's doubles up to 4, a steady one of 64-128 KiB a cycle keeps its
 * wait, and only a busier one goes back to one period. The old rule went back
 * at 64 KiB, so json_roundtrip.py's cycles of 27, 53 and 105 KB swung
 * between 1, 2 and 4 periods (writer.c). */
static void test_wait_follows_the_cycles(void **state)
{
    (void)state;
    static const struct {
        long periods;
        uint64_t raw;
        long next;
    } cases[] = {
        {1, 27u << 10, 2},  {2, 53u << 10, 4},   {4, 105u << 10, 4}, {4, 105u << 10, 4},
        {4, 127u << 10, 4}, {4, 128u << 10, 1},  {1, 100u << 10, 1}, {2, 64u << 10, 2},
        {2, 140u << 10, 1}, {1, 63u << 10, 2},   {0, 0, 1},          {4, 10u << 20, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long got = trk_writer_next_wait(cases[i].periods, cases[i].raw);
        if (got != cases[i].next)
            fail_msg("case %zu: after %ld periods and %llu bytes: %ld, expected %ld", i,
                     cases[i].periods, (unsigned long long)cases[i].raw, got, cases[i].next);
    }
    /* json_roundtrip.py's rate, ~27 KB per period: one wait of 1, one of
     * 2, then 4 for good */
    long p = 1, seen[8];
    for (int k = 0; k < 8; k++) {
        seen[k] = p;
        p = trk_writer_next_wait(p, (uint64_t)p * (27u << 10));
    }
    for (int k = 0; k < 8; k++)
        assert_int_equal(seen[k], k == 0 ? 1 : k == 1 ? 2 : 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_event_once_in_order),
        cmocka_unit_test(test_cut_capture_reads_as_truncated),
        cmocka_unit_test(test_wait_follows_the_cycles),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
