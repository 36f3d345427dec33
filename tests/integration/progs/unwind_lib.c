/* SPDX-License-Identifier: MIT
 *
 * unwind_lib.c - built twice (libunwind_liba.so, libunwind_libb.so) with a
 * different FRAME: the same code layout with other stack frame sizes, so
 * that when progs/unwind_cases.c dlcloses one and dlopens the other at the
 * same address, a rule cached for the first is wrong for the second.
 */
#include <stdint.h>
#include <stdlib.h>

volatile uintptr_t unwind_lib_sink;
void unwind_lib_alloc(int k);

__attribute__((noinline)) static void lib_leaf(int k)
{
    volatile char buf[FRAME];
    buf[k & 127] = (char)k;
    void *p = malloc(24 + (size_t)(unsigned char)buf[k & 127]);
    unwind_lib_sink += (uintptr_t)p;
    free(p);
}

__attribute__((noinline)) void unwind_lib_alloc(int k)
{
    volatile char buf[FRAME];
    buf[3] = 1;
    buf[k & 127] = (char)k;
    lib_leaf(k + buf[3]);
}
