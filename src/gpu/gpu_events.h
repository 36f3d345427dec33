/* SPDX-License-Identifier: MIT
 *
 * gpu_events.h - the GPU event emitters (GPU_* records, docs/FORMAT.md §4)
 * that src/gpu's hooks call, built on the capture engine's ring (events.h).
 *
 * Same rules as events.c: every emitter is called with the thread's guard
 * held (trk_enter), never allocates, never blocks except for ring space, and
 * takes its seq by the format's rule (§3): a release (GPU_FREE, unmap) before
 * the driver releases anything, an acquisition (GPU_ALLOC, GPU_FAIL, map)
 * after the driver returned. GPU_ENTER/GPU_EXIT carry no seq.
 */
#ifndef TRK_GPU_EVENTS_H
#define TRK_GPU_EVENTS_H

#include <stdint.h>

#include "capture/capture.h"

/* The GPU scope a record opens or closes, written in the same ring write:
 * EXIT_BEFORE puts GPU_EXIT in front of the record (the acquisition that
 * ends a driver call), ENTER_AFTER puts GPU_ENTER after it (the release that
 * starts one). */
#define TRK_GPU_EXIT_BEFORE 1u
#define TRK_GPU_ENTER_AFTER 2u

/* GPU_ALLOC. addr is the device pointer, or the handle for VMM physical
 * memory and arrays; stream is the CUstream/hipStream_t value, 0 if none. */
void trk_ev_gpu_alloc(struct trk_thread *t, unsigned scope, unsigned api, unsigned kind, int device,
                      uint64_t addr, uint64_t size, uint64_t stream, uint32_t stack) TRK_HIDDEN;

/* GPU_FREE. kind may be 0 and device -1 when the call does not say; readers
 * take them from the matching allocation. */
void trk_ev_gpu_free(struct trk_thread *t, unsigned scope, unsigned api, unsigned kind, int device,
                     uint64_t addr) TRK_HIDDEN;

/* GPU_FAIL: an allocation the driver refused, with its result code. */
void trk_ev_gpu_fail(struct trk_thread *t, unsigned scope, unsigned api, unsigned kind, int device,
                     uint64_t size, uint64_t result, uint32_t stack) TRK_HIDDEN;

/* GPU_MAP: op TRK_GPU_OP_MAP (after the call) or TRK_GPU_OP_UNMAP (before). */
void trk_ev_gpu_map(struct trk_thread *t, unsigned scope, unsigned api, unsigned op, int device,
                    uint64_t va, uint64_t size, uint64_t handle, uint64_t offset) TRK_HIDDEN;

/* GPU_MEMINFO: the driver's own figure for this process on one device. */
void trk_ev_gpu_meminfo(struct trk_thread *t, unsigned device, uint64_t used,
                        uint64_t total) TRK_HIDDEN;

/* GPU_ENTER (enter != 0) / GPU_EXIT: one byte, no seq. Host events this
 * thread records in between were made by the GPU driver. */
void trk_ev_gpu_scope(struct trk_thread *t, int enter) TRK_HIDDEN;

#endif /* TRK_GPU_EVENTS_H */
