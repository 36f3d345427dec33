/* SPDX-License-Identifier: MIT
 *
 * sample.c - the draws of Poisson sampling (sample.h): a per-thread
 * xorshift64* generator seeded from the run's seed and the thread (so that
 * TRACKER_SAMPLE_SEED makes a single-threaded run repeat exactly), and the exponential gap -N
 * ln(u). Runs inside hooks: no allocation, no locks, no libm (the logarithm is computed here).
 */
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/own_mem.h"
#include "capture/sample.h"
#include "common/hash.h"
#include "prim/sys.h"

__thread int64_t trk_tl_sample_left TRK_TLS;
__thread struct trk_callsite_memo trk_tl_callsite TRK_TLS;
static __thread uint64_t rng TRK_TLS; /* 0 = not seeded on this thread */

void trk_sample_init(void)
{
    if (trk_cfg.sample_seed)
        return;
    /* No seed asked for: a different one per process. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t s = trk_mix64((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^
                           (uint64_t)getpid() << 16 ^ (uint64_t)(uintptr_t)&ts);
    trk_cfg.sample_seed = s ? s : 1;
}

/* ln(x) for x in (0, 1]: x = m 2^e with m in [1, 2), ln m = 2 atanh(t)
 * with t = (m-1)/(m+1) <= 1/3, whose series to t^13 is good to ~1e-8 -
 * far below what a sampling gap needs. */
static double ln(double x)
{
    union {
        double d;
        uint64_t u;
    } v = {.d = x};
    int e = (int)((v.u >> 52) & 0x7FF) - 1023;
    v.u = (v.u & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52);
    double t = (v.d - 1.0) / (v.d + 1.0), t2 = t * t;
    double series =
        t *
        (1 + t2 * (1.0 / 3 +
                   t2 * (1.0 / 5 + t2 * (1.0 / 7 + t2 * (1.0 / 9 + t2 * (1.0 / 11 + t2 / 13))))));
    return e * 0.69314718055994530942 + 2 * series;
}

static uint64_t next(void)
{
    uint64_t x = rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng = x;
    return x * UINT64_C(0x2545F4914F6CDD1D);
}

/* A gap of the Poisson process of rate 1/N: -N ln(u), u uniform in (0, 1];
 * at least one byte. */
static int64_t draw(void)
{
    double u = (double)((next() >> 11) + 1) * (1.0 / 9007199254740992.0);
    double g = -ln(u) * (double)trk_cfg.sample_bytes;
    if (g < 1)
        return 1;
    return g > 4e18 ? INT64_C(4000000000000000000) : (int64_t)g;
}

uint32_t trk_stack_callsite_slow(struct trk_thread *t, uintptr_t ra)
{
    struct trk_callsite_memo *m = &trk_tl_callsite;
    if (!m->owner) /* this thread's first: counted until the thread ends */
        trk_own_add(TRK_OWN_SAMPLE, (int64_t)sizeof(*m), 1);
    if (m->owner != t || m->epoch != t->cache_epoch) {
        memset(m->e, 0, sizeof(m->e));
        m->owner = t;
        m->epoch = t->cache_epoch;
    }
    uintptr_t ip = ra | (uintptr_t)TRK_IP_CALLSITE;
    uint32_t id = trk_stack_intern(t, &ip, 1);
    if (id) { /* 0: no stack (out of memory); ask again next time */
        unsigned i = (unsigned)((ra >> 2) ^ (ra >> 7)) & (TRK_CALLSITE_MEMO - 1);
        m->e[i].ra = ra;
        m->e[i].id = id;
    }
    return id;
}

void trk_sample_memo_forget(void)
{
    memset(trk_tl_callsite.e, 0, sizeof(trk_tl_callsite.e)); /* no call site is at 0 */
}

void trk_sample_thread_gone(void)
{
    if (trk_tl_callsite.owner)
        trk_own_add(TRK_OWN_SAMPLE, -(int64_t)sizeof(trk_tl_callsite), -1);
}

void trk_sample_thread_reset(void)
{
    rng = 0;
    trk_tl_sample_left = 0;
}

int trk_sample_hit(struct trk_thread *t, int64_t size)
{
    if (TRK_UNLIKELY(!rng)) {
        /* The thread's first draw: the countdown starts at a gap, not at 0
         * (which would sample every thread's first allocation). */
        /* The main thread's draws depend on the seed alone (stream numbers
         * race with the writer thread's start); others' on their order. */
        static _Atomic uint64_t order;
        uint64_t k = t->tid == trk_pid ? 0 : 1 + atomic_fetch_add(&order, 1);
        uint64_t s = trk_mix64(trk_cfg.sample_seed ^ trk_mix64(k + 1));
        rng = s ? s : 1;
        int64_t left = draw() - size;
        if (left > 0) {
            trk_tl_sample_left = left;
            return 0;
        }
    }
    /* A sample point fell inside this allocation. The process has no
     * memory, so the next one lies a fresh gap past the allocation's end. */
    trk_tl_sample_left = draw();
    return 1;
}
