/* SPDX-License-Identifier: MIT
 *
 * nested.c - calls that arrive while their thread is inside a hook: a signal
 * handler that allocates, interrupting malloc or mmap. The ring and its
 * encoder state belong to the interrupted hook, which may be halfway through
 * a record, an unwind (libunwind is not re-entrant) or a stack-trie insert
 * (a spinlock); so the handler's call only fills a slot of a small
 * per-thread side queue, with its seq taken at the time and its call site,
 * and the interrupted hook publishes the slots: those with a smaller seq
 * right before its own record (trk_nested_before), the rest when it leaves
 * (trk_report_nested). A full queue counts the call as lost, as before.
 *
 * Watermarks (writer.c): a kept call's seq is in flight until published, so
 * the handler lowers the thread's nfloor to last_seq + 1 before taking it,
 * and the hook raises nfloor again only once the queue is empty and its
 * guard is clear (no call can be kept any more).
 */
#include "capture/events.h"
#include "capture/output.h"
#include "capture/sample.h"
#include "capture/stacks.h"

struct trk_nested_ev *trk_nested_put(unsigned op, unsigned kind, uintptr_t addr, uint64_t size,
                                     uintptr_t ra)
{
    struct trk_thread *t = trk_tl_thread;
    if (!t || !atomic_load_explicit(&trk_active, memory_order_relaxed))
        return NULL;
    /* A CAS, not a plain increment: another signal may interrupt us here
     * and take a slot of its own. */
    uint32_t i = atomic_load_explicit(&t->ntail, memory_order_relaxed);
    do {
        if (i - t->nhead >= TRK_NESTED_MAX)
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&t->ntail, &i, i + 1, memory_order_relaxed,
                                                    memory_order_relaxed));
    struct trk_nested_ev *e = &t->nested[i % TRK_NESTED_MAX];
    /* Every kept call not yet published has seq > last_seq (or is given a
     * new one, see emit), so last_seq + 1 is a floor for all of them. */
    atomic_store_explicit(&t->nfloor, t->last_seq + 1, memory_order_seq_cst);
    e->seq = trk_ev_seq();
    e->seq2 = 0;
    e->ts = trk_now_ns();
    e->addr = addr;
    e->old = 0;
    e->size = size;
    e->ra = ra;
    e->prot = e->flags = 0;
    e->kind = (uint8_t)kind;
    e->file = 0;
    e->op = (uint8_t)op;
    __atomic_fetch_add(&trk_tl_nested, (uint64_t)1 << 32, __ATOMIC_RELAXED);
    return e;
}

/* Encodes one kept call into the ring. Not through trk_rec_end: that closes
 * the interrupted hook's own event window (its floor), which may be open. */
static void emit(struct trk_thread *t, struct trk_nested_ev *e)
{
    if (e->op == TRK_NEV_NONE)
        return;
    /* The stream's seq must increase. A call kept during a realloc or
     * mremap, between the two seqs of the hook's single record, cannot be
     * placed; it becomes an event after that record. */
    if (e->seq <= t->last_seq) {
        e->seq = trk_ev_seq();
        if (e->op == TRK_NEV_REALLOC)
            e->seq2 = trk_ev_seq();
    }
    uint32_t stack = 0;
    if (e->op == TRK_NEV_ALLOC || e->op == TRK_NEV_REALLOC)
        /* Its caller is all we have: in a sampled capture that is the stack
         * of an allocation sampling passed over (sample.h), or a reader
         * would weigh it as a sampled one. */
        stack =
            trk_cfg.sample_bytes ? trk_stack_callsite(t, e->ra) : trk_stack_intern(t, &e->ra, 1);
    else if (e->op == TRK_NEV_MMAP)
        stack = trk_stack_intern(t, &e->ra, 1);
    uint8_t buf[TRK_REC_MAX], *p = buf;
    uint64_t last = e->seq;
    switch (e->op) {
    case TRK_NEV_ALLOC:
        p = trk_enc_alloc(buf, &t->enc, e->kind, e->seq, e->ts, e->addr, e->size, stack);
        break;
    case TRK_NEV_FREE:
        p = trk_enc_free(buf, &t->enc, e->kind, e->seq, e->ts, e->addr);
        break;
    case TRK_NEV_REALLOC:
        p = trk_enc_realloc(buf, &t->enc, e->kind, e->seq, e->seq2, e->ts, e->old, e->addr, e->size,
                            stack);
        last = e->seq2;
        break;
    case TRK_NEV_MMAP:
        p = trk_enc_mmap(buf, &t->enc, e->seq, e->ts, e->addr, e->size, e->prot, e->flags, e->file,
                         stack);
        break;
    case TRK_NEV_MUNMAP:
        p = trk_enc_munmap(buf, &t->enc, e->seq, e->ts, e->addr, e->size);
        break;
    default:
        return;
    }
    if (trk_ring_put(t, buf, (size_t)(p - buf))) {
        trk_fail("event buffer overflow", 105 /* ENOBUFS */);
        return;
    }
    t->last_seq = last;
    trk_commit(t);
}

void trk_nested_flush(struct trk_thread *t, uint64_t below)
{
    for (;;) {
        /* Slots in [head, tail) are complete: whoever reserved them was a
         * signal handler that ran to its end before we resumed. */
        uint32_t head = t->nhead, tail = atomic_load_explicit(&t->ntail, memory_order_acquire);
        if (head == tail)
            return;
        /* Nested signals can fill slots out of seq order: bring the
         * smallest seq to the head (the queue is a few entries at most). */
        struct trk_nested_ev *h = &t->nested[head % TRK_NESTED_MAX];
        for (uint32_t i = head + 1; i != tail; i++) {
            struct trk_nested_ev *e = &t->nested[i % TRK_NESTED_MAX];
            if (e->seq < h->seq) {
                struct trk_nested_ev tmp = *h;
                *h = *e;
                *e = tmp;
            }
        }
        if (h->seq >= below)
            return;
        if (atomic_load_explicit(&trk_active, memory_order_relaxed))
            emit(t, h);
        t->nhead = head + 1;
    }
}
