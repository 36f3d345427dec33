/* SPDX-License-Identifier: MIT
 *
 * test_profile.c - the profile pass (src/analysis/profile*.c, timeline.c)
 * on synthetic captures written by a tiny in-test writer, with exact
 * expected figures: the earliest of equal peaks and every site's share of
 * it, a peak at the very end, realloc moving bytes between sites, partial
 * munmap and mremap charged to the right sites, leaks, the temporary rules,
 * the per-thread split, a bounded timeline over a million events,
 * histogram buckets, and totals identical to `tracker stats`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/profile.h"
#include "common/crc32c.h"
#include "format/record.h"

#include "tcap.h"

/* ---- Helpers ------------------------------------------------------------------ */

static const struct trk_site *site(const struct trk_profile *p, uint32_t stack, uint32_t thread,
                                   uint32_t space)
{
    for (size_t i = 0; i < p->nsites; i++)
        if (p->sites[i].stack == stack && p->sites[i].thread == thread &&
            p->sites[i].space == space)
            return &p->sites[i];
    return NULL;
}

static const struct trk_site *heap_site(const struct trk_profile *p, uint32_t stack)
{
    const struct trk_site *s = site(p, stack, 0, TRK_SPACE_HEAP);
    assert_non_null(s);
    return s;
}

static const struct trk_site *mmap_site(const struct trk_profile *p, uint32_t stack)
{
    const struct trk_site *s = site(p, stack, 0, TRK_SPACE_MMAP);
    assert_non_null(s);
    return s;
}

static void compute(struct tcap *c, const struct trk_profile_options *o, struct trk_profile *p)
{
    struct trk_reader *r = tc_open(c);
    assert_int_equal(trk_profile_compute(r, o, p), 0);
    trk_reader_close(r);
}

/* Sums of site figures must equal the space totals: every byte is charged
 * to exactly one site, and per-site peaks are taken at the same moment. */
static void check_site_sums(const struct trk_profile *p)
{
    uint64_t alloc[2] = {0}, leak[2] = {0}, peak[2] = {0}, leak_count = 0, allocs = 0;
    for (size_t i = 0; i < p->nsites; i++) {
        const struct trk_site *s = &p->sites[i];
        assert_true(s->space < 2);
        alloc[s->space] += s->s.alloc_bytes;
        leak[s->space] += s->s.leak_bytes;
        peak[s->space] += s->s.peak_bytes;
        if (s->space == TRK_SPACE_HEAP) {
            leak_count += s->s.leak_count;
            allocs += s->s.alloc_count;
        }
    }
    assert_int_equal(alloc[0], p->totals.bytes_allocated);
    assert_int_equal(allocs, p->totals.allocations);
    assert_int_equal(leak[0], p->totals.leaked_bytes);
    assert_int_equal(leak_count, p->totals.leaked_allocations);
    assert_int_equal(peak[0], p->totals.peak_heap_bytes);
    assert_int_equal(leak[1], p->totals.mmap_leaked_bytes);
    assert_int_equal(peak[1], p->totals.mmap_peak_bytes);
    assert_int_equal(p->peak_bytes[0], p->totals.peak_heap_bytes);
    assert_int_equal(p->peak_bytes[1], p->totals.mmap_peak_bytes);
}

#define assert_fig(site_, field, v) assert_int_equal((site_)->s.field, (v))

/* ---- Tests -------------------------------------------------------------------------- */

/* Live 150 twice: first A=100 B=50 (t=20), later A=0 B=150 (t=40). The
 * earliest wins, with the figures of that moment. */
static void test_equal_peaks_earliest(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = tc_thread(&c, 100, 0);
    tc_stacks(&c, t, 2);
    tc_at(&c, 10);
    tc_alloc(&c, t, 0x1000, 100, 1);
    tc_at(&c, 20);
    tc_alloc(&c, t, 0x2000, 50, 2);
    tc_at(&c, 30);
    tc_free(&c, t, 0x1000);
    tc_at(&c, 40);
    tc_alloc(&c, t, 0x3000, 100, 2);
    tc_at(&c, 50);
    tc_free(&c, t, 0x2000);
    tc_at(&c, 60);
    struct trk_profile p;
    compute(&c, NULL, &p);
    assert_int_equal(p.peak_bytes[TRK_SPACE_HEAP], 150);
    assert_int_equal(p.peak_t_ns[TRK_SPACE_HEAP], 20);
    const struct trk_site *a = heap_site(&p, 1), *b = heap_site(&p, 2);
    assert_fig(a, peak_bytes, 100);
    assert_fig(a, peak_count, 1);
    assert_fig(b, peak_bytes, 50);
    assert_fig(b, peak_count, 1);
    assert_fig(a, alloc_count, 1);
    assert_fig(a, alloc_bytes, 100);
    assert_fig(a, free_count, 1);
    assert_fig(a, leak_bytes, 0);
    assert_fig(b, alloc_count, 2);
    assert_fig(b, alloc_bytes, 150);
    assert_fig(b, free_count, 1);
    assert_fig(b, leak_bytes, 100);
    assert_fig(b, leak_count, 1);
    assert_int_equal(p.end_t_ns, 60);
    check_site_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

/* The last event makes the peak; no site changes after it. A site made
 * after the peak's generation began but holding nothing keeps 0. */
static void test_peak_at_end(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = tc_thread(&c, 100, 0);
    tc_stacks(&c, t, 3);
    tc_at(&c, 1);
    tc_alloc(&c, t, 0x1000, 10, 1);
    tc_at(&c, 2);
    tc_alloc(&c, t, 0x2000, 20, 2);
    tc_at(&c, 3);
    tc_free(&c, t, 0x1000);
    tc_at(&c, 4);
    tc_alloc(&c, t, 0x3000, 30, 2);
    tc_at(&c, 5);
    tc_alloc(&c, t, 0x4000, 0, 3); /* nothing live: not a new peak */
    struct trk_profile p;
    compute(&c, NULL, &p);
    assert_int_equal(p.peak_bytes[TRK_SPACE_HEAP], 50);
    assert_int_equal(p.peak_t_ns[TRK_SPACE_HEAP], 4);
    assert_fig(heap_site(&p, 1), peak_bytes, 0);
    assert_fig(heap_site(&p, 1), peak_count, 0);
    assert_fig(heap_site(&p, 2), peak_bytes, 50);
    assert_fig(heap_site(&p, 2), peak_count, 2);
    assert_fig(heap_site(&p, 3), peak_count, 0);
    assert_fig(heap_site(&p, 3), leak_count, 1);
    check_site_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

/* realloc's release goes to the old block's site, the new block to the
 * realloc's caller; also in place. Both releases count as temporary under
 * heaptrack's rule (freed before the thread's next allocation). */
static void test_realloc_moves_sites(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = tc_thread(&c, 100, 0);
    tc_stacks(&c, t, 3);
    tc_at(&c, 1);
    tc_alloc(&c, t, 0x1000, 100, 1);
    tc_at(&c, 2);
    tc_realloc(&c, t, 0x1000, 0x2000, 300, 2);
    tc_at(&c, 3);
    tc_realloc(&c, t, 0x2000, 0x2000, 50, 3);
    struct trk_profile p;
    compute(&c, NULL, &p);
    const struct trk_site *a = heap_site(&p, 1), *b = heap_site(&p, 2), *d = heap_site(&p, 3);
    assert_int_equal(p.totals.allocations, 3);
    assert_int_equal(p.totals.bytes_allocated, 450);
    assert_int_equal(p.totals.frees, 2);
    assert_int_equal(p.totals.by_allocator[TRK_ALLOC_REALLOC].allocations, 2);
    assert_int_equal(p.totals.by_allocator[TRK_ALLOC_REALLOC].frees, 2);
    assert_int_equal(p.peak_bytes[TRK_SPACE_HEAP], 300);
    assert_fig(a, free_count, 1);
    assert_fig(a, leak_bytes, 0);
    assert_fig(a, peak_bytes, 0);
    assert_fig(b, alloc_bytes, 300);
    assert_fig(b, peak_bytes, 300);
    assert_fig(b, free_count, 1);
    assert_fig(b, leak_bytes, 0);
    assert_fig(d, leak_bytes, 50);
    assert_fig(d, leak_count, 1);
    assert_fig(d, peak_bytes, 0);
    assert_int_equal(p.temporary_allocations, 2);
    assert_int_equal(p.temporary_bytes, 400);
    assert_fig(a, temp_bytes, 100);
    assert_fig(b, temp_bytes, 300);
    check_site_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

#define X     UINT64_C(0x10000000)
#define PG(n) ((uint64_t)(n)*PAGE)

/* Front, back, middle and spanning munmaps, a page-rounded length, a
 * replacing mmap and a file mapping: every byte charged to its site. */
static void test_partial_munmap(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = tc_thread(&c, 100, 0);
    tc_stacks(&c, t, 4);
    tc_at(&c, 1);
    tc_mmap(&c, t, X, PG(10), 1, 0);          /* A [0,10) */
    tc_mmap(&c, t, X + PG(10), PG(4), 2, 0);  /* B [10,14): mmap peak 14 pages */
    tc_mmap(&c, t, X + PG(100), PG(3), 4, 1); /* a file: not anonymous memory */
    tc_at(&c, 2);
    tc_munmap(&c, t, X, PG(2));         /* front: A [2,10) */
    tc_munmap(&c, t, X + PG(9), 1);     /* back, one byte = one page: A [2,9) */
    tc_munmap(&c, t, X + PG(4), PG(2)); /* hole: A [2,4) [6,9) */
    tc_munmap(&c, t, X + PG(8), PG(4)); /* spans A [8,9), a gap, B [10,12) */
    struct trk_profile p;
    struct trk_reader *r;
    {
        struct tcap c2 = c; /* a snapshot of the capture so far */
        c2.file = malloc(c.cap);
        memcpy(c2.file, c.file, c.len);
        for (unsigned i = 0; i < TC_STREAMS; i++) {
            c2.s[i].buf = c.s[i].buf ? malloc(c.s[i].cap) : NULL;
            if (c.s[i].buf)
                memcpy(c2.s[i].buf, c.s[i].buf, c.s[i].len);
        }
        r = tc_open(&c2);
        assert_int_equal(trk_profile_compute(r, NULL, &p), 0);
        trk_reader_close(r);
        tc_free_all(&c2);
    }
    assert_fig(mmap_site(&p, 1), leak_bytes, PG(4));
    assert_fig(mmap_site(&p, 1), leak_count, 1);
    assert_fig(mmap_site(&p, 2), leak_bytes, PG(2));
    assert_fig(mmap_site(&p, 2), leak_count, 1);
    assert_int_equal(p.totals.mmap_leaked_bytes, PG(6));
    assert_int_equal(p.totals.mmap_peak_bytes, PG(14));
    assert_fig(mmap_site(&p, 1), peak_bytes, PG(10));
    assert_fig(mmap_site(&p, 2), peak_bytes, PG(4));
    assert_null(site(&p, 4, 0, TRK_SPACE_MMAP));
    check_site_sums(&p);
    trk_profile_free(&p);

    tc_at(&c, 3);
    tc_munmap(&c, t, X, PG(6));              /* A's first piece: one piece left */
    tc_mmap(&c, t, X + PG(12), PG(2), 3, 0); /* replaces B's rest */
    tc_at(&c, 4);
    tc_munmap(&c, t, X + PG(6), PG(2)); /* A's last piece */
    compute(&c, NULL, &p);
    const struct trk_site *a = mmap_site(&p, 1), *b = mmap_site(&p, 2), *d = mmap_site(&p, 3);
    assert_fig(a, leak_bytes, 0);
    assert_fig(a, leak_count, 0);
    assert_fig(a, free_count, 1);
    assert_fig(a, alloc_count, 1);
    assert_fig(a, alloc_bytes, PG(10));
    assert_fig(b, leak_bytes, 0);
    assert_fig(b, leak_count, 0);
    assert_fig(b, free_count, 1);
    assert_fig(d, leak_bytes, PG(2));
    assert_fig(d, leak_count, 1);
    assert_int_equal(p.totals.mmap_leaked_bytes, PG(2));
    assert_int_equal(p.peak_t_ns[TRK_SPACE_MMAP], 1);
    assert_int_equal(p.totals.bytes_allocated, 0); /* heap untouched */
    check_site_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

/* mremap: moved (old site released, new range at the mremap's site), with
 * MREMAP_DONTUNMAP (old stays), a file mapping (never counted) and a shrink
 * in place. */
static void test_mremap(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = tc_thread(&c, 100, 0);
    tc_stacks(&c, t, 7);
    uint64_t Y = X + PG(1000), W = X + PG(2000), V = X + PG(3000);
    uint64_t U = X + PG(4000), T = X + PG(5000);
    tc_at(&c, 1);
    tc_mmap(&c, t, X, PG(4), 1, 0);
    tc_at(&c, 2);
    tc_mremap(&c, t, X, PG(4), Y, PG(8), 1 /* MAYMOVE */, 2);
    tc_at(&c, 3);
    tc_mmap(&c, t, W, PG(2), 3, 0);
    tc_mremap(&c, t, W, PG(2), V, PG(2), 1 | 4 /* DONTUNMAP */, 4);
    tc_mmap(&c, t, U, PG(3), 5, 1);
    tc_mremap(&c, t, U, PG(3), T, PG(5), 1, 6);
    tc_at(&c, 4);
    tc_mremap(&c, t, Y, PG(8), Y, PG(3), 0, 7);
    struct trk_profile p;
    compute(&c, NULL, &p);
    assert_fig(mmap_site(&p, 1), leak_bytes, 0);
    assert_fig(mmap_site(&p, 1), free_count, 1);
    assert_fig(mmap_site(&p, 2), alloc_bytes, PG(8));
    assert_fig(mmap_site(&p, 2), leak_bytes, 0);
    assert_fig(mmap_site(&p, 2), free_count, 1);
    assert_fig(mmap_site(&p, 3), leak_bytes, PG(2));
    assert_fig(mmap_site(&p, 4), leak_bytes, PG(2));
    assert_null(site(&p, 6, 0, TRK_SPACE_MMAP));
    assert_fig(mmap_site(&p, 7), leak_bytes, PG(3));
    assert_fig(mmap_site(&p, 7), leak_count, 1);
    assert_int_equal(p.totals.mmap_leaked_bytes, PG(7));
    assert_int_equal(p.totals.mmap_peak_bytes, PG(12));
    assert_int_equal(p.peak_t_ns[TRK_SPACE_MMAP], 3);
    assert_fig(mmap_site(&p, 2), peak_bytes, PG(8));
    assert_fig(mmap_site(&p, 3), peak_bytes, PG(2));
    assert_fig(mmap_site(&p, 4), peak_bytes, PG(2));
    assert_fig(mmap_site(&p, 7), peak_bytes, 0);
    check_site_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

/* Leaks are what each site still holds at the end. */
static void test_leaks_per_site(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = tc_thread(&c, 100, 0);
    tc_stacks(&c, t, 3);
    for (uint64_t i = 0; i < 10; i++)
        tc_alloc(&c, t, 0x1000 + 16 * i, 8, 1 + i % 3);
    for (uint64_t i = 0; i < 10; i += 2)
        tc_free(&c, t, 0x1000 + 16 * i);
    tc_free(&c, t, 0xdead0); /* unmatched */
    struct trk_profile p;
    compute(&c, NULL, &p);
    /* i = 1,3,5,7,9 live: stacks 2,1,3,2,1 */
    assert_fig(heap_site(&p, 1), leak_count, 2);
    assert_fig(heap_site(&p, 1), leak_bytes, 16);
    assert_fig(heap_site(&p, 2), leak_count, 2);
    assert_fig(heap_site(&p, 3), leak_count, 1);
    assert_fig(heap_site(&p, 3), leak_bytes, 8);
    assert_int_equal(p.totals.leaked_allocations, 5);
    assert_int_equal(p.totals.unmatched_frees, 1);
    check_site_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

/* One sequence judged three ways: heaptrack's rule (N=1), N=3, and N=1
 * plus "within 3 ns". */
static void build_temp(struct tcap *c)
{
    tc_begin(c);
    unsigned t = tc_thread(c, 100, 0), u = tc_thread(c, 200, 0);
    tc_stacks(c, t, 6);
    tc_at(c, 0);
    tc_alloc(c, t, 0xa0, 10, 1); /* a */
    tc_at(c, 1);
    tc_free(c, t, 0xa0); /* 0 further allocations */
    tc_at(c, 2);
    tc_alloc(c, t, 0xb0, 20, 2); /* b */
    tc_at(c, 3);
    tc_alloc(c, t, 0xc0, 30, 3); /* c */
    tc_at(c, 4);
    tc_free(c, t, 0xb0); /* 1 further, 2 ns */
    tc_at(c, 5);
    tc_alloc(c, t, 0xd0, 40, 4);
    tc_at(c, 6);
    tc_alloc(c, t, 0xe0, 50, 4);
    tc_at(c, 7);
    tc_alloc(c, t, 0xf0, 60, 4);
    tc_at(c, 8);
    tc_free(c, t, 0xc0); /* 3 further, 5 ns */
    tc_at(c, 9);
    tc_alloc(c, t, 0x100, 70, 5); /* g */
    tc_at(c, 10);
    tc_free(c, u, 0x100); /* another thread, 1 ns */
    tc_at(c, 11);
    tc_alloc(c, u, 0x110, 80, 6); /* h */
    tc_at(c, 2000);
    tc_free(c, u, 0x110); /* 0 further on its thread, long after */
}

static void test_temporary_rules(void **state)
{
    (void)state;
    struct tcap c;
    struct trk_profile p;

    build_temp(&c);
    compute(&c, NULL, &p); /* N = 1 */
    assert_int_equal(p.temporary_allocations, 2);
    assert_int_equal(p.temporary_bytes, 90);
    assert_fig(heap_site(&p, 1), temp_count, 1);
    assert_fig(heap_site(&p, 1), temp_bytes, 10);
    assert_fig(heap_site(&p, 2), temp_count, 0);
    const struct trk_site *h = site(&p, 6, 1, TRK_SPACE_HEAP);
    assert_non_null(h);
    assert_fig(h, temp_bytes, 80);
    trk_profile_free(&p);
    tc_free_all(&c);

    build_temp(&c);
    compute(&c, &(struct trk_profile_options){.temp_allocs = 3}, &p);
    assert_int_equal(p.temporary_allocations, 3);
    assert_int_equal(p.temporary_bytes, 110);
    assert_fig(heap_site(&p, 2), temp_bytes, 20);
    assert_fig(heap_site(&p, 3), temp_count, 0);
    trk_profile_free(&p);
    tc_free_all(&c);

    build_temp(&c);
    compute(&c, &(struct trk_profile_options){.temp_allocs = 1, .temp_ns = 3}, &p);
    assert_int_equal(p.temporary_allocations, 4);
    assert_int_equal(p.temporary_bytes, 180);
    assert_fig(heap_site(&p, 2), temp_bytes, 20);
    assert_fig(heap_site(&p, 3), temp_count, 0);
    assert_fig(heap_site(&p, 5), temp_bytes, 70);
    check_site_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

/* Threads: names (one given by another thread before the thread's first
 * event, one changed), a tid reused after exit (two entries), the
 * tracker's own thread left out, and each thread's share of the peak. */
static void test_threads_split(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned sampler = tc_thread(&c, 999, 1);
    unsigned t1 = tc_thread(&c, 100, 0);
    tc_stacks(&c, t1, 2);
    tc_name(&c, t1, 100, "first");
    tc_rss(&c, sampler, 1 << 20, 1 << 19);
    tc_alloc(&c, t1, 0x1000, 100, 1);
    tc_name(&c, t1, 200, "worker"); /* before 200 starts */
    unsigned t2 = tc_thread(&c, 200, 0);
    tc_alloc(&c, t2, 0x2000, 50, 1);
    unsigned t3 = tc_thread(&c, 300, 0);
    tc_alloc(&c, t3, 0x3000, 7, 2);
    tc_exit(&c, t3);
    unsigned t4 = tc_thread(&c, 300, 0); /* the kernel reused the tid */
    tc_alloc(&c, t4, 0x4000, 9, 2);
    tc_free(&c, t2, 0x2000);
    tc_name(&c, t1, 100, "main2");
    struct trk_profile p;
    compute(&c, NULL, &p);
    assert_int_equal(p.nthreads, 4);
    assert_int_equal(p.totals.threads, 3);
    assert_int_equal(p.threads[0].tid, 100);
    assert_string_equal(p.threads[0].name, "main2");
    assert_int_equal(p.threads[1].tid, 200);
    assert_string_equal(p.threads[1].name, "worker");
    assert_int_equal(p.threads[2].tid, 300);
    assert_null(p.threads[2].name);
    assert_int_equal(p.threads[3].tid, 300);
    uint64_t alloc[] = {100, 50, 7, 9}, leak[] = {100, 0, 7, 9};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(p.threads[i].allocations, 1);
        assert_int_equal(p.threads[i].bytes_allocated, alloc[i]);
        assert_int_equal(p.threads[i].leaked_bytes, leak[i]);
        assert_int_equal(p.threads[i].peak_bytes, alloc[i]); /* peak 166 at t4's alloc */
    }
    assert_int_equal(p.peak_bytes[TRK_SPACE_HEAP], 166);
    assert_non_null(site(&p, 1, 1, TRK_SPACE_HEAP));
    assert_non_null(site(&p, 2, 3, TRK_SPACE_HEAP));
    assert_int_equal(p.totals.rss_peak_bytes, (1 << 20) + (1 << 19));
    check_site_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static uint64_t progress_done, progress_total;
static unsigned progress_calls;

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    (void)ctx;
    progress_done = done;
    progress_total = total;
    progress_calls++;
}

/* A million events in at most 64 points; the spike survives every merge,
 * in the point whose interval holds it; RSS is the last sample. */
static void test_timeline_bounded(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned sampler = tc_thread(&c, 999, 1);
    unsigned t = tc_thread(&c, 100, 0);
    tc_stacks(&c, t, 1);
    /* 530000 pairs: past 2^20 events, so progress reports once midway. */
    const uint64_t n = 530000, spike_at = 250000;
    uint64_t spike_t = 0;
    for (uint64_t i = 0; i < n; i++) {
        tc_at(&c, i * 1000);
        tc_alloc(&c, t, 0x100000 + 64 * (i & 1023), 100, 1);
        if (i == spike_at) {
            spike_t = i * 1000 + 1;
            tc_at(&c, spike_t);
            tc_alloc(&c, t, 0x9000000, 1000000, 1);
            tc_at(&c, spike_t + 1);
            tc_free(&c, t, 0x9000000);
        }
        if (i % 100000 == 0)
            tc_rss(&c, sampler, i + 1, 2 * i + 1);
        tc_at(&c, i * 1000 + 500);
        tc_free(&c, t, 0x100000 + 64 * (i & 1023));
    }
    tc_at(&c, n * 1000 + 7);
    struct trk_profile p;
    progress_calls = 0;
    compute(&c, &(struct trk_profile_options){.timeline_points = 64, .progress = on_progress}, &p);
    assert_true(p.totals.events >= 1000000);
    /* Progress is in bytes of the file: the last report is all of it. */
    assert_true(progress_total > 0);
    assert_int_equal(progress_done, progress_total);
    assert_true(progress_calls >= 2);
    assert_true(p.ntimeline >= 2 && p.ntimeline <= 64);
    assert_int_equal(p.timeline[p.ntimeline - 1].t_ns, n * 1000 + 7);
    assert_int_equal(p.peak_bytes[TRK_SPACE_HEAP], 1000100);
    assert_int_equal(p.peak_t_ns[TRK_SPACE_HEAP], spike_t);
    size_t spike_pt = SIZE_MAX;
    for (size_t k = 0; k < p.ntimeline; k++) {
        if (k)
            assert_true(p.timeline[k].t_ns > p.timeline[k - 1].t_ns);
        if (spike_pt == SIZE_MAX && p.timeline[k].t_ns > spike_t)
            spike_pt = k;
    }
    for (size_t k = 0; k < p.ntimeline; k++)
        assert_int_equal(p.timeline[k].heap, k == spike_pt ? 1000100 : 100);
    assert_int_equal(p.timeline[p.ntimeline - 1].rss_anon, 500001);
    assert_int_equal(p.timeline[p.ntimeline - 1].rss_file, 1000001);
    assert_int_equal(p.timeline[0].rss_anon, 1);
    check_site_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static void test_histogram(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = tc_thread(&c, 100, 0);
    static const uint64_t sizes[] = {0, 1, 2, 3, 4, 7, 8, 1000, 1 << 20, (1 << 20) + 1};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        tc_alloc(&c, t, 0x1000 + 16 * i, sizes[i], 0);
    tc_alloc(&c, t, 0, (UINT64_C(1) << 63) + 5, 0); /* failed: counted, holds nothing */
    struct trk_profile p;
    compute(&c, NULL, &p);
    uint64_t count[TRK_HIST_BUCKETS] = {0}, bytes[TRK_HIST_BUCKETS] = {0};
    count[0] = 1;
    count[1] = 1, bytes[1] = 1;
    count[2] = 2, bytes[2] = 5;
    count[3] = 2, bytes[3] = 11;
    count[4] = 1, bytes[4] = 8;
    count[10] = 1, bytes[10] = 1000;
    count[21] = 2, bytes[21] = (2 << 20) + 1;
    count[63] = 1, bytes[63] = (UINT64_C(1) << 63) + 5;
    for (int b = 0; b < TRK_HIST_BUCKETS; b++) {
        assert_int_equal(p.hist_count[b], count[b]);
        assert_int_equal(p.hist_bytes[b], bytes[b]);
    }
    assert_int_equal(p.totals.leaked_allocations, 10);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random heap and mapping traffic from three threads, including corrupt
 * values (huge sizes, unknown addresses, undefined stacks): no crash, site
 * sums equal totals, totals equal trk_stats_compute's. */
static void test_random_matches_stats(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned th[3];
    for (int i = 0; i < 3; i++)
        th[i] = tc_thread(&c, 100 + (uint32_t)i, 0);
    tc_stacks(&c, th[0], 20);
    uint64_t s = 88172645463325252ull;
    for (int i = 0; i < 200000; i++) {
        unsigned t = th[rnd(&s) % 3];
        uint64_t a = 0x10000 + 16 * (rnd(&s) % 4096);
        uint64_t m = X + PG(rnd(&s) % 512);
        uint64_t stack = rnd(&s) % 23; /* 21, 22: undefined */
        tc_at(&c, (uint64_t)i * 10 + rnd(&s) % 15);
        switch (rnd(&s) % 10) {
        case 0:
        case 1:
        case 2:
            tc_alloc(&c, t, a, rnd(&s) % 5000, stack);
            break;
        case 3:
        case 4:
            tc_free(&c, t, a);
            break;
        case 5:
            tc_realloc(&c, t, a, 0x10000 + 16 * (rnd(&s) % 4096), rnd(&s) % 9000, stack);
            break;
        case 6:
            tc_mmap(&c, t, m, PG(1 + rnd(&s) % 16) - rnd(&s) % 100, stack, rnd(&s) % 5 == 0);
            break;
        case 7:
            tc_munmap(&c, t, m, PG(rnd(&s) % 8) + rnd(&s) % 3);
            break;
        case 8:
            tc_mremap(&c, t, m, PG(1 + rnd(&s) % 4), X + PG(rnd(&s) % 512), PG(1 + rnd(&s) % 8),
                      rnd(&s) % 3 == 0 ? 5 : 1, stack);
            break;
        default:
            if (rnd(&s) % 100 == 0)
                tc_alloc(&c, t, a, UINT64_MAX - rnd(&s) % 3, UINT64_MAX); /* hostile */
            else
                tc_rss(&c, t, rnd(&s) % (1 << 30), rnd(&s) % (1 << 30));
            break;
        }
    }
    struct trk_profile p;
    struct trk_reader *r = tc_open(&c);
    assert_int_equal(
        trk_profile_compute(r, &(struct trk_profile_options){.timeline_points = 7}, &p), 0);
    trk_reader_close(r);
    assert_true(p.ntimeline <= 7);
    /* The hostile sizes make the byte sums wrap; check the sums on the
     * figures that stay meaningful. */
    uint64_t leak_count = 0, mleak = 0, mpeak = 0;
    for (size_t i = 0; i < p.nsites; i++) {
        if (p.sites[i].space == TRK_SPACE_HEAP)
            leak_count += p.sites[i].s.leak_count;
        else {
            mleak += p.sites[i].s.leak_bytes;
            mpeak += p.sites[i].s.peak_bytes;
        }
    }
    assert_int_equal(leak_count, p.totals.leaked_allocations);
    assert_int_equal(mleak, p.totals.mmap_leaked_bytes);
    assert_int_equal(mpeak, p.totals.mmap_peak_bytes);
    struct trk_stats st;
    r = tc_open(&c);
    assert_int_equal(trk_stats_compute(r, &st), 0);
    trk_reader_close(r);
    const struct trk_stats *q = &p.totals;
    assert_string_equal(st.command, q->command);
    assert_string_equal(st.command, "prog --flag");
#define SAME(f) assert_true(st.f == q->f)
    SAME(pid), SAME(allocations), SAME(frees), SAME(bytes_allocated), SAME(peak_heap_bytes);
    SAME(leaked_bytes), SAME(leaked_allocations), SAME(unmatched_frees);
    SAME(mmap_peak_bytes), SAME(mmap_leaked_bytes), SAME(rss_peak_bytes);
    SAME(rss_anon_peak_bytes), SAME(rss_file_peak_bytes), SAME(threads), SAME(duration_s);
    SAME(truncated), SAME(lost_events), SAME(checksum_failures), SAME(bad_chunks);
    SAME(broken_streams), SAME(bytes_lost), SAME(events);
#undef SAME
    assert_memory_equal(st.by_allocator, q->by_allocator, sizeof(st.by_allocator));
    assert_int_equal(q->threads, 3);
    assert_true(q->mmap_peak_bytes > 0 && q->unmatched_frees > 0);
    trk_stats_free(&st);
    trk_profile_free(&p);
    tc_free_all(&c);
}

/* Heap and mappings peak at different times (issue 10 section 4): heap
 * 10000 at t=20 (with 1 page mapped), mapped 3 pages at t=40 (heap 0).
 * Their sum peaked at t=20 with 10000 + PG(1), not at heap peak + mapping
 * peak; each site's figure at that instant is what it held then. */
static void test_heap_mmap_peak_one_instant(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = tc_thread(&c, 100, 0);
    tc_stacks(&c, t, 3);
    tc_at(&c, 10);
    tc_mmap(&c, t, X, PG(1), 2, 0); /* mapped 1 page */
    tc_at(&c, 20);
    tc_alloc(&c, t, 0x1000, 10000, 1); /* heap 10000: heap peak, and the sum's */
    tc_at(&c, 30);
    tc_free(&c, t, 0x1000);
    tc_at(&c, 40);
    tc_mmap(&c, t, X + PG(10), PG(2), 3, 0); /* mapped 3 pages: mapping peak */
    tc_at(&c, 50);
    tc_munmap(&c, t, X + PG(10), PG(2));
    tc_munmap(&c, t, X, PG(1));
    tc_at(&c, 60);
    struct trk_profile p;
    compute(&c, NULL, &p);
    assert_int_equal(p.peak_bytes[TRK_SPACE_HEAP], 10000);
    assert_int_equal(p.peak_t_ns[TRK_SPACE_HEAP], 20);
    assert_int_equal(p.peak_bytes[TRK_SPACE_MMAP], PG(3));
    assert_int_equal(p.peak_t_ns[TRK_SPACE_MMAP], 40);
    /* One instant of heap + mappings: 10000 + PG(1) = 14096 at t=20, where
     * adding the two peaks would say 10000 + PG(3) = 22288. */
    assert_int_equal(p.peak_hm_bytes, 10000 + PG(1));
    assert_int_equal(p.peak_hm_t_ns, 20);
    const struct trk_site *h = heap_site(&p, 1), *m1 = mmap_site(&p, 2), *m2 = mmap_site(&p, 3);
    assert_fig(h, peak_hm_bytes, 10000);
    assert_fig(h, peak_hm_count, 1);
    assert_fig(m1, peak_hm_bytes, PG(1));
    assert_fig(m1, peak_hm_count, 1);
    assert_fig(m2, peak_hm_bytes, 0); /* mapped after that instant */
    assert_fig(m2, peak_hm_count, 0);
    /* Each space's own peak figures are unchanged. */
    assert_fig(m2, peak_bytes, PG(2));
    assert_fig(m1, peak_bytes, PG(1));
    assert_fig(h, peak_bytes, 10000);
    uint64_t sum = 0;
    for (size_t i = 0; i < p.nsites; i++)
        sum += p.sites[i].s.peak_hm_bytes;
    assert_int_equal(sum, p.peak_hm_bytes);
    trk_profile_free(&p);
    tc_free_all(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_peaks_earliest),
        cmocka_unit_test(test_peak_at_end),
        cmocka_unit_test(test_heap_mmap_peak_one_instant),
        cmocka_unit_test(test_realloc_moves_sites),
        cmocka_unit_test(test_partial_munmap),
        cmocka_unit_test(test_mremap),
        cmocka_unit_test(test_leaks_per_site),
        cmocka_unit_test(test_temporary_rules),
        cmocka_unit_test(test_threads_split),
        cmocka_unit_test(test_timeline_bounded),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_random_matches_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
