/* SPDX-License-Identifier: MIT
 *
 * py_capi.h - the slice of CPython's C API and object layout that src/python
 * uses, found at run time (dlsym) instead of through Python.h, so one
 * libtracker.so serves every CPython 3.8-3.13.
 *
 * Layouts are per minor version (x86-64, release builds, not free-threaded),
 * measured with offsetof() against each version's own headers; py_runtime.c
 * checks the chosen table against the live interpreter before any frame is
 * read, and turns Python frames off rather than trust a mismatch.
 */
#ifndef TRK_PY_CAPI_H
#define TRK_PY_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "python/python.h"

typedef struct trk_pyobj PyObject; /* opaque: only pointers and offsets */
typedef PyObject *(*trk_pycfunc)(PyObject *self, PyObject *args);

/* struct PyMethodDef and PyMemAllocatorEx: unchanged since 3.5. */
struct trk_py_methoddef {
    const char *name;
    trk_pycfunc meth;
    int flags;
    const char *doc;
};
#define TRK_METH_VARARGS 0x0001
#define TRK_METH_NOARGS  0x0004
#define TRK_METH_O       0x0008

struct trk_py_memalloc {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr);
};
#define TRK_PYMEM_DOMAIN_RAW 0
#define TRK_PYMEM_DOMAIN_MEM 1
#define TRK_PYMEM_DOMAIN_OBJ 2

/* How frames are chained, by minor version. */
enum trk_py_style {
    TRK_PYS_FRAMEOBJ = 1, /* 3.8-3.10: PyFrameObject f_back chain from tstate->frame */
    TRK_PYS_311 = 2,      /* _PyInterpreterFrame via tstate->cframe->current_frame, is_entry */
    TRK_PYS_312 = 3,      /* same, entry frames follow FRAME_OWNED_BY_CSTACK shims */
    TRK_PYS_313 = 4,      /* tstate->current_frame; f_executable may be a non-code */
};

struct trk_py_layout {
    int minor;
    int style;
    int ts_frame;     /* tstate: frame (3.8-3.10), cframe (3.11-3.12), current_frame (3.13) */
    int cf_current;   /* _PyCFrame.current_frame (3.11-3.12) */
    int f_back;       /* PyFrameObject (3.8-3.10) / _PyInterpreterFrame.previous */
    int f_code;       /* PyFrameObject.f_code / _PyInterpreterFrame.f_code|f_executable */
    int f_lasti;      /* PyFrameObject.f_lasti (int) / prev_instr|instr_ptr (pointer) */
    int lasti_units;  /* 3.10: f_lasti counts 2-byte code units */
    int f_owner;      /* _PyInterpreterFrame.owner (char), -1 before 3.11 */
    int f_is_entry;   /* 3.11 _PyInterpreterFrame.is_entry (bool), else -1 */
    int owner_cstack; /* FRAME_OWNED_BY_CSTACK (3.12+), else -1 */
    int co_filename, co_name, co_qualname, co_firstlineno, co_linetable;
    int co_code;     /* 3.11+: first code unit (also PyCode_Type.tp_basicsize) */
    int uni_ascii;   /* sizeof(PyASCIIObject): data of a compact ASCII string */
    int uni_compact; /* sizeof(PyCompactUnicodeObject): data of other compact strings */
};

/* The functions used; resolved all at once, all present or Python support
 * stays off. */
struct trk_py_api {
    int (*IsInitialized)(void);
    void *(*GILState_GetThisThreadState)(void);
    int (*Code_Addr2Line)(PyObject *code, int byte_offset);
    /* _PyCode_CheckLineNumber (3.10+; NULL when absent): moves a
     * PyCodeAddressRange to an offset and returns its line (py_lines.c). */
    int (*Code_CheckLineNumber)(int byte_offset, void *range);
    PyObject *Code_Type;
    int (*Sys_AddAuditHook)(int (*hook)(const char *, PyObject *, void *), void *);
    void (*Mem_GetAllocator)(int domain, struct trk_py_memalloc *);
    void (*Mem_SetAllocator)(int domain, struct trk_py_memalloc *);
    PyObject *(*Eval_GetFrame)(void);
    PyObject *(*Frame_GetCode)(PyObject *); /* 3.9+, NULL on 3.8 */
    int (*GC_Disable)(void);                /* 3.10+, NULL before */
    int (*GC_Enable)(void);
    PyObject *(*Import_ImportModule)(const char *);
    PyObject *(*Import_GetModuleDict)(void);
    PyObject *(*Object_GetAttrString)(PyObject *, const char *);
    PyObject *(*Object_GetAttr)(PyObject *, PyObject *);
    int (*Object_SetAttr)(PyObject *, PyObject *, PyObject *);
    PyObject *(*CallIter_New)(PyObject *, PyObject *);
    PyObject *(*Unicode_InternFromString)(const char *);
    int (*Object_SetAttrString)(PyObject *, const char *, PyObject *);
    PyObject *(*Object_Call)(PyObject *, PyObject *, PyObject *);
    PyObject *(*Object_CallFunctionObjArgs)(PyObject *, ...);
    PyObject *(*CFunction_NewEx)(struct trk_py_methoddef *, PyObject *, PyObject *);
    PyObject *(*Descr_NewMethod)(PyObject *type, struct trk_py_methoddef *);
    PyObject *(*Dict_GetItemString)(PyObject *, const char *);
    PyObject *(*Tuple_GetItem)(PyObject *, ptrdiff_t);
    void (*Err_Fetch)(PyObject **, PyObject **, PyObject **);
    void (*Err_Restore)(PyObject *, PyObject *, PyObject *);
    void (*Err_Clear)(void);
    void (*IncRef)(PyObject *);
    void (*DecRef)(PyObject *);
    PyObject *None;
    void *eval_lo, *eval_hi; /* _PyEval_EvalFrameDefault's code */
};

extern struct trk_py_api trk_pyapi TRK_HIDDEN;
extern struct trk_py_layout trk_pylay TRK_HIDDEN;
extern uint64_t trk_py_version TRK_HIDDEN; /* PY_VERSION_HEX */

/* Chooses the layout for a minor version; 0 when unsupported. */
int trk_py_layout_for(int minor, struct trk_py_layout *out) TRK_HIDDEN;

/* UTF-8 of a str object read straight from its memory (compact strings
 * only), no allocation and no GIL needed. Returns the bytes written (at most
 * cap), 0 when the object is not a string we can read. */
size_t trk_py_str(const PyObject *s, char *out, size_t cap) TRK_HIDDEN;

/* Python's per-thread block (py_stack.c): mapped on a thread's first
 * Python stack, so only in a Python process, and reached through Python's
 * own TLS pointer; kept with the thread's capture state (its
 * provider_block), so that it is recycled with it. */
#define TRK_PY_CACHE 512
/* (code object, instruction offset) -> the STACK value that stands for it. */
struct trk_py_cache_ent {
    const void *code;
    const void *linetable; /* tells a reused code object address from the old one */
    int64_t lasti;
    uint64_t value;
};
/* What one level of the previous walk read: when the frame at that level
 * is the same frame at the same instruction of the same code (and line
 * table), its STACK value is the one in pyv, with no lookup. */
struct trk_py_level {
    const void *frame;
    const void *code;
    const void *linetable;
    uintptr_t at; /* the raw instruction pointer / f_lasti read */
    uint64_t sh;  /* py_stack.c: hash of this level and all outside it */
};

/* A code object's line cursor (py_lines.c): a PyCodeAddressRange left
 * where its last lookup put it. */
#define TRK_PY_LINES       256
#define TRK_PY_RANGE_BYTES 40
struct trk_py_line_ent {
    const void *code;
    const void *linetable;
    uint64_t range[TRK_PY_RANGE_BYTES / 8];
    uint64_t sum;        /* the table's bytes hashed: the key's last part */
    uint64_t gen;        /* code objects freed when sum was last checked (py_lines.c) */
    int32_t firstlineno; /* with the table's length, part of the key */
};

/* A hybrid stack already interned (py_stack.c): the hash of the native
 * and Python frames it was merged from -> its id, while the capture's stack
 * cache epoch is the one recorded. */
#define TRK_PY_MEMO 256
struct trk_py_memo_ent {
    uint64_t hash;
    uint32_t id;
    uint16_t cache_epoch;
};

struct trk_py_thread {
    uint32_t epoch; /* cache and memo are valid while this equals the global epoch */
    struct trk_py_cache_ent cache[TRK_PY_CACHE];
    struct trk_py_memo_ent memo[TRK_PY_MEMO];
    struct trk_py_line_ent lines[TRK_PY_LINES];
    /* The walk's frames, innermost first, and the merged hybrid stack. */
    uint64_t pyv[TRK_DEPTH_MAX];
    uint8_t pyentry[TRK_DEPTH_MAX];
    uintptr_t merged[2 * TRK_DEPTH_MAX + 32];
    /* The previous walk (py_stack.c): levels[0..last_n) are valid; when a
     * walk matches all of them, the Python-only stack is last_id again
     * (while the capture's stack cache epoch is still last_cache_epoch). */
    struct trk_py_level levels[TRK_DEPTH_MAX];
    int last_n;
    uint32_t last_id;
    uint16_t last_cache_epoch;
    uint8_t last_same; /* set by trk_py_walk: every level matched */
    int last_hi;       /* levels[0..last_hi] changed: their sh is stale */
};

/* py_stack.c: the calling thread's frames, innermost first, into b->pyv
 * (STACK values) and b->pyentry; returns the count. */
int trk_py_walk(struct trk_thread *t, struct trk_py_thread *b, int max) TRK_HIDDEN;
/* The frame pointer chain's head for the thread state tstate (NULL when no
 * Python code runs on it). */
const void *trk_py_top_frame(const void *tstate) TRK_HIDDEN;
void trk_py_codes_reset(void) TRK_HIDDEN;

/* py_lines.c: PyCode_Addr2Line(code, lasti) for lasti >= 0, through the
 * thread's cursor for that code object. */
int trk_py_line(struct trk_py_thread *b, const PyObject *code, int lasti) TRK_HIDDEN;
/* py_lines.c: counts code objects freed (wraps PyCode_Type's tp_dealloc). */
void trk_py_lines_install(void) TRK_HIDDEN;

/* py_alloc.c */
void trk_py_alloc_install(void) TRK_HIDDEN;
/* 1 while py_alloc.c's wrappers take an object's stack (py_stack.c walks
 * the native frames only down to the evaluation loop then). */
extern __thread int trk_py_obj_event TRK_TLS TRK_HIDDEN;

/* py_runtime.c: capture-side records. */
void trk_py_emit_info(struct trk_thread *t) TRK_HIDDEN;

#endif /* TRK_PY_CAPI_H */
