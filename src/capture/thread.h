/* SPDX-License-Identifier: MIT
 *
 * thread.h - per-thread capture state (thread.c), the hooks' entry and exit
 * (trk_enter/trk_leave), calls kept aside while a hook runs (nested.c),
 * and the loader-lock brackets around fork.
 *
 * Every entry point of src/capture is reached with the thread's re-entry
 * guard set (src/prim/guard.h), so that whatever libc does underneath us is
 * never recorded or re-entered.
 */
#ifndef TRK_CAPTURE_THREAD_H
#define TRK_CAPTURE_THREAD_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/config.h"
#include "format/record.h"
#include "prim/base.h"
#include "prim/guard.h"

/* ---- Per-thread state ---------------------------------------------------- */

/* A call that arrived while this thread was inside a hook (a signal
 * handler's), kept until the interrupted hook publishes it (nested.c). A
 * hook waiting for ring space (a starved writer) can be interrupted for
 * milliseconds: 1024 slots hold ~50 runs of a handler making 20 calls.
 * Only the pages used are touched. */
#define TRK_NESTED_MAX 1024
enum { TRK_NEV_NONE, TRK_NEV_ALLOC, TRK_NEV_FREE, TRK_NEV_REALLOC, TRK_NEV_MMAP, TRK_NEV_MUNMAP };
struct trk_nested_ev {
    uint64_t seq, seq2; /* seq2: REALLOC only */
    uint64_t ts;
    uintptr_t addr, old; /* old: REALLOC only */
    uint64_t size;
    uintptr_t ra; /* the call site: all of its stack we can take in a handler */
    uint32_t prot, flags;
    uint8_t op, kind, file;
};

#define TRK_PREFIX_MAX (TRK_DEPTH_MAX + 32)

struct trk_stack_cache_ent {
    uint64_t hash;
    uint32_t id;
    uint16_t depth;
    uint16_t epoch;
};

enum trk_thread_state {
    TRK_TS_FREE = 0,    /* recyclable */
    TRK_TS_CLAIMED = 1, /* being set up by a new owner */
    TRK_TS_ACTIVE = 2,
    TRK_TS_EXITING = 3, /* thread-exit destructor ran; may still record */
};

/* One per thread that ever recorded. The owner thread writes records into
 * `ring` and publishes them with `committed`; the writer thread copies
 * [consumed, committed) to the file. `floor` is the owner's promise to the
 * writer: no event of this thread still in flight has a seq below it (see
 * writer.c for why that makes watermarks safe). */
struct trk_thread {
    /* owner-private */
    uint8_t *ring;
    uint64_t ring_mask;
    uint64_t head;
    uint64_t last_seq;
    uint64_t lost;
    /* The ALLOC/FREE fast path's bounds (events.c), from one look at
     * consumed: a record may be encoded in place while head < fast_end
     * (room for TRK_REC_MAX bytes, no wrap), and the writer may need waking
     * once head reaches wake_at. 0 (thread_reset): look again. */
    uint64_t fast_end, wake_at;
    /* The heap time quantum in the fast clock's ticks (ev_inline.h: the
     * TSC's, or the coarse clock's ns): under the fit whose
     * tsc0 is q_tsc0, a reading less than q_span ticks past tsc0 is less
     * than a quantum past enc.ts, so a heap record says that no time passed
     * without the fit's multiply. enc.ts only grows, which keeps that true;
     * thread_reset, which zeroes enc, zeroes q_span: look again. */
    uint64_t q_tsc0, q_span;
    /* The owner's errno (set by thread_reset, which the owner runs): the
     * hooks keep the program's errno through it (hook.h) without a call
     * to __errno_location through the PLT on every event. */
    int *errnop;
    struct trk_rec_state enc;
    /* Nested calls waiting to be published: slots [nhead, ntail) of nested,
     * filled by signal handlers (ntail), drained by the interrupted hook. */
    _Atomic uint32_t ntail;
    uint32_t nhead;

    /* shared with the writer */
    _Alignas(64) _Atomic uint64_t committed;
    _Atomic uint64_t floor;
    _Atomic uint64_t nfloor; /* floor of the nested calls not yet published */
    _Alignas(64) _Atomic uint64_t consumed;
    _Atomic int state;
    _Atomic int wake_sent;
    _Atomic int in_dl; /* inside the loader's lock (unwinding, module walks): see trk_dl_enter */

    uint32_t stream;
    /* This state's number among all states (0, 1, ...: states are reused,
     * so about as many as the most threads alive at once, a few more where
     * new threads found the writer holding its lock), for the writer's
     * per-state tables: a stream id grows with every thread that ever
     * lived. */
    uint32_t slot;
    pid_t tid;
    pthread_t self;
    uint64_t exit_seen_ns;   /* writer-private */
    struct trk_thread *next; /* registry, append-only */

    /* cache entries are valid while their epoch equals cache_epoch: a
     * state's new owner bumps it instead of clearing 64 KiB. */
    uint16_t cache_epoch;
    struct trk_stack_cache_ent cache[TRK_STACK_CACHE];
    uintptr_t ips[TRK_DEPTH_MAX + 32];
    /* The last stack interned, outermost frame first, with its trie node
     * at each depth (stacks.c): the next one starts where it differs.
     * Valid for prefix_n frames while prefix_epoch is cache_epoch. */
    uint32_t prefix_n;
    uint16_t prefix_epoch;
    uintptr_t prefix_ip[TRK_PREFIX_MAX];
    uint32_t prefix_node[TRK_PREFIX_MAX];
    struct trk_nested_ev nested[TRK_NESTED_MAX];

    /* The stack provider's own per-thread block (src/python maps one only
     * in a Python process): opaque here, kept with the state so that it is
     * recycled with it, never while a thread still uses it. */
    void *provider_block;
    /* The own unwinder's walk memo (unwind.c), mapped on the first walk;
     * after provider_block, so that it too outlives a page release. */
    struct trk_unwind_memo *unwind_memo;
};

/* The re-entry guard (trk_tl_guard, its states and its one contract) is
 * src/prim/guard.h; trk_enter below is how a hook takes it. *//* Nested calls since the last report: the low 32 bits count arrivals
 * (trk_enter), the high 32 those kept aside (trk_nested_put); the difference
 * is lost. One word, so that one exchange reads a consistent pair while a
 * signal handler may add to it. */
extern __thread uint64_t trk_tl_nested TRK_TLS TRK_HIDDEN;
extern __thread struct trk_thread *trk_tl_thread TRK_TLS TRK_HIDDEN;
extern __thread int trk_tl_internal TRK_TLS TRK_HIDDEN; /* the tracker's own thread */
extern _Atomic int trk_active TRK_HIDDEN;
/* The shared seq counter (docs/FORMAT.md §3), alone on its cache line:
 * every event of every thread writes it, so a variable beside it (read on
 * the hot path, say) would miss in the other cores' caches on every event.
 * Where globals land depends on every file linked, hence the padding. */
struct trk_seq_line {
    _Alignas(64) _Atomic uint64_t v;
    char pad[64 - sizeof(uint64_t)];
};
extern struct trk_seq_line trk_seq_line TRK_HIDDEN;
#define trk_seq (trk_seq_line.v)

struct trk_thread *trk_thread_attach(void) TRK_HIDDEN;
void trk_thread_exit_mark(struct trk_thread *t) TRK_HIDDEN;
struct trk_thread *trk_thread_list(void) TRK_HIDDEN;
pid_t trk_thread_tid_of(pthread_t th) TRK_HIDDEN;
void trk_threads_after_fork_child(struct trk_thread *self) TRK_HIDDEN;
/* A state no thread owns (a fork child's copy of another thread's) gives
 * back the pages of its ring, stack cache and scratch arrays. States an
 * exited thread leaves keep theirs: the next thread reuses them without
 * a page fault (test_lifecycle's thread churn). */
void trk_thread_release_pages(struct trk_thread *t) TRK_HIDDEN;
int trk_threads_init(void) TRK_HIDDEN;

/* Returns the calling thread's state with its guard set, or NULL when this
 * call must not be recorded (re-entry, tracking off, out of memory). Every
 * non-NULL return is paired with trk_leave(). */
extern uintptr_t trk_unw_lo TRK_HIDDEN, trk_unw_hi TRK_HIDDEN, trk_ldso_lo TRK_HIDDEN,
    trk_ldso_hi TRK_HIDDEN;

/* A call that arrives while this thread is inside a hook is lost unless our
 * own unwinder made it: libunwind (its cache mappings) or the loader (the
 * DTV resize libunwind's first TLS access after a dlopen causes) are the
 * tracker's work, not the program's; anything else is a signal handler's. */
static inline int trk_nested_is_ours(uintptr_t ra)
{
    return (ra >= trk_unw_lo && ra < trk_unw_hi) || (ra >= trk_ldso_lo && ra < trk_ldso_hi);
}

/* Always inlined into the hook, so that __builtin_return_address(0) is the
 * hook's caller. */
__attribute__((always_inline)) static inline struct trk_thread *trk_enter(void)
{
    int g = trk_guard_get();
    if (TRK_UNLIKELY(g)) {
        if (g == TRK_GUARD_HOOK && !trk_nested_is_ours((uintptr_t)__builtin_return_address(0)))
            __atomic_fetch_add(&trk_tl_nested, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    if (!atomic_load_explicit(&trk_active, memory_order_relaxed))
        return NULL;
    struct trk_thread *t = trk_tl_thread;
    if (TRK_UNLIKELY(!t)) {
        trk_guard_set(TRK_GUARD_INTERNAL);
        t = trk_thread_attach();
        if (!t) {
            trk_guard_set(0);
            return NULL;
        }
    }
    trk_guard_set(TRK_GUARD_HOOK);
    return t;
}

/* In a hook whose trk_enter returned NULL: whether this call is a nested
 * one that trk_enter counted (then the hook may keep it with
 * trk_nested_put). Always inlined, like trk_enter. */
__attribute__((always_inline)) static inline int trk_nested_here(void)
{
    return TRK_UNLIKELY(trk_guard_get() == TRK_GUARD_HOOK) &&
           !trk_nested_is_ours((uintptr_t)__builtin_return_address(0));
}

/* Keeps a nested call aside, taking its seq now (so a release calls it
 * before the memory goes back, an acquisition after). Async-signal-safe: no
 * locks, no unwinding, nothing the interrupted hook may be in the middle
 * of. Returns the slot, which stays valid until the hook leaves (a failed
 * call clears its op), or NULL when it could not be kept (stays lost). */
struct trk_nested_ev *trk_nested_put(unsigned op, unsigned kind, uintptr_t addr, uint64_t size,
                                     uintptr_t ra) TRK_HIDDEN;
/* A nested call that would not have been recorded anyway (mmap tracking
 * off): not a lost one. */
static inline void trk_nested_unrecorded(void)
{
    __atomic_fetch_add(&trk_tl_nested, (uint64_t)1 << 32, __ATOMIC_RELAXED);
}

/* Publishes the kept calls with seq < below, in seq order (nested.c). */
void trk_nested_flush(struct trk_thread *t, uint64_t below) TRK_HIDDEN;

/* Called by an event right after taking its seq: calls kept aside with a
 * smaller seq must precede it in the stream. */
static inline void trk_nested_before(struct trk_thread *t, uint64_t seq)
{
    if (TRK_UNLIKELY(atomic_load_explicit(&t->ntail, memory_order_relaxed) != t->nhead))
        trk_nested_flush(t, seq);
}

void trk_report_nested(void) TRK_HIDDEN;

static inline void trk_leave(void)
{
    if (TRK_UNLIKELY(trk_tl_nested))
        trk_report_nested();
    trk_guard_set(0);
}

/* A spinlock for the rare insertions into the lock-free tables (stack trie,
 * Python code ids): sched_yield rather than spin hot, since the holder may
 * be waiting for ring space. */
static inline void trk_spin_lock(_Atomic int *l)
{
    for (;;) {
        int expect = 0;
        if (atomic_compare_exchange_weak_explicit(l, &expect, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
        sched_yield();
    }
}

static inline void trk_spin_unlock(_Atomic int *l)
{
    atomic_store_explicit(l, 0, memory_order_release);
}

/* ---- The loader's lock across fork ------------------------------------------
 *
 * glibc re-initialises the loader's main lock in a fork child but not the one
 * dl_iterate_phdr takes; a thread of ours (or a hook unwinding with
 * libunwind) inside dl_iterate_phdr at the moment another thread forks leaves
 * it held in the child forever. So every such section is bracketed, and the
 * forking thread waits until no other thread is inside one. Per-thread flags
 * keep the common path free of a shared cache line. */
extern _Atomic int trk_forking TRK_HIDDEN;

static inline void trk_dl_enter(struct trk_thread *t)
{
    for (;;) {
        atomic_store(&t->in_dl, 1);
        if (TRK_LIKELY(!atomic_load(&trk_forking)))
            return;
        atomic_store(&t->in_dl, 0);
        while (atomic_load(&trk_forking))
            sched_yield();
    }
}

static inline void trk_dl_leave(struct trk_thread *t)
{
    atomic_store_explicit(&t->in_dl, 0, memory_order_release);
}

/* fork prepare: returns once no other thread is in a loader section; new
 * ones wait until trk_dl_resume. */
void trk_dl_quiesce(void) TRK_HIDDEN;
void trk_dl_resume(void) TRK_HIDDEN;

#endif /* TRK_CAPTURE_THREAD_H */
