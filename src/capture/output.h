/* SPDX-License-Identifier: MIT
 *
 * output.h - the capture file (output.c) and the writer and sampler
 * threads (writer.c).
 */
#ifndef TRK_CAPTURE_OUTPUT_H
#define TRK_CAPTURE_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "prim/base.h"

/* ---- Output and writer (output.c, writer.c) ------------------------------------ */

int trk_output_open(int is_fork_child) TRK_HIDDEN;
int trk_output_fd(void) TRK_HIDDEN;
/* Whether this image is a fork child whose capture inherits its parent's
 * heap (the FORK TLV): blocks its own events do not show. */
int trk_output_inherits(void) TRK_HIDDEN;
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
/* The writer's next wait, in flush periods, after a cycle of `raw` bytes
 * that followed a wait of `periods` (writer.c). */
long trk_writer_next_wait(long periods, uint64_t raw) TRK_HIDDEN;
void trk_writer_fork_prepare(void) TRK_HIDDEN;
void trk_writer_fork_parent(void) TRK_HIDDEN;
void trk_writer_fork_child(void) TRK_HIDDEN;
/* Stops tracking after an internal failure, saying why once on stderr. */
void trk_fail(const char *what, int err) TRK_HIDDEN;

#endif /* TRK_CAPTURE_OUTPUT_H */
