/* SPDX-License-Identifier: MIT
 *
 * leak_threads.h - the other threads of the process, stopped for the
 * exit-time leak scan (leak_threads.c).
 */
#ifndef TRK_CAPTURE_LEAK_THREADS_H
#define TRK_CAPTURE_LEAK_THREADS_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "prim/base.h"

#define TRK_LREGS_MAX 32

struct trk_lthread {
    pid_t tid;
    int ours;            /* the tracker's own thread (not signalled, not a root) */
    int gone;            /* ended before it could be stopped */
    int masked;          /* blocks the stop signal: not signalled, not stopped */
    _Atomic int stopped; /* answered: regs, sp, tp are valid */
    uint64_t sp;         /* stopped: its stack pointer; else from /proc (0 = unknown) */
    uint64_t tp;         /* stopped: its pthread_self() */
    uint64_t regs[TRK_LREGS_MAX];
    int nregs;
};

/* Stops every other thread it can; returns how many entries *out has, or
 * -1. trk_lthreads_resume lets them go. */
int trk_lthreads_stop(struct trk_lthread **out) TRK_HIDDEN;
void trk_lthreads_resume(struct trk_lthread *v, int n) TRK_HIDDEN;

#endif /* TRK_CAPTURE_LEAK_THREADS_H */
