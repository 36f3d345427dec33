/* SPDX-License-Identifier: MIT
 *
 * ctor_leak_lib.c - a shared library whose constructor leaks one block of
 * CTOR_LEAK_BYTES (4,242) bytes: the constructor runs before libtracker's
 * own (the loader initialises dependencies of the program first), so this
 * allocation is made before the tracker's constructor (issue 11).
 */
#include <stdlib.h>

#define CTOR_LEAK_BYTES 4242

void *volatile ctor_leak_sink;
void ctor_leak_alloc(void);
int ctor_leak_linked(void);

__attribute__((noinline)) void ctor_leak_alloc(void)
{
    char *p = malloc(CTOR_LEAK_BYTES);
    if (p)
        p[0] = 1;
    ctor_leak_sink = p;
    ctor_leak_sink = NULL; /* no pointer left: a real leak */
}

__attribute__((constructor)) static void ctor_leak_init(void)
{
    ctor_leak_alloc();
}

int ctor_leak_linked(void)
{
    return 1;
}
