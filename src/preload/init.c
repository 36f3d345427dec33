/* SPDX-License-Identifier: MIT
 *
 * init.c - lifecycle of the preload: start in the constructor, fork
 * handling, and the final flush at exit. The one place that knows every
 * layer of the injected library (src/prim, src/capture, src/python,
 * src/gpu): it starts them in order and wires the layers above the capture
 * engine into it through its registrations (capture/layers.h, stacks.h).
 *
 * The atexit handler is registered from our constructor, which the loader
 * runs before __libc_start_main registers the loader's own finaliser; so it
 * runs after every other atexit handler and every library destructor, and
 * the frees those make are still recorded before the trailer is written.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/env_options.h"
#include "gpu/gpu.h"
#include "preload/preload.h"
#include "python/python.h"

/* ---- Wiring the layers above the capture engine ---------------------------- */

static const struct trk_layer_ops python_ops = {
    .fork_child = trk_py_fork_child,
    .after_dlopen = trk_py_after_dlopen, /* an embedding program may load libpython late */
};

/* NVML is loaded at the first GPU allocation (cuda_hooks.c), not here when
 * the driver comes in: `import torch` loads libcuda and never allocates. */
static const struct trk_layer_ops gpu_ops = {
    .sample = trk_gpu_sample, /* driver-reported GPU memory, ~10 Hz */
};

/* Idempotent: the constructor calls it first thing, and so does the dlopen
 * hook, which another library's constructor may reach before ours runs. */
void trk_preload_wire_layers(void)
{
    static _Atomic int wired;
    if (atomic_exchange(&wired, 1))
        return;
    /* Their probes look up symbols that may be missing, and clearing that
     * error makes libc allocate: not with a malloc that is not ours. */
    if (trk_malloc_foreign())
        return;
    trk_layer_register(&python_ops);
    trk_layer_register(&gpu_ops);
}

static void on_exit_flush(void)
{
    if (atomic_load(&trk_active) && getpid() == trk_pid)
        trk_writer_finish(TRK_END_EXIT, 1);
}

static int fork_guard;

/* Lock order: stack trie, then flush lock (a thread inserting a stack node
 * may wait for the writer, and the writer needs the flush lock). */
static void fork_prepare(void)
{
    fork_guard = trk_guard_enter_internal();
    trk_dl_quiesce();
    trk_stacks_fork_prepare();
    trk_writer_fork_prepare();
}

static void fork_parent(void)
{
    trk_writer_fork_parent();
    trk_stacks_fork_parent();
    trk_dl_resume();
    trk_guard_leave(fork_guard);
}

/* The child continues into a capture of its own, <stem>.<pid>.bin, with a
 * fresh stack trie and stream numbering, and its own background threads. */
static void fork_child(void)
{
    trk_writer_fork_child();
    trk_stacks_fork_child();
    trk_dl_resume();
    int was_active = atomic_load(&trk_active);
    trk_pid = getpid();
    struct trk_thread *self = trk_tl_thread;
    if (!was_active || !trk_cfg.follow_fork) {
        atomic_store(&trk_active, 0);
        trk_guard_leave(fork_guard);
        return;
    }
    atomic_store(&trk_active, 0);
    trk_threads_after_fork_child(self);
    if (trk_output_open(1) != 0) {
        trk_guard_leave(fork_guard);
        return;
    }
    atomic_store(&trk_active, 1);
    if (self)
        trk_ev_thread_start(self);
    trk_modules_forget();
    if (trk_writer_start() != 0) {
        trk_fail("cannot start writer thread in child", errno);
    } else if (self) {
        trk_modules_snapshot(self);
    }
    trk_layers_fork_child(self);
    trk_guard_leave(fork_guard);
}

static int fork_hooked; /* pthread_atfork registered: the handlers apply */

int trk_clone_prepare(void)
{
    if (!fork_hooked)
        return 0;
    fork_prepare();
    return 1;
}

void trk_clone_parent(void)
{
    fork_parent();
}

void trk_clone_child(void)
{
    fork_child();
}

__attribute__((constructor)) static void trk_preload_init(void)
{
    trk_guard_set(TRK_GUARD_INTERNAL);
    trk_preload_wire_layers();
    trk_resolve();
    trk_pid = getpid();
    const char *off = getenv(TRK_ENV_NAME(DISABLE));
    if (off && *off && *off != '0')
        goto out;
    trk_config_load();
    trk_cfg.heap_unseen = trk_malloc_foreign();
    trk_py_config_load();
    trk_clock_init();
    trk_modules_init();
    if (trk_threads_init() || trk_stacks_init()) {
        trk_log("not tracking: initialisation failed", NULL, NULL);
        goto out;
    }
    if (trk_output_open(0) != 0)
        goto out;
    trk_env_capture();
    atomic_store(&trk_active, 1);
    int rc = trk_writer_start();
    if (rc) {
        trk_fail("cannot start writer thread: ", rc);
        goto out;
    }
    atexit(on_exit_flush);
    fork_hooked = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
    if (!trk_cfg.heap_unseen) { /* their probes make libc allocate (malloc_owner.c) */
        trk_py_init();
        trk_check_allocators(NULL);
    }
    trk_guard_set(0);
    struct trk_thread *t = trk_enter();
    /* What the libraries' constructors allocated before ours: the first
     * events, after the modules that symbolize their stacks. */
    if (t)
        trk_modules_snapshot(t);
    trk_preinit_replay(t);
    if (t)
        trk_leave();
    return;
out:
    trk_preinit_replay(NULL); /* not tracking: dropped */
    trk_guard_set(0);
}
