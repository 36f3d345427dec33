/* SPDX-License-Identifier: MIT
 *
 * py_lines.c - the line a code object is at, for a given instruction offset,
 * with a per-thread cursor per code object. Owns: the cursor table of the
 * thread's Python block. Must not: decode a line table itself (CPython's own
 * stepping gives the lines, so they are exactly PyCode_Addr2Line's), allocate,
 * or call into Python beyond _PyCode_CheckLineNumber, which only reads the
 * table.
 *
 * Why: PyCode_Addr2Line scans the line table from its start on every call.
 * A module body runs once, allocating line after line, so each new offset of
 * a long body (import torch executes thousands) cost a scan of everything
 * before it: ~31,000 instructions per lookup on import torch. CPython's
 * _PyCode_CheckLineNumber (exported 3.10-3.13) moves a PyCodeAddressRange
 * forward or back from where it was; keeping the range of the last lookup
 * per code object makes the next lookup a few steps.
 */
#include <string.h>

#include "python/py_capi.h"

/* PyCodeAddressRange (Include/cpython/code.h, 3.10-3.13): ar_start, ar_end,
 * ar_line, then opaque {computed_line, lo_next, limit}. Initialised as
 * _PyLineTable_InitAddressRange does (not exported). */
struct py_range {
    int ar_start;
    int ar_end;
    int ar_line;
    struct {
        int computed_line;
        const uint8_t *lo_next;
        const uint8_t *limit;
    } opaque;
};
_Static_assert(sizeof(struct py_range) == TRK_PY_RANGE_BYTES, "PyCodeAddressRange is 40 bytes");

#define LOAD_PTR(base, off) (*(const void *const *)((const char *)(base) + (off)))
#define LOAD_I32(base, off) (*(const int32_t *)((const char *)(base) + (off)))

/* PyBytesObject: ob_size at 16, ob_sval at 32 (3.8-3.13). */
#define BYTES_SIZE(o) (*(const int64_t *)((const char *)(o) + 16))
#define BYTES_DATA(o) ((const uint8_t *)(o) + 32)

int trk_py_line(struct trk_py_thread *b, const PyObject *code, int lasti)
{
    const void *lt = LOAD_PTR(code, trk_pylay.co_linetable);
    int (*step)(int, void *) = trk_pyapi.Code_CheckLineNumber;
    if (!step || !lt || trk_pylay.minor < 10)
        return trk_pyapi.Code_Addr2Line((PyObject *)code, lasti);
    uintptr_t h = (uintptr_t)code >> 4;
    struct trk_py_line_ent *e = &b->lines[(h ^ (h >> 9)) & (TRK_PY_LINES - 1)];
    struct py_range *r = (struct py_range *)(void *)e->range;
    const uint8_t *start = BYTES_DATA(lt), *limit = start + BYTES_SIZE(lt);
    int32_t first = LOAD_I32(code, trk_pylay.co_firstlineno);
    /* Keyed by the objects' addresses and the table's extent and first
     * line: a code object and table freed and others allocated at the same
     * addresses would have to match all of them, and even then the cursor
     * only ever reads inside the table it was set on. */
    if (e->code != code || e->linetable != lt || r->opaque.limit != limit ||
        e->firstlineno != first) {
        r->opaque.lo_next = start;
        r->opaque.limit = limit;
        r->ar_start = -1;
        r->ar_end = 0;
        r->opaque.computed_line = first;
        r->ar_line = -1;
        e->code = code;
        e->linetable = lt;
        e->firstlineno = first;
    }
    int line = step(lasti, r);
    if (line < 0 && (r->ar_end <= lasti || r->ar_start > lasti)) {
        /* Ran off the table (an offset it does not cover): start over next
         * time rather than keep a cursor at the end. */
        e->code = NULL;
    }
    return line;
}
