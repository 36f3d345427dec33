/* SPDX-License-Identifier: MIT
 *
 * test_suppress_graph.c - issue 11's suppressions (src/report/suppress.c,
 * suppress_defaults.c, suppress_follow.c): the three scopes a suppression
 * is looked for in (any frame, the innermost one, a module's own
 * constructor), the default set against the stacks it must hide (the
 * emergency pool, a stdio buffer, locale data, the loader's link maps) and
 * those it must not (a user's std::string made in a library constructor, a
 * leak in main), and suppressions following the leak graph: blocks lost
 * only through a suppressed leader go with it (chains, several trees, a
 * block that is not lost, a damaged map with a cycle), against a naive
 * model on random forests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/report.h"

#define LDSO   "/lib64/ld-linux-x86-64.so.2"
#define LIBC   "/lib/x86_64-linux-gnu/libc.so.6"
#define LIBSTD "/lib/x86_64-linux-gnu/libstdc++.so.6"

static const struct trk_sup_frame pool_stack[] = {
    {NULL, NULL, LIBSTD}, /* the unnamed pool constructor of a stripped libstdc++ */
    {"call_init", "dl-init.c", LDSO},
    {"_dl_init", "dl-init.c", LDSO},
    {"_dl_start_user", NULL, LDSO},
};

/* A library's constructor building a std::string: libstdc++ innermost, but
 * the next frame is the library's, not the loader's. */
static const struct trk_sup_frame user_string_stack[] = {
    {"std::__cxx11::basic_string<char>::_M_create", NULL, LIBSTD},
    {"init_names", "names.cc", "/opt/app/libnames.so"},
    {"call_init", "dl-init.c", LDSO},
    {"_dl_init", "dl-init.c", LDSO},
};

static const struct trk_sup_frame stdio_stack[] = {
    {"_IO_file_doallocate", "filedoalloc.c", LIBC},
    {"_IO_doallocbuf", "genops.c", LIBC},
    {"_IO_new_file_overflow", "fileops.c", LIBC},
    {"puts", "ioputs.c", LIBC},
    {"main", "app.c", "/opt/app/app"},
};

static const struct trk_sup_frame locale_stack[] = {
    {"_nl_intern_locale_data", "loadlocale.c", LIBC},
    {"_nl_load_locale", "loadlocale.c", LIBC},
    {"_nl_find_locale", "findlocale.c", LIBC},
    {"setlocale", "setlocale.c", LIBC},
    {"main", "app.c", "/opt/app/app"},
};

static const struct trk_sup_frame loader_stack[] = {
    {"_dl_new_object", "dl-object.c", LDSO},
    {"_dl_map_object_from_fd", "dl-load.c", LDSO},
    {"dlopen", "dlopen.c", LIBC},
    {"main", "app.c", "/opt/app/app"},
};

static const struct trk_sup_frame main_leak_stack[] = {
    {"make_table", "app.c", "/opt/app/app"},
    {"main", "app.c", "/opt/app/app"},
    {"__libc_start_call_main", NULL, LIBC},
};

/* A program's own FILE it never closed: fopen's malloc, not a buffer. */
static const struct trk_sup_frame fopen_stack[] = {
    {"__fopen_internal", "iofopen.c", LIBC},
    {"main", "app.c", "/opt/app/app"},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *hit_pattern(const struct trk_suppressions *s, const struct trk_sup_frame *f,
                               size_t n)
{
    int32_t p = trk_suppressions_find(s, f, n);
    return p < 0 ? NULL : s->v[p].pattern;
}

static void test_defaults_hide_one_time_state(void **state)
{
    (void)state;
    struct trk_suppressions s = {0};
    assert_int_equal(trk_suppressions_add_defaults(&s), 0);
    assert_true(s.n >= 10);
    for (size_t i = 0; i < s.n; i++) {
        assert_true(s.v[i].builtin);
        assert_non_null(s.v[i].about);
    }
    assert_string_equal(hit_pattern(&s, pool_stack, N(pool_stack)), "^libstdc++.so");
    assert_string_equal(hit_pattern(&s, stdio_stack, N(stdio_stack)), "_IO_file_doallocate");
    assert_string_equal(hit_pattern(&s, locale_stack, N(locale_stack)), "setlocale");
    assert_string_equal(hit_pattern(&s, loader_stack, N(loader_stack)), "^ld-linux");
    /* What a program made and could free stays a leak. */
    assert_null(hit_pattern(&s, user_string_stack, N(user_string_stack)));
    assert_null(hit_pattern(&s, main_leak_stack, N(main_leak_stack)));
    assert_null(hit_pattern(&s, fopen_stack, N(fopen_stack)));
    assert_null(hit_pattern(&s, NULL, 0));
    trk_suppressions_free(&s);
}

static struct trk_suppressions one(const char *pattern, enum trk_sup_scope scope)
{
    struct trk_suppressions s = {.n = 1};
    s.v = calloc(1, sizeof(*s.v));
    assert_non_null(s.v);
    s.v[0].pattern = strdup(pattern);
    s.v[0].scope = scope;
    return s;
}

static void test_scopes(void **state)
{
    (void)state;
    /* Any frame, as LeakSanitizer's leak: lines. */
    struct trk_suppressions s = one("main", TRK_SUP_ANY);
    assert_int_equal(trk_suppressions_find(&s, stdio_stack, N(stdio_stack)), 0);
    trk_suppressions_free(&s);
    /* Innermost only: setlocale is frame 3 of locale_stack. */
    s = one("setlocale", TRK_SUP_TOP);
    assert_int_equal(trk_suppressions_find(&s, locale_stack, N(locale_stack)), -1);
    trk_suppressions_free(&s);
    s = one("^_nl_intern", TRK_SUP_TOP);
    assert_int_equal(trk_suppressions_find(&s, locale_stack, N(locale_stack)), 0);
    trk_suppressions_free(&s);
    /* A module's constructor: the module's frames, then the loader. */
    s = one("^libnames.so", TRK_SUP_CTOR);
    assert_int_equal(trk_suppressions_find(&s, user_string_stack, N(user_string_stack)), -1);
    static const struct trk_sup_frame own_ctor[] = {
        {"init_names", "names.cc", "/opt/app/libnames.so"},
        {"names_ctor", "names.cc", "/opt/app/libnames.so"},
        {"call_init", "dl-init.c", LDSO},
    };
    assert_int_equal(trk_suppressions_find(&s, own_ctor, N(own_ctor)), 0);
    /* All frames in the module, no loader after them: not a constructor. */
    assert_int_equal(trk_suppressions_find(&s, own_ctor, 2), -1);
    trk_suppressions_free(&s);
}

/* ---- Following the leak graph ------------------------------------------- */

#define NO TRK_SUP_NO_LEADER

static void test_follow_cases(void **state)
{
    (void)state;
    /* Blocks: 0 root suppressed (by 3); 1, 2 hang from 0 (2 through 1);
     * 3 root not suppressed, 4 hangs from it; 5 not lost; 6 a root whose
     * own stack is suppressed (by 7) with no children; 7, 8 a damaged
     * cycle with no root. */
    uint32_t leader[] = {0, 0, 1, 3, 3, NO, 6, 8, 7};
    int32_t hit[] = {3, -1, -1, -1, -1, -1, 7, -1, -1};
    assert_int_equal(trk_suppressions_follow(leader, hit, N(hit)), 2);
    int32_t want[] = {3, 3, 3, -1, -1, -1, 7, -1, -1};
    assert_memory_equal(hit, want, sizeof(want));
    /* A block with its own suppression keeps it, under a suppressed leader
     * or not; its children follow it. */
    uint32_t l2[] = {0, 0, 1, 2};
    int32_t h2[] = {-1, 5, -1, -1};
    assert_int_equal(trk_suppressions_follow(l2, h2, N(h2)), 2);
    int32_t w2[] = {-1, 5, 5, 5};
    assert_memory_equal(h2, w2, sizeof(w2));
    assert_int_equal(trk_suppressions_follow(NULL, NULL, 0), 0);
}

/* The model: for each block, walk its chain with no memory at all. */
static int32_t model_answer(const uint32_t *leader, const int32_t *own, size_t n, size_t i)
{
    for (size_t steps = 0; steps <= n; steps++) {
        if (own[i] >= 0)
            return own[i];
        if (leader[i] == NO || leader[i] == i || leader[i] >= n)
            return -1;
        i = leader[i];
    }
    return -1;
}

static void test_follow_against_model(void **state)
{
    (void)state;
    srand(11);
    for (int round = 0; round < 500; round++) {
        size_t n = 1 + (size_t)(rand() % 60);
        uint32_t *leader = malloc(n * sizeof(*leader));
        int32_t *own = malloc(n * sizeof(*own)), *hit = malloc(n * sizeof(*hit));
        assert_true(leader && own && hit);
        for (size_t i = 0; i < n; i++) {
            int r = rand() % 10;
            /* Mostly forests (a leader before the block); some roots, some
             * blocks not lost, and now and then a link anywhere (cycles). */
            leader[i] = r == 0 ? NO
                        : r < 3 || i == 0 ? (uint32_t)i
                        : r == 9          ? (uint32_t)(rand() % n)
                                          : (uint32_t)(rand() % i);
            own[i] = rand() % 4 == 0 ? rand() % 3 : -1;
            hit[i] = own[i];
        }
        size_t want_followed = 0;
        for (size_t i = 0; i < n; i++)
            if (own[i] < 0 && leader[i] != NO && model_answer(leader, own, n, i) >= 0)
                want_followed++;
        assert_int_equal(trk_suppressions_follow(leader, hit, n), want_followed);
        for (size_t i = 0; i < n; i++) {
            int32_t want = own[i] >= 0 || leader[i] == NO ? own[i] : model_answer(leader, own, n, i);
            assert_int_equal(hit[i], want);
        }
        free(leader);
        free(own);
        free(hit);
    }
}

/* A leaked list of 200,000 nodes, each the leader of the next: linear. */
static void test_follow_long_chain(void **state)
{
    (void)state;
    size_t n = 200000;
    uint32_t *leader = malloc(n * sizeof(*leader));
    int32_t *hit = malloc(n * sizeof(*hit));
    assert_true(leader && hit);
    for (size_t i = 0; i < n; i++) {
        leader[i] = i == 0 ? 0 : (uint32_t)(i - 1);
        hit[i] = -1;
    }
    assert_int_equal(trk_suppressions_follow(leader, hit, n), 0);
    hit[0] = 1;
    assert_int_equal(trk_suppressions_follow(leader, hit, n), n - 1);
    assert_int_equal(hit[n - 1], 1);
    free(leader);
    free(hit);
}

static void test_print_defaults(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    trk_suppressions_print_defaults(f);
    fclose(f);
    struct trk_suppressions s = {0};
    assert_int_equal(trk_suppressions_add_defaults(&s), 0);
    /* Every default is in the one table, as leak:PATTERN. */
    for (size_t i = 0; i < s.n; i++) {
        char want[128];
        snprintf(want, sizeof(want), "leak:%s ", s.v[i].pattern);
        assert_non_null(strstr(buf, want));
    }
    trk_suppressions_free(&s);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_hide_one_time_state),
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_follow_cases),
        cmocka_unit_test(test_follow_against_model),
        cmocka_unit_test(test_follow_long_chain),
        cmocka_unit_test(test_print_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
