/* SPDX-License-Identifier: MIT
 *
 * test_gpu_profile.c - GPU memory in the reader and the profile pass
 * (src/reader/decode.c, src/analysis/profile_gpu.c, the driver-host rules
 * of profile.c, timeline.c) on synthetic captures written with the record
 * encoders, with exact expected figures: per-device totals and peaks on two
 * devices, every kind (pinned host and imported outside the device totals),
 * VMM create/map/unmap/release with a reservation that never counts and a
 * handle equal to a device pointer, async pools, releases whose kind and
 * device were unknown, refused allocations as "failed" sites, driver
 * samples, host events tagged as the driver's (nested scopes) counted or
 * hidden, bounded per-device timelines, and hostile device ordinals.
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

#include "analysis/calltree.h"
#include "analysis/live_map.h"
#include "analysis/profile.h"
#include "common/crc32c.h"
#include "format/record.h"

#define TC_STREAMS 4
#include "tcap.h"

/* One record in stream `strm`: `call` encodes at p with delta state st. */
#define EMIT(cap, strm, call)                                                                      \
    do {                                                                                           \
        uint8_t *p = tc_room(cap, strm);                                                           \
        struct trk_rec_state *st = &(cap)->s[strm].st;                                             \
        tc_commit(cap, strm, call);                                                                \
    } while (0)

/* A program thread's stream, with stacks 1..8 (frame 0x1000 * id). */
static unsigned gthread(struct tcap *c, uint32_t tid)
{
    unsigned s = tc_thread(c, tid, 0);
    tc_stacks(c, s, 8);
    return s;
}

static void tc_galloc(struct tcap *c, unsigned s, unsigned api, unsigned kind, int64_t dev,
                      uint64_t addr, uint64_t size, uint64_t stream, uint64_t stack)
{
    EMIT(c, s,
         trk_enc_gpu_alloc(p, st, ++c->seq, c->ts, api, kind, dev, addr, size, stream, stack));
}

static void tc_gfree(struct tcap *c, unsigned s, unsigned api, unsigned kind, int64_t dev,
                     uint64_t addr)
{
    EMIT(c, s, trk_enc_gpu_free(p, st, ++c->seq, c->ts, api, kind, dev, addr));
}

static void tc_gfail(struct tcap *c, unsigned s, unsigned kind, int64_t dev, uint64_t size,
                     uint64_t stack)
{
    EMIT(c, s,
         trk_enc_gpu_fail(p, st, ++c->seq, c->ts, TRK_GPU_API_CUMEMALLOC, kind, dev, size, 2,
                          stack));
}

static void tc_gmap(struct tcap *c, unsigned s, unsigned op, int64_t dev, uint64_t va,
                    uint64_t size, uint64_t handle)
{
    unsigned api = op == TRK_GPU_OP_MAP ? TRK_GPU_API_CUMEMMAP : TRK_GPU_API_CUMEMUNMAP;
    EMIT(c, s, trk_enc_gpu_map(p, st, ++c->seq, c->ts, api, op, dev, va, size, handle, 0));
}

static void tc_meminfo(struct tcap *c, unsigned s, uint64_t dev, uint64_t used, uint64_t total)
{
    EMIT(c, s, trk_enc_gpu_meminfo(p, st, ++c->seq, c->ts, dev, used, total));
}

static void tc_scope(struct tcap *c, unsigned s, int enter)
{
    EMIT(c, s, ((void)st, trk_enc_gpu_scope(p, enter)));
}

/* The common case: cuMemAlloc-style device memory. */
static void tc_dev(struct tcap *c, unsigned s, int64_t dev, uint64_t addr, uint64_t size,
                   uint64_t stack)
{
    tc_galloc(c, s, TRK_GPU_API_CUMEMALLOC, TRK_GPU_DEVICE, dev, addr, size, 0, stack);
}

static void tc_devfree(struct tcap *c, unsigned s, int64_t dev, uint64_t addr)
{
    tc_gfree(c, s, TRK_GPU_API_CUMEMFREE, TRK_GPU_DEVICE, dev, addr);
}

/* ---- Helpers -------------------------------------------------------------------- */

static void compute(struct tcap *c, const struct trk_profile_options *o, struct trk_profile *p)
{
    struct trk_reader *r = tc_open(c);
    assert_int_equal(trk_profile_compute(r, o, p), 0);
    trk_reader_close(r);
}

static const struct trk_site *gsite(const struct trk_profile *p, uint32_t stack, int64_t dev,
                                    unsigned kind)
{
    for (size_t i = 0; i < p->nsites; i++) {
        const struct trk_site *s = &p->sites[i];
        if (s->stack == stack && s->space == trk_gpu_space(dev) && s->kind == kind)
            return s;
    }
    fail_msg("no site for stack %u device %d kind %u", stack, (int)dev, kind);
    return NULL;
}

static const struct trk_gpu_stats *dev_of(const struct trk_profile *p, int32_t dev)
{
    const struct trk_gpu_stats *g = trk_stats_gpu(&p->totals, dev);
    assert_non_null(g);
    return g;
}

/* A device's device-memory figures, in the order of the stats JSON. */
static void expect_dev(const struct trk_gpu_stats *d, uint64_t allocations, uint64_t frees,
                       uint64_t bytes, uint64_t peak, uint64_t leaked, uint64_t leaked_allocations)
{
    assert_int_equal(d->allocations, allocations);
    assert_int_equal(d->frees, frees);
    assert_int_equal(d->bytes_allocated, bytes);
    assert_int_equal(d->peak_bytes, peak);
    assert_int_equal(d->leaked_bytes, leaked);
    assert_int_equal(d->leaked_allocations, leaked_allocations);
}

/* Every device-memory byte is charged to exactly one site of its device,
 * and site peaks are taken at the device's peak. */
static void check_device_sums(const struct trk_profile *p)
{
    for (size_t d = 0; d < p->totals.ngpu; d++) {
        const struct trk_gpu_stats *g = &p->totals.gpu[d];
        uint32_t space = trk_gpu_space(g->device);
        uint64_t alloc = 0, peak = 0, leak = 0, leaks = 0, frees = 0;
        for (size_t i = 0; i < p->nsites; i++) {
            const struct trk_site *s = &p->sites[i];
            if (s->space != space || !trk_gpu_kind_is_device(s->kind))
                continue;
            alloc += s->s.alloc_bytes;
            peak += s->s.peak_bytes;
            leak += s->s.leak_bytes;
            leaks += s->s.leak_count;
            frees += s->s.free_count;
        }
        assert_int_equal(alloc, g->bytes_allocated);
        assert_int_equal(peak, g->peak_bytes);
        assert_int_equal(leak, g->leaked_bytes);
        assert_int_equal(leaks, g->leaked_allocations);
        assert_int_equal(frees, g->frees);
        assert_int_equal(p->peak_bytes[space], g->peak_bytes);
    }
}

#define A(n) (UINT64_C(0x700000000000) + (uint64_t)(n) * 0x100000)

/* ---- Tests ------------------------------------------------------------------------- */

static void test_two_devices(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = gthread(&c, 100);
    /* {device, address, size (0: free it), stack}, one per microsecond:
     * device 0 peaks at 4000 bytes (t = 3 us), device 1 at 7000 (6 us). */
    static const struct {
        int64_t dev;
        unsigned addr;
        uint64_t size, stack;
    } ev[] = {{0, 1, 1000, 1}, {1, 2, 5000, 2}, {0, 3, 3000, 3}, {0, 1, 0, 0},
              {0, 4, 500, 1},  {1, 5, 2000, 4}, {1, 2, 0, 0},    {1, 6, 4000, 2}};
    for (unsigned i = 0; i < 8; i++) {
        tc_at(&c, 1000 * (i + 1));
        if (ev[i].size)
            tc_dev(&c, t, ev[i].dev, A(ev[i].addr), ev[i].size, ev[i].stack);
        else
            tc_devfree(&c, t, ev[i].dev, A(ev[i].addr));
    }
    tc_at(&c, 10000);
    struct trk_profile p;
    compute(&c, NULL, &p);

    assert_int_equal(p.totals.ngpu, 2);
    assert_int_equal(p.totals.gpu[0].device, 0);
    assert_int_equal(p.totals.gpu[1].device, 1);
    expect_dev(dev_of(&p, 0), 3, 1, 4500, 4000, 3500, 2);
    expect_dev(dev_of(&p, 1), 3, 1, 11000, 7000, 6000, 2);
    assert_int_equal(dev_of(&p, 1)->by_kind[TRK_GPU_DEVICE].peak_bytes, 7000);
    assert_int_equal(p.peak_t_ns[TRK_SPACE_GPU0], 3000);
    assert_int_equal(p.peak_t_ns[TRK_SPACE_GPU0 + 1], 6000);
    /* Each site's share of its own device's peak. */
    assert_int_equal(gsite(&p, 1, 0, TRK_GPU_DEVICE)->s.peak_bytes, 1000);
    assert_int_equal(gsite(&p, 1, 0, TRK_GPU_DEVICE)->s.leak_bytes, 500);
    assert_int_equal(gsite(&p, 1, 0, TRK_GPU_DEVICE)->s.alloc_count, 2);
    assert_int_equal(gsite(&p, 3, 0, TRK_GPU_DEVICE)->s.peak_bytes, 3000);
    assert_int_equal(gsite(&p, 2, 1, TRK_GPU_DEVICE)->s.peak_bytes, 5000);
    assert_int_equal(gsite(&p, 2, 1, TRK_GPU_DEVICE)->s.leak_bytes, 4000);
    assert_int_equal(gsite(&p, 4, 1, TRK_GPU_DEVICE)->s.peak_bytes, 2000);
    check_device_sums(&p);
    /* GPU memory is no heap. */
    assert_int_equal(p.totals.allocations, 0);
    assert_int_equal(p.totals.peak_heap_bytes, 0);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static void test_each_kind(void **state)
{
    (void)state;
    static const struct {
        unsigned api, kind;
        uint64_t addr, size;
    } k[] = {
        {TRK_GPU_API_CUMEMALLOC, TRK_GPU_DEVICE, A(1), 100},
        {TRK_GPU_API_CUMEMALLOCMANAGED, TRK_GPU_MANAGED, A(2), 200},
        {TRK_GPU_API_CUMEMHOSTALLOC, TRK_GPU_PINNED_HOST, A(3), 1u << 30},
        {TRK_GPU_API_CUMEMALLOCASYNC, TRK_GPU_ASYNC, A(4), 800},
        {TRK_GPU_API_CUMEMCREATE, TRK_GPU_VMM_PHYS, 0x11, 1600},
        {TRK_GPU_API_CUIPCOPENMEMHANDLE, TRK_GPU_IMPORTED, A(5), 3200},
        {TRK_GPU_API_CUARRAYCREATE, TRK_GPU_ARRAY, 0x22, 6400},
    };
    struct tcap c;
    tc_begin(&c);
    unsigned t = gthread(&c, 100);
    for (unsigned i = 0; i < 7; i++) {
        tc_at(&c, 1000 * (i + 1));
        tc_galloc(&c, t, k[i].api, k[i].kind, 0, k[i].addr, k[i].size, 0, i + 1);
    }
    tc_at(&c, 9000);
    tc_gfree(&c, t, TRK_GPU_API_CUMEMFREEHOST, TRK_GPU_PINNED_HOST, 0, A(3));
    tc_gfree(&c, t, TRK_GPU_API_CUMEMFREEASYNC, TRK_GPU_ASYNC, 0, A(4));
    tc_at(&c, 10000);
    struct trk_profile p;
    compute(&c, NULL, &p);
    const struct trk_gpu_stats *d = dev_of(&p, 0);
    /* Device memory: device, managed, async, VMM, array; not pinned host
     * (1 GiB here) nor imported. */
    expect_dev(d, 5, 1, 100 + 200 + 800 + 1600 + 6400, 9100, 8300, 4);
    assert_int_equal(p.peak_t_ns[TRK_SPACE_GPU0], 7000);
    /* Pinned host sites report what they held at the device's peak. */
    assert_int_equal(gsite(&p, 3, 0, TRK_GPU_PINNED_HOST)->s.peak_bytes, 1u << 30);
    for (unsigned i = 0; i < 7; i++) {
        const struct trk_gpu_kind_stats *x = &d->by_kind[k[i].kind];
        bool freed = k[i].kind == TRK_GPU_PINNED_HOST || k[i].kind == TRK_GPU_ASYNC;
        assert_int_equal(x->allocations, 1);
        assert_int_equal(x->bytes, k[i].size);
        assert_int_equal(x->peak_bytes, k[i].size);
        assert_int_equal(x->leaked_bytes, freed ? 0 : k[i].size);
        assert_int_equal(x->frees, freed);
        /* Every kind has its site in the device's space. */
        assert_int_equal(gsite(&p, i + 1, 0, k[i].kind)->s.alloc_bytes, k[i].size);
    }
    assert_int_equal(d->by_kind[TRK_GPU_VA_RESERVE].allocations, 0);
    assert_int_equal(d->unmatched_frees, 0);
    check_device_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static void test_vmm(void **state)
{
    (void)state;
    const uint64_t va = UINT64_C(0x7f0000000000), handle = 0x1000, two_mib = 2u << 20;
    struct tcap c;
    tc_begin(&c);
    unsigned t = gthread(&c, 100);
    tc_at(&c, 1000);
    /* Reserving a terabyte of address space is no memory. */
    tc_galloc(&c, t, TRK_GPU_API_CUMEMADDRESSRESERVE, TRK_GPU_VA_RESERVE, 0, va, UINT64_C(1) << 40,
              0, 1);
    tc_at(&c, 2000);
    tc_galloc(&c, t, TRK_GPU_API_CUMEMCREATE, TRK_GPU_VMM_PHYS, 0, handle, two_mib, 0, 2);
    /* A device pointer with the handle's value: another family. */
    tc_dev(&c, t, 0, handle, 64, 3);
    tc_at(&c, 3000);
    tc_gmap(&c, t, TRK_GPU_OP_MAP, 0, va, two_mib, handle);
    tc_at(&c, 4000);
    tc_gmap(&c, t, TRK_GPU_OP_UNMAP, 0, va, two_mib, handle);
    tc_at(&c, 5000);
    tc_gfree(&c, t, TRK_GPU_API_CUMEMRELEASE, TRK_GPU_VMM_PHYS, 0, handle);
    tc_gfree(&c, t, TRK_GPU_API_CUMEMADDRESSFREE, TRK_GPU_VA_RESERVE, 0, va);
    tc_at(&c, 6000);
    struct trk_profile p;
    compute(&c, NULL, &p);
    const struct trk_gpu_stats *d = dev_of(&p, 0);
    expect_dev(d, 2, 1, two_mib + 64, two_mib + 64, 64, 1);
    assert_int_equal(d->maps, 1);
    assert_int_equal(d->unmaps, 1);
    assert_int_equal(d->unmatched_frees, 0);
    assert_int_equal(d->by_kind[TRK_GPU_VMM_PHYS].leaked_bytes, 0);
    assert_int_equal(d->by_kind[TRK_GPU_DEVICE].leaked_bytes, 64);
    /* The reservation is counted as a call and nothing else. */
    assert_int_equal(d->by_kind[TRK_GPU_VA_RESERVE].allocations, 1);
    assert_int_equal(d->by_kind[TRK_GPU_VA_RESERVE].peak_bytes, 0);
    for (size_t i = 0; i < p.nsites; i++)
        assert_int_not_equal(p.sites[i].kind, TRK_GPU_VA_RESERVE);
    check_device_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static void test_async(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = gthread(&c, 100);
    tc_at(&c, 1000);
    tc_galloc(&c, t, TRK_GPU_API_CUMEMALLOCASYNC, TRK_GPU_ASYNC, 0, A(1), 1000, 5, 1);
    tc_galloc(&c, t, TRK_GPU_API_CUMEMALLOCFROMPOOLASYNC, TRK_GPU_ASYNC, 0, A(2), 2000, 5, 2);
    tc_at(&c, 2000);
    tc_gfree(&c, t, TRK_GPU_API_CUMEMFREEASYNC, TRK_GPU_ASYNC, 0, A(1));
    /* Stream-ordered reuse of the same address. */
    tc_galloc(&c, t, TRK_GPU_API_CUMEMALLOCASYNC, TRK_GPU_ASYNC, 0, A(1), 500, 6, 1);
    tc_at(&c, 3000);

    /* The reader hands the stream and api over. */
    struct trk_reader *r = tc_open(&c);
    struct trk_event e;
    int allocs = 0;
    while (trk_reader_next(r, &e) == 1) {
        if (e.type != TRK_EV_GPU_ALLOC)
            continue;
        assert_int_equal(e.kind, TRK_GPU_ASYNC);
        assert_int_equal(e.u.gpu.device, 0);
        assert_int_equal(e.u.gpu.stream, allocs == 2 ? 6 : 5);
        assert_int_equal(e.u.gpu.api, allocs == 1 ? TRK_GPU_API_CUMEMALLOCFROMPOOLASYNC
                                                  : TRK_GPU_API_CUMEMALLOCASYNC);
        allocs++;
    }
    assert_int_equal(allocs, 3);
    trk_reader_close(r);

    struct trk_profile p;
    compute(&c, NULL, &p);
    expect_dev(dev_of(&p, 0), 3, 1, 3500, 3000, 2500, 2);
    assert_int_equal(dev_of(&p, 0)->by_kind[TRK_GPU_ASYNC].peak_bytes, 3000);
    assert_int_equal(gsite(&p, 1, 0, TRK_GPU_ASYNC)->s.peak_bytes, 1000);
    assert_int_equal(gsite(&p, 1, 0, TRK_GPU_ASYNC)->s.leak_bytes, 500);
    check_device_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static void test_unknown_release_resolved(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = gthread(&c, 100);
    tc_at(&c, 1000);
    tc_galloc(&c, t, TRK_GPU_API_CUMEMALLOCMANAGED, TRK_GPU_MANAGED, 1, A(1), 300, 0, 1);
    tc_galloc(&c, t, TRK_GPU_API_CUMEMCREATE, TRK_GPU_VMM_PHYS, 1, 0x77, 4096, 0, 2);
    tc_galloc(&c, t, TRK_GPU_API_CUMEMCREATE, TRK_GPU_VMM_PHYS, 1, 0x88, 8192, 0, 2);
    tc_at(&c, 2000);
    /* Kind 0 and device -1: found by family (from the entry point) and
     * address, and charged to the allocation's device and kind. */
    tc_gfree(&c, t, TRK_GPU_API_CUMEMFREE, 0, -1, A(1));
    tc_gfree(&c, t, TRK_GPU_API_CUMEMRELEASE, 0, -1, 0x77);
    /* An entry point that names the wrong family: the others are searched. */
    tc_gfree(&c, t, TRK_GPU_API_CUMEMFREE, 0, -1, 0x88);
    /* Nothing live there: unmatched, on the device the record names. */
    tc_gfree(&c, t, TRK_GPU_API_CUMEMFREE, 0, -1, A(9));
    tc_at(&c, 3000);
    struct trk_profile p;
    compute(&c, NULL, &p);
    assert_int_equal(p.totals.ngpu, 2);
    assert_int_equal(p.totals.gpu[1].device, -1); /* unknown sorts last */
    const struct trk_gpu_stats *d = dev_of(&p, 1);
    expect_dev(d, 3, 3, 300 + 4096 + 8192, 300 + 4096 + 8192, 0, 0);
    assert_int_equal(d->by_kind[TRK_GPU_MANAGED].frees, 1);
    assert_int_equal(d->by_kind[TRK_GPU_VMM_PHYS].frees, 2);
    assert_int_equal(d->unmatched_frees, 0);
    const struct trk_gpu_stats *u = dev_of(&p, -1);
    assert_int_equal(u->unmatched_frees, 1);
    assert_int_equal(u->allocations, 0);
    check_device_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static void test_failed_allocation(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = gthread(&c, 100);
    tc_at(&c, 1000);
    tc_dev(&c, t, 0, A(1), 1000, 1);
    tc_at(&c, 2000);
    tc_gfail(&c, t, TRK_GPU_DEVICE, 0, UINT64_C(1) << 34, 2);
    tc_gfail(&c, t, TRK_GPU_DEVICE, 0, UINT64_C(1) << 33, 2);
    tc_gfail(&c, t, TRK_GPU_MANAGED, 0, 4096, 3);
    tc_at(&c, 3000);
    struct trk_profile p;
    compute(&c, NULL, &p);
    const struct trk_gpu_stats *d = dev_of(&p, 0);
    assert_int_equal(d->allocations, 1);
    assert_int_equal(d->failed_allocations, 3);
    assert_int_equal(d->failed_bytes, (UINT64_C(3) << 33) + 4096);
    assert_int_equal(d->peak_bytes, 1000);
    const struct trk_site *s = gsite(&p, 2, 0, TRK_GPU_DEVICE);
    assert_int_equal(s->s.fail_count, 2);
    assert_int_equal(s->s.fail_bytes, UINT64_C(3) << 33);
    assert_int_equal(s->s.alloc_count, 0);
    assert_int_equal(s->s.peak_bytes, 0);
    uint64_t bytes, count;
    trk_select_value(&s->s, TRK_SEL_FAILED, &bytes, &count);
    assert_int_equal(bytes, UINT64_C(3) << 33);
    assert_int_equal(count, 2);
    assert_string_equal(trk_select_name(TRK_SEL_FAILED), "failed");
    assert_int_equal(gsite(&p, 3, 0, TRK_GPU_MANAGED)->s.fail_count, 1);
    check_device_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static void test_driver_meminfo(void **state)
{
    (void)state;
    const uint64_t mib = 1u << 20, total = UINT64_C(80) << 30;
    struct tcap c;
    tc_begin(&c);
    unsigned t = gthread(&c, 100);
    tc_at(&c, 1000);
    tc_meminfo(&c, t, 0, 100 * mib, total);
    tc_at(&c, 5000);
    tc_meminfo(&c, t, 0, 300 * mib, total);
    tc_at(&c, 9000);
    tc_meminfo(&c, t, 0, 200 * mib, total);
    tc_meminfo(&c, t, 5, 7, 8);
    tc_meminfo(&c, t, 1000, 9, 9); /* no such ordinal: ignored */
    tc_at(&c, 9500);
    struct trk_profile p;
    compute(&c, NULL, &p);
    assert_int_equal(p.totals.ngpu, 2);
    const struct trk_gpu_stats *d = dev_of(&p, 0);
    assert_int_equal(d->driver_samples, 3);
    assert_int_equal(d->driver_peak_bytes, 300 * mib);
    assert_int_equal(d->driver_total_bytes, total);
    assert_int_equal(d->allocations, 0);
    assert_int_equal(dev_of(&p, 5)->driver_peak_bytes, 7);
    /* Points are 1024 ns long here: samples at points 0, 4 and 8, each
     * carried until the next. */
    assert_int_equal(p.ngpu_timeline, 2);
    assert_int_equal(p.gpu_timeline[0].device, 0);
    assert_int_equal(p.gpu_timeline[1].device, 5);
    assert_int_equal(p.ntimeline, 10);
    for (size_t k = 0; k < p.ntimeline; k++) {
        uint64_t want = k < 4 ? 100 * mib : k < 8 ? 300 * mib : 200 * mib;
        assert_int_equal(p.gpu_timeline[0].driver[k], want);
        assert_int_equal(p.gpu_timeline[0].live[k], 0);
        assert_int_equal(p.gpu_timeline[1].driver[k], k >= 8 ? 7 : 0);
    }
    trk_profile_free(&p);
    tc_free_all(&c);
}

/* Host events between GPU_ENTER and GPU_EXIT (nested here) are the
 * driver's: tagged by the reader, counted and tallied, or hidden. */
static void write_driver_capture(struct tcap *c)
{
    tc_begin(c);
    unsigned t = gthread(c, 100);
    tc_at(c, 1000);
    tc_alloc(c, t, 0x1000, 100, 1);
    tc_scope(c, t, 1);
    tc_alloc(c, t, 0x2000, 1000, 2);
    EMIT(c, t, trk_enc_mmap(p, st, ++c->seq, c->ts, 0x70000000, 8192, 3, 0x22, 0, 2));
    tc_scope(c, t, 1);
    tc_alloc(c, t, 0x3000, 50, 2);
    tc_scope(c, t, 0);
    tc_alloc(c, t, 0x4000, 10, 2); /* still inside the outer call */
    tc_scope(c, t, 0);
    tc_scope(c, t, 0); /* an EXIT too many changes nothing */
    tc_at(c, 2000);
    tc_alloc(c, t, 0x5000, 7, 3);
    tc_free(c, t, 0x3000); /* the program frees a driver block */
    tc_scope(c, t, 1);
    tc_free(c, t, 0x9999); /* the driver frees something never seen */
    tc_scope(c, t, 0);
    tc_at(c, 3000);
}

static void expect_heap(const struct trk_stats *t, uint64_t allocations, uint64_t bytes,
                        uint64_t peak, uint64_t leaked, uint64_t frees, uint64_t unmatched,
                        uint64_t mmap_peak)
{
    assert_int_equal(t->allocations, allocations);
    assert_int_equal(t->bytes_allocated, bytes);
    assert_int_equal(t->peak_heap_bytes, peak);
    assert_int_equal(t->leaked_bytes, leaked);
    assert_int_equal(t->frees, frees);
    assert_int_equal(t->unmatched_frees, unmatched);
    assert_int_equal(t->mmap_peak_bytes, mmap_peak);
}

/* The driver's share is the same whether it is counted or hidden. */
static void expect_driver(const struct trk_driver_host_stats *h)
{
    assert_int_equal(h->allocations, 3);
    assert_int_equal(h->bytes_allocated, 1060);
    assert_int_equal(h->peak_bytes, 1060);
    assert_int_equal(h->leaked_bytes, 1010);
    assert_int_equal(h->mmap_peak_bytes, 8192);
    assert_int_equal(h->mmap_leaked_bytes, 8192);
}

static void test_driver_host_events(void **state)
{
    (void)state;
    struct tcap c;
    write_driver_capture(&c);
    struct trk_reader *r = tc_open(&c);
    struct trk_event e;
    unsigned tagged = 0, plain = 0;
    while (trk_reader_next(r, &e) == 1) {
        if (e.type != TRK_EV_ALLOC && e.type != TRK_EV_FREE && e.type != TRK_EV_MMAP)
            continue;
        bool drv = e.addr == 0x2000 || e.addr == 0x3000 || e.addr == 0x4000 ||
                   e.addr == 0x70000000 || e.addr == 0x9999;
        if (e.type == TRK_EV_FREE && e.addr == 0x3000)
            drv = false;
        assert_int_equal((e.flags & TRK_EVF_GPU_DRIVER) != 0, drv);
        tagged += drv;
        plain += !drv;
    }
    assert_int_equal(tagged, 5);
    assert_int_equal(plain, 3);
    trk_reader_close(r);

    /* Counted like any memory, and tallied. */
    struct trk_profile p;
    compute(&c, NULL, &p);
    expect_heap(&p.totals, 5, 1167, 1167, 1117, 2, 1, 8192);
    expect_driver(&p.totals.gpu_driver_host);
    /* No GPU event: every GPU field stays empty (`"gpu": {}`). */
    assert_int_equal(p.totals.ngpu, 0);
    assert_null(p.totals.gpu);
    assert_int_equal(p.ngpu_timeline, 0);
    assert_null(p.gpu_timeline);
    unsigned flagged = 0;
    for (size_t i = 0; i < p.nsites; i++) {
        if (!(p.sites[i].flags & TRK_SITE_GPU_DRIVER))
            continue;
        flagged++;
        assert_int_equal(p.sites[i].stack, 2);
        if (p.sites[i].space == TRK_SPACE_HEAP)
            assert_int_equal(p.sites[i].s.alloc_count, 3);
    }
    assert_int_equal(flagged, 2); /* heap and mmap */
    trk_profile_free(&p);

    /* Hidden: as if the driver's memory were not there; the tally stays. */
    compute(&c, &(struct trk_profile_options){.exclude_gpu_driver_host = true}, &p);
    expect_heap(&p.totals, 2, 107, 107, 107, 0, 0, 0);
    assert_int_equal(p.totals.leaked_allocations, 2);
    assert_int_equal(p.totals.mmap_leaked_bytes, 0);
    expect_driver(&p.totals.gpu_driver_host);
    for (size_t i = 0; i < p.nsites; i++)
        assert_false(p.sites[i].flags & TRK_SITE_GPU_DRIVER);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static void test_gpu_timeline_bounded(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = gthread(&c, 100);
    const uint64_t n = 100000, spike_at = 40000;
    for (uint64_t i = 0; i < n; i++) {
        int dev = (int)(i & 1);
        tc_at(&c, i * 1000);
        tc_dev(&c, t, dev, A(i & 255), 100 + (uint64_t)dev, 1);
        if (i == spike_at) {
            tc_at(&c, i * 1000 + 1);
            tc_dev(&c, t, 0, A(1000), 1000000, 2);
            tc_at(&c, i * 1000 + 2);
            tc_devfree(&c, t, 0, A(1000));
        }
        tc_at(&c, i * 1000 + 500);
        tc_devfree(&c, t, dev, A(i & 255));
    }
    tc_at(&c, n * 1000);
    tc_dev(&c, t, 1, A(2000), 4242, 3); /* leaked: the last point shows it */
    tc_at(&c, n * 1000 + 7);
    struct trk_profile p;
    compute(&c, &(struct trk_profile_options){.timeline_points = 64}, &p);
    assert_true(p.ntimeline >= 2 && p.ntimeline <= 64);
    assert_int_equal(p.ngpu_timeline, 2);
    assert_int_equal(dev_of(&p, 0)->peak_bytes, 1000100);
    assert_int_equal(dev_of(&p, 1)->peak_bytes, 4242);
    assert_int_equal(p.peak_t_ns[TRK_SPACE_GPU0], spike_at * 1000 + 1);
    for (size_t d = 0; d < 2; d++) {
        const struct trk_gpu_series *g = &p.gpu_timeline[d];
        assert_int_equal(g->device, (int32_t)d);
        uint64_t top = 0;
        for (size_t k = 0; k < p.ntimeline; k++)
            top = g->live[k] > top ? g->live[k] : top;
        assert_int_equal(top, d == 0 ? 1000100 : 4242);
    }
    assert_int_equal(p.gpu_timeline[1].live[p.ntimeline - 1], 4242);
    assert_int_equal(p.gpu_timeline[0].live[p.ntimeline - 1], 100);
    for (size_t k = 0; k < p.ntimeline; k++)
        assert_int_equal(p.timeline[k].heap, 0);
    check_device_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

/* Ordinals that cannot be real read as unknown; a release recorded on
 * another device still finds its allocation; nothing overflows. */
static void test_hostile_devices(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = gthread(&c, 100);
    tc_at(&c, 1000);
    tc_dev(&c, t, 1000, A(1), 10, 1);
    tc_dev(&c, t, -5, A(2), 20, 1);
    tc_dev(&c, t, INT64_MIN, A(3), UINT64_MAX, 1);
    tc_dev(&c, t, 63, A(4), 30, 1);
    tc_dev(&c, t, 64, A(5), 40, 1);
    tc_at(&c, 2000);
    tc_devfree(&c, t, 3, A(1));
    tc_devfree(&c, t, 3, A(3));
    tc_at(&c, 3000);
    struct trk_profile p;
    compute(&c, NULL, &p);
    assert_int_equal(p.totals.ngpu, 2);
    assert_int_equal(p.totals.gpu[0].device, 63);
    /* 10 + 20 + (2^64 - 1) + 40 wraps as a sum, and the live size of the
     * absurd block is clamped to 2^56 - 1. */
    expect_dev(dev_of(&p, -1), 4, 2, 69, 70 + TRK_LIVE_SIZE_MASK, 60, 2);
    assert_null(trk_stats_gpu(&p.totals, 3));
    check_device_sums(&p);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rnd(uint64_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state % n;
}

/* Random GPU and host records over a small address pool, so that
 * replacements, unmatched and cross-device releases all happen: the sums
 * must hold, stats must agree, and hiding driver memory must not break. */
static void test_random_invariants(void **state)
{
    (void)state;
    static const int64_t devs[] = {-1, 0, 1, 2, 63, 64, 1000};
    struct tcap c;
    tc_begin(&c);
    unsigned t = gthread(&c, 100);
    int depth = 0;
    for (uint64_t i = 0; i < 200000; i++) {
        tc_at(&c, i * 100 + rnd(150)); /* times may step back a little */
        int64_t dev = devs[rnd(7)];
        uint64_t addr = A(rnd(64)), size = rnd(4) ? rnd(1 << 20) : rnd(UINT64_MAX);
        switch (rnd(10)) {
        case 0:
        case 1:
        case 2:
            tc_galloc(&c, t, 1 + (unsigned)rnd(25), 1 + (unsigned)rnd(9), dev, addr, size,
                      rnd(4), rnd(9));
            break;
        case 3:
        case 4:
            tc_gfree(&c, t, 1 + (unsigned)rnd(25), (unsigned)rnd(10), dev, addr);
            break;
        case 5:
            tc_gfail(&c, t, 1 + (unsigned)rnd(9), dev, size, rnd(9));
            break;
        case 6:
            tc_gmap(&c, t, 1 + (unsigned)rnd(2), dev, addr, size, rnd(64));
            break;
        case 7:
            tc_meminfo(&c, t, (uint64_t)dev, size, size * 2);
            break;
        case 8:
            if (depth && rnd(2)) {
                tc_scope(&c, t, 0);
                depth--;
            } else {
                tc_scope(&c, t, 1);
                depth++;
            }
            break;
        default:
            if (rnd(2))
                tc_alloc(&c, t, 0x10000 + 16 * rnd(64), rnd(1000), rnd(9));
            else
                tc_free(&c, t, 0x10000 + 16 * rnd(64));
            break;
        }
    }
    tc_at(&c, 200000 * 100 + 1000);
    struct trk_profile p;
    compute(&c, &(struct trk_profile_options){.timeline_points = 100}, &p);
    check_device_sums(&p);
    assert_true(p.ntimeline <= 100);
    assert_int_equal(p.ngpu_timeline, p.totals.ngpu);
    for (size_t d = 0; d < p.totals.ngpu; d++) {
        const struct trk_gpu_stats *g = &p.totals.gpu[d];
        assert_true(d == 0 || g->device > p.totals.gpu[d - 1].device || g->device == -1);
        uint64_t top = 0;
        for (size_t k = 0; k < p.ntimeline; k++)
            top = p.gpu_timeline[d].live[k] > top ? p.gpu_timeline[d].live[k] : top;
        assert_int_equal(top, g->peak_bytes);
    }
    struct trk_reader *r = tc_open(&c);
    struct trk_stats st;
    assert_int_equal(trk_stats_compute(r, &st), 0);
    assert_int_equal(st.ngpu, p.totals.ngpu);
    assert_memory_equal(st.gpu, p.totals.gpu, st.ngpu * sizeof(*st.gpu));
    assert_int_equal(st.leaked_bytes, p.totals.leaked_bytes);
    trk_stats_free(&st);
    trk_reader_close(r);
    trk_profile_free(&p);
    compute(&c, &(struct trk_profile_options){.exclude_gpu_driver_host = true}, &p);
    check_device_sums(&p);
    assert_true(p.totals.allocations <= p.totals.gpu_driver_host.allocations + 200000);
    trk_profile_free(&p);
    tc_free_all(&c);
}

static void test_space_selection(void **state)
{
    (void)state;
    assert_true(trk_spaces_has(0, TRK_SPACE_HEAP));
    assert_false(trk_spaces_has(0, TRK_SPACE_MMAP));
    assert_false(trk_spaces_has(0, TRK_SPACE_GPU0));
    assert_true(trk_spaces_has(3, TRK_SPACE_MMAP));
    assert_false(trk_spaces_has(3, TRK_SPACE_GPU0 + 1));
    assert_true(trk_spaces_has(TRK_SPACES_GPU, TRK_SPACE_GPU0 + 63));
    assert_true(trk_spaces_has(TRK_SPACES_GPU, TRK_SPACE_GPU_UNKNOWN));
    assert_false(trk_spaces_has(TRK_SPACES_GPU, TRK_SPACE_HEAP));
    assert_false(trk_spaces_has(TRK_SPACES_GPU, TRK_SPACE_COUNT));
    uint32_t one = trk_spaces_device(5);
    assert_true(trk_spaces_has(one, TRK_SPACE_GPU0 + 5));
    assert_false(trk_spaces_has(one, TRK_SPACE_GPU0 + 4));
    assert_false(trk_spaces_has(one, TRK_SPACE_HEAP));
    assert_true(trk_spaces_has(trk_spaces_device(-1), TRK_SPACE_GPU_UNKNOWN));
    assert_int_equal(trk_gpu_space(64), TRK_SPACE_GPU_UNKNOWN);
    assert_int_equal(trk_space_device(TRK_SPACE_GPU0 + 63), 63);
    assert_string_equal(trk_gpu_kind_name(TRK_GPU_PINNED_HOST), "pinned_host");
    assert_string_equal(trk_gpu_kind_name(0), "unknown");
    char buf[32];
    assert_string_equal(trk_space_label(TRK_SPACE_GPU0 + 2, TRK_GPU_VMM_PHYS, buf, sizeof(buf)),
                        "GPU 2 vmm");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_devices),
        cmocka_unit_test(test_each_kind),
        cmocka_unit_test(test_vmm),
        cmocka_unit_test(test_async),
        cmocka_unit_test(test_unknown_release_resolved),
        cmocka_unit_test(test_failed_allocation),
        cmocka_unit_test(test_driver_meminfo),
        cmocka_unit_test(test_driver_host_events),
        cmocka_unit_test(test_gpu_timeline_bounded),
        cmocka_unit_test(test_hostile_devices),
        cmocka_unit_test(test_random_invariants),
        cmocka_unit_test(test_space_selection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
