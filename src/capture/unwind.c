/* SPDX-License-Identifier: MIT
 *
 * unwind.c - the own unwinder's hot path: a walk over the calling thread's
 * stack with one packed CFA rule per return address, cached in a lock-free
 * table shared by every thread, and the differential check against
 * libunwind (TRACKER_UNWIND_CHECK).
 *
 * It gives exactly the frames libunwind's unw_backtrace gives (1.6 x86_64
 * fast trace: return addresses, not minus one; a frame whose return address
 * is undefined ends the walk; an address under 0x4000 ends it), or -1 when
 * any frame is not a standard one: the caller then runs libunwind for the
 * whole walk, so that signal frames, DWARF expressions, code without unwind
 * info and JIT code are libunwind's answer by construction. Never takes a
 * lock, never allocates on the walk; rules are read on a miss by
 * unwind_cfi.c. Must not call stdio (trk_log only, once).
 */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/config.h"
#include "capture/own_mem.h"
#include "capture/unwind.h"
#include "prim/sys.h"

int trk_unwind_own;
static unsigned check_every;

/* ---- Rule cache ------------------------------------------------------------
 *
 * Open addressing, linear probing over 16 slots, keyed by lookup address (a
 * return address minus one). A key, once claimed, never changes, so a rule
 * read beside a matching key is that key's rule (0: not read yet). When an
 * object is unloaded, the rules of its address range are zeroed
 * (trk_unwind_forget_range), so that an object loaded there next is read
 * afresh.
 *
 * The table doubles when half full or when a probe window is full in a
 * table over a quarter full (import torch sees some 60,000 return
 * addresses: 128 Ki entries, 2 MiB), from 16 Ki entries (256 KiB of
 * address space) up to 1 Mi (16 MiB). A walk may still be in the table it
 * outgrew, so that one stays mapped, but its pages go back to the system
 * (MADV_DONTNEED): a walk there reads empty slots, i.e. misses, and
 * computes the rule. Past the largest size a rule that finds no slot is
 * computed each time (slow, still right). */
#define RC_BITS_MIN 14
#define RC_BITS_MAX 20
#define RC_PROBE    16
struct rc_ent {
    _Atomic uintptr_t key;
    _Atomic uint64_t val;
};
struct rc_table {
    unsigned bits;
    _Atomic unsigned used;
    struct rc_ent e[];
};
static _Atomic(struct rc_table *) rct;

static _Atomic uint64_t n_checked, n_mismatch, n_fallback;

static size_t rc_len(unsigned bits)
{
    return sizeof(struct rc_table) + (sizeof(struct rc_ent) << bits);
}

/* Counted as the tracker's own memory (own_mem.h, `tracker stats`). */
static struct rc_table *rc_new(unsigned bits)
{
    struct rc_table *t = trk_own_map(TRK_OWN_UNWIND, rc_len(bits));
    if (t)
        t->bits = bits;
    return t;
}

void trk_unwind_configure(int own, unsigned every)
{
    check_every = every;
    if (!own || atomic_load(&rct))
        return;
    atomic_store(&rct, rc_new(RC_BITS_MIN));
    trk_unwind_own = atomic_load(&rct) != NULL;
}

/* Raw syscalls only: this may run in a signal handler. */
__attribute__((noinline)) static void rc_grow(struct rc_table *old)
{
    if (old->bits >= RC_BITS_MAX || atomic_load_explicit(&rct, memory_order_relaxed) != old)
        return;
    struct rc_table *t = rc_new(old->bits + 1);
    if (!t)
        return;
    size_t old_len = rc_len(old->bits);
    if (!atomic_compare_exchange_strong(&rct, &old, t)) {
        trk_own_unmap(TRK_OWN_UNWIND, t, rc_len(t->bits));
        return;
    }
    /* all but the first page: the header (bits) must stay as it was for a
     * reader that loaded the old table just before the switch */
    uintptr_t first = (uintptr_t)old + 4096;
    uintptr_t end = (uintptr_t)old + old_len;
    if (end > first) {
        syscall(SYS_madvise, (void *)first, (size_t)(end - first), MADV_DONTNEED);
        trk_own_add(TRK_OWN_UNWIND, -(int64_t)(trk_own_pages(old_len) - 4096), 0);
    }
}

__attribute__((noinline)) static uint64_t rule_fill(struct rc_ent *e, uintptr_t pc)
{
    uint64_t r = trk_unwind_rule_lookup(pc);
    if (!r) /* no module holds pc yet: not cached, the table may catch up */
        return trk_ur_pack(TRK_UR_FALLBACK, 0, 0, 0);
    if (e)
        atomic_store_explicit(&e->val, r, memory_order_relaxed);
    return r;
}

/* The probe beyond the first slot, and every rule that is not a cached
 * standard one (a miss, LAST, FALLBACK). */
__attribute__((noinline)) static uint64_t rule_get_slow(uintptr_t pc)
{
    struct rc_table *t = atomic_load_explicit(&rct, memory_order_acquire);
    uint64_t h = (pc * 0x9E3779B97F4A7C15ULL) >> (64 - t->bits);
    uint64_t mask = ((uint64_t)1 << t->bits) - 1;
    for (unsigned i = 0; i < RC_PROBE; i++) {
        struct rc_ent *e = &t->e[(h + i) & mask];
        uintptr_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
        if (k == pc) {
            uint64_t v = atomic_load_explicit(&e->val, memory_order_relaxed);
            if (v != 0)
                return v;
            return rule_fill(e, pc);
        }
        if (k == 0) {
            if (atomic_compare_exchange_strong_explicit(&e->key, &k, pc, memory_order_relaxed,
                                                        memory_order_relaxed)) {
                unsigned used = atomic_fetch_add_explicit(&t->used, 1, memory_order_relaxed);
                uint64_t r = rule_fill(e, pc);
                if (used + 1 > (1u << t->bits) / 2)
                    rc_grow(t);
                return r;
            }
            if (k == pc)
                return rule_fill(e, pc);
        }
    }
    /* a full window in a quarter-full table is bad luck, not growth */
    if (atomic_load_explicit(&t->used, memory_order_relaxed) > (1u << t->bits) / 4)
        rc_grow(t);
    return rule_fill(NULL, pc);
}

void trk_unwind_forget_range(uintptr_t lo, uintptr_t hi)
{
    struct rc_table *t = atomic_load(&rct);
    if (!t)
        return;
    for (size_t i = 0; i < ((size_t)1 << t->bits); i++) {
        uintptr_t k = atomic_load_explicit(&t->e[i].key, memory_order_relaxed);
        if (k - lo < hi - lo)
            atomic_store_explicit(&t->e[i].val, 0, memory_order_relaxed);
    }
}

/* ---- The walk -------------------------------------------------------------- */

/* The walk proper, from a frame whose pc (a lookup address), rsp and rbp
 * are known, n frames already in ips. */
static inline int walk(uintptr_t pc, uintptr_t sp, uintptr_t bp, int n, uintptr_t *ips, int max,
                       uintptr_t skip_lo, uintptr_t skip_hi)
{
    struct rc_table *t = atomic_load_explicit(&rct, memory_order_acquire);
    const struct rc_ent *tab = t->e;
    unsigned shift = 64 - t->bits;
    uintptr_t span = skip_hi - skip_lo;
    int skipped = 0;
    for (;;) {
        const struct rc_ent *e = &tab[(pc * 0x9E3779B97F4A7C15ULL) >> shift];
        uint64_t rule = atomic_load_explicit(&e->val, memory_order_relaxed);
        if (TRK_UNLIKELY(atomic_load_explicit(&e->key, memory_order_relaxed) != pc || rule == 0)) {
            rule = rule_get_slow(pc);
            /* the table may have grown: the rest of the walk reads the new one */
            t = atomic_load_explicit(&rct, memory_order_acquire);
            tab = t->e;
            shift = 64 - t->bits;
        }
        uintptr_t cfa =
            ((rule & (1u << 18)) ? bp : sp) + (uintptr_t)(intptr_t)(int32_t)(rule >> 32);
        /* The caller's frame is above ours on the same stack (a signal
         * frame, the only way to switch stacks, is never STD): anything
         * else is a bad rbp or bad unwind info, libunwind's to judge. LAST
         * and FALLBACK rules have offset 0, so that this one test also
         * sends them off the fast path. */
        if (TRK_UNLIKELY(cfa - sp - 1 >= (1u << 28)))
            return trk_ur_kind(rule) == TRK_UR_LAST ? n : -1;
        uintptr_t ra = ((const uintptr_t *)cfa)[-1];
        unsigned slot = (unsigned)(rule >> 19) & 0x1fff;
        if (slot)
            bp = ((const uintptr_t *)cfa)[-(intptr_t)slot];
        sp = cfa;
        /* libunwind stops at an address under 0x4000 without recording it */
        if (TRK_UNLIKELY(ra < 0x4000))
            return n;
        if (TRK_LIKELY(ra - skip_lo >= span)) {
            ips[n++] = ra;
            if (n == max)
                return n;
        } else if (++skipped > 64) {
            /* our own frames are a handful: a corrupt stack, not a walk
             * (the recorded ones are bounded by max, and the CFA rises) */
            return -1;
        }
        pc = ra - 1; /* inside the call: its row, not the next one's */
    }
}

__attribute__((noinline)) int trk_unwind_fast(uintptr_t *ips, int max, uintptr_t skip_lo,
                                              uintptr_t skip_hi)
{
    uintptr_t pc, sp, bp;
    /* This function's own pc, rsp and rbp at one instant: its CFI row at
     * that pc describes exactly that rsp, so the walk starts here. */
    __asm__ volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2"
                     : "=r"(pc), "=r"(sp), "=r"(bp));
    return walk(pc, sp, bp, 0, ips, max, skip_lo, skip_hi);
}

int trk_unwind_fast_fp(uintptr_t *ips, int max, uintptr_t skip_lo, uintptr_t skip_hi, uintptr_t ra,
                       uintptr_t fp)
{
    /* A frame-pointer frame: saved rbp at fp, return address above it, the
     * CFA above that. Trusted only if it is above us on this stack and
     * holds the return address the compiler gave the hook. */
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    const uintptr_t *f = (const uintptr_t *)fp;
    if (TRK_UNLIKELY(fp - here - 1 >= (1u << 20) || (fp & 7) || f[1] != ra))
        return trk_unwind_fast(ips, max, skip_lo, skip_hi);
    int n = 0;
    if (ra < 0x4000)
        return 0;
    if (ra - skip_lo >= skip_hi - skip_lo) {
        ips[n++] = ra;
        if (n == max)
            return n;
    }
    return walk(ra - 1, fp + 16, f[0], n, ips, max, skip_lo, skip_hi);
}

/* ---- Differential check ---------------------------------------------------- */

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
