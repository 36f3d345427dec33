/* SPDX-License-Identifier: MIT
 *
 * eh_trim.h - giving back the unwind tables' pages (eh_trim.c).
 */
#ifndef TRK_CAPTURE_EH_TRIM_H
#define TRK_CAPTURE_EH_TRIM_H

#include <stdint.h>

#include "capture/thread.h"

/* How often the sampler gives them back: rarely enough that the pages the
 * rule cache's misses read again cost nothing measurable, often enough
 * that the peak holds about one period's worth. */
#define TRK_EH_TRIM_PERIOD_NS 500000000ull

/* Every TRK_EH_TRIM_PERIOD_NS (the sampler thread's tick, t its state):
 * unmaps the pages of every loaded object's unwind tables from this
 * process (they stay in the page cache). Takes the loader's lock
 * (dl_iterate_phdr) as t's loader section: never from a hook or at exit. */
void trk_eh_trim_tick(struct trk_thread *t) TRK_HIDDEN;

#endif /* TRK_CAPTURE_EH_TRIM_H */
