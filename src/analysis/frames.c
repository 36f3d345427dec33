/* SPDX-License-Identifier: MIT
 *
 * frames.c - the source-level frames of one captured stack (calltree.h):
 * each return address symbolized, inlined calls expanded, innermost first,
 * and the allocator's own frames (operator new/delete, the malloc family,
 * jemalloc's *allocx, CPython's PyMem/PyObject ones, the GPU runtimes and
 * PyTorch's allocators) dropped from the inner end, so the first frame is the code that asked for
 * memory; the tracker's own frames go wherever they are (an interposed dlopen can leave them
 * mid-stack in older captures). A stack with Python frames reads Python
 * only by default (the Python line owns what native code under it
 * allocated); asked for the hybrid stack (--native), it still hides the
 * interpreter's call glue, runpy and (when asked) the import machinery
 * (trk_frames_options). Must not: read events, print, or decide how frames
 * become tree locations (calltree.c does).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/calltree.h"
#include "common/grow.h"

/* Longer than any stack the capture engine records (1024 frames); a corrupt
 * chain, cyclic or not, stops here. */
#define IPS_MAX 2048

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* The tracker's preload, whatever directory it was loaded from. */
static bool is_tracker_module(const char *path)
{
    if (!path)
        return false;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strcmp(base, "libtracker.so") == 0 || has_prefix(base, "libtracker.so.");
}

static bool is_alloc_function(const char *fn)
{
    static const char *const names[] = {
        "malloc",         "calloc",        "realloc",    "reallocarray",
        "free",           "cfree",         "free_sized", "free_aligned_sized",
        "posix_memalign", "aligned_alloc", "memalign",   "valloc",
        "pvalloc",        "mallocx",       "rallocx",    "xallocx",
        "dallocx",        "sdallocx",      "sallocx",    "nallocx",
    };
    /* C++ operators in every overload ("operator new[](unsigned long)", ...). */
    if (has_prefix(fn, "operator new") || has_prefix(fn, "operator delete"))
        return true;
    /* The same entry points under their internal or prefixed names:
     * glibc's __libc_malloc / __GI___libc_malloc, jemalloc's je_mallocx. */
    static const char *const prefixes[] = {"__GI___libc_", "__libc_", "__GI_", "je_"};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        if (has_prefix(fn, prefixes[i])) {
            fn += strlen(prefixes[i]);
            break;
        }
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(fn, names[i]) == 0)
            return true;
    /* jemalloc's non-standard API: mallocx, rallocx, ... and any other
     * *allocx entry point. */
    return ends_with(fn, "allocx");
}

/* CPython's allocator entry points, the malloc family of Python objects:
 * PyMem_Malloc, PyMem_RawRealloc, PyObject_Free, _PyObject_Malloc (pymalloc
 * itself), _PyMem_DebugRawCalloc (PYTHONMALLOC=debug). */
static bool is_py_alloc_function(const char *fn)
{
    while (*fn == '_')
        fn++;
    if (has_prefix(fn, "PyMem_"))
        fn += 6;
    else if (has_prefix(fn, "PyObject_"))
        fn += 9;
    else
        return false;
    if (has_prefix(fn, "Debug"))
        fn += 5;
    if (has_prefix(fn, "Raw"))
        fn += 3;
    return strcmp(fn, "Malloc") == 0 || strcmp(fn, "Calloc") == 0 || strcmp(fn, "Realloc") == 0 ||
           strcmp(fn, "Free") == 0;
}

/* The GPU runtimes' and drivers' entry points and internals, and PyTorch's
 * allocators: under a device allocation (or a host one the runtime made)
 * they stand where malloc stands under a heap one. On a thread with no
 * Python frame (PyTorch's autograd thread) the location would otherwise be
 * "libcudart.so.13+0x41b5e" rather than the op that wanted the tensor
 * (docs/GPU_INTERNALS.md §8). Unnamed frames of these libraries count too:
 * the runtimes are stripped. */
static bool is_gpu_runtime_module(const char *path)
{
    if (!path)
        return false;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return has_prefix(b, "libcudart.so") || has_prefix(b, "libcuda.so") ||
           has_prefix(b, "libamdhip64.so") || has_prefix(b, "libhsa-runtime64.so");
}

static bool is_gpu_allocator_frame(const struct trk_frame *f)
{
    if (is_gpu_runtime_module(f->module))
        return true;
    const char *fn = f->function;
    if (!fn) {
        /* libc10_cuda.so's unnamed code is its caching allocator's. */
        const char *b = f->module ? strrchr(f->module, '/') : NULL;
        return b && has_prefix(b + 1, "libc10_cuda.so");
    }
    static const char *const prefixes[] = {
        /* CUDA runtime, driver and HIP allocation entry points (a static
         * runtime is compiled into the program). */
        "cudaMalloc", "cudaHostAlloc", "cuMemAlloc", "cuMemHostAlloc", "cuMemCreate",
        "cuMemAddressReserve", "cuMemMap", "cuArrayCreate", "cuArray3DCreate", "hipMalloc",
        "hipHostMalloc", "hipExtMalloc", "hipMemCreate", "hipMemAddressReserve", "hipMemMap",
        /* PyTorch (c10): the CUDA/HIP caching allocators and the CPU one. */
        "c10::cuda::CUDACachingAllocator::", "c10::hip::HIPCachingAllocator::",
        "c10::CachingDeviceAllocator::", "c10::cuda::CUDAMallocAsyncAllocator::", "c10::alloc_cpu",
        "c10::DefaultCPUAllocator::", "c10::DefaultMobileCPUAllocator::"};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (has_prefix(fn, prefixes[i]))
            return true;
    return false;
}

static bool is_allocator_frame(const struct trk_frame *f)
{
    if (f->python) /* a Python function called "free" is the program's own */
        return false;
    if (is_gpu_allocator_frame(f))
        return true;
    return f->function && (is_alloc_function(f->function) || is_py_alloc_function(f->function));
}

/* ---- Python ----------------------------------------------------------------- */

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* The interpreter itself: libpython3.11.so.1.0, or an executable named
 * python, python3, python3.11 (Debian's links libpython statically). A
 * module that merely starts with "python" (python-foo.so) is not. */
static bool is_interpreter_module(const char *path)
{
    if (!path || !*path)
        return false;
    const char *b = base_name(path);
    if (has_prefix(b, "libpython"))
        return true;
    if (!has_prefix(b, "python"))
        return false;
    for (b += 6; *b; b++)
        if ((*b < '0' || *b > '9') && *b != '.')
            return false;
    return true;
}

/* runpy runs `python -m mod` and -m-style entry points: two frames of
 * plumbing above every stack of the program. */
static bool is_runpy(const struct trk_frame *f)
{
    return f->file && (strcmp(f->file, "<frozen runpy>") == 0 || ends_with(f->file, "/runpy.py"));
}

static bool is_import_machinery(const struct trk_frame *f)
{
    return f->file && (has_prefix(f->file, "<frozen importlib") ||
                       ends_with(f->file, "importlib/_bootstrap.py") ||
                       ends_with(f->file, "importlib/_bootstrap_external.py"));
}

/* libc and the loader: a thread's or the process's start, above the
 * outermost Python frame of a Python-first stack. */
static bool is_runtime_module(const char *path)
{
    if (!path)
        return false;
    const char *b = base_name(path);
    return has_prefix(b, "libc.so") || has_prefix(b, "ld-linux") || has_prefix(b, "libpthread.so");
}

/* Where hybrid-stack hiding stands. */
struct py_hide {
    bool on;      /* the stack has a Python frame and internals are hidden */
    bool imports; /* hide the import machinery */
    bool only;    /* the stack has a Python frame and reads Python first */
};

/* Whether frame f (not an allocator frame already dropped) is hidden. All of
 * the interpreter's own frames go, the ones at the allocation too: a
 * Python user's "where" is the Python line (memray's default view), and an
 * allocation the interpreter made for it (list_resize, PyByteArray_Resize,
 * mostly unnamed in a stripped python3.11) belongs to that line.
 * --python-internals brings them back. */
static bool py_hidden(const struct py_hide *h, const struct trk_frame *f)
{
    if (f->python)
        return (h->imports && is_import_machinery(f)) || (h->on && is_runpy(f));
    return h->on && is_interpreter_module(f->module);
}

int trk_stack_frames(const struct trk_reader *r, struct trk_symbolizer *s, uint64_t stack,
                     const struct trk_frames_options *o, struct trk_frame_buf *buf,
                     const struct trk_frame **out)
{
    uint64_t ips[IPS_MAX];
    buf->n = 0;
    *out = buf->v;
    int nips = stack ? trk_reader_stack(r, stack, ips, IPS_MAX) : 0;
    bool keep = o && o->keep_allocator_frames;
    bool dropping = !keep;
    struct py_hide py = {.imports = o && o->hide_imports};
    bool internals = o && o->python_internals;
    bool native = internals || (o && o->native);
    /* The outermost Python frame's return address; -1: no Python frame. */
    int outer_py = -1;
    for (int i = 0; i < nips; i++)
        if (trk_ip_is_python(ips[i]))
            outer_py = i;
    py.on = outer_py >= 0 && !internals;
    /* Python-first (memray's default view): native code inside the
     * innermost Python frame (numpy, _json, c10::alloc_cpu, the malloc
     * under them) and between Python frames is hidden, so own bytes land on
     * the Python line. Outside the outermost Python frame only the program
     * that called into Python stays (an embedding host's C frames), not
     * libc's start or thread glue. A stack with no Python frame (a native
     * thread, start-up) keeps its native frames. */
    py.only = outer_py >= 0 && !native;
    for (int i = 0; i < nips; i++) {
        bool inside = i < outer_py;
        /* Python only there: a native return address is not even symbolized. */
        if (py.only && inside && !trk_ip_is_python(ips[i]))
            continue;
        const struct trk_frame *fr = NULL;
        int nf = trk_symbolize(s, ips[i], &fr);
        if (nf <= 0 || !fr)
            continue;
        for (int k = 0; k < nf; k++) {
            if (!keep && is_tracker_module(fr[k].module))
                continue;
            /* Only a run at the inner end: a malloc called from deep inside
             * the program's own code keeps its callers, of course. */
            if (dropping && is_allocator_frame(&fr[k]))
                continue;
            dropping = false;
            if (py.only && !fr[k].python && (inside || is_runtime_module(fr[k].module)))
                continue;
            if ((py.on || py.imports) && py_hidden(&py, &fr[k]))
                continue;
            if (TRK_GROW(buf->v, buf->cap, buf->n + 1) < 0)
                return -1;
            buf->v[buf->n++] = fr[k];
        }
    }
    *out = buf->v;
    return (int)buf->n;
}

void trk_frame_buf_free(struct trk_frame_buf *buf)
{
    free(buf->v);
    buf->v = NULL;
    buf->n = buf->cap = 0;
}

/* A file's shortest identifying path for a report line: what follows
 * site-packages/ or dist-packages/ (numpy/core/numeric.py), or the standard
 * library's lib/pythonX.Y/ (json/__init__.py); otherwise the basename, with
 * its directory when the basename alone names no file (__init__.py,
 * __main__.py). A suffix of `file`, never a copy. */
const char *trk_display_path(const char *file)
{
    if (!file)
        return NULL;
    static const char *const roots[] = {"/site-packages/", "/dist-packages/"};
    const char *best = NULL;
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
        for (const char *p = strstr(file, roots[i]); p; p = strstr(p + 1, roots[i]))
            if (!best || p + strlen(roots[i]) > best)
                best = p + strlen(roots[i]);
    if (best && *best)
        return best;
    const char *lib = strstr(file, "/lib/python");
    if (lib) {
        const char *slash = strchr(lib + 11, '/');
        if (slash && slash[1])
            return slash + 1;
    }
    const char *b = base_name(file);
    if (b > file && has_prefix(b, "__") && ends_with(b, "__.py")) {
        const char *d = b - 1; /* the '/' before the basename */
        while (d > file && d[-1] != '/')
            d--;
        return d;
    }
    return b;
}
