/* SPDX-License-Identifier: MIT
 *
 * test_calltree.c - source-level views (src/analysis/calltree.c, frames.c)
 * over profiles of synthetic captures, with a fake symbolizer defined here
 * (ip -> chosen frames), so every number is known: self and total on a
 * three-stack set, the inverted tree, lines merged by function, pruning into
 * [other], process roots for two captures, the thread level and filter,
 * memory spaces, inlined frames, and allocator frames dropped from the inner
 * end only.
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
#include "common/crc32c.h"
#include "format/record.h"

/* ---- The fake symbolizer ------------------------------------------------------- */

#define PROG "/usr/bin/prog"

static const struct trk_frame F_MAIN[] = {{"main", "main.c", 10, 0, PROG, 0x10, 0x1000}};
static const struct trk_frame F_WORK[] = {{"work", "work.c", 20, 0, PROG, 0x20, 0x2000}};
static const struct trk_frame F_WORK21[] = {{"work", "work.c", 21, 0, PROG, 0x21, 0x2001}};
static const struct trk_frame F_HELPER[] = {{"helper", "h.c", 30, 0, PROG, 0x30, 0x3000}};
static const struct trk_frame F_INLINED[] = {{"inl_leaf", "inl.h", 5, 1, PROG, 0x40, 0x4000},
                                             {"outer", "o.c", 40, 0, PROG, 0x40, 0x4000}};
static const struct trk_frame F_HOOK[] = {
    {"malloc", "hooks_malloc.c", 50, 0, "/opt/tracker/lib/libtracker.so", 0x50, 0x5000}};
static const struct trk_frame F_NEW[] = {
    {"operator new(unsigned long)", NULL, 0, 0, "/usr/lib/libstdc++.so.6", 0x51, 0x5100}};
static const struct trk_frame F_MALLOCX[] = {
    {"je_mallocx", NULL, 0, 0, "/usr/lib/libjemalloc.so.2", 0x52, 0x5200}};
static const struct trk_frame F_FREE[] = {{"free", NULL, 0, 0, "/lib/libc.so.6", 0x70, 0x7000}};
static const struct trk_frame F_UNKNOWN[] = {{NULL, NULL, 0, 0, "/lib/libfoo.so", 0x600, 0x6000}};

static const struct {
    uint64_t ip;
    const struct trk_frame *f;
    int n;
} fake_table[] = {
    {0x1000, F_MAIN, 1},    {0x2000, F_WORK, 1}, {0x2001, F_WORK21, 1}, {0x3000, F_HELPER, 1},
    {0x4000, F_INLINED, 2}, {0x5000, F_HOOK, 1}, {0x5100, F_NEW, 1},    {0x5200, F_MALLOCX, 1},
    {0x6000, F_UNKNOWN, 1}, {0x7000, F_FREE, 1},
};

struct trk_symbolizer {
    struct trk_frame addr; /* the fallback frame: just the address */
};

struct trk_symbolizer *trk_symbolizer_new(const struct trk_reader *r,
                                          const struct trk_symbolizer_options *opts)
{
    (void)r;
    (void)opts;
    return calloc(1, sizeof(struct trk_symbolizer));
}

int trk_symbolize(struct trk_symbolizer *s, uint64_t ip, const struct trk_frame **frames)
{
    for (size_t i = 0; i < sizeof(fake_table) / sizeof(fake_table[0]); i++) {
        if (fake_table[i].ip == ip) {
            *frames = fake_table[i].f;
            return fake_table[i].n;
        }
    }
    s->addr = (struct trk_frame){.offset = ip, .ip = ip};
    *frames = &s->addr;
    return 1;
}

void trk_symbolizer_free(struct trk_symbolizer *s)
{
    free(s);
}

#include "tcap.h"

/* ---- Fixtures ------------------------------------------------------------------ */

/* Stack ids of the fixture, each defined as (parent, ip). */
enum {
    S_MAIN = 1,        /* main */
    S_WORK,            /* main > work:20 */
    S_WORK_HELPER,     /* main > work:20 > helper */
    S_HELPER,          /* main > helper */
    S_WORK21,          /* main > work:21 */
    S_NEW,             /* main > helper > operator new */
    S_NEW_HOOK,        /* main > helper > operator new > [tracker] malloc */
    S_FREE_OUTER,      /* free (outermost) */
    S_FREE_HELPER,     /* free > helper: allocator frame not at the inner end */
    S_INLINED,         /* main > outer > inl_leaf (inlined) */
    S_UNKNOWN,         /* main > libfoo.so+0x600 */
    S_MALLOCX,         /* main > je_mallocx */
    S_HOOK_UNDER_MAIN, /* main > [tracker] malloc */
    S_HOOK_MID,        /* main > [tracker] malloc > helper (an interposed dlopen) */
    S_COUNT,
};

static const uint64_t stack_def[S_COUNT][2] = {
    [S_MAIN] = {0, 0x1000},
    [S_WORK] = {S_MAIN, 0x2000},
    [S_WORK_HELPER] = {S_WORK, 0x3000},
    [S_HELPER] = {S_MAIN, 0x3000},
    [S_WORK21] = {S_MAIN, 0x2001},
    [S_NEW] = {S_HELPER, 0x5100},
    [S_NEW_HOOK] = {S_NEW, 0x5000},
    [S_FREE_OUTER] = {0, 0x7000},
    [S_FREE_HELPER] = {S_FREE_OUTER, 0x3000},
    [S_INLINED] = {S_MAIN, 0x4000},
    [S_UNKNOWN] = {S_MAIN, 0x6000},
    [S_MALLOCX] = {S_MAIN, 0x5200},
    [S_HOOK_UNDER_MAIN] = {S_MAIN, 0x5000},
    [S_HOOK_MID] = {S_HOOK_UNDER_MAIN, 0x3000},
};

struct fixture {
    struct tcap cap;
    struct trk_reader *r;
    struct trk_symbolizer *sym;
    struct trk_profile prof;
};

struct alloc_spec {
    unsigned thread; /* index into the fixture's threads */
    uint64_t stack, size;
};

/* A capture with two threads (tids 100 "main", 200) making the given
 * leaked allocations, profiled. */
static void fixture_make(struct fixture *f, const struct alloc_spec *a, size_t n)
{
    tc_begin(&f->cap);
    unsigned t[2] = {tc_thread(&f->cap, 100, 0), tc_thread(&f->cap, 200, 0)};
    tc_name(&f->cap, t[0], 100, "main");
    for (uint64_t id = 1; id < S_COUNT; id++)
        tc_stack(&f->cap, t[0], id, stack_def[id][0], stack_def[id][1]);
    for (size_t i = 0; i < n; i++)
        tc_alloc(&f->cap, t[a[i].thread], 0x10000 + 0x1000 * i, a[i].size, a[i].stack);
    f->r = tc_open(&f->cap);
    assert_int_equal(trk_profile_compute(f->r, NULL, &f->prof), 0);
    f->sym = trk_symbolizer_new(f->r, NULL);
    assert_non_null(f->sym);
}

static void fixture_free(struct fixture *f)
{
    trk_symbolizer_free(f->sym);
    trk_profile_free(&f->prof);
    trk_reader_close(f->r);
    tc_free_all(&f->cap);
}

/* The three-stack set: main>work>helper 100, main>work 30, main>helper 7. */
static const struct alloc_spec three[] = {
    {0, S_WORK_HELPER, 100},
    {0, S_WORK, 30},
    {0, S_HELPER, 7},
};

static void build(struct trk_ctree *t, const struct trk_ctree_options *o, struct fixture *f,
                  const char *label)
{
    assert_int_equal(trk_ctree_init(t, o), 0);
    assert_int_equal(trk_ctree_add(t, &f->prof, f->r, f->sym, label), 0);
    trk_ctree_finish(t);
}

static const char *fn(const struct trk_ctree *t, uint32_t node)
{
    static char buf[128];
    return trk_location_name(&t->locs[t->nodes[node].loc], buf, sizeof(buf));
}

/* The child of node named name (NULL if none). */
static const struct trk_ctree_node *child(const struct trk_ctree *t, uint32_t node,
                                          const char *name)
{
    for (uint32_t c = t->nodes[node].first_child; c; c = t->nodes[c].next_sibling)
        if (strcmp(fn(t, c), name) == 0)
            return &t->nodes[c];
    return NULL;
}

static uint32_t id_of(const struct trk_ctree *t, const struct trk_ctree_node *n)
{
    assert_non_null(n);
    return (uint32_t)(n - t->nodes);
}

static size_t nchildren(const struct trk_ctree *t, uint32_t node)
{
    size_t k = 0;
    for (uint32_t c = t->nodes[node].first_child; c; c = t->nodes[c].next_sibling)
        k++;
    return k;
}

static void assert_node(const struct trk_ctree_node *n, uint64_t self, uint64_t total,
                        uint64_t count)
{
    assert_non_null(n);
    assert_int_equal(n->self_bytes, self);
    assert_int_equal(n->total_bytes, total);
    assert_int_equal(n->total_count, count);
}

/* ---- Tests ---------------------------------------------------------------------- */

static void test_select(void **state)
{
    (void)state;
    struct trk_site_stats s = {.alloc_count = 1,
                               .alloc_bytes = 2,
                               .peak_count = 3,
                               .peak_bytes = 4,
                               .leak_count = 5,
                               .leak_bytes = 6,
                               .temp_count = 7,
                               .temp_bytes = 8};
    uint64_t b, c;
    trk_select_value(&s, TRK_SEL_PEAK, &b, &c);
    assert_true(b == 4 && c == 3);
    trk_select_value(&s, TRK_SEL_LEAKS, &b, &c);
    assert_true(b == 6 && c == 5);
    trk_select_value(&s, TRK_SEL_TEMPORARY, &b, &c);
    assert_true(b == 8 && c == 7);
    trk_select_value(&s, TRK_SEL_ALLOCATED, &b, &c);
    assert_true(b == 2 && c == 1);
    assert_string_equal(trk_select_name(TRK_SEL_PEAK), "peak");
    assert_string_equal(trk_select_name(TRK_SEL_LEAKS), "leaks");
    assert_string_equal(trk_select_name(TRK_SEL_TEMPORARY), "temporary");
    assert_string_equal(trk_select_name(TRK_SEL_ALLOCATED), "allocated");
}

static void test_self_total(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f, three, 3);
    struct trk_ctree t;
    build(&t, &(struct trk_ctree_options){.select = TRK_SEL_LEAKS, .thread = -1}, &f, NULL);
    assert_node(&t.nodes[0], 0, 137, 3);
    assert_int_equal(nchildren(&t, 0), 1);
    const struct trk_ctree_node *m = child(&t, 0, "main");
    assert_node(m, 0, 137, 3);
    /* Largest first. */
    uint32_t first = m->first_child;
    assert_string_equal(fn(&t, first), "work");
    assert_string_equal(fn(&t, t.nodes[first].next_sibling), "helper");
    const struct trk_ctree_node *w = child(&t, id_of(&t, m), "work");
    assert_node(w, 30, 130, 2);
    assert_node(child(&t, id_of(&t, w), "helper"), 100, 100, 1);
    assert_node(child(&t, id_of(&t, m), "helper"), 7, 7, 1);
    const struct trk_location *l = &t.locs[w->loc];
    assert_int_equal(l->kind, TRK_LOC_FRAME);
    assert_string_equal(l->file, "work.c");
    assert_int_equal(l->line, 20);
    assert_string_equal(l->module, PROG);
    /* helper interned once, used by two nodes. */
    assert_int_equal(child(&t, id_of(&t, w), "helper")->loc,
                     child(&t, id_of(&t, m), "helper")->loc);
    trk_ctree_free(&t);

    /* Peak: all three were live at the end, which is the peak. */
    build(&t, &(struct trk_ctree_options){.select = TRK_SEL_PEAK, .thread = -1}, &f, NULL);
    assert_node(&t.nodes[0], 0, 137, 3);
    trk_ctree_free(&t);
    /* Nothing was temporary. */
    build(&t, &(struct trk_ctree_options){.select = TRK_SEL_TEMPORARY, .thread = -1}, &f, NULL);
    assert_int_equal(t.nnodes, 1);
    assert_node(&t.nodes[0], 0, 0, 0);
    trk_ctree_free(&t);
    fixture_free(&f);
}

static void test_inverted(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f, three, 3);
    struct trk_ctree t;
    build(&t, &(struct trk_ctree_options){.select = TRK_SEL_LEAKS, .thread = -1, .inverted = 1}, &f,
          NULL);
    assert_node(&t.nodes[0], 0, 137, 3);
    assert_int_equal(nchildren(&t, 0), 2);
    const struct trk_ctree_node *h = child(&t, 0, "helper"), *w = child(&t, 0, "work");
    assert_int_equal(t.nodes[0].first_child, id_of(&t, h)); /* 107 before 30 */
    assert_node(h, 0, 107, 2);
    assert_node(w, 0, 30, 1);
    const struct trk_ctree_node *hw = child(&t, id_of(&t, h), "work");
    assert_node(hw, 0, 100, 1);
    assert_node(child(&t, id_of(&t, hw), "main"), 100, 100, 1);
    assert_node(child(&t, id_of(&t, h), "main"), 7, 7, 1);
    assert_node(child(&t, id_of(&t, w), "main"), 30, 30, 1);
    trk_ctree_free(&t);
    fixture_free(&f);
}

static void test_by_function(void **state)
{
    (void)state;
    static const struct alloc_spec a[] = {{0, S_WORK, 30}, {0, S_WORK21, 11}};
    struct fixture f;
    fixture_make(&f, a, 2);
    struct trk_ctree t;
    build(&t, &(struct trk_ctree_options){.select = TRK_SEL_ALLOCATED, .thread = -1}, &f, NULL);
    const struct trk_ctree_node *m = child(&t, 0, "main");
    assert_int_equal(nchildren(&t, id_of(&t, m)), 2); /* work:20 and work:21 */
    assert_int_equal(t.nodes[m->first_child].self_bytes, 30);
    trk_ctree_free(&t);

    build(&t,
          &(struct trk_ctree_options){.select = TRK_SEL_ALLOCATED, .thread = -1, .by_function = 1},
          &f, NULL);
    m = child(&t, 0, "main");
    assert_int_equal(nchildren(&t, id_of(&t, m)), 1);
    const struct trk_ctree_node *w = child(&t, id_of(&t, m), "work");
    assert_node(w, 41, 41, 2);
    assert_int_equal(t.locs[w->loc].line, 0);
    assert_string_equal(t.locs[w->loc].file, "work.c");
    trk_ctree_free(&t);
    fixture_free(&f);
}

static void test_prune_other(void **state)
{
    (void)state;
    static const struct alloc_spec a[] = {
        {0, S_WORK_HELPER, 100}, {0, S_WORK, 30}, {0, S_HELPER, 7}, {0, S_INLINED, 5}};
    struct fixture f;
    fixture_make(&f, a, 4);
    struct trk_ctree t;
    build(&t, &(struct trk_ctree_options){.select = TRK_SEL_LEAKS, .thread = -1}, &f, NULL);
    /* main > outer > inl_leaf: the inlined frame is the inner one. */
    const struct trk_ctree_node *o = child(&t, id_of(&t, child(&t, 0, "main")), "outer");
    assert_node(child(&t, id_of(&t, o), "inl_leaf"), 5, 5, 1);
    size_t before = t.nnodes;
    assert_int_equal(before, 7); /* root main work helper helper outer inl_leaf */
    /* 10% of 142 = 14.2: helper (7) and outer (5, with inl_leaf) merge. */
    assert_int_equal(trk_ctree_prune(&t, 0.10), 3);
    assert_int_equal(t.nnodes, before - 3 + 1);
    assert_node(&t.nodes[0], 0, 142, 4);
    const struct trk_ctree_node *m = child(&t, 0, "main");
    assert_node(m, 0, 142, 4);
    assert_int_equal(nchildren(&t, id_of(&t, m)), 2);
    const struct trk_ctree_node *other = &t.nodes[t.nodes[m->first_child].next_sibling];
    assert_int_equal(t.locs[other->loc].kind, TRK_LOC_OTHER);
    assert_string_equal(fn(&t, id_of(&t, other)), "[other]");
    assert_node(other, 12, 12, 2);
    assert_int_equal(other->first_child, 0);
    /* Untouched where nothing is small; parents still precede children. */
    assert_node(child(&t, id_of(&t, child(&t, id_of(&t, m), "work")), "helper"), 100, 100, 1);
    for (uint32_t n = 1; n < t.nnodes; n++)
        assert_true(t.nodes[n].parent < n);
    /* Finishing again keeps the figures. */
    trk_ctree_finish(&t);
    assert_node(&t.nodes[0], 0, 142, 4);
    assert_int_equal(trk_ctree_prune(&t, 0.0), 0);
    trk_ctree_free(&t);
    fixture_free(&f);
}

static void test_process_roots(void **state)
{
    (void)state;
    static const struct alloc_spec a1[] = {{0, S_WORK, 30}};
    static const struct alloc_spec a2[] = {{0, S_WORK, 5}, {0, S_HELPER, 2}};
    struct fixture f1, f2;
    fixture_make(&f1, a1, 1);
    fixture_make(&f2, a2, 2);
    struct trk_ctree t;
    struct trk_ctree_options o = {.select = TRK_SEL_LEAKS, .thread = -1};
    assert_int_equal(trk_ctree_init(&t, &o), 0);
    assert_int_equal(trk_ctree_add(&t, &f1.prof, f1.r, f1.sym, "pid 1: a"), 0);
    assert_int_equal(trk_ctree_add(&t, &f2.prof, f2.r, f2.sym, "pid 2: b"), 0);
    trk_ctree_finish(&t);
    assert_node(&t.nodes[0], 0, 37, 3);
    assert_int_equal(nchildren(&t, 0), 2);
    const struct trk_ctree_node *p1 = child(&t, 0, "pid 1: a"), *p2 = child(&t, 0, "pid 2: b");
    assert_int_equal(t.locs[p1->loc].kind, TRK_LOC_PROCESS);
    assert_int_equal(t.nodes[0].first_child, id_of(&t, p1));
    assert_node(p1, 0, 30, 1);
    assert_node(p2, 0, 7, 2);
    const struct trk_ctree_node *m1 = child(&t, id_of(&t, p1), "main");
    const struct trk_ctree_node *m2 = child(&t, id_of(&t, p2), "main");
    assert_int_equal(m1->loc, m2->loc); /* one location across captures */
    assert_node(child(&t, id_of(&t, m2), "work"), 5, 5, 1);
    trk_ctree_free(&t);

    /* Without labels the two captures merge. */
    assert_int_equal(trk_ctree_init(&t, &o), 0);
    assert_int_equal(trk_ctree_add(&t, &f1.prof, f1.r, f1.sym, NULL), 0);
    assert_int_equal(trk_ctree_add(&t, &f2.prof, f2.r, f2.sym, NULL), 0);
    trk_ctree_finish(&t);
    assert_node(child(&t, id_of(&t, child(&t, 0, "main")), "work"), 35, 35, 2);
    trk_ctree_free(&t);
    fixture_free(&f1);
    fixture_free(&f2);
}

static void test_threads_and_spaces(void **state)
{
    (void)state;
    static const struct alloc_spec a[] = {{0, S_WORK, 30}, {1, S_WORK, 5}, {1, S_HELPER, 2}};
    struct fixture f;
    fixture_make(&f, a, 3);
    struct trk_ctree t;
    build(&t,
          &(struct trk_ctree_options){.select = TRK_SEL_LEAKS, .thread = -1, .split_threads = 1},
          &f, NULL);
    const struct trk_ctree_node *t0 = child(&t, 0, "thread 100 (main)");
    const struct trk_ctree_node *t1 = child(&t, 0, "thread 200");
    assert_int_equal(t.locs[t0->loc].kind, TRK_LOC_THREAD);
    assert_node(t0, 0, 30, 1);
    assert_node(t1, 0, 7, 2);
    trk_ctree_free(&t);

    build(&t, &(struct trk_ctree_options){.select = TRK_SEL_LEAKS, .thread = 1}, &f, NULL);
    assert_node(&t.nodes[0], 0, 7, 2);
    trk_ctree_free(&t);
    fixture_free(&f);

    /* A tid reused after its thread exited: two threads, kept apart. */
    tc_begin(&f.cap);
    unsigned a1 = tc_thread(&f.cap, 300, 0);
    for (uint64_t id = 1; id < S_COUNT; id++)
        tc_stack(&f.cap, a1, id, stack_def[id][0], stack_def[id][1]);
    tc_alloc(&f.cap, a1, 0x10000, 3, S_WORK);
    tc_exit(&f.cap, a1);
    unsigned a2 = tc_thread(&f.cap, 300, 0);
    tc_alloc(&f.cap, a2, 0x20000, 4, S_WORK);
    f.r = tc_open(&f.cap);
    assert_int_equal(trk_profile_compute(f.r, NULL, &f.prof), 0);
    f.sym = trk_symbolizer_new(f.r, NULL);
    build(&t,
          &(struct trk_ctree_options){.select = TRK_SEL_LEAKS, .thread = -1, .split_threads = 1},
          &f, "pid 1: x");
    uint32_t proc = t.nodes[0].first_child;
    assert_int_equal(nchildren(&t, proc), 2);
    assert_node(child(&t, proc, "thread 300 #0"), 0, 3, 1);
    assert_node(child(&t, proc, "thread 300 #1"), 0, 4, 1);
    trk_ctree_free(&t);
    fixture_free(&f);

    /* An anonymous mapping counts only when its space is selected. */
    tc_begin(&f.cap);
    unsigned th = tc_thread(&f.cap, 100, 0);
    for (uint64_t id = 1; id < S_COUNT; id++)
        tc_stack(&f.cap, th, id, stack_def[id][0], stack_def[id][1]);
    tc_alloc(&f.cap, th, 0x10000, 30, S_WORK);
    tc_mmap(&f.cap, th, 0x7f0000000000, 5000, S_HELPER, 0);
    f.r = tc_open(&f.cap);
    assert_int_equal(trk_profile_compute(f.r, NULL, &f.prof), 0);
    f.sym = trk_symbolizer_new(f.r, NULL);
    build(&t, &(struct trk_ctree_options){.select = TRK_SEL_LEAKS, .thread = -1}, &f, NULL);
    assert_node(&t.nodes[0], 0, 30, 1);
    trk_ctree_free(&t);
    build(&t,
          &(struct trk_ctree_options){.select = TRK_SEL_LEAKS,
                                      .thread = -1,
                                      .spaces = 1u << TRK_SPACE_HEAP | 1u << TRK_SPACE_MMAP},
          &f, NULL);
    assert_node(&t.nodes[0], 0, 30 + 8192, 2);
    trk_ctree_free(&t);
    build(&t,
          &(struct trk_ctree_options){
              .select = TRK_SEL_LEAKS, .thread = -1, .spaces = 1u << TRK_SPACE_MMAP},
          &f, NULL);
    assert_node(child(&t, id_of(&t, child(&t, 0, "main")), "helper"), 8192, 8192, 1);
    trk_ctree_free(&t);
    fixture_free(&f);
}

static void expect_frames(struct fixture *f, uint64_t stack, int keep, const char *const *names,
                          int n)
{
    struct trk_frame_buf buf = {0};
    const struct trk_frame *fr;
    struct trk_frames_options o = {.keep_allocator_frames = keep};
    int got = trk_stack_frames(f->r, f->sym, stack, &o, &buf, &fr);
    assert_int_equal(got, n);
    char tmp[128];
    for (int i = 0; i < n; i++) {
        struct trk_location l = {
            .function = fr[i].function, .module = fr[i].module, .offset = fr[i].offset};
        assert_string_equal(trk_location_name(&l, tmp, sizeof(tmp)), names[i]);
    }
    trk_frame_buf_free(&buf);
}

static void test_allocator_frames(void **state)
{
    (void)state;
    static const struct alloc_spec a[] = {{0, S_NEW_HOOK, 64}, {0, S_MALLOCX, 8}};
    struct fixture f;
    fixture_make(&f, a, 2);
    expect_frames(&f, S_NEW_HOOK, 0, (const char *const[]){"helper", "main"}, 2);
    expect_frames(&f, S_NEW_HOOK, 1,
                  (const char *const[]){"malloc", "operator new(unsigned long)", "helper", "main"},
                  4);
    expect_frames(&f, S_MALLOCX, 0, (const char *const[]){"main"}, 1);
    /* Only at the inner end: free as the outermost frame stays. */
    expect_frames(&f, S_FREE_HELPER, 0, (const char *const[]){"helper", "free"}, 2);
    expect_frames(&f, S_FREE_OUTER, 0, NULL, 0);
    /* The tracker's own frames go wherever they are. */
    expect_frames(&f, S_HOOK_MID, 0, (const char *const[]){"helper", "main"}, 2);
    expect_frames(&f, S_HOOK_MID, 1, (const char *const[]){"helper", "malloc", "main"}, 3);
    expect_frames(&f, S_INLINED, 0, (const char *const[]){"inl_leaf", "outer", "main"}, 3);
    expect_frames(&f, S_UNKNOWN, 0, (const char *const[]){"libfoo.so+0x600", "main"}, 2);
    expect_frames(&f, 0, 0, NULL, 0);

    /* The tree sees the caller, not the allocator. */
    struct trk_ctree t;
    build(&t, &(struct trk_ctree_options){.select = TRK_SEL_LEAKS, .thread = -1}, &f, NULL);
    const struct trk_ctree_node *m = child(&t, 0, "main");
    assert_node(m, 8, 72, 2);
    assert_node(child(&t, id_of(&t, m), "helper"), 64, 64, 1);
    trk_ctree_free(&t);
    build(&t,
          &(struct trk_ctree_options){
              .select = TRK_SEL_LEAKS, .thread = -1, .frames.keep_allocator_frames = 1},
          &f, NULL);
    m = child(&t, 0, "main");
    assert_node(m, 0, 72, 2);
    assert_node(child(&t, id_of(&t, m), "je_mallocx"), 8, 8, 1);
    trk_ctree_free(&t);
    fixture_free(&f);
}

static void test_location_name(void **state)
{
    (void)state;
    char buf[64];
    struct trk_location l = {.module = "/lib/x/libfoo.so", .offset = 0x1a2b};
    assert_string_equal(trk_location_name(&l, buf, sizeof(buf)), "libfoo.so+0x1a2b");
    l.module = NULL;
    assert_string_equal(trk_location_name(&l, buf, sizeof(buf)), "0x1a2b");
    l.function = "f";
    assert_string_equal(trk_location_name(&l, buf, sizeof(buf)), "f");
    l.kind = TRK_LOC_OTHER;
    assert_string_equal(trk_location_name(&l, buf, sizeof(buf)), "[other]");
    l = (struct trk_location){.kind = TRK_LOC_PROCESS, .function = "pid 7: x"};
    assert_string_equal(trk_location_name(&l, buf, sizeof(buf)), "pid 7: x");
}

/* trk_ctree_add_sites says which node each site went to (what the
 * flamegraph re-sums per thread and time range), NONE outside the
 * selection; the tree's strings are interned by content. */
static void test_site_nodes_and_strings(void **state)
{
    (void)state;
    struct fixture f;
    fixture_make(&f, three, 3);
    struct trk_ctree t;
    struct trk_ctree_options o = {.select = TRK_SEL_LEAKS, .thread = -1};
    assert_int_equal(trk_ctree_init(&t, &o), 0);
    uint32_t *sn = calloc(f.prof.nsites + 1, sizeof(*sn));
    assert_non_null(sn);
    assert_int_equal(trk_ctree_add_sites(&t, &f.prof, f.r, f.sym, NULL, sn), 0);
    trk_ctree_finish(&t);
    uint32_t m = id_of(&t, child(&t, 0, "main"));
    uint32_t work = id_of(&t, child(&t, m, "work"));
    uint32_t wh = id_of(&t, child(&t, work, "helper"));
    uint32_t mh = id_of(&t, child(&t, m, "helper"));
    size_t seen = 0;
    for (size_t i = 0; i < f.prof.nsites; i++) {
        uint64_t st = f.prof.sites[i].stack;
        uint32_t want = st == S_WORK_HELPER ? wh
                        : st == S_WORK      ? work
                        : st == S_HELPER    ? mh
                                            : TRK_CTREE_NONE;
        assert_int_equal(sn[i], want);
        seen += want != TRK_CTREE_NONE;
    }
    assert_int_equal(seen, 3);

    size_t n = trk_ctree_nstrings(&t);
    uint32_t a = trk_ctree_string_id(&t, "work");
    assert_true(a < n); /* the function's own string, not a new one */
    assert_string_equal(trk_ctree_string(&t, a), "work");
    assert_int_equal(trk_ctree_nstrings(&t), n);
    assert_int_equal(trk_ctree_string_id(&t, "libfoo.so+0x600"), n);
    assert_int_equal(trk_ctree_string_id(&t, "libfoo.so+0x600"), n);
    assert_int_equal(trk_ctree_nstrings(&t), n + 1);
    assert_int_equal(trk_ctree_string_id(&t, NULL), TRK_CTREE_NONE);
    assert_null(trk_ctree_string(&t, (uint32_t)n + 1));
    trk_ctree_free(&t);

    /* Nothing temporary: every site is outside the selection. */
    o.select = TRK_SEL_TEMPORARY;
    assert_int_equal(trk_ctree_init(&t, &o), 0);
    assert_int_equal(trk_ctree_add_sites(&t, &f.prof, f.r, f.sym, NULL, sn), 0);
    for (size_t i = 0; i < f.prof.nsites; i++)
        assert_int_equal(sn[i], TRK_CTREE_NONE);
    assert_int_equal(t.nnodes, 1);
    trk_ctree_free(&t);
    free(sn);
    fixture_free(&f);
}

/* The tree as a location table (the reports' loctab): line-level keys by
 * content, ids in first-seen order from 1; basenames merges builds in two
 * directories and shows the first paths. */
static void test_location_table(void **state)
{
    (void)state;
    struct trk_frame a = {"f", "/old/src/x.c", 10, 0, "/old/lib/libx.so", 0x10, 0x1010};
    struct trk_frame b = {"f", "/new/src/x.c", 10, 0, "/new/lib/libx.so", 0x20, 0x2020};
    struct trk_frame c = {"f", "/new/src/x.c", 11, 0, "/new/lib/libx.so", 0x24, 0x2024};
    struct trk_frame u1 = {NULL, "/src/y.c", 5, 0, "/lib/liby.so", 0x30, 0x3030};
    struct trk_frame u2 = {NULL, "/src/y.c", 6, 0, "/lib/liby.so", 0x30, 0x3030};
    struct trk_ctree t;
    struct trk_ctree_options o = {.thread = -1};
    assert_int_equal(trk_ctree_init(&t, &o), 0);
    assert_int_equal(trk_ctree_location(&t, &a), 1);
    assert_int_equal(trk_ctree_location(&t, &b), 2); /* another file, another location */
    assert_int_equal(trk_ctree_location(&t, &a), 1);
    /* Without a function, the file and line a line table gives still count. */
    assert_int_equal(trk_ctree_location(&t, &u1), 3);
    assert_int_equal(trk_ctree_location(&t, &u2), 4);
    assert_string_equal(t.locs[3].file, "/src/y.c");
    assert_int_equal(t.locs[4].line, 6);
    trk_ctree_free(&t);

    o.basenames = 1;
    assert_int_equal(trk_ctree_init(&t, &o), 0);
    assert_int_equal(trk_ctree_location(&t, &a), 1);
    assert_int_equal(trk_ctree_location(&t, &b), 1);
    assert_int_equal(trk_ctree_location(&t, &c), 2); /* another line */
    assert_string_equal(t.locs[1].file, "/old/src/x.c");
    assert_string_equal(t.locs[1].module, "/old/lib/libx.so");
    assert_int_equal(t.nlocs, 3);
    trk_ctree_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_self_total),
        cmocka_unit_test(test_inverted),
        cmocka_unit_test(test_by_function),
        cmocka_unit_test(test_prune_other),
        cmocka_unit_test(test_process_roots),
        cmocka_unit_test(test_threads_and_spaces),
        cmocka_unit_test(test_allocator_frames),
        cmocka_unit_test(test_location_name),
        cmocka_unit_test(test_site_nodes_and_strings),
        cmocka_unit_test(test_location_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
