/* SPDX-License-Identifier: MIT
 *
 * tls_lib.c - a library with a thread-local of its own (global-dynamic TLS,
 * as any dlopened library's), for tls_dlopen.c. tls_touch allocates once
 * through the hooks with the TLS block just set up.
 */
#include <stdlib.h>

static __thread long counter;

long tls_touch(int i);

long tls_touch(int i)
{
    counter += i;
    void *p = malloc(64);
    free(p);
    return counter;
}
