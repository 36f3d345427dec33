/* SPDX-License-Identifier: MIT
 *
 * test_leak_table.c - the exit scan's live set table (capture/leak_live.c,
 * leak_table.h) at its limits: the memory it holds for a big live heap
 * (kept by the writer for the whole run: it was the tracker's largest cost
 * in `import torch` 2.11's peak RSS), sizes past an entry's 32 bits, and
 * seqs far past the entries' 31-bit relative seq: re-based at a
 * watermark, or, with no watermark near enough, the set refused rather
 * than guessed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "capture/leakscan.h"
#include "capture/own_mem.h"
#include "format/format.h"
#include "format/record.h"
#include "lset_file.h"

#define MIB (1ull << 20)

/* own_mem.h's snapshot: the leak scan's bytes now and at their peak. */
static uint64_t scan_peak(void)
{
    uint64_t out[TRK_OWN_FIELDS];
    trk_own_snapshot(out);
    return out[13];
}

static uint64_t block_addr(unsigned i)
{
    return 0x555555560000ull + 48 * (uint64_t)i;
}

/* Every 97th block is 5 GiB and more: its size goes to the side table. */
static uint64_t block_size(unsigned i)
{
    return i % 97 == 0 ? (5ull << 30) + i : 16 + i % 2000;
}

/* The process's resident high-water mark, in bytes. */
static uint64_t max_rss(void)
{
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    return (uint64_t)ru.ru_maxrss << 10;
}

static int cmp_block(const void *a, const void *b)
{
    const struct trk_lblock *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* 300,000 blocks allocated and never freed, handed over as the writer
 * does, 5,000 a piece with a watermark after each: the table's memory
 * (mapped, own_mem.h) at its peak, and every block back with its size. */
#define NBIG 300000
static void test_memory_per_live_block(void **unused)
{
    (void)unused;
    uint64_t before = scan_peak(), rss_before = max_rss();
    trk_ltrack_start();
    static uint8_t piece[5000 * 32];
    struct trk_rec_state st = {0};
    uint64_t off = 0, seq = 1;
    for (unsigned i = 0; i < NBIG;) {
        uint8_t *p = piece;
        for (unsigned k = 0; k < 5000 && i < NBIG; k++, i++)
            p = trk_enc_alloc(p, &st, TRK_ALLOC_MALLOC, seq++, 1000 * (uint64_t)i, block_addr(i),
                              block_size(i), 5);
        trk_ltrack_piece(1, off, piece, (size_t)(p - piece));
        off += (size_t)(p - piece);
        trk_ltrack_watermark(seq);
    }
    uint64_t held = scan_peak() - before, rss = max_rss() - rss_before;
    /* 16-byte entries, 11/20 to 4/5 full: 41 bytes a block mapped at the
     * last growth's peak (old and new table), 25 resident, for the old
     * table is given back as the rehash reads it (41 without that).
     * 24-byte entries in powers of two, both held while growing, and the
     * spare an earlier rehash left, took 74 here. The resident figure is
     * the process's, test included. */
    print_message("table: %.1f bytes a live block mapped at its peak, %.1f resident\n",
                  (double)held / NBIG, (double)rss / NBIG);
    assert_true(held <= 44 * (uint64_t)NBIG);
    assert_true(rss <= 32 * (uint64_t)NBIG);
    struct file f = file_new(1 << 20);
    struct trk_lset s;
    lset_take(&s, &f, 1);
    assert_int_equal(s.n, NBIG);
    for (unsigned i = 0; i < NBIG; i++) {
        struct trk_lblock want = {.addr = block_addr(i)};
        const struct trk_lblock *b = bsearch(&want, s.v, s.n, sizeof want, cmp_block);
        assert_non_null(b);
        assert_true(b->size == block_size(i));
    }
    trk_lset_free(&s);
}

/* A capture of two streams around a watermark 3e9 events on: block A's
 * ALLOC (seq 1) is then older than the table's base, and stream 2's FREE
 * of X (older) is read after stream 1's ALLOC of X (newer). */
#define FAR 3000000000ull
static void far_capture(struct file *f, int track, uint64_t wm)
{
    uint8_t p0[256], *p = p0;
    struct trk_rec_state s1 = {0}, s2 = {0};
    const uint64_t a = 0x5555000010ull, c = 0x5555000050ull, x = 0x5555000090ull;
    p = trk_enc_alloc(p, &s1, TRK_ALLOC_MALLOC, 1, 10, a, 100, 3);
    p = trk_enc_alloc(p, &s1, TRK_ALLOC_MALLOC, 2, 20, c, 7ull << 32, 3);
    p = trk_enc_alloc(p, &s1, TRK_ALLOC_MALLOC, 3, 30, x, 1, 3);
    size_t n1 = (size_t)(p - p0);
    chunk(f, TRK_CHUNK_DATA, TRK_CODEC_STORED, 1, p0, (uint32_t)n1, (uint32_t)n1, 0);
    chunk(f, TRK_CHUNK_WATERMARK, TRK_CODEC_STORED, 0, NULL, 0, 0, wm);
    if (track) {
        trk_ltrack_piece(1, 0, p0, n1);
        trk_ltrack_watermark(wm);
    }
    uint8_t q0[256], *q = q0;
    q = trk_enc_free(q, &s1, TRK_ALLOC_FREE, FAR + 1, 40, a);
    q = trk_enc_alloc(q, &s1, TRK_ALLOC_MALLOC, FAR + 10, 50, x, 300, 3);
    size_t m1 = (size_t)(q - q0);
    chunk(f, TRK_CHUNK_DATA, TRK_CODEC_STORED, 1, q0, (uint32_t)m1, (uint32_t)m1, n1);
    uint8_t r0[256], *r = r0;
    r = trk_enc_free(r, &s2, TRK_ALLOC_FREE, FAR + 7, 45, x);
    size_t m2 = (size_t)(r - r0);
    chunk(f, TRK_CHUNK_DATA, TRK_CODEC_STORED, 2, r0, (uint32_t)m2, (uint32_t)m2, 0);
    if (track) {
        trk_ltrack_piece(1, n1, q0, m1);
        trk_ltrack_piece(2, 0, r0, m2);
    }
}

static void check_far(int track)
{
    struct file f = file_new(1 << 20);
    if (track)
        trk_ltrack_start();
    far_capture(&f, track, FAR - 5);
    struct trk_lset s;
    lset_take(&s, &f, track);
    assert_int_equal(s.n, 2);
    assert_true(s.v[0].addr == 0x5555000050ull && s.v[0].size == 7ull << 32);
    assert_true(s.v[1].addr == 0x5555000090ull && s.v[1].size == 300);
    trk_lset_free(&s);
}

static void test_far_seqs_read_back(void **unused)
{
    (void)unused;
    check_far(0);
}

static void test_far_seqs_kept(void **unused)
{
    (void)unused;
    check_far(1);
}

/* The same events with the watermark left at 4: 3e9 events past it, which
 * no entry's seq can say. The scan is then not done (-1), read back or
 * kept (the kept set breaks, and the read-back of the file does too). */
static void test_far_seqs_without_watermark(void **unused)
{
    (void)unused;
    for (int track = 0; track <= 1; track++) {
        struct file f = file_new(1 << 20);
        if (track)
            trk_ltrack_start();
        far_capture(&f, track, 4);
        int fd = memfd_create("capture", 0);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, f.p, f.n), (ssize_t)f.n);
        free(f.p);
        struct trk_lset s;
        assert_int_equal(trk_lset_load(&s, fd), -1);
        close(fd);
        trk_ltrack_fork_child(); /* a broken kept set starts afresh */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: the peak it reads is the process's */
        cmocka_unit_test(test_memory_per_live_block),
        cmocka_unit_test(test_far_seqs_read_back),
        cmocka_unit_test(test_far_seqs_kept),
        cmocka_unit_test(test_far_seqs_without_watermark),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
