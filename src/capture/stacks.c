/* SPDX-License-Identifier: MIT
 *
 * stacks.c - native stack capture (the own unwinder of unwind.c, libunwind
 * for what it leaves) and in-process interning.
 *
 * Stacks are interned into a process-wide trie of (parent node, ip) edges so
 * that a stack seen before costs one varint in the file, and a new one costs
 * only its new edges (STACK records). Two levels make the common case cheap:
 *   1. a per-thread direct-mapped cache from a hash of the whole stack to its
 *      leaf node: one unwind + one hash + one compare for a repeated stack;
 *   2. the shared trie, the intern table of intern.c: read without locks;
 *      only insertion of a new edge takes a spinlock.
 */
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <sched.h>
#include <signal.h>
#include <string.h>

#include "capture/events.h"
#include "capture/intern.h"
#include "capture/stacks.h"
#include "capture/unwind.h"
#include "prim/sys.h"

/* The trie: (parent node, ip) -> node id, in the lock-free intern table
 * (intern.c): the parent is the 32-bit key word, the ip the one 64-bit
 * word, so an edge takes 16 bytes. */
#define TRIE_WORDS 1
static struct trk_intern trie;

/* 64 KiB to start: a small program's whole trie. It doubles at half full
 * up to TRACKER_TABLE_KB, then starts new generations (intern.h); the
 * tables it leaves give their pages back. Starting at 1 MiB reserved that
 * much in every process, small or not. */
#define TRIE_INITIAL (1u << 12)

int trk_stacks_init(void)
{
    if (trk_intern_reset(&trie, TRIE_WORDS, TRIE_INITIAL))
        return -1;
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    return 0;
}

struct node_ctx {
    struct trk_thread *t;
    uint32_t parent;
    uint64_t ip;
};

/* Emits the STACK record and commits it before the node becomes visible to
 * other threads: a thread that finds the node and then takes a seq is thereby
 * ordered after this commit, so the writer's watermark covers the definition
 * whenever it covers a use (docs/FORMAT.md §3). */
static int emit_node(void *ctx, uint32_t id)
{
    struct node_ctx *c = ctx;
    struct trk_thread *t = c->t;
    /* Encoded in the ring where it fits (events.h): a copy through buf
     * is a libc memcpy call per new edge, 2.1 M on import torch. */
    uint8_t buf[TRK_REC_MAX];
    uint8_t *b = trk_rec_begin(t, buf, TRK_REC_MAX);
    uint8_t *e = trk_enc_stack(b, &t->enc, id, c->parent, c->ip);
    if (TRK_UNLIKELY(b == buf)) {
        if (trk_ring_put(t, buf, (size_t)(e - buf)))
            return -1;
    } else {
        t->head += (uint64_t)(e - b);
        trk_ring_maybe_wake(t);
    }
    trk_commit(t);
    return 0;
}

/* An edge the lock-free look did not find, or the child of one: such a
 * node is (nearly always) new, so its children are too, and a lock-free
 * look for them would miss (a cache miss in the table for nothing); the
 * locked one still finds a child another thread added meanwhile. */
static inline uint32_t trie_add(struct trk_thread *t, uint32_t parent, uint64_t ip)
{
    struct node_ctx c = {t, parent, ip};
    return trk_intern_add_child(&trie, parent, &ip, emit_node, &c);
}

/* Two independent multiply-xor lanes keep the dependency chain short: this
 * runs on every allocation over the whole stack, so it must cost a few
 * cycles per frame, not a full 64-bit finaliser each. */
static inline uint64_t stack_hash(const uintptr_t *ips, int n)
{
    const uint64_t k1 = 0x9E3779B97F4A7C15ULL, k2 = 0xC2B2AE3D27D4EB4FULL;
    uint64_t a = (uint64_t)n * k1, b = k2;
    int i = 0;
    for (; i + 1 < n; i += 2) {
        a = (a ^ ips[i]) * k1;
        b = (b ^ ips[i + 1]) * k2;
        a ^= a >> 29;
        b ^= b >> 31;
    }
    if (i < n)
        a = (a ^ ips[i]) * k1;
    return trk_mix64(a ^ (b + 0x632BE59BD9B4E019ULL)) | 1; /* never 0: zeroed entries never match */
}

/* How many outermost frames of ips (leaf first, n of them) equal pre
 * (outermost first), up to lim: four a step, one branch each, as this runs
 * over ~130 frames of a hybrid Python stack on every new stack. */
static inline uint32_t common_outer(const uintptr_t *pre, const uintptr_t *ips, int n, uint32_t lim)
{
    const uintptr_t *top = ips + n - 1; /* top[-k]: the k-th outermost */
    uint32_t k = 0;
    for (; k + 4 <= lim; k += 4) {
        const uintptr_t *q = top - k;
        if ((pre[k] ^ q[0]) | (pre[k + 1] ^ q[-1]) | (pre[k + 2] ^ q[-2]) | (pre[k + 3] ^ q[-3]))
            break;
    }
    while (k < lim && pre[k] == top[-(intptr_t)k])
        k++;
    return k;
}

/* The whole-stack cache pays for itself when stacks repeat; where nearly
 * every stack is new (a library's static constructors, or the Python
 * provider, whose own memo already caught the repeats: 3 % hits on import
 * torch) its hash over ~130 frames is pure cost. So a thread that found
 * fewer than 1 in 16 of its last 256 stacks there interns the next 4,096
 * without it. Either way the trie gives the same node. */
#define SC_WINDOW 256u
#define SC_SKIP   4096u
static __thread uint32_t sc_calls TRK_TLS, sc_hits TRK_TLS, sc_skip TRK_TLS;

static inline void sc_count(int hit)
{
    sc_hits += (uint32_t)hit;
    if (++sc_calls == SC_WINDOW) {
        if (sc_hits * 16u < SC_WINDOW)
            sc_skip = SC_SKIP;
        sc_calls = sc_hits = 0;
    }
}

/* ips' node in the trie, walked from where ips parts from the thread's
 * last stack. 0 on failure. */
static uint32_t trie_walk(struct trk_thread *t, const uintptr_t *ips, int n)
{
    /* Consecutive stacks of a thread share their outer frames (a Python
     * process: 70 deep, 9 in 10 levels repeating): the trie walk starts
     * below the frames this one has in common with the last. */
    if (t->prefix_epoch != t->cache_epoch) {
        t->prefix_epoch = t->cache_epoch;
        t->prefix_n = 0;
    }
    uint32_t lim = t->prefix_n < (uint32_t)n ? t->prefix_n : (uint32_t)n;
    uint32_t k = common_outer(t->prefix_ip, ips, n, lim);
    uint32_t node = k ? t->prefix_node[k - 1] : 0;
    int fresh = 0;
    for (int j = (int)k; j < n; j++) {
        uintptr_t ip = ips[n - 1 - j];
        uint32_t parent = node;
        node = fresh ? 0 : trk_intern_find(&trie, TRIE_WORDS, parent, &ip);
        if (!node) {
            node = trie_add(t, parent, ip);
            fresh = 1;
        }
        if (!node) {
            t->prefix_n = (uint32_t)j < TRK_PREFIX_MAX ? (uint32_t)j : TRK_PREFIX_MAX;
            return 0;
        }
        if (TRK_LIKELY(j < (int)TRK_PREFIX_MAX)) {
            t->prefix_ip[j] = ip;
            t->prefix_node[j] = node;
        }
    }
    t->prefix_n = (uint32_t)n < TRK_PREFIX_MAX ? (uint32_t)n : TRK_PREFIX_MAX;
    return node;
}

uint32_t trk_stack_intern(struct trk_thread *t, const uintptr_t *ips, int n)
{
    if (n <= 0)
        return 0;
    if (TRK_UNLIKELY(sc_skip)) {
        sc_skip--;
        return trie_walk(t, ips, n);
    }
    uint64_t h = stack_hash(ips, n);
    struct trk_stack_cache_ent *c = &t->cache[h & (TRK_STACK_CACHE - 1)];
    if (c->hash == h && c->depth == (uint16_t)n && c->epoch == t->cache_epoch) {
        sc_count(1);
        return c->id;
    }
    sc_count(0);
    uint32_t node = trie_walk(t, ips, n);
    if (node) {
        c->hash = h;
        c->depth = (uint16_t)n;
        c->epoch = t->cache_epoch;
        c->id = node;
    }
    return node;
}

uintptr_t trk_self_lo, trk_self_hi;

/* 0: not in one of our unwinds; 1: in one, signals as the program set them;
 * 2: in one, every signal blocked by us since libunwind's first sigprocmask,
 * the program's mask kept in unw_saved. */
__thread int trk_tl_unw TRK_TLS;
static __thread sigset_t unw_saved TRK_TLS;

/* libunwind blocks every signal around sections that a signal handler
 * unwinding on the same thread would deadlock or corrupt; so do we, only
 * once per unwind: on the slow path that was 80 % of the time, enough to
 * make a handler that allocates outlast a 200 us timer and starve the
 * program (it then never moves off the PLT stub that caused the slow path).
 * No signal handler can run while we are in state 2, so the calls we skip
 * cannot be another unwinder's. */
int trk_unw_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (trk_tl_unw == 2) {
        if (old)
            sigfillset(old);
        return 0;
    }
    int rc;
    if (how == SIG_SETMASK && set && old) {
        rc = pthread_sigmask(SIG_SETMASK, set, &unw_saved);
        if (rc == 0) {
            memcpy(old, &unw_saved, sizeof(*old));
            trk_tl_unw = 2;
            return 0;
        }
    } else {
        rc = pthread_sigmask(how, set, old);
        if (rc == 0)
            return 0;
    }
    errno = rc;
    return -1;
}

/* Ends an unwind that blocked signals. If a signal handler of the program's
 * used libunwind itself before our first block (state 1), its block was
 * taken for ours and its return restored the program's mask: then what we
 * replace is not a full mask, and the one to keep is that one. */
static void unw_unblock(void)
{
    sigset_t cur;
    trk_tl_unw = 0;
    if (pthread_sigmask(SIG_SETMASK, &unw_saved, &cur) != 0)
        return;
    for (int sig = 1; sig < 32; sig++)
        if (sig != SIGKILL && sig != SIGSTOP && !sigismember(&cur, sig)) {
            pthread_sigmask(SIG_SETMASK, &cur, NULL);
            return;
        }
}

static int unwind_into(uintptr_t *ips, int want)
{
    trk_tl_unw = 1;
    int n = unw_backtrace((void **)ips, want);
    if (TRK_UNLIKELY(trk_tl_unw == 2))
        unw_unblock();
    trk_tl_unw = 0;
    return n;
}

/* libunwind's unw_step loop: what unw_backtrace falls back to. Unlike its
 * fast trace, whose per-thread frame cache is never invalidated, its DWARF
 * caches are flushed when an object is unloaded (unwind_cfi.c calls
 * unw_flush_cache): after a dlclose and a dlopen at the same address the
 * fast trace reads the old object's rules (stack garbage as frames). */
static int step_into(uintptr_t *ips, int want)
{
    unw_context_t uc;
    unw_cursor_t cur;
    int n = 0;
    trk_tl_unw = 1;
    if (unw_getcontext(&uc) == 0 && unw_init_local(&cur, &uc) == 0)
        while (n < want && unw_step(&cur) > 0) {
            unw_word_t ip;
            if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0)
                break;
            ips[n++] = (uintptr_t)ip;
        }
    if (TRK_UNLIKELY(trk_tl_unw == 2))
        unw_unblock();
    trk_tl_unw = 0;
    return n;
}

/* libunwind's walk into ips (TRK_DEPTH_MAX + 32 entries): unw_backtrace
 * (fast, cached) until an object was unloaded, the step loop since. */
__attribute__((noinline)) static int libunwind_walk(struct trk_thread *t, uintptr_t *ips, int max)
{
    /* Room for our own frames, dropped below: 3 to 6 in an optimized
     * build, 17 on the Python path of a -O0 one (the ASan stage), where
     * max + 16 cut the program's stack one frame short of max. The
     * buffers hold TRK_DEPTH_MAX + 32. */
    int want = max + 32;
    trk_dl_enter(t);
    int n = atomic_load_explicit(&trk_unwind_epoch, memory_order_relaxed) == 1
                ? unwind_into(ips, want)
                : step_into(ips, want);
    trk_dl_leave(t);
    /* Drop our own frames: the hook at the inner end, and the wrappers that
     * sit mid-stack when an interposed call (dlopen) allocates inside the
     * real one. The program's stack reads as if we were not there. */
    int k = 0;
    for (int i = 0; i < n; i++)
        if (ips[i] < trk_self_lo || ips[i] >= trk_self_hi)
            ips[k++] = ips[i];
    return k > max ? max : k;
}

int trk_stack_unwind_raw(uintptr_t *ips, int max)
{
    return unwind_into(ips, max);
}

/* The own walker (unwind.c) when it can, libunwind for the whole walk when
 * a frame is not a standard one; 1 in TRACKER_UNWIND_CHECK walks runs both
 * and counts any difference. */
static inline __attribute__((always_inline)) int unwind_at(struct trk_thread *t, int max,
                                                           uintptr_t ra, uintptr_t fp)
{
    if (TRK_LIKELY(trk_unwind_own)) {
        if (TRK_UNLIKELY(!t->unwind_memo))
            t->unwind_memo = trk_unwind_memo_new(); /* NULL: walks without */
        struct trk_unwind_memo *m = t->unwind_memo;
        int n = fp ? trk_unwind_fast_fp(m, t->ips, max, trk_self_lo, trk_self_hi, ra, fp)
                   : trk_unwind_fast(m, t->ips, max, trk_self_lo, trk_self_hi);
        if (TRK_LIKELY(n >= 0)) {
            if (TRK_UNLIKELY(trk_unwind_check_due())) {
                uintptr_t *ref = trk_unwind_check_buf();
                if (ref) /* cut where the own walk stopped (unwind.h) */
                    trk_unwind_check_record(t->ips, n, ref,
                                            trk_unwind_stop_cut(ref, libunwind_walk(t, ref, max)));
            }
            return n;
        }
        trk_unwind_note_fallback();
    }
    return trk_unwind_stop_cut(t->ips, libunwind_walk(t, t->ips, max));
}

/* The hook frame of the trk_stack_from call in progress on this thread,
 * for a stack provider's walk (the same start, not our own frames). */
static __thread uintptr_t from_ra TRK_TLS, from_fp TRK_TLS;

int trk_stack_unwind(struct trk_thread *t, int max)
{
    return unwind_at(t, max, from_ra, from_fp);
}

_Atomic(trk_stack_provider_fn) trk_stack_provider;

uint32_t trk_stack_from(struct trk_thread *t, uintptr_t ra, uintptr_t fp)
{
    /* Called by the dynamic loader (link maps, TLS blocks, a DTV being
     * resized): libunwind's first touch of its own TLS could re-enter the
     * loader's DTV update from inside that very update, which then frees
     * the old DTV twice. The caller's address is the whole stack here. */
    if (TRK_UNLIKELY(ra >= trk_ldso_lo && ra < trk_ldso_hi))
        return trk_stack_intern(t, &ra, 1);
    /* A Python process with its frames in reach: src/python builds the
     * stack (hybrid or Python-only). One load on everybody else's path. */
    trk_stack_provider_fn p = atomic_load_explicit(&trk_stack_provider, memory_order_relaxed);
    if (TRK_UNLIKELY(p != NULL)) {
        uint32_t id;
        from_ra = ra;
        from_fp = fp;
        int got = p(t, &id);
        from_ra = from_fp = 0;
        if (got)
            return id;
    }
    int n = unwind_at(t, trk_cfg.depth, ra, fp);
    /* A walk the memo gave whole from one entry has that entry's frames,
     * so the id found for them last time (unwind.h): no hash, no lookup. */
    struct trk_memo_id *mi = t->unwind_memo ? trk_unwind_memo_last(t->unwind_memo) : NULL;
    if (mi && mi->id && mi->epoch == t->cache_epoch && mi->n == n)
        return mi->id;
    uint32_t id = trk_stack_intern(t, t->ips, n);
    if (mi) {
        mi->id = id;
        mi->epoch = t->cache_epoch;
        mi->n = (uint16_t)n;
    }
    return id;
}

/* libunwind sets up its per-thread state on first use, and that may
 * allocate; doing it here, under the internal guard, keeps every allocation
 * seen during a real unwind attributable to a signal handler (lost). */
void trk_stacks_thread_init(struct trk_thread *t)
{
    trk_dl_enter(t);
    unwind_into(t->ips, 4);
    trk_dl_leave(t);
}

_Atomic int trk_forking;

void trk_dl_quiesce(void)
{
    atomic_store(&trk_forking, 1);
    struct trk_thread *self = trk_tl_thread;
    for (struct trk_thread *t = trk_thread_list(); t; t = t->next)
        while (t != self && atomic_load(&t->in_dl))
            sched_yield();
}

void trk_dl_resume(void)
{
    atomic_store(&trk_forking, 0);
}

void trk_stacks_fork_prepare(void)
{
    trk_intern_lock(&trie);
}

void trk_stacks_fork_parent(void)
{
    trk_intern_unlock(&trie);
}

/* The child writes a new file, so node ids must start over there: give it a
 * fresh table (the parent's stays mapped copy-on-write and unused). */
void trk_stacks_fork_child(void)
{
    trk_unwind_fork_child();
    if (trk_intern_reset(&trie, TRIE_WORDS, TRIE_INITIAL))
        atomic_store(&trk_active, 0);
}
