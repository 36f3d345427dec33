/* SPDX-License-Identifier: MIT
 *
 * gpu_events.c - encodes the GPU records (docs/FORMAT.md §4: GPU_ALLOC,
 * GPU_FREE, GPU_FAIL, GPU_MAP, GPU_MEMINFO, GPU_ENTER/EXIT) into the calling
 * thread's ring, with the same seq window protocol as events.c.
 *
 * Owns only the encoding and publication of those records. Must not: call
 * the GPU driver, allocate, take locks, or decide what an API call means
 * (src/gpu does). A record opens its seq window with trk_ev_begin,
 * is encoded into the ring and closes the window when it is committed.
 */
#include "gpu/gpu_events.h"

/* GPU_EXIT in front of the record when asked. */
static inline uint8_t *scope_before(uint8_t *p, unsigned scope)
{
    return (scope & TRK_GPU_EXIT_BEFORE) ? trk_enc_gpu_scope(p, 0) : p;
}

/* GPU_ENTER after the record when asked, then publish. */
static inline void finish(struct trk_thread *t, uint8_t *b, uint8_t *e, uint8_t *scratch,
                          unsigned scope, uint64_t seq)
{
    if (scope & TRK_GPU_ENTER_AFTER)
        e = trk_enc_gpu_scope(e, 1);
    trk_rec_end(t, b, e, scratch, seq);
}

void trk_ev_gpu_alloc(struct trk_thread *t, unsigned scope, unsigned api, unsigned kind, int device,
                      uint64_t addr, uint64_t size, uint64_t stream, uint32_t stack)
{
    uint8_t scratch[TRK_REC_MAX + 2];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *b = trk_rec_begin(t, scratch, sizeof(scratch));
    uint8_t *e = trk_enc_gpu_alloc(scope_before(b, scope), &t->enc, seq, trk_now_ns(), api, kind,
                                   device, addr, size, stream, stack);
    finish(t, b, e, scratch, scope, seq);
}

void trk_ev_gpu_free(struct trk_thread *t, unsigned scope, unsigned api, unsigned kind, int device,
                     uint64_t addr)
{
    uint8_t scratch[TRK_REC_MAX + 2];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *b = trk_rec_begin(t, scratch, sizeof(scratch));
    uint8_t *e = trk_enc_gpu_free(scope_before(b, scope), &t->enc, seq, trk_now_ns(), api, kind,
                                  device, addr);
    finish(t, b, e, scratch, scope, seq);
}

void trk_ev_gpu_fail(struct trk_thread *t, unsigned scope, unsigned api, unsigned kind, int device,
                     uint64_t size, uint64_t result, uint32_t stack)
{
    uint8_t scratch[TRK_REC_MAX + 2];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *b = trk_rec_begin(t, scratch, sizeof(scratch));
    uint8_t *e = trk_enc_gpu_fail(scope_before(b, scope), &t->enc, seq, trk_now_ns(), api, kind,
                                  device, size, result, stack);
    finish(t, b, e, scratch, scope, seq);
}

void trk_ev_gpu_map(struct trk_thread *t, unsigned scope, unsigned api, unsigned op, int device,
                    uint64_t va, uint64_t size, uint64_t handle, uint64_t offset)
{
    uint8_t scratch[TRK_REC_MAX + 2];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *b = trk_rec_begin(t, scratch, sizeof(scratch));
    uint8_t *e = trk_enc_gpu_map(scope_before(b, scope), &t->enc, seq, trk_now_ns(), api, op,
                                 device, va, size, handle, offset);
    finish(t, b, e, scratch, scope, seq);
}

void trk_ev_gpu_meminfo(struct trk_thread *t, unsigned device, uint64_t used, uint64_t total)
{
    uint8_t scratch[TRK_REC_MAX + 2];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *b = trk_rec_begin(t, scratch, sizeof(scratch));
    uint8_t *e = trk_enc_gpu_meminfo(b, &t->enc, seq, trk_now_ns(), device, used, total);
    trk_rec_end(t, b, e, scratch, seq);
}

/* A scope byte on its own (a call with no record next to it). No seq, so
 * no window: like a STACK record, it only has to be committed before the
 * host events it tags, which follow it in the same ring. A byte
 * that cannot be buffered (writer gone) is counted as lost, and the stream
 * stays decodable because the record carries no delta state. */
void trk_ev_gpu_scope(struct trk_thread *t, int enter)
{
    uint64_t size = t->ring_mask + 1;
    if (TRK_LIKELY(t->head - atomic_load_explicit(&t->consumed, memory_order_acquire) < size)) {
        trk_enc_gpu_scope(t->ring + (t->head & t->ring_mask), enter);
        t->head++;
        trk_commit(t);
        return;
    }
    uint8_t b;
    trk_enc_gpu_scope(&b, enter);
    if (trk_ring_put(t, &b, 1) == 0)
        trk_commit(t);
}
