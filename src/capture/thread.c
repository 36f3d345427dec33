/* SPDX-License-Identifier: MIT
 *
 * thread.c - per-thread capture state: creation on a thread's first event,
 * the registry the writer walks, exit marking and recycling after fork.
 *
 * States come from raw mmap and are never unmapped: the registry is an
 * append-only lock-free list, so the writer can walk it while threads come
 * and go. A state is recycled (FREE -> CLAIMED -> ACTIVE) only after the
 * writer has drained it and seen its thread gone (writer.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/events.h"
#include "capture/output.h"
#include "capture/own_mem.h"
#include "capture/sample.h"
#include "capture/stacks.h"
#include "capture/unwind.h"
#include "prim/sys.h"

__thread struct trk_thread *trk_tl_thread TRK_TLS;
__thread int trk_tl_internal TRK_TLS;
__thread uint64_t trk_tl_nested TRK_TLS;

/* Leaving a hook that was interrupted by calls of a signal handler: publish
 * the calls kept aside and say how many could not be kept, so readers
 * report the loss. Calls may keep arriving until the guard is clear, so
 * that is checked after clearing it; only then can nothing be kept any
 * more, and the nested floor be raised. trk_leave clears the guard again. */
void trk_report_nested(void)
{
    struct trk_thread *t = trk_tl_thread;
    for (;;) {
        uint64_t v = __atomic_exchange_n(&trk_tl_nested, 0, __ATOMIC_RELAXED);
        uint32_t lost = (uint32_t)v - (uint32_t)(v >> 32);
        if (t && atomic_load_explicit(&trk_active, memory_order_relaxed)) {
            trk_nested_flush(t, UINT64_MAX);
            if (lost)
                trk_ev_lost(t, lost);
        }
        trk_guard_set(0);
        atomic_signal_fence(memory_order_seq_cst);
        if (!__atomic_load_n(&trk_tl_nested, __ATOMIC_RELAXED))
            break;
        trk_guard_set(TRK_GUARD_HOOK);
    }
    if (t) {
        t->nhead = atomic_load_explicit(&t->ntail, memory_order_relaxed); /* tracking stopped */
        atomic_store_explicit(&t->nfloor, UINT64_MAX, memory_order_release);
    }
}
_Atomic int trk_active;
struct trk_seq_line trk_seq_line = {.v = 1};

static _Atomic(struct trk_thread *) registry;
static _Atomic uint32_t next_stream, next_slot;
static pthread_key_t exit_key;

static void thread_key_destructor(void *arg)
{
    struct trk_thread *t = arg;
    /* Runs during thread exit; later destructors may still allocate, and they
     * keep recording through trk_tl_thread, which outlives this call. */
    int was = trk_guard_enter_internal();
    if (atomic_load(&trk_active))
        trk_thread_exit_mark(t);
    trk_sample_thread_gone();
    trk_guard_leave(was);
}

int trk_threads_init(void)
{
    return pthread_key_create(&exit_key, thread_key_destructor) ? -1 : 0;
}

struct trk_thread *trk_thread_list(void)
{
    return atomic_load_explicit(&registry, memory_order_acquire);
}

static void thread_reset(struct trk_thread *t)
{
    t->head = 0;
    t->fast_end = t->wake_at = 0;
    t->q_span = 0; /* enc.ts goes back to 0 below */
    t->errnop = &errno;
    t->last_seq = 0;
    t->lost = 0;
    memset(&t->enc, 0, sizeof(t->enc));
    atomic_store_explicit(&t->committed, 0, memory_order_relaxed);
    atomic_store_explicit(&t->consumed, 0, memory_order_relaxed);
    atomic_store_explicit(&t->floor, UINT64_MAX, memory_order_relaxed);
    atomic_store_explicit(&t->nfloor, UINT64_MAX, memory_order_relaxed);
    atomic_store_explicit(&t->ntail, 0, memory_order_relaxed);
    t->nhead = 0;
    atomic_store_explicit(&t->wake_sent, 0, memory_order_relaxed);
    t->exit_seen_ns = 0;
    /* A new epoch invalidates the stack cache (the ids it holds belong to
     * the old stream, or to the parent's trie after fork). Clearing it
     * instead was a 64 KiB memset per new thread; now only once every
     * 65,535 owners. A fresh state's entries have epoch 0, never current. */
    if (++t->cache_epoch == 0) {
        memset(t->cache, 0, sizeof(t->cache));
        t->cache_epoch = 1;
    }
    trk_sample_memo_forget();
    t->stream = atomic_fetch_add(&next_stream, 1);
    t->tid = trk_gettid();
    t->self = pthread_self();
}

static struct trk_thread *thread_claim_free(void)
{
    for (struct trk_thread *t = trk_thread_list(); t; t = t->next) {
        int expect = TRK_TS_FREE;
        if (atomic_load_explicit(&t->state, memory_order_relaxed) == TRK_TS_FREE &&
            atomic_compare_exchange_strong(&t->state, &expect, TRK_TS_CLAIMED))
            return t;
    }
    return NULL;
}

static struct trk_thread *thread_new(void)
{
    size_t head = (sizeof(struct trk_thread) + 4095) & ~(size_t)4095;
    uint8_t *mem = trk_own_map(TRK_OWN_THREADS, head + trk_cfg.ring_size);
    if (!mem)
        return NULL;
    trk_own_add(TRK_OWN_THREADS, 0, 1);
    struct trk_thread *t = (struct trk_thread *)mem;
    t->ring = mem + head;
    t->ring_mask = trk_cfg.ring_size - 1;
    atomic_store(&t->state, TRK_TS_CLAIMED);
    t->slot = atomic_fetch_add(&next_slot, 1);
    struct trk_thread *old = atomic_load(&registry);
    do {
        t->next = old;
    } while (!atomic_compare_exchange_weak(&registry, &old, t));
    return t;
}

/* Reads the kernel's name for the calling thread, which names threads that
 * were christened before we could see it (or by the program name). With
 * PR_GET_NAME, not /proc/thread-self/comm: opening a file at a thread's
 * first allocation would take a number another of the program's threads
 * expects, or be closed by its double close (issue 14 item 7). */
static void thread_emit_comm(struct trk_thread *t)
{
    char name[17] = {0}; /* the kernel's TASK_COMM_LEN, NUL included */
    if (syscall(SYS_prctl, PR_GET_NAME, name, 0, 0, 0) != 0 || !name[0])
        return;
    trk_ev_thread_name(t, t->tid, name);
}

struct trk_thread *trk_thread_attach(void)
{
    struct trk_thread *t = thread_claim_free();
    if (!t) {
        trk_writer_reclaim();
        t = thread_claim_free();
    }
    if (!t)
        t = thread_new();
    if (!t) {
        trk_fail("cannot allocate thread buffer", 12);
        return NULL;
    }
    thread_reset(t);
    atomic_store_explicit(&t->state, TRK_TS_ACTIVE, memory_order_release);
    trk_tl_thread = t;
    pthread_setspecific(exit_key, t);
    trk_ev_thread_start(t);
    if (!trk_tl_internal) /* our sampler is not one of the program's threads */
        thread_emit_comm(t);
    trk_stacks_thread_init(t);
    return t;
}

void trk_thread_exit_mark(struct trk_thread *t)
{
    trk_ev_thread_exit(t);
    /* No writer wake-up: the writer's next period drains the state, and
     * the next new thread recycles it if that comes first. A wake-up per
     * exit cost a context switch and a write cycle per short thread. */
    atomic_store_explicit(&t->state, TRK_TS_EXITING, memory_order_release);
}

/* The state's header (up to the stack cache) and the Python block pointer
 * after the arrays keep their values; the cache reads back as zeros,
 * entries of epoch 0, which is never current (thread_reset). */
void trk_thread_release_pages(struct trk_thread *t)
{
    uintptr_t lo = ((uintptr_t)t->cache + 4095) & ~(uintptr_t)4095;
    uintptr_t hi = (uintptr_t)&t->provider_block & ~(uintptr_t)4095;
    if (hi > lo)
        syscall(SYS_madvise, (void *)lo, hi - lo, MADV_DONTNEED);
    syscall(SYS_madvise, t->ring, (size_t)t->ring_mask + 1, MADV_DONTNEED);
    if (t->unwind_memo) /* zeros: an empty memo */
        syscall(SYS_madvise, t->unwind_memo, trk_unwind_memo_size(), MADV_DONTNEED);
}

pid_t trk_thread_tid_of(pthread_t th)
{
    for (struct trk_thread *t = trk_thread_list(); t; t = t->next) {
        int s = atomic_load_explicit(&t->state, memory_order_acquire);
        if ((s == TRK_TS_ACTIVE || s == TRK_TS_EXITING) && pthread_equal(t->self, th))
            return t->tid;
    }
    return 0;
}

/* In a fork child only the forking thread survives. Its state starts a fresh
 * stream in the child's new file; every other state belonged to a thread that
 * does not exist here and becomes free. Stream ids restart at 0. */
void trk_threads_after_fork_child(struct trk_thread *self)
{
    atomic_store(&next_stream, 0);
    for (struct trk_thread *t = trk_thread_list(); t; t = t->next)
        if (t != self) {
            /* The parent's pages, shared copy-on-write: not the child's
             * to keep resident. */
            trk_thread_release_pages(t);
            atomic_store(&t->state, TRK_TS_FREE);
        }
    if (self) {
        thread_reset(self);
        atomic_store(&self->state, TRK_TS_ACTIVE);
    }
}
