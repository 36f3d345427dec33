/* SPDX-License-Identifier: MIT
 *
 * capture.h - the in-process capture engine's interface to the hooks.
 *
 * Everything declared here runs inside the traced program. Rules for all of
 * src/capture: no malloc (memory comes from raw mmap syscalls), no stdio, no
 * locks on the per-event path, initial-exec TLS only, and every entry point is
 * reached with the thread's re-entry guard set (trk_enter) so that whatever
 * libc does underneath us is never recorded or re-entered.
 */
#ifndef TRK_CAPTURE_H
#define TRK_CAPTURE_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/record.h"

#define TRK_HIDDEN      __attribute__((visibility("hidden")))
#define TRK_LIKELY(x)   __builtin_expect(!!(x), 1)
#define TRK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TRK_TLS         __attribute__((tls_model("initial-exec")))
/* For a hook's shared body: trk_enter must end up inside the exported
 * hook itself (see trk_nested_is_ours). */
#define TRK_HOOK_INLINE __attribute__((always_inline)) static inline

#define TRK_DEPTH_DEFAULT 128
#define TRK_DEPTH_MAX     1024
#define TRK_STACK_CACHE   4096 /* per-thread whole-stack cache entries, power of 2 */

/* ---- Configuration (TRACKER_* environment, read once at start) ---------- */

struct trk_config {
    int depth;          /* stack depth cap */
    int track_mmap;     /* record the mmap family */
    int follow_fork;    /* forked children write their own capture */
    int quiet;          /* no notices on stderr (errors still print once) */
    int force;          /* replace existing capture files */
    int rss_ms;         /* RSS sampling period, 0 = off */
    int flush_ms;       /* writer flush period */
    int lz4_accel;      /* LZ4 acceleration of the writer (1 = LZ4_compress_default) */
    uint32_t ring_size; /* per-thread buffer bytes, power of two */
    int python;         /* TRK_PY_*: Python frames in stacks (src/python) */
    int py_allocators;  /* record pymalloc's allocations too */
};

/* TRACKER_PYTHON values. */
#define TRK_PY_OFF    0 /* native stacks only, even in a Python process */
#define TRK_PY_ONLY   1 /* Python frames only (no native unwinding while Python runs) */
#define TRK_PY_HYBRID 2 /* Python frames in place of the eval loop's native frames */

extern struct trk_config trk_cfg TRK_HIDDEN;

void trk_config_load(void) TRK_HIDDEN;

/* ---- Per-thread state ---------------------------------------------------- */

/* Per-thread cache of Python frame values: (code object, instruction
 * offset) -> the STACK ip that stands for it (src/python/py_stack.c). */
#define TRK_PY_CACHE 512
struct trk_py_cache_ent {
    const void *code;
    const void *linetable; /* tells a reused code object address from the old one */
    int64_t lasti;
    uint64_t value;
};

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
    pid_t tid;
    pthread_t self;
    uint64_t exit_seen_ns;   /* writer-private */
    struct trk_thread *next; /* registry, append-only */

    /* cache entries are valid while their epoch equals cache_epoch: a
     * state's new owner bumps it instead of clearing 64 KiB. */
    uint16_t cache_epoch;
    struct trk_stack_cache_ent cache[TRK_STACK_CACHE];
    uintptr_t ips[TRK_DEPTH_MAX + 32];

    /* Python (src/python): the walk's frames, innermost first, and the
     * merged hybrid stack. */
    struct trk_nested_ev nested[TRK_NESTED_MAX];

    uint32_t py_epoch; /* pycache is valid while this equals the global epoch */
    struct trk_py_cache_ent pycache[TRK_PY_CACHE];
    uint64_t pyv[TRK_DEPTH_MAX];
    uint8_t pyentry[TRK_DEPTH_MAX];
    uintptr_t merged[2 * TRK_DEPTH_MAX + 32];
};

/* Re-entry guard. HOOK: a hook of the program's is recording; a call that
 * arrives meanwhile on this thread (a signal handler's) is kept aside
 * (trk_nested_put) and published when the hook leaves, or, where the hook
 * cannot keep it, counted as lost. INTERNAL: the tracker's own work; whatever libc
 * does underneath is simply not the program's. */
#define TRK_GUARD_HOOK     1
#define TRK_GUARD_INTERNAL 2

extern __thread int trk_tl_guard TRK_TLS TRK_HIDDEN;
/* Nested calls since the last report: the low 32 bits count arrivals
 * (trk_enter), the high 32 those kept aside (trk_nested_put); the difference
 * is lost. One word, so that one exchange reads a consistent pair while a
 * signal handler may add to it. */
extern __thread uint64_t trk_tl_nested TRK_TLS TRK_HIDDEN;
extern __thread struct trk_thread *trk_tl_thread TRK_TLS TRK_HIDDEN;
extern __thread int trk_tl_internal TRK_TLS TRK_HIDDEN; /* the tracker's own thread */
extern _Atomic int trk_active TRK_HIDDEN;
extern _Atomic uint64_t trk_seq TRK_HIDDEN;

struct trk_thread *trk_thread_attach(void) TRK_HIDDEN;
void trk_thread_exit_mark(struct trk_thread *t) TRK_HIDDEN;
struct trk_thread *trk_thread_list(void) TRK_HIDDEN;
pid_t trk_thread_tid_of(pthread_t th) TRK_HIDDEN;
void trk_threads_after_fork_child(struct trk_thread *self) TRK_HIDDEN;
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
    int g = trk_tl_guard;
    if (TRK_UNLIKELY(g)) {
        if (g == TRK_GUARD_HOOK && !trk_nested_is_ours((uintptr_t)__builtin_return_address(0)))
            __atomic_fetch_add(&trk_tl_nested, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    if (!atomic_load_explicit(&trk_active, memory_order_relaxed))
        return NULL;
    struct trk_thread *t = trk_tl_thread;
    if (TRK_UNLIKELY(!t)) {
        trk_tl_guard = TRK_GUARD_INTERNAL;
        t = trk_thread_attach();
        if (!t) {
            trk_tl_guard = 0;
            return NULL;
        }
    }
    trk_tl_guard = TRK_GUARD_HOOK;
    return t;
}

/* In a hook whose trk_enter returned NULL: whether this call is a nested
 * one that trk_enter counted (then the hook may keep it with
 * trk_nested_put). Always inlined, like trk_enter. */
__attribute__((always_inline)) static inline int trk_nested_here(void)
{
    return TRK_UNLIKELY(trk_tl_guard == TRK_GUARD_HOOK) &&
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
    trk_tl_guard = 0;
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

/* ---- Ring and events (events.c) ------------------------------------------ */

/* Appends len bytes to the thread's ring, waiting for the writer when full.
 * Returns 0, or -1 when the bytes were dropped (writer gone). */
int trk_ring_put(struct trk_thread *t, const uint8_t *buf, size_t len) TRK_HIDDEN;

/* Waits until len bytes are free (without writing). -1 if that cannot be. */
int trk_ring_reserve(struct trk_thread *t, size_t len) TRK_HIDDEN;

static inline size_t trk_ring_free(struct trk_thread *t)
{
    return (size_t)(t->ring_mask + 1 -
                    (t->head - atomic_load_explicit(&t->consumed, memory_order_acquire)));
}

static inline void trk_commit(struct trk_thread *t)
{
    atomic_store_explicit(&t->committed, t->head, memory_order_release);
}

/* CLOCK_MONOTONIC ns, from the TSC where the kernel trusts it (clock.c). */
uint64_t trk_now_ns(void) TRK_HIDDEN;
void trk_clock_init(void) TRK_HIDDEN;
void trk_clock_recalibrate(void) TRK_HIDDEN;

/* Opens an event window: publishes the floor and takes a seq. */
static inline uint64_t trk_ev_begin(struct trk_thread *t)
{
    atomic_store_explicit(&t->floor, t->last_seq + 1, memory_order_relaxed);
    return atomic_fetch_add_explicit(&trk_seq, 1, memory_order_seq_cst);
}

static inline uint64_t trk_ev_seq(void)
{
    return atomic_fetch_add_explicit(&trk_seq, 1, memory_order_seq_cst);
}

/* Writes an encoded record of the open window, commits it and closes it. */
void trk_ev_finish(struct trk_thread *t, const uint8_t *buf, size_t len,
                   uint64_t last_seq) TRK_HIDDEN;

void trk_writer_wake(void) TRK_HIDDEN;

/* Wakes the writer once the ring is past half full, once per drain rather
 * than per event: a futex wake is a syscall. The writer clears wake_sent
 * when it drains the ring. */
static inline void trk_ring_maybe_wake(struct trk_thread *t)
{
    if (TRK_UNLIKELY(t->head - atomic_load_explicit(&t->consumed, memory_order_relaxed) >
                     (t->ring_mask + 1) / 2) &&
        !atomic_load_explicit(&t->wake_sent, memory_order_relaxed)) {
        atomic_store_explicit(&t->wake_sent, 1, memory_order_relaxed);
        trk_writer_wake();
    }
}

/* Most records are encoded straight into the ring: trk_rec_begin returns
 * where to encode one of at most `room` bytes, the ring itself when it fits
 * without wrapping, else `scratch` (then trk_rec_end copies it through
 * trk_ev_finish). Avoiding the copy matters: the preload is built
 * -fno-builtin, so every memcpy is a libc call on the hot path. */
static inline uint8_t *trk_rec_begin(struct trk_thread *t, uint8_t *scratch, size_t room)
{
    uint64_t size = t->ring_mask + 1, off = t->head & t->ring_mask;
    uint64_t used = t->head - atomic_load_explicit(&t->consumed, memory_order_acquire);
    if (TRK_LIKELY(size - off >= room && size - used >= room))
        return t->ring + off;
    return scratch;
}

/* Publishes the record encoded in [start, end) and closes the event window. */
static inline void trk_rec_end(struct trk_thread *t, uint8_t *start, uint8_t *end, uint8_t *scratch,
                               uint64_t last_seq)
{
    if (TRK_UNLIKELY(start == scratch)) {
        trk_ev_finish(t, scratch, (size_t)(end - scratch), last_seq);
        return;
    }
    t->head += (uint64_t)(end - start);
    trk_ring_maybe_wake(t);
    t->last_seq = last_seq;
    trk_commit(t);
    atomic_store_explicit(&t->floor, UINT64_MAX, memory_order_release);
}

static inline void trk_ev_abort(struct trk_thread *t)
{
    atomic_store_explicit(&t->floor, UINT64_MAX, memory_order_release);
}

void trk_ev_alloc(struct trk_thread *t, unsigned kind, const void *p, size_t size,
                  uint32_t stack) TRK_HIDDEN;
void trk_ev_free(struct trk_thread *t, unsigned kind, const void *p) TRK_HIDDEN;
void trk_ev_free_at(struct trk_thread *t, unsigned kind, uint64_t seq, const void *p) TRK_HIDDEN;
void trk_ev_realloc(struct trk_thread *t, unsigned kind, uint64_t seq, const void *old,
                    const void *new_ptr, size_t size, uint32_t stack) TRK_HIDDEN;
void trk_ev_mmap(struct trk_thread *t, const void *p, size_t len, int prot, int flags, int file,
                 uint32_t stack) TRK_HIDDEN;
void trk_ev_munmap_at(struct trk_thread *t, uint64_t seq, const void *p, size_t len) TRK_HIDDEN;
void trk_ev_mremap(struct trk_thread *t, uint64_t seq, const void *old, size_t oldlen,
                   const void *new_ptr, size_t newlen, int flags, uint32_t stack) TRK_HIDDEN;
void trk_ev_thread_start(struct trk_thread *t) TRK_HIDDEN;
void trk_ev_thread_name(struct trk_thread *t, pid_t tid, const char *name) TRK_HIDDEN;
void trk_ev_thread_exit(struct trk_thread *t) TRK_HIDDEN;
void trk_ev_rss(struct trk_thread *t, uint64_t anon, uint64_t file) TRK_HIDDEN;
void trk_ev_lost(struct trk_thread *t, uint64_t count) TRK_HIDDEN;

/* ---- Stacks (stacks.c) ----------------------------------------------------- */

int trk_stacks_init(void) TRK_HIDDEN;
/* Unwinds the caller's stack (skipping the tracker's own frames) and returns
 * its interned id, 0 when no stack could be taken. ra is the hook's return
 * address; trk_stack, inlined into the hook, passes it. */
uint32_t trk_stack_from(struct trk_thread *t, uintptr_t ra) TRK_HIDDEN;

__attribute__((always_inline)) static inline uint32_t trk_stack(struct trk_thread *t)
{
    return trk_stack_from(t, (uintptr_t)__builtin_return_address(0));
}
/* Unwinds the caller's native stack into t->ips, innermost first, without
 * the tracker's own frames; returns the count (at most max). */
int trk_stack_unwind(struct trk_thread *t, int max) TRK_HIDDEN;
/* libunwind masks every signal around each of its cache and lookup
 * sections: two sigprocmask syscalls per frame on its slow path (a frame
 * the fast trace cannot follow, e.g. a signal that landed on a PLT stub).
 * During our own unwinds the preload's sigprocmask hands libunwind's calls
 * here instead: the first one blocks every signal for the rest of the
 * unwind, the others cost nothing (stacks.c). */
extern __thread int trk_tl_unw TRK_TLS TRK_HIDDEN;
int trk_unw_sigprocmask(int how, const sigset_t *set, sigset_t *old) TRK_HIDDEN;
static inline int trk_unw_calls(uintptr_t ra)
{
    return ra >= trk_unw_lo && ra < trk_unw_hi;
}
/* Another layer (src/python) may build stacks instead: when set, trk_stack
 * asks it first; it returns 1 with the interned id, or 0 to get the plain
 * native stack. */
typedef int (*trk_stack_provider_fn)(struct trk_thread *t, uint32_t *id);
extern _Atomic(trk_stack_provider_fn) trk_stack_provider TRK_HIDDEN;
/* Interns ips[0..n) (innermost first); emits STACK records for new nodes. */
uint32_t trk_stack_intern(struct trk_thread *t, const uintptr_t *ips, int n) TRK_HIDDEN;
void trk_stacks_thread_init(struct trk_thread *t) TRK_HIDDEN;
void trk_stacks_fork_prepare(void) TRK_HIDDEN;
void trk_stacks_fork_parent(void) TRK_HIDDEN;
void trk_stacks_fork_child(void) TRK_HIDDEN;

/* ---- Modules (modules.c) ---------------------------------------------------- */

void trk_modules_snapshot(struct trk_thread *t) TRK_HIDDEN;
/* Forgets which objects were written (a fork child starts a new file). */
void trk_modules_forget(void) TRK_HIDDEN;
/* Cheap check for loads the hooks did not see (libc-internal dlopen). */
int trk_modules_changed(struct trk_thread *t) TRK_HIDDEN;
void trk_modules_init(void) TRK_HIDDEN;
/* Address range of libtracker.so's own code, for skipping its frames. */
extern uintptr_t trk_self_lo TRK_HIDDEN, trk_self_hi TRK_HIDDEN;

/* ---- Output and writer (output.c, writer.c) ------------------------------------ */

int trk_output_open(int is_fork_child) TRK_HIDDEN;
int trk_output_fd(void) TRK_HIDDEN;
int trk_write_all(const void *buf, size_t len) TRK_HIDDEN;

int trk_writer_start(void) TRK_HIDDEN;
void trk_writer_wake(void) TRK_HIDDEN;
int trk_writer_alive(void) TRK_HIDDEN;
/* Recycles the states of exited threads now, if the writer is not busy. */
void trk_writer_reclaim(void) TRK_HIDDEN;
/* Flushes everything and writes an END chunk with the given reason. */
void trk_writer_finish(int reason, int stop) TRK_HIDDEN;
/* Takes back the END of a trk_writer_finish(…, 0) whose exec failed. */
void trk_writer_unfinish(void) TRK_HIDDEN;
void trk_writer_fork_prepare(void) TRK_HIDDEN;
void trk_writer_fork_parent(void) TRK_HIDDEN;
void trk_writer_fork_child(void) TRK_HIDDEN;
/* Stops tracking after an internal failure, saying why once on stderr. */
void trk_fail(const char *what, int err) TRK_HIDDEN;

/* ---- The tracker's own descriptors (fds.c) -------------------------------------
 *
 * Kept high and close-on-exec, out of the program's way; the preload's
 * close/close_range/closefrom/dup2/dup3 hooks treat them as not open. */
enum trk_fd_role { TRK_FD_CAPTURE, TRK_FD_STATM, TRK_FD_UNW_READ, TRK_FD_UNW_WRITE, TRK_FD_ROLES };
/* Moves fd above the floor (close-on-exec) and registers it for role; copy,
 * if given, is another holder of the number kept up to date. Returns it. */
int trk_fd_adopt(enum trk_fd_role role, int fd, int *copy) TRK_HIDDEN;
void trk_fd_release(enum trk_fd_role role) TRK_HIDDEN; /* closes and forgets */
int trk_fd_get(enum trk_fd_role role) TRK_HIDDEN;
int trk_fd_role_of(int fd) TRK_HIDDEN; /* the role of a registered number, else -1 */
/* A user of the number: between pin and unpin it is never handed to the program. */
int trk_fd_pin(enum trk_fd_role role) TRK_HIDDEN;
void trk_fd_unpin(enum trk_fd_role role) TRK_HIDDEN;
/* Is fd still the file registered for role (same st_dev and st_ino)? */
int trk_fd_intact(enum trk_fd_role role, int fd) TRK_HIDDEN;
/* Before the program's dup2 onto fd: moves ours elsewhere. 0, or -1 if ours
 * had to be given up. */
int trk_fd_vacate(int fd) TRK_HIDDEN;
int trk_fd_raw_close(int fd) TRK_HIDDEN;

/* ---- Small libc-free helpers (sys.c) -------------------------------------------- */

void *trk_sys_mmap(size_t len) TRK_HIDDEN;
void trk_sys_munmap(void *p, size_t len) TRK_HIDDEN;
pid_t trk_gettid(void) TRK_HIDDEN;
void trk_log(const char *a, const char *b, const char *c) TRK_HIDDEN;
size_t trk_u64_to_dec(char *buf, uint64_t v) TRK_HIDDEN;
extern pid_t trk_pid TRK_HIDDEN;

#endif /* TRK_CAPTURE_H */
