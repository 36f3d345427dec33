/* SPDX-License-Identifier: MIT
 *
 * clock.c - event timestamps on CLOCK_MONOTONIC's nanosecond scale without a
 * per-event system or vDSO call where that can be avoided.
 *
 * clock_gettime costs ~20 ns through the vDSO on a TSC clocksource and ~47 ns
 * on kvm-clock (the vDSO's TSC path is off there), a large share of the
 * tracker's per-event budget; rdtsc costs a few. Two cheap sources:
 *
 *  - TSC: where the CPU says its TSC is invariant (cpuid 0x80000007 EDX bit 8)
 *    and the kernel still lists "tsc" as a usable clocksource (it removes it
 *    when it finds the TSCs unsynchronised or unstable), whatever the current
 *    clocksource (kvm-clock is itself computed from the TSC). We read it
 *    directly and convert with a linear fit that the sampler thread
 *    re-anchors against clock_gettime every ~10 ms; until the first fit
 *    (2 ms after start) clock_gettime is used.
 *  - otherwise CLOCK_MONOTONIC_COARSE: the vDSO returns the last tick's time
 *    without reading any hardware (a few ns), at the cost of a tick's
 *    resolution (clock_getres, typically 4 ms).
 *
 * Heap events (ALLOC, FREE, REALLOC) carry time in ~1 ms quanta anyway
 * (heap_ts.h), yet reading the TSC for each of them cost ~17 ns of a
 * ~42 ns allocbench event (rdtsc's own latency, and what it holds up
 * around it). Their fast path therefore reads CLOCK_MONOTONIC_COARSE
 * (~4 ns, no hardware read) only to learn whether the stream's quantum may
 * have passed; the step itself, about once per quantum plus a tick, takes
 * the source above. TRACKER_HEAP_TSC=1 restores a TSC read per event.
 *
 * Neither is monotonic across a fit change or a CPU migration to the last
 * nanosecond; the record encoder keeps each thread's timestamps
 * non-decreasing (src/format/record.h), and order never comes from
 * timestamps (seq is). The error bounds are in docs/FORMAT.md §4. Never
 * allocates.
 */
#include <cpuid.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "capture/events.h"

/* Readers may hold a pointer while a newer fit is published; slots are
 * reused only after 256 more fits (seconds later). The current one is
 * global (events.h reads it inline on the event fast path). */
static struct trk_tsc_fit fits[256];
static unsigned next_fit;
_Atomic(struct trk_tsc_fit *) trk_clock_fit;
int trk_heap_coarse;
/* Identity: ns0 + (reading - tsc0) * 2^32 >> 32 is the reading. tsc0 0 is
 * no TSC fit's (sample_pair's readings are far past 0), so the fast path
 * never takes a q_span made under one for the other. */
const struct trk_tsc_fit trk_coarse_fit = {0, 0, (uint64_t)1 << 32};
/* The clock read while there is no fit: CLOCK_MONOTONIC until
 * trk_clock_init has decided (and in TSC mode until the first fit). */
static clockid_t slow_clock = CLOCK_MONOTONIC;
static int tsc_ok;
static uint64_t prev_tsc, prev_ns;

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t trk_now_ns(void)
{
    const struct trk_tsc_fit *f = atomic_load_explicit(&trk_clock_fit, memory_order_acquire);
    if (TRK_UNLIKELY(!f))
        return read_ns(slow_clock);
    return trk_tsc_ns(f);
}

/* Whether s (NUL-terminated, space or newline separated words) holds word. */
static int has_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = s; (p = strstr(p, word)) != NULL; p += n)
        if ((p == s || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
            return 1;
    return 0;
}

int trk_clock_pick(int invariant_tsc, const char *current, const char *available)
{
    if (invariant_tsc && (has_word(current, "tsc") || has_word(available, "tsc")))
        return TRK_CLOCK_TSC;
    return TRK_CLOCK_COARSE;
}

static void read_sysfs(const char *name, char *buf, size_t size)
{
    char path[96] = "/sys/devices/system/clocksource/clocksource0/";
    strcat(path, name);
    buf[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
}

int trk_clock_init(void)
{
    unsigned a, b, c, d;
    int inv = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
    char cur[64], avail[256];
    read_sysfs("current_clocksource", cur, sizeof(cur));
    read_sysfs("available_clocksource", avail, sizeof(avail));
    int mode = trk_clock_pick(inv, cur, avail);
    trk_clock_use(mode);
    return mode;
}

void trk_clock_use(int mode)
{
    tsc_ok = mode == TRK_CLOCK_TSC;
    slow_clock = tsc_ok ? CLOCK_MONOTONIC : CLOCK_MONOTONIC_COARSE;
    prev_tsc = prev_ns = 0;
    atomic_store(&trk_clock_fit, NULL);
}

/* One (tsc, ns) pair, bracketing clock_gettime between two TSC reads and
 * keeping the tightest of a few tries so preemption cannot skew it. */
static void sample_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    *tsc = *ns = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t t1 = __rdtsc(), m = read_ns(CLOCK_MONOTONIC), t2 = __rdtsc();
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
        struct trk_tsc_fit *f = &fits[next_fit++ % 256];
        f->tsc0 = tsc;
        f->ns0 = ns;
        f->mult = (uint64_t)(((unsigned __int128)(ns - prev_ns) << 32) / (tsc - prev_tsc));
        atomic_store_explicit(&trk_clock_fit, f, memory_order_release);
    }
    prev_tsc = tsc;
    prev_ns = ns;
}
