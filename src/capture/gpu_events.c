/* SPDX-License-Identifier: MIT
 *
 * gpu_events.c - encodes the GPU records (docs/FORMAT.md §4: GPU_ALLOC,
 * GPU_FREE, GPU_FAIL, GPU_MAP, GPU_MEMINFO, GPU_ENTER/EXIT) into the calling
 * thread's ring, with the same seq window protocol as events.c.
 *
 * Owns only the encoding and publication of those records. Must not: call
 * the GPU driver, allocate, take locks, or decide what an API call means
 * (src/gpu does). Each emitter encodes into a stack buffer and hands it to
 * trk_ev_finish, which copies it into the ring, commits it and closes the
 * seq window trk_ev_begin opened; one extra copy of ~30 bytes next to a
 * driver call is noise.
 */
#include "capture/gpu_events.h"

void trk_ev_gpu_alloc(struct trk_thread *t, unsigned api, unsigned kind, int device,
                      uint64_t addr, uint64_t size, uint64_t stream, uint32_t stack)
{
    uint8_t buf[TRK_REC_MAX];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *e = trk_enc_gpu_alloc(buf, &t->enc, seq, trk_now_ns(), api, kind, device, addr,
                                   size, stream, stack);
    trk_ev_finish(t, buf, (size_t)(e - buf), seq);
}

void trk_ev_gpu_free(struct trk_thread *t, unsigned api, unsigned kind, int device,
                     uint64_t addr)
{
    uint8_t buf[TRK_REC_MAX];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *e = trk_enc_gpu_free(buf, &t->enc, seq, trk_now_ns(), api, kind, device, addr);
    trk_ev_finish(t, buf, (size_t)(e - buf), seq);
}

void trk_ev_gpu_fail(struct trk_thread *t, unsigned api, unsigned kind, int device,
                     uint64_t size, uint64_t result, uint32_t stack)
{
    uint8_t buf[TRK_REC_MAX];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *e = trk_enc_gpu_fail(buf, &t->enc, seq, trk_now_ns(), api, kind, device, size,
                                  result, stack);
    trk_ev_finish(t, buf, (size_t)(e - buf), seq);
}

void trk_ev_gpu_map(struct trk_thread *t, unsigned api, unsigned op, int device, uint64_t va,
                    uint64_t size, uint64_t handle, uint64_t offset)
{
    uint8_t buf[TRK_REC_MAX];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *e = trk_enc_gpu_map(buf, &t->enc, seq, trk_now_ns(), api, op, device, va, size,
                                 handle, offset);
    trk_ev_finish(t, buf, (size_t)(e - buf), seq);
}

void trk_ev_gpu_meminfo(struct trk_thread *t, unsigned device, uint64_t used, uint64_t total)
{
    uint8_t buf[TRK_REC_MAX];
    uint64_t seq = trk_ev_begin(t);
    uint8_t *e = trk_enc_gpu_meminfo(buf, &t->enc, seq, trk_now_ns(), device, used, total);
    trk_ev_finish(t, buf, (size_t)(e - buf), seq);
}

/* No seq, so no window: like a STACK record, it only has to be committed
 * before the host events it tags, which follow it in the same ring. A byte
 * that cannot be buffered (writer gone) is counted as lost, and the stream
 * stays decodable because the record carries no delta state. */
void trk_ev_gpu_scope(struct trk_thread *t, int enter)
{
    uint8_t b;
    trk_enc_gpu_scope(&b, enter);
    if (trk_ring_put(t, &b, 1) == 0)
        trk_commit(t);
}
