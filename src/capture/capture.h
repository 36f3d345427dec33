/* SPDX-License-Identifier: MIT
 *
 * capture.h - the in-process capture engine's whole interface, for
 * convenience: each section is its own header, and a file may include only
 * the ones it uses.
 *
 * Everything declared here runs inside the traced program. Rules for all of
 * src/capture: no malloc (memory comes from raw mmap syscalls), no stdio, no
 * locks on the per-event path, initial-exec TLS only, and every entry point is
 * reached with the thread's re-entry guard set (trk_enter; the contract is
 * src/prim/guard.h) so that whatever libc does underneath us is never
 * recorded or re-entered. src/capture names no layer above it (src/python,
 * src/gpu, src/preload): those register with it (layers.h, stacks.h).
 */
#ifndef TRK_CAPTURE_H
#define TRK_CAPTURE_H

#include "capture/config.h"
#include "capture/events.h"
#include "capture/fds.h"
#include "capture/layers.h"
#include "capture/modules.h"
#include "capture/output.h"
#include "capture/preinit.h"
#include "capture/stacks.h"
#include "capture/thread.h"
#include "prim/base.h"
#include "prim/guard.h"
#include "prim/sys.h"

#endif /* TRK_CAPTURE_H */
