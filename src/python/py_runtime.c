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
 * happens, once; then the hook takes itself out of the interpreter's list
 * (see "The audit hook's list entry"). Nothing here runs inside an
 * allocation hook. Must not: take the GIL itself, leave a Python exception
 * behind, keep going on an interpreter whose frame layout did not check out,
 * or record its own work as the program's (it runs under the internal
 * guard, and does as little as it can: the program's allocator state is
 * shared).
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "common/env_options.h"
#include "python/py_capi.h"

struct trk_py_api trk_pyapi;
struct trk_py_layout trk_pylay;
uint64_t trk_py_version;

static int installed; /* audit hook added */
static int audit_hook(const char *event, PyObject *args, void *ud);
static int setup_state; /* 0: waiting for the interpreter, 1: done (GIL-protected) */
static int in_setup;
static int allocators_on;

static void notice(const char *a, const char *b)
{
    if (!trk_cfg.quiet)
        trk_log(a, b, NULL);
}

/* ---- The audit hook's list entry ------------------------------------------------ */

/* PySys_AddAuditHook allocates the hook's entry {next, hook, userData} with
 * PyMem_RawMalloc, and Py_Finalize frees it with PyMem_RawFree. We add the
 * hook in the preload constructor, before the interpreter sets up its
 * allocators: with -X dev or PYTHONMALLOC=debug the free goes through the
 * debug hooks, which abort on a block they did not allocate ("bad ID").
 * Once set-up is done the hook has nothing left to do, and an interpreter
 * with a hook builds the arguments of every audit event (a copy of every
 * .pyc it unmarshals): so set-up unlinks the entry from the runtime's list,
 * and it is freed with the allocator that allocated it. The entry is
 * allocated under the internal guard: it is the tracker's, not the
 * program's. */
static struct trk_py_memalloc entry_alloc; /* the raw allocator at registration */
static void *entry;                        /* our entry, while in the list */
static void **entry_slot;                  /* the runtime's list head, pointing at it */
static void *entry_garbage;                /* unlinked, to free outside the hook */

static void *entry_malloc(void *ctx, size_t n)
{
    (void)ctx;
    void *p = entry_alloc.malloc(entry_alloc.ctx, n);
    if (!entry)
        entry = p;
    return p;
}
static void *entry_calloc(void *ctx, size_t n, size_t sz)
{
    (void)ctx;
    return entry_alloc.calloc(entry_alloc.ctx, n, sz);
}
static void *entry_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    return entry_alloc.realloc(entry_alloc.ctx, p, n);
}
static void entry_free(void *ctx, void *p)
{
    (void)ctx;
    entry_alloc.free(entry_alloc.ctx, p);
}

/* The list head is a field of _PyRuntime whose offset changes between
 * versions: the one pointer-sized slot that holds our entry, right after we
 * added the first hook, is it. Not found (another hook came first): the
 * entry stays in the list, as CPython intends. */
static void add_hook(void)
{
    struct trk_py_memalloc w = {NULL, entry_malloc, entry_calloc, entry_realloc, entry_free};
    trk_pyapi.Mem_GetAllocator(TRK_PYMEM_DOMAIN_RAW, &entry_alloc);
    trk_pyapi.Mem_SetAllocator(TRK_PYMEM_DOMAIN_RAW, &w);
    int rc = trk_pyapi.Sys_AddAuditHook(audit_hook, NULL);
    trk_pyapi.Mem_SetAllocator(TRK_PYMEM_DOMAIN_RAW, &entry_alloc);
    void **e = entry;
    void *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
    Dl_info info;
    const ElfW(Sym) *es = NULL;
    if (rc != 0 || !e || e[1] != (void *)audit_hook || !rt || ((uintptr_t)rt & 7) ||
        !dladdr1(rt, &info, (void **)&es, RTLD_DL_SYMENT) || !es) {
        entry = NULL;
        return;
    }
    void **s = rt, **found = NULL;
    for (size_t i = 0; i < es->st_size / sizeof(void *); i++) {
        if (s[i] == e) {
            if (found) {
                entry = NULL;
                return;
            }
            found = &s[i];
        }
    }
    entry_slot = found;
    if (!found)
        entry = NULL;
}

/* GIL held, from within the hook: the caller goes on to read the entry's
 * next, so it is freed later (free_entry). */
static void unlink_entry(void)
{
    void **e = entry;
    if (!e || *entry_slot != e || e[1] != (void *)audit_hook)
        return;
    *entry_slot = e[0];
    entry = NULL;
    entry_garbage = e;
}

static void free_entry(void)
{
    void *e = entry_garbage;
    if (!e)
        return;
    entry_garbage = NULL;
    int g = trk_guard_enter_internal();
    entry_alloc.free(entry_alloc.ctx, e);
    trk_guard_leave(g);
}

/* ---- Our own work ---------------------------------------------------------------- */

/* What we allocate in the interpreter is the tracker's, not the program's:
 * those calls run under the internal guard (nothing recorded), with the
 * collector off so that none of the program's garbage is freed unseen
 * meanwhile, and what we keep is never dropped before we free it ourselves
 * (the program never frees what it never saw allocated). Attribute lookups
 * and assignments run outside the guard, by interned names, allocating
 * nothing: the type attribute cache they go through drops the names of
 * earlier lookups, the program's strings, whose frees must be recorded.
 * Without PyGC_Disable (3.8, 3.9) everything is recorded. */
struct own {
    int guard, gc;
};

static struct own own_begin(void)
{
    struct own o = {trk_guard_get(), -1};
    if (!trk_pyapi.GC_Disable)
        return o;
    o.gc = trk_pyapi.GC_Disable();
    trk_guard_enter_internal(); /* o.guard, read above, is what own_end restores */
    return o;
}

static void own_end(struct own o)
{
    if (o.gc < 0)
        return;
    trk_guard_leave(o.guard);
    if (o.gc)
        trk_pyapi.GC_Enable();
}

static PyObject *own_name(const char *s)
{
    struct own o = own_begin();
    PyObject *n = trk_pyapi.Unicode_InternFromString(s);
    own_end(o);
    return n;
}

static PyObject *own_cfunc(struct trk_py_methoddef *def, PyObject *self)
{
    struct own o = own_begin();
    PyObject *f = trk_pyapi.CFunction_NewEx(def, self, NULL);
    own_end(o);
    return f;
}

/* f(a[, b, c]) for a C function or a Python function that looks nothing up. */
static PyObject *own_call(PyObject *f, PyObject *a, PyObject *b, PyObject *c)
{
    struct own o = own_begin();
    PyObject *r = trk_pyapi.Object_CallFunctionObjArgs(f, a, b, c, NULL);
    own_end(o);
    return r;
}

static void own_decref(PyObject *x)
{
    if (!x)
        return;
    struct own o = own_begin();
    trk_pyapi.DecRef(x);
    own_end(o);
}

/* Our names are identifiers of loaded code, interned already. */
static PyObject *attr(PyObject *o, const char *name)
{
    PyObject *n = own_name(name);
    PyObject *v = n ? trk_pyapi.Object_GetAttr(o, n) : NULL;
    own_decref(n);
    return v;
}

static int set_attr(PyObject *o, const char *name, PyObject *v)
{
    PyObject *n = own_name(name);
    int rc = n ? trk_pyapi.Object_SetAttr(o, n, v) : -1;
    own_decref(n);
    return rc;
}

/* ---- Records ------------------------------------------------------------------ */

void trk_py_emit_info(struct trk_thread *t)
{
    uint8_t buf[TRK_REC_MAX];
    uint64_t flags = 0;
    if (trk_py_cfg.mode == TRK_PY_HYBRID)
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
static void unwrap(void);

static PyObject *at_exit(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    emit_simple(TRK_REC_PY_MARK, TRK_PY_MARK_SCRIPT_END);
    atomic_store(&trk_stack_provider, NULL);
    free_entry();
    unwrap();
    return none_ref();
}

static struct trk_py_methoddef at_exit_def = {"_tracker_script_end", at_exit, TRK_METH_NOARGS,
                                              NULL};

/* The import wrapper's: "name" interned, and what unwrap() puts back. */
static PyObject *imp_module, *imp_orig, *imp_wrapper, *imp_name;

static PyObject *orig_bootstrap_inner;
static PyObject *thread_cls, *thread_descr; /* ours, to put back at the script's end */

/* threading.Thread._bootstrap_inner runs first in every new thread: name the
 * thread for the reports, then carry on. A C method, so that no frame of
 * ours shows in the thread's stacks. */
static PyObject *bootstrap_inner(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *nm = imp_name ? trk_pyapi.Object_GetAttr(self, imp_name) : attr(self, "name");
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
    PyObject *cls = attr(mod, "Thread");
    PyObject *orig = cls ? attr(cls, "_bootstrap_inner") : NULL;
    PyObject *descr = NULL;
    if (orig) {
        struct own o = own_begin();
        descr = trk_pyapi.Descr_NewMethod(cls, &bootstrap_inner_def);
        own_end(o);
    }
    if (descr && set_attr(cls, "_bootstrap_inner", descr) == 0) {
        orig_bootstrap_inner = orig; /* keeps the references */
        thread_descr = descr;
        thread_cls = cls;
        return;
    }
    if (orig)
        trk_pyapi.DecRef(orig);
    own_decref(descr);
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
    PyObject *nm = spec && imp_name ? trk_pyapi.Object_GetAttr(spec, imp_name) : NULL;
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

/* Called from a frame of importlib's `_handle_fromlist(module, fromlist,
 * import_)`, a Python function every interpreter has loaded, whose first
 * statement is `for x in fromlist`: given iter(check, None) as fromlist, it
 * calls us from its own frame. Our own reading of the frame chain must agree
 * with the interpreter's answer. An existing function, rather than code we
 * compile, costs the program no allocation and touches none of its state
 * (interned strings, code caches); one without *args or **kwargs creates no
 * dict or tuple (their free lists would hand ours to the program). */
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
    ok = ok &&
         str_is(*(const PyObject *const *)((const char *)code + L->co_name), "_handle_fromlist");
    ok = ok && str_is(*(const PyObject *const *)((const char *)code + L->co_filename),
                      "<frozen importlib._bootstrap>");
    layout_ok = ok;
    return none_ref();
}

static struct trk_py_methoddef check_def = {"_tracker_check", check_layout, TRK_METH_NOARGS, NULL};

static void run_check(PyObject *bootstrap)
{
    PyObject *fl = bootstrap ? attr(bootstrap, "_handle_fromlist") : NULL;
    PyObject *fn = fl ? own_cfunc(&check_def, NULL) : NULL;
    PyObject *it = NULL;
    if (fn) {
        struct own o = own_begin();
        it = trk_pyapi.CallIter_New(fn, trk_pyapi.None);
        own_end(o);
    }
    PyObject *r = it ? own_call(fl, trk_pyapi.None, it, trk_pyapi.None) : NULL;
    own_decref(r);
    own_decref(it);
    own_decref(fn);
    if (fl)
        trk_pyapi.DecRef(fl);
    trk_pyapi.Err_Clear();
}

/* ---- Set-up, on the first audit event of a running interpreter -------------------- */

/* atexit.register and .unregister, without importing atexit when the
 * program has not: an import is the program's state (sys.modules, module
 * objects it frees at exit). Since 3.10 the module's functions keep their
 * state in the interpreter, so they work unbound, straight from the module
 * definition (PyModuleDef.m_methods, at offset 64 since 3.5). */
static PyObject *atexit_fn(PyObject *mods, const char *name)
{
    PyObject *m = NULL;
    if (mods) {
        struct own o = own_begin(); /* a temporary key */
        m = trk_pyapi.Dict_GetItemString(mods, "atexit");
        own_end(o);
    }
    if (m)
        return attr(m, name);
    PyObject *(*init)(void) = (PyObject * (*)(void)) dlsym(RTLD_DEFAULT, "PyInit_atexit");
    int minor = (int)((trk_py_version >> 16) & 0xFF);
    if (minor < 10 || !init) {
        m = trk_pyapi.Import_ImportModule("atexit");
        PyObject *r = m ? attr(m, name) : NULL;
        if (m)
            trk_pyapi.DecRef(m);
        return r;
    }
    PyObject *def = init();
    struct trk_py_methoddef *md = def ? *(struct trk_py_methoddef **)((char *)def + 64) : NULL;
    for (; md && md->name; md++)
        if (strcmp(md->name, name) == 0)
            return own_cfunc(md, NULL);
    return NULL;
}

static PyObject *at_exit_fn;    /* ours for good: never freed by the program */
static PyObject *at_exit_unreg; /* atexit.unregister, for at_exit */

static void register_atexit(PyObject *mods)
{
    PyObject *reg = atexit_fn(mods, "register");
    if (reg && !at_exit_fn)
        at_exit_fn = own_cfunc(&at_exit_def, NULL);
    PyObject *r = reg && at_exit_fn ? own_call(reg, at_exit_fn, NULL, NULL) : NULL;
    if (r) {
        own_decref(r);
        if (trk_pyapi.GC_Disable) /* our work unrecorded: see unwrap() */
            at_exit_unreg = atexit_fn(mods, "unregister");
    }
    own_decref(reg);
    trk_pyapi.Err_Clear();
}

static void wrap_imports(PyObject *mods, PyObject *bs)
{
    PyObject *orig = bs ? attr(bs, "_load_unlocked") : NULL;
    /* The wrapper owns orig as its self. */
    PyObject *w = orig ? own_cfunc(&load_unlocked_def, orig) : NULL;
    if (w && set_attr(bs, "_load_unlocked", w) == 0) {
        trk_pyapi.IncRef(bs);
        imp_module = bs;
        imp_orig = orig;
        imp_wrapper = w;
        imp_name = own_name("name");
    } else {
        own_decref(w);
        if (orig)
            trk_pyapi.DecRef(orig);
    }
    PyObject *th = NULL;
    if (mods) {
        struct own o = own_begin(); /* a temporary key */
        th = trk_pyapi.Dict_GetItemString(mods, "threading");
        own_end(o);
    }
    if (th)
        patch_threading(th);
    trk_pyapi.Err_Clear();
}

/* At the script's end (our atexit function): the interpreter gets its own
 * functions back and we drop our references, so that its teardown frees
 * what it frees untraced; our objects are freed here, unrecorded as they
 * were allocated. Non-daemon threads have been joined by now, and daemon
 * threads stop at the GIL before the class and orig_bootstrap_inner can
 * go. */
static void unwrap(void)
{
    PyObject *et, *ev, *etb;
    trk_pyapi.Err_Fetch(&et, &ev, &etb);
    if (imp_wrapper) {
        set_attr(imp_module, "_load_unlocked", imp_orig);
        own_decref(imp_wrapper);
        trk_pyapi.DecRef(imp_orig);
        trk_pyapi.DecRef(imp_module);
        own_decref(imp_name);
        imp_wrapper = imp_orig = imp_module = imp_name = NULL;
    }
    /* atexit allocated our entry while we were unrecorded: it goes now,
     * unrecorded too, not after the callbacks (3.10+ lets a callback
     * unregister itself). */
    if (at_exit_unreg) {
        own_decref(own_call(at_exit_unreg, at_exit_fn, NULL, NULL));
        own_decref(at_exit_unreg);
        at_exit_unreg = NULL;
    }
    if (thread_descr) {
        set_attr(thread_cls, "_bootstrap_inner", orig_bootstrap_inner);
        own_decref(thread_descr);
        trk_pyapi.DecRef(thread_cls);
        trk_pyapi.DecRef(orig_bootstrap_inner); /* the class holds it again */
        thread_descr = thread_cls = NULL;
    }
    trk_pyapi.Err_Clear();
    trk_pyapi.Err_Restore(et, ev, etb);
}

static void setup(void)
{
    PyObject *et, *ev, *etb;
    trk_pyapi.Err_Fetch(&et, &ev, &etb);
    PyObject *mods = trk_pyapi.Import_GetModuleDict();
    PyObject *bs = NULL;
    if (mods) {
        struct own o = own_begin(); /* a temporary key */
        bs = trk_pyapi.Dict_GetItemString(mods, "_frozen_importlib");
        own_end(o);
    }
    if (trk_py_cfg.mode != TRK_PY_OFF) {
        run_check(bs);
        if (layout_ok)
            atomic_store(&trk_stack_provider, trk_py_stack);
        else
            notice("Python frame layout not recognised; recording native stacks only", NULL);
    }
    register_atexit(mods);
    wrap_imports(mods, bs);
    trk_pyapi.Err_Restore(et, ev, etb);
    struct trk_thread *t = trk_enter();
    if (t) {
        trk_py_emit_info(t);
        trk_leave();
    }
}

static int audit_hook(const char *event, PyObject *args, void *ud)
{
    (void)args;
    (void)ud;
    if (TRK_LIKELY(setup_state) || in_setup)
        return 0;
    if (!trk_pyapi.IsInitialized()) {
        /* Finalising with no event since initialisation (an embedder's
         * Py_Initialize + Py_Finalize): leave the list before it is freed
         * with allocators that may not be the entry's. */
        if (strcmp(event, "cpython._PySys_ClearAuditHooks") == 0) {
            setup_state = 1;
            unlink_entry();
        }
        return 0;
    }
    if (trk_guard_get())
        return 0;
    in_setup = 1;
    if (atomic_load(&trk_active))
        setup();
    unlink_entry();
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
    NEED(Import_ImportModule, "PyImport_ImportModule");
    NEED(Import_GetModuleDict, "PyImport_GetModuleDict");
    NEED(Object_GetAttrString, "PyObject_GetAttrString");
    NEED(Object_GetAttr, "PyObject_GetAttr");
    NEED(Object_SetAttr, "PyObject_SetAttr");
    NEED(CallIter_New, "PyCallIter_New");
    NEED(Unicode_InternFromString, "PyUnicode_InternFromString");
    NEED(Object_SetAttrString, "PyObject_SetAttrString");
    NEED(Object_Call, "PyObject_Call");
    NEED(Object_CallFunctionObjArgs, "PyObject_CallFunctionObjArgs");
    NEED(CFunction_NewEx, "PyCFunction_NewEx");
    NEED(Descr_NewMethod, "PyDescr_NewMethod");
    NEED(Dict_GetItemString, "PyDict_GetItemString");
    NEED(Tuple_GetItem, "PyTuple_GetItem");
    NEED(Err_Fetch, "PyErr_Fetch");
    NEED(Err_Restore, "PyErr_Restore");
    NEED(Err_Clear, "PyErr_Clear");
    NEED(IncRef, "Py_IncRef");
    NEED(DecRef, "Py_DecRef");
    NEED(None, "_Py_NoneStruct");
    *(void **)&a.Frame_GetCode = sym("PyFrame_GetCode");
    *(void **)&a.Code_CheckLineNumber = sym("_PyCode_CheckLineNumber");
    *(void **)&a.GC_Disable = sym("PyGC_Disable");
    *(void **)&a.GC_Enable = sym("PyGC_Enable");

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

struct trk_py_config trk_py_cfg = {.mode = TRK_ENV_PYTHON_DEF,
                                   .allocators = TRK_ENV_PYTHON_ALLOCATORS_DEF};

/* The table's values are the modes this layer implements. */
_Static_assert(TRK_ENV_PYTHON_MIN == TRK_PY_OFF && TRK_ENV_PYTHON_MAX == TRK_PY_HYBRID &&
                   TRK_ENV_PYTHON_DEF == TRK_PY_HYBRID,
               "TRACKER_PYTHON in env_options.h and python.h");

void trk_py_config_load(void)
{
    trk_py_cfg.mode = (int)trk_env_long(TRK_ENV_PYTHON);
    trk_py_cfg.allocators = (int)trk_env_long(TRK_ENV_PYTHON_ALLOCATORS);
}

void trk_py_init(void)
{
    if (installed || (trk_py_cfg.mode == TRK_PY_OFF && !trk_py_cfg.allocators))
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
    trk_py_lines_install();
    if (trk_py_cfg.allocators) {
        trk_py_alloc_install();
        allocators_on = 1;
    }
    int g = trk_guard_enter_internal();
    add_hook();
    trk_guard_leave(g);
}

void trk_py_after_dlopen(void)
{
    if (installed)
        return;
    int g = trk_guard_enter_internal();
    trk_py_init();
    trk_guard_leave(g);
}

void trk_py_fork_child(struct trk_thread *t)
{
    if (!installed)
        return;
    trk_py_codes_reset();
    if (setup_state && t)
        trk_py_emit_info(t);
}
