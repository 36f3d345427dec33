/* SPDX-License-Identifier: MIT
 *
 * sys.h - the few system services every in-process layer needs, through raw
 * syscalls (sys.c): never an allocator, never stdio, never our own hooks.
 */
#ifndef TRK_PRIM_SYS_H
#define TRK_PRIM_SYS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "prim/base.h"

void *trk_sys_mmap(size_t len) TRK_HIDDEN;
void trk_sys_munmap(void *p, size_t len) TRK_HIDDEN;
/* Makes the pages of [p, p + len) of fresh anonymous memory written ones,
 * changing nothing (a locked OR of 0 a page). Where a table is probed
 * before it is written, a page's first read maps the shared zero page and
 * its first write then replaces it with a TLB shootdown: an interrupt to
 * every other CPU the process runs on, per page (perf: 5% of `import
 * torch`'s CPU time, in the live set's rehash and the intern tables). */
static inline void trk_sys_prefault(void *p, size_t len)
{
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095, end = (uintptr_t)p + len;
    for (; a < end; a += 4096)
        __atomic_fetch_or((uint64_t *)a, 0, __ATOMIC_RELAXED);
}
pid_t trk_gettid(void) TRK_HIDDEN;
/* "tracker: a b c\n" on stderr in one write(2). */
void trk_log(const char *a, const char *b, const char *c) TRK_HIDDEN;
size_t trk_u64_to_dec(char *buf, uint64_t v) TRK_HIDDEN;
/* Names one of the tracker's own threads through the next
 * pthread_setname_np (trk_real), never the preload's hook of it. */
void trk_sys_name_thread(pthread_t th, const char *name) TRK_HIDDEN;
extern pid_t trk_pid TRK_HIDDEN;

#endif /* TRK_PRIM_SYS_H */
