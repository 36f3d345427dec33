/* SPDX-License-Identifier: MIT
 *
 * py_runtime.c - finding CPython in the process and setting up what needs
 * the interpreter: the C API lookup, the audit hook, the layout check, the
 * script-end mark (atexit), import begin/end, thread names from threading.
 *
 * Sequence: the preload constructor finds the C API (dlsym) and adds an
 * audit hook, which CPython allows before Py_Initialize. The first audit
 * event after initialisation arrives with the GIL held, from the
 * interpreter's own thread: that is where everything that calls into Python
 * happens, once. Nothing here runs inside an allocation hook. Must not: take
 * the GIL itself, leave a Python exception behind, or keep going on an
 * interpreter whose frame layout did not check out.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "python/py_capi.h"

struct trk_py_api trk_pyapi;
struct trk_py_layout trk_pylay;
uint64_t trk_py_version;

static int installed;   /* audit hook added */
static int setup_state; /* 0: waiting for the interpreter, 1: done (GIL-protected) */
static int in_setup;
static int allocators_on;

static void notice(const char *a, const char *b)
{
    if (!trk_cfg.quiet)
        trk_log(a, b, NULL);
}

/* ---- Records ------------------------------------------------------------------ */

void trk_py_emit_info(struct trk_thread *t)
{
    uint8_t buf[TRK_REC_MAX];
    uint64_t flags = 0;
    if (trk_cfg.python == TRK_PY_HYBRID)
        flags |= TRK_PYF_NATIVE;
    if (allocators_on)
        flags |= TRK_PYF_ALLOCATORS;
    const char *pm = getenv("PYTHONMALLOC");
    if (!pm || strncmp(pm, "malloc", 6) != 0)
        flags |= TRK_PYF_PYMALLOC;
    uint64_t seq = trk_ev_begin(t);
    uint8_t *e = trk_enc_py_info(buf, &t->enc, seq, trk_now_ns(), trk_py_version, flags);
    trk_ev_finish(t, buf, (size_t)(e - buf), seq);
}

static void emit_import(const char *name, size_t len)
{
    static uint8_t buf[TRK_REC_MAX + TRK_PY_STR_MAX]; /* GIL-protected */
    struct trk_thread *t = trk_enter();
    if (!t)
        return;
    uint64_t seq = trk_ev_begin(t);
    uint8_t *e = trk_enc_py_import(buf, &t->enc, seq, trk_now_ns(), name, len);
    trk_ev_finish(t, buf, (size_t)(e - buf), seq);
    trk_leave();
}

static void emit_simple(int tag, uint64_t what)
{
    uint8_t buf[TRK_REC_MAX];
    struct trk_thread *t = trk_enter();
    if (!t)
        return;
    uint64_t seq = trk_ev_begin(t);
    uint8_t *e = tag == TRK_REC_PY_MARK ? trk_enc_py_mark(buf, &t->enc, seq, trk_now_ns(), what)
                                        : trk_enc_py_import_end(buf, &t->enc, seq, trk_now_ns());
    trk_ev_finish(t, buf, (size_t)(e - buf), seq);
    trk_leave();
}

/* ---- Functions the interpreter calls -------------------------------------------- */

static PyObject *none_ref(void)
{
    trk_pyapi.IncRef(trk_pyapi.None);
    return trk_pyapi.None;
}

/* atexit: the script's code is done; what follows is teardown. Its frees
 * are still recorded, its frames no longer read (thread states die). */
static PyObject *at_exit(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    emit_simple(TRK_REC_PY_MARK, TRK_PY_MARK_SCRIPT_END);
    atomic_store(&trk_stack_provider, NULL);
    return none_ref();
}

static struct trk_py_methoddef at_exit_def = {"_tracker_script_end", at_exit, TRK_METH_NOARGS,
                                              NULL};

static PyObject *orig_bootstrap_inner;

/* threading.Thread._bootstrap_inner runs first in every new thread: name the
 * thread for the reports, then carry on. A C method, so that no frame of
 * ours shows in the thread's stacks. */
static PyObject *bootstrap_inner(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *nm = trk_pyapi.Object_GetAttrString(self, "name");
    if (nm) {
        char name[TRK_THREAD_NAME_MAX];
        size_t n = trk_py_str(nm, name, sizeof(name) - 1);
        name[n] = '\0';
        trk_pyapi.DecRef(nm);
        struct trk_thread *t = trk_enter();
        if (t) {
            trk_ev_thread_name(t, t->tid, name);
            trk_leave();
        }
    } else {
        trk_pyapi.Err_Clear();
    }
    return trk_pyapi.Object_CallFunctionObjArgs(orig_bootstrap_inner, self, NULL);
}

static struct trk_py_methoddef bootstrap_inner_def = {"_bootstrap_inner", bootstrap_inner,
                                                      TRK_METH_NOARGS, NULL};

static void patch_threading(PyObject *mod)
{
    if (orig_bootstrap_inner)
        return;
    PyObject *cls = trk_pyapi.Object_GetAttrString(mod, "Thread");
    PyObject *orig = cls ? trk_pyapi.Object_GetAttrString(cls, "_bootstrap_inner") : NULL;
    PyObject *descr = orig ? trk_pyapi.Descr_NewMethod(cls, &bootstrap_inner_def) : NULL;
    if (descr && trk_pyapi.Object_SetAttrString(cls, "_bootstrap_inner", descr) == 0)
        orig_bootstrap_inner = orig; /* keeps the reference */
    else if (orig)
        trk_pyapi.DecRef(orig);
    if (descr)
        trk_pyapi.DecRef(descr);
    if (cls)
        trk_pyapi.DecRef(cls);
    trk_pyapi.Err_Clear();
}

/* importlib._bootstrap._load_unlocked(spec): every module load, however it
 * was asked for (import statement, importlib.import_module, __import__),
 * passes here; the C-level "import" audit event misses the latter two. */
static PyObject *load_unlocked(PyObject *orig, PyObject *args)
{
    static char name[TRK_PY_STR_MAX]; /* GIL-protected; copied into the record at once */
    size_t n = 0;
    PyObject *spec = trk_pyapi.Tuple_GetItem(args, 0);
    PyObject *nm = spec ? trk_pyapi.Object_GetAttrString(spec, "name") : NULL;
    if (nm) {
        n = trk_py_str(nm, name, sizeof(name));
        trk_pyapi.DecRef(nm);
    } else {
        trk_pyapi.Err_Clear();
    }
    emit_import(name, n);
    /* The buffer is reused by the imports this one makes: decide now. */
    int threading = n == 9 && memcmp(name, "threading", 9) == 0;
    PyObject *mod = trk_pyapi.Object_Call(orig, args, NULL);
    emit_simple(TRK_REC_PY_IMPORT_END, 0);
    if (mod && threading) {
        PyObject *et, *ev, *etb;
        trk_pyapi.Err_Fetch(&et, &ev, &etb);
        patch_threading(mod);
        trk_pyapi.Err_Restore(et, ev, etb);
    }
    return mod;
}

static struct trk_py_methoddef load_unlocked_def = {"_load_unlocked", load_unlocked,
                                                    TRK_METH_VARARGS, NULL};

/* ---- The layout check ------------------------------------------------------------ */

static int layout_ok;

static int str_is(const PyObject *s, const char *want)
{
    char buf[64];
    size_t n = trk_py_str(s, buf, sizeof(buf));
    return n == strlen(want) && memcmp(buf, want, n) == 0;
}

/* Called from `_tracker_check()` evaluated as "<string>": our own reading
 * of the frame chain must agree with the interpreter's answer. */
static PyObject *check_layout(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    const struct trk_py_layout *L = &trk_pylay;
    const void *f = trk_py_top_frame(trk_pyapi.GILState_GetThisThreadState());
    PyObject *fo = trk_pyapi.Eval_GetFrame();
    if (!f || !fo)
        return none_ref();
    const PyObject *code = *(const PyObject *const *)((const char *)f + L->f_code);
    int ok;
    if (L->style == TRK_PYS_FRAMEOBJ) {
        ok = (const void *)fo == f;
    } else {
        PyObject *c = trk_pyapi.Frame_GetCode(fo);
        ok = c == code;
        if (c)
            trk_pyapi.DecRef(c);
        /* The first code unit follows the fixed part of the code object. */
        int64_t basic = *(const int64_t *)((const char *)trk_pyapi.Code_Type + 32);
        ok = ok && basic == L->co_code;
    }
    ok = ok && code && *(const void *const *)((const char *)code + 8) == trk_pyapi.Code_Type;
    ok = ok && str_is(*(const PyObject *const *)((const char *)code + L->co_name), "<module>");
    ok = ok && str_is(*(const PyObject *const *)((const char *)code + L->co_filename), "<string>");
    layout_ok = ok;
    return none_ref();
}

static struct trk_py_methoddef check_def = {"_tracker_check", check_layout, TRK_METH_NOARGS, NULL};

static void run_check(void)
{
    PyObject *g = trk_pyapi.Dict_New();
    PyObject *fn = trk_pyapi.CFunction_NewEx(&check_def, NULL, NULL);
    if (g && fn && trk_pyapi.Dict_SetItemString(g, "_tracker_check", fn) == 0 &&
        trk_pyapi.Dict_SetItemString(g, "__builtins__", trk_pyapi.Eval_GetBuiltins()) == 0) {
        PyObject *r = trk_pyapi.Run_StringFlags("_tracker_check()", TRK_PY_EVAL_INPUT, g, g, NULL);
        if (r)
            trk_pyapi.DecRef(r);
    }
    if (fn)
        trk_pyapi.DecRef(fn);
    if (g)
        trk_pyapi.DecRef(g);
    trk_pyapi.Err_Clear();
}

/* ---- Set-up, on the first audit event of a running interpreter -------------------- */

static void register_atexit(void)
{
    PyObject *m = trk_pyapi.Import_ImportModule("atexit");
    PyObject *reg = m ? trk_pyapi.Object_GetAttrString(m, "register") : NULL;
    PyObject *fn = reg ? trk_pyapi.CFunction_NewEx(&at_exit_def, NULL, NULL) : NULL;
    PyObject *r = fn ? trk_pyapi.Object_CallFunctionObjArgs(reg, fn, NULL) : NULL;
    PyObject *objs[] = {r, fn, reg, m};
    for (size_t i = 0; i < 4; i++)
        if (objs[i])
            trk_pyapi.DecRef(objs[i]);
    trk_pyapi.Err_Clear();
}

static void wrap_imports(void)
{
    PyObject *mods = trk_pyapi.Import_GetModuleDict();
    PyObject *bs = mods ? trk_pyapi.Dict_GetItemString(mods, "_frozen_importlib") : NULL;
    PyObject *orig = bs ? trk_pyapi.Object_GetAttrString(bs, "_load_unlocked") : NULL;
    /* The wrapper owns orig as its self; it lives as long as the process. */
    PyObject *w = orig ? trk_pyapi.CFunction_NewEx(&load_unlocked_def, orig, NULL) : NULL;
    if (w) {
        trk_pyapi.Object_SetAttrString(bs, "_load_unlocked", w);
        trk_pyapi.DecRef(w);
    }
    if (orig)
        trk_pyapi.DecRef(orig);
    PyObject *th = mods ? trk_pyapi.Dict_GetItemString(mods, "threading") : NULL;
    if (th)
        patch_threading(th);
    trk_pyapi.Err_Clear();
}

static void setup(void)
{
    PyObject *et, *ev, *etb;
    trk_pyapi.Err_Fetch(&et, &ev, &etb);
    if (trk_cfg.python != TRK_PY_OFF) {
        run_check();
        if (layout_ok)
            atomic_store(&trk_stack_provider, trk_py_stack);
        else
            notice("Python frame layout not recognised; recording native stacks only", NULL);
    }
    register_atexit();
    wrap_imports();
    trk_pyapi.Err_Restore(et, ev, etb);
    struct trk_thread *t = trk_enter();
    if (t) {
        trk_py_emit_info(t);
        trk_leave();
    }
}

static int audit_hook(const char *event, PyObject *args, void *ud)
{
    (void)event;
    (void)args;
    (void)ud;
    if (TRK_LIKELY(setup_state) || in_setup || !trk_pyapi.IsInitialized())
        return 0;
    if (!atomic_load(&trk_active) || trk_tl_guard)
        return 0;
    in_setup = 1;
    setup();
    in_setup = 0;
    setup_state = 1;
    return 0;
}

/* ---- Finding the C API ----------------------------------------------------------- */

/* A failed dlsym leaves an error message that libc allocated under our
 * guard and frees on the program's next dl* call: an unmatched free in
 * every non-Python capture. Reading the message twice frees it here. */
static void *sym(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p) {
        dlerror();
        dlerror();
    }
    return p;
}

#define NEED(field, name)                                                                          \
    do {                                                                                           \
        *(void **)&a.field = sym(name);                                                            \
        if (!a.field)                                                                              \
            return 0;                                                                              \
    } while (0)

static int resolve_api(void)
{
    struct trk_py_api a;
    memset(&a, 0, sizeof(a));
    NEED(Sys_AddAuditHook, "PySys_AddAuditHook");
    NEED(IsInitialized, "Py_IsInitialized");
    NEED(GILState_GetThisThreadState, "PyGILState_GetThisThreadState");
    NEED(Code_Addr2Line, "PyCode_Addr2Line");
    NEED(Code_Type, "PyCode_Type");
    NEED(Mem_GetAllocator, "PyMem_GetAllocator");
    NEED(Mem_SetAllocator, "PyMem_SetAllocator");
    NEED(Eval_GetFrame, "PyEval_GetFrame");
    NEED(Eval_GetBuiltins, "PyEval_GetBuiltins");
    NEED(Import_ImportModule, "PyImport_ImportModule");
    NEED(Import_GetModuleDict, "PyImport_GetModuleDict");
    NEED(Object_GetAttrString, "PyObject_GetAttrString");
    NEED(Object_SetAttrString, "PyObject_SetAttrString");
    NEED(Object_Call, "PyObject_Call");
    NEED(Object_CallFunctionObjArgs, "PyObject_CallFunctionObjArgs");
    NEED(CFunction_NewEx, "PyCFunction_NewEx");
    NEED(Descr_NewMethod, "PyDescr_NewMethod");
    NEED(Dict_New, "PyDict_New");
    NEED(Dict_GetItemString, "PyDict_GetItemString");
    NEED(Dict_SetItemString, "PyDict_SetItemString");
    NEED(Tuple_GetItem, "PyTuple_GetItem");
    NEED(Run_StringFlags, "PyRun_StringFlags");
    NEED(Err_Fetch, "PyErr_Fetch");
    NEED(Err_Restore, "PyErr_Restore");
    NEED(Err_Clear, "PyErr_Clear");
    NEED(IncRef, "Py_IncRef");
    NEED(DecRef, "Py_DecRef");
    NEED(None, "_Py_NoneStruct");
    *(void **)&a.Frame_GetCode = sym("PyFrame_GetCode");

    void *eval = sym("_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *es = NULL;
    if (eval && dladdr1(eval, &info, (void **)&es, RTLD_DL_SYMENT) && es && es->st_size) {
        a.eval_lo = eval;
        a.eval_hi = (char *)eval + es->st_size;
    }
    trk_pyapi = a;
    return 1;
}

/* PY_VERSION_HEX: the Py_Version constant (3.11+) or Py_GetVersion()'s
 * leading "3.10.13". */
static uint64_t find_version(void)
{
    const unsigned long *pv = sym("Py_Version");
    if (pv)
        return *pv;
    const char *(*get)(void) = (const char *(*)(void))sym("Py_GetVersion");
    if (!get)
        return 0;
    const char *s = get();
    unsigned v[3] = {0, 0, 0};
    for (int i = 0; i < 3 && *s >= '0' && *s <= '9'; i++) {
        while (*s >= '0' && *s <= '9')
            v[i] = v[i] * 10 + (unsigned)(*s++ - '0');
        if (*s == '.')
            s++;
    }
    return ((uint64_t)v[0] << 24) | ((uint64_t)v[1] << 16) | ((uint64_t)v[2] << 8) | 0xF0;
}

void trk_py_init(void)
{
    if (installed || (trk_cfg.python == TRK_PY_OFF && !trk_cfg.py_allocators))
        return;
    if (!sym("PySys_AddAuditHook") || !resolve_api())
        return;
    trk_py_version = find_version();
    int major = (int)(trk_py_version >> 24), minor = (int)((trk_py_version >> 16) & 0xFF);
    if (major != 3 || !trk_py_layout_for(minor, &trk_pylay)) {
        notice("this Python version is not supported; recording native stacks only", NULL);
        return;
    }
    installed = 1;
    trk_py_codes_reset();
    if (trk_cfg.py_allocators) {
        trk_py_alloc_install();
        allocators_on = 1;
    }
    /* The hook's list node is the program's memory (freed at its exit):
     * record it, or that free would be unmatched in every capture. */
    int g = trk_tl_guard;
    trk_tl_guard = 0;
    trk_pyapi.Sys_AddAuditHook(audit_hook, NULL);
    trk_tl_guard = g;
}

void trk_py_after_dlopen(void)
{
    if (installed)
        return;
    int g = trk_tl_guard;
    trk_tl_guard = TRK_GUARD_INTERNAL;
    trk_py_init();
    trk_tl_guard = g;
}

void trk_py_fork_child(struct trk_thread *t)
{
    if (!installed)
        return;
    trk_py_codes_reset();
    if (setup_state && t)
        trk_py_emit_info(t);
}
