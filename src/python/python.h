/* SPDX-License-Identifier: MIT
 *
 * python.h - Python support inside the traced process: what the capture
 * engine and the preload call. Owns: finding a CPython in the process (any
 * 3.8-3.13, found at run time, never built against), reading the calling
 * thread's Python frames for each allocation, imports, the script-end mark
 * and pymalloc hooks. Must not: be needed by a process without Python (every
 * entry point is a cheap no-op there), allocate on the per-event path, or
 * take the GIL from an allocation hook.
 */
#ifndef TRK_PYTHON_H
#define TRK_PYTHON_H

#include <stdint.h>

#include "capture/capture.h"

/* ---- Settings (TRACKER_PYTHON*, read by trk_py_config_load) ---------------- */

/* TRACKER_PYTHON values. */
#define TRK_PY_OFF    0 /* native stacks only, even in a Python process */
#define TRK_PY_ONLY   1 /* Python frames only (no native unwinding while Python runs) */
#define TRK_PY_HYBRID 2 /* Python frames in place of the eval loop's native frames */

struct trk_py_config {
    int mode;       /* TRK_PY_*: Python frames in stacks */
    int allocators; /* record pymalloc's allocations too */
};
extern struct trk_py_config trk_py_cfg TRK_HIDDEN;

/* Reads the settings from the environment; the preload constructor calls it
 * right after the capture engine's (trk_config_load). */
void trk_py_config_load(void) TRK_HIDDEN;

/* Builds the stack of the current allocation when the calling thread runs
 * Python code: returns 1 with *id set, or 0 to let the caller take a plain
 * native stack (no Python frames on this thread). Installed as the capture
 * engine's trk_stack_provider once the interpreter's frame layout has been
 * checked, removed when the script has finished (teardown gets native
 * stacks: thread states die under it). */
int trk_py_stack(struct trk_thread *t, uint32_t *id) TRK_HIDDEN;

/* Preload constructor: looks for CPython's C API among the loaded objects;
 * when present, installs the audit hook (which finishes the set-up once the
 * interpreter runs) and, with --python-allocators, pymalloc hooks. */
void trk_py_init(void) TRK_HIDDEN;

/* After a dlopen: an embedding program may load libpython late. */
void trk_py_after_dlopen(void) TRK_HIDDEN;

/* Fork child with a capture of its own: code ids start over and the PY_INFO
 * record is written again. t is the forking thread (may be NULL). */
void trk_py_fork_child(struct trk_thread *t) TRK_HIDDEN;

#endif /* TRK_PYTHON_H */
