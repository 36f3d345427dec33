/* SPDX-License-Identifier: MIT
 *
 * python_note.c - in a default Python run most object memory sits in
 * pymalloc's 1 MiB arenas (anonymous mmap), so a heap-only summary or tree
 * shows a fraction of what the program held (2.3 MiB of heap beside 23 MiB
 * of arenas for a list of 200,000 strings). The reports say so, with the
 * figure, and how to see it: --mmap puts the arenas under the Python lines
 * that grew them; `tracker run --python-allocators` records each object.
 * The figure is the arenas' own (trk_stats.py_arena_peak_bytes), never
 * every anonymous mapping's: a CUDA process maps gigabytes of its own.
 * Must not: change what a report counts.
 */
#include "report/python_note.h"
#include "report/report_internal.h"

uint64_t trk_arena_bytes_not_shown(const struct trk_report_set *s, const struct trk_report_opts *o)
{
    if (o->mmap || o->gpu)
        return 0;
    uint64_t most = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct trk_stats *t = &s->v[i].prof.totals;
        if (!t->python || !(t->python_flags & TRK_PYF_PYMALLOC) ||
            (t->python_flags & TRK_PYF_ALLOCATORS))
            continue;
        uint64_t m = t->py_arena_peak_bytes;
        most = m > most ? m : most;
    }
    return most;
}

void trk_rprint_arenas_note(FILE *f, const struct trk_report_set *s,
                            const struct trk_report_opts *o)
{
    char a[32];
    uint64_t m = trk_arena_bytes_not_shown(s, o);
    if (!m)
        return;
    fprintf(f,
            "note: Python objects are not in this heap view: pymalloc keeps them in arenas "
            "(%s at their peak%s); --mmap counts the arenas under the "
            "Python lines that grew them, `tracker run --python-allocators` records each "
            "object\n",
            trk_rfmt_bytes(m, a, sizeof(a)), s->n > 1 ? " in the largest process" : "");
}

void trk_rjson_arenas_note(struct trk_rjson *j, const struct trk_report_set *s,
                           const struct trk_report_opts *o)
{
    uint64_t m = trk_arena_bytes_not_shown(s, o);
    if (!m)
        return;
    trk_rjson_begin_object(j, "python_arenas_not_shown");
    trk_rjson_u64(j, "mapped_peak_bytes", m);
    trk_rjson_string(j, "how",
                     "--mmap counts pymalloc's arenas; tracker run "
                     "--python-allocators records each object");
    trk_rjson_end_object(j);
}
