/* SPDX-License-Identifier: MIT
 *
 * sym_fx_o0.c - fixture of test_symbolize: main -> foo -> bar -> baz ->
 * malloc(1111), built at -O0 -g. The test finds expected lines through the
 * LINE: markers, so lines may move freely; keep each marker on its call.
 */
#include <stdlib.h>

void *volatile sym_fx_sink;

/* External, so that even a copy stripped to .symtab names them. */
void *baz(size_t n);
void *bar(size_t n);
void *foo(size_t n);

__attribute__((noinline)) void *baz(size_t n)
{
    void *p = malloc(n); /* LINE:baz_alloc */
    return p;
}

__attribute__((noinline)) void *bar(size_t n)
{
    void *p = baz(n); /* LINE:bar_call */
    return p;
}

__attribute__((noinline)) void *foo(size_t n)
{
    void *p = bar(n); /* LINE:foo_call */
    return p;
}

int main(void)
{
    sym_fx_sink = foo(1111); /* LINE:main_call */
    free(sym_fx_sink);
    return 0;
}
