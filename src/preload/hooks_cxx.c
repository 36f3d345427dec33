/* SPDX-License-Identifier: MIT
 *
 * hooks_cxx.c - C++ operator new and delete in all twenty forms (plain,
 * array, nothrow, align_val_t, sized), by their mangled names, and the
 * one-time warning about allocators whose own entry points we do not hook.
 *
 * jemalloc and tcmalloc define operator new/delete themselves, straight on
 * their internals: without these hooks a C++ program linked with them was
 * invisible apart from its direct malloc calls. Each hook forwards to the
 * next definition (libstdc++'s, jemalloc's, tcmalloc's) and records under
 * the kinds new, new[], delete and delete[] (docs/FORMAT.md §4).
 *
 * libstdc++'s operator new calls malloc through the PLT, which is hooked too:
 * the forwarded call runs under TRK_GUARD_INTERNAL so that the block is
 * recorded once, as the new it is, and the inner malloc is neither recorded
 * nor counted as a lost nested call.
 *
 * A throwing form is forwarded as its nothrow counterpart first (see
 * new_common). Exceptions may still pass through (a new handler's): the
 * file is built with -fexceptions and a cleanup clears the guard while one
 * unwinds. A new handler runs under the guard: what it allocates is not
 * recorded (it runs only when memory is exhausted).
 *
 * A program without libstdc++ never calls these. A C++ library loaded with
 * RTLD_LOCAL (a Python extension) binds to ours before its own libstdc++,
 * which RTLD_NEXT does not see: the next definition is then looked up in a
 * loaded libstdc++, and failing that we serve the call from malloc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/hook.h"
#include "preload/preload.h"

enum cxx_fn {
    NW,      /* _Znwm */
    NA,      /* _Znam */
    NW_NT,   /* _ZnwmRKSt9nothrow_t */
    NA_NT,   /* _ZnamRKSt9nothrow_t */
    NW_AL,   /* _ZnwmSt11align_val_t */
    NA_AL,   /* _ZnamSt11align_val_t */
    NW_ALNT, /* _ZnwmSt11align_val_tRKSt9nothrow_t */
    NA_ALNT, /* _ZnamSt11align_val_tRKSt9nothrow_t */
    DL,      /* _ZdlPv */
    DA,      /* _ZdaPv */
    DL_SZ,   /* _ZdlPvm */
    DA_SZ,   /* _ZdaPvm */
    DL_AL,   /* _ZdlPvSt11align_val_t */
    DA_AL,   /* _ZdaPvSt11align_val_t */
    DL_SZAL, /* _ZdlPvmSt11align_val_t */
    DA_SZAL, /* _ZdaPvmSt11align_val_t */
    DL_NT,   /* _ZdlPvRKSt9nothrow_t */
    DA_NT,   /* _ZdaPvRKSt9nothrow_t */
    DL_ALNT, /* _ZdlPvSt11align_val_tRKSt9nothrow_t */
    DA_ALNT, /* _ZdaPvSt11align_val_tRKSt9nothrow_t */
    CXX_FNS
};

static const char *const fn_names[CXX_FNS] = {
    [NW] = "_Znwm",
    [NA] = "_Znam",
    [NW_NT] = "_ZnwmRKSt9nothrow_t",
    [NA_NT] = "_ZnamRKSt9nothrow_t",
    [NW_AL] = "_ZnwmSt11align_val_t",
    [NA_AL] = "_ZnamSt11align_val_t",
    [NW_ALNT] = "_ZnwmSt11align_val_tRKSt9nothrow_t",
    [NA_ALNT] = "_ZnamSt11align_val_tRKSt9nothrow_t",
    [DL] = "_ZdlPv",
    [DA] = "_ZdaPv",
    [DL_SZ] = "_ZdlPvm",
    [DA_SZ] = "_ZdaPvm",
    [DL_AL] = "_ZdlPvSt11align_val_t",
    [DA_AL] = "_ZdaPvSt11align_val_t",
    [DL_SZAL] = "_ZdlPvmSt11align_val_t",
    [DA_SZAL] = "_ZdaPvmSt11align_val_t",
    [DL_NT] = "_ZdlPvRKSt9nothrow_t",
    [DA_NT] = "_ZdaPvRKSt9nothrow_t",
    [DL_ALNT] = "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    [DA_ALNT] = "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

/* The next definitions; NULL = not looked up yet, or not found (looked up
 * again next time: the library may have been loaded since). */
static void *_Atomic next_fns[CXX_FNS];

/* A failed lookup of ours leaves an error message that the program's next
 * dlerror() would see, and glibc allocates it; the first dlerror() hands it
 * out, the second frees it, both under our guard so that neither the
 * allocation nor its free is recorded as the program's. */
static void clear_dlerror(void)
{
    while (dlerror() != NULL) {
    }
}

/* Looks the next definition up under the internal guard: dlsym allocates. */
static void *find_next(enum cxx_fn i)
{
    void *f = atomic_load_explicit(&next_fns[i], memory_order_relaxed);
    if (TRK_LIKELY(f != NULL))
        return f;
    int was = trk_guard_enter_internal();
    f = dlsym(RTLD_NEXT, fn_names[i]);
    if (!f) {
        /* Not in the global scope: a libstdc++ loaded RTLD_LOCAL behind
         * the caller. Only a library already loaded (RTLD_NOLOAD). */
        void *(*open)(const char *, int) = trk_real.dlopen ? trk_real.dlopen : dlopen;
        void *h = open("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
        if (h)
            f = dlsym(h, fn_names[i]);
    }
    if (!f)
        clear_dlerror();
    trk_guard_leave(was);
    if (f)
        atomic_store_explicit(&next_fns[i], f, memory_order_relaxed);
    return f;
}

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_alnt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_sz_fn)(void *, size_t);
typedef void (*del_szal_fn)(void *, size_t, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_alnt_fn)(void *, size_t, const void *);

/* Without any operator new to forward to (see the file comment) the C
 * allocator serves the call. Out of memory cannot throw std::bad_alloc from
 * here; a throwing new then ends the process as an uncaught one would. */
static void *fallback_new(size_t n, size_t align, int nothrow)
{
    void *p = NULL;
    if (n == 0)
        n = 1;
    if (align > 16) {
        if (posix_memalign(&p, align, n))
            p = NULL;
    } else {
        p = malloc(n);
    }
    if (!p && !nothrow) {
        trk_log("operator new: out of memory and no C++ runtime to throw", NULL, NULL);
        abort();
    }
    return p;
}

/* Calls the next operator new of form i; args in the order of the form. */
static void *call_new(enum cxx_fn i, size_t n, size_t align, const void *nt)
{
    void *f = find_next(i);
    if (TRK_UNLIKELY(!f))
        return fallback_new(n, align, nt != NULL);
    switch (i) {
    case NW:
    case NA:
        return ((new_fn)f)(n);
    case NW_NT:
    case NA_NT:
        return ((new_nt_fn)f)(n, nt);
    case NW_AL:
    case NA_AL:
        return ((new_al_fn)f)(n, align);
    default:
        return ((new_alnt_fn)f)(n, align, nt);
    }
}

/* Calls the next operator delete of form i, or the closest form that
 * exists (an older runtime may lack the sized ones). */
static void call_delete(enum cxx_fn i, void *p, size_t size, size_t align, const void *nt)
{
    void *f = find_next(i);
    if (TRK_LIKELY(f != NULL)) {
        switch (i) {
        case DL:
        case DA:
            ((del_fn)f)(p);
            return;
        case DL_SZ:
        case DA_SZ:
        case DL_AL:
        case DA_AL:
            ((del_sz_fn)f)(p, i == DL_AL || i == DA_AL ? align : size);
            return;
        case DL_SZAL:
        case DA_SZAL:
            ((del_szal_fn)f)(p, size, align);
            return;
        case DL_NT:
        case DA_NT:
            ((del_nt_fn)f)(p, nt);
            return;
        default:
            ((del_alnt_fn)f)(p, align, nt);
            return;
        }
    }
    int array = i == DA || i == DA_SZ || i == DA_AL || i == DA_SZAL || i == DA_NT || i == DA_ALNT;
    int aligned =
        i == DL_AL || i == DA_AL || i == DL_SZAL || i == DA_SZAL || i == DL_ALNT || i == DA_ALNT;
    if (aligned && i != (array ? DA_AL : DL_AL)) {
        call_delete(array ? DA_AL : DL_AL, p, 0, align, NULL);
    } else if (!aligned && i != (array ? DA : DL)) {
        call_delete(array ? DA : DL, p, 0, 0, NULL);
    } else {
        free(p); /* no runtime at all: the block came from fallback_new */
    }
}

/* Runs when an exception from the next operator new unwinds the hook. */
static void leave_on_unwind(int *armed)
{
    if (*armed)
        trk_leave();
}

/* The nothrow_t argument: an empty object passed by reference. */
static const char nothrow_arg;

/* The nothrow counterpart of a throwing form. */
static enum cxx_fn nothrow_form(enum cxx_fn i)
{
    switch (i) {
    case NW:
        return NW_NT;
    case NA:
        return NA_NT;
    case NW_AL:
        return NW_ALNT;
    case NA_AL:
        return NA_ALNT;
    default:
        return i;
    }
}

/* A throwing form is first tried as its nothrow counterpart under the guard;
 * only when that fails is the throwing one called, outside the guard, to
 * throw: std::bad_alloc is itself allocated (__cxa_allocate_exception) and
 * freed by the program's catch, and both must be recorded or neither. */
/* Before our constructor (preinit.h): as new_common's recorded path, the
 * nothrow form under the guard, the block logged, a throw outside. */
static void *new_preinit(enum cxx_fn i, unsigned kind, size_t n, size_t align, const void *nt,
                         uintptr_t ra)
{
    int was = trk_guard_enter_internal();
    enum cxx_fn j = nothrow_form(i);
    void *p = call_new(j, n, align, j == i ? nt : &nothrow_arg);
    int saved = errno;
    if (p)
        trk_preinit_log(TRK_PRE_ALLOC, kind, (uintptr_t)p, 0, n, ra);
    trk_guard_leave(was);
    errno = saved;
    if (!p && j != i)
        return call_new(i, n, align, nt);
    return p;
}

TRK_HOOK_INLINE void *new_common(enum cxx_fn i, unsigned kind, size_t n, size_t align,
                                 const void *nt)
{
    struct trk_thread *t = trk_enter();
    if (!t && trk_preinit_here())
        return new_preinit(i, kind, n, align, nt, (uintptr_t)__builtin_return_address(0));
    if (!t)
        return call_new(i, n, align, nt);
    __attribute__((cleanup(leave_on_unwind))) int armed = 1;
    trk_guard_set(TRK_GUARD_INTERNAL);
    enum cxx_fn j = nothrow_form(i);
    void *p = call_new(j, n, align, j == i ? nt : &nothrow_arg);
    int saved = errno;
    trk_guard_set(TRK_GUARD_HOOK);
    if (p)
        trk_ev_alloc(t, kind, p, n, trk_stack_sized(t, n));
    armed = 0;
    trk_leave();
    errno = saved;
    if (!p && j != i)
        return call_new(i, n, align, nt); /* throws, or a new handler made room */
    return p;
}

TRK_HOOK_INLINE void delete_common(enum cxx_fn i, unsigned kind, void *p, size_t size, size_t align,
                                   const void *nt)
{
    if (!p)
        return;
    struct trk_thread *t = trk_enter();
    if (t) {
        trk_hook_free(t, kind, p);
        trk_guard_set(TRK_GUARD_INTERNAL);
    } else if (trk_preinit_here()) {
        int was = trk_guard_enter_internal();
        int saved = errno;
        trk_preinit_log(TRK_PRE_FREE, kind, (uintptr_t)p, 0, 0,
                        (uintptr_t)__builtin_return_address(0));
        errno = saved;
        call_delete(i, p, size, align, nt);
        trk_guard_leave(was);
        return;
    }
    call_delete(i, p, size, align, nt);
    if (t)
        trk_leave();
}

/* The exported names; declarations first for -Wmissing-prototypes. */
#define NEW_HOOKS(X)                                                                               \
    X(_Znwm, NW, TRK_ALLOC_NEW, (size_t n), n, 0, NULL)                                            \
    X(_Znam, NA, TRK_ALLOC_NEW_ARRAY, (size_t n), n, 0, NULL)                                      \
    X(_ZnwmRKSt9nothrow_t, NW_NT, TRK_ALLOC_NEW, (size_t n, const void *nt), n, 0, nt)             \
    X(_ZnamRKSt9nothrow_t, NA_NT, TRK_ALLOC_NEW_ARRAY, (size_t n, const void *nt), n, 0, nt)       \
    X(_ZnwmSt11align_val_t, NW_AL, TRK_ALLOC_NEW, (size_t n, size_t al), n, al, NULL)              \
    X(_ZnamSt11align_val_t, NA_AL, TRK_ALLOC_NEW_ARRAY, (size_t n, size_t al), n, al, NULL)        \
    X(_ZnwmSt11align_val_tRKSt9nothrow_t, NW_ALNT, TRK_ALLOC_NEW,                                  \
      (size_t n, size_t al, const void *nt), n, al, nt)                                            \
    X(_ZnamSt11align_val_tRKSt9nothrow_t, NA_ALNT, TRK_ALLOC_NEW_ARRAY,                            \
      (size_t n, size_t al, const void *nt), n, al, nt)

#define DELETE_HOOKS(X)                                                                            \
    X(_ZdlPv, DL, TRK_ALLOC_DELETE, (void *p), p, 0, 0, NULL)                                      \
    X(_ZdaPv, DA, TRK_ALLOC_DELETE_ARRAY, (void *p), p, 0, 0, NULL)                                \
    X(_ZdlPvm, DL_SZ, TRK_ALLOC_DELETE, (void *p, size_t sz), p, sz, 0, NULL)                      \
    X(_ZdaPvm, DA_SZ, TRK_ALLOC_DELETE_ARRAY, (void *p, size_t sz), p, sz, 0, NULL)                \
    X(_ZdlPvSt11align_val_t, DL_AL, TRK_ALLOC_DELETE, (void *p, size_t al), p, 0, al, NULL)        \
    X(_ZdaPvSt11align_val_t, DA_AL, TRK_ALLOC_DELETE_ARRAY, (void *p, size_t al), p, 0, al, NULL)  \
    X(_ZdlPvmSt11align_val_t, DL_SZAL, TRK_ALLOC_DELETE, (void *p, size_t sz, size_t al), p, sz,   \
      al, NULL)                                                                                    \
    X(_ZdaPvmSt11align_val_t, DA_SZAL, TRK_ALLOC_DELETE_ARRAY, (void *p, size_t sz, size_t al), p, \
      sz, al, NULL)                                                                                \
    X(_ZdlPvRKSt9nothrow_t, DL_NT, TRK_ALLOC_DELETE, (void *p, const void *nt), p, 0, 0, nt)       \
    X(_ZdaPvRKSt9nothrow_t, DA_NT, TRK_ALLOC_DELETE_ARRAY, (void *p, const void *nt), p, 0, 0, nt) \
    X(_ZdlPvSt11align_val_tRKSt9nothrow_t, DL_ALNT, TRK_ALLOC_DELETE,                              \
      (void *p, size_t al, const void *nt), p, 0, al, nt)                                          \
    X(_ZdaPvSt11align_val_tRKSt9nothrow_t, DA_ALNT, TRK_ALLOC_DELETE_ARRAY,                        \
      (void *p, size_t al, const void *nt), p, 0, al, nt)

#define DECLARE_NEW(name, i, kind, params, n, al, nt) void *name params;
#define DEFINE_NEW(name, i, kind, params, n, al, nt)                                               \
    TRK_EXPORT void *name params                                                                   \
    {                                                                                              \
        return new_common(i, kind, n, al, nt);                                                     \
    }
#define DECLARE_DELETE(name, i, kind, params, p, sz, al, nt) void name params;
#define DEFINE_DELETE(name, i, kind, params, p, sz, al, nt)                                        \
    TRK_EXPORT void name params                                                                    \
    {                                                                                              \
        delete_common(i, kind, p, sz, al, nt);                                                     \
    }

NEW_HOOKS(DECLARE_NEW)
NEW_HOOKS(DEFINE_NEW)
DELETE_HOOKS(DECLARE_DELETE)
DELETE_HOOKS(DEFINE_DELETE)

/* ---- Allocators with entry points of their own ----------------------------
 *
 * Allocation made through a name we do not interpose is invisible. The
 * standard C and C++ names and jemalloc's *allocx are hooked; these
 * allocators also export their own families, which a program may call. */
static const struct {
    const char *probe; /* a symbol only that allocator defines */
    const char *what;  /* the message */
} unhooked[] = {
    {"tc_malloc", "tcmalloc is loaded: calls to its tc_* functions (tc_malloc, tc_new, ...) are "
                  "not recorded"},
    {"mi_malloc", "mimalloc is loaded: calls to its mi_* functions are not recorded"},
    {"je_malloc", "jemalloc (je_ prefix) is loaded: calls to its je_* functions are not recorded"},
    {"rpmalloc", "rpmalloc is loaded: calls to its rp* functions are not recorded"},
    {"scalable_malloc", "TBB's scalable allocator is loaded: calls to its scalable_* functions are "
                        "not recorded"},
};
static _Atomic unsigned unhooked_said; /* bit i: unhooked[i] reported */

void trk_check_allocators(void *handle)
{
    unsigned said = atomic_load(&unhooked_said);
    if (said == (1u << (sizeof(unhooked) / sizeof(unhooked[0]))) - 1)
        return;
    int was = trk_guard_enter_internal();
    for (unsigned i = 0; i < sizeof(unhooked) / sizeof(unhooked[0]); i++) {
        if (said & (1u << i))
            continue;
        if (!dlsym(handle ? handle : RTLD_DEFAULT, unhooked[i].probe)) {
            clear_dlerror();
            continue;
        }
        if (atomic_fetch_or(&unhooked_said, 1u << i) & (1u << i))
            continue;
        trk_log("warning: ", unhooked[i].what, NULL);
    }
    trk_guard_leave(was);
}
