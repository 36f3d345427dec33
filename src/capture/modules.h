/* SPDX-License-Identifier: MIT
 *
 * modules.h - the loaded-objects records (modules.c).
 */
#ifndef TRK_CAPTURE_MODULES_H
#define TRK_CAPTURE_MODULES_H

#include <stdint.h>

#include "capture/thread.h"

/* ---- Modules (modules.c) ---------------------------------------------------- */

void trk_modules_snapshot(struct trk_thread *t) TRK_HIDDEN;
/* Forgets which objects were written (a fork child starts a new file). */
void trk_modules_forget(void) TRK_HIDDEN;
/* Cheap check for loads the hooks did not see (libc-internal dlopen). */
int trk_modules_changed(struct trk_thread *t) TRK_HIDDEN;
void trk_modules_init(void) TRK_HIDDEN;
/* Address range of libtracker.so's own code, for skipping its frames. */
extern uintptr_t trk_self_lo TRK_HIDDEN, trk_self_hi TRK_HIDDEN;

#endif /* TRK_CAPTURE_MODULES_H */
