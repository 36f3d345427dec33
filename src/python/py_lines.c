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

/* The table's bytes in two multiply lanes, 16 a step. Why hash at every
 * lookup: a code object and its table freed and the next ones allocated at
 * the same addresses (a function compiled again in a loop) have the same
 * extent and first line as often as not, and a cursor kept from the old
 * table steps on in the new one from the old one's line: every line after
 * a difference before it comes out shifted (tests/integration/
 * test_python_lines.py, test_code_reused). Only a lookup the frame cache
 * missed comes here, and the hash costs a fraction of the scan from the
 * start it replaces. */
static uint64_t table_sum(const uint8_t *p, size_t n)
{
    uint64_t a = 0x9E3779B97F4A7C15ull ^ n, c = 0xC2B2AE3D27D4EB4Full;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint64_t x, y;
        memcpy(&x, p + i, 8);
        memcpy(&y, p + i + 8, 8);
        a = (a ^ x) * 0xFF51AFD7ED558CCDull;
        c = (c ^ y) * 0xC4CEB9FE1A85EC53ull;
    }
    for (; i < n; i++)
        a = (a ^ p[i]) * 0xFF51AFD7ED558CCDull;
    return a ^ (c >> 29) ^ (c * 0x9E3779B97F4A7C15ull);
}

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
    uint64_t sum = table_sum(start, (size_t)(limit - start));
    /* Keyed by the objects' addresses, the table's extent, bytes and first
     * line: a code object and table freed and others allocated at the same
     * addresses (table_sum) must not find the old cursor, and the cursor
     * only ever reads inside the table it was set on. */
    if (e->code != code || e->linetable != lt || r->opaque.limit != limit ||
        e->firstlineno != first || e->sum != sum) {
        r->opaque.lo_next = start;
        r->opaque.limit = limit;
        r->ar_start = -1;
        r->ar_end = 0;
        r->opaque.computed_line = first;
        r->ar_line = -1;
        e->code = code;
        e->linetable = lt;
        e->firstlineno = first;
        e->sum = sum;
    }
    int line = step(lasti, r);
    if (line < 0 && (r->ar_end <= lasti || r->ar_start > lasti)) {
        /* Ran off the table (an offset it does not cover): start over next
         * time rather than keep a cursor at the end. */
        e->code = NULL;
    }
    return line;
}
