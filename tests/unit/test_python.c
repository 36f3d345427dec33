/* SPDX-License-Identifier: MIT
 *
 * test_python.c - the report side of Python captures over synthetic ones
 * (tcap.h), with exact figures: hybrid-stack frame hiding (frames.c: the
 * interpreter's frames, runpy and the import machinery, stacks without
 * Python frames untouched), leaks
 * taken at the script-end mark (profile_python.c), the import tree of
 * imports.c over two threads (self/cumulative allocated and live bytes,
 * realloc and partial munmap, an unfinished import), and sites split by
 * import chain. A fake symbolizer defined here maps ips to chosen native
 * frames and Python ips to their code objects, as symbolize.c does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/calltree.h"
#include "analysis/imports.h"
#include "analysis/profile.h"
#include "common/crc32c.h"
#include "format/record.h"

/* ---- The fake symbolizer ------------------------------------------------------- */

#define PY   "/usr/bin/python3.11"
#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static const struct trk_frame N_REALLOC[] = {{"realloc", NULL, 0, 0, LIBC, 0x10, 0x1000, 0}};
static const struct trk_frame N_PYMEM[] = {{"PyMem_Realloc", "obmalloc.c", 700, 0, PY, 0x20,
                                            0x2000, 0}};
static const struct trk_frame N_RESIZE[] = {{"list_resize", "listobject.c", 70, 0, PY, 0x30,
                                             0x3000, 0}};
static const struct trk_frame N_EVAL[] = {{"_PyEval_EvalFrameDefault", "ceval.c", 5000, 0, PY,
                                           0x40, 0x4000, 0}};
static const struct trk_frame N_CALL[] = {
    {"cfunction_call", "methodobject.c", 540, 0, "/usr/lib/libpython3.11.so.1.0", 0x50, 0x5000,
     0}};
static const struct trk_frame N_RUNMAIN[] = {{"Py_RunMain", "main.c", 680, 0, PY, 0x60, 0x6000,
                                              0}};
static const struct trk_frame N_MAIN[] = {{"main", "python.c", 15, 0, PY, 0x70, 0x7000, 0}};
static const struct trk_frame N_START[] = {{"__libc_start_call_main", NULL, 0, 0, LIBC, 0x80,
                                            0x8000, 0}};
static const struct trk_frame N_FOO[] = {{"foo_alloc", "foo.c", 9, 0, "/opt/ext/libfoo.so", 0x90,
                                          0x9000, 0}};
static const struct trk_frame N_MALLOC[] = {{"malloc", NULL, 0, 0, LIBC, 0xa0, 0xa000, 0}};
/* Not the interpreter, though its name starts like it. */
static const struct trk_frame N_PYCONFIG[] = {{"helper", "h.c", 3, 0, "/opt/bin/python-helper.so",
                                               0xb0, 0xb000, 0}};

static const struct {
    uint64_t ip;
    const struct trk_frame *f;
} fake_table[] = {
    {0x1000, N_REALLOC}, {0x2000, N_PYMEM},   {0x3000, N_RESIZE}, {0x4000, N_EVAL},
    {0x5000, N_CALL},    {0x6000, N_RUNMAIN}, {0x7000, N_MAIN},   {0x8000, N_START},
    {0x9000, N_FOO},     {0xa000, N_MALLOC},  {0xb000, N_PYCONFIG},
};

struct trk_symbolizer {
    const struct trk_reader *r;
    struct trk_frame out; /* the answer for a Python frame or an unknown ip */
};

struct trk_symbolizer *trk_symbolizer_new(const struct trk_reader *r,
                                          const struct trk_symbolizer_options *opts)
{
    (void)opts;
    struct trk_symbolizer *s = calloc(1, sizeof(*s));
    if (s)
        s->r = r;
    return s;
}

int trk_symbolize(struct trk_symbolizer *s, uint64_t ip, const struct trk_frame **frames)
{
    if (trk_ip_is_python(ip)) {
        const struct trk_pycode *pc = trk_reader_pycode(s->r, trk_ip_pycode(ip));
        s->out = (struct trk_frame){.function = pc ? pc->name : NULL,
                                    .file = pc ? pc->file : NULL,
                                    .line = trk_ip_pyline(ip),
                                    .ip = ip,
                                    .python = 1};
        *frames = &s->out;
        return 1;
    }
    for (size_t i = 0; i < sizeof(fake_table) / sizeof(fake_table[0]); i++) {
        if (fake_table[i].ip == ip) {
            *frames = fake_table[i].f;
            return 1;
        }
    }
    s->out = (struct trk_frame){.offset = ip, .ip = ip};
    *frames = &s->out;
    return 1;
}

void trk_symbolizer_free(struct trk_symbolizer *s)
{
    free(s);
}

#include "tcap.h"

/* ---- Hybrid stacks ---------------------------------------------------------------- */

/* Code objects. */
enum { C_APPEND = 1, C_IMPORTLIB, C_MODULE, C_RUNPY, C_EXTERNAL };

/* Stack ids, each (parent, ip); the outermost frame first. */
enum {
    S_START = 1, /* __libc_start_call_main */
    S_MAIN,      /* > main [python3.11] */
    S_RUNMAIN,   /* > Py_RunMain [python3.11] */
    S_RUNPY,     /* > <frozen runpy>:_run_code:88 */
    S_EVAL1,     /* > _PyEval_EvalFrameDefault */
    S_MODULE,    /* > main.py:<module>:10 */
    S_EVAL2,     /* > _PyEval_EvalFrameDefault */
    S_BOOT,      /* > <frozen importlib._bootstrap>:_call_with_frames_removed:241 */
    S_EXTERNAL,  /* > .../importlib/_bootstrap_external.py:exec_module:940 */
    S_CALL,      /* > cfunction_call [libpython] */
    S_APPEND,    /* > script.py:append_items:12 */
    S_RESIZE,    /* > list_resize [python3.11] */
    S_PYMEM,     /* > PyMem_Realloc [python3.11] */
    S_REALLOC,   /* > realloc [libc]: the list's allocation */
    S_FOO,       /* S_CALL > foo_alloc [libfoo.so]: an extension's allocation */
    S_FOO_MALLOC,
    S_NATIVE,    /* S_MAIN > list_resize > malloc: no Python frame at all */
    S_NATIVE_MALLOC,
    S_HELPER,    /* S_APPEND > helper [python-helper.so] > malloc */
    S_HELPER_MALLOC,
    S_COUNT,
};

static uint64_t pyip(uint64_t code, uint32_t line)
{
    return tc_pyip(code, line);
}

static void hybrid_stacks(struct tcap *c, unsigned t)
{
    const uint64_t def[S_COUNT][2] = {
        [S_START] = {0, 0x8000},
        [S_MAIN] = {S_START, 0x7000},
        [S_RUNMAIN] = {S_MAIN, 0x6000},
        [S_RUNPY] = {S_RUNMAIN, pyip(C_RUNPY, 88)},
        [S_EVAL1] = {S_RUNPY, 0x4000},
        [S_MODULE] = {S_EVAL1, pyip(C_MODULE, 10)},
        [S_EVAL2] = {S_MODULE, 0x4000},
        [S_BOOT] = {S_EVAL2, pyip(C_IMPORTLIB, 241)},
        [S_EXTERNAL] = {S_BOOT, pyip(C_EXTERNAL, 940)},
        [S_CALL] = {S_EXTERNAL, 0x5000},
        [S_APPEND] = {S_CALL, pyip(C_APPEND, 12)},
        [S_RESIZE] = {S_APPEND, 0x3000},
        [S_PYMEM] = {S_RESIZE, 0x2000},
        [S_REALLOC] = {S_PYMEM, 0x1000},
        [S_FOO] = {S_CALL, 0x9000},
        [S_FOO_MALLOC] = {S_FOO, 0xa000},
        [S_NATIVE] = {S_MAIN, 0x3000},
        [S_NATIVE_MALLOC] = {S_NATIVE, 0xa000},
        [S_HELPER] = {S_APPEND, 0xb000},
        [S_HELPER_MALLOC] = {S_HELPER, 0xa000},
    };
    tc_py_code(c, t, C_APPEND, "append_items", "/src/script.py", 11);
    tc_py_code(c, t, C_IMPORTLIB, "_call_with_frames_removed", "<frozen importlib._bootstrap>",
               233);
    tc_py_code(c, t, C_MODULE, "<module>", "/src/main.py", 1);
    tc_py_code(c, t, C_RUNPY, "_run_code", "<frozen runpy>", 64);
    tc_py_code(c, t, C_EXTERNAL, "exec_module",
               "/usr/lib/python3.11/importlib/_bootstrap_external.py", 935);
    for (uint64_t id = 1; id < S_COUNT; id++)
        tc_stack(c, t, id, def[id][0], def[id][1]);
}

/* The frames of `stack` as "name" strings joined by ' ', innermost first. */
static const char *frames_of(struct trk_reader *r, struct trk_symbolizer *s, uint64_t stack,
                             const struct trk_frames_options *o)
{
    static char out[1024];
    struct trk_frame_buf fb = {0};
    const struct trk_frame *fr;
    int n = trk_stack_frames(r, s, stack, o, &fb, &fr);
    assert_true(n >= 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char one[160];
        if (fr[i].python)
            snprintf(one, sizeof(one), "%s%s:%u", i ? " " : "", fr[i].function, fr[i].line);
        else
            snprintf(one, sizeof(one), "%s%s", i ? " " : "", fr[i].function);
        strncat(out, one, sizeof(out) - strlen(out) - 1);
    }
    trk_frame_buf_free(&fb);
    return out;
}

/* The path report lines show: enough to identify the file. */
static void test_display_path(void **state)
{
    (void)state;
    assert_null(trk_display_path(NULL));
    assert_string_equal(
        trk_display_path("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py"),
        "torch/nn/modules/linear.py");
    assert_string_equal(trk_display_path("/usr/lib/python3/dist-packages/numpy/__init__.py"),
                        "numpy/__init__.py");
    assert_string_equal(trk_display_path("/usr/lib/python3.11/json/__init__.py"),
                        "json/__init__.py");
    assert_string_equal(trk_display_path("/home/u/proj/pkg/__init__.py"), "pkg/__init__.py");
    assert_string_equal(trk_display_path("/home/u/proj/train.py"), "train.py");
    assert_string_equal(trk_display_path("<frozen runpy>"), "<frozen runpy>");
    assert_string_equal(trk_display_path("prog.c"), "prog.c");
}

static void test_hiding_rules(void **state)
{
    (void)state;
    struct tcap c;
    tc_begin(&c);
    unsigned t = tc_thread(&c, 100, 0);
    hybrid_stacks(&c, t);
    tc_alloc(&c, t, 0x100, 8, S_REALLOC);
    struct trk_reader *r = tc_open(&c);
    struct trk_event e;
    while (trk_reader_next(r, &e) > 0)
        ;
    struct trk_symbolizer *s = trk_symbolizer_new(r, NULL);

    /* Default, Python first: a stack with Python frames reads Python only
     * (native frames inside and between them, libc's start above them
     * go), so an extension's or a helper's allocation is its Python
     * line's; a stack without Python frames keeps its native frames. */
    struct trk_frames_options o = {0};
    assert_string_equal(frames_of(r, s, S_REALLOC, &o),
                        "append_items:12 exec_module:940 _call_with_frames_removed:241 <module>:10");
    assert_string_equal(frames_of(r, s, S_FOO_MALLOC, &o),
                        "exec_module:940 _call_with_frames_removed:241 <module>:10");
    assert_string_equal(frames_of(r, s, S_HELPER_MALLOC, &o),
                        "append_items:12 exec_module:940 _call_with_frames_removed:241 <module>:10");
    assert_string_equal(frames_of(r, s, S_NATIVE_MALLOC, &o),
                        "list_resize main __libc_start_call_main");
    o.hide_imports = 1;
    assert_string_equal(frames_of(r, s, S_REALLOC, &o), "append_items:12 <module>:10");
    o = (struct trk_frames_options){.keep_allocator_frames = 1};
    assert_string_equal(frames_of(r, s, S_REALLOC, &o),
                        "append_items:12 exec_module:940 _call_with_frames_removed:241 <module>:10");

    /* --native, hybrid stacks: the interpreter's frames go, list_resize at
     * the allocation too (the Python line is the site), runpy goes, the
     * allocators are dropped. */
    o = (struct trk_frames_options){.native = 1};
    assert_string_equal(frames_of(r, s, S_REALLOC, &o),
                        "append_items:12 exec_module:940 "
                        "_call_with_frames_removed:241 <module>:10 __libc_start_call_main");
    /* An extension's allocation: its frame stays, the call glue above it
     * goes. */
    assert_string_equal(frames_of(r, s, S_FOO_MALLOC, &o),
                        "foo_alloc exec_module:940 _call_with_frames_removed:241 <module>:10 "
                        "__libc_start_call_main");
    /* A module named python-* is not the interpreter. */
    assert_string_equal(frames_of(r, s, S_HELPER_MALLOC, &o),
                        "helper append_items:12 exec_module:940 _call_with_frames_removed:241 "
                        "<module>:10 __libc_start_call_main");
    /* No Python frame: untouched. */
    assert_string_equal(frames_of(r, s, S_NATIVE_MALLOC, &o),
                        "list_resize main __libc_start_call_main");

    /* --hide-imports: importlib's frames go too. */
    o = (struct trk_frames_options){.native = 1, .hide_imports = 1};
    assert_string_equal(frames_of(r, s, S_REALLOC, &o),
                        "append_items:12 <module>:10 __libc_start_call_main");

    /* --python-internals: everything but the allocator's own frames. */
    o = (struct trk_frames_options){.python_internals = 1};
    assert_string_equal(frames_of(r, s, S_REALLOC, &o),
                        "list_resize append_items:12 cfunction_call exec_module:940 "
                        "_call_with_frames_removed:241 _PyEval_EvalFrameDefault <module>:10 "
                        "_PyEval_EvalFrameDefault _run_code:88 Py_RunMain main "
                        "__libc_start_call_main");

    /* Allocator frames kept: libc's stays, CPython's PyMem_Realloc is the
     * interpreter's and goes. */
    o = (struct trk_frames_options){.keep_allocator_frames = 1, .native = 1};
    assert_string_equal(frames_of(r, s, S_REALLOC, &o),
                        "realloc append_items:12 exec_module:940 "
                        "_call_with_frames_removed:241 <module>:10 __libc_start_call_main");

    /* The call tree marks Python locations. */
    struct trk_profile p;
    trk_symbolizer_free(s);
    trk_reader_close(r);
    r = tc_open(&c);
    assert_int_equal(trk_profile_compute(r, NULL, &p), 0);
    s = trk_symbolizer_new(r, NULL);
    struct trk_ctree tree;
    struct trk_ctree_options to = {.select = TRK_SEL_LEAKS, .thread = -1, .inverted = 1};
    assert_int_equal(trk_ctree_init(&tree, &to), 0);
    assert_int_equal(trk_ctree_add(&tree, &p, r, s, NULL), 0);
    trk_ctree_finish(&tree);
    uint32_t up = tree.nodes[0].first_child;
    assert_string_equal(tree.locs[tree.nodes[up].loc].function, "append_items");
    assert_string_equal(tree.locs[tree.nodes[up].loc].file, "/src/script.py");
    assert_int_equal(tree.locs[tree.nodes[up].loc].line, 12);
    assert_int_equal(tree.locs[tree.nodes[up].loc].python, 1);
    assert_int_equal(tree.nodes[up].total_bytes, 8);
    trk_ctree_free(&tree);
    trk_profile_free(&p);
    trk_symbolizer_free(s);
    trk_reader_close(r);
    tc_free_all(&c);
}

/* ---- Leaks at the script's end ---------------------------------------------------------- */

/* A 100 and B 50 live at the mark; C freed before it; an anonymous 8 KiB
 * mapping; then teardown frees A and half the mapping and allocates D. */
static void script_capture(struct tcap *c, bool mark)
{
    tc_begin(c);
    unsigned t = tc_thread(c, 100, 0);
    tc_stacks(c, t, 2);
    tc_py_info(c, t, 0x030b02f0, TRK_PYF_NATIVE | TRK_PYF_PYMALLOC);
    tc_at(c, 10);
    tc_alloc(c, t, 0x1000, 100, 1);
    tc_alloc(c, t, 0x2000, 50, 2);
    tc_alloc(c, t, 0x3000, 30, 1);
    tc_free(c, t, 0x3000);
    tc_mmap(c, t, 0x100000, 8192, 2, 0);
    tc_at(c, 500);
    if (mark)
        tc_py_mark(c, t, TRK_PY_MARK_SCRIPT_END);
    tc_at(c, 600);
    tc_free(c, t, 0x1000);
    tc_munmap(c, t, 0x100000, 4096);
    tc_alloc(c, t, 0x4000, 70, 2);
    tc_at(c, 700);
}

static const struct trk_site *find_site(const struct trk_profile *p, uint32_t stack,
                                        uint32_t space, uint32_t import)
{
    for (size_t i = 0; i < p->nsites; i++)
        if (p->sites[i].stack == stack && p->sites[i].space == space &&
            p->sites[i].import == import)
            return &p->sites[i];
    fail_msg("no site for stack %u space %u import %u", stack, space, import);
    return NULL;
}

static void test_leaks_at_mark(void **state)
{
    (void)state;
    struct tcap c;
    script_capture(&c, true);
    struct trk_reader *r = tc_open(&c);
    struct trk_profile p;
    assert_int_equal(trk_profile_compute(r, NULL, &p), 0);
    const struct trk_stats *st = &p.totals;
    assert_true(st->leaks_at_script_end);
    assert_int_equal(st->script_end_ns, 500);
    assert_int_equal(st->leaked_bytes, 150);
    assert_int_equal(st->leaked_allocations, 2);
    assert_int_equal(st->mmap_leaked_bytes, 8192);
    assert_int_equal(st->exit_leaked_bytes, 120); /* B and D */
    assert_int_equal(st->exit_leaked_allocations, 2);
    assert_int_equal(st->frees, 2); /* teardown's free still counts */
    assert_int_equal(st->allocations, 4);
    assert_true(st->python);
    assert_int_equal(st->python_version, 0x030b02f0);
    assert_int_equal(st->python_flags, TRK_PYF_NATIVE | TRK_PYF_PYMALLOC);
    assert_int_equal(find_site(&p, 1, TRK_SPACE_HEAP, 0)->s.leak_bytes, 100);
    assert_int_equal(find_site(&p, 1, TRK_SPACE_HEAP, 0)->s.leak_count, 1);
    assert_int_equal(find_site(&p, 2, TRK_SPACE_HEAP, 0)->s.leak_bytes, 50);
    assert_int_equal(find_site(&p, 2, TRK_SPACE_HEAP, 0)->s.leak_count, 1);
    assert_int_equal(find_site(&p, 2, TRK_SPACE_MMAP, 0)->s.leak_bytes, 8192);
    assert_int_equal(find_site(&p, 2, TRK_SPACE_HEAP, 0)->s.free_count, 0);
    assert_int_equal(find_site(&p, 1, TRK_SPACE_HEAP, 0)->s.free_count, 2);
    assert_int_equal(p.nthreads, 1);
    assert_int_equal(p.threads[0].leaked_bytes, 150);
    trk_profile_free(&p);
    trk_reader_close(r);
    tc_free_all(&c);

    /* Without the mark: what is live at the end (B and D, half the map). */
    script_capture(&c, false);
    r = tc_open(&c);
    assert_int_equal(trk_profile_compute(r, NULL, &p), 0);
    assert_false(p.totals.leaks_at_script_end);
    assert_int_equal(p.totals.leaked_bytes, 120);
    assert_int_equal(p.totals.leaked_allocations, 2);
    assert_int_equal(p.totals.mmap_leaked_bytes, 4096);
    assert_int_equal(find_site(&p, 1, TRK_SPACE_HEAP, 0)->s.leak_bytes, 0);
    assert_int_equal(find_site(&p, 2, TRK_SPACE_HEAP, 0)->s.leak_bytes, 120);
    trk_profile_free(&p);
    trk_reader_close(r);
    tc_free_all(&c);
}

/* ---- Imports ----------------------------------------------------------------------- */

/* Thread 100 imports pkg, which imports pkg.sub; thread 200 meanwhile
 * imports other (never finished), which imports other.x. */
static void import_capture(struct tcap *c)
{
    tc_begin(c);
    unsigned t1 = tc_thread(c, 100, 0), t2 = tc_thread(c, 200, 0);
    tc_stacks(c, t1, 3);
    tc_py_info(c, t1, 0x030b02f0, TRK_PYF_NATIVE | TRK_PYF_PYMALLOC);
    tc_alloc(c, t1, 0x9000, 1000, 1); /* before any import: nobody's */
    tc_at(c, 10);
    tc_py_import(c, t1, "pkg");
    tc_alloc(c, t1, 0x1000, 100, 1);
    tc_at(c, 20);
    tc_py_import(c, t1, "pkg.sub");
    tc_alloc(c, t1, 0x2000, 40, 2);
    tc_mmap(c, t1, 0x100000, 5000, 2, 0); /* 8192 bytes: whole pages */
    tc_mmap(c, t1, 0x200000, 4096, 2, 1); /* file-backed: not memory of anyone */
    tc_at(c, 30);
    tc_py_import(c, t2, "other");
    tc_alloc(c, t2, 0x3000, 25, 3);
    tc_free(c, t1, 0x1000); /* pkg's block, freed while pkg.sub runs */
    tc_free(c, t1, 0x9000); /* nobody's */
    tc_realloc(c, t2, 0x2000, 0x5000, 60, 3); /* pkg.sub's 40 become other's 60 */
    tc_at(c, 40);
    tc_py_import_end(c, t1); /* pkg.sub */
    tc_alloc(c, t1, 0x6000, 10, 1);
    tc_munmap(c, t1, 0x100000, 4096); /* half of pkg.sub's mapping */
    tc_at(c, 50);
    tc_py_import_end(c, t1); /* pkg */
    tc_py_import_end(c, t1); /* nothing open: ignored */
    tc_alloc(c, t1, 0x7000, 1, 1);
    tc_at(c, 60);
    tc_py_import(c, t2, "other.x");
    tc_alloc(c, t2, 0x8000, 5, 3);
    tc_py_import_end(c, t2);
    tc_at(c, 90);
}

static void assert_import(const struct trk_import *x, const char *module, uint64_t alloc,
                          uint64_t cum_alloc, uint64_t live, uint64_t cum_live)
{
    assert_string_equal(x->module, module);
    assert_int_equal(x->allocated_bytes, alloc);
    assert_int_equal(x->cumulative_allocated_bytes, cum_alloc);
    assert_int_equal(x->live_bytes, live);
    assert_int_equal(x->cumulative_live_bytes, cum_live);
}

static void test_import_tree(void **state)
{
    (void)state;
    struct tcap c;
    import_capture(&c);
    struct trk_reader *r = tc_open(&c);
    struct trk_imports im;
    assert_int_equal(trk_imports_compute(r, NULL, NULL, &im), 0);
    assert_true(im.python);
    assert_int_equal(im.n, 4);
    const struct trk_import *pkg = &im.v[0], *sub = &im.v[1], *other = &im.v[2], *x = &im.v[3];
    /* pkg: 100 + 10 itself; pkg.sub's 40 and 8192 below. At its end its
     * own 10 are live, and the 4096 pages pkg.sub still maps. */
    assert_import(pkg, "pkg", 110, 8342, 10, 4106);
    assert_import(sub, "pkg.sub", 8232, 8232, 8192, 8192);
    /* other: 25 and the realloc's 60; other.x's 5 below; unfinished. */
    assert_import(other, "other", 85, 90, 85, 90);
    assert_import(x, "other.x", 5, 5, 5, 5);
    assert_int_equal(pkg->allocations, 2);
    assert_int_equal(sub->allocations, 2);
    assert_int_equal(other->allocations, 2);
    /* Shape, order, threads and times. */
    assert_int_equal(im.first_top, 0);
    assert_int_equal(pkg->next_sibling, 2);
    assert_int_equal(other->next_sibling, TRK_IMPORT_NONE);
    assert_int_equal(pkg->first_child, 1);
    assert_int_equal(sub->parent, 0);
    assert_int_equal(sub->depth, 1);
    assert_int_equal(other->first_child, 3);
    assert_int_equal(x->parent, 2);
    assert_int_equal(pkg->tid, 100);
    assert_int_equal(other->tid, 200);
    assert_int_equal(pkg->start_ns, 10);
    assert_int_equal(pkg->end_ns, 50);
    assert_int_equal(sub->start_ns, 20);
    assert_int_equal(sub->end_ns, 40);
    assert_false(pkg->unfinished);
    assert_false(x->unfinished);
    assert_true(other->unfinished);
    assert_int_equal(other->end_ns, 90);
    trk_imports_free(&im);
    trk_reader_close(r);

    /* A capture without Python: no imports, no error. */
    tc_free_all(&c);
    tc_begin(&c);
    unsigned t = tc_thread(&c, 1, 0);
    tc_alloc(&c, t, 0x10, 10, 0);
    r = tc_open(&c);
    assert_int_equal(trk_imports_compute(r, NULL, NULL, &im), 0);
    assert_int_equal(im.n, 0);
    assert_false(im.python);
    assert_int_equal(im.first_top, TRK_IMPORT_NONE);
    trk_imports_free(&im);
    trk_reader_close(r);
    tc_free_all(&c);
}

/* The same capture profiled with split_by_import: a site per import chain,
 * totals unchanged. */
static void test_split_by_import(void **state)
{
    (void)state;
    struct tcap c;
    import_capture(&c);
    struct trk_reader *r = tc_open(&c);
    struct trk_profile p, q;
    struct trk_profile_options o = {.split_by_import = true};
    assert_int_equal(trk_profile_compute(r, &o, &p), 0);
    trk_reader_close(r);
    r = tc_open(&c);
    assert_int_equal(trk_profile_compute(r, NULL, &q), 0);
    trk_reader_close(r);
    assert_int_equal(p.nimports, 5);
    assert_null(p.imports[0].module);
    assert_string_equal(p.imports[1].module, "pkg");
    assert_int_equal(p.imports[1].parent, 0);
    assert_string_equal(p.imports[2].module, "pkg.sub");
    assert_int_equal(p.imports[2].parent, 1);
    assert_string_equal(p.imports[3].module, "other");
    assert_string_equal(p.imports[4].module, "other.x");
    assert_int_equal(p.imports[4].parent, 3);
    /* Stack 1 on thread 100: outside (1000 + 1), in pkg (100 + 10). */
    assert_int_equal(find_site(&p, 1, TRK_SPACE_HEAP, 0)->s.alloc_bytes, 1001);
    assert_int_equal(find_site(&p, 1, TRK_SPACE_HEAP, 1)->s.alloc_bytes, 110);
    assert_int_equal(find_site(&p, 1, TRK_SPACE_HEAP, 1)->s.leak_bytes, 10);
    assert_int_equal(find_site(&p, 2, TRK_SPACE_HEAP, 2)->s.alloc_bytes, 40);
    assert_int_equal(find_site(&p, 2, TRK_SPACE_MMAP, 2)->s.leak_bytes, 4096);
    assert_int_equal(find_site(&p, 3, TRK_SPACE_HEAP, 3)->s.alloc_bytes, 85);
    assert_int_equal(find_site(&p, 3, TRK_SPACE_HEAP, 4)->s.alloc_bytes, 5);
    assert_int_equal(find_site(&p, 3, TRK_SPACE_HEAP, 3)->thread, 1);
    /* The sites of one thread still sum to its figures. */
    assert_int_equal(p.nthreads, 2);
    assert_int_equal(p.threads[0].bytes_allocated, q.threads[0].bytes_allocated);
    assert_int_equal(p.threads[1].leaked_bytes, q.threads[1].leaked_bytes);
    assert_memory_equal(&p.totals.allocations, &q.totals.allocations, sizeof(uint64_t));
    assert_int_equal(p.totals.leaked_bytes, q.totals.leaked_bytes);
    assert_int_equal(p.totals.peak_heap_bytes, q.totals.peak_heap_bytes);
    assert_int_equal(p.totals.python_imports, 4);
    /* Unsplit, every site is import 0 and there is no chain table. */
    assert_int_equal(q.nimports, 0);
    for (size_t i = 0; i < q.nsites; i++)
        assert_int_equal(q.sites[i].import, 0);
    trk_profile_free(&p);
    trk_profile_free(&q);
    tc_free_all(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_display_path),
        cmocka_unit_test(test_hiding_rules),
        cmocka_unit_test(test_leaks_at_mark),
        cmocka_unit_test(test_import_tree),
        cmocka_unit_test(test_split_by_import),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
