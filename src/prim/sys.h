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
pid_t trk_gettid(void) TRK_HIDDEN;
/* "tracker: a b c\n" on stderr in one write(2). */
void trk_log(const char *a, const char *b, const char *c) TRK_HIDDEN;
size_t trk_u64_to_dec(char *buf, uint64_t v) TRK_HIDDEN;
/* Names one of the tracker's own threads through the next
 * pthread_setname_np (trk_real), never the preload's hook of it. */
void trk_sys_name_thread(pthread_t th, const char *name) TRK_HIDDEN;
extern pid_t trk_pid TRK_HIDDEN;

#endif /* TRK_PRIM_SYS_H */
