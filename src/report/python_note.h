/* SPDX-License-Identifier: MIT
 *
 * python_note.h - what a heap-only report of a Python capture leaves out:
 * pymalloc's arenas (python_note.c).
 */
#ifndef TRK_PYTHON_NOTE_H
#define TRK_PYTHON_NOTE_H

#include <stdint.h>
#include <stdio.h>

#include "report/report.h"
#include "report/report_json.h"

/* The largest mapping peak of the set's Python captures whose objects were
 * left to pymalloc's arenas (not --python-allocators), when the report
 * shows the heap only (no --mmap, no --gpu); 0 otherwise. */
uint64_t trk_arena_bytes_not_shown(const struct trk_report_set *s, const struct trk_report_opts *o);
/* One note line saying where those objects are and how to see them. */
void trk_rprint_arenas_note(FILE *f, const struct trk_report_set *s,
                            const struct trk_report_opts *o);
/* "python_arenas": {"mapped_peak_bytes", "shown": false, "how"} when any. */
void trk_rjson_arenas_note(struct trk_rjson *j, const struct trk_report_set *s,
                           const struct trk_report_opts *o);

#endif /* TRK_PYTHON_NOTE_H */
