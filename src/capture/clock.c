/* SPDX-License-Identifier: MIT
 *
 * clock.c - event timestamps on CLOCK_MONOTONIC's nanosecond scale, read
 * from the TSC where that is safe.
 *
 * clock_gettime through the vDSO costs ~20 ns, a tenth of the tracker's
 * per-event budget; rdtsc costs a few. Where the kernel itself uses the TSC
 * as its clocksource (so it is invariant and synchronised across CPUs), we
 * read it directly and convert with a linear fit that the sampler thread
 * re-anchors against clock_gettime every ~10 ms, which keeps the error at the
 * level of a few ns. Timestamps are never used for ordering (seq is), so the
 * tiny steps an anchor change can make are harmless. Until the first fit,
 * and wherever the TSC is not trusted, clock_gettime is used. Never
 * allocates.
 */
#include <cpuid.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "capture/events.h"

struct tsc_fit {
    uint64_t tsc0;
    uint64_t ns0;
    uint64_t mult; /* ns per tick, 32.32 fixed point */
};

/* Readers may hold a pointer while a newer fit is published; slots are
 * reused only after 256 more fits (seconds later). */
static struct tsc_fit fits[256];
static unsigned next_fit;
static _Atomic(struct tsc_fit *) fit;
static int tsc_ok;
static uint64_t prev_tsc, prev_ns;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t trk_now_ns(void)
{
    struct tsc_fit *f = atomic_load_explicit(&fit, memory_order_acquire);
    if (TRK_UNLIKELY(!f))
        return mono_ns();
    uint64_t d = __rdtsc() - f->tsc0;
    return f->ns0 + (uint64_t)(((unsigned __int128)d * f->mult) >> 32);
}

void trk_clock_init(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
        return; /* no invariant TSC */
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[32] = {0};
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    tsc_ok = n >= 3 && memcmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
    prev_tsc = prev_ns = 0;
    atomic_store(&fit, NULL);
}

/* One (tsc, ns) pair, bracketing clock_gettime between two TSC reads and
 * keeping the tightest of a few tries so preemption cannot skew it. */
static void sample_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    *tsc = *ns = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t t1 = __rdtsc(), m = mono_ns(), t2 = __rdtsc();
        if (t2 - t1 < best) {
            best = t2 - t1;
            *tsc = t1 + (t2 - t1) / 2;
            *ns = m;
        }
    }
}

/* Called by the sampler thread every tick. */
void trk_clock_recalibrate(void)
{
    if (!tsc_ok)
        return;
    uint64_t tsc, ns;
    sample_pair(&tsc, &ns);
    if (prev_tsc && tsc > prev_tsc + 1000 && ns > prev_ns) {
        struct tsc_fit *f = &fits[next_fit++ % 256];
        f->tsc0 = tsc;
        f->ns0 = ns;
        f->mult = (uint64_t)(((unsigned __int128)(ns - prev_ns) << 32) / (tsc - prev_tsc));
        atomic_store_explicit(&fit, f, memory_order_release);
    }
    prev_tsc = tsc;
    prev_ns = ns;
}
