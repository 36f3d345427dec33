/* SPDX-License-Identifier: MIT
 *
 * unwind_check.c - the differential check of the own unwinder against
 * libunwind (TRACKER_UNWIND_CHECK=N: 1 walk in N done by both, stacks.c),
 * its counts for the capture's trailer, and the count of walks left to
 * libunwind. Runs inside hooks, possibly in a signal handler: raw mmap for
 * its scratch array, trk_log (once) for the first mismatch, no stdio.
 */
#include <stdatomic.h>
#include <string.h>

#include "capture/config.h"
#include "capture/own_mem.h"
#include "capture/unwind.h"
#include "prim/sys.h"

static unsigned check_every;
static _Atomic uint64_t n_checked, n_mismatch, n_fallback;

void trk_unwind_check_every(unsigned every)
{
    check_every = every;
}

static __thread uint32_t check_left TRK_TLS;
static __thread int check_busy TRK_TLS;
static __thread uintptr_t *check_mem TRK_TLS;

int trk_unwind_check_due(void)
{
    if (TRK_LIKELY(check_every == 0))
        return 0;
    if (check_left > 1) {
        check_left--;
        return 0;
    }
    /* A signal handler that allocates during a check must not share its
     * scratch array: it just skips its turn. */
    if (check_busy)
        return 0;
    check_left = check_every;
    return 1;
}

uintptr_t *trk_unwind_check_buf(void)
{
    if (!check_mem)
        check_mem = trk_own_map(TRK_OWN_UNWIND, sizeof(uintptr_t) * (TRK_DEPTH_MAX + 32));
    if (check_mem)
        check_busy = 1;
    return check_mem;
}

static void hex(char *out, uintptr_t v)
{
    static const char d[] = "0123456789abcdef";
    out[0] = '0';
    out[1] = 'x';
    for (int i = 0; i < 16; i++)
        out[2 + i] = d[(v >> (60 - 4 * i)) & 15];
    out[18] = 0;
}

void trk_unwind_check_record(const uintptr_t *own, int n_own, const uintptr_t *ref, int n_ref)
{
    check_busy = 0;
    atomic_fetch_add_explicit(&n_checked, 1, memory_order_relaxed);
    int i = 0;
    while (i < n_own && i < n_ref && own[i] == ref[i])
        i++;
    if (i == n_own && i == n_ref)
        return;
    if (atomic_fetch_add_explicit(&n_mismatch, 1, memory_order_relaxed) != 0)
        return;
    /* The first one, once, on stderr: where the walks part is what a bug
     * report needs (symbolize with the capture's module table). */
    char a[19], b[19], msg[96];
    hex(a, i < n_own ? own[i] : 0);
    hex(b, i < n_ref ? ref[i] : 0);
    size_t k = trk_u64_to_dec(msg, (uint64_t)i);
    memcpy(msg + k, ": own ", 7);
    strcat(msg, a);
    strcat(msg, ", libunwind ");
    strcat(msg, b);
    trk_log("unwinder check: first mismatch at frame ", msg, NULL);
}

void trk_unwind_note_fallback(void)
{
    atomic_fetch_add_explicit(&n_fallback, 1, memory_order_relaxed);
}

void trk_unwind_fork_child(void)
{
    atomic_store(&n_checked, 0);
    atomic_store(&n_mismatch, 0);
    atomic_store(&n_fallback, 0);
}

void trk_unwind_stats_get(struct trk_unwind_stats *s)
{
    s->checked = atomic_load(&n_checked);
    s->mismatches = atomic_load(&n_mismatch);
    s->fallbacks = atomic_load(&n_fallback);
}
