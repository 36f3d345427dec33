/* SPDX-License-Identifier: MIT
 *
 * sym_fx_inline.c - fixture of test_symbolize: built at -O2 -g, outer()
 * holds the always-inline chain inl_a -> inl_b -> malloc(2223), so one
 * return address stands for three source frames. The stores to the
 * volatile sink keep every call from becoming a tail call.
 */
#include <stdlib.h>

void *volatile sym_fx_sink;

void *outer(size_t n);

static inline __attribute__((always_inline)) void *inl_b(size_t n)
{
    void *p = malloc(n); /* LINE:inl_b_alloc */
    sym_fx_sink = p;
    return p;
}

static inline __attribute__((always_inline)) void *inl_a(size_t n)
{
    void *p = inl_b(n + 1); /* LINE:inl_a_call */
    sym_fx_sink = p;
    return p;
}

/* No inlining into main and no constant propagation into outer (GCC's
 * noipa; clang has neither that attribute nor the optimization). */
#if defined(__has_attribute) && __has_attribute(noipa)
#define SYM_FX_NOIPA __attribute__((noipa))
#else
#define SYM_FX_NOIPA __attribute__((noinline))
#endif

SYM_FX_NOIPA void *outer(size_t n)
{
    void *p = inl_a(n + 1); /* LINE:outer_call */
    sym_fx_sink = p;
    return p;
}

int main(int argc, char **argv)
{
    (void)argv;
    void *p = outer(2220 + (size_t)argc); /* LINE:main_call */
    sym_fx_sink = NULL;
    free(p);
    return 0;
}
