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
#include <stdatomic.h>

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

/* Why the cursor needs more than addresses for a key: a code object and
 * its table freed and the next ones allocated at the same addresses (a
 * function compiled again in a loop) have the same extent and first line
 * as often as not, and a cursor kept from the old table steps on in the
 * new one from the old one's line: every line after a difference before it
 * comes out shifted (tests/integration/test_python_lines.py,
 * test_code_reused). So an entry also holds its table's bytes hashed, and
 * the count of code objects freed when it was last checked: while no code
 * object was freed, none can have taken its address, and the lookup stays
 * a few steps; after one was, the table is hashed again (its length in
 * loads, once per entry and free, where the scan from the start it
 * replaces decoded the table at every lookup). */
static void (*code_dealloc)(PyObject *);
static _Atomic uint64_t code_frees = 1;

static void code_dealloc_counted(PyObject *o)
{
    atomic_fetch_add_explicit(&code_frees, 1, memory_order_relaxed);
    code_dealloc(o);
}

/* PyTypeObject: tp_dealloc after the var head, tp_name, tp_basicsize and
 * tp_itemsize (3.8-3.13). */
#define TP_DEALLOC 48

void trk_py_lines_install(void)
{
    PyObject *ty = trk_pyapi.Code_Type;
    if (!ty || code_dealloc)
        return;
    void (**slot)(PyObject *) = (void (**)(PyObject *))(void *)((char *)ty + TP_DEALLOC);
    if (!*slot || *slot == code_dealloc_counted)
        return;
    code_dealloc = *slot;
    *slot = code_dealloc_counted; /* one aligned store: either is a valid dealloc */
}

/* The table's bytes in two multiply lanes, 16 a step. */
static uint64_t table_sum(const uint8_t *p, size_t n)
{
    uint64_t a = 0x9E3779B97F4A7C15ull ^ n, c = 0xC2B2AE3D27D4EB4Full;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint64_t x, y;
        __builtin_memcpy(&x, p + i, 8); /* -fno-builtin: a call otherwise */
        __builtin_memcpy(&y, p + i + 8, 8);
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
    /* 0 without the counting dealloc: every lookup checks the bytes. */
    uint64_t gen = code_dealloc ? atomic_load_explicit(&code_frees, memory_order_relaxed) : 0;
    /* Keyed by the objects' addresses, the table's extent, bytes and first
     * line (see code_frees), and the cursor only ever reads inside the
     * table it was set on. */
    int same = e->code == code && e->linetable == lt && r->opaque.limit == limit &&
               e->firstlineno == first;
    if (!same || e->gen != gen || !gen) {
        uint64_t sum = table_sum(start, (size_t)(limit - start));
        same = same && e->sum == sum;
        e->sum = sum;
        e->gen = gen;
    }
    /* Stepping back costs more a step than stepping on (CPython finds a
     * range's start by scanning back to the previous entry's first byte), so
     * an offset nearer the table's start than the cursor starts over. */
    if (same && lasti < r->ar_start && lasti < r->ar_start - lasti)
        same = 0;
    if (!same) {
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
