/* SPDX-License-Identifier: MIT
 *
 * leak_dyntls_lib.c - a dlopened library's thread-local (dynamic TLS: a
 * heap block of its own, found through the thread's DTV) holding a pointer,
 * for leak_classes.c's "dyntls" mode.
 */
static __thread void *slot;

void leak_dyntls_set(void *p);

void leak_dyntls_set(void *p)
{
    slot = p;
}
